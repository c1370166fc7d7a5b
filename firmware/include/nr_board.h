/*
 * Board interface: what the apps, the lwIP port and the NIC drivers may use
 * from a board. Each boards/<name>/ folder implements it, and also provides:
 *  - board.mk setting CPU_FLAGS, BOARD_SRCS and BOARD_LDSCRIPT,
 *  - a vector table that sends NIC_IRQ (board_config.h) to nic_irq_handler(),
 *  - a linker script that INCLUDEs memory.ld and places the NOLOAD section
 *    .bulk (lwIP's heap and pools, see port/arch/cc.h) in a large region.
 */
#ifndef NR_BOARD_H
#define NR_BOARD_H

#include <stddef.h>
#include <stdint.h>

/* Clocks, console UART, 1 ms tick, interrupts on. Called first from main(). */
void board_init(void);

/* Milliseconds since board_init(), from the 1 ms SysTick. */
uint32_t board_ms(void);

/* Blocking console output, sent as is (lines end in '\n'). */
void board_console_write(const char *buf, size_t len);

/* Next received console character, or -1 when none is buffered. */
int board_console_getc(void);
int board_console_rx_pending(void);

/* Interrupt controller helpers for drivers (irq is the external IRQ number). */
void board_irq_enable(unsigned irq);

/* PRIMASK based critical sections; they nest. */
uint32_t board_irq_save(void);
void board_irq_restore(uint32_t state);

/* Sleep until an interrupt is pending. Call with interrupts masked by
   board_irq_save() after checking for work, so no wake-up is lost. */
void board_wait_for_interrupt(void);

#endif
