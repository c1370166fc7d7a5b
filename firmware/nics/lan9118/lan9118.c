/*
 * lwIP netif driver for the SMSC LAN9118 (as modelled by QEMU 7.2).
 *
 * RX: the interrupt only masks the device and flags work; nic_poll() in the
 * main loop copies frames from the RX FIFO into PBUF_POOL pbufs and hands
 * them to netif->input. QEMU's RX FIFO holds about 6 full frames and drops
 * further ones silently, so draining promptly matters more than anything.
 * TX: each pbuf of the chain becomes one TX buffer (command words A and B,
 * then the data words); the start offset field of command A absorbs
 * payloads that are not word aligned. QEMU sends the frame when its last
 * word is written.
 */
#include <stdint.h>

#include "lwip/opt.h"
#include "lwip/etharp.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "netif/ethernet.h"
#if !NO_SYS
#include "lwip/tcpip.h"
#endif

#include "board_config.h"
#include "nr_board.h"
#include "nr_nic.h"
#include "lan9118_regs.h"

#if ETH_PAD_SIZE > 31
#error "ETH_PAD_SIZE must fit RX_CFG.RXDOFF (0..31 bytes)"
#endif

#define REG(off) (*(volatile uint32_t *)(NIC_BASE + (off)))

/* Payload words are moved with 32-bit accesses whatever the buffer's type. */
typedef uint32_t __attribute__((may_alias)) word_t;

#define RX_FRAME_MIN   (SIZEOF_ETH_HDR - ETH_PAD_SIZE + 4u) /* with CRC */
#define RX_FRAME_MAX   (1518u + 4u)                          /* VLAN frame + CRC */
#define RX_BATCH       16u      /* frames per nic_poll(); the console must stay responsive */
#define LINK_POLL_MS   1000u
#define SPIN_LIMIT     100000u  /* register polls before a device step is given up */

static struct nic_stats stats;
static volatile int rx_pending;
static uint16_t tx_tag;
static uint32_t next_link_poll;

static int wait_reg(uint32_t off, uint32_t mask, uint32_t want)
{
  for (uint32_t i = 0; i < SPIN_LIMIT; i++) {
    if ((REG(off) & mask) == want) {
      return 1;
    }
  }
  return 0;
}

static uint32_t mac_read(uint32_t index)
{
  REG(MAC_CSR_CMD) = MAC_CSR_BUSY | MAC_CSR_READ | index;
  wait_reg(MAC_CSR_CMD, MAC_CSR_BUSY, 0);
  return REG(MAC_CSR_DATA);
}

static void mac_write(uint32_t index, uint32_t value)
{
  REG(MAC_CSR_DATA) = value;
  REG(MAC_CSR_CMD) = MAC_CSR_BUSY | index;
  wait_reg(MAC_CSR_CMD, MAC_CSR_BUSY, 0);
}

static uint32_t phy_read(uint32_t reg)
{
  mac_write(MAC_MII_ACC, MII_ACC_PHY_ADDR(PHY_ADDR_INTERNAL) | MII_ACC_REG(reg) | MII_ACC_BUSY);
  for (uint32_t i = 0; i < SPIN_LIMIT && (mac_read(MAC_MII_ACC) & MII_ACC_BUSY); i++) {
  }
  return mac_read(MAC_MII_DATA);
}

static int phy_link_up(void)
{
  return (phy_read(PHY_BSR) & PHY_BSR_LINK_UP) != 0;
}

static int hw_reset(void)
{
  if (REG(BYTE_TEST) != BYTE_TEST_VALUE) {
    return 0;
  }
  REG(HW_CFG) = HW_CFG_SRST;
  return wait_reg(HW_CFG, HW_CFG_SRST, 0) && wait_reg(PMT_CTRL, PMT_CTRL_READY, PMT_CTRL_READY);
}

/* The reset reloads the address from the EEPROM; QEMU fills its EEPROM with
   the -nic ...,mac= address (or its 52:54:00:12:34:56 default), so
   ADDRL/ADDRH hold the address the host side expects. */
static void read_mac(uint8_t *mac)
{
  uint32_t lo = mac_read(MAC_ADDRL);
  uint32_t hi = mac_read(MAC_ADDRH);

  mac[0] = (uint8_t)lo;
  mac[1] = (uint8_t)(lo >> 8);
  mac[2] = (uint8_t)(lo >> 16);
  mac[3] = (uint8_t)(lo >> 24);
  mac[4] = (uint8_t)hi;
  mac[5] = (uint8_t)(hi >> 8);
}

static void hw_start(void)
{
  /* QEMU drives the line inverted unless it is push-pull, active high. */
  REG(IRQ_CFG) = IRQ_CFG_IRQ_EN | IRQ_CFG_IRQ_POL | IRQ_CFG_IRQ_TYPE;
  REG(INT_STS) = 0xFFFFFFFFu;
  /* The device inserts ETH_PAD_SIZE bytes before each frame, so the FIFO
     stream matches lwIP's padded pbuf layout byte for byte. */
  REG(RX_CFG) = RX_CFG_RXDOFF(ETH_PAD_SIZE);
  REG(TX_CFG) = TX_CFG_TX_ON | TX_CFG_TXSAO;
  /* Reset leaves promiscuous mode on: replace MAC_CR entirely. */
  mac_write(MAC_CR, MAC_CR_FDPX | MAC_CR_TXEN | MAC_CR_RXEN);
  /* FIFO_INT keeps its reset RX status level of 0: RSFL fires per frame. */
  REG(INT_EN) = INT_RSFL;
  board_irq_enable(NIC_IRQ);
}

