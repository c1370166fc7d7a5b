/*
 * ktest's tests of what threads wait on (see ktest.c): semaphores, mutexes
 * and their priority inheritance, queues, and a give from an interrupt
 * handler.
 */
#include <string.h>

#include "nr_kernel_port.h" /* nr_port_in_isr(), to check the tick hook runs in an interrupt */
#include "ktest.h"

static struct nr_sem sem_b;
static volatile uint32_t giver_tick;

static void t_sleep_give(struct ktest *k, void *arg)
{
  (void)k;
  (void)arg;
  giver_tick = nr_kernel_ticks();
  nr_sleep_ms(5);
  nr_sem_give(&sem_b);
}

int test_semaphore(struct ktest *k)
{
  uint32_t k0, ticks;
  uint64_t t0, ns;
  int rc;

  nr_sem_init(&sem_b, 2, 3);
  if (nr_sem_take(&sem_b, NR_NO_WAIT) != NR_OK || nr_sem_take(&sem_b, NR_NO_WAIT) != NR_OK) {
    return kt_fail(k, "the two units were not taken");
  }
  if ((rc = nr_sem_take(&sem_b, NR_NO_WAIT)) != NR_TIMEOUT) {
    return kt_fail(k, "an empty semaphore gave %d without waiting", rc);
  }
  kt_at_tick(&k0, &t0);
  if ((rc = nr_sem_take(&sem_b, 15)) != NR_TIMEOUT) {
    return kt_fail(k, "a wait on an empty semaphore returned %d", rc);
  }
  ns = ns_since(t0);
  if (!kt_check_wait(k, "nr_sem_take", 15, nr_kernel_ticks() - k0, ns)) {
    return 0;
  }
  /* a give from another thread ends a wait: the giver sleeps 5 ms (6
     ticks) first, and main wakes in the tick it gives */
  if (kt_start(k, "giver", t_sleep_give, NULL, 3u, 0) == NULL) {
    return kt_fail(k, "thread not created");
  }
  rc = nr_sem_take(&sem_b, 100);
  ticks = nr_kernel_ticks() - giver_tick;
  if (!kt_join(k, 1)) {
    return kt_fail(k, "the giver did not end");
  }
  if (rc != NR_OK || ticks != 6u) {
    return kt_fail(k, "the given unit arrived with %d after %lu ticks (the giver slept 5 ms)", rc,
                      (unsigned long)ticks);
  }
  for (unsigned i = 0; i < 3u; i++) {
    nr_sem_give(&sem_b);
  }
  if ((rc = nr_sem_give(&sem_b)) != NR_EOVERFLOW) {
    return kt_fail(k, "a give beyond the maximum returned %d", rc);
  }
  {
    uint32_t irq = board_irq_save();

    rc = nr_sem_take(&sem_b, 10);
    board_irq_restore(irq);
  }
  if (rc != NR_EPERM) {
    return kt_fail(k, "a blocking take with interrupts masked returned %d", rc);
  }
  kt_detail(k, "timeout_us=%lu woken_after_ticks=%lu", (unsigned long)(ns / 1000u), (unsigned long)ticks);
  return 1;
}

static struct nr_mutex mtx;
static volatile int try_rc, foreign_unlock_rc;

static void t_trylock(struct ktest *k, void *arg)
{
  (void)k;
  (void)arg;
  try_rc = nr_mutex_lock(&mtx, NR_NO_WAIT);
  foreign_unlock_rc = nr_mutex_unlock(&mtx);
}

