/*
 * lwIP netif driver for the SMSC LAN91C111 on the Ethernut 2's 8-bit XMEM
 * bus (the board of reports/ethernut2.toml). Everything is byte-wide PIO, as
 * Nut/OS's own LAN91C111 driver (dev/lanc111.c) does it on that board: 16-bit registers are written low byte then high byte, and
 * frames move one byte per access through the auto-incrementing data
 * register.
 *
 * RX: the INT5 handler masks the chip's interrupts and flags work;
 * nic_poll() copies each frame at the top of the RX FIFO into a PBUF_POOL
 * chain, releases it (MMU "remove and release") and unmasks when the FIFO
 * is empty, so a frame that arrives later raises the line (a new edge).
 * TX: MMU allocate (ARR polled), write status/count/data/control through
 * the pointer at 0 with auto-increment, enqueue. CONTROL.AUTO_RELEASE frees
 * the packet once sent; a TX error (TX_INT) releases it and re-enables the
 * transmitter.
 */
#include <stdint.h>

#include "lwip/opt.h"
#include "lwip/etharp.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "netif/ethernet.h"

#include "board_config.h"
#include "nr_board.h"
#include "nr_nic.h"
#include "lan91c111_regs.h"

#define R8(off) (*(volatile uint8_t *)(uintptr_t)(NIC_BASE + (off)))

#define RX_FRAME_MIN  (SIZEOF_ETH_HDR - ETH_PAD_SIZE)
#define RX_FRAME_MAX  1518u
#define RX_BATCH      8u       /* frames per nic_poll(); keeps the console responsive */
#define SPIN_LIMIT    20000u   /* register polls before a device step is given up */
#define NIC_INT_MASK  (INT_RCV | INT_RX_OVRN | INT_TX)

static struct nic_stats stats;
static volatile uint8_t work_pending;

static void bank(uint8_t b)
{
  R8(REG_BANK) = b;
}

static void w16(uint8_t off, uint16_t v)
{
  R8(off) = (uint8_t)v;
  R8(off + 1u) = (uint8_t)(v >> 8);
}

static uint16_t r16(uint8_t off)
{
  uint16_t lo = R8(off);

  return (uint16_t)(lo | ((uint16_t)R8(off + 1u) << 8));
}

static void mmu_wait(void)
{
  for (uint16_t i = 0; i < SPIN_LIMIT && (R8(B2_MMU) & MMU_BUSY); i++) {
  }
}

static void mmu_command(uint8_t cmd)
{
  R8(B2_MMU) = cmd;
  mmu_wait();
}

static void delay_loops(uint16_t n)
{
  while (n-- > 0) {
    __asm__ __volatile__("" ::: "memory");
  }
}

static int hw_reset(void)
{
  if (R8(REG_BANK + 1u) != BANK_ID) {
    return 0;
  }
  bank(0);
  w16(B0_RCR, RCR_SOFT_RST);
  delay_loops(1000);
  w16(B0_RCR, 0);
  w16(B0_TCR, 0);
  bank(1);
  w16(B1_CONFIG, (uint16_t)(r16(B1_CONFIG) | CONFIG_EPH_POWER_EN));
  w16(B1_CONTROL, (uint16_t)(r16(B1_CONTROL) | CTR_AUTO_RELEASE));
  bank(2);
  R8(B2_INT_MASK) = 0;
  mmu_command(MMU_RESET);
  return 1;
}

/* The board's EEPROM loads IA0-5 at reset (the simavr host puts its --mac
   there); a blank chip gets a fixed locally administered address. */
static void read_mac(uint8_t *mac)
{
  uint8_t any = 0;

  bank(1);
  for (uint8_t i = 0; i < 6u; i++) {
    mac[i] = R8(B1_IA0 + i);
    any |= mac[i];
  }
  if (any == 0) {
    static const uint8_t fixed[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};

    for (uint8_t i = 0; i < 6u; i++) {
      mac[i] = fixed[i];
      R8(B1_IA0 + i) = fixed[i];
    }
  }
}

