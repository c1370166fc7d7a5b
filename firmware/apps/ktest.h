/*
 * What ktest's units share (ktest.c has the command, its output and the
 * helpers; ktest_threads.c, ktest_sync.c and ktest_costs.c the tests): the
 * state of a ktest run, passed to every test and test thread as a struct
 * ktest, and the helpers that use it. Test-only, like ktest.c.
 */
#ifndef KTEST_H
#define KTEST_H

#include <stddef.h>
#include <stdint.h>

#include "nr_board.h"
#include "nr_kernel.h"

#define MAIN_PRIO   1u
#define WAIT_TICKS  500u  /* the longest any test thread waits for something */
#define STACK_BYTES 2048u
#define NUM_STACKS  4u    /* up to three threads a test, and the launcher */
/* What a measured time may exceed its bound by, in board ns. A thread woken
   by a tick runs well under 1 us after it as far as the kernel goes, but a
   board asleep in WFI is woken by a host timer up to its timer slack (50 us)
   late, which device time divides by D; and a board_time_ns() reading may
   be a subtick (125 us) high (docs/kernel.md, "Two things about the clock"). */
#define SLACK_NS    250000u
#define NS_PER_MS   1000000u

struct ktest;

/* A test thread's body. kt_spawn() runs it and then gives k->done, so a
   body never gives it itself. */
typedef void ktest_fn(struct ktest *k, void *arg);

/* What a test thread is started with (one for each stack of struct ktest). */
struct ktest_thread {
  struct ktest *k;
  ktest_fn *fn;
  void *arg;
};

/* A thread a launcher starts (kt_launch_and_join()). */
struct launch {
  const char *name;
  ktest_fn *fn;
  void *arg;
  unsigned prio;
};

struct ktest {
  uint64_t stacks[NUM_STACKS][STACK_BYTES / 8];
  struct ktest_thread threads[NUM_STACKS];
  struct nr_sem done; /* every test thread gives it as its last act */
  int stuck;          /* a test's thread did not end: it may still use a test stack */
  char why[160];      /* a failed test's reason */
  char note[160];     /* a passed test's detail */
  char trace[32];     /* a record of the order things happened in */
  unsigned trace_len;
  const struct launch *launch_list;
  unsigned launch_count;
  unsigned launch_started;
};

/* Notes why the test failed; returns 0, the test's verdict. */
int kt_fail(struct ktest *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Notes the detail a passing test prints. */
void kt_detail(struct ktest *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Starts a test thread on the stack given, with threads[slot] for its start. */
nr_thread_t *kt_spawn(struct ktest *k, unsigned slot, const char *name, ktest_fn *fn, void *arg, unsigned prio,
                      void *stack, size_t stack_size);
/* Starts a test thread on k->stacks[stack]. */
nr_thread_t *kt_start(struct ktest *k, const char *name, ktest_fn *fn, void *arg, unsigned prio, unsigned stack);
int kt_join(struct ktest *k, unsigned n);
int kt_launch_and_join(struct ktest *k, const struct launch *list, unsigned n);
void kt_trace_reset(struct ktest *k);
void kt_mark(struct ktest *k, char c);
void kt_at_tick(uint32_t *k0, uint64_t *t0);
int kt_check_wait(struct ktest *k, const char *what, uint32_t timeout, uint32_t ticks, uint64_t ns);

/* Inline: the costs measure a loop around board_time_ns() with it. */
static inline uint64_t ns_since(uint64_t t0)
{
  return board_time_ns() - t0;
}

/* The tests, in ktest_threads.c, ktest_sync.c and ktest_costs.c: each
   returns 1 if it passed, or 0 with k->why set. */
int test_start(struct ktest *k);
int test_priority_order(struct ktest *k);
int test_preemption(struct ktest *k);
int test_round_robin(struct ktest *k);
int test_sleep(struct ktest *k);
int test_semaphore(struct ktest *k);
int test_mutex_basic(struct ktest *k);
int test_mutex_inheritance(struct ktest *k);
int test_mutex_timeout(struct ktest *k);
int test_queue(struct ktest *k);
int test_isr_give(struct ktest *k);
int test_stack_watermark(struct ktest *k);
#if defined(__arm__) && defined(__ARM_FP)
int test_fpu_context(struct ktest *k);
#endif
int test_counters(struct ktest *k);
int test_thread_errno(struct ktest *k);
int run_costs(struct ktest *k);

#endif
