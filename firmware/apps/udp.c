/*
 * UDP saturation, the board's side of the udp-rx and udp-tx workloads.
 *
 * "udp sink <port>" counts the datagrams of an iperf2 UDP client (iperf -c
 * -u) arriving on <port>; "udp report" prints the counts so far, "udp stop"
 * prints them and closes the sink:
 *   UDP dir=rx datagrams=<n> bytes=<n> ms=<n> seq_max=<n> ooo=<n> fin=<0|1>
 * bytes and datagrams count the data (iperf's sequence number >= 0), ms is
 * from the first datagram to the last, seq_max the highest sequence number
 * seen, ooo the datagrams that came after a higher one, fin whether the
 * client's end datagram (a negative sequence number) arrived.
 *
 * "udp send <ip> <port> -t <seconds> [-b <bit/s>] [-l <bytes>]" sends
 * datagrams in iperf2's UDP format (sequence number, then the send time as
 * seconds and microseconds, network order; the rest zero, so an iperf2
 * server reads no options from it) as fast as lwIP takes them, or at the
 * given rate, for <seconds> of the board's time (from when ARP has resolved
 * the peer: lwIP keeps one datagram waiting for ARP and frees the others
 * without an error); then the end datagram, again every 250 ms until the
 * server answers (at most 10 times), as iperf's client does, so that
 * `iperf -s -u` accounts the lost ones. Then
 *   UDP dir=tx datagrams=<n> bytes=<n> ms=<n> refused=<n> acked=<0|1>
 * datagrams counts those udp_sendto() took (each got the next sequence
 * number); refused the attempts it turned down (ERR_MEM, a full NIC ring:
 * tried again on the next pass, with the same number).
 */
#include <string.h>

#include "lwip/pbuf.h"
#include "lwip/sys.h"
#include "lwip/udp.h"
#include "netif/etharp.h"

#include "nr_printf.h"
#include "apps.h"
#include "shell.h"

#define UDP_HDR_LEN   16u   /* iperf2's UDP_datagram: id, tv_sec, tv_usec, id2 */
#define UDP_LEN_MAX   1472u /* one Ethernet frame: 1500 - 20 (IP) - 8 (UDP) */
#define UDP_LEN_DEF   1470u /* iperf2's default UDP length */
#define FIN_TRIES     10u
#define FIN_GAP_MS    250u
#define ARP_GAP_MS    100u
#define ARP_TRIES     50u
#define BURST         8u    /* datagrams per main-loop pass, so the shell and timers still run */

static const uint8_t zeros[UDP_LEN_MAX];

static struct {
  struct udp_pcb *pcb;
  uint32_t datagrams, bytes, t_first, t_last, seq_max, ooo;
  int any, fin;
} sink;

static struct {
  struct udp_pcb *pcb;
  ip_addr_t to;
  u16_t port, len;
  uint32_t bps, duration_ms, t_start, seq, bytes, refused, fins, t_fin, arps, t_arp;
  int acked, resolved;
} src;