void nic_irq_handler(void)
{
  REG(INT_EN) = 0; /* lowers the line until nic_poll() re-arms it */
  rx_pending = 1;
  stats.irqs++;
#if !NO_SYS
  nic_rx_wake_from_isr();
#endif
}

int nic_work_pending(void)
{
  return rx_pending;
}

static void rx_discard_words(uint32_t words)
{
  while (words-- > 0) {
    (void)REG(RX_DATA_FIFO);
  }
}

/*
 * Four FIFO words per LDM/STM pair: the data FIFOs are aliased over
 * consecutive register addresses for such bursts, and in QEMU a burst costs
 * about 30 % less than four single accesses. Callers mask interrupts around
 * the bursts, so a core that restarts an interrupted LDM/STM cannot repeat
 * FIFO accesses. r0-r3 are free to clobber in any function.
 */
static inline void fifo_read4(word_t *dst)
{
  __asm volatile("ldm %[fifo], {r0-r3}\n\tstm %[dst], {r0-r3}"
                 : : [fifo] "r"(NIC_BASE + RX_DATA_FIFO), [dst] "r"(dst)
                 : "r0", "r1", "r2", "r3", "memory");
}

static inline void fifo_write4(const word_t *src)
{
  __asm volatile("ldm %[src], {r0-r3}\n\tstm %[fifo], {r0-r3}"
                 : : [fifo] "r"(NIC_BASE + TX_DATA_FIFO), [src] "r"(src)
                 : "r0", "r1", "r2", "r3", "memory");
}

/* Fills the pbuf chain from the RX data FIFO; returns the words consumed.
   Word-aligned stretches are moved in bursts, the rest byte by byte. */
static uint32_t rx_read_into(struct pbuf *p)
{
  uint32_t words = 0;
  uint32_t carry = 0;
  unsigned carry_len = 0;

  for (struct pbuf *q = p; q != NULL; q = q->next) {
    uint8_t *dst = q->payload;
    uint32_t n = q->len;

    while (n > 0) {
      if (carry_len == 0 && n >= 16 && ((uintptr_t)dst & 3u) == 0) {
        fifo_read4((word_t *)dst);
        words += 4;
        dst += 16;
        n -= 16;
        continue;
      }
      if (carry_len == 0) {
        carry = REG(RX_DATA_FIFO);
        words++;
        carry_len = 4;
      }
      *dst++ = (uint8_t)carry;
      carry >>= 8;
      carry_len--;
      n--;
    }
  }
  return words;
}

static void rx_drop(uint32_t words)
{
  rx_discard_words(words);
  LINK_STATS_INC(link.drop);
}

static void rx_one_frame(struct netif *netif)
{
  uint32_t status = REG(RX_STATUS_FIFO);
  uint32_t len = RX_STS_LENGTH(status);
  /* Not RX_DP_CTRL fast-forward: QEMU 7.2 skips the data there but never
     frees its FIFO space, so the FIFO would fill up for good. */
  uint32_t words = (ETH_PAD_SIZE + len + 3u) / 4u;
  struct pbuf *p;
  uint32_t irq;

  if (status & RX_STS_ERROR) {
    LINK_STATS_INC(link.err);
    rx_drop(words);
    return;
  }
  if (len < RX_FRAME_MIN || len > RX_FRAME_MAX) {
    LINK_STATS_INC(link.lenerr);
    rx_drop(words);
    return;
  }
  p = pbuf_alloc(PBUF_RAW, (u16_t)(ETH_PAD_SIZE + len - 4u), PBUF_POOL);
  if (p == NULL) {
    stats.rx_no_pbuf++;
    LINK_STATS_INC(link.memerr);
    rx_drop(words);
    return;
  }
  irq = board_irq_save();
  rx_discard_words(words - rx_read_into(p)); /* CRC and alignment tail */
  board_irq_restore(irq);
  stats.rx_frames++;
  stats.rx_bytes += len - 4u;
  LINK_STATS_INC(link.recv);
  if (netif->input(p, netif) != ERR_OK) {
    pbuf_free(p);
  }
}

static void rx_drain(struct netif *netif)
{
  stats.rx_dropped_fifo += REG(RX_DROP); /* clears on read */
  for (uint32_t n = 0; n < RX_BATCH; n++) {
    /* Acknowledge before looking, so a frame arriving after the FIFO was
       seen empty raises the interrupt again once it is unmasked. */
    REG(INT_STS) = INT_RSFL;
    if (RX_FIFO_INF_RXSUSED(REG(RX_FIFO_INF)) == 0) {
      rx_pending = 0;
      REG(INT_EN) = INT_RSFL;
      return;
    }
    rx_one_frame(netif);
  }
  /* Batch used up: stay masked and pending, the main loop comes back. */
}

