/*
 * Profile "mp-n6-before": MicroPython's stm32 port built for the STM32N6
 * (OpenMV N6) before MicroPython PR 19629. Values as the issue reports them
 * from that port's lwIP configuration; LWIP_WND_SCALE (0) and TCP_QUEUE_OOSEQ
 * (1) are not overridden there, so they stay at lwIP's defaults here too.
 * TCP_SND_QUEUELEN is not set: MicroPython's lwipopts_common.h keeps lwIP's
 * default formula, (4 * TCP_SND_BUF + TCP_MSS - 1) / TCP_MSS = 64.
 */
#define TCP_MSS          1460
#define TCP_WND          (16 * TCP_MSS)
#define TCP_SND_BUF      (16 * TCP_MSS)
#define MEM_SIZE         (64 * 1024)
#define PBUF_POOL_SIZE   32
#define MEMP_NUM_TCP_SEG 64
