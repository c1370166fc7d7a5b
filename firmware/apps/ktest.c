/*
 * ktest: the kernel's tests and costs, run on the board (firmware/kernel,
 * docs/kernel.md). Test-only: built when the firmware is built with
 * `--set NR_TEST_KERNEL=1` (the Makefile then adds this app and the kernel),
 * for tests/test_kernel.py and benchmarks/kernel_bench.py; no real build has
 * it.
 *
 * The first ktest starts the kernel with main() as a thread of priority 1,
 * the least urgent, so the shell's main loop goes on as before between
 * commands (it is the only thread left when ktest returns). Each test runs
 * threads of priority 2 and up, which main waits for, and checks what they
 * did. Output, one line a test, then the costs and a summary:
 *   KTEST <name> pass [detail]   or   KTEST <name> FAIL <why>
 *   KCOST core_mhz=... switch_ns=... switch_cycles=... sem_round_trip_ns=... ...
 *   KTHREAD name=... (every live thread's counters), KKERNEL ticks=... idle_us=...
 *   ktest: N passed, M failed
 * Times are board time (board_time_ns()); cycles are board ns times the
 * core's instruction rate measured with the board's known loop (board_spin):
 * in device time QEMU executes the modelled core's instructions per board
 * ns, so they are the modelled core's cycles at the platform's IPC.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "nr_board.h"
#include "nr_kernel.h"
#include "nr_kernel_port.h" /* nr_port_in_isr(), to check the tick hook runs in an interrupt */
#include "nr_printf.h"
#include "apps.h"

#define MAIN_PRIO   1u
#define LAUNCH_PRIO NR_KERNEL_PRIO_MAX /* starts a test's threads before any of them runs */
#define SLICE       NR_KERNEL_TIME_SLICE
#define JOIN_TICKS  3000u /* every test's threads end well within this; their own waits are shorter */
#define WAIT_TICKS  500u  /* the longest any test thread waits for something */
#define STACK_BYTES 2048u
#define NUM_STACKS  4u    /* up to three threads a test, and the launcher */
#define LAUNCHER_STACK (NUM_STACKS - 1u)
#define DEEP_STACK_BYTES 4096u
#define DEEP_LEVELS 6u
#define DEEP_FRAME  256u
/* What a measured time may exceed its bound by, in board ns. A thread woken
   by a tick runs well under 1 us after it as far as the kernel goes, but a
   board asleep in WFI is woken by a host timer up to its timer slack (50 us)
   late, which device time divides by D; and a board_time_ns() reading may
   be a subtick (125 us) high (docs/kernel.md, "Two things about the clock"). */
#define SLACK_NS    250000u
#define NS_PER_MS   1000000u
#define COST_ROUNDS 1000u
#define COST_BATCHES 5u
#define SPIN_ITERATIONS 200000u

static uint64_t stacks[NUM_STACKS][STACK_BYTES / 8];
static uint64_t deep_stack[DEEP_STACK_BYTES / 8];
static struct nr_sem done;          /* every test thread gives it as its last act */
static int stuck;                   /* a test's thread did not end: it may still use a test stack */
static char why[160];
static char note[160];

/* ---- Helpers ---- */

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  nr_vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  return 0;
}

static void detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void detail(const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  nr_vsnprintf(note, sizeof(note), fmt, ap);
  va_end(ap);
}

static nr_thread_t *start(const char *name, void (*fn)(void *), void *arg, unsigned prio, unsigned stack)
{
  return nr_thread_create(name, fn, arg, prio, stacks[stack], sizeof(stacks[stack]));
}

/* Waits for n test threads to finish. 0 if one did not within JOIN_TICKS:
   it may still use its stack, so no later test may run. */
static int join(unsigned n)
{
  for (unsigned i = 0; i < n; i++) {
    if (nr_sem_take(&done, JOIN_TICKS) != NR_OK) {
      stuck = 1;
      return 0;
    }
  }
  return 1;
}

/* A record of the order things happened in. */
static char trace[32];
static unsigned trace_len;

static void trace_reset(void)
{
  trace_len = 0;
  trace[0] = '\0';
}

static void mark(char c)
{
  uint32_t irq = board_irq_save();

  if (trace_len < sizeof(trace) - 1u) {
    trace[trace_len++] = c;
    trace[trace_len] = '\0';
  }
  board_irq_restore(irq);
}

/* A launcher of the most urgent priority creates a test's threads, so none
   of them runs before all exist; they start when it exits. */
struct launch {
  const char *name;
  void (*fn)(void *);
  void *arg;
  unsigned prio;
};

static const struct launch *launch_list;
static unsigned launch_count;
static unsigned launch_started;

static void t_launcher(void *arg)
{
  (void)arg;
  launch_started = 0;
  for (unsigned i = 0; i < launch_count; i++) {
    const struct launch *l = &launch_list[i];

    if (start(l->name, l->fn, l->arg, l->prio, i) != NULL) {
      launch_started++;
    }
  }
  nr_sem_give(&done);
}

/* Launches the threads and waits for them all. */
static int launch_and_join(const struct launch *list, unsigned n)
{
  launch_list = list;
  launch_count = n;
  if (start("launcher", t_launcher, NULL, LAUNCH_PRIO, LAUNCHER_STACK) == NULL) {
    return fail("the launcher was not created");
  }
  if (!join(1)) {
    return fail("the launcher did not end");
  }
  if (launch_started != n) {
    join(launch_started);
    return fail("%u of %u threads created", launch_started, n);
  }
  return join(n) ? 1 : fail("threads did not end within %u ticks", JOIN_TICKS);
}

static uint64_t ns_since(uint64_t t0)
{
  return board_time_ns() - t0;
}

/* Waits for the next tick and notes the tick count and the board time, so
   a wait measured from here cannot start across a tick boundary (reading
   the count and calling the wait are a few instructions apart). */
static void at_tick(uint32_t *k0, uint64_t *t0)
{
  nr_sleep_ms(1);
  *k0 = nr_kernel_ticks();
  *t0 = board_time_ns();
}

/* Checks one timed wait: it ended after the right number of ticks (the
   timeout + 1, the call being part way through a tick) and lasted between
   timeout and timeout + 1 board ms. */
