/*
 * ktest's tests of threads (see ktest.c): the kernel's start, priorities,
 * preemption, the round robin, sleeping, stacks, the FP context, the
 * run-time counters and each thread's errno.
 */
#include <errno.h>
#include <string.h>

#include "ktest.h"

#define SLICE       NR_KERNEL_TIME_SLICE
#define DEEP_STACK_BYTES 4096u
#define DEEP_LEVELS 6u
#define DEEP_FRAME  256u

static void t_nothing(void *arg)
{
  (void)arg;
}

int test_start(struct ktest *k)
{
  if (!nr_kernel_started()) {
    int rc = nr_kernel_start(MAIN_PRIO);

    if (rc != NR_OK) {
      return kt_fail(k, "nr_kernel_start returned %d", rc);
    }
  }
  if (!nr_kernel_started() || nr_thread_self() == NULL || nr_thread_priority(nr_thread_self()) != MAIN_PRIO) {
    return kt_fail(k, "main is not a thread of priority %u", MAIN_PRIO);
  }
  if (nr_kernel_start(MAIN_PRIO) != NR_EPERM) {
    return kt_fail(k, "a second start was not refused");
  }
  void *stack = k->stacks[0];

  if (nr_thread_create("bad", t_nothing, NULL, 0u, stack, STACK_BYTES) != NULL ||
      nr_thread_create("bad", t_nothing, NULL, NR_KERNEL_PRIO_MAX + 1u, stack, STACK_BYTES) != NULL ||
      nr_thread_create("bad", t_nothing, NULL, 2u, stack, NR_KERNEL_MIN_STACK - 8u) != NULL) {
    return kt_fail(k, "a bad priority or a small stack was accepted");
  }
  kt_detail(k, "main_prio=%u slice_ticks=%u max_threads=%u", MAIN_PRIO, SLICE, NR_KERNEL_MAX_THREADS);
  return 1;
}

static void t_mark(struct ktest *k, void *arg)
{
  kt_mark(k, (char)(uintptr_t)arg);
}

/* Threads made ready together run most urgent first. */
int test_priority_order(struct ktest *k)
{
  static const struct launch list[] = {
    { "p3", t_mark, (void *)'3', 3u },
    { "p5", t_mark, (void *)'5', 5u },
    { "p4", t_mark, (void *)'4', 4u },
  };

  kt_trace_reset(k);
  if (!kt_launch_and_join(k, list, 3)) {
    return 0;
  }
  if (strcmp(k->trace, "543") != 0) {
    return kt_fail(k, "ran in the order %s, not 543", k->trace);
  }
  kt_detail(k, "order=%s", k->trace);
  return 1;
}

static struct nr_sem sem_a;

static void t_take_mark(struct ktest *k, void *arg)
{
  (void)arg;
  if (nr_sem_take(&sem_a, WAIT_TICKS) == NR_OK) {
    kt_mark(k, 'b');
  }
}

static void t_give_mark(struct ktest *k, void *arg)
{
  (void)arg;
  kt_mark(k, 'a');
  nr_sem_give(&sem_a);
  kt_mark(k, 'c');
}

