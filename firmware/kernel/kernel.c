/*
 * The kernel (nr_kernel.h): scheduling, time, semaphores, mutexes, queues.
 * Architecture-neutral; the port (nr_kernel_port.h) switches contexts.
 *
 * Threads live in one fixed table. Every thread that can run is on the
 * ready list, most urgent first and in arrival order among equals; the
 * running thread is on it too, first among its equals, so "which thread
 * should run" is always the list's head and a thread made ready behind an
 * equal never preempts it. Wait lists (a semaphore's, a mutex's, a queue's
 * senders and receivers) are kept in the same order, so the most urgent
 * waiter is served first. With a dozen threads a walk along a list is as
 * cheap as any cleverer structure, and much easier to check.
 *
 * All of it is guarded by masking interrupts (board_irq_save()): the tick
 * and the interrupt-safe calls run in interrupt handlers and touch the same
 * lists. A switch is asked of the port (nr_port_request_switch()); on
 * Cortex-M it runs in the lowest-priority exception, so after the handler
 * or the critical section that asked for it.
 */
#include <string.h>

#include "nr_board.h"
#include "nr_kernel.h"
#include "nr_kernel_port.h"

#if NR_KERNEL_PRIO_MAX < 1 || NR_KERNEL_PRIO_MAX > 255
#error "NR_KERNEL_PRIO_MAX must be 1..255"
#endif
#if NR_KERNEL_MAX_THREADS < 2
#error "NR_KERNEL_MAX_THREADS must leave room for main and the idle thread"
#endif
#if NR_KERNEL_IDLE_STACK < NR_KERNEL_MIN_STACK
#error "NR_KERNEL_IDLE_STACK is below NR_KERNEL_MIN_STACK"
#endif

/* What an unused stack word holds: the high-water mark is where it stops. */
#define STACK_PAINT 0xC5A5C5A5u
/* Below the running code's own frame, main's stack is painted at start
   leaving this much room for the painting loop's own frame. */
#define MAIN_PAINT_MARGIN 256u
/* A timeout longer than this (24 days) waits forever: a wake tick further
   ahead than half the tick counter's range would read as already passed. */
#define TIMEOUT_MAX 0x7FFFFFFEu

static struct nr_thread threads[NR_KERNEL_MAX_THREADS];
static struct nr_thread *current;     /* the running thread; NULL before the start */
static struct nr_thread *ready;       /* the ready list */
static struct nr_thread *idle_thread;
static int started;
static uint32_t ticks;
static uint32_t switches;
static uint64_t switched_in_ns;       /* board time the running thread was switched in */
static void (*tick_hook)(uint32_t ticks);

static uint64_t stack_pool[NR_KERNEL_STACK_POOL / 8]; /* uint64_t: stacks 8-byte aligned (AAPCS) */
static size_t pool_used;
static uint64_t idle_stack[NR_KERNEL_IDLE_STACK / 8];

static void update_prio(struct nr_thread *t);

/* ---- Lists ---- */

/* Puts t on the list behind every thread at least as urgent, or with ahead
   in front of its equals (a thread that keeps the core). */
static void list_insert(struct nr_thread **list, struct nr_thread *t, int ahead)
{
  struct nr_thread **at = list;

  while (*at != NULL && ((*at)->prio > t->prio || (!ahead && (*at)->prio == t->prio))) {
    at = &(*at)->next;
  }
  t->next = *at;
  *at = t;
}

static void list_remove(struct nr_thread **list, struct nr_thread *t)
{
  for (struct nr_thread **at = list; *at != NULL; at = &(*at)->next) {
    if (*at == t) {
      *at = t->next;
      t->next = NULL;
      return;
    }
  }
}

/* ---- Scheduling ---- */

static void reschedule(void)
{
  if (started && ready != current) {
    nr_port_request_switch();
  }
}

static int can_block(void)
{
  return started && nr_port_can_block();
}