int test_mutex_basic(struct ktest *k)
{
  int rc;

  nr_mutex_init(&mtx, 0);
  if (nr_mutex_lock(&mtx, NR_NO_WAIT) != NR_OK) {
    return kt_fail(k, "a free mutex was not locked");
  }
  if ((rc = nr_mutex_lock(&mtx, 5)) != NR_EDEADLK) {
    return kt_fail(k, "relocking a non-recursive mutex returned %d", rc);
  }
  if (kt_start(k, "trylock", t_trylock, NULL, 3u, 0) == NULL || !kt_join(k, 1)) {
    return kt_fail(k, "thread not run");
  }
  if (try_rc != NR_TIMEOUT || foreign_unlock_rc != NR_EPERM) {
    return kt_fail(k, "another thread's lock returned %d and unlock %d", try_rc, foreign_unlock_rc);
  }
  if (nr_mutex_unlock(&mtx) != NR_OK || nr_mutex_unlock(&mtx) != NR_EPERM) {
    return kt_fail(k, "unlocking went wrong");
  }
  nr_mutex_init(&mtx, 1);
  if (nr_mutex_lock(&mtx, NR_NO_WAIT) != NR_OK || nr_mutex_lock(&mtx, NR_NO_WAIT) != NR_OK ||
      nr_mutex_unlock(&mtx) != NR_OK || nr_mutex_unlock(&mtx) != NR_OK || nr_mutex_unlock(&mtx) != NR_EPERM) {
    return kt_fail(k, "a recursive mutex did not count its locks");
  }
  return 1;
}

static struct nr_sem pi_go;
static volatile unsigned pi_prio_holding, pi_prio_after;
static volatile int pi_high_rc, pi_timeout_rc;
static volatile uint32_t pi_timeout_ticks;

/* Locks the mutex, waits for pi_go while holding it, unlocks. */
static void t_pi_low(struct ktest *k, void *arg)
{
  (void)arg;
  if (nr_mutex_lock(&mtx, NR_NO_WAIT) == NR_OK) {
    (void)nr_sem_take(&pi_go, WAIT_TICKS);
    kt_mark(k, 'L');
    pi_prio_holding = nr_thread_priority(nr_thread_self());
    nr_mutex_unlock(&mtx);
    pi_prio_after = nr_thread_priority(nr_thread_self());
    kt_mark(k, 'l');
  }
}

static void t_pi_high(struct ktest *k, void *arg)
{
  (void)arg;
  pi_high_rc = nr_mutex_lock(&mtx, WAIT_TICKS);
  if (pi_high_rc == NR_OK) {
    kt_mark(k, 'H');
    nr_mutex_unlock(&mtx);
  }
}

static void t_pi_mid(struct ktest *k, void *arg)
{
  (void)arg;
  nr_sem_give(&pi_go);
  kt_mark(k, 'M');
}

/* Low (2) holds the mutex High (6) waits for, and Mid (4) makes Low ready:
   inheriting 6, Low runs before Mid, and drops back to 2 when it unlocks,
   so High then Mid run before Low finishes. Without inheritance Mid would
   run first. */
int test_mutex_inheritance(struct ktest *k)
{
  nr_thread_t *low;
  unsigned p_alone, p_waited;

  nr_mutex_init(&mtx, 0);
  nr_sem_init(&pi_go, 0, 1);
  kt_trace_reset(k);
  low = kt_start(k, "low", t_pi_low, NULL, 2u, 0);
  if (low == NULL) {
    return kt_fail(k, "thread not created");
  }
  p_alone = nr_thread_priority(low);
  if (kt_start(k, "high", t_pi_high, NULL, 6u, 1) == NULL) {
    return kt_fail(k, "thread not created");
  }
  p_waited = nr_thread_priority(low);
  if (kt_start(k, "mid", t_pi_mid, NULL, 4u, 2) == NULL) {
    return kt_fail(k, "thread not created");
  }
  if (!kt_join(k, 3)) {
    return kt_fail(k, "threads did not end");
  }
  if (p_alone != 2u || p_waited != 6u || pi_prio_holding != 6u || pi_prio_after != 2u) {
    return kt_fail(k, "holder's priority %u alone, %u with a waiter, %u running, %u after unlocking (want 2 6 6 2)",
                      p_alone, p_waited, pi_prio_holding, pi_prio_after);
  }
  if (pi_high_rc != NR_OK || strcmp(k->trace, "LHMl") != 0) {
    return kt_fail(k, "order %s (want LHMl), high's lock %d", k->trace, pi_high_rc);
  }
  kt_detail(k, "holder_prio=2->6->2 order=%s", k->trace);
  return 1;
}

