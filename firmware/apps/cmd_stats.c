/*
 * "stats [used | reap]": lwIP's counters (those the profile compiled in) and
 * the NIC driver's, one key=value line each.
 *
 *   stats       every counter, lwIP's heap as blocks (heap.*: nr_heap.h),
 *               then the holders `stats used` lists
 *   stats used  only what is in use now, for the harness's leak check
 *               (harness/rig/leaks.py), which reads it before a workload and
 *               after its connections closed: the board's clock (board.ms),
 *               heap bytes (mem.used), every memp pool's elements
 *               (memp.NAME.used), the driver's own buffers (nic.buf.NAME),
 *               the TCP PCBs by state (tcp.pcb.STATE), how long a closing
 *               connection still waits to retransmit its FIN (tcp.retx.*)
 *               and the ARP cache's entries (etharp.entries)
 *   stats reap  first frees the PCBs in TIME_WAIT (tcp.pcb.reaped=N), as
 *               their expiry after 2 * TCP_MSL would, then as `stats used`
 *
 * Reaping is what lets the leak check end within a second instead of the
 * 120 s (lwIP's default TCP_MSL) a closed connection's PCB stays in
 * TIME_WAIT: tcp_abort() on a TIME_WAIT PCB only unlinks and frees it (no
 * RST, no callback), exactly what tcp_slowtmr() does when it expires.
 */
#include <string.h>

#include "lwip/opt.h"
#include "lwip/etharp.h"
#include "lwip/memp.h"
#include "lwip/stats.h"
#include "lwip/sys.h"
#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h" /* the PCB lists, to count PCBs by state */

#include "nr_heap.h"
#include "nr_nic.h"
#include "nr_printf.h"
#include "apps.h"

#if LWIP_STATS

static void print_proto(const char *p, const struct stats_proto *s)
{
  nr_printf("%s.xmit=%lu\n%s.recv=%lu\n%s.fw=%lu\n%s.drop=%lu\n",
            p, (unsigned long)s->xmit, p, (unsigned long)s->recv,
            p, (unsigned long)s->fw, p, (unsigned long)s->drop);
  nr_printf("%s.chkerr=%lu\n%s.lenerr=%lu\n%s.memerr=%lu\n%s.rterr=%lu\n",
            p, (unsigned long)s->chkerr, p, (unsigned long)s->lenerr,
            p, (unsigned long)s->memerr, p, (unsigned long)s->rterr);
  nr_printf("%s.proterr=%lu\n%s.opterr=%lu\n%s.err=%lu\n%s.cachehit=%lu\n",
            p, (unsigned long)s->proterr, p, (unsigned long)s->opterr,
            p, (unsigned long)s->err, p, (unsigned long)s->cachehit);
}

/* Keys are "<group><name>.<field>", e.g. "mem" + "" or "memp." + "TCP_SEG". */
static void print_mem(const char *g, const char *n, const struct stats_mem *s)
{
  nr_printf("%s%s.avail=%lu\n%s%s.used=%lu\n%s%s.max=%lu\n%s%s.err=%lu\n%s%s.illegal=%lu\n",
            g, n, (unsigned long)s->avail, g, n, (unsigned long)s->used,
            g, n, (unsigned long)s->max, g, n, (unsigned long)s->err,
            g, n, (unsigned long)s->illegal);
}

#if MEMP_STATS
/* Pool names in memp_t order, from lwIP's own pool list. */
static const char *const memp_names[] = {
#define LWIP_MEMPOOL(name, num, size, desc) #name,
#include "lwip/priv/memp_std.h"
};
#endif

static void print_lwip_stats(void)
{
#if LINK_STATS
  print_proto("link", &lwip_stats.link);
#endif
#if ETHARP_STATS
  print_proto("etharp", &lwip_stats.etharp);
#endif
#if IP_STATS
  print_proto("ip", &lwip_stats.ip);
#endif
#if ICMP_STATS
  print_proto("icmp", &lwip_stats.icmp);
#endif
#if UDP_STATS
  print_proto("udp", &lwip_stats.udp);
#endif
#if TCP_STATS
  print_proto("tcp", &lwip_stats.tcp);
#endif
#if MEM_STATS
  print_mem("mem", "", &lwip_stats.mem);
#endif
#if MEMP_STATS
  for (size_t i = 0; i < MEMP_MAX; i++) {
    print_mem("memp.", memp_names[i], lwip_stats.memp[i]);
  }
#endif
}

