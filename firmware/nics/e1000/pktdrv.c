/*
 * The "pktdrv" design (nxdk's lib/net/pktdrv, its driver before nxdk pull
 * request 611, github.com/XboxDev/nxdk), rebuilt over the e1000:
 *
 *  - 32 RX and 32 TX descriptors (nxdk NBBUFF), RX buffers of 2 KiB.
 *  - No RX interrupt: an lwIP timeout every 5 ms (nxdk's packet_timer,
 *    PKT_TMR_INTERVAL) drains every filled RX descriptor. Each frame is
 *    copied twice, as nxdk's Pktdrv_Callback and low_level_input do: from
 *    the DMA buffer into one bounce buffer, then from the bounce buffer into
 *    a PBUF_POOL pbuf, which goes to netif->input. The descriptor goes back
 *    to the device right after its frame is taken.
 *  - TX: low_level_output spins until the previously queued frame has left
 *    (nxdk: while (Pktdrv_GetQueuedTxPkts() > 0)), copies the pbuf chain
 *    into its one TX bounce buffer and queues it: one frame in flight.
 *
 * The device's interrupt stays masked: nxdk's pktdrv DPC only reclaimed TX
 * descriptors, which the spin in the transmit path does here.
 *
 * NO_SYS 0 (the nxdk-pktdrv-os profile) is what nxdk itself ran: lwIP's
 * tcpip thread, and packet_timer an lwIP timeout in it, so the 5 ms poll,
 * both copies and netif->input = tcpip_input() (each frame a message in the
 * tcpip thread's own mailbox, handled once the poll returns) all happen in
 * that one thread; there is no receive thread (the profile's
 * NR_NIC_RX_NO_THREAD) and the link poll moves into packet_timer. The
 * transmit path runs where lwIP's core runs (the tcpip thread, or a thread
 * holding the core lock), so the driver's state has one user at a time, as
 * with NO_SYS 1.
 */
#include "e1000_drv.h"

#if NETREPRO_E1000_DRIVER == NETREPRO_E1000_PKTDRV

#include <string.h>

#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "lwip/timeouts.h"
#include "netif/ethernet.h"
#if !NO_SYS
#include "lwip/tcpip.h"
#endif

#include "nr_board.h"
#include "x86/io.h"

#define PKTDRV_RING       32u  /* nxdk pktdrv NBBUFF: RX and TX descriptors */
#define PKTDRV_POLL_MS    5u   /* nxdk PKT_TMR_INTERVAL */
#define PKTDRV_SPIN_LIMIT 10000000u

static struct e1000_rx_desc rx_ring[PKTDRV_RING] __attribute__((aligned(128)));
static struct e1000_tx_desc tx_ring[PKTDRV_RING] __attribute__((aligned(128)));
static uint8_t rx_dma[PKTDRV_RING][E1000_BUF_SIZE] __attribute__((aligned(16), section(".bulk")));
/* nxdk: g_rx_buffer and g_tx_buffer, 1520 bytes each. */
static uint8_t rx_bounce[ETH_PAD_SIZE + E1000_FRAME_MAX] __attribute__((aligned(4)));
static uint8_t tx_bounce[E1000_FRAME_MAX] __attribute__((aligned(16)));

static unsigned rx_next;       /* next descriptor the device fills */
static unsigned tx_next;       /* next free TX descriptor */
static int tx_queued;          /* frames handed to the device and not seen done */
static unsigned tx_last;       /* descriptor of the frame in flight */
static struct netif *pkt_netif;

int nic_work_pending(void)
{
  return 0;
}

void nic_irq_handler(void)
{
  /* Masked (IMS 0): only a spurious shared-line interrupt lands here. */
  (void)e1000_rd(E1000_ICR);
  e1000_stats.irqs++;
}

/* The second copy: bounce buffer -> pool pbuf -> lwIP. */
static void pktdrv_input(struct netif *netif, unsigned len)
{
  struct pbuf *p = pbuf_alloc(PBUF_RAW, (u16_t)(ETH_PAD_SIZE + len), PBUF_POOL);

  if (p == NULL) {
    e1000_stats.rx_no_pbuf++;
    LINK_STATS_INC(link.memerr);
    LINK_STATS_INC(link.drop);
    return;
  }
  pbuf_take(p, rx_bounce, (u16_t)(ETH_PAD_SIZE + len));
  e1000_stats.rx_frames++;
  e1000_stats.rx_bytes += len;
  LINK_STATS_INC(link.recv);
  if (netif->input(p, netif) != ERR_OK) {
    pbuf_free(p);
  }
}