/* Takes the running thread off the ready list onto list (NULL: a sleep),
   until woken or the timeout ends. Interrupts masked; wait_done() follows. */
static void begin_wait(struct nr_thread **list, uint32_t timeout)
{
  struct nr_thread *t = current;

  list_remove(&ready, t);
  t->state = NR_THREAD_WAITING;
  t->wait_list = list;
  t->wait_result = NR_TIMEOUT;
  if (list != NULL) {
    list_insert(list, t, 0);
  }
  t->timed = timeout <= TIMEOUT_MAX;
  t->wake_tick = ticks + timeout + 1u; /* the call is part way through this tick */
}

/* Switches away (the critical section irq came from ends) and returns how
   the wait ended once the thread runs again. */
static int wait_done(struct nr_thread *self, uint32_t irq)
{
  nr_port_block(irq);
  return self->wait_result;
}

/* Ends t's wait with result: off its wait list, onto the ready list. A
   waiter leaving a mutex's list may let the holder drop its inherited
   priority. Interrupts masked. */
static void end_wait(struct nr_thread *t, int result)
{
  struct nr_mutex *m = t->wait_mutex;

  if (t->wait_list != NULL) {
    list_remove(t->wait_list, t);
  }
  t->wait_list = NULL;
  t->wait_mutex = NULL;
  t->timed = 0;
  t->wait_result = result;
  t->state = NR_THREAD_READY;
  list_insert(&ready, t, 0);
  if (m != NULL && m->owner != NULL) {
    update_prio(m->owner);
  }
}

struct nr_thread *nr_kernel_switch(void *sp)
{
  struct nr_thread *prev = current;
  struct nr_thread *next = ready;
  uint64_t now = board_time_ns();

  prev->sp = sp;
  prev->run_ns += now - switched_in_ns;
  if (prev->state == NR_THREAD_EXITED) {
    prev->state = NR_THREAD_FREE; /* off its stack for good: the slot may be reused */
  }
  if (next != prev) {
    switches++;
    next->switches++;
    next->slice = 0;
  }
  switched_in_ns = now;
  current = next;
  return next;
}

void nr_kernel_tick(void)
{
  struct nr_thread *t;
  uint32_t irq;

  if (!started) {
    return;
  }
  irq = board_irq_save();
  ticks++;
  for (unsigned i = 0; i < NR_KERNEL_MAX_THREADS; i++) {
    t = &threads[i];
    if (t->state == NR_THREAD_WAITING && t->timed && (int32_t)(ticks - t->wake_tick) >= 0) {
      end_wait(t, NR_TIMEOUT);
    }
  }
  if (tick_hook != NULL) {
    tick_hook(ticks);
  }
  /* Round robin: at the end of its turn the running thread queues behind
     the next of its priority, if one is ready. */
  t = current;
  if (t->state == NR_THREAD_READY && ++t->slice >= NR_KERNEL_TIME_SLICE) {
    t->slice = 0;
    if (t->next != NULL && t->next->prio == t->prio) {
      list_remove(&ready, t);
      list_insert(&ready, t, 0);
    }
  }
  reschedule();
  board_irq_restore(irq);
}

/* Recomputes t's effective priority (its own, or the most urgent waiter's
   of any mutex it holds), moves it on the list it is on, and follows the
   chain: if t itself waits for a mutex, that holder's may change too. The
   chain is at most as long as there are threads (a deadlock cycle stops
   there). */
static void update_prio(struct nr_thread *t)
{
  for (unsigned hops = 0; t != NULL && hops < NR_KERNEL_MAX_THREADS; hops++) {
    unsigned p = t->base_prio;
    int raised;

    for (struct nr_mutex *m = t->held; m != NULL; m = m->next_held) {
      if (m->waiters != NULL && m->waiters->prio > p) {
        p = m->waiters->prio;
      }
    }
    if (p == t->prio) {
      return;
    }
    raised = p > t->prio;
    t->prio = (uint8_t)p;
    if (t->state == NR_THREAD_READY) {
      list_remove(&ready, t);
      list_insert(&ready, t, raised); /* raised: it keeps the core among its new equals */
    } else if (t->wait_list != NULL) {
      list_remove(t->wait_list, t);
      list_insert(t->wait_list, t, 0);
    }
    t = t->wait_mutex != NULL ? t->wait_mutex->owner : NULL;
  }
}