/* Heap bytes and pool elements in use: what a run must give back. */
static void print_used(void)
{
#if MEM_STATS
  nr_printf("mem.used=%lu\n", (unsigned long)lwip_stats.mem.used);
#endif
#if MEMP_STATS
  for (size_t i = 0; i < MEMP_MAX; i++) {
    nr_printf("memp.%s.used=%lu\n", memp_names[i], (unsigned long)lwip_stats.memp[i]->used);
  }
#endif
}

#endif /* LWIP_STATS */

/* lwIP's heap now: its size, what is free in all and in its largest block;
   nothing where this build has no heap of lwIP's own to walk. */
static void print_heap(void)
{
  struct nr_heap_layout h;

  if (nr_heap_layout(&h) != 0) {
    return;
  }
  nr_printf("heap.size=%lu\nheap.header=%lu\nheap.free=%lu\nheap.largest_free=%lu\n"
            "heap.blocks_used=%lu\nheap.blocks_free=%lu\n",
            (unsigned long)h.size, (unsigned long)h.header, (unsigned long)h.free_bytes,
            (unsigned long)h.largest_free, (unsigned long)h.used_blocks, (unsigned long)h.free_blocks);
}

static void print_nic_stats(void)
{
  const struct nic_stats *s = nic_get_stats();

  nr_printf("nic.rx_frames=%lu\nnic.rx_bytes=%lu\nnic.tx_frames=%lu\nnic.tx_bytes=%lu\n",
            (unsigned long)s->rx_frames, (unsigned long)s->rx_bytes,
            (unsigned long)s->tx_frames, (unsigned long)s->tx_bytes);
  nr_printf("nic.rx_dropped_fifo=%lu\nnic.rx_no_pbuf=%lu\nnic.tx_busy=%lu\nnic.irqs=%lu\n",
            (unsigned long)s->rx_dropped_fifo, (unsigned long)s->rx_no_pbuf,
            (unsigned long)s->tx_busy, (unsigned long)s->irqs);
}

/* A driver whose only buffers are lwIP's pbufs (counted in the pools
   already) holds none of its own and need not define this. */
__attribute__((weak)) unsigned nic_buffers_in_use(struct nic_buffer_use *out, unsigned max)
{
  LWIP_UNUSED_ARG(out);
  LWIP_UNUSED_ARG(max);
  return 0;
}

static void print_nic_buffers(void)
{
  struct nic_buffer_use use[NIC_BUFFER_KINDS_MAX];
  unsigned n = nic_buffers_in_use(use, NIC_BUFFER_KINDS_MAX);

  for (unsigned i = 0; i < n && i < NIC_BUFFER_KINDS_MAX; i++) {
    nr_printf("nic.buf.%s=%lu\n", use[i].name, (unsigned long)use[i].used);
  }
}

#if LWIP_TCP
/* enum tcp_state's names, in its order (lwIP names them only in debug builds). */
static const char *const tcp_state_names[] = {
  "CLOSED", "LISTEN", "SYN_SENT", "SYN_RCVD", "ESTABLISHED", "FIN_WAIT_1",
  "FIN_WAIT_2", "CLOSE_WAIT", "CLOSING", "LAST_ACK", "TIME_WAIT"
};
#define TCP_STATES (sizeof(tcp_state_names) / sizeof(tcp_state_names[0]))

static void count_pcbs(const struct tcp_pcb *pcb, unsigned long *counts)
{
  for (; pcb != NULL; pcb = pcb->next) {
    if ((unsigned)pcb->state < TCP_STATES) {
      counts[pcb->state]++;
    }
  }
}