static int check_wait(const char *what, uint32_t timeout, uint32_t ticks, uint64_t ns)
{
  if (ticks != timeout + 1u) {
    return fail("%s(%lu) ended after %lu ticks, not %lu", what, (unsigned long)timeout, (unsigned long)ticks,
                (unsigned long)(timeout + 1u));
  }
  if (ns < (uint64_t)timeout * NS_PER_MS || ns > (uint64_t)(timeout + 1u) * NS_PER_MS + SLACK_NS) {
    return fail("%s(%lu) lasted %llu ns of board time", what, (unsigned long)timeout, (unsigned long long)ns);
  }
  return 1;
}

/* ---- Tests ---- */

static void t_nothing(void *arg)
{
  (void)arg;
}

static int test_start(void)
{
  if (!nr_kernel_started()) {
    int rc = nr_kernel_start(MAIN_PRIO);

    if (rc != NR_OK) {
      return fail("nr_kernel_start returned %d", rc);
    }
  }
  if (!nr_kernel_started() || nr_thread_self() == NULL || nr_thread_priority(nr_thread_self()) != MAIN_PRIO) {
    return fail("main is not a thread of priority %u", MAIN_PRIO);
  }
  if (nr_kernel_start(MAIN_PRIO) != NR_EPERM) {
    return fail("a second start was not refused");
  }
  if (nr_thread_create("bad", t_nothing, NULL, 0u, stacks[0], sizeof(stacks[0])) != NULL ||
      nr_thread_create("bad", t_nothing, NULL, NR_KERNEL_PRIO_MAX + 1u, stacks[0], sizeof(stacks[0])) != NULL ||
      nr_thread_create("bad", t_nothing, NULL, 2u, stacks[0], NR_KERNEL_MIN_STACK - 8u) != NULL) {
    return fail("a bad priority or a small stack was accepted");
  }
  detail("main_prio=%u slice_ticks=%u max_threads=%u", MAIN_PRIO, SLICE, NR_KERNEL_MAX_THREADS);
  return 1;
}

static void t_mark(void *arg)
{
  mark((char)(uintptr_t)arg);
  nr_sem_give(&done);
}

/* Threads made ready together run most urgent first. */
static int test_priority_order(void)
{
  static const struct launch list[] = {
    { "p3", t_mark, (void *)'3', 3u },
    { "p5", t_mark, (void *)'5', 5u },
    { "p4", t_mark, (void *)'4', 4u },
  };

  trace_reset();
  if (!launch_and_join(list, 3)) {
    return 0;
  }
  if (strcmp(trace, "543") != 0) {
    return fail("ran in the order %s, not 543", trace);
  }
  detail("order=%s", trace);
  return 1;
}

static struct nr_sem sem_a;

static void t_take_mark(void *arg)
{
  (void)arg;
  if (nr_sem_take(&sem_a, WAIT_TICKS) == NR_OK) {
    mark('b');
  }
  nr_sem_give(&done);
}

static void t_give_mark(void *arg)
{
  (void)arg;
  mark('a');
  nr_sem_give(&sem_a);
  mark('c');
  nr_sem_give(&done);
}

/* A thread that wakes a more urgent one is preempted at once. */
static int test_preemption(void)
{
  nr_sem_init(&sem_a, 0, 1);
  trace_reset();
  if (start("waiter", t_take_mark, NULL, 6u, 0) == NULL || start("giver", t_give_mark, NULL, 3u, 1) == NULL) {
    return fail("threads not created");
  }
  if (!join(2)) {
    return fail("threads did not end");
  }
  if (strcmp(trace, "abc") != 0) {
    return fail("order %s, not abc (the woken thread ran late)", trace);
  }
  detail("order=%s", trace);
  return 1;
}

#define RR_TURNS_MAX 16u
static volatile int rr_last;
static volatile unsigned rr_turns;
static uint32_t rr_tick[RR_TURNS_MAX];
static int rr_who[RR_TURNS_MAX];
static uint32_t rr_end;

/* Spins until rr_end, noting each turn it gets (masked, so a switch cannot
   split the check from the note). */
static void t_spin(void *arg)
{
  int me = (int)(uintptr_t)arg;

  while ((int32_t)(nr_kernel_ticks() - rr_end) < 0) {
    uint32_t irq = board_irq_save();

    if (rr_last != me) {
      if (rr_turns < RR_TURNS_MAX) {
        rr_tick[rr_turns] = nr_kernel_ticks();
        rr_who[rr_turns] = me;
      }
      rr_turns++;
      rr_last = me;
    }
    board_irq_restore(irq);
  }
  nr_sem_give(&done);
}

/* Two busy threads of one priority take turns of SLICE ticks. */
static int test_round_robin(void)
{
  static const struct launch list[] = {
    { "rr1", t_spin, (void *)1, 4u },
    { "rr2", t_spin, (void *)2, 4u },
  };
  unsigned turns;

  rr_last = 0;
  rr_turns = 0;
  rr_end = nr_kernel_ticks() + 5u * SLICE + SLICE / 2u;
  if (!launch_and_join(list, 2)) {
    return 0;
  }
  turns = rr_turns < RR_TURNS_MAX ? rr_turns : RR_TURNS_MAX;
  if (turns < 5u) {
    return fail("%u turns in %u ticks of two busy threads, slice %u", turns, 5u * SLICE + SLICE / 2u, SLICE);
  }
  for (unsigned i = 1; i < turns; i++) {
    if (rr_who[i] == rr_who[i - 1u]) {
      return fail("turn %u went to the same thread again", i);
    }
  }
  for (unsigned i = 0; i + 2u < turns; i++) { /* the last turn is cut short by the end */
    if (rr_tick[i + 1u] - rr_tick[i] != SLICE) {
      return fail("turn %u lasted %lu ticks, not %u", i, (unsigned long)(rr_tick[i + 1u] - rr_tick[i]), SLICE);
    }
  }
  detail("turns=%u slice_ticks=%u", turns, SLICE);
  return 1;
}

