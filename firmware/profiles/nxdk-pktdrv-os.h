/*
 * Profile "nxdk-pktdrv-os": nxdk-pktdrv (its TCP figures, included below) run
 * as nxdk ran pktdrv before PR 611: NO_SYS 0 on netrepro's kernel, lwIP's
 * tcpip thread, and no receive thread at all. nxdk's lib/nxdk/net.c polled
 * the NIC from packet_timer, a 5 ms lwIP timeout (sys_timeout), so the poll,
 * pktdrv's two copies and netif->input = tcpip_input() all ran in the tcpip
 * thread; nics/e1000/pktdrv.c does the same (NR_NIC_RX_NO_THREAD below).
 *
 * One of nxdk's options cannot be kept: its lwipopts.h had
 * LWIP_TCPIP_CORE_LOCKING_INPUT 1 then, with which tcpip_input() takes the
 * core lock, which the tcpip thread already holds while it runs a timeout;
 * lwIP's mutex here is not recursive (a second lock by its holder is an
 * assertion), so this file has 0, nxdk's value since 2024: each frame is a
 * message in the tcpip thread's own mailbox, handled after the poll. The
 * other thread options are nxdk's (nxdk-nvnetdrv-os.h).
 */
#include "nxdk-pktdrv.h"
#define LWIP_TCPIP_CORE_LOCKING_INPUT 0
#define NXDK_OS_SIBLING_INCLUDED 1
#include "nxdk-nvnetdrv-os.h"

/* pktdrv receives in the tcpip thread (above): no receive thread. */
#define NR_NIC_RX_NO_THREAD 1

/* Two lwIP timeouts more than lwIP counts for itself: packet_timer (the
   sibling's one more) and apps/main_os.c's poll of the apps. */
#undef MEMP_NUM_SYS_TIMEOUT
#define MEMP_NUM_SYS_TIMEOUT (LWIP_NUM_SYS_TIMEOUT_INTERNAL + 2)
