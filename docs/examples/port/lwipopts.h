/*
 * An lwipopts.h in the shape real ports' files have (MicroPython's ports keep theirs in
 * ports/<port>/lwip_inc/lwipopts.h): it includes the port's own configuration header, points
 * LWIP_RAND() at the port's hardware RNG, protects with its own (here empty) macros, sets an
 * option only newer lwIP releases know and sizes pools for mDNS. netrepro builds it as it is:
 * docs/your-port.md, "Your port's lwipopts.h, as it is".
 */
#ifndef PORT_LWIPOPTS_H
#define PORT_LWIPOPTS_H

#include <stdint.h>
#include "py/mpconfig.h"                /* the port's configuration: --stub-header py/mpconfig.h */

#define SYS_ARCH_DECL_PROTECT(lev)      do { } while (0)
#define SYS_ARCH_PROTECT(lev)           do { } while (0)
#define SYS_ARCH_UNPROTECT(lev)         do { } while (0)

#define NO_SYS                          1
#define SYS_LIGHTWEIGHT_PROT            1
#define MEM_ALIGNMENT                   4
#define LWIP_CHKSUM_ALGORITHM           3
#define LWIP_ARP                        1
#define LWIP_ETHERNET                   1
#define LWIP_RAW                        1
#define LWIP_NETCONN                    0
#define LWIP_SOCKET                     0
#define LWIP_STATS                      0

#define LWIP_DHCP                       1
#define LWIP_DHCP_DOES_ACD_CHECK        0   /* lwIP 2.2's: this lwIP warns that it does not know it */
#define LWIP_IGMP                       1
#define LWIP_MDNS_RESPONDER             1   /* an app netrepro does not build: accepted */
#define LWIP_NUM_NETIF_CLIENT_DATA      LWIP_MDNS_RESPONDER
#define MEMP_NUM_UDP_PCB                (4 + LWIP_MDNS_RESPONDER)
#define MEMP_NUM_SYS_TIMEOUT            (LWIP_NUM_SYS_TIMEOUT_INTERNAL + 8 * LWIP_MDNS_RESPONDER)

extern uint32_t trng_random_u32(void);  /* the port's RNG: netrepro stands the board's in */
#define LWIP_RAND()                     trng_random_u32()

#ifndef PORT_TCP_WND_SEGMENTS
#define PORT_TCP_WND_SEGMENTS           8   /* the port's config header may set it */
#endif
#define TCP_MSS                         1460
#define TCP_WND                         (PORT_TCP_WND_SEGMENTS * TCP_MSS)
#define TCP_SND_BUF                     (4 * TCP_MSS)
#define TCP_SND_QUEUELEN                ((4 * (TCP_SND_BUF) + (TCP_MSS - 1)) / (TCP_MSS))
#define MEM_SIZE                        (16 * 1024)
#define PBUF_POOL_SIZE                  24

#endif
