/*
 * The "nvnetdrv" design (nxdk's lib/net/nvnetdrv, added by nxdk pull request
 * 611 "Replace pktdrv with nvnetdrv", github.com/XboxDev/nxdk), rebuilt over
 * the e1000:
 *
 *  - Rings of NVNETDRV_RX_RING_SIZE / NVNETDRV_TX_RING_SIZE descriptors,
 *    64/64 by default, settable by the profile.
 *  - Zero-copy RX: each received DMA buffer goes to lwIP as it is, wrapped
 *    in a custom PBUF_REF pbuf (pbuf_alloced_custom); when lwIP frees the
 *    pbuf, the buffer goes straight back into the RX ring. The RX ring has
 *    as many buffers as descriptors, so a window of data held by lwIP (out
 *    of order, or not yet read) holds that many buffers out of the ring:
 *    hence the build-time check that the ring covers TCP_WND / TCP_MSS.
 *  - Zero-copy TX: every pbuf of the frame becomes a descriptor pointing at
 *    its payload, split in two where it crosses a 4 KiB page (nvnet's
 *    scatter-gather rule, kept here though the e1000 would not need it).
 *    The frame's pbuf is referenced (pbuf_ref) until the device reports the
 *    frame done, then freed.
 *  - Interrupt driven: the ISR reads and so clears ICR, masks the device and
 *    flags work; nic_poll() in the main loop takes received frames (RXT0)
 *    and completed transmits (TXDW) and unmasks. nxdk hands the frames to
 *    its tcpip thread (tcpip_input); this NO_SYS port hands them to lwIP in
 *    the main loop, which is the same single-threaded lwIP context.
 *
 * NO_SYS 0 (the nxdk-nvnetdrv*-os profiles) follows nxdk's threads as PR 611
 * had them: the ISR queued a DPC that set an event, an IRQ thread woken by
 * it walked the RX ring (and freed completed TX pbufs), and an RX callback
 * thread, woken by a semaphore per frame, called netif->input =
 * tcpip_input(). Here the ISR gives the receive thread's semaphore
 * (apps/nic_thread.c, NR_NIC_RX_THREAD 1) and that one thread does both
 * jobs: nic_poll() takes the frames into tcpip_input() and reclaims the TX
 * descriptors. Three contexts then share the rings: the receive thread,
 * whichever thread frees a received pbuf (the tcpip thread, or an app's
 * after a socket read), which puts its buffer back in the RX ring, and the
 * transmit path (where lwIP's core runs). The RX ring's bookkeeping is
 * guarded by masking interrupts (a few stores, no call that may block), the
 * TX ring's by a mutex (reclaiming frees pbufs, which may take lwIP's heap
 * mutex).
 */
#include "e1000_drv.h"

#if NETREPRO_E1000_DRIVER == NETREPRO_E1000_NVNETDRV

#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "netif/ethernet.h"

#include "nr_board.h"
#include "x86/io.h"
#if !NO_SYS
#include "nr_kernel.h"
#endif

#ifndef NVNETDRV_RX_RING_SIZE
#define NVNETDRV_RX_RING_SIZE 64 /* nxdk nvnetdrv default */
#endif
#ifndef NVNETDRV_TX_RING_SIZE
#define NVNETDRV_TX_RING_SIZE 64 /* nxdk nvnetdrv default */
#endif

#if NVNETDRV_RX_RING_SIZE < (TCP_WND / TCP_MSS)
#error "nvnetdrv: the RX ring (NVNETDRV_RX_RING_SIZE) is smaller than TCP_WND/TCP_MSS, so a full receive window cannot be held and transfers stall; raise NVNETDRV_RX_RING_SIZE to at least TCP_WND/TCP_MSS or lower TCP_WND"
#endif
#if !LWIP_SUPPORT_CUSTOM_PBUF
#error "nvnetdrv: zero-copy RX needs LWIP_SUPPORT_CUSTOM_PBUF 1 in the profile"
#endif
/* The e1000 wants ring lengths in multiples of 128 bytes (8 descriptors). */
#if (NVNETDRV_RX_RING_SIZE % 8) != 0 || (NVNETDRV_TX_RING_SIZE % 8) != 0 || NVNETDRV_TX_RING_SIZE < 8
#error "nvnetdrv on the e1000: NVNETDRV_RX_RING_SIZE and NVNETDRV_TX_RING_SIZE must be multiples of 8"
#endif

