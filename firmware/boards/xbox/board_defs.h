/*
 * Facts about QEMU's i386 `pc` machine that board_config.h does not carry.
 */
#ifndef BOARD_DEFS_H
#define BOARD_DEFS_H

#include "board_config.h"

/* Legacy PC interrupt lines, remapped above the CPU exceptions. */
#define PIC1_VECTOR   0x20u
#define PIC2_VECTOR   0x28u
#define IRQ_PIT       0u
#define IRQ_COM1      4u

/* The PIT's input clock; 1193 counts is 1.00015 ms, close enough for lwIP's
   timers and the 5 ms polling the pktdrv design uses. */
#define PIT_HZ        1193182u

#define COM1_PORT     0x3F8u

#if NIC_IRQ < 3 || NIC_IRQ > 15 || NIC_IRQ == IRQ_COM1
#error "NIC_IRQ must be a free 8259 line (3..15, not COM1's 4)"
#endif

#endif