#if !NO_SYS
/* NO_SYS 0: nic_poll() runs in the receive thread, but the netif's link
   state is lwIP core state, changed in the tcpip thread. */
static void link_up_in_core(void *arg)
{
  netif_set_link_up((struct netif *)arg);
}

static void link_down_in_core(void *arg)
{
  netif_set_link_down((struct netif *)arg);
}
#define LINK_SET_UP(n)   ((void)tcpip_callback(link_up_in_core, (n)))
#define LINK_SET_DOWN(n) ((void)tcpip_callback(link_down_in_core, (n)))
#else
#define LINK_SET_UP(n)   netif_set_link_up(n)
#define LINK_SET_DOWN(n) netif_set_link_down(n)
#endif

static void link_poll(struct netif *netif)
{
  uint32_t now = board_ms();
  int up;

  if ((int32_t)(now - next_link_poll) < 0) {
    return;
  }
  next_link_poll = now + LINK_POLL_MS;
  up = phy_link_up();
  if (up && !netif_is_link_up(netif)) {
    LINK_SET_UP(netif);
  } else if (!up && netif_is_link_up(netif)) {
    LINK_SET_DOWN(netif);
  }
}

void nic_poll(struct netif *netif)
{
  if (rx_pending) {
    rx_drain(netif);
  }
  link_poll(netif);
}

/* FIFO bytes a frame takes: per buffer two command words plus the data
   words, the first of which starts at the payload's offset in its word. */
static uint32_t tx_fifo_bytes(const struct pbuf *p)
{
  uint32_t bytes = 0;

  for (const struct pbuf *q = p; q != NULL; q = q->next) {
    if (q->len > 0) {
      bytes += 8u + ((((uintptr_t)q->payload & 3u) + q->len + 3u) & ~3u);
    }
  }
  return bytes;
}

static int tx_wait_space(uint32_t bytes)
{
  if (TX_FIFO_INF_TDFREE(REG(TX_FIFO_INF)) >= bytes) {
    return 1;
  }
  stats.tx_busy++;
  for (uint32_t i = 0; i < SPIN_LIMIT; i++) {
    if (TX_FIFO_INF_TDFREE(REG(TX_FIFO_INF)) >= bytes) {
      return 1;
    }
  }
  return 0;
}

static void tx_write_buffer(const struct pbuf *q, uint32_t cmd_a_flags, uint32_t frame_len)
{
  uint32_t offset = (uintptr_t)q->payload & 3u;
  const word_t *src = (const word_t *)((uintptr_t)q->payload - offset);
  uint32_t words = (offset + q->len + 3u) / 4u;

  REG(TX_DATA_FIFO) = cmd_a_flags | TX_CMD_A_OFFSET(offset) | q->len;
  REG(TX_DATA_FIFO) = TX_CMD_B_TAG(tx_tag) | frame_len;
  for (; words >= 4; words -= 4, src += 4) {
    fifo_write4(src);
  }
  while (words-- > 0) {
    REG(TX_DATA_FIFO) = *src++;
  }
}

static err_t tx_frame(struct pbuf *p)
{
  uint32_t frame_len = p->tot_len;
  uint32_t remaining = frame_len;
  uint32_t first = TX_CMD_A_FIRST;
  uint32_t irq;

  if (!tx_wait_space(tx_fifo_bytes(p))) {
    LINK_STATS_INC(link.drop);
    return ERR_IF;
  }
  tx_tag++;
  irq = board_irq_save();
  for (const struct pbuf *q = p; q != NULL && remaining > 0; q = q->next) {
    if (q->len == 0) {
      continue;
    }
    remaining -= q->len;
    tx_write_buffer(q, first | (remaining == 0 ? TX_CMD_A_LAST : 0u), frame_len);
    first = 0;
  }
  board_irq_restore(irq);
  stats.tx_frames++;
  stats.tx_bytes += frame_len;
  LINK_STATS_INC(link.xmit);
  return ERR_OK;
}

static err_t lan9118_linkoutput(struct netif *netif, struct pbuf *p)
{
  err_t err;

  LWIP_UNUSED_ARG(netif);
#if ETH_PAD_SIZE
  pbuf_remove_header(p, ETH_PAD_SIZE);
#endif
  err = tx_frame(p);
#if ETH_PAD_SIZE
  pbuf_add_header(p, ETH_PAD_SIZE);
#endif
  return err;
}

err_t nic_netif_init(struct netif *netif)
{
  if (!hw_reset()) {
    return ERR_IF;
  }
  read_mac(netif->hwaddr);
  nic_netif_ethernet(netif, 'e', 'n');
  netif->linkoutput = lan9118_linkoutput;
  if (phy_link_up()) {
    netif->flags |= NETIF_FLAG_LINK_UP;
  }
  next_link_poll = board_ms() + LINK_POLL_MS;
  hw_start();
  return ERR_OK;
}

const struct nic_stats *nic_get_stats(void)
{
  return &stats;
}
