/*
 * Ethernut 2 facts the generated board_config.h does not carry
 * (egnite's Ethernut 2 hardware manual; the simavr host platforms/ethernut2
 * models the same).
 */
#ifndef BOARD_DEFS_H
#define BOARD_DEFS_H

#include "board_config.h"

/* Console: USART0, 8N1. UBRR = F_CPU/(16*baud) - 1 = 7 exactly at
   14.7456 MHz; the simavr host only forwards bytes, so any rate works. */
#define CONSOLE_BAUD 115200ul
#define CONSOLE_UBRR ((CPU_HZ / (16ul * CONSOLE_BAUD)) - 1u)
#define CONSOLE_RX_BUF 64u /* power of two */

/* 1 ms tick: Timer0 in CTC mode, clk/64 = 230400 Hz, OCR0 = 229. */
#define TICK_PRESCALE 64ul
#define TICK_OCR ((CPU_HZ / TICK_PRESCALE / 1000ul) - 1u)

/* External RAM and the NIC on the XMEM bus. Sector limit 0x8000 (SRL=100):
   lower sector 0x1100-0x7FFF without wait states (the SRAM), upper sector
   0x8000-0xFFFF (banked SRAM window and the LAN91C111 at 0xC000) with two
   wait states on read/write strobes (SRW11). Chosen for the LAN91C111's
   access times, not copied from Nut/OS (not available here); simavr does
   not time XMEM accesses, so it does not change emulated speed. */
#define XMEM_EXT_START 0x1100u
#define XMEM_EXT_END   0xBFFFu

#if NIC_IRQ != 5
#error "Ethernut 2 wires the LAN91C111 to INT5"
#endif

#endif