static uint32_t get_be32(const uint8_t *p)
{
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

static void sink_recv(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port)
{
  uint8_t hdr[4];
  int32_t id;

  LWIP_UNUSED_ARG(arg);
  LWIP_UNUSED_ARG(pcb);
  LWIP_UNUSED_ARG(addr);
  LWIP_UNUSED_ARG(port);
  if (pbuf_copy_partial(p, hdr, sizeof(hdr), 0) == sizeof(hdr)) {
    id = (int32_t)get_be32(hdr);
    if (id < 0) {
      sink.fin = 1;
    } else {
      uint32_t now = sys_now();
      if (!sink.any) {
        sink.t_first = now;
        sink.any = 1;
      } else if ((uint32_t)id < sink.seq_max) {
        sink.ooo++;
      }
      sink.seq_max = LWIP_MAX(sink.seq_max, (uint32_t)id);
      sink.t_last = now;
      sink.datagrams++;
      sink.bytes += p->tot_len;
    }
  }
  pbuf_free(p);
}

static void sink_start(uint32_t port)
{
  if (sink.pcb != NULL) {
    udp_remove(sink.pcb);
  }
  memset(&sink, 0, sizeof(sink));
  sink.pcb = udp_new();
  if (sink.pcb == NULL || udp_bind(sink.pcb, IP_ADDR_ANY, (u16_t)port) != ERR_OK) {
    nr_printf("ERROR: cannot bind UDP port %lu\n", (unsigned long)port);
    if (sink.pcb != NULL) {
      udp_remove(sink.pcb);
      sink.pcb = NULL;
    }
    return;
  }
  udp_recv(sink.pcb, sink_recv, NULL);
  nr_printf("udp sink on port %lu\n", (unsigned long)port);
}

static void sink_report(int stop)
{
  if (sink.pcb == NULL) {
    nr_printf("ERROR: no udp sink running\n");
    return;
  }
  if (stop) {
    udp_remove(sink.pcb);
    sink.pcb = NULL;
  }
  nr_printf("UDP dir=rx datagrams=%lu bytes=%lu ms=%lu seq_max=%lu ooo=%lu fin=%d\n",
            (unsigned long)sink.datagrams, (unsigned long)sink.bytes,
            (unsigned long)(sink.t_last - sink.t_first), (unsigned long)sink.seq_max,
            (unsigned long)sink.ooo, sink.fin);
}

/* The server's answer to the end datagram: its report; only its arrival matters here. */
static void src_recv(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port)
{
  LWIP_UNUSED_ARG(arg);
  LWIP_UNUSED_ARG(pcb);
  LWIP_UNUSED_ARG(addr);
  LWIP_UNUSED_ARG(port);
  src.acked = 1;
  pbuf_free(p);
}

/* One datagram: a RAM pbuf for the header chained to the shared zeros (no copy of the payload). */
static err_t src_send_one(int32_t id, uint32_t now)
{
  struct pbuf *head = pbuf_alloc(PBUF_TRANSPORT, UDP_HDR_LEN, PBUF_RAM);
  struct pbuf *rest;
  uint8_t *h;
  err_t err;

  if (head == NULL) {
    return ERR_MEM;
  }
  rest = pbuf_alloc(PBUF_RAW, (u16_t)(src.len - UDP_HDR_LEN), PBUF_ROM);
  if (rest == NULL) {
    pbuf_free(head);
    return ERR_MEM;
  }
  rest->payload = (void *)zeros;
  h = (uint8_t *)head->payload;
  put_be32(h, (uint32_t)id);
  put_be32(h + 4, now / 1000u);
  put_be32(h + 8, (now % 1000u) * 1000u);
  put_be32(h + 12, 0);
  pbuf_cat(head, rest);
  err = udp_sendto(src.pcb, head, &src.to, src.port);
  pbuf_free(head);
  return err;
}

/* Whether the rate allows another datagram now: bytes sent so far against bps * elapsed. */
static int src_rate_allows(uint32_t elapsed_ms)
{
  return src.bps == 0 ||
         (uint64_t)src.bytes * 8u * 1000u < (uint64_t)src.bps * elapsed_ms + (uint64_t)src.len * 8u * 1000u;
}

static void src_finish(void)
{
  uint32_t ms = src.t_fin - src.t_start;

  udp_remove(src.pcb);
  src.pcb = NULL;
  shell_async("UDP dir=tx datagrams=%lu bytes=%lu ms=%lu refused=%lu acked=%d\n", (unsigned long)src.seq,
              (unsigned long)src.bytes, (unsigned long)ms, (unsigned long)src.refused, src.acked);
}

/* Whether the peer's MAC address is known; asks for it every ARP_GAP_MS until it is. */
static int src_resolved(uint32_t now)
{
  struct eth_addr *mac;
  const ip4_addr_t *ip;

  if (etharp_find_addr(&app_netif, ip_2_ip4(&src.to), &mac, &ip) >= 0) {
    return 1;
  }
  if (src.arps == 0 || now - src.t_arp >= ARP_GAP_MS) {
    etharp_request(&app_netif, ip_2_ip4(&src.to));
    src.arps++;
    src.t_arp = now;
  }
  return 0;
}

static void src_poll(void)
{
  uint32_t now, elapsed;

  if (src.pcb == NULL) {
    return;
  }
  now = sys_now();
  if (!src.resolved) {
    if (src_resolved(now)) {
      src.resolved = 1;
      src.t_start = now;
    } else if (src.arps > ARP_TRIES) {
      udp_remove(src.pcb);
      src.pcb = NULL;
      shell_async("UDP dir=tx error=no_arp_answer\n");
    }
    return;
  }
  elapsed = now - src.t_start;
  if (src.fins == 0 && elapsed < src.duration_ms) {
    for (unsigned i = 0; i < BURST && src_rate_allows(elapsed); i++) {
      if (src_send_one((int32_t)src.seq, now) != ERR_OK) {
        src.refused++;
        return;
      }
      src.seq++;
      src.bytes += src.len;
    }
    return;
  }
  if (src.fins == 0) {
    src.t_fin = now;
  }
  if (src.acked || src.fins >= FIN_TRIES) {
    src_finish();
  } else if (src.fins == 0 || now - src.t_fin >= src.fins * FIN_GAP_MS) {
    if (src_send_one(-(int32_t)src.seq, now) == ERR_OK) {
      src.fins++;
    }
  }
}

/* Parses "<ip> <port> -t <seconds> [-b <bit/s>] [-l <bytes>]" (argv[0] "udp", argv[1] "send"). */
static int src_parse(int argc, char **argv)
{
  uint32_t port, seconds = 0, len = UDP_LEN_DEF, bps = 0;
  ip4_addr_t ip;

  if (argc < 4 || !shell_parse_ip4(argv[2], &ip) || !shell_parse_u32(argv[3], &port) || port == 0 ||
      port > 0xFFFFu) {
    return 0;
  }
  for (int i = 4; i < argc; i += 2) {
    uint32_t v;
    if (i + 1 >= argc || !shell_parse_u32(argv[i + 1], &v)) {
      return 0;
    }
    if (strcmp(argv[i], "-t") == 0 && v > 0 && v <= 86400u) {
      seconds = v;
    } else if (strcmp(argv[i], "-b") == 0) {
      bps = v;
    } else if (strcmp(argv[i], "-l") == 0 && v >= UDP_HDR_LEN + 4u && v <= UDP_LEN_MAX) {
      len = v;
    } else {
      return 0;
    }
  }
  if (seconds == 0) {
    return 0;
  }
  memset(&src, 0, sizeof(src));
  ip_addr_copy_from_ip4(src.to, ip);
  src.port = (u16_t)port;
  src.len = (u16_t)len;
  src.bps = bps;
  src.duration_ms = seconds * 1000u;
  return 1;
}

static void src_start(int argc, char **argv)
{
  if (src.pcb != NULL) {
    nr_printf("ERROR: udp send already running\n");
    return;
  }
  if (!src_parse(argc, argv)) {
    nr_printf("ERROR: usage: udp send <ip> <port> -t <seconds> [-b <bit/s>] [-l <bytes>]\n");
    return;
  }
  src.pcb = udp_new();
  if (src.pcb == NULL || udp_bind(src.pcb, IP_ADDR_ANY, 0) != ERR_OK) {
    nr_printf("UDP dir=tx error=no_pcb\n");
    if (src.pcb != NULL) {
      udp_remove(src.pcb);
      src.pcb = NULL;
    }
    return;
  }
  udp_recv(src.pcb, src_recv, NULL);
  src.t_start = sys_now();
}

static void cmd_udp(int argc, char **argv)
{
  uint32_t port;

  if (argc == 3 && strcmp(argv[1], "sink") == 0 && shell_parse_u32(argv[2], &port) && port > 0 &&
      port <= 0xFFFFu) {
    sink_start(port);
  } else if (argc == 2 && strcmp(argv[1], "report") == 0) {
    sink_report(0);
  } else if (argc == 2 && strcmp(argv[1], "stop") == 0) {
    sink_report(1);
  } else if (argc >= 4 && strcmp(argv[1], "send") == 0) {
    src_start(argc, argv);
  } else {
    nr_printf("ERROR: usage: udp sink <port> | udp report | udp stop | "
              "udp send <ip> <port> -t <seconds> [-b <bit/s>] [-l <bytes>]\n");
  }
}

const struct nr_app nr_app_udp = {
  "udp", "udp",
  "udp sink <port> | udp report | udp stop | udp send <ip> <port> -t <s> [-b <bit/s>] [-l <bytes>] - UDP",
  cmd_udp, NULL, src_poll,
};
