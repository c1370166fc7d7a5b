/*
 * Profile "mp-rt1060-after": MicroPython's mimxrt port (OpenMV RT1060) after
 * MicroPython PR 19629, whose ports/mimxrt/lwip_inc/lwipopts.h now sets its
 * own tier (report R2) before including lwipopts_common.h. TCP_SND_QUEUELEN
 * is still lwIP's formula, (4 * 8760 + 1459) / 1460 = 24 (= MEMP_NUM_TCP_SEG).
 * PBUF_POOL_BUFSIZE follows TCP_MSS: 1460 + 40 + 14 + ETH_PAD_SIZE 2 = 1516 B,
 * one pool pbuf per full frame; 7 of them hold exactly TCP_WND of payload
 * (7 * 1460 = 10220), which is the most lwIP's sanity check allows.
 * LWIP_WND_SCALE 0 and TCP_QUEUE_OOSEQ 1 stay at lwIP's defaults.
 */
#define MEM_SIZE         (13 * 1024)     /* mimxrt lwipopts.h */
#define TCP_MSS          1460            /* mimxrt lwipopts.h */
#define TCP_WND          (7 * TCP_MSS)   /* mimxrt lwipopts.h: 10220 */
#define TCP_SND_BUF      (6 * TCP_MSS)   /* mimxrt lwipopts.h: 8760 */
#define MEMP_NUM_TCP_SEG 24              /* mimxrt lwipopts.h */
#define PBUF_POOL_SIZE   7               /* mimxrt lwipopts.h */
