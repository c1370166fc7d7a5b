/*
 * Board glue common to the Cortex-M boards: 1 ms SysTick, interrupt helpers,
 * idle. CPU_HZ (board_config.h) is the clock SysTick counts with CLKSOURCE=1.
 */
#include "nr_board.h"
#include "board_defs.h"
#include "cortex-m/regs.h"

void console_init(void);

static volatile uint32_t ticks_ms;

void systick_handler(void)
{
  ticks_ms++;
}

uint32_t board_ms(void)
{
  return ticks_ms;
}

static void systick_init(void)
{
  SYST_RVR = CPU_HZ / 1000u - 1u;
  SYST_CVR = 0;
  SYST_CSR = SYST_CSR_ENABLE | SYST_CSR_TICKINT | SYST_CSR_CLKSOURCE;
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
  /* WFI wakes on a pending interrupt even while PRIMASK masks it. */
  __asm volatile("dsb\n\twfi" ::: "memory");
}