static void hw_start(void)
{
  bank(0);
  w16(B0_RPCR, RPCR_ANEG);
  w16(B0_TCR, TCR_TXENA | TCR_PAD_EN);
  w16(B0_RCR, RCR_RXEN | RCR_STRIP_CRC);
  bank(2);
  R8(B2_INT_STAT) = 0xFFu; /* acknowledge what is acknowledgeable */
  R8(B2_INT_MASK) = NIC_INT_MASK;
  board_irq_enable(NIC_IRQ);
}

/* Lowers INTR until nic_poll() re-arms the mask; the main loop's bank
   selection is preserved. */
void nic_irq_handler(void)
{
  uint8_t saved = R8(REG_BANK) & 3u;

  bank(2);
  R8(B2_INT_MASK) = 0;
  bank(saved);
  work_pending = 1;
  stats.irqs++;
}

int nic_work_pending(void)
{
  return work_pending;
}

static void rx_one_frame(struct netif *netif)
{
  uint16_t status, count, len;
  struct pbuf *p;

  w16(B2_PTR, PTR_RCV | PTR_AUTO_INCR | PTR_READ);
  status = (uint16_t)R8(B2_DATA);
  status |= (uint16_t)R8(B2_DATA) << 8;
  count = (uint16_t)R8(B2_DATA);
  count |= (uint16_t)R8(B2_DATA) << 8;
  count &= 0x07FEu;
  len = (uint16_t)(count >= 6u ? count - 6u : 0u);
  if (status & RXS_ODDFRM) {
    len++;
  }
  if (status & RXS_ERRORS) {
    LINK_STATS_INC(link.err);
  } else if (len < RX_FRAME_MIN || len > RX_FRAME_MAX) {
    LINK_STATS_INC(link.lenerr);
  } else if ((p = pbuf_alloc(PBUF_RAW, (u16_t)(len + ETH_PAD_SIZE), PBUF_POOL)) == NULL) {
    stats.rx_no_pbuf++;
    LINK_STATS_INC(link.memerr);
  } else {
#if ETH_PAD_SIZE
    pbuf_remove_header(p, ETH_PAD_SIZE);
#endif
    for (struct pbuf *q = p; q != NULL; q = q->next) {
      uint8_t *dst = q->payload;

      for (uint16_t n = q->len; n > 0; n--) {
        *dst++ = R8(B2_DATA);
      }
    }
#if ETH_PAD_SIZE
    pbuf_add_header(p, ETH_PAD_SIZE);
#endif
    mmu_command(MMU_RELEASE_RX);
    stats.rx_frames++;
    stats.rx_bytes += len;
    LINK_STATS_INC(link.recv);
    if (netif->input(p, netif) != ERR_OK) {
      pbuf_free(p);
    }
    return;
  }
  mmu_command(MMU_RELEASE_RX);
  LINK_STATS_INC(link.drop);
}

/* A transmit error stops the transmitter; the failed packet is not
   auto-released. */
static void tx_error(void)
{
  uint8_t pnr = R8(B2_FIFO_TX) & 0x3Fu;
  uint8_t saved_pnr = R8(B2_PNR);

  R8(B2_PNR) = pnr;
  mmu_command(MMU_RELEASE_PKT);
  R8(B2_PNR) = saved_pnr;
  R8(B2_INT_STAT) = INT_TX;
  LINK_STATS_INC(link.err);
  bank(0);
  w16(B0_TCR, TCR_TXENA | TCR_PAD_EN);
  bank(2);
}

void nic_poll(struct netif *netif)
{
  uint8_t irq_state;

  if (!work_pending) {
    return;
  }
  bank(2);
  irq_state = R8(B2_INT_STAT);
  if (irq_state & INT_RX_OVRN) {
    stats.rx_dropped_fifo++;
    R8(B2_INT_STAT) = INT_RX_OVRN;
  }
  if (irq_state & INT_TX) {
    tx_error();
  }
  for (uint8_t n = 0; n < RX_BATCH; n++) {
    bank(2);
    if (R8(B2_FIFO_RX) & FIFO_EMPTY) {
      uint32_t s = board_irq_save();

      work_pending = 0;
      R8(B2_INT_MASK) = NIC_INT_MASK; /* a pending event raises INTR again */
      board_irq_restore(s);
      return;
    }
    rx_one_frame(netif);
  }
  /* Batch used up: stay masked and pending, the main loop comes back. */
}