static int test_sleep(void)
{
  static const uint32_t ms[] = { 1u, 5u, 20u };
  unsigned long us[3];

  for (unsigned i = 0; i < 3u; i++) {
    uint32_t k0;
    uint64_t t0, ns;

    at_tick(&k0, &t0);
    if (nr_sleep_ms(ms[i]) != NR_OK) {
      return fail("nr_sleep_ms refused");
    }
    ns = ns_since(t0);
    if (!check_wait("nr_sleep_ms", ms[i], nr_kernel_ticks() - k0, ns)) {
      return 0;
    }
    us[i] = (unsigned long)(ns / 1000u);
  }
  detail("slept_us=%lu,%lu,%lu for 1,5,20 ms", us[0], us[1], us[2]);
  return 1;
}

static struct nr_sem sem_b;
static volatile uint32_t giver_tick;

static void t_sleep_give(void *arg)
{
  (void)arg;
  giver_tick = nr_kernel_ticks();
  nr_sleep_ms(5);
  nr_sem_give(&sem_b);
  nr_sem_give(&done);
}

static int test_semaphore(void)
{
  uint32_t k0, ticks;
  uint64_t t0, ns;
  int rc;

  nr_sem_init(&sem_b, 2, 3);
  if (nr_sem_take(&sem_b, NR_NO_WAIT) != NR_OK || nr_sem_take(&sem_b, NR_NO_WAIT) != NR_OK) {
    return fail("the two units were not taken");
  }
  if ((rc = nr_sem_take(&sem_b, NR_NO_WAIT)) != NR_TIMEOUT) {
    return fail("an empty semaphore gave %d without waiting", rc);
  }
  at_tick(&k0, &t0);
  if ((rc = nr_sem_take(&sem_b, 15)) != NR_TIMEOUT) {
    return fail("a wait on an empty semaphore returned %d", rc);
  }
  ns = ns_since(t0);
  if (!check_wait("nr_sem_take", 15, nr_kernel_ticks() - k0, ns)) {
    return 0;
  }
  /* a give from another thread ends a wait: the giver sleeps 5 ms (6
     ticks) first, and main wakes in the tick it gives */
  if (start("giver", t_sleep_give, NULL, 3u, 0) == NULL) {
    return fail("thread not created");
  }
  rc = nr_sem_take(&sem_b, 100);
  ticks = nr_kernel_ticks() - giver_tick;
  if (!join(1)) {
    return fail("the giver did not end");
  }
  if (rc != NR_OK || ticks != 6u) {
    return fail("the given unit arrived with %d after %lu ticks (the giver slept 5 ms)", rc, (unsigned long)ticks);
  }
  for (unsigned i = 0; i < 3u; i++) {
    nr_sem_give(&sem_b);
  }
  if ((rc = nr_sem_give(&sem_b)) != NR_EOVERFLOW) {
    return fail("a give beyond the maximum returned %d", rc);
  }
  {
    uint32_t irq = board_irq_save();

    rc = nr_sem_take(&sem_b, 10);
    board_irq_restore(irq);
  }
  if (rc != NR_EPERM) {
    return fail("a blocking take with interrupts masked returned %d", rc);
  }
  detail("timeout_us=%lu woken_after_ticks=%lu", (unsigned long)(ns / 1000u), (unsigned long)ticks);
  return 1;
}

static struct nr_mutex mtx;
static volatile int try_rc, foreign_unlock_rc;

static void t_trylock(void *arg)
{
  (void)arg;
  try_rc = nr_mutex_lock(&mtx, NR_NO_WAIT);
  foreign_unlock_rc = nr_mutex_unlock(&mtx);
  nr_sem_give(&done);
}

static int test_mutex_basic(void)
{
  int rc;

  nr_mutex_init(&mtx, 0);
  if (nr_mutex_lock(&mtx, NR_NO_WAIT) != NR_OK) {
    return fail("a free mutex was not locked");
  }
  if ((rc = nr_mutex_lock(&mtx, 5)) != NR_EDEADLK) {
    return fail("relocking a non-recursive mutex returned %d", rc);
  }
  if (start("trylock", t_trylock, NULL, 3u, 0) == NULL || !join(1)) {
    return fail("thread not run");
  }
  if (try_rc != NR_TIMEOUT || foreign_unlock_rc != NR_EPERM) {
    return fail("another thread's lock returned %d and unlock %d", try_rc, foreign_unlock_rc);
  }
  if (nr_mutex_unlock(&mtx) != NR_OK || nr_mutex_unlock(&mtx) != NR_EPERM) {
    return fail("unlocking went wrong");
  }
  nr_mutex_init(&mtx, 1);
  if (nr_mutex_lock(&mtx, NR_NO_WAIT) != NR_OK || nr_mutex_lock(&mtx, NR_NO_WAIT) != NR_OK ||
      nr_mutex_unlock(&mtx) != NR_OK || nr_mutex_unlock(&mtx) != NR_OK || nr_mutex_unlock(&mtx) != NR_EPERM) {
    return fail("a recursive mutex did not count its locks");
  }
  return 1;
}

static struct nr_sem pi_go;
static volatile unsigned pi_prio_holding, pi_prio_after;
static volatile int pi_high_rc, pi_timeout_rc;
static volatile uint32_t pi_timeout_ticks;

/* Locks the mutex, waits for pi_go while holding it, unlocks. */
static void t_pi_low(void *arg)
{
  (void)arg;
  if (nr_mutex_lock(&mtx, NR_NO_WAIT) == NR_OK) {
    (void)nr_sem_take(&pi_go, WAIT_TICKS);
    mark('L');
    pi_prio_holding = nr_thread_priority(nr_thread_self());
    nr_mutex_unlock(&mtx);
    pi_prio_after = nr_thread_priority(nr_thread_self());
    mark('l');
  }
  nr_sem_give(&done);
}

static void t_pi_high(void *arg)
{
  (void)arg;
  pi_high_rc = nr_mutex_lock(&mtx, WAIT_TICKS);
  if (pi_high_rc == NR_OK) {
    mark('H');
    nr_mutex_unlock(&mtx);
  }
  nr_sem_give(&done);
}

static void t_pi_mid(void *arg)
{
  (void)arg;
  nr_sem_give(&pi_go);
  mark('M');
  nr_sem_give(&done);
}

