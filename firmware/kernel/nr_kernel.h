/*
 * netrepro's kernel: a small preemptive kernel for firmware that runs lwIP
 * with NO_SYS 0 (its tcpip thread, apps on sockets/netconn in threads of
 * their own, a receive thread woken by the NIC's interrupt). It is shared by
 * every board: this file and kernel.c are architecture-neutral, and an
 * architecture's arch/<arch>/kernel_port.c (the context switch, the first
 * stack frame of a thread) implements nr_kernel_port.h. See docs/kernel.md.
 *
 * What it has:
 *  - threads with fixed priorities, 1 (least urgent) .. NR_KERNEL_PRIO_MAX
 *    (most urgent): a higher number is more urgent. The most urgent ready
 *    thread runs; threads of equal priority share the core in turns of
 *    NR_KERNEL_TIME_SLICE ticks (round robin). Priority 0 is the idle thread's
 *    alone: it sleeps the core in board_wait_for_interrupt(), so the board's
 *    idle accounting (board_idle_ns(), the shell's "cpu") keeps working;
 *  - a tick once a board millisecond, from the board's own timer (its 1 ms
 *    tick calls nr_kernel_tick()), so sleeps and timeouts follow the board's
 *    time, device time included;
 *  - counting semaphores, mutexes with priority inheritance, and message
 *    queues of fixed-size items copied in and out;
 *  - per-thread counters: times switched in, board time run (board_time_ns()),
 *    the stack's high-water mark; and the idle thread's time.
 *
 * Everything is statically allocated (no malloc): a fixed table of
 * NR_KERNEL_MAX_THREADS threads, stacks given by the caller or cut from a
 * static pool, objects (semaphores, mutexes, queues) in the caller's storage.
 * The kernel's own data is guarded by masking interrupts with the board's
 * board_irq_save()/board_irq_restore(), never for longer than a list walk
 * over the threads (or one queue item's copy).
 *
 * Time is counted in ticks, one a board millisecond. Every blocking call
 * takes a timeout in ticks: NR_NO_WAIT (0) returns at once, NR_FOREVER waits
 * without end, and any other N waits AT LEAST N ticks: the call comes part
 * way through a tick, so the wait ends at the (N+1)-th tick from the call,
 * between N and N+1 board ms later. nr_sleep_ms() follows the same rule.
 *
 * Blocking calls (those with a timeout other than NR_NO_WAIT) may only be
 * made from a thread, with interrupts enabled: from an interrupt handler or
 * with interrupts masked they return NR_EPERM at once. From an interrupt
 * handler use nr_sem_give(), nr_queue_send_isr() and the NR_NO_WAIT forms.
 *
 * The kernel is compiled in only where asked (the Makefile's NR_KERNEL: the
 * test-only option NR_TEST_KERNEL today, lwIP's NO_SYS 0 in a later change);
 * without it nothing refers to this code and the linker drops it, so a
 * NO_SYS 1 firmware is the same image as before the kernel existed.
 */
#ifndef NR_KERNEL_H
#define NR_KERNEL_H

#include <stddef.h>
#include <stdint.h>

/* ---- Limits (each may be set with -D, e.g. from a board.mk's CPU_FLAGS) ---- */

/* Threads at once, the idle thread and the thread main() becomes included.
   The tick walks this table once a ms for expired timeouts, so it is kept
   small; an exited thread's slot is free again. */
#ifndef NR_KERNEL_MAX_THREADS
#define NR_KERNEL_MAX_THREADS 12
#endif

/* The most urgent priority. Threads take 1..NR_KERNEL_PRIO_MAX; 0 is the
   idle thread's. At most 255 (priorities are kept in a byte). */
#ifndef NR_KERNEL_PRIO_MAX
#define NR_KERNEL_PRIO_MAX 31
#endif

/* Round robin, in ticks: a thread that has run this many ticks since it was
   switched in gives the core to the next ready thread of its priority, if
   there is one, and queues behind it (else it runs on, a new turn). A turn
   starts afresh whenever the thread is switched in (after it blocked,
   yielded or was preempted by a more urgent one). */
#ifndef NR_KERNEL_TIME_SLICE
#define NR_KERNEL_TIME_SLICE 10
#endif

/* Bytes of the static pool that nr_thread_create() cuts stacks from when
   the caller gives none. A stack from the pool is never given back (a
   thread that exits leaves it unused), so the pool is for threads that live
   as long as the firmware (lwIP's tcpip thread, a receive thread, apps). */
#ifndef NR_KERNEL_STACK_POOL
#define NR_KERNEL_STACK_POOL 16384
#endif

/* The smallest stack nr_thread_create() accepts, in bytes: the saved
   context (on Cortex-M up to 26 words of exception frame with FP state and
   25 words saved by the switch) plus room for a few calls. */