/* ---- Threads ---- */

static void paint(uint8_t *lo, uint8_t *hi)
{
  for (uint32_t *w = (uint32_t *)lo; (uint8_t *)(w + 1) <= hi; w++) {
    *w = STACK_PAINT;
  }
}

static void trampoline(struct nr_thread *t)
{
  t->entry(t->arg);
  nr_thread_exit();
}

static struct nr_thread *free_slot(void)
{
  for (unsigned i = 0; i < NR_KERNEL_MAX_THREADS; i++) {
    if (threads[i].state == NR_THREAD_FREE) {
      return &threads[i];
    }
  }
  return NULL;
}

/* nr_thread_create() without the priority check (the idle thread has 0). */
static struct nr_thread *spawn(const char *name, void (*entry)(void *), void *arg, unsigned prio,
                               void *stack, size_t stack_size)
{
  struct nr_thread *t;
  uint8_t *lo = stack;
  uint32_t irq;

  if (stack != NULL) {
    lo = (uint8_t *)(((uintptr_t)stack + 7u) & ~(uintptr_t)7u);
    stack_size = stack_size > (size_t)(lo - (uint8_t *)stack) ? stack_size - (size_t)(lo - (uint8_t *)stack) : 0;
  }
  stack_size &= ~(size_t)7u;
  if (entry == NULL || stack_size < NR_KERNEL_MIN_STACK) {
    return NULL;
  }
  irq = board_irq_save();
  t = free_slot();
  if (t != NULL && stack == NULL) {
    if (stack_size > sizeof(stack_pool) - pool_used) {
      t = NULL;
    } else {
      lo = (uint8_t *)stack_pool + pool_used;
      pool_used += stack_size;
    }
  }
  if (t != NULL) {
    /* Claimed: a waiting thread on no list without a timeout is one nothing
       else touches, so the rest is filled in with interrupts enabled. */
    memset(t, 0, sizeof(*t));
    t->state = NR_THREAD_WAITING;
  }
  board_irq_restore(irq);
  if (t == NULL) {
    return NULL;
  }
  paint(lo, lo + stack_size);
  t->name = name;
  t->entry = entry;
  t->arg = arg;
  t->prio = t->base_prio = (uint8_t)prio;
  t->stack_lo = lo;
  t->stack_size = stack_size;
  t->sp = nr_port_stack_init(t, trampoline);

  irq = board_irq_save();
  t->state = NR_THREAD_READY;
  list_insert(&ready, t, 0);
  reschedule();
  board_irq_restore(irq);
  return t;
}

nr_thread_t *nr_thread_create(const char *name, void (*entry)(void *arg), void *arg, unsigned prio,
                              void *stack, size_t stack_size)
{
  if (prio < 1u || prio > NR_KERNEL_PRIO_MAX) {
    return NULL;
  }
  return spawn(name, entry, arg, prio, stack, stack_size);
}

void nr_thread_exit(void)
{
  uint32_t irq = board_irq_save();

  if (!started) {
    for (;;) {
      /* not a thread: nothing to switch to */
    }
  }
  list_remove(&ready, current);
  current->state = NR_THREAD_EXITED;
  nr_port_block(irq);
  for (;;) {
    /* never switched in again */
  }
}

nr_thread_t *nr_thread_self(void)
{
  return current;
}

void nr_thread_yield(void)
{
  uint32_t irq = board_irq_save();

  if (started) {
    list_remove(&ready, current);
    list_insert(&ready, current, 0);
    reschedule();
  }
  board_irq_restore(irq);
}