/* A connection the board closed (FIN_WAIT_1, CLOSING, LAST_ACK) whose FIN,
   or the peer's ACK of it, a lossy link dropped ends only when lwIP's RTO
   sends the FIN again: a second or more of the board's time, doubling with
   each try. tcp.retx.ms is the longest such a connection still waits for
   its next retransmission (board ms), tcp.retx.count the most tries one has
   made, so the leak check waits for the retransmission instead of calling
   a connection that is still closing a leak. Printed only when one waits. */
static int is_closing(enum tcp_state state)
{
  return state == FIN_WAIT_1 || state == CLOSING || state == LAST_ACK;
}

static void print_closing_retransmission(void)
{
  long due_ms = -1;
  unsigned tries = 0;

  for (const struct tcp_pcb *pcb = tcp_active_pcbs; pcb != NULL; pcb = pcb->next) {
    if (!is_closing(pcb->state) || pcb->unacked == NULL || pcb->rtime < 0) {
      continue;
    }
    long ms = (long)(pcb->rto - pcb->rtime) * TCP_SLOW_INTERVAL;
    ms = ms < 0 ? 0 : ms; /* due at the timer's next tick */
    due_ms = ms > due_ms ? ms : due_ms;
    tries = pcb->nrtx > tries ? pcb->nrtx : tries;
  }
  if (due_ms >= 0) {
    nr_printf("tcp.retx.ms=%ld\ntcp.retx.count=%u\n", due_ms, tries);
  }
}

/* Every PCB on lwIP's lists, by state (bound ones are CLOSED); a PCB that
   tcp_new() made and nobody bound is on no list, only in memp.TCP_PCB. */
static void print_pcbs(void)
{
  unsigned long counts[TCP_STATES];

  memset(counts, 0, sizeof(counts));
  count_pcbs(tcp_bound_pcbs, counts);
  for (const struct tcp_pcb_listen *l = tcp_listen_pcbs.listen_pcbs; l != NULL; l = l->next) {
    counts[LISTEN]++;
  }
  count_pcbs(tcp_active_pcbs, counts);
  count_pcbs(tcp_tw_pcbs, counts);
  for (size_t i = 0; i < TCP_STATES; i++) {
    nr_printf("tcp.pcb.%s=%lu\n", tcp_state_names[i], counts[i]);
  }
  print_closing_retransmission();
}

static void reap_time_wait(void)
{
  unsigned long reaped = 0;

  while (tcp_tw_pcbs != NULL) {
    tcp_abort(tcp_tw_pcbs); /* unlinks it from tcp_tw_pcbs */
    reaped++;
  }
  nr_printf("tcp.pcb.reaped=%lu\n", reaped);
}
#endif /* LWIP_TCP */

#if LWIP_ARP && LWIP_IPV4
static void print_arp_entries(void)
{
  unsigned long n = 0;
  ip4_addr_t *ip;
  struct netif *netif;
  struct eth_addr *eth;

  for (size_t i = 0; i < ARP_TABLE_SIZE; i++) {
    n += (unsigned long)etharp_get_entry(i, &ip, &netif, &eth);
  }
  nr_printf("etharp.entries=%lu\n", n);
}
#endif

/* What holds memory now besides the counters: the driver's buffers, the
   PCBs and the ARP entries. */
static void print_holders(void)
{
  print_nic_buffers();
#if LWIP_TCP
  print_pcbs();
#endif
#if LWIP_ARP && LWIP_IPV4
  print_arp_entries();
#endif
}

/* Stamped with the board's clock, so the harness can bound its wait in the
   board's time (device time: however slowly the host runs it). */
static void print_in_use(void)
{
  nr_printf("board.ms=%lu\n", (unsigned long)sys_now());
#if LWIP_STATS
  print_used();
#endif
  print_holders();
}

void cmd_stats(int argc, char **argv)
{
  if (argc == 2 && strcmp(argv[1], "reap") == 0) {
#if LWIP_TCP
    reap_time_wait();
#endif
    print_in_use();
    return;
  }
  if (argc == 2 && strcmp(argv[1], "used") == 0) {
    print_in_use();
    return;
  }
  if (argc != 1) {
    nr_printf("ERROR: usage: stats [used | reap]\n");
    return;
  }
#if LWIP_STATS
  print_lwip_stats();
#endif
  print_heap();
  print_nic_stats();
  print_holders();
}
