/*
 * SMSC LAN91C111 registers (datasheet, "Register map"): 16 bytes of
 * registers in four banks selected through offset 14. Offsets are bytes.
 */
#ifndef LAN91C111_REGS_H
#define LAN91C111_REGS_H

#define REG_BANK       14u   /* bank select; high byte reads 0x33 */
#define BANK_ID        0x33u

/* Bank 0 */
#define B0_TCR         0u
#define  TCR_TXENA     0x0001u
#define  TCR_PAD_EN    0x0080u
#define  TCR_FDUPLX    0x0800u
#define B0_EPH         2u
#define B0_RCR         4u
#define  RCR_RXEN      0x0100u
#define  RCR_STRIP_CRC 0x0200u
#define  RCR_SOFT_RST  0x8000u
#define B0_COUNTER     6u
#define B0_MIR         8u
#define B0_RPCR        10u
#define  RPCR_ANEG     0x0800u

/* Bank 1 */
#define B1_CONFIG      0u
#define  CONFIG_EPH_POWER_EN 0x8000u
#define B1_BASE        2u
#define B1_IA0         4u   /* IA0..IA5 at 4..9 */
#define B1_GENERAL     10u
#define B1_CONTROL     12u
#define  CTR_AUTO_RELEASE 0x0800u

/* Bank 2 */
#define B2_MMU         0u
#define  MMU_BUSY      0x01u
#define  MMU_ALLOC_TX  0x20u
#define  MMU_RESET     0x40u
#define  MMU_REMOVE_RX 0x60u
#define  MMU_RELEASE_RX 0x80u   /* remove and release top of RX FIFO */
#define  MMU_RELEASE_PKT 0xA0u  /* release the packet in PNR */
#define  MMU_ENQUEUE_TX 0xC0u
#define  MMU_RESET_TXFIFO 0xE0u
#define B2_PNR         2u
#define B2_ARR         3u
#define  ARR_FAILED    0x80u
#define B2_FIFO_TX     4u
#define B2_FIFO_RX     5u
#define  FIFO_EMPTY    0x80u
#define B2_PTR         6u
#define  PTR_RCV       0x8000u
#define  PTR_AUTO_INCR 0x4000u
#define  PTR_READ      0x2000u
#define B2_DATA        8u
#define B2_INT_STAT    12u   /* read: status; write: acknowledge */
#define B2_INT_MASK    13u
#define  INT_RCV       0x01u
#define  INT_TX        0x02u
#define  INT_TX_EMPTY  0x04u
#define  INT_ALLOC     0x08u
#define  INT_RX_OVRN   0x10u
#define  INT_EPH       0x20u
#define  INT_MD        0x80u

/* Bank 3 */
#define B3_MCAST       0u
#define B3_MGMT        8u
#define B3_REVISION    10u

/* Packet memory layout: status word, byte count (the whole buffer,
   including these 4 bytes and the 2 control bytes), data, then the last
   word: [odd data byte or 0][control byte]. */
#define CTL_ODD        0x20u
#define CTL_CRC        0x10u
#define RXS_ALGNERR    0x8000u
#define RXS_BADCRC     0x2000u
#define RXS_ODDFRM     0x1000u
#define RXS_TOOLNG     0x0800u
#define RXS_TOOSHORT   0x0400u
#define RXS_ERRORS     (RXS_ALGNERR | RXS_BADCRC | RXS_TOOLNG | RXS_TOOSHORT)

#endif