#ifndef NR_KERNEL_MIN_STACK
#define NR_KERNEL_MIN_STACK 512
#endif

/* The idle thread's stack in bytes: it only waits for interrupts. */
#ifndef NR_KERNEL_IDLE_STACK
#define NR_KERNEL_IDLE_STACK 512
#endif

/* ---- Return codes ---- */

#define NR_OK         0
#define NR_TIMEOUT   (-1) /* the wait timed out; with NR_NO_WAIT: it would have had to wait */
#define NR_EINVAL    (-2) /* a bad argument (a priority out of range, a stack too small, ...) */
#define NR_EPERM     (-3) /* a blocking call from an interrupt handler or with interrupts masked,
                             or before nr_kernel_start(); unlocking a mutex the caller does not hold */
#define NR_ENOMEM    (-4) /* no free thread slot, or the stack pool is used up */
#define NR_EOVERFLOW (-5) /* a semaphore given at its maximum count */
#define NR_EDEADLK   (-6) /* a non-recursive mutex locked again by its holder */

/* ---- Timeouts, in ticks (board ms) ---- */

#define NR_NO_WAIT 0u
#define NR_FOREVER 0xFFFFFFFFu /* so is any timeout above 0x7FFFFFFE ticks (24 days): the tick
                                  counter's half range is the furthest a wake-up can be told from the past */

/* ---- Kernel ---- */

struct nr_thread;
typedef struct nr_thread nr_thread_t;

/* Starts the kernel: the code calling it (normally main()) goes on as a
   thread of priority main_prio (1..NR_KERNEL_PRIO_MAX) on the stack it
   already runs on, the idle thread is created, and from then on the most
   urgent ready thread runs (threads created before the call start now if
   more urgent than main_prio). Returns NR_OK, NR_EINVAL for a bad priority,
   NR_EPERM if already started. The board must be initialised
   (board_init(): its tick drives the kernel's). */
int nr_kernel_start(unsigned main_prio);

/* 1 once nr_kernel_start() has run, else 0. */
int nr_kernel_started(void);

/* The board's tick calls this once a board ms, from its timer interrupt
   (before nr_kernel_start() it returns at once): counts the tick, ends the
   waits whose timeout expired, runs the tick hook, and turns the round
   robin. */
void nr_kernel_tick(void);

/* Ticks since nr_kernel_start() (wraps after 49 days). */
uint32_t nr_kernel_ticks(void);

/* Context switches since nr_kernel_start(), all threads together. */
uint32_t nr_kernel_switches(void);

/* Board time the idle thread has run since nr_kernel_start(), in board ns:
   the time no thread had work (the board's own board_idle_ns() counts the
   part of it the core slept, plus any sleep of a thread's own). */
uint64_t nr_kernel_idle_ns(void);

/* A function the tick calls in interrupt context after its own work, with
   the tick count (NULL: none). It may use the calls allowed from interrupt
   handlers; for drivers that poll once a ms, and the kernel's tests. */
void nr_kernel_set_tick_hook(void (*hook)(uint32_t ticks));

/* ---- Threads ---- */

/* Creates a thread running entry(arg) at priority prio (1..NR_KERNEL_PRIO_MAX)
   on stack (stack_size bytes, 8-byte aligned by the kernel, at least
   NR_KERNEL_MIN_STACK), or on stack_size bytes from the stack pool when stack
   is NULL. The stack is painted with a pattern, so its high-water mark can be
   read later. A thread more urgent than its creator runs at once. When entry
   returns the thread exits (nr_thread_exit()). name is kept, not copied.
   Returns the thread, or NULL (a bad argument, no free slot, the pool used
   up). From a thread, or before nr_kernel_start(); not from an interrupt
   handler (the stack is painted with interrupts enabled). */
nr_thread_t *nr_thread_create(const char *name, void (*entry)(void *arg), void *arg, unsigned prio,
                              void *stack, size_t stack_size);

/* Ends the calling thread; its slot is free once it has been switched out.
   A mutex it still holds stays locked: release them first. */
void nr_thread_exit(void) __attribute__((noreturn));

/* The calling thread (NULL before nr_kernel_start()). */
nr_thread_t *nr_thread_self(void);

/* Gives the core to the next ready thread of the caller's priority, if any;
   the caller queues behind it. Threads only. */
void nr_thread_yield(void);

/* Blocks the calling thread for at least ms board milliseconds (see the
   timeout rule above); 0 is nr_thread_yield(). NR_OK, or NR_EPERM where the
   caller may not block. */
int nr_sleep_ms(uint32_t ms);

/* The thread's effective priority: its own, or higher while it holds a
   mutex a more urgent thread waits for (priority inheritance). */
unsigned nr_thread_priority(const nr_thread_t *t);

/* Bytes of the thread's stack ever used (the high-water mark): the painted
   pattern is found intact below it. */
size_t nr_thread_stack_used(const nr_thread_t *t);

