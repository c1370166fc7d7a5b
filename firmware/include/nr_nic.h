/*
 * NIC driver interface: each nics/<name>/ folder implements it. The board's
 * vector table routes NIC_IRQ (board_config.h) to nic_irq_handler().
 */
#ifndef NR_NIC_H
#define NR_NIC_H

#include <stdint.h>
#include "lwip/etharp.h"
#include "lwip/netif.h"

struct nic_stats {
  uint32_t rx_frames;       /* frames handed to netif->input */
  uint32_t rx_bytes;
  uint32_t tx_frames;
  uint32_t tx_bytes;
  uint32_t rx_dropped_fifo; /* frames the device reported lost */
  uint32_t rx_no_pbuf;      /* frames dropped because pbuf_alloc failed */
  uint32_t tx_busy;         /* transmits that had to wait for FIFO space */
  uint32_t irqs;
};

/* The netif fields every Ethernet driver sets alike (for its nic_netif_init):
   6-byte address, the name, MTU 1500, ARP output and the Ethernet flags. The
   driver adds its linkoutput and, when the link is up, NETIF_FLAG_LINK_UP. */
static inline void nic_netif_ethernet(struct netif *netif, char name0, char name1)
{
  netif->hwaddr_len = ETH_HWADDR_LEN;
  netif->name[0] = name0;
  netif->name[1] = name1;
  netif->mtu = 1500;
  netif->output = etharp_output;
  netif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET;
}

/* netif init function for netif_add(). */
err_t nic_netif_init(struct netif *netif);

/* Main-loop work: drain received frames into netif->input, track link. */
void nic_poll(struct netif *netif);

/* Nonzero when nic_poll() has work that an interrupt flagged. */
int nic_work_pending(void);

void nic_irq_handler(void);

#if !NO_SYS
/* NO_SYS 0 (apps/nic_thread.c): the driver's interrupt handler calls this
   once it has flagged work, to wake the receive thread that runs nic_poll();
   the driver hands frames to netif->input (tcpip_input) from that thread and
   changes the link state through the tcpip thread. */
void nic_rx_wake_from_isr(void);
#endif

const struct nic_stats *nic_get_stats(void);

/* Buffers the driver holds of its own (not lwIP's pbufs, which the pools
   count), as they are now: chip memory, buffers lent to lwIP. The leak check
   ("stats used", harness/rig/leaks.py) expects each back where it was before
   a workload once its connections closed. Fills at most max entries and
   returns how many; a driver that holds none need not define it (cmd_stats.c
   has a weak one returning 0). */
struct nic_buffer_use {
  const char *name; /* a key: nic.buf.<name> */
  uint32_t used;
};
#define NIC_BUFFER_KINDS_MAX 4
unsigned nic_buffers_in_use(struct nic_buffer_use *out, unsigned max);

#endif
