/*
 * Facts about QEMU's mps2-an500 that the harness's board_config.h does not
 * carry (QEMU 7.2 hw/arm/mps2.c). board_config.h may define them to override
 * these values.
 */
#ifndef BOARD_DEFS_H
#define BOARD_DEFS_H

#include "board_config.h"

/* External interrupt lines of the AN500 image (QEMU: num-irq 32). */
#define BOARD_NUM_IRQS 32u

/* UART0 has separate RX (0) and TX (1) interrupt lines here, no combined one;
   the console only enables the RX interrupt, so the RX line is the one. */
#ifndef CONSOLE_UART_IRQ
#define CONSOLE_UART_IRQ 0u
#endif

/* The CMSDK UART is clocked from the 25 MHz SYSCLK; QEMU only checks that
   the divider is at least 16, the baud rate itself is not emulated. */
#ifndef CONSOLE_UART_PCLK_HZ
#define CONSOLE_UART_PCLK_HZ 25000000u
#endif
#define CONSOLE_BAUD 115200u

#if NIC_IRQ >= BOARD_NUM_IRQS || CONSOLE_UART_IRQ >= BOARD_NUM_IRQS
#error "IRQ number outside this board's vector table"
#endif

#endif