#define NV_STR_(x) #x
#define NV_STR(x) NV_STR_(x)
#define RX_N ((unsigned)NVNETDRV_RX_RING_SIZE)
#define TX_N ((unsigned)NVNETDRV_TX_RING_SIZE)
#define RX_BATCH 32u            /* frames per nic_poll(); the console must stay responsive */
#define PAGE_SIZE 4096u
#define TX_SPIN_LIMIT 10000000u
#define IRQ_CAUSES (ICR_RXT0 | ICR_TXDW | ICR_RXO | ICR_RXDMT0 | ICR_LSC)

struct rx_buffer {
  struct pbuf_custom pc;        /* first: lwIP hands back the struct pbuf * */
  uint8_t *mem;
};

static struct e1000_rx_desc rx_ring[RX_N] __attribute__((aligned(128)));
static struct e1000_tx_desc tx_ring[TX_N] __attribute__((aligned(128)));
static uint8_t rx_mem[RX_N][E1000_BUF_SIZE] __attribute__((aligned(16), section(".bulk")));
static struct rx_buffer rx_bufs[RX_N];
static uint16_t rx_slot_buf[RX_N];  /* which buffer each posted descriptor holds */
static uint16_t rx_free[RX_N];      /* buffers lwIP has returned, not yet posted */
static unsigned rx_free_count;
static unsigned rx_next;            /* next descriptor the device fills */
static unsigned rx_tail;            /* next descriptor to post (the RDT value) */

static struct pbuf *tx_pbuf[TX_N];  /* set on a frame's last descriptor */
static unsigned tx_head;            /* oldest descriptor not reclaimed */
static unsigned tx_next;            /* next free descriptor */
static unsigned tx_used;

static volatile int work_pending;
static volatile uint32_t irq_causes;

#if !NO_SYS
static struct nr_mutex tx_lock;
#define RX_LOCK(irq)   ((irq) = board_irq_save())
#define RX_UNLOCK(irq) board_irq_restore(irq)
#define TX_LOCK()      ((void)nr_mutex_lock(&tx_lock, NR_FOREVER))
#define TX_UNLOCK()    ((void)nr_mutex_unlock(&tx_lock))
#else
/* NO_SYS 1: the main loop is the driver's only user. */
#define RX_LOCK(irq)   ((void)(irq))
#define RX_UNLOCK(irq) ((void)(irq))
#define TX_LOCK()      ((void)0)
#define TX_UNLOCK()    ((void)0)
#endif

void nic_irq_handler(void)
{
  uint32_t icr = e1000_rd(E1000_ICR);

  e1000_stats.irqs++;
  if (icr & IRQ_CAUSES) {
    irq_causes |= icr;
    work_pending = 1;
    e1000_wr(E1000_IMC, 0xFFFFFFFFu); /* until nic_poll() has done the work */
#if !NO_SYS
    nic_rx_wake_from_isr();
#endif
  }
}

int nic_work_pending(void)
{
  return work_pending;
}

/* Posts returned buffers to the ring; the device owns [RDH, RDT), so at most
   RX_N - 1 descriptors can be posted at once. */
static void rx_refill(void)
{
  unsigned start = rx_tail;

  while (rx_free_count > 0 && (rx_tail + 1u) % RX_N != rx_next) {
    uint16_t b = rx_free[--rx_free_count];
    volatile struct e1000_rx_desc *d = &rx_ring[rx_tail];

    d->addr = (uint32_t)(uintptr_t)(rx_bufs[b].mem + ETH_PAD_SIZE);
    d->status = 0;
    rx_slot_buf[rx_tail] = b;
    rx_tail = (rx_tail + 1u) % RX_N;
  }
  if (rx_tail != start) {
    x86_barrier();
    e1000_wr(E1000_RDT, rx_tail);
  }
}

/* lwIP is done with a received frame: its buffer goes back to the ring. */
static void rx_pbuf_free(struct pbuf *p)
{
  struct rx_buffer *rb = (struct rx_buffer *)(void *)p;
  uint32_t irq = 0;

  RX_LOCK(irq);
  rx_free[rx_free_count++] = (uint16_t)(rb - rx_bufs);
  rx_refill();
  RX_UNLOCK(irq);
}

