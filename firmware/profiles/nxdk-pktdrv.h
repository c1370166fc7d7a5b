/*
 * Profile "nxdk-pktdrv": nxdk before PR 611 ("Replace pktdrv with nvnetdrv",
 * report R4, reports/xbox.toml): the pktdrv driver design on the e1000
 * stand-in (32-entry rings, RX polled every 5 ms with two copies per frame,
 * one TX frame in flight through a bounce buffer). The report's PR applied
 * its lwipopts.h tweak, TCP_SND_BUF = TCP_WND, to both drivers ("little
 * impact to pktdrv perf"), so the pktdrv figures are taken with it too.
 *
 * The TCP figures are nxdk's (lib/net/nforceif/include/lwipopts.h in
 * XboxDev/nxdk). nxdk builds lwIP threaded (NO_SYS 0, a tcpip thread, where
 * pktdrv's 5 ms packet_timer runs as an lwIP timeout); netrepro's port runs
 * it NO_SYS 1 from a main loop, where the same timeout runs from
 * sys_check_timeouts(). The pool and heap sizes are not nxdk's: they are set
 * large enough that lwIP's own memory is never what limits a transfer here,
 * so the driver design is the only difference from nxdk-nvnetdrv.
 */
#define NETREPRO_E1000_DRIVER NETREPRO_E1000_PKTDRV /* nics/e1000/pktdrv.c */

#define TCP_MSS          1432               /* nxdk lwipopts.h (R4) */
#define TCP_WND          (45 * TCP_MSS)     /* nxdk lwipopts.h (R4): 64440, fits u16 without scaling */
#define LWIP_WND_SCALE   0                  /* R4: no window scaling (lwIP's default, stated) */
#define TCP_SND_BUF      TCP_WND            /* PR 611's tweak, applied to both drivers */

/* Not the limit (netrepro's choice): lwIP's formula gives TCP_SND_QUEUELEN
   (4 * 64440 + 1431) / 1432 = 180 segments, so MEMP_NUM_TCP_SEG must hold
   180 (lwIP's sanity check); the 256 KiB heap holds a full send buffer of
   copied data with room to spare; 64 pool pbufs (pktdrv's second copy goes
   into them) hold a full 45-segment window. */
#define MEMP_NUM_TCP_SEG 256
#define MEMP_NUM_PBUF    256                /* nxdk: 128 */
#define MEM_SIZE         (256 * 1024)
#define PBUF_POOL_SIZE   64

/* pktdrv's packet_timer is one more lwIP timeout than lwIP counts for itself
   (nxdk's lwipopts.h adds one to its MEMP_NUM_SYS_TIMEOUT formula likewise). */
#define MEMP_NUM_SYS_TIMEOUT (LWIP_NUM_SYS_TIMEOUT_INTERNAL + 1)