static void t_pi_timeout(struct ktest *k, void *arg)
{
  uint32_t k0 = nr_kernel_ticks();

  (void)k;
  (void)arg;
  pi_timeout_rc = nr_mutex_lock(&mtx, 10);
  pi_timeout_ticks = nr_kernel_ticks() - k0;
  if (pi_timeout_rc == NR_OK) {
    nr_mutex_unlock(&mtx);
  }
}

/* A waiter that gives up returns NR_TIMEOUT, and the holder drops back. */
int test_mutex_timeout(struct ktest *k)
{
  nr_thread_t *low;
  unsigned p_waited, p_after;

  nr_mutex_init(&mtx, 0);
  nr_sem_init(&pi_go, 0, 1);
  kt_trace_reset(k);
  low = kt_start(k, "low", t_pi_low, NULL, 2u, 0);
  if (low == NULL || kt_start(k, "impatient", t_pi_timeout, NULL, 7u, 1) == NULL) {
    return kt_fail(k, "threads not created");
  }
  p_waited = nr_thread_priority(low);
  nr_sleep_ms(20);
  p_after = nr_thread_priority(low);
  nr_sem_give(&pi_go);
  if (!kt_join(k, 2)) {
    return kt_fail(k, "threads did not end");
  }
  if (pi_timeout_rc != NR_TIMEOUT || pi_timeout_ticks != 11u) {
    return kt_fail(k, "the lock returned %d after %lu ticks (want a timeout after 11)", pi_timeout_rc,
                      (unsigned long)pi_timeout_ticks);
  }
  if (p_waited != 7u || p_after != 2u || pi_prio_holding != 2u) {
    return kt_fail(k, "holder's priority %u while waited for, %u after the timeout (want 7 2)", p_waited, p_after);
  }
  kt_detail(k, "holder_prio=7->2");
  return 1;
}

static struct nr_queue queue;
static uint32_t queue_buf[4];
static volatile int sender_rc[6];
static volatile int receiver_rc;
static volatile uint32_t received;

static void t_sender(struct ktest *k, void *arg)
{
  (void)k;
  (void)arg;
  for (uint32_t v = 10; v < 16u; v++) {
    sender_rc[v - 10u] = nr_queue_send(&queue, &v, WAIT_TICKS);
  }
}

static void t_receiver(struct ktest *k, void *arg)
{
  uint32_t v = 0;

  (void)k;
  (void)arg;
  receiver_rc = nr_queue_receive(&queue, &v, WAIT_TICKS);
  received = v;
}

int test_queue(struct ktest *k)
{
  uint32_t v, k0;
  uint64_t t0;
  int rc;

  nr_queue_init(&queue, queue_buf, sizeof(uint32_t), 4);
  for (v = 1; v <= 4u; v++) {
    if (nr_queue_send(&queue, &v, NR_NO_WAIT) != NR_OK) {
      return kt_fail(k, "item %lu not sent", (unsigned long)v);
    }
  }
  if ((rc = nr_queue_send(&queue, &v, NR_NO_WAIT)) != NR_TIMEOUT) {
    return kt_fail(k, "a full queue took an item (%d)", rc);
  }
  kt_at_tick(&k0, &t0);
  if ((rc = nr_queue_send(&queue, &v, 10)) != NR_TIMEOUT ||
      !kt_check_wait(k, "nr_queue_send", 10, nr_kernel_ticks() - k0, ns_since(t0))) {
    return rc != NR_TIMEOUT ? kt_fail(k, "a send to a full queue returned %d", rc) : 0;
  }
  for (uint32_t want = 1; want <= 4u; want++) {
    if (nr_queue_receive(&queue, &v, NR_NO_WAIT) != NR_OK || v != want) {
      return kt_fail(k, "received %lu, not %lu", (unsigned long)v, (unsigned long)want);
    }
  }
  kt_at_tick(&k0, &t0);
  if ((rc = nr_queue_receive(&queue, &v, 7)) != NR_TIMEOUT ||
      !kt_check_wait(k, "nr_queue_receive", 7, nr_kernel_ticks() - k0, ns_since(t0))) {
    return rc != NR_TIMEOUT ? kt_fail(k, "a receive from an empty queue returned %d", rc) : 0;
  }
  /* A sender of six items fills the queue and waits; each receive makes
     room for its next item, and the order holds. */
  if (kt_start(k, "sender", t_sender, NULL, 3u, 0) == NULL) {
    return kt_fail(k, "thread not created");
  }
  if (nr_queue_count(&queue) != 4u) {
    return kt_fail(k, "%lu items queued while the sender waits, not 4", (unsigned long)nr_queue_count(&queue));
  }
  for (uint32_t want = 10; want < 16u; want++) {
    if ((rc = nr_queue_receive(&queue, &v, 100)) != NR_OK || v != want) {
      return kt_fail(k, "received %lu (%d), not %lu", (unsigned long)v, rc, (unsigned long)want);
    }
  }
  if (!kt_join(k, 1)) {
    return kt_fail(k, "the sender did not end");
  }
  for (unsigned i = 0; i < 6u; i++) {
    if (sender_rc[i] != NR_OK) {
      return kt_fail(k, "send %u returned %d", i, sender_rc[i]);
    }
  }
  /* A waiting receiver gets an item handed over directly. */
  if (kt_start(k, "receiver", t_receiver, NULL, 3u, 0) == NULL) {
    return kt_fail(k, "thread not created");
  }
  v = 42;
  if ((rc = nr_queue_send(&queue, &v, NR_NO_WAIT)) != NR_OK || !kt_join(k, 1)) {
    return kt_fail(k, "the send to a waiting receiver returned %d", rc);
  }
  if (receiver_rc != NR_OK || received != 42u || nr_queue_count(&queue) != 0u) {
    return kt_fail(k, "the waiting receiver got %lu (%d)", (unsigned long)received, receiver_rc);
  }
  kt_detail(k, "fifo=1..4,10..15 full_send_timeout=11_ticks empty_receive_timeout=8_ticks");
  return 1;
}