static void rx_take(struct netif *netif)
{
  for (unsigned n = 0; n < RX_BATCH; n++) {
    volatile struct e1000_rx_desc *d = &rx_ring[rx_next];
    uint8_t status;
    unsigned len;
    uint16_t b;
    struct pbuf *p;
    uint32_t irq = 0;

    /* Masked: a descriptor at rx_tail still shows its last frame's DD until
       a buffer is posted to it, which another thread may be doing. */
    RX_LOCK(irq);
    status = d->status;
    len = d->length;
    if (rx_next == rx_tail || !(status & RXD_STAT_DD)) {
      RX_UNLOCK(irq);
      return;
    }
    x86_barrier();
    b = rx_slot_buf[rx_next];
    rx_next = (rx_next + 1u) % RX_N;
    RX_UNLOCK(irq);
    if (!(status & RXD_STAT_EOP) || (d->errors & RXD_ERR_MASK) || len < SIZEOF_ETH_HDR - ETH_PAD_SIZE ||
        len > E1000_FRAME_MAX) {
      LINK_STATS_INC(link.err);
      RX_LOCK(irq);
      rx_free[rx_free_count++] = b;
      rx_refill();
      RX_UNLOCK(irq);
      continue;
    }
    rx_bufs[b].pc.custom_free_function = rx_pbuf_free;
    p = pbuf_alloced_custom(PBUF_RAW, (u16_t)(ETH_PAD_SIZE + len), PBUF_REF, &rx_bufs[b].pc,
                            rx_bufs[b].mem, E1000_BUF_SIZE);
    e1000_stats.rx_frames++;
    e1000_stats.rx_bytes += len;
    LINK_STATS_INC(link.recv);
    if (netif->input(p, netif) != ERR_OK) {
      pbuf_free(p);
    }
  }
  work_pending = 1; /* batch used up: come back from the main loop */
}

static void tx_reclaim(void)
{
  while (tx_used > 0 && (tx_ring[tx_head].status & TXD_STAT_DD)) {
    struct pbuf *p = tx_pbuf[tx_head];

    x86_barrier();
    if (p != NULL) {
      tx_pbuf[tx_head] = NULL;
      pbuf_free(p);
    }
    tx_head = (tx_head + 1u) % TX_N;
    tx_used--;
  }
}

void nic_poll(struct netif *netif)
{
  if (work_pending) {
    uint32_t irq = board_irq_save();

    work_pending = 0;
    irq_causes = 0;
    board_irq_restore(irq);
    rx_take(netif);
    TX_LOCK();
    tx_reclaim();
    TX_UNLOCK();
    if (!work_pending) {
      /* Causes raised while masked are still in ICR: unmasking re-raises
         the interrupt at once, so no frame is left waiting. */
      e1000_wr(E1000_IMS, IRQ_CAUSES);
    }
  }
  e1000_link_poll(netif);
}

/* Descriptors a payload needs: one, two when it crosses a page boundary. */
static unsigned tx_pieces(const uint8_t *payload, unsigned len)
{
  uintptr_t a = (uintptr_t)payload;

  return ((a & ~(uintptr_t)(PAGE_SIZE - 1u)) != ((a + len - 1u) & ~(uintptr_t)(PAGE_SIZE - 1u))) ? 2u : 1u;
}

static void tx_put(const uint8_t *data, unsigned len, int last)
{
  volatile struct e1000_tx_desc *d = &tx_ring[tx_next];

  d->addr = (uint32_t)(uintptr_t)data;
  d->length = (uint16_t)len;
  d->cmd = (uint8_t)(TXD_CMD_IFCS | TXD_CMD_RS | (last ? TXD_CMD_EOP : 0u));
  d->status = 0;
  tx_next = (tx_next + 1u) % TX_N;
  tx_used++;
}

