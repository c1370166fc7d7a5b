/*
 * Profile "nxdk-nvnetdrv": nxdk after PR 611 ("Replace pktdrv with
 * nvnetdrv", report R4, reports/xbox.toml): the nvnetdrv driver design on
 * the e1000 stand-in, with the PR's lwipopts.h tweak TCP_SND_BUF = TCP_WND.
 *
 * The TCP figures are nxdk's (lib/net/nforceif/include/lwipopts.h in
 * XboxDev/nxdk). nxdk builds lwIP threaded (NO_SYS 0, a tcpip thread);
 * netrepro's port runs it NO_SYS 1 from a main loop, which port/lwipopts.h
 * forces. The pool and heap sizes are not nxdk's: they are set large enough
 * that lwIP's own memory is never what limits a transfer here, so the driver
 * design and the send buffer are the only differences between the nxdk
 * profiles.
 */
#define NETREPRO_E1000_DRIVER NETREPRO_E1000_NVNETDRV /* nics/e1000/nvnetdrv.c */
/* nvnetdrv's default rings (64/64); NVNETDRV_RX_RING_SIZE/NVNETDRV_TX_RING_SIZE change them. */

#define TCP_MSS          1432               /* nxdk lwipopts.h (R4) */
#define TCP_WND          (45 * TCP_MSS)     /* nxdk lwipopts.h (R4): 64440, fits u16 without scaling */
#define LWIP_WND_SCALE   0                  /* R4: no window scaling (lwIP's default, stated) */
#define TCP_SND_BUF      TCP_WND            /* PR 611's tweak (lwIP wiki "Tuning TCP") */
#define LWIP_SUPPORT_CUSTOM_PBUF 1          /* nvnetdrv's zero-copy RX (pbuf_alloced_custom) */

/* Not the limit (netrepro's choice): lwIP's formula gives TCP_SND_QUEUELEN
   (4 * 64440 + 1431) / 1432 = 180 segments, so MEMP_NUM_TCP_SEG must hold
   180 (lwIP's sanity check); the 256 KiB heap holds a full send buffer of
   copied data with room to spare; 64 pool pbufs hold a full 45-segment window. */
#define MEMP_NUM_TCP_SEG 256
#define MEMP_NUM_PBUF    256                /* nxdk: 128; ROM/REF pbufs of queued segments */
#define MEM_SIZE         (256 * 1024)
#define PBUF_POOL_SIZE   64
