/*
 * ktest: the kernel's tests and costs, run on the board (firmware/kernel,
 * docs/kernel.md). Test-only: built when the firmware is built with
 * `--set NR_TEST_KERNEL=1` (the Makefile then adds this app, the units of
 * its tests, ktest_threads.c, ktest_sync.c and ktest_costs.c, and the
 * kernel), for tests/test_kernel.py and benchmarks/kernel_bench.py; no real
 * build has it.
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
#include <stdarg.h>

#include "nr_printf.h"
#include "apps.h"
#include "ktest.h"

#define LAUNCH_PRIO NR_KERNEL_PRIO_MAX /* starts a test's threads before any of them runs */
#define LAUNCHER_STACK (NUM_STACKS - 1u)
#define JOIN_TICKS  3000u /* every test's threads end well within this; their own waits are shorter */

/* ---- Helpers ---- */

int kt_fail(struct ktest *k, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  nr_vsnprintf(k->why, sizeof(k->why), fmt, ap);
  va_end(ap);
  return 0;
}

void kt_detail(struct ktest *k, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  nr_vsnprintf(k->note, sizeof(k->note), fmt, ap);
  va_end(ap);
}

/* Every test thread starts here, so that giving done as its last act is
   written once. */
static void kt_thread_main(void *arg)
{
  struct ktest_thread *t = arg;

  t->fn(t->k, t->arg);
  nr_sem_give(&t->k->done);
}

nr_thread_t *kt_spawn(struct ktest *k, unsigned slot, const char *name, ktest_fn *fn, void *arg, unsigned prio,
                      void *stack, size_t stack_size)
{
  struct ktest_thread *t = &k->threads[slot];

  t->k = k;
  t->fn = fn;
  t->arg = arg;
  return nr_thread_create(name, kt_thread_main, t, prio, stack, stack_size);
}

nr_thread_t *kt_start(struct ktest *k, const char *name, ktest_fn *fn, void *arg, unsigned prio, unsigned stack)
{
  return kt_spawn(k, stack, name, fn, arg, prio, k->stacks[stack], sizeof(k->stacks[stack]));
}

/* Waits for n test threads to finish. 0 if one did not within JOIN_TICKS:
   it may still use its stack, so no later test may run. */
int kt_join(struct ktest *k, unsigned n)
{
  for (unsigned i = 0; i < n; i++) {
    if (nr_sem_take(&k->done, JOIN_TICKS) != NR_OK) {
      k->stuck = 1;
      return 0;
    }
  }
  return 1;
}

void kt_trace_reset(struct ktest *k)
{
  k->trace_len = 0;
  k->trace[0] = '\0';
}

void kt_mark(struct ktest *k, char c)
{
  uint32_t irq = board_irq_save();

  if (k->trace_len < sizeof(k->trace) - 1u) {
    k->trace[k->trace_len++] = c;
    k->trace[k->trace_len] = '\0';
  }
  board_irq_restore(irq);
}

/* A launcher of the most urgent priority creates a test's threads, so none
   of them runs before all exist; they start when it exits. */
static void t_launcher(struct ktest *k, void *arg)
{
  (void)arg;
  k->launch_started = 0;
  for (unsigned i = 0; i < k->launch_count; i++) {
    const struct launch *l = &k->launch_list[i];

    if (kt_start(k, l->name, l->fn, l->arg, l->prio, i) != NULL) {
      k->launch_started++;
    }
  }
}

/* Launches the threads and waits for them all. */
int kt_launch_and_join(struct ktest *k, const struct launch *list, unsigned n)
{
  k->launch_list = list;
  k->launch_count = n;
  if (kt_start(k, "launcher", t_launcher, NULL, LAUNCH_PRIO, LAUNCHER_STACK) == NULL) {
    return kt_fail(k, "the launcher was not created");
  }
  if (!kt_join(k, 1)) {
    return kt_fail(k, "the launcher did not end");
  }
  if (k->launch_started != n) {
    kt_join(k, k->launch_started);
    return kt_fail(k, "%u of %u threads created", k->launch_started, n);
  }
  return kt_join(k, n) ? 1 : kt_fail(k, "threads did not end within %u ticks", JOIN_TICKS);
}

/* Waits for the next tick and notes the tick count and the board time, so
   a wait measured from here cannot start across a tick boundary (reading
   the count and calling the wait are a few instructions apart). */
void kt_at_tick(uint32_t *k0, uint64_t *t0)
{
  nr_sleep_ms(1);
  *k0 = nr_kernel_ticks();
  *t0 = board_time_ns();
}

/* Checks one timed wait: it ended after the right number of ticks (the
   timeout + 1, the call being part way through a tick) and lasted between
   timeout and timeout + 1 board ms. */
int kt_check_wait(struct ktest *k, const char *what, uint32_t timeout, uint32_t ticks, uint64_t ns)
{
  if (ticks != timeout + 1u) {
    return kt_fail(k, "%s(%lu) ended after %lu ticks, not %lu", what, (unsigned long)timeout, (unsigned long)ticks,
                   (unsigned long)(timeout + 1u));
  }
  if (ns < (uint64_t)timeout * NS_PER_MS || ns > (uint64_t)(timeout + 1u) * NS_PER_MS + SLACK_NS) {
    return kt_fail(k, "%s(%lu) lasted %llu ns of board time", what, (unsigned long)timeout, (unsigned long long)ns);
  }
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

struct ktest_case {
  const char *name;
  int (*run)(struct ktest *k);
};

static const struct ktest_case tests[] = {
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
  static struct ktest k; /* its stuck flag outlives a run: a stuck thread may still use a test stack */
  unsigned passed = 0, failed = 0, i;

  (void)argc;
  (void)argv;
  if (k.stuck) {
    nr_printf("ERROR: a thread of the last ktest never ended; reboot to test again\n");
    return;
  }
  nr_sem_init(&k.done, 0, NR_KERNEL_MAX_THREADS);
  for (i = 0; i < NUM_TESTS; i++) {
    k.why[0] = k.note[0] = '\0';
    if (tests[i].run(&k)) {
      passed++;
      nr_printf("KTEST %s pass%s%s\n", tests[i].name, k.note[0] ? " " : "", k.note);
      continue;
    }
    failed++;
    nr_printf("KTEST %s FAIL %s\n", tests[i].name, k.why);
    if (!nr_kernel_started() || k.stuck) {
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
