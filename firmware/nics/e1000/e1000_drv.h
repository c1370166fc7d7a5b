/*
 * What the e1000 driver files share: the design selection, the device's
 * registers after PCI discovery, and the common bring-up in e1000_common.c.
 *
 * The profile picks the design:
 *   #define NETREPRO_E1000_DRIVER NETREPRO_E1000_PKTDRV    (nxdk's old pktdrv)
 *   #define NETREPRO_E1000_DRIVER NETREPRO_E1000_NVNETDRV  (nxdk's nvnetdrv)
 * Unset, it is nvnetdrv, nxdk's driver since the report's PR.
 */
#ifndef E1000_DRV_H
#define E1000_DRV_H

#include <stdint.h>

#include "lwip/opt.h"
#include "lwip/netif.h"

#include "nr_nic.h"
#include "e1000_regs.h"

#define NETREPRO_E1000_PKTDRV   1
#define NETREPRO_E1000_NVNETDRV 2

#ifndef NETREPRO_E1000_DRIVER
#define NETREPRO_E1000_DRIVER NETREPRO_E1000_NVNETDRV
#endif
#if NETREPRO_E1000_DRIVER != NETREPRO_E1000_PKTDRV && NETREPRO_E1000_DRIVER != NETREPRO_E1000_NVNETDRV
#error "NETREPRO_E1000_DRIVER must be NETREPRO_E1000_PKTDRV or NETREPRO_E1000_NVNETDRV"
#endif

/* Every RX buffer is one 2 KiB block (RCTL.BSIZE 2048); the device writes
   the frame ETH_PAD_SIZE bytes in, so the buffer already has lwIP's padded
   layout and the IP header lands on a word boundary. */
#define E1000_BUF_SIZE 2048u
#define E1000_FRAME_MAX 1518u  /* VLAN-tagged frame, CRC stripped (RCTL.SECRC) */

extern volatile uint8_t *e1000_mmio;
extern struct nic_stats e1000_stats;

static inline uint32_t e1000_rd(uint32_t off)
{
  return *(volatile uint32_t *)(e1000_mmio + off);
}

static inline void e1000_wr(uint32_t off, uint32_t v)
{
  *(volatile uint32_t *)(e1000_mmio + off) = v;
}

/* Finds the device on PCI, resets it, reads the MAC into netif and fills in
   the netif fields both designs share. Returns 0 with a console line saying
   why when the device is missing or not where the platform says. */
int e1000_probe(struct netif *netif, const char *design);

/* Rings and receiver/transmitter on; RCTL is written exactly once, because
   QEMU's e1000 holds RX delivery for about a second after every RCTL write. */
void e1000_start(uint32_t rx_ring, unsigned rx_count, unsigned rx_tail,
                 uint32_t tx_ring, unsigned tx_count, uint32_t ims);

/* Once a second from nic_poll(): link state from STATUS.LU. */
void e1000_link_poll(struct netif *netif);

#endif