/* A thread that wakes a more urgent one is preempted at once. */
int test_preemption(struct ktest *k)
{
  nr_sem_init(&sem_a, 0, 1);
  kt_trace_reset(k);
  if (kt_start(k, "waiter", t_take_mark, NULL, 6u, 0) == NULL ||
      kt_start(k, "giver", t_give_mark, NULL, 3u, 1) == NULL) {
    return kt_fail(k, "threads not created");
  }
  if (!kt_join(k, 2)) {
    return kt_fail(k, "threads did not end");
  }
  if (strcmp(k->trace, "abc") != 0) {
    return kt_fail(k, "order %s, not abc (the woken thread ran late)", k->trace);
  }
  kt_detail(k, "order=%s", k->trace);
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
static void t_spin(struct ktest *k, void *arg)
{
  int me = (int)(uintptr_t)arg;

  (void)k;
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
}

/* Two busy threads of one priority take turns of SLICE ticks. */
int test_round_robin(struct ktest *k)
{
  static const struct launch list[] = {
    { "rr1", t_spin, (void *)1, 4u },
    { "rr2", t_spin, (void *)2, 4u },
  };
  unsigned turns;

  rr_last = 0;
  rr_turns = 0;
  rr_end = nr_kernel_ticks() + 5u * SLICE + SLICE / 2u;
  if (!kt_launch_and_join(k, list, 2)) {
    return 0;
  }
  turns = rr_turns < RR_TURNS_MAX ? rr_turns : RR_TURNS_MAX;
  if (turns < 5u) {
    return kt_fail(k, "%u turns in %u ticks of two busy threads, slice %u", turns, 5u * SLICE + SLICE / 2u, SLICE);
  }
  for (unsigned i = 1; i < turns; i++) {
    if (rr_who[i] == rr_who[i - 1u]) {
      return kt_fail(k, "turn %u went to the same thread again", i);
    }
  }
  for (unsigned i = 0; i + 2u < turns; i++) { /* the last turn is cut short by the end */
    if (rr_tick[i + 1u] - rr_tick[i] != SLICE) {
      return kt_fail(k, "turn %u lasted %lu ticks, not %u", i, (unsigned long)(rr_tick[i + 1u] - rr_tick[i]), SLICE);
    }
  }
  kt_detail(k, "turns=%u slice_ticks=%u", turns, SLICE);
  return 1;
}

int test_sleep(struct ktest *k)
{
  static const uint32_t ms[] = { 1u, 5u, 20u };
  unsigned long us[3];

  for (unsigned i = 0; i < 3u; i++) {
    uint32_t k0;
    uint64_t t0, ns;

    kt_at_tick(&k0, &t0);
    if (nr_sleep_ms(ms[i]) != NR_OK) {
      return kt_fail(k, "nr_sleep_ms refused");
    }
    ns = ns_since(t0);
    if (!kt_check_wait(k, "nr_sleep_ms", ms[i], nr_kernel_ticks() - k0, ns)) {
      return 0;
    }
    us[i] = (unsigned long)(ns / 1000u);
  }
  kt_detail(k, "slept_us=%lu,%lu,%lu for 1,5,20 ms", us[0], us[1], us[2]);
  return 1;
}
static uint64_t deep_stack[DEEP_STACK_BYTES / 8];
static volatile size_t deep_before, deep_after;

__attribute__((noinline)) static uint32_t deep(unsigned levels)
{
  volatile uint8_t frame[DEEP_FRAME];

  for (unsigned i = 0; i < DEEP_FRAME; i++) {
    frame[i] = (uint8_t)(levels + i);
  }
  return levels == 0u ? frame[0] : deep(levels - 1u) + frame[levels]; /* not a tail call */
}

static void t_deep(struct ktest *k, void *arg)
{
  (void)k;
  (void)arg;
  deep_before = nr_thread_stack_used(nr_thread_self());
  (void)deep(DEEP_LEVELS);
  deep_after = nr_thread_stack_used(nr_thread_self());
}

static volatile size_t pool_stack_size;

static void t_pool(struct ktest *k, void *arg)
{
  struct nr_thread_stats s;

  (void)k;
  (void)arg;
  pool_stack_size = nr_thread_stats(nr_thread_self(), &s) == NR_OK ? s.stack_size : 0u;
}

int test_stack_watermark(struct ktest *k)
{
  static int pool_tested; /* the pool never takes a stack back: once per boot */
  size_t main_used = nr_thread_stack_used(nr_thread_self());

  /* slot 0: the stack_watermark test's threads run one at a time */
  if (kt_spawn(k, 0, "deep", t_deep, NULL, 3u, deep_stack, sizeof(deep_stack)) == NULL || !kt_join(k, 1)) {
    return kt_fail(k, "thread not run");
  }
  if (deep_before == 0u || deep_after < deep_before + DEEP_LEVELS * DEEP_FRAME || deep_after >= sizeof(deep_stack)) {
    return kt_fail(k, "high-water mark %u bytes before %u calls of %u-byte frames, %u after (stack %u)",
                      (unsigned)deep_before, DEEP_LEVELS, DEEP_FRAME, (unsigned)deep_after,
                      (unsigned)sizeof(deep_stack));
  }
  if (main_used == 0u) {
    return kt_fail(k, "main's stack shows no use");
  }
  if (!pool_tested) {
    pool_tested = 1;
    if (kt_spawn(k, 0, "pool", t_pool, NULL, 3u, NULL, 1024u) == NULL || !kt_join(k, 1) ||
        pool_stack_size != 1024u) {
      return kt_fail(k, "a stack from the pool: %u bytes", (unsigned)pool_stack_size);
    }
  }
  kt_detail(k, "before=%u after=%u main=%u", (unsigned)deep_before, (unsigned)deep_after, (unsigned)main_used);
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

static void t_fp(struct ktest *k, void *arg)
{
  unsigned me = (unsigned)(uintptr_t)arg;
  uint32_t in[32], out[32];
  struct nr_thread_stats s;

  (void)k;
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
}

/* Two threads of one priority keep values in every FP register while the
   round robin switches between them: each must find its own values. */
int test_fpu_context(struct ktest *k)
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
  if (!kt_launch_and_join(k, list, FP_THREADS)) {
    return 0;
  }
  for (unsigned i = 1; i <= FP_THREADS; i++) {
    if (fp_errors[i] != 0u) {
      return kt_fail(k, "thread %u found %lu FP registers changed in %lu rounds", i, (unsigned long)fp_errors[i],
                        (unsigned long)fp_rounds[i]);
    }
    if (fp_switches[i] < 2u) {
      return kt_fail(k, "thread %u was switched in %lu times: the test did not switch", i,
                        (unsigned long)fp_switches[i]);
    }
  }
  kt_detail(k, "rounds=%lu,%lu switches=%lu,%lu", (unsigned long)fp_rounds[1], (unsigned long)fp_rounds[2],
               (unsigned long)fp_switches[1], (unsigned long)fp_switches[2]);
  return 1;
}
#endif

static struct nr_sem hold;

static void t_busy(struct ktest *k, void *arg)
{
  uint64_t t0 = board_time_ns();

  (void)k;
  (void)arg;
  while (ns_since(t0) < 5u * NS_PER_MS) {
  }
  (void)nr_sem_take(&hold, WAIT_TICKS);
}

/* A thread's run time and switch count, the idle thread's time. */
int test_counters(struct ktest *k)
{
  struct nr_thread_stats s;
  nr_thread_t *busy;
  uint32_t switches0 = nr_kernel_switches();
  uint64_t idle0, idle;

  nr_sem_init(&hold, 0, 1);
  busy = kt_start(k, "busy", t_busy, NULL, 3u, 0); /* runs its 5 ms at once, then waits */
  if (busy == NULL || nr_thread_stats(busy, &s) != NR_OK) {
    return kt_fail(k, "thread not created");
  }
  idle0 = nr_kernel_idle_ns();
  nr_sleep_ms(10);
  idle = nr_kernel_idle_ns() - idle0;
  nr_sem_give(&hold);
  if (!kt_join(k, 1)) {
    return kt_fail(k, "thread did not end");
  }
  if (s.run_ns < 5u * NS_PER_MS || s.run_ns > 5u * NS_PER_MS + SLACK_NS || s.switches != 1u) {
    return kt_fail(k, "a thread that ran 5 ms: run_ns=%llu switches=%lu", (unsigned long long)s.run_ns,
                      (unsigned long)s.switches);
  }
  if (idle < 9u * NS_PER_MS || idle > 11u * NS_PER_MS + SLACK_NS) {
    return kt_fail(k, "idle %llu ns while main slept 10 ms", (unsigned long long)idle);
  }
  if (nr_kernel_switches() - switches0 < 4u) {
    return kt_fail(k, "%lu switches counted", (unsigned long)(nr_kernel_switches() - switches0));
  }
  kt_detail(k, "busy_run_us=%lu idle_us=%lu", (unsigned long)(s.run_ns / 1000u), (unsigned long)(idle / 1000u));
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
static void t_errno(struct ktest *k, void *arg)
{
  unsigned me = (unsigned)(uintptr_t)arg;
  struct nr_thread_stats s;

  (void)k;
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
}

/* Two threads of one priority and an interrupt handler each keep their own
   errno across switches; main's is untouched by all three. */
int test_thread_errno(struct ktest *k)
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
  if (!kt_launch_and_join(k, list, 2)) {
    nr_kernel_set_tick_hook(NULL);
    return 0;
  }
  nr_kernel_set_tick_hook(NULL);
#if defined(__NEWLIB__)
  if (&errno != nr_thread_errno()) {
    return kt_fail(k, "errno is not the thread's own (newlib's __errno() is not the kernel's)");
  }
#endif
  if (THREAD_ERRNO != main_errno) {
    return kt_fail(k, "main's errno changed from %d to %d", main_errno, THREAD_ERRNO);
  }
  if (errno_wrong[1] != 0u || errno_wrong[2] != 0u) {
    return kt_fail(k, "a thread found another's errno: %u and %u times", errno_wrong[1], errno_wrong[2]);
  }
  if (errno_where[1] == errno_where[2] || errno_where[1] == &THREAD_ERRNO || errno_where[2] == &THREAD_ERRNO ||
      errno_where[1] == NULL) {
    return kt_fail(k, "the threads' errno are not three places");
  }
  if (errno_isr_writes == 0 || errno_isr_where == errno_where[1] || errno_isr_where == errno_where[2] ||
      errno_isr_where == &THREAD_ERRNO) {
    return kt_fail(k, "the interrupt's errno (%d writes) is a thread's", errno_isr_writes);
  }
  if (errno_switches[1] < 2u * ERRNO_ROUNDS || errno_switches[2] < 2u * ERRNO_ROUNDS) {
    return kt_fail(k, "switched in %u and %u times: the threads did not take turns", errno_switches[1],
                      errno_switches[2]);
  }
  kt_detail(k, "switches=%u,%u isr_writes=%d", errno_switches[1], errno_switches[2], errno_isr_writes);
  return 1;
}
