/* netrepro tune openmv-rt1060: best of 10 trials within 27388 B of lwIP RAM: 35.819 Mbit/s with 27176 B (link-limited).
 * The starting profile mp-rt1060-before (mp-rt1060-before.h), then the options the search chose. */
/*
 * Profile "mp-rt1060-before": MicroPython's mimxrt port (OpenMV RT1060)
 * before MicroPython PR 19629. The port's lwipopts.h set no TCP options, so
 * it got the active ("#if 1") tier of extmod/lwip-include/lwipopts_common.h,
 * the values below (report R2). Everything else stays at lwIP's defaults:
 *  - TCP_SND_QUEUELEN: lwipopts_common.h keeps lwIP's formula,
 *    (4 * TCP_SND_BUF + TCP_MSS - 1) / TCP_MSS = 32 (= MEMP_NUM_TCP_SEG);
 *  - PBUF_POOL_SIZE 16; PBUF_POOL_BUFSIZE follows TCP_MSS:
 *    800 + 40 + 14 + ETH_PAD_SIZE 2 = 856 B, so a full 1514-byte frame needs
 *    two pool pbufs (segments of the device's own MSS fit in one);
 *  - LWIP_WND_SCALE 0, TCP_QUEUE_OOSEQ 1.
 * MEM_SIZE (8000) is smaller than what TCP_SND_BUF (6400) takes on the heap
 * once each queued segment's pbuf header and TCP/IP/Ethernet headroom are
 * added, which is what sends modlwip's send into its ERR_MEM retry path.
 */
#define MEM_SIZE         8000            /* lwipopts_common.h */
#define TCP_MSS          800             /* lwipopts_common.h */
#define TCP_WND          (8 * TCP_MSS)   /* lwipopts_common.h: 6400 */
#define TCP_SND_BUF      (8 * TCP_MSS)   /* lwipopts_common.h: 6400 */
#define MEMP_NUM_TCP_SEG 32              /* lwipopts_common.h */

/* netrepro --set overrides, applied after the profile */
#undef TCP_MSS
#define TCP_MSS (800)
#undef TCP_WND
#define TCP_WND (22*TCP_MSS)
#undef TCP_SND_BUF
#define TCP_SND_BUF (22*TCP_MSS)
#undef MEM_SIZE
#define MEM_SIZE (4*1024)
#undef PBUF_POOL_SIZE
#define PBUF_POOL_SIZE ((TCP_WND/TCP_MSS+0))
#undef TCP_SND_QUEUELEN
#define TCP_SND_QUEUELEN ((2*TCP_SND_BUF/TCP_MSS))
#undef MEMP_NUM_TCP_SEG
#define MEMP_NUM_TCP_SEG ((TCP_SND_QUEUELEN+14))