int nr_sleep_ms(uint32_t ms)
{
  uint32_t irq;

  if (ms == 0u) {
    nr_thread_yield();
    return NR_OK;
  }
  if (!can_block()) {
    return NR_EPERM;
  }
  irq = board_irq_save();
  begin_wait(NULL, ms);
  (void)wait_done(current, irq);
  return NR_OK;
}

unsigned nr_thread_priority(const nr_thread_t *t)
{
  return t->prio;
}

size_t nr_thread_stack_used(const nr_thread_t *t)
{
  const uint32_t *w = (const uint32_t *)t->stack_lo;
  const uint32_t *end = (const uint32_t *)(t->stack_lo + t->stack_size);

  while (w < end && *w == STACK_PAINT) {
    w++;
  }
  return (size_t)((const uint8_t *)end - (const uint8_t *)w);
}

nr_thread_t *nr_thread_at(unsigned index)
{
  if (index >= NR_KERNEL_MAX_THREADS || threads[index].state == NR_THREAD_FREE) {
    return NULL;
  }
  return &threads[index];
}

int nr_thread_stats(const nr_thread_t *t, struct nr_thread_stats *out)
{
  uint32_t irq;

  if (t == NULL || t->state == NR_THREAD_FREE) {
    return NR_EINVAL;
  }
  irq = board_irq_save();
  out->name = t->name;
  out->prio = t->prio;
  out->base_prio = t->base_prio;
  out->switches = t->switches;
  out->run_ns = t->run_ns + (t == current ? board_time_ns() - switched_in_ns : 0u);
  board_irq_restore(irq);
  out->stack_size = t->stack_size;
  out->stack_used = nr_thread_stack_used(t);
  return NR_OK;
}

int *nr_thread_errno(void)
{
  static int shared_errno; /* before the start, and interrupt handlers' */

  return started && !nr_port_in_isr() ? &current->errno_value : &shared_errno;
}

#if defined(NR_KERNEL) && NR_KERNEL && defined(__NEWLIB__)
/* newlib's errno is (*__errno()), one per firmware in libc's version; this
   one replaces it (libc's errno.o defines nothing else, so it is never
   linked), so lwIP's sockets (LWIP_ERRNO_STDINCLUDE) and the apps set and
   read the calling thread's. Only in kernel builds: elsewhere libc's stays. */
int *__errno(void);
int *__errno(void)
{
  return nr_thread_errno();
}
#endif

/* ---- The kernel ---- */

static void idle_main(void *arg)
{
  (void)arg;
  for (;;) {
    uint32_t irq = board_irq_save();

    /* Checked with interrupts masked, so a wake-up between the check and
       the sleep still ends the sleep (board_wait_for_interrupt()). */
    if (ready == idle_thread) {
      board_wait_for_interrupt();
    }
    board_irq_restore(irq);
  }
}

int nr_kernel_start(unsigned main_prio)
{
  struct nr_thread *main_thread;
  volatile uint32_t here;
  uintptr_t below;
  uint32_t irq;

  if (started) {
    return NR_EPERM;
  }
  if (main_prio < 1u || main_prio > NR_KERNEL_PRIO_MAX) {
    return NR_EINVAL;
  }
  idle_thread = spawn("idle", idle_main, NULL, 0u, idle_stack, sizeof(idle_stack));
  irq = board_irq_save();
  main_thread = free_slot();
  if (main_thread != NULL) {
    memset(main_thread, 0, sizeof(*main_thread));
    main_thread->state = NR_THREAD_WAITING; /* claimed */
  }
  board_irq_restore(irq);
  if (idle_thread == NULL || main_thread == NULL) {
    return NR_ENOMEM; /* only with a table filled by threads created before the start */
  }
  main_thread->name = "main";
  main_thread->prio = main_thread->base_prio = (uint8_t)main_prio;
  nr_port_start(main_thread);
  /* Interrupts have their own stack now: everything below this frame on
     main's is free, so it is painted for main's high-water mark. */
  below = ((uintptr_t)&here - MAIN_PAINT_MARGIN) & ~(uintptr_t)3u;
  if (below > (uintptr_t)main_thread->stack_lo) {
    paint(main_thread->stack_lo, (uint8_t *)below);
  }

  irq = board_irq_save();
  main_thread->state = NR_THREAD_READY;
  main_thread->switches = 1u;
  list_insert(&ready, main_thread, 1);
  current = main_thread;
  switched_in_ns = board_time_ns();
  started = 1;
  reschedule(); /* threads created before the start that are more urgent than main */
  board_irq_restore(irq);
  return NR_OK;
}

