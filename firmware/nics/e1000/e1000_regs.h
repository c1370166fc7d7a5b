/*
 * Intel 8254x (e1000) registers, bits and legacy descriptors: the subset
 * QEMU 7.2's e1000 model implements and the two drivers use.
 */
#ifndef E1000_REGS_H
#define E1000_REGS_H

#include <stdint.h>

#define E1000_VENDOR      0x8086u
#define E1000_DEVICE      0x100Eu /* 82540EM, QEMU's -net nic,model=e1000 */

#define E1000_CTRL        0x0000u
#define E1000_STATUS      0x0008u
#define E1000_ICR         0x00C0u /* read clears */
#define E1000_ITR         0x00C4u
#define E1000_IMS         0x00D0u
#define E1000_IMC         0x00D8u
#define E1000_RCTL        0x0100u
#define E1000_TCTL        0x0400u
#define E1000_TIPG        0x0410u
#define E1000_RDBAL       0x2800u
#define E1000_RDBAH       0x2804u
#define E1000_RDLEN       0x2808u
#define E1000_RDH         0x2810u
#define E1000_RDT         0x2818u
#define E1000_RDTR        0x2820u
#define E1000_RADV        0x282Cu
#define E1000_TDBAL       0x3800u
#define E1000_TDBAH       0x3804u
#define E1000_TDLEN       0x3808u
#define E1000_TDH         0x3810u
#define E1000_TDT         0x3818u
#define E1000_TIDV        0x3820u
#define E1000_TADV        0x382Cu
#define E1000_MPC         0x4010u /* missed packets (no RX buffer), clears on read */
#define E1000_MTA         0x5200u /* 128 words */
#define E1000_RAL0        0x5400u
#define E1000_RAH0        0x5404u

#define CTRL_SLU          (1u << 6)
#define CTRL_RST          (1u << 26)
#define STATUS_LU         (1u << 1)

#define RCTL_EN           (1u << 1)
#define RCTL_BAM          (1u << 15)
#define RCTL_BSIZE_2048   (0u << 16)
#define RCTL_SECRC        (1u << 26)

#define TCTL_EN           (1u << 1)
#define TCTL_PSP          (1u << 3)
#define TCTL_CT(x)        ((uint32_t)(x) << 4)
#define TCTL_COLD(x)      ((uint32_t)(x) << 12)

#define ICR_TXDW          (1u << 0)
#define ICR_LSC           (1u << 2)
#define ICR_RXDMT0        (1u << 4)
#define ICR_RXO           (1u << 6)
#define ICR_RXT0          (1u << 7)

#define RAH_AV            (1u << 31)

struct e1000_rx_desc {
  uint64_t addr;
  uint16_t length;
  uint16_t csum;
  uint8_t status;
  uint8_t errors;
  uint16_t special;
};

struct e1000_tx_desc {
  uint64_t addr;
  uint16_t length;
  uint8_t cso;
  uint8_t cmd;
  uint8_t status;
  uint8_t css;
  uint16_t special;
};

#define RXD_STAT_DD       0x01u
#define RXD_STAT_EOP      0x02u
#define RXD_ERR_MASK      0xE7u /* CE, SE, SEQ, CXE, RXE: the frame is bad (not TCPE/IPE) */

#define TXD_CMD_EOP       0x01u
#define TXD_CMD_IFCS      0x02u
#define TXD_CMD_RS        0x08u
#define TXD_STAT_DD       0x01u

_Static_assert(sizeof(struct e1000_rx_desc) == 16, "legacy RX descriptor is 16 bytes");
_Static_assert(sizeof(struct e1000_tx_desc) == 16, "legacy TX descriptor is 16 bytes");

#endif