/* Low (2) holds the mutex High (6) waits for, and Mid (4) makes Low ready:
   inheriting 6, Low runs before Mid, and drops back to 2 when it unlocks,
   so High then Mid run before Low finishes. Without inheritance Mid would
   run first. */
static int test_mutex_inheritance(void)
{
  nr_thread_t *low;
  unsigned p_alone, p_waited;

  nr_mutex_init(&mtx, 0);
  nr_sem_init(&pi_go, 0, 1);
  trace_reset();
  low = start("low", t_pi_low, NULL, 2u, 0);
  if (low == NULL) {
    return fail("thread not created");
  }
  p_alone = nr_thread_priority(low);
  if (start("high", t_pi_high, NULL, 6u, 1) == NULL) {
    return fail("thread not created");
  }
  p_waited = nr_thread_priority(low);
  if (start("mid", t_pi_mid, NULL, 4u, 2) == NULL) {
    return fail("thread not created");
  }
  if (!join(3)) {
    return fail("threads did not end");
  }
  if (p_alone != 2u || p_waited != 6u || pi_prio_holding != 6u || pi_prio_after != 2u) {
    return fail("holder's priority %u alone, %u with a waiter, %u running, %u after unlocking (want 2 6 6 2)",
                p_alone, p_waited, pi_prio_holding, pi_prio_after);
  }
  if (pi_high_rc != NR_OK || strcmp(trace, "LHMl") != 0) {
    return fail("order %s (want LHMl), high's lock %d", trace, pi_high_rc);
  }
  detail("holder_prio=2->6->2 order=%s", trace);
  return 1;
}

static void t_pi_timeout(void *arg)
{
  uint32_t k0 = nr_kernel_ticks();

  (void)arg;
  pi_timeout_rc = nr_mutex_lock(&mtx, 10);
  pi_timeout_ticks = nr_kernel_ticks() - k0;
  if (pi_timeout_rc == NR_OK) {
    nr_mutex_unlock(&mtx);
  }
  nr_sem_give(&done);
}

/* A waiter that gives up returns NR_TIMEOUT, and the holder drops back. */
static int test_mutex_timeout(void)
{
  nr_thread_t *low;
  unsigned p_waited, p_after;

  nr_mutex_init(&mtx, 0);
  nr_sem_init(&pi_go, 0, 1);
  trace_reset();
  low = start("low", t_pi_low, NULL, 2u, 0);
  if (low == NULL || start("impatient", t_pi_timeout, NULL, 7u, 1) == NULL) {
    return fail("threads not created");
  }
  p_waited = nr_thread_priority(low);
  nr_sleep_ms(20);
  p_after = nr_thread_priority(low);
  nr_sem_give(&pi_go);
  if (!join(2)) {
    return fail("threads did not end");
  }
  if (pi_timeout_rc != NR_TIMEOUT || pi_timeout_ticks != 11u) {
    return fail("the lock returned %d after %lu ticks (want a timeout after 11)", pi_timeout_rc,
                (unsigned long)pi_timeout_ticks);
  }
  if (p_waited != 7u || p_after != 2u || pi_prio_holding != 2u) {
    return fail("holder's priority %u while waited for, %u after the timeout (want 7 2)", p_waited, p_after);
  }
  detail("holder_prio=7->2");
  return 1;
}

static struct nr_queue queue;
static uint32_t queue_buf[4];
static volatile int sender_rc[6];
static volatile int receiver_rc;
static volatile uint32_t received;

static void t_sender(void *arg)
{
  (void)arg;
  for (uint32_t v = 10; v < 16u; v++) {
    sender_rc[v - 10u] = nr_queue_send(&queue, &v, WAIT_TICKS);
  }
  nr_sem_give(&done);
}

static void t_receiver(void *arg)
{
  uint32_t v = 0;

  (void)arg;
  receiver_rc = nr_queue_receive(&queue, &v, WAIT_TICKS);
  received = v;
  nr_sem_give(&done);
}

static int test_queue(void)
{
  uint32_t v, k0;
  uint64_t t0;
  int rc;

  nr_queue_init(&queue, queue_buf, sizeof(uint32_t), 4);
  for (v = 1; v <= 4u; v++) {
    if (nr_queue_send(&queue, &v, NR_NO_WAIT) != NR_OK) {
      return fail("item %lu not sent", (unsigned long)v);
    }
  }
  if ((rc = nr_queue_send(&queue, &v, NR_NO_WAIT)) != NR_TIMEOUT) {
    return fail("a full queue took an item (%d)", rc);
  }
  at_tick(&k0, &t0);
  if ((rc = nr_queue_send(&queue, &v, 10)) != NR_TIMEOUT ||
      !check_wait("nr_queue_send", 10, nr_kernel_ticks() - k0, ns_since(t0))) {
    return rc != NR_TIMEOUT ? fail("a send to a full queue returned %d", rc) : 0;
  }
  for (uint32_t want = 1; want <= 4u; want++) {
    if (nr_queue_receive(&queue, &v, NR_NO_WAIT) != NR_OK || v != want) {
      return fail("received %lu, not %lu", (unsigned long)v, (unsigned long)want);
    }
  }
  at_tick(&k0, &t0);
  if ((rc = nr_queue_receive(&queue, &v, 7)) != NR_TIMEOUT ||
      !check_wait("nr_queue_receive", 7, nr_kernel_ticks() - k0, ns_since(t0))) {
    return rc != NR_TIMEOUT ? fail("a receive from an empty queue returned %d", rc) : 0;
  }
  /* A sender of six items fills the queue and waits; each receive makes
     room for its next item, and the order holds. */
  if (start("sender", t_sender, NULL, 3u, 0) == NULL) {
    return fail("thread not created");
  }
  if (nr_queue_count(&queue) != 4u) {
    return fail("%lu items queued while the sender waits, not 4", (unsigned long)nr_queue_count(&queue));
  }
  for (uint32_t want = 10; want < 16u; want++) {
    if ((rc = nr_queue_receive(&queue, &v, 100)) != NR_OK || v != want) {
      return fail("received %lu (%d), not %lu", (unsigned long)v, rc, (unsigned long)want);
    }
  }
  if (!join(1)) {
    return fail("the sender did not end");
  }
  for (unsigned i = 0; i < 6u; i++) {
    if (sender_rc[i] != NR_OK) {
      return fail("send %u returned %d", i, sender_rc[i]);
    }
  }
  /* A waiting receiver gets an item handed over directly. */
  if (start("receiver", t_receiver, NULL, 3u, 0) == NULL) {
    return fail("thread not created");
  }
  v = 42;
  if ((rc = nr_queue_send(&queue, &v, NR_NO_WAIT)) != NR_OK || !join(1)) {
    return fail("the send to a waiting receiver returned %d", rc);
  }
  if (receiver_rc != NR_OK || received != 42u || nr_queue_count(&queue) != 0u) {
    return fail("the waiting receiver got %lu (%d)", (unsigned long)received, receiver_rc);
  }
  detail("fifo=1..4,10..15 full_send_timeout=11_ticks empty_receive_timeout=8_ticks");
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
static int test_isr_give(void)
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
    return fail("the hook ran %d, in an interrupt %d", hook_ran, hook_in_isr);
  }
  if (rc != NR_OK || ticks != 3u) {
    return fail("the take returned %d after %lu ticks (the give came at tick 3)", rc, (unsigned long)ticks);
  }
  if (hook_take_rc != NR_EPERM || hook_send_rc != NR_OK || hook_give_rc != NR_OK) {
    return fail("in the handler: take %d, send %d, give %d", hook_take_rc, hook_send_rc, hook_give_rc);
  }
  if (nr_queue_receive(&isr_queue, &v, NR_NO_WAIT) != NR_OK || v != 0xC0FFEEu) {
    return fail("the item sent from the handler is %lx", (unsigned long)v);
  }
  detail("woken_after_ticks=%lu", (unsigned long)ticks);
  return 1;
}

