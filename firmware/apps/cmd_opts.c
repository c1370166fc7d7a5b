/*
 * "opts": the lwIP options as the compiler saw them for this build, one
 * NAME=VALUE line each (decimal), then FORCED= with the profile options that
 * port/lwipopts.h had to override.
 */
#include "lwip/opt.h"
#include "lwip/pbuf.h"
#include "lwip/priv/tcp_priv.h"

#include "nr_printf.h"
#include "apps.h"

#if LWIP_WND_SCALE
#define OPT_TCP_RCV_SCALE TCP_RCV_SCALE
#else
#define OPT_TCP_RCV_SCALE 0
#endif

struct option_value {
  const char *name;
  unsigned long value;
};

#define OPT(name) { #name, (unsigned long)(name) }

static const struct option_value options[] = {
  OPT(TCP_MSS),
  OPT(TCP_WND),
  OPT(TCP_SND_BUF),
  OPT(TCP_SND_QUEUELEN),
  OPT(MEM_SIZE),
  OPT(PBUF_POOL_SIZE),
  OPT(PBUF_POOL_BUFSIZE),
  OPT(MEMP_NUM_PBUF),
  OPT(MEMP_NUM_TCP_SEG),
  OPT(MEMP_NUM_TCP_PCB),
  OPT(LWIP_WND_SCALE),
  { "TCP_RCV_SCALE", (unsigned long)OPT_TCP_RCV_SCALE },
  OPT(TCP_WND_UPDATE_THRESHOLD),
  OPT(TCP_QUEUE_OOSEQ),
  OPT(TCP_OVERSIZE),
  OPT(LWIP_TCP_SACK_OUT),
  OPT(LWIP_TCP_TIMESTAMPS),
  OPT(TCP_TMR_INTERVAL),
  OPT(TCP_MAXRTX),
  OPT(TCP_SYNMAXRTX),
  OPT(LWIP_TCP_KEEPALIVE),
  OPT(TCP_SNDLOWAT),
  OPT(TCP_SNDQUEUELOWAT),
  OPT(MEMP_NUM_TCP_PCB_LISTEN),
  OPT(NO_SYS),
  OPT(SYS_LIGHTWEIGHT_PROT),
  OPT(CHECKSUM_GEN_TCP),
  OPT(CHECKSUM_CHECK_TCP),
  OPT(LWIP_CHECKSUM_ON_COPY),
  OPT(ETH_PAD_SIZE),
  OPT(MEM_ALIGNMENT),
  OPT(LWIP_STATS),
#if !NO_SYS
  /* NO_SYS 0 only (a board with the kernel): the thread-based APIs and what
     sizes lwIP's threads and mailboxes. */
  OPT(LWIP_SOCKET),
  OPT(LWIP_NETCONN),
  OPT(LWIP_NETIF_API),
  OPT(LWIP_TCPIP_CORE_LOCKING),
  OPT(TCPIP_MBOX_SIZE),
  OPT(TCPIP_THREAD_PRIO),
  OPT(TCPIP_THREAD_STACKSIZE),
  OPT(DEFAULT_THREAD_PRIO),
  OPT(DEFAULT_THREAD_STACKSIZE),
  OPT(DEFAULT_TCP_RECVMBOX_SIZE),
  OPT(DEFAULT_UDP_RECVMBOX_SIZE),
  OPT(DEFAULT_ACCEPTMBOX_SIZE),
  OPT(NR_NIC_RX_THREAD),
  OPT(NR_NIC_RX_THREAD_PRIO),
  OPT(NR_APP_API),
#endif
};

static const char *const forced[] = {
#ifdef NETREPRO_FORCED_NO_SYS
  "NO_SYS",
#endif
#ifdef NETREPRO_FORCED_LWIP_SOCKET
  "LWIP_SOCKET",
#endif
#ifdef NETREPRO_FORCED_LWIP_NETCONN
  "LWIP_NETCONN",
#endif
#ifdef NETREPRO_FORCED_LWIP_NETIF_API
  "LWIP_NETIF_API",
#endif
#ifdef NETREPRO_FORCED_PPP_SUPPORT
  "PPP_SUPPORT",
#endif
#ifdef NETREPRO_FORCED_LWIP_SNMP
  "LWIP_SNMP",
#endif
  NULL
};

void cmd_opts(int argc, char **argv)
{
  LWIP_UNUSED_ARG(argc);
  LWIP_UNUSED_ARG(argv);
  for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
    nr_printf("%s=%lu\n", options[i].name, options[i].value);
  }
  nr_printf("FORCED=");
  for (size_t i = 0; forced[i] != NULL; i++) {
    nr_printf("%s%s", i > 0 ? "," : "", forced[i]);
  }
  nr_printf("\n");
}
