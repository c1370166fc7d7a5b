/*
 * "stats": lwIP's counters (those the profile compiled in) and the NIC
 * driver's, one key=value line each.
 */
#include "lwip/opt.h"
#include "lwip/memp.h"
#include "lwip/stats.h"

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

#endif /* LWIP_STATS */

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

void cmd_stats(int argc, char **argv)
{
  LWIP_UNUSED_ARG(argc);
  LWIP_UNUSED_ARG(argv);
#if LWIP_STATS
  print_lwip_stats();
#endif
  print_nic_stats();
}