int nr_kernel_started(void)
{
  return started;
}

uint32_t nr_kernel_ticks(void)
{
  return ticks;
}

uint32_t nr_kernel_switches(void)
{
  return switches;
}

uint64_t nr_kernel_idle_ns(void)
{
  struct nr_thread_stats s;

  return idle_thread != NULL && nr_thread_stats(idle_thread, &s) == NR_OK ? s.run_ns : 0u;
}

void nr_kernel_set_tick_hook(void (*hook)(uint32_t ticks))
{
  uint32_t irq = board_irq_save();

  tick_hook = hook;
  board_irq_restore(irq);
}

/* ---- Semaphores ---- */

void nr_sem_init(struct nr_sem *s, uint32_t count, uint32_t max)
{
  s->waiters = NULL;
  s->max = max > 0u ? max : 1u;
  s->count = count < s->max ? count : s->max;
}

int nr_sem_take(struct nr_sem *s, uint32_t timeout)
{
  uint32_t irq;

  if (timeout != NR_NO_WAIT && !can_block()) {
    return NR_EPERM;
  }
  irq = board_irq_save();
  if (s->count > 0u) {
    s->count--;
    board_irq_restore(irq);
    return NR_OK;
  }
  if (timeout == NR_NO_WAIT) {
    board_irq_restore(irq);
    return NR_TIMEOUT;
  }
  begin_wait(&s->waiters, timeout);
  return wait_done(current, irq);
}

int nr_sem_give(struct nr_sem *s)
{
  uint32_t irq = board_irq_save();
  int rc = NR_OK;

  if (s->waiters != NULL) {
    end_wait(s->waiters, NR_OK); /* the unit goes straight to it */
    reschedule();
  } else if (s->count < s->max) {
    s->count++;
  } else {
    rc = NR_EOVERFLOW;
  }
  board_irq_restore(irq);
  return rc;
}

/* ---- Mutexes ---- */

void nr_mutex_init(struct nr_mutex *m, int recursive)
{
  memset(m, 0, sizeof(*m));
  m->recursive = recursive;
}

static void hold(struct nr_mutex *m, struct nr_thread *t)
{
  m->owner = t;
  m->depth = 1u;
  m->next_held = t->held;
  t->held = m;
}

static void release(struct nr_mutex *m, struct nr_thread *t)
{
  for (struct nr_mutex **at = &t->held; *at != NULL; at = &(*at)->next_held) {
    if (*at == m) {
      *at = m->next_held;
      break;
    }
  }
  m->next_held = NULL;
  m->owner = NULL;
}

int nr_mutex_lock(struct nr_mutex *m, uint32_t timeout)
{
  struct nr_thread *self = current;
  uint32_t irq;

  if (!started || nr_port_in_isr() || (timeout != NR_NO_WAIT && !can_block())) {
    return NR_EPERM;
  }
  irq = board_irq_save();
  if (m->owner == NULL) {
    hold(m, self);
    board_irq_restore(irq);
    return NR_OK;
  }
  if (m->owner == self) {
    int rc = m->recursive ? NR_OK : NR_EDEADLK;

    if (m->recursive) {
      m->depth++;
    }
    board_irq_restore(irq);
    return rc;
  }
  if (timeout == NR_NO_WAIT) {
    board_irq_restore(irq);
    return NR_TIMEOUT;
  }
  begin_wait(&m->waiters, timeout);
  self->wait_mutex = m;
  update_prio(m->owner); /* the holder inherits our priority if higher */
  return wait_done(self, irq); /* NR_OK: nr_mutex_unlock() made us the owner */
}

