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

/* Milliseconds of the board's time since board_init(), from its 1 ms tick
   (SysTick, the PIT, Timer0), stretched by the tick dilation below. */
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
   board_irq_save() after checking for work, so no wake-up is lost. The board
   adds the time it slept to board_idle_ns(). */
void board_wait_for_interrupt(void);

/* Device time. The emulator executes fewer instructions per second of its
   own clock than the real part does (QEMU's -icount), so the harness tells
   the board the dilation D (the shell's "tick" command) and the board
   stretches its millisecond to D ms of the emulated clock, i.e. of its tick
   timer's input clock: the tick, sys_now(), every timeout and the apps'
   timed runs then follow the modelled core. dilation_milli is D * 1000;
   1000 (real time) is the setting at boot. */
struct board_tick {
  uint32_t dilation_milli; /* one board ms lasts dilation_milli/1000 ms of the timer's clock */
  uint32_t period;         /* the tick timer's period, in counts of its input clock */
  uint32_t input_hz;       /* the tick timer's input clock */
  uint32_t min_milli;      /* the dilations board_set_tick_dilation() accepts */
  uint32_t max_milli;
};

#define BOARD_TICK_OK     0
#define BOARD_TICK_RANGE  (-1) /* outside min_milli..max_milli (the timer cannot hold it) */
#define BOARD_TICK_PACED  (-2) /* the board's host paces its clock: only 1000 is accepted */

/* Smallest dilation any board accepts: a tick shorter than a tenth of a real
   millisecond would leave the core little but the tick interrupt to run. */
#define BOARD_TICK_MIN_MILLI 100u

/* Sets the dilation; BOARD_TICK_OK or an error above, the tick unchanged. The
   board's time stays continuous across the change (the new period starts at
   a tick boundary). Call from the main loop with interrupts enabled. */
int board_set_tick_dilation(uint32_t milli);
void board_get_tick(struct board_tick *out);

/* The board's clock port (device time, the link following the board). Once
   on, every tick sends the low byte of its count on a serial port of the
   emulator (CLOCK_PORT_BASE, from the platform's [clock_port]), so the link
   can keep its delays, rates and timestamps on the board's clock even when
   the emulator falls behind wall time / D. BOARD_TICK_OK, or
   BOARD_TICK_PACED where the board has no clock port (its host paces it). */
int board_clock_port(int on);

/* The board's time since board_init() in nanoseconds of the board's time (a
   board ms is 1e6 of them whatever the dilation), finer than the tick: the
   tick count plus the tick timer's current count. Never goes backwards. */
uint64_t board_time_ns(void);

/* Board time spent asleep in board_wait_for_interrupt() since board_init(),
   in the same nanoseconds: the board's CPU load is 1 - idle/elapsed. */
uint64_t board_idle_ns(void);

/* "spin": a loop of a known instruction sequence, for checking the emulated
   core's speed. Returns the CPU cycles it took where the board can count
   them, else 0. board_spin_instructions() is the number of instructions one
   iteration executes (0 where the loop is plain C and the count unknown). */
uint32_t board_spin(uint32_t iterations, int irqs_off);
uint32_t board_spin_instructions(void);

#endif