static volatile size_t deep_before, deep_after;

__attribute__((noinline)) static uint32_t deep(unsigned levels)
{
  volatile uint8_t frame[DEEP_FRAME];

  for (unsigned i = 0; i < DEEP_FRAME; i++) {
    frame[i] = (uint8_t)(levels + i);
  }
  return levels == 0u ? frame[0] : deep(levels - 1u) + frame[levels]; /* not a tail call */
}

static void t_deep(void *arg)
{
  (void)arg;
  deep_before = nr_thread_stack_used(nr_thread_self());
  (void)deep(DEEP_LEVELS);
  deep_after = nr_thread_stack_used(nr_thread_self());
  nr_sem_give(&done);
}

static volatile size_t pool_stack_size;

static void t_pool(void *arg)
{
  struct nr_thread_stats s;

  (void)arg;
  pool_stack_size = nr_thread_stats(nr_thread_self(), &s) == NR_OK ? s.stack_size : 0u;
  nr_sem_give(&done);
}

static int test_stack_watermark(void)
{
  static int pool_tested; /* the pool never takes a stack back: once per boot */
  size_t main_used = nr_thread_stack_used(nr_thread_self());

  if (nr_thread_create("deep", t_deep, NULL, 3u, deep_stack, sizeof(deep_stack)) == NULL || !join(1)) {
    return fail("thread not run");
  }
  if (deep_before == 0u || deep_after < deep_before + DEEP_LEVELS * DEEP_FRAME || deep_after >= sizeof(deep_stack)) {
    return fail("high-water mark %u bytes before %u calls of %u-byte frames, %u after (stack %u)",
                (unsigned)deep_before, DEEP_LEVELS, DEEP_FRAME, (unsigned)deep_after, (unsigned)sizeof(deep_stack));
  }
  if (main_used == 0u) {
    return fail("main's stack shows no use");
  }
  if (!pool_tested) {
    pool_tested = 1;
    if (nr_thread_create("pool", t_pool, NULL, 3u, NULL, 1024u) == NULL || !join(1) || pool_stack_size != 1024u) {
      return fail("a stack from the pool: %u bytes", (unsigned)pool_stack_size);
    }
  }
  detail("before=%u after=%u main=%u", (unsigned)deep_before, (unsigned)deep_after, (unsigned)main_used);
  return 1;
}

#if defined(__arm__) && defined(__ARM_FP)
#define FP_THREADS 2u
static volatile uint32_t fp_errors[FP_THREADS + 1u], fp_rounds[FP_THREADS + 1u], fp_switches[FP_THREADS + 1u];
static uint32_t fp_end;

/* Loads all 32 single-precision registers, spins while they hold the values
   (a switch lands here most of the time), and stores them back. */
static void fp_hold(const uint32_t *in, uint32_t *out, uint32_t spins)
{
  __asm volatile(
    "vldmia %[in], {s0-s31}\n\t"
    "1: subs %[n], %[n], #1\n\t"
    "bne 1b\n\t"
    "vstmia %[out], {s0-s31}\n\t"
    : [n] "+r"(spins)
    : [in] "r"(in), [out] "r"(out)
    : "cc", "memory", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13",
      "s14", "s15", "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27", "s28",
      "s29", "s30", "s31");
}

static void t_fp(void *arg)
{
  unsigned me = (unsigned)(uintptr_t)arg;
  uint32_t in[32], out[32];
  struct nr_thread_stats s;

  for (uint32_t round = 0; (int32_t)(nr_kernel_ticks() - fp_end) < 0; round++) {
    for (uint32_t i = 0; i < 32u; i++) {
      in[i] = (me * 0x01010101u) ^ (round << 8) ^ i;
    }
    fp_hold(in, out, 2000u);
    for (uint32_t i = 0; i < 32u; i++) {
      if (out[i] != in[i]) {
        fp_errors[me]++;
      }
    }
    fp_rounds[me]++;
  }
  fp_switches[me] = nr_thread_stats(nr_thread_self(), &s) == NR_OK ? s.switches : 0u;
  nr_sem_give(&done);
}

/* Two threads of one priority keep values in every FP register while the
   round robin switches between them: each must find its own values. */