int nr_mutex_unlock(struct nr_mutex *m)
{
  struct nr_thread *self = current;
  struct nr_thread *next;
  uint32_t irq = board_irq_save();

  if (!started || m->owner != self) {
    board_irq_restore(irq);
    return NR_EPERM;
  }
  if (--m->depth > 0u) {
    board_irq_restore(irq);
    return NR_OK;
  }
  release(m, self);
  next = m->waiters;
  if (next != NULL) {
    next->wait_mutex = NULL;
    end_wait(next, NR_OK);
    hold(m, next);
    update_prio(next); /* it inherits from the waiters still queued */
  }
  update_prio(self); /* drop what this mutex's waiters lent us */
  reschedule();
  board_irq_restore(irq);
  return NR_OK;
}

/* ---- Queues ---- */

void nr_queue_init(struct nr_queue *q, void *buf, size_t item_size, uint32_t capacity)
{
  memset(q, 0, sizeof(*q));
  q->buf = buf;
  q->item_size = item_size;
  q->capacity = capacity > 0u ? capacity : 1u;
}

static void queue_put(struct nr_queue *q, const void *item)
{
  uint32_t tail = q->head + q->count;

  if (tail >= q->capacity) {
    tail -= q->capacity;
  }
  memcpy(q->buf + tail * q->item_size, item, q->item_size);
  q->count++;
}

static void queue_get(struct nr_queue *q, void *out)
{
  memcpy(out, q->buf + q->head * q->item_size, q->item_size);
  if (++q->head == q->capacity) {
    q->head = 0;
  }
  q->count--;
}

/* Receivers wait only on an empty queue and senders only on a full one, so
   an item handed straight to a waiting receiver keeps the FIFO order. */
static int queue_send(struct nr_queue *q, const void *item, uint32_t timeout)
{
  uint32_t irq = board_irq_save();

  if (q->receivers != NULL) {
    struct nr_thread *r = q->receivers;

    memcpy(r->wait_data, item, q->item_size);
    end_wait(r, NR_OK);
    reschedule();
  } else if (q->count < q->capacity) {
    queue_put(q, item);
  } else if (timeout == NR_NO_WAIT) {
    board_irq_restore(irq);
    return NR_TIMEOUT;
  } else {
    current->wait_data = (void *)(uintptr_t)item; /* only read, by the receiver that makes room */
    begin_wait(&q->senders, timeout);
    return wait_done(current, irq);
  }
  board_irq_restore(irq);
  return NR_OK;
}

int nr_queue_send(struct nr_queue *q, const void *item, uint32_t timeout)
{
  if (timeout != NR_NO_WAIT && !can_block()) {
    return NR_EPERM;
  }
  return queue_send(q, item, timeout);
}

int nr_queue_send_isr(struct nr_queue *q, const void *item)
{
  return queue_send(q, item, NR_NO_WAIT);
}

int nr_queue_receive(struct nr_queue *q, void *out, uint32_t timeout)
{
  uint32_t irq;

  if (timeout != NR_NO_WAIT && !can_block()) {
    return NR_EPERM;
  }
  irq = board_irq_save();
  if (q->count > 0u) {
    queue_get(q, out);
    if (q->senders != NULL) {
      struct nr_thread *s = q->senders; /* the room just made is its */

      queue_put(q, s->wait_data);
      end_wait(s, NR_OK);
      reschedule();
    }
    board_irq_restore(irq);
    return NR_OK;
  }
  if (timeout == NR_NO_WAIT) {
    board_irq_restore(irq);
    return NR_TIMEOUT;
  }
  current->wait_data = out;
  begin_wait(&q->receivers, timeout);
  return wait_done(current, irq);
}

uint32_t nr_queue_count(const struct nr_queue *q)
{
  return q->count;
}
