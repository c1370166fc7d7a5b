/*
 * SMSC LAN9118 register map (32-bit bus), as far as this driver uses it.
 */
#ifndef LAN9118_REGS_H
#define LAN9118_REGS_H

#define RX_DATA_FIFO    0x00u
#define TX_DATA_FIFO    0x20u
#define RX_STATUS_FIFO  0x40u
#define IRQ_CFG         0x54u
#define INT_STS         0x58u
#define INT_EN          0x5Cu
#define BYTE_TEST       0x64u
#define RX_CFG          0x6Cu
#define TX_CFG          0x70u
#define HW_CFG          0x74u
#define RX_FIFO_INF     0x7Cu
#define TX_FIFO_INF     0x80u
#define PMT_CTRL        0x84u
#define RX_DROP         0xA0u
#define MAC_CSR_CMD     0xA4u
#define MAC_CSR_DATA    0xA8u

#define BYTE_TEST_VALUE 0x87654321u

#define IRQ_CFG_IRQ_EN   (1u << 8)
#define IRQ_CFG_IRQ_POL  (1u << 4) /* active high */
#define IRQ_CFG_IRQ_TYPE (1u << 0) /* push-pull */

#define INT_RSFL        (1u << 3)  /* RX status FIFO above its level */

#define RX_CFG_RXDOFF(n) ((uint32_t)(n) << 8)

#define TX_CFG_TX_ON    (1u << 1)
#define TX_CFG_TXSAO    (1u << 2)  /* TX status FIFO may overrun: never read */

#define HW_CFG_SRST     (1u << 0)
#define PMT_CTRL_READY  (1u << 0)

#define RX_FIFO_INF_RXSUSED(v)  (((v) >> 16) & 0xFFu)
#define TX_FIFO_INF_TDFREE(v)   ((v) & 0xFFFFu)

#define RX_STS_LENGTH(v) (((v) >> 16) & 0x3FFFu) /* includes the 4-byte CRC */
#define RX_STS_ERROR     (1u << 15)

#define TX_CMD_A_FIRST   (1u << 13)
#define TX_CMD_A_LAST    (1u << 12)
#define TX_CMD_A_OFFSET(n) ((uint32_t)(n) << 16)
#define TX_CMD_B_TAG(n)  ((uint32_t)(n) << 16)

#define MAC_CSR_BUSY    (1u << 31)
#define MAC_CSR_READ    (1u << 30)

/* MAC registers (through MAC_CSR_CMD/DATA) */
#define MAC_CR          1u
#define MAC_ADDRH       2u
#define MAC_ADDRL       3u
#define MAC_MII_ACC     6u
#define MAC_MII_DATA    7u

#define MAC_CR_FDPX     (1u << 20)
#define MAC_CR_TXEN     (1u << 3)
#define MAC_CR_RXEN     (1u << 2)

#define MII_ACC_PHY_ADDR(n) ((uint32_t)(n) << 11)
#define MII_ACC_REG(n)      ((uint32_t)(n) << 6)
#define MII_ACC_BUSY        (1u << 0)

#define PHY_ADDR_INTERNAL 1u
#define PHY_BSR           1u
#define PHY_BSR_LINK_UP   (1u << 2)

#endif
