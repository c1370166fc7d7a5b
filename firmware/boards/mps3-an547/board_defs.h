/*
 * Facts about QEMU's mps3-an547 that the harness's board_config.h does not
 * carry. board_config.h may define them to override these values.
 */
#ifndef BOARD_DEFS_H
#define BOARD_DEFS_H

#include "board_config.h"

/* External interrupt lines of the SSE-300 in this FPGA image (QEMU: numirq). */
#define BOARD_NUM_IRQS 96u

/* UART0 combined interrupt (QEMU hw/arm/mps2-tz.c, an547 uart0 = {33, 34, 43}).
   The combined line is used so the TX/RX order of the other two does not matter. */
#ifndef CONSOLE_UART_IRQ
#define CONSOLE_UART_IRQ 43u
#endif

/* The CMSDK UART's clock is the 25 MHz APB clock; QEMU only checks that the
   divider is at least 16, the baud rate itself is not emulated. */
#ifndef CONSOLE_UART_PCLK_HZ
#define CONSOLE_UART_PCLK_HZ 25000000u
#endif
#define CONSOLE_BAUD 115200u

#if NIC_IRQ >= BOARD_NUM_IRQS || CONSOLE_UART_IRQ >= BOARD_NUM_IRQS
#error "IRQ number outside this board's vector table"
#endif

#endif
