/*
 * Board glue common to the Cortex-M boards: the 1 ms SysTick (stretched by
 * the tick dilation), the board's fine clock and CPU load, interrupt helpers,
 * idle, and the known instruction loop. CPU_HZ (board_config.h) is the clock
 * SysTick counts with CLKSOURCE=1 (QEMU's modelled SYSCLK, in its virtual
 * time).
 */
#include "nr_board.h"
#include "nr_board_tick.h"
#include "board_defs.h"
#include "cortex-m/regs.h"
#if NR_KERNEL
#include "nr_kernel.h"
#endif

void console_init(void);

#define NS_PER_MS 1000000u

static struct nr_tick tick;

/* The timer interrupts BOARD_CLOCK_SUBTICKS times a board ms (so the clock
   port resolves an eighth of a ms); its period in SysTick counts (RVR + 1),
   and the nanoseconds one count lasts as 32.32 fixed point, so
   board_time_ns() converts the current count with a multiply, not a 64-bit
   division on every idle wait. Changed only with interrupts masked, at a
   tick boundary. */
#define NS_PER_SUBTICK (NS_PER_MS / BOARD_CLOCK_SUBTICKS)
static uint32_t tick_period;
static uint64_t tick_ns_q32;
static uint32_t tick_milli;
static uint64_t last_ns;  /* board_time_ns() never returns less than this */
static uint64_t idle_ns;

void systick_handler(void)
{
  nr_tick_advance(&tick);
#if NR_KERNEL
  /* The kernel's tick (firmware/kernel): once a board ms, so its sleeps and
     timeouts follow the board's time. Built only with the kernel. */
  if (tick.subtick == 0u) {
    nr_kernel_tick();
  }
#endif
}

int board_clock_port(int on)
{
  return nr_tick_clock_port(&tick, on);
}

uint32_t board_ms(void)
{
  return tick.ms;
}

static void tick_set_period(uint32_t period, uint32_t milli)
{
  tick_period = period;
  tick_ns_q32 = ((uint64_t)NS_PER_SUBTICK << 32) / period;
  tick_milli = milli;
}

/* The timer's period for a dilation: one board ms lasts milli/1000 ms of
   its input clock, in BOARD_CLOCK_SUBTICKS interrupts. */
static uint32_t tick_period_for(uint32_t milli)
{
  return (uint32_t)(((uint64_t)CPU_HZ * milli + 500000u * BOARD_CLOCK_SUBTICKS) /
                    (1000000u * BOARD_CLOCK_SUBTICKS));
}

static void systick_init(void)
{
  tick_set_period(tick_period_for(1000u), 1000u);
  SYST_RVR = tick_period - 1u;
  SYST_CVR = 0;
  SYST_CSR = SYST_CSR_ENABLE | SYST_CSR_TICKINT | SYST_CSR_CLKSOURCE;
}

/* The largest dilation whose period fits SysTick's 24-bit reload. */
static uint32_t tick_max_milli(void)
{
  return (uint32_t)(((uint64_t)SYST_RVR_MAX + 1u) * 1000000u * BOARD_CLOCK_SUBTICKS / CPU_HZ);
}

void board_get_tick(struct board_tick *out)
{
  out->dilation_milli = tick_milli;
  out->period = tick_period;
  out->input_hz = CPU_HZ;
  out->min_milli = BOARD_TICK_MIN_MILLI;
  out->max_milli = tick_max_milli();
}

int board_set_tick_dilation(uint32_t milli)
{
  uint32_t period, t, irq;

  if (milli < BOARD_TICK_MIN_MILLI || milli > tick_max_milli()) {
    return BOARD_TICK_RANGE;
  }
  period = tick_period_for(milli);
  /* Switch just after a tick, so the tick in progress is not cut short (the
     board's ms and fine clock stay continuous to within the handler's
     latency). Writing CVR clears the count; SysTick reloads from the new RVR
     on the next clock edge without raising the exception. */
  t = tick.subtick;
  while (tick.subtick == t) {
  }
  irq = board_irq_save();
  SYST_RVR = period - 1u;
  SYST_CVR = 0;
  tick_set_period(period, milli);
  while (SYST_CVR == 0u) {
    /* the reload: until then the count would read as a whole period gone */
  }
  board_irq_restore(irq);
  return BOARD_TICK_OK;
}

/* With interrupts masked the SysTick handler cannot run, so a wrap since the
   last tick shows as the pending exception (ICSR.PENDSTSET) instead of in
   the tick counters. The count is read again when the wrap is seen, because
   it may have happened between the two reads; either way the count read last
   belongs to the tick the pending flag says.
   The tick happens as the count reaches 0 (the exception pends then; the
   reload comes one count later), so a count of 0 is the new tick's start and
   a count c > 0 lies period - c counts into it. (Reading 0 as a whole period
   gone put the clock one subtick ahead for a moment, then held it there.) */
uint64_t board_time_ns(void)
{
  uint32_t irq = board_irq_save();
  uint64_t ticks = nr_tick_count(&tick);
  uint32_t count = SYST_CVR;
  uint32_t elapsed;
  uint64_t ns;

  if (SCB_ICSR & ICSR_PENDSTSET) {
    count = SYST_CVR;
    ticks++;
  }
  elapsed = count == 0u ? 0u : tick_period - count;
  ns = ticks * NS_PER_SUBTICK + (((uint64_t)elapsed * tick_ns_q32) >> 32);
  if (ns < last_ns) {
    ns = last_ns;
  }
  last_ns = ns;
  board_irq_restore(irq);
  return ns;
}

uint64_t board_idle_ns(void)
{
  uint32_t irq = board_irq_save();
  uint64_t ns = idle_ns;

  board_irq_restore(irq);
  return ns;
}

void board_init(void)
{
  console_init();
  systick_init();
  __asm volatile("cpsie i" ::: "memory");
}

void board_irq_enable(unsigned irq)
{
  nvic_enable_irq(irq);
}

uint32_t board_irq_save(void)
{
  uint32_t primask;

  __asm volatile("mrs %0, primask\n\tcpsid i" : "=r"(primask) : : "memory");
  return primask;
}

void board_irq_restore(uint32_t state)
{
  __asm volatile("msr primask, %0" : : "r"(state) : "memory");
}

void board_wait_for_interrupt(void)
{
  /* WFI wakes on a pending interrupt even while PRIMASK masks it, and the
     handler runs only once the caller unmasks: the two clock reads bracket
     the sleep alone. */
  uint64_t t0 = board_time_ns();

  __asm volatile("dsb\n\twfi" ::: "memory");
  idle_ns += board_time_ns() - t0;
}

/* Two instructions an iteration (subs, and bne taken; the last not taken),
   so under QEMU's -icount N iterations take 2N instructions of the modelled
   core's time. */
uint32_t board_spin(uint32_t iterations, int irqs_off)
{
  uint32_t state = irqs_off ? board_irq_save() : 0;

  if (iterations > 0u) {
    __asm volatile("1: subs %0, %0, #1\n\t"
                   "bne 1b"
                   : "+r"(iterations)
                   :
                   : "cc");
  }
  if (irqs_off) {
    board_irq_restore(state);
  }
  return 0;
}

uint32_t board_spin_instructions(void)
{
  return 2;
}
