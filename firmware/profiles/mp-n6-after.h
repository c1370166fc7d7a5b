/*
 * Profile "mp-n6-after": as mp-n6-before (MicroPython stm32 port, STM32N6),
 * with the receive window doubled to 32 * TCP_MSS as MicroPython PR 19629
 * does. Everything else, including the unset TCP_SND_QUEUELEN,
 * LWIP_WND_SCALE and TCP_QUEUE_OOSEQ, is unchanged.
 */
#define TCP_MSS          1460
#define TCP_WND          (32 * TCP_MSS)
#define TCP_SND_BUF      (16 * TCP_MSS)
#define MEM_SIZE         (64 * 1024)
#define PBUF_POOL_SIZE   32
#define MEMP_NUM_TCP_SEG 64
