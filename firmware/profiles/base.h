/*
 * netrepro's fill-ins, applied after the profile. Every option is guarded by
 * #ifndef, so a profile always wins. Only protocol selection, statistics and
 * what the port and driver need live here: TCP tuning (TCP_MSS, TCP_WND,
 * TCP_SND_BUF, TCP_SND_QUEUELEN, MEM_SIZE, PBUF_POOL_SIZE, MEMP_NUM_*, ...)
 * is deliberately absent, so whatever a profile does not set stays at lwIP's
 * own default from opt.h.
 */
#ifndef NETREPRO_PROFILES_BASE_H
#define NETREPRO_PROFILES_BASE_H

/* Protocols the apps use (IPv4 TCP/UDP/ICMP, static addressing). */
#ifndef LWIP_IPV4
#define LWIP_IPV4 1
#endif
#ifndef LWIP_IPV6
#define LWIP_IPV6 0
#endif
#ifndef LWIP_TCP
#define LWIP_TCP 1
#endif
#ifndef LWIP_UDP
#define LWIP_UDP 1
#endif
#ifndef LWIP_ICMP
#define LWIP_ICMP 1
#endif
#ifndef LWIP_DHCP
#define LWIP_DHCP 0
#endif

/* The "stats" command. 32-bit counters: a 10 s transfer overflows u16. */
#ifndef LWIP_STATS
#define LWIP_STATS 1
#endif
#ifndef LWIP_STATS_LARGE
#define LWIP_STATS_LARGE 1
#endif

/* Port: 32-bit aligned buffers, random numbers from port/sys_arch.c. */
#ifndef MEM_ALIGNMENT
#define MEM_ALIGNMENT 4
#endif
#ifndef LWIP_RAND
#define LWIP_RAND() netrepro_rand()
#endif

/* Driver: 2 bytes in front of the Ethernet header put the IP header on a
   word boundary; the LAN9118 inserts them itself (RX_CFG RXDOFF). */
#ifndef ETH_PAD_SIZE
#define ETH_PAD_SIZE 2
#endif

#endif