static int test_fpu_context(void)
{
  static const struct launch list[] = {
    { "fp1", t_fp, (void *)1, 4u },
    { "fp2", t_fp, (void *)2, 4u },
  };

  for (unsigned i = 0; i <= FP_THREADS; i++) {
    fp_errors[i] = 0;
    fp_rounds[i] = 0;
    fp_switches[i] = 0;
  }
  fp_end = nr_kernel_ticks() + 4u * SLICE;
  if (!launch_and_join(list, FP_THREADS)) {
    return 0;
  }
  for (unsigned i = 1; i <= FP_THREADS; i++) {
    if (fp_errors[i] != 0u) {
      return fail("thread %u found %lu FP registers changed in %lu rounds", i, (unsigned long)fp_errors[i],
                  (unsigned long)fp_rounds[i]);
    }
    if (fp_switches[i] < 2u) {
      return fail("thread %u was switched in %lu times: the test did not switch", i, (unsigned long)fp_switches[i]);
    }
  }
  detail("rounds=%lu,%lu switches=%lu,%lu", (unsigned long)fp_rounds[1], (unsigned long)fp_rounds[2],
         (unsigned long)fp_switches[1], (unsigned long)fp_switches[2]);
  return 1;
}
#endif

static struct nr_sem hold;

static void t_busy(void *arg)
{
  uint64_t t0 = board_time_ns();

  (void)arg;
  while (ns_since(t0) < 5u * NS_PER_MS) {
  }
  (void)nr_sem_take(&hold, WAIT_TICKS);
  nr_sem_give(&done);
}

/* A thread's run time and switch count, the idle thread's time. */
static int test_counters(void)
{
  struct nr_thread_stats s;
  nr_thread_t *busy;
  uint32_t switches0 = nr_kernel_switches();
  uint64_t idle0, idle;

  nr_sem_init(&hold, 0, 1);
  busy = start("busy", t_busy, NULL, 3u, 0); /* runs its 5 ms at once, then waits */
  if (busy == NULL || nr_thread_stats(busy, &s) != NR_OK) {
    return fail("thread not created");
  }
  idle0 = nr_kernel_idle_ns();
  nr_sleep_ms(10);
  idle = nr_kernel_idle_ns() - idle0;
  nr_sem_give(&hold);
  if (!join(1)) {
    return fail("thread did not end");
  }
  if (s.run_ns < 5u * NS_PER_MS || s.run_ns > 5u * NS_PER_MS + SLACK_NS || s.switches != 1u) {
    return fail("a thread that ran 5 ms: run_ns=%llu switches=%lu", (unsigned long long)s.run_ns,
                (unsigned long)s.switches);
  }
  if (idle < 9u * NS_PER_MS || idle > 11u * NS_PER_MS + SLACK_NS) {
    return fail("idle %llu ns while main slept 10 ms", (unsigned long long)idle);
  }
  if (nr_kernel_switches() - switches0 < 4u) {
    return fail("%lu switches counted", (unsigned long)(nr_kernel_switches() - switches0));
  }
  detail("busy_run_us=%lu idle_us=%lu", (unsigned long)(s.run_ns / 1000u), (unsigned long)(idle / 1000u));
  return 1;
}

/* ---- errno ---- */

/* On newlib the kernel's __errno() makes errno itself each thread's; the
   test reads it through <errno.h> as lwIP's sockets and the apps do. */
#if defined(__NEWLIB__)
#define THREAD_ERRNO errno
#else
#define THREAD_ERRNO (*nr_thread_errno())
#endif
#define ERRNO_ROUNDS 4u
#define ERRNO_IN_ISR 99

static volatile unsigned errno_wrong[3], errno_switches[3];
static int *volatile errno_where[3];
static int *volatile errno_isr_where;
static volatile int errno_isr_writes;

static void errno_hook(uint32_t now)
{
  (void)now;
  errno_isr_where = nr_thread_errno();
  THREAD_ERRNO = ERRNO_IN_ISR; /* must not land in the interrupted thread's */
  errno_isr_writes++;
}

/* Sets its own errno, then gives the core to the other thread (which sets
   a different value) and sleeps across ticks (whose hook writes errno in
   the interrupt) before looking again. */
static void t_errno(void *arg)
{
  unsigned me = (unsigned)(uintptr_t)arg;
  struct nr_thread_stats s;

  errno_where[me] = &THREAD_ERRNO;
  for (unsigned round = 0; round < ERRNO_ROUNDS; round++) {
    int mine = (int)(me * 100u + round);

    THREAD_ERRNO = mine;
    nr_thread_yield();
    errno_wrong[me] += THREAD_ERRNO != mine;
    (void)nr_sleep_ms(1);
    errno_wrong[me] += THREAD_ERRNO != mine;
  }
  errno_switches[me] = nr_thread_stats(nr_thread_self(), &s) == NR_OK ? s.switches : 0u;
  nr_sem_give(&done);
}

/* Two threads of one priority and an interrupt handler each keep their own
   errno across switches; main's is untouched by all three. */
static int test_thread_errno(void)
{
  static const struct launch list[] = {
    { "errno1", t_errno, (void *)1, 4u },
    { "errno2", t_errno, (void *)2, 4u },
  };
  int main_errno = 7;

  for (unsigned i = 0; i < 3u; i++) {
    errno_wrong[i] = errno_switches[i] = 0;
    errno_where[i] = NULL;
  }
  errno_isr_writes = 0;
  THREAD_ERRNO = main_errno;
  nr_kernel_set_tick_hook(errno_hook);
  if (!launch_and_join(list, 2)) {
    nr_kernel_set_tick_hook(NULL);
    return 0;
  }
  nr_kernel_set_tick_hook(NULL);
#if defined(__NEWLIB__)
  if (&errno != nr_thread_errno()) {
    return fail("errno is not the thread's own (newlib's __errno() is not the kernel's)");
  }
#endif
  if (THREAD_ERRNO != main_errno) {
    return fail("main's errno changed from %d to %d", main_errno, THREAD_ERRNO);
  }
  if (errno_wrong[1] != 0u || errno_wrong[2] != 0u) {
    return fail("a thread found another's errno: %u and %u times", errno_wrong[1], errno_wrong[2]);
  }
  if (errno_where[1] == errno_where[2] || errno_where[1] == &THREAD_ERRNO || errno_where[2] == &THREAD_ERRNO ||
      errno_where[1] == NULL) {
    return fail("the threads' errno are not three places");
  }
  if (errno_isr_writes == 0 || errno_isr_where == errno_where[1] || errno_isr_where == errno_where[2] ||
      errno_isr_where == &THREAD_ERRNO) {
    return fail("the interrupt's errno (%d writes) is a thread's", errno_isr_writes);
  }
  if (errno_switches[1] < 2u * ERRNO_ROUNDS || errno_switches[2] < 2u * ERRNO_ROUNDS) {
    return fail("switched in %u and %u times: the threads did not take turns", errno_switches[1],
                errno_switches[2]);
  }
  detail("switches=%u,%u isr_writes=%d", errno_switches[1], errno_switches[2], errno_isr_writes);
  return 1;
}