static struct nr_sem isr_sem;
static struct nr_queue isr_queue;
static uint32_t isr_queue_buf[2];
static volatile uint32_t hook_at;
static volatile int hook_ran, hook_in_isr, hook_take_rc, hook_send_rc, hook_give_rc;

static void tick_hook(uint32_t now)
{
  uint32_t v = 0xC0FFEEu;

  if (now != hook_at) {
    return;
  }
  hook_ran = 1;
  hook_in_isr = nr_port_in_isr();
  hook_take_rc = nr_sem_take(&isr_sem, 5); /* blocking: refused in a handler */
  hook_send_rc = nr_queue_send_isr(&isr_queue, &v);
  hook_give_rc = nr_sem_give(&isr_sem);
}

/* The tick's hook runs in the timer interrupt: its give wakes main. */
int test_isr_give(struct ktest *k)
{
  uint32_t k0, ticks, v = 0;
  int rc;

  nr_sem_init(&isr_sem, 0, 1);
  nr_queue_init(&isr_queue, isr_queue_buf, sizeof(uint32_t), 2);
  hook_ran = 0;
  k0 = nr_kernel_ticks();
  hook_at = k0 + 3u;
  nr_kernel_set_tick_hook(tick_hook);
  rc = nr_sem_take(&isr_sem, 50);
  ticks = nr_kernel_ticks() - k0;
  nr_kernel_set_tick_hook(NULL);
  if (!hook_ran || !hook_in_isr) {
    return kt_fail(k, "the hook ran %d, in an interrupt %d", hook_ran, hook_in_isr);
  }
  if (rc != NR_OK || ticks != 3u) {
    return kt_fail(k, "the take returned %d after %lu ticks (the give came at tick 3)", rc, (unsigned long)ticks);
  }
  if (hook_take_rc != NR_EPERM || hook_send_rc != NR_OK || hook_give_rc != NR_OK) {
    return kt_fail(k, "in the handler: take %d, send %d, give %d", hook_take_rc, hook_send_rc, hook_give_rc);
  }
  if (nr_queue_receive(&isr_queue, &v, NR_NO_WAIT) != NR_OK || v != 0xC0FFEEu) {
    return kt_fail(k, "the item sent from the handler is %lx", (unsigned long)v);
  }
  kt_detail(k, "woken_after_ticks=%lu", (unsigned long)ticks);
  return 1;
}