static void pktdrv_receive(void)
{
  for (;;) {
    volatile struct e1000_rx_desc *d = &rx_ring[rx_next];
    uint8_t status = d->status;
    unsigned len = d->length;

    if (!(status & RXD_STAT_DD)) {
      return;
    }
    x86_barrier();
    if ((status & RXD_STAT_EOP) && !(d->errors & RXD_ERR_MASK) && len >= SIZEOF_ETH_HDR - ETH_PAD_SIZE &&
        len <= E1000_FRAME_MAX) {
      /* The first copy, DMA buffer -> bounce buffer, as Pktdrv_Callback. */
      memcpy(rx_bounce + ETH_PAD_SIZE, rx_dma[rx_next] + ETH_PAD_SIZE, len);
      pktdrv_input(pkt_netif, len);
    } else {
      LINK_STATS_INC(link.err);
    }
    d->status = 0;
    x86_barrier();
    /* Hand the descriptor back at once, as pktdrv rewrites NV_RX_AVAIL. */
    e1000_wr(E1000_RDT, rx_next);
    rx_next = (rx_next + 1u) % PKTDRV_RING;
  }
}

static void packet_timer(void *arg)
{
  LWIP_UNUSED_ARG(arg);
  pktdrv_receive();
#if !NO_SYS
  e1000_link_poll(pkt_netif);
#endif
  sys_timeout(PKTDRV_POLL_MS, packet_timer, NULL);
}

void nic_poll(struct netif *netif)
{
#if !NO_SYS
  LWIP_UNUSED_ARG(netif); /* packet_timer polls the link */
#else
  e1000_link_poll(netif);
#endif
}

static int tx_frame_done(void)
{
  return (tx_ring[tx_last].status & TXD_STAT_DD) != 0;
}

static err_t pktdrv_linkoutput(struct netif *netif, struct pbuf *p)
{
  unsigned len;
  volatile struct e1000_tx_desc *d;

  LWIP_UNUSED_ARG(netif);
  /* One frame in flight: wait until the device has sent the previous one. */
  if (tx_queued && !tx_frame_done()) {
    e1000_stats.tx_busy++;
    for (uint32_t i = 0; i < PKTDRV_SPIN_LIMIT && !tx_frame_done(); i++) {
    }
    if (!tx_frame_done()) {
      LINK_STATS_INC(link.drop);
      return ERR_IF;
    }
  }
  tx_queued = 0;
  len = pbuf_copy_partial(p, tx_bounce, (u16_t)(p->tot_len - ETH_PAD_SIZE), ETH_PAD_SIZE);
  d = &tx_ring[tx_next];
  d->addr = (uint32_t)(uintptr_t)tx_bounce;
  d->length = (uint16_t)len;
  d->cmd = TXD_CMD_EOP | TXD_CMD_IFCS | TXD_CMD_RS;
  d->status = 0;
  x86_barrier();
  tx_last = tx_next;
  tx_next = (tx_next + 1u) % PKTDRV_RING;
  tx_queued = 1;
  e1000_wr(E1000_TDT, tx_next);
  e1000_stats.tx_frames++;
  e1000_stats.tx_bytes += len;
  LINK_STATS_INC(link.xmit);
  return ERR_OK;
}

err_t nic_netif_init(struct netif *netif)
{
  if (!e1000_probe(netif, "pktdrv rx=32 tx=32 rx-poll=5ms")) {
    return ERR_IF;
  }
  netif->linkoutput = pktdrv_linkoutput;
  pkt_netif = netif;
  for (unsigned i = 0; i < PKTDRV_RING; i++) {
    rx_ring[i].addr = (uint32_t)(uintptr_t)(rx_dma[i] + ETH_PAD_SIZE);
    rx_ring[i].status = 0;
  }
  /* RDT = last: all but one descriptor belong to the device (e1000 rings
     are full at RDT == RDH - 1). */
  e1000_start((uint32_t)(uintptr_t)rx_ring, PKTDRV_RING, PKTDRV_RING - 1u,
              (uint32_t)(uintptr_t)tx_ring, PKTDRV_RING, 0);
#if !NO_SYS
  /* The first poll runs in the tcpip thread, which arms the timeout from
     there (nxdk's nxNetInit called packet_timer() itself). A timeout armed
     from this thread would only be seen once the tcpip thread next woke,
     up to a second later. */
  (void)tcpip_try_callback(packet_timer, NULL);
#else
  sys_timeout(PKTDRV_POLL_MS, packet_timer, NULL);
#endif
  return ERR_OK;
}

#endif