static err_t nvnetdrv_linkoutput(struct netif *netif, struct pbuf *p)
{
  unsigned need = 0;
  unsigned offset = ETH_PAD_SIZE; /* the padding is not sent */
  unsigned last_slot;
  const struct pbuf *q;

  LWIP_UNUSED_ARG(netif);
  for (q = p; q != NULL; q = q->next) {
    unsigned skip = offset < q->len ? offset : q->len;

    if (q->len > skip) {
      need += tx_pieces((const uint8_t *)q->payload + skip, q->len - skip);
    }
    offset -= skip;
  }
  if (need == 0 || need > TX_N - 1u) {
    LINK_STATS_INC(link.drop);
    return ERR_IF;
  }
  TX_LOCK();
  tx_reclaim();
  if (TX_N - 1u - tx_used < need) {
    /* nxdk waits on a semaphore for free descriptors; nothing else can run
       in this NO_SYS main loop, so wait for the device here. (NO_SYS 0 spins
       too, holding the TX lock: QEMU's e1000 sends a frame as its tail is
       written, so the ring is never full for long.) */
    e1000_stats.tx_busy++;
    for (uint32_t i = 0; i < TX_SPIN_LIMIT && TX_N - 1u - tx_used < need; i++) {
      tx_reclaim();
    }
    if (TX_N - 1u - tx_used < need) {
      TX_UNLOCK();
      LINK_STATS_INC(link.drop);
      return ERR_IF;
    }
  }

  offset = ETH_PAD_SIZE;
  last_slot = tx_next;
  for (q = p; q != NULL; q = q->next) {
    unsigned skip = offset < q->len ? offset : q->len;
    const uint8_t *data = (const uint8_t *)q->payload + skip;
    unsigned len = q->len - skip;
    int last_pbuf = q->next == NULL;

    offset -= skip;
    if (len == 0) {
      continue;
    }
    if (tx_pieces(data, len) == 2u) {
      unsigned first = PAGE_SIZE - ((uintptr_t)data & (PAGE_SIZE - 1u));

      tx_put(data, first, 0);
      data += first;
      len -= first;
    }
    last_slot = tx_next;
    tx_put(data, len, last_pbuf);
  }
  /* A chain whose last pbufs are empty still needs an end of packet. */
  tx_ring[last_slot].cmd |= TXD_CMD_EOP;
  pbuf_ref(p);
  tx_pbuf[last_slot] = p;
  x86_barrier();
  e1000_wr(E1000_TDT, tx_next);
  TX_UNLOCK();
  e1000_stats.tx_frames++;
  e1000_stats.tx_bytes += p->tot_len - ETH_PAD_SIZE;
  LINK_STATS_INC(link.xmit);
  return ERR_OK;
}

/* RX buffers lwIP still holds (custom pbufs: no pool counts them) and TX
   frames whose pbufs wait for the device to report them sent. */
unsigned nic_buffers_in_use(struct nic_buffer_use *out, unsigned max)
{
  unsigned posted = (rx_tail + RX_N - rx_next) % RX_N;

  if (max < 2u) {
    return 0;
  }
  out[0].name = "rx_lent";
  out[0].used = RX_N - rx_free_count - posted;
  out[1].name = "tx_descriptors";
  out[1].used = tx_used;
  return 2;
}

err_t nic_netif_init(struct netif *netif)
{
  static const char design[] = "nvnetdrv rx=" NV_STR(NVNETDRV_RX_RING_SIZE)
                               " tx=" NV_STR(NVNETDRV_TX_RING_SIZE) " zero-copy irq";

  if (!e1000_probe(netif, design)) {
    return ERR_IF;
  }
  netif->linkoutput = nvnetdrv_linkoutput;
#if !NO_SYS
  nr_mutex_init(&tx_lock, 0);
#endif
  for (unsigned i = 0; i < RX_N; i++) {
    rx_bufs[i].mem = rx_mem[i];
    rx_bufs[i].pc.custom_free_function = rx_pbuf_free;
    rx_free[i] = (uint16_t)(RX_N - 1u - i);
  }
  rx_free_count = RX_N;
  rx_next = 0;
  rx_tail = 0;
  /* Post buffers before the receiver is on, without an RDT write per
     buffer: e1000_start() writes the final RDT. */
  while (rx_free_count > 0 && (rx_tail + 1u) % RX_N != rx_next) {
    uint16_t b = rx_free[--rx_free_count];

    rx_ring[rx_tail].addr = (uint32_t)(uintptr_t)(rx_bufs[b].mem + ETH_PAD_SIZE);
    rx_ring[rx_tail].status = 0;
    rx_slot_buf[rx_tail] = b;
    rx_tail = (rx_tail + 1u) % RX_N;
  }
  e1000_start((uint32_t)(uintptr_t)rx_ring, RX_N, rx_tail, (uint32_t)(uintptr_t)tx_ring, TX_N, IRQ_CAUSES);
  return ERR_OK;
}

#endif