/* ---- Costs ---- */

static struct nr_sem ping, pong;
static struct nr_queue qa, qb;
static uint32_t qa_buf[1], qb_buf[1];
static uint64_t cost_t0, cost_t1;
static uint32_t cost_sw0, cost_sw1;
static volatile unsigned cost_rounds;

static void t_yielder(void *arg)
{
  (void)arg;
  if (cost_t0 == 0u) {
    cost_t0 = board_time_ns();
    cost_sw0 = nr_kernel_switches();
  }
  for (unsigned i = 0; i < COST_ROUNDS; i++) {
    nr_thread_yield();
  }
  cost_t1 = board_time_ns(); /* the one that ends last sets it last */
  cost_sw1 = nr_kernel_switches();
  nr_sem_give(&done);
}

static void t_sem_server(void *arg)
{
  (void)arg;
  for (unsigned i = 0; i < COST_ROUNDS; i++) {
    if (nr_sem_take(&ping, WAIT_TICKS) != NR_OK) {
      break;
    }
    nr_sem_give(&pong);
  }
  nr_sem_give(&done);
}

static void t_sem_client(void *arg)
{
  unsigned n = 0;

  (void)arg;
  cost_t0 = board_time_ns();
  for (; n < COST_ROUNDS; n++) {
    nr_sem_give(&ping);
    if (nr_sem_take(&pong, WAIT_TICKS) != NR_OK) {
      break;
    }
  }
  cost_t1 = board_time_ns();
  cost_rounds = n;
  nr_sem_give(&done);
}

static void t_queue_server(void *arg)
{
  uint32_t v;

  (void)arg;
  for (unsigned i = 0; i < COST_ROUNDS; i++) {
    if (nr_queue_receive(&qa, &v, WAIT_TICKS) != NR_OK) {
      break;
    }
    v++;
    nr_queue_send(&qb, &v, WAIT_TICKS);
  }
  nr_sem_give(&done);
}

static void t_queue_client(void *arg)
{
  unsigned n = 0;
  uint32_t v;

  (void)arg;
  cost_t0 = board_time_ns();
  for (; n < COST_ROUNDS; n++) {
    v = n;
    nr_queue_send(&qa, &v, WAIT_TICKS);
    if (nr_queue_receive(&qb, &v, WAIT_TICKS) != NR_OK || v != n + 1u) {
      break;
    }
  }
  cost_t1 = board_time_ns();
  cost_rounds = n;
  nr_sem_give(&done);
}

/* The median of COST_BATCHES values (sorts them). Each cost is measured in
   several batches and the median kept, because a board_time_ns() reading
   taken in the one SysTick count after a wrap reads a subtick (125 us) high
   (arch/cortex-m/board.c; docs/kernel.md): rare, but enough to spoil the
   batch it lands in. */
static uint64_t median(uint64_t *v)
{
  for (unsigned i = 1; i < COST_BATCHES; i++) {
    for (unsigned j = i; j > 0u && v[j - 1u] > v[j]; j--) {
      uint64_t t = v[j];

      v[j] = v[j - 1u];
      v[j - 1u] = t;
    }
  }
  return v[COST_BATCHES / 2u];
}

/* Instructions per board us, times 1000, from the board's known loop; 0 if
   the board cannot say how many instructions its loop takes. */
static uint64_t core_mhz_milli(void)
{
  uint64_t rate[COST_BATCHES];

  if (board_spin_instructions() == 0u) {
    return 0;
  }
  for (unsigned b = 0; b < COST_BATCHES; b++) {
    uint64_t t0 = board_time_ns();
    uint64_t ns;

    board_spin(SPIN_ITERATIONS, 0);
    ns = ns_since(t0);
    rate[b] = ns == 0u ? 0u : (uint64_t)SPIN_ITERATIONS * board_spin_instructions() * 1000000u / ns;
  }
  return median(rate);
}

/* Appends to a line of size bytes, of which len are used; truncates. */
static void append(char *line, size_t *len, size_t size, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char *line, size_t *len, size_t size, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = nr_vsnprintf(line + *len, size - *len, fmt, ap);
  va_end(ap);
  *len += n < 0 ? 0u : (size_t)n < size - *len ? (size_t)n : size - *len - 1u;
}

/* A cost per operation (ps, from its batches' median) as board ns with one
   decimal and as cycles. */
static void put_cost(char *line, size_t *len, size_t size, const char *name, uint64_t *ps, uint64_t mhz_milli)
{
  uint64_t m = median(ps);
  uint64_t tenths = (m + 50u) / 100u;
  uint64_t cycles = (m * mhz_milli + 500000000u) / 1000000000u;

  append(line, len, size, " %s_ns=%lu.%lu %s_cycles=%lu", name, (unsigned long)(tenths / 10u),
         (unsigned long)(tenths % 10u), name, (unsigned long)cycles);
}