struct nr_thread_stats {
  const char *name;
  unsigned prio;       /* effective priority now */
  unsigned base_prio;  /* the priority it was created with */
  uint32_t switches;   /* times switched in */
  uint64_t run_ns;     /* board time it has run, in board ns (up to now for the running thread) */
  size_t stack_size;
  size_t stack_used;   /* the high-water mark, as nr_thread_stack_used() */
};

/* The thread in table slot index (0..NR_KERNEL_MAX_THREADS-1), or NULL if
   the slot is free: for listing every thread. */
nr_thread_t *nr_thread_at(unsigned index);

/* The thread's counters. NR_OK, or NR_EINVAL for a free slot. */
int nr_thread_stats(const nr_thread_t *t, struct nr_thread_stats *out);

/* The calling thread's errno: each thread has its own, so a socket call's
   error in one thread is not overwritten by another's before it is read.
   Before nr_kernel_start() and in interrupt handlers one shared variable
   stands in. On newlib the kernel also defines __errno(), through which
   <errno.h>'s errno reads and writes, as this (kernel builds only). */
int *nr_thread_errno(void);

/* ---- Counting semaphores ---- */

struct nr_sem {
  struct nr_thread *waiters; /* most urgent first, FIFO among equals */
  uint32_t count;
  uint32_t max;
};

/* A semaphore holding count units (at most max, at least 1: 1 makes it a
   binary semaphore). Static storage zeroed is not valid: call this once. */
void nr_sem_init(struct nr_sem *s, uint32_t count, uint32_t max);

/* Takes a unit, waiting up to timeout ticks for one. NR_OK, NR_TIMEOUT, or
   NR_EPERM (a wait where the caller may not block). */
int nr_sem_take(struct nr_sem *s, uint32_t timeout);

/* Gives a unit: straight to the most urgent waiter if there is one, else
   into the count. Never blocks: also from an interrupt handler (a thread it
   wakes runs when the handler returns, if more urgent than the interrupted
   one). NR_OK, or NR_EOVERFLOW at the maximum count. */
int nr_sem_give(struct nr_sem *s);

/* ---- Mutexes with priority inheritance ---- */

struct nr_mutex {
  struct nr_thread *owner;
  struct nr_thread *waiters;   /* most urgent first, FIFO among equals */
  struct nr_mutex *next_held;  /* the owner's list of the mutexes it holds */
  uint32_t depth;              /* times locked by the owner (recursive) */
  int recursive;
};

/* An unlocked mutex; recursive: its holder may lock it again (and unlocks as
   often), else that is NR_EDEADLK. */
void nr_mutex_init(struct nr_mutex *m, int recursive);

/* Locks, waiting up to timeout ticks. While a thread waits, the holder runs
   at the waiter's priority if that is higher (and so on along a chain of
   holders waiting for other mutexes); it drops back when it unlocks or the
   waiter gives up. Threads only. NR_OK, NR_TIMEOUT, NR_EDEADLK, NR_EPERM. */
int nr_mutex_lock(struct nr_mutex *m, uint32_t timeout);

/* Unlocks; the most urgent waiter gets the mutex. NR_OK, or NR_EPERM if the
   caller does not hold it. */
int nr_mutex_unlock(struct nr_mutex *m);

/* ---- Message queues ---- */

struct nr_queue {
  uint8_t *buf;               /* capacity * item_size bytes, the caller's */
  size_t item_size;
  uint32_t capacity;
  uint32_t count;
  uint32_t head;              /* the oldest item's index */
  struct nr_thread *senders;   /* waiting for room, most urgent first */
  struct nr_thread *receivers; /* waiting for an item, most urgent first */
};

/* A queue of capacity (>= 1) items of item_size bytes each, kept in buf
   (capacity * item_size bytes). Items are copied in and out with interrupts
   masked: keep them small (a pointer, a few words). */
void nr_queue_init(struct nr_queue *q, void *buf, size_t item_size, uint32_t capacity);

/* Copies item in at the tail, waiting up to timeout ticks for room; a
   waiting receiver gets it directly. NR_OK, NR_TIMEOUT, NR_EPERM. */
int nr_queue_send(struct nr_queue *q, const void *item, uint32_t timeout);

/* nr_queue_send() that never waits: for interrupt handlers (a receiver it
   wakes runs when the handler returns, if more urgent). NR_OK, or
   NR_TIMEOUT when the queue is full. */
int nr_queue_send_isr(struct nr_queue *q, const void *item);

/* Copies the oldest item out to out, waiting up to timeout ticks for one;
   a sender waiting for room then puts its item in. NR_OK, NR_TIMEOUT,
   NR_EPERM. */
int nr_queue_receive(struct nr_queue *q, void *out, uint32_t timeout);

/* Items in the queue now. */
uint32_t nr_queue_count(const struct nr_queue *q);

#endif
