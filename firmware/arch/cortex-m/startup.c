/*
 * Vector table and reset handler for the Cortex-M boards (mps3-an547: M55,
 * Secure state, SAU off; mps2-an500: M7). QEMU's -kernel loads the ELF at its
 * physical (load) addresses, so .data arrives in CODE and is copied to DATA
 * here. BOARD_NUM_IRQS comes from the board's board_defs.h.
 */
#include <stdint.h>
#include <string.h>

#include "board_defs.h"
#include "cortex-m/regs.h"

extern uint32_t __stack_top[], __stack_limit[];
extern uint32_t __data_load[], __data_start[], __data_end[];
extern uint32_t __bss_start[], __bss_end[];

int main(void);
void reset_handler(void);
void fault_entry(void);
void systick_handler(void);
void console_uart_handler(void);
void nic_irq_handler(void); /* the NIC driver's (nr_nic.h, kept free of lwIP here) */
void nr_port_pendsv_handler(void); /* the kernel's context switch (kernel_port.c) */

typedef void (*vector_t)(void);

#define NUM_VECTORS (16u + BOARD_NUM_IRQS)

/* Every vector not named below is unexpected and goes to the fault dump.
   The range initialiser is deliberately overridden by the named entries. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
__attribute__((section(".vectors"), used))
const vector_t vector_table[NUM_VECTORS] = {
  [0] = (vector_t)__stack_top,
  [1] = reset_handler,
  [2 ... NUM_VECTORS - 1] = fault_entry,
#if NR_KERNEL
  [14] = nr_port_pendsv_handler, /* only in a firmware built with the kernel */
#endif
  [15] = systick_handler,
  [16 + CONSOLE_UART_IRQ] = console_uart_handler,
  [16 + NIC_IRQ] = nic_irq_handler,
};
#pragma GCC diagnostic pop

void reset_handler(void)
{
  /* The FPU (and on the M55 MVE, which shares CP10/CP11) must be on before
     any compiler-generated FP/MVE code runs (the copy loops below may be
     vectorised). */
  SCB_CPACR |= CPACR_CP10_CP11_FULL;
  barrier_dsb_isb();

#if defined(__ARM_ARCH_8M_MAIN__)
  /* A stack overflow then faults (STKOF) instead of corrupting .bss.
     Armv7-M (the M7) has no MSPLIM: its linker script puts the stack at the
     bottom of DATA instead, so an overflow leaves RAM rather than running
     into .bss. */
  __asm volatile("msr msplim, %0" : : "r"(__stack_limit));
#endif

  memcpy(__data_start, __data_load, (size_t)((char *)__data_end - (char *)__data_start));
  memset(__bss_start, 0, (size_t)((char *)__bss_end - (char *)__bss_start));

  SCB_VTOR = (uint32_t)vector_table;
  barrier_dsb_isb();

  main();
  for (;;) {
  }
}