static int run_costs(void)
{
  static const struct launch yielders[] = {
    { "yield1", t_yielder, NULL, 5u },
    { "yield2", t_yielder, NULL, 5u },
  };
  static const struct launch sem_pair[] = {
    { "server", t_sem_server, NULL, 6u },
    { "client", t_sem_client, NULL, 5u },
  };
  static const struct launch queue_pair[] = {
    { "server", t_queue_server, NULL, 6u },
    { "client", t_queue_client, NULL, 5u },
  };
  uint64_t mhz = core_mhz_milli();
  uint64_t switch_ps[COST_BATCHES], sem_ps[COST_BATCHES], queue_ps[COST_BATCHES]; /* per operation */
  uint64_t clock_ps[COST_BATCHES];
  unsigned switches = 0;
  char line[320];
  size_t len;

  for (unsigned b = 0; b < COST_BATCHES; b++) {
    cost_t0 = 0;
    if (!launch_and_join(yielders, 2)) {
      return 0;
    }
    switches = cost_sw1 - cost_sw0;
    if (switches < 2u * COST_ROUNDS) {
      return fail("%u switches in %u yields of each of two threads", switches, COST_ROUNDS);
    }
    switch_ps[b] = (cost_t1 - cost_t0) * 1000u / switches;

    nr_sem_init(&ping, 0, 1);
    nr_sem_init(&pong, 0, 1);
    if (!launch_and_join(sem_pair, 2)) {
      return 0;
    }
    if (cost_rounds != COST_ROUNDS) {
      return fail("%u semaphore round trips of %u", cost_rounds, COST_ROUNDS);
    }
    sem_ps[b] = (cost_t1 - cost_t0) * 1000u / COST_ROUNDS;

    nr_queue_init(&qa, qa_buf, sizeof(uint32_t), 1);
    nr_queue_init(&qb, qb_buf, sizeof(uint32_t), 1);
    if (!launch_and_join(queue_pair, 2)) {
      return 0;
    }
    if (cost_rounds != COST_ROUNDS) {
      return fail("%u queue round trips of %u", cost_rounds, COST_ROUNDS);
    }
    queue_ps[b] = (cost_t1 - cost_t0) * 1000u / COST_ROUNDS;

    /* The board clock read every switch makes for the run-time counters. */
    cost_t0 = board_time_ns();
    for (unsigned i = 0; i < COST_ROUNDS; i++) {
      (void)board_time_ns();
    }
    clock_ps[b] = ns_since(cost_t0) * 1000u / COST_ROUNDS;
  }
  len = 0;
  append(line, &len, sizeof(line), "KCOST core_mhz=%lu.%03lu", (unsigned long)(mhz / 1000u),
         (unsigned long)(mhz % 1000u));
  put_cost(line, &len, sizeof(line), "switch", switch_ps, mhz);
  put_cost(line, &len, sizeof(line), "sem_round_trip", sem_ps, mhz);
  put_cost(line, &len, sizeof(line), "queue_round_trip", queue_ps, mhz);
  put_cost(line, &len, sizeof(line), "clock_read", clock_ps, mhz);
  nr_printf("%s rounds=%u batches=%u switches_per_batch=%u\n", line, COST_ROUNDS, COST_BATCHES, switches);
  return 1;
}

static void print_threads(void)
{
  struct nr_thread_stats s;

  for (unsigned i = 0; i < NR_KERNEL_MAX_THREADS; i++) {
    if (nr_thread_stats(nr_thread_at(i), &s) == NR_OK) {
      nr_printf("KTHREAD name=%s prio=%u base_prio=%u switches=%lu run_us=%llu stack_used=%u stack_size=%u\n",
                s.name, s.prio, s.base_prio, (unsigned long)s.switches, (unsigned long long)(s.run_ns / 1000u),
                (unsigned)s.stack_used, (unsigned)s.stack_size);
    }
  }
  nr_printf("KKERNEL ticks=%lu switches=%lu idle_us=%llu\n", (unsigned long)nr_kernel_ticks(),
            (unsigned long)nr_kernel_switches(), (unsigned long long)(nr_kernel_idle_ns() / 1000u));
}

/* ---- The command ---- */

struct ktest {
  const char *name;
  int (*run)(void);
};

static const struct ktest tests[] = {
  { "kernel_start", test_start },
  { "priority_order", test_priority_order },
  { "preemption", test_preemption },
  { "round_robin", test_round_robin },
  { "sleep", test_sleep },
  { "semaphore", test_semaphore },
  { "mutex_basic", test_mutex_basic },
  { "mutex_inheritance", test_mutex_inheritance },
  { "mutex_timeout", test_mutex_timeout },
  { "queue", test_queue },
  { "isr_give", test_isr_give },
  { "stack_watermark", test_stack_watermark },
#if defined(__arm__) && defined(__ARM_FP)
  { "fpu_context", test_fpu_context },
#endif
  { "counters", test_counters },
  { "thread_errno", test_thread_errno },
  { "costs", run_costs },
};

#define NUM_TESTS (sizeof(tests) / sizeof(tests[0]))

static void ktest_run(int argc, char **argv)
{
  unsigned passed = 0, failed = 0, i;

  (void)argc;
  (void)argv;
  if (stuck) {
    nr_printf("ERROR: a thread of the last ktest never ended; reboot to test again\n");
    return;
  }
  nr_sem_init(&done, 0, NR_KERNEL_MAX_THREADS);
  for (i = 0; i < NUM_TESTS; i++) {
    why[0] = note[0] = '\0';
    if (tests[i].run()) {
      passed++;
      nr_printf("KTEST %s pass%s%s\n", tests[i].name, note[0] ? " " : "", note);
      continue;
    }
    failed++;
    nr_printf("KTEST %s FAIL %s\n", tests[i].name, why);
    if (!nr_kernel_started() || stuck) {
      /* no kernel, or a thread may still run on a test stack: stop here */
      nr_printf("KTEST stopped: the remaining %u tests not run\n", (unsigned)(NUM_TESTS - i - 1u));
      failed += (unsigned)(NUM_TESTS - i - 1u);
      break;
    }
  }
  if (nr_kernel_started()) {
    print_threads();
  }
  nr_printf("ktest: %u passed, %u failed\n", passed, failed);
}

const struct nr_app nr_app_ktest = {
  "ktest", "ktest",
  "ktest - the kernel's on-board tests and costs (test builds, NR_TEST_KERNEL): KTEST <name> pass|FAIL, "
  "KCOST, ktest: N passed, M failed",
  ktest_run, NULL, NULL,
};