/* An allocation the MMU could not satisfy stays queued in the chip and
   completes when a page is freed (ALLOC_INT), even after we stopped waiting.
   So a timed-out request is remembered and its page taken on the next
   frame; asking again would leak a 2 KiB page per timeout until none is
   left for reception. */
static uint8_t alloc_outstanding;

static int tx_alloc(void)
{
  if (!alloc_outstanding) {
    mmu_command(MMU_ALLOC_TX);
    alloc_outstanding = 1;
  }
  for (uint16_t i = 0; i < SPIN_LIMIT; i++) {
    uint8_t arr = R8(B2_ARR);

    if (!(arr & ARR_FAILED)) {
      R8(B2_INT_STAT) = INT_ALLOC;
      alloc_outstanding = 0;
      return arr & 0x3F;
    }
    if (i == 0) {
      stats.tx_busy++; /* TX memory held by frames still being sent or received */
    }
  }
  return -1;
}

static err_t lan91c111_linkoutput(struct netif *netif, struct pbuf *p)
{
  uint16_t len, count;
  uint8_t last = 0;
  int pkt;

  LWIP_UNUSED_ARG(netif);
#if ETH_PAD_SIZE
  pbuf_remove_header(p, ETH_PAD_SIZE);
#endif
  len = p->tot_len;
  bank(2);
  pkt = tx_alloc();
  if (pkt < 0) {
#if ETH_PAD_SIZE
    pbuf_add_header(p, ETH_PAD_SIZE);
#endif
    LINK_STATS_INC(link.drop);
    return ERR_IF;
  }
  R8(B2_PNR) = (uint8_t)pkt;
  w16(B2_PTR, PTR_AUTO_INCR);
  count = (uint16_t)((len & ~1u) + 6u);
  R8(B2_DATA) = 0;                 /* status word */
  R8(B2_DATA) = 0;
  R8(B2_DATA) = (uint8_t)count;
  R8(B2_DATA) = (uint8_t)(count >> 8);
  {
    uint16_t left = len;

    for (struct pbuf *q = p; q != NULL && left > 0; q = q->next) {
      const uint8_t *src = q->payload;
      uint16_t n = q->len < left ? q->len : left;

      left -= n;
      if (left == 0 && (len & 1u)) {
        n--;                       /* the odd last byte goes into the control word */
        last = src[n];
      }
      while (n-- > 0) {
        R8(B2_DATA) = *src++;
      }
    }
  }
  if (len & 1u) {
    R8(B2_DATA) = last;
    R8(B2_DATA) = CTL_ODD;
  } else {
    R8(B2_DATA) = 0;
    R8(B2_DATA) = 0;
  }
  mmu_command(MMU_ENQUEUE_TX);
#if ETH_PAD_SIZE
  pbuf_add_header(p, ETH_PAD_SIZE);
#endif
  stats.tx_frames++;
  stats.tx_bytes += len;
  LINK_STATS_INC(link.xmit);
  return ERR_OK;
}

err_t nic_netif_init(struct netif *netif)
{
  if (!hw_reset()) {
    return ERR_IF;
  }
  read_mac(netif->hwaddr);
  nic_netif_ethernet(netif, 'e', 'n');
  netif->linkoutput = lan91c111_linkoutput;
  /* No PHY polling: the emulated link is always up. */
  netif->flags |= NETIF_FLAG_LINK_UP;
  hw_start();
  return ERR_OK;
}

const struct nic_stats *nic_get_stats(void)
{
  return &stats;
}

/* The chip's packet memory: pages held by frames not yet sent or released
   (MIR: low byte all pages, high byte the free ones). Idle, it is all free. */
unsigned nic_buffers_in_use(struct nic_buffer_use *out, unsigned max)
{
  uint8_t saved = R8(REG_BANK) & 3u;
  uint16_t mir;

  if (max < 1u) {
    return 0;
  }
  bank(0);
  mir = r16(B0_MIR);
  bank(saved);
  out[0].name = "pages";
  out[0].used = (uint32_t)(mir & 0xFFu) - (uint32_t)(mir >> 8);
  return 1;
}
