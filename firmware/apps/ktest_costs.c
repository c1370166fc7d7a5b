/*
 * ktest's costs (see ktest.c): a context switch, a semaphore and a queue
 * round trip and a board clock read, in board ns and the modelled core's
 * cycles, printed as the KCOST line.
 */
#include <stdarg.h>

#include "nr_printf.h"
#include "ktest.h"

#define COST_ROUNDS 1000u
#define COST_BATCHES 5u
#define SPIN_ITERATIONS 200000u

static struct nr_sem ping, pong;
static struct nr_queue qa, qb;
static uint32_t qa_buf[1], qb_buf[1];
static uint64_t cost_t0, cost_t1;
static uint32_t cost_sw0, cost_sw1;
static volatile unsigned cost_rounds;

static void t_yielder(struct ktest *k, void *arg)
{
  (void)k;
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
}

static void t_sem_server(struct ktest *k, void *arg)
{
  (void)k;
  (void)arg;
  for (unsigned i = 0; i < COST_ROUNDS; i++) {
    if (nr_sem_take(&ping, WAIT_TICKS) != NR_OK) {
      break;
    }
    nr_sem_give(&pong);
  }
}

static void t_sem_client(struct ktest *k, void *arg)
{
  unsigned n = 0;

  (void)k;
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
}

static void t_queue_server(struct ktest *k, void *arg)
{
  uint32_t v;

  (void)k;
  (void)arg;
  for (unsigned i = 0; i < COST_ROUNDS; i++) {
    if (nr_queue_receive(&qa, &v, WAIT_TICKS) != NR_OK) {
      break;
    }
    v++;
    nr_queue_send(&qb, &v, WAIT_TICKS);
  }
}

static void t_queue_client(struct ktest *k, void *arg)
{
  unsigned n = 0;
  uint32_t v;

  (void)k;
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

int run_costs(struct ktest *k)
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
    if (!kt_launch_and_join(k, yielders, 2)) {
      return 0;
    }
    switches = cost_sw1 - cost_sw0;
    if (switches < 2u * COST_ROUNDS) {
      return kt_fail(k, "%u switches in %u yields of each of two threads", switches, COST_ROUNDS);
    }
    switch_ps[b] = (cost_t1 - cost_t0) * 1000u / switches;

    nr_sem_init(&ping, 0, 1);
    nr_sem_init(&pong, 0, 1);
    if (!kt_launch_and_join(k, sem_pair, 2)) {
      return 0;
    }
    if (cost_rounds != COST_ROUNDS) {
      return kt_fail(k, "%u semaphore round trips of %u", cost_rounds, COST_ROUNDS);
    }
    sem_ps[b] = (cost_t1 - cost_t0) * 1000u / COST_ROUNDS;

    nr_queue_init(&qa, qa_buf, sizeof(uint32_t), 1);
    nr_queue_init(&qb, qb_buf, sizeof(uint32_t), 1);
    if (!kt_launch_and_join(k, queue_pair, 2)) {
      return 0;
    }
    if (cost_rounds != COST_ROUNDS) {
      return kt_fail(k, "%u queue round trips of %u", cost_rounds, COST_ROUNDS);
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
