/*
 * What kernel.c and an architecture's port (arch/<arch>/kernel_port.c) share:
 * the thread record, the functions the port provides, and the one the
 * port's context switch calls. Not for apps: they use nr_kernel.h.
 */
#ifndef NR_KERNEL_PORT_H
#define NR_KERNEL_PORT_H

#include <stddef.h>
#include <stdint.h>

#include "nr_kernel.h"

enum nr_thread_state {
  NR_THREAD_FREE = 0, /* the slot is unused */
  NR_THREAD_READY,    /* on the ready list (the running thread is too) */
  NR_THREAD_WAITING,  /* on a wait list and/or until a tick (sleep, timeout) */
  NR_THREAD_EXITED,   /* ended; the slot is freed once it is switched out */
};

struct nr_thread {
  void *sp;                     /* saved stack pointer while switched out: the port's switch reads and writes it */
  struct nr_thread *next;       /* the next on the ready list or on the wait list it is on */
  struct nr_thread **wait_list; /* the wait list it is on, or NULL */
  struct nr_mutex *wait_mutex;  /* the mutex it waits for (priority inheritance), or NULL */
  struct nr_mutex *held;        /* the mutexes it holds, linked through next_held */
  void *wait_data;              /* a queue wait: the item to send, or where to receive */
  uint32_t wake_tick;           /* a timed wait ends at this tick */
  int timed;                    /* the wait has a timeout */
  int wait_result;              /* how the wait ended: NR_OK or NR_TIMEOUT */
  uint8_t state;                /* enum nr_thread_state */
  uint8_t prio;                 /* effective priority (inheritance included) */
  uint8_t base_prio;            /* its own priority */
  uint8_t slice;                /* ticks run in its current round-robin turn */
  void (*entry)(void *arg);
  void *arg;
  const char *name;
  uint8_t *stack_lo;            /* lowest byte of its stack (stacks grow down) */
  size_t stack_size;
  uint32_t switches;            /* times switched in */
  uint64_t run_ns;              /* board time run up to its last switch out */
  int errno_value;              /* its own errno (nr_thread_errno()) */
};

/* ---- Provided by the port ---- */

/* Lays out the thread's first context at the top of its stack, so the
   first switch to it enters trampoline(t) in thread mode with interrupts
   enabled. Returns the stack pointer to store in t->sp. */
void *nr_port_stack_init(struct nr_thread *t, void (*trampoline)(struct nr_thread *t));

/* Turns the running code (main()) into the thread main_thread: it goes on
   on its own stack as a thread, interrupts get a stack of their own, and
   the switch is armed. Sets main_thread->stack_lo and stack_size to the
   bounds of the stack it runs on. Called once, with interrupts enabled. */
void nr_port_start(struct nr_thread *main_thread);

/* Asks for a context switch: it happens as soon as interrupts are enabled
   and no interrupt handler runs (at once from a thread with interrupts on,
   on return from the handler, or when a critical section ends). */
void nr_port_request_switch(void);

/* Switches away from the running thread, which has just stopped being
   ready (it waits, or it exited), and ends the critical section irq came
   from (board_irq_save()'s state, interrupts enabled in it). Returns only
   once the thread has been switched in again, never before the switch. */
void nr_port_block(uint32_t irq);

/* 1 in an interrupt handler, else 0. */
int nr_port_in_isr(void);

/* 1 where a thread may block: not in an interrupt handler, interrupts not
   masked. */
int nr_port_can_block(void);

/* ---- Provided by the kernel, called by the port's switch ---- */

/* With interrupts masked: stores sp as the outgoing thread's saved stack
   pointer, makes the most urgent ready thread the running one and returns
   it (its sp is what to resume). */
struct nr_thread *nr_kernel_switch(void *sp);

#endif
