/*
 * Profile "nxdk-nvnetdrv-os": nxdk-nvnetdrv (its TCP figures, included below)
 * run as nxdk itself runs lwIP: NO_SYS 0 on netrepro's kernel, lwIP's tcpip
 * thread, and nvnetdrv's receive path in a thread the NIC's interrupt wakes
 * (nics/e1000/nvnetdrv.c, apps/nic_thread.c).
 *
 * nxdk's thread options as PR 611 had them (lib/net/nforceif in
 * XboxDev/nxdk, July 2022): lwipopts.h sets NO_SYS 0, LWIP_TCPIP_CORE_LOCKING
 * 1, LWIP_TCPIP_CORE_LOCKING_INPUT 1 (a received frame is processed in the
 * driver's thread under the core lock, not posted to the tcpip thread),
 * SYS_LIGHTWEIGHT_PROT 1, sockets and netconn, TCPIP_THREAD_STACKSIZE and
 * DEFAULT_THREAD_STACKSIZE 4096. Its sys_arch.c ignores lwIP's priorities
 * (every thread is created at the same one) and the mailbox sizes (every
 * mailbox holds SYS_MBOX_SIZE = 128 messages). nvnetdrv's own threads (an
 * IRQ thread woken through a DPC and an event, an RX callback thread woken
 * by a semaphore) run at that same priority, but the kernel wakes them with
 * IO_NETWORK_INCREMENT, a priority boost, so a woken one preempts the thread
 * that was running: here the receive thread is one step above the tcpip
 * thread. The iperf server of the report is lwIP's lwiperf, a raw-API app
 * run with the core held (NR_APP_API_RAW).
 *
 * The other nxdk-*-os profiles include their own NO_SYS 1 sibling, define
 * NXDK_OS_SIBLING_INCLUDED and include this file for the thread options.
 */
#ifndef NXDK_OS_SIBLING_INCLUDED
#include "nxdk-nvnetdrv.h"
#endif
#define NO_SYS                        0
#define LWIP_TCPIP_CORE_LOCKING       1
#ifndef LWIP_TCPIP_CORE_LOCKING_INPUT
#define LWIP_TCPIP_CORE_LOCKING_INPUT 1
#endif
#define SYS_LIGHTWEIGHT_PROT          1
#define LWIP_NETCONN                  1
#define LWIP_SOCKET                   1
#define TCPIP_THREAD_STACKSIZE        4096
#define DEFAULT_THREAD_STACKSIZE      4096

/* nxdk's sys_mbox_new() ignores the size lwIP asks for: every mailbox holds
   SYS_MBOX_SIZE = 128 messages. port/sys_arch_os.c's mailboxes are sized as
   asked, up to NR_SYS_MBOX_CAP, so both are 128 here. */
#define NR_SYS_MBOX_CAP               128
#define TCPIP_MBOX_SIZE               128
#define DEFAULT_TCP_RECVMBOX_SIZE     128
#define DEFAULT_UDP_RECVMBOX_SIZE     128
#define DEFAULT_RAW_RECVMBOX_SIZE     128
#define DEFAULT_ACCEPTMBOX_SIZE       128
/* nxdk has MEMP_MEM_MALLOC 1 (pools from the heap, no per-pool limit); the
   one pool a full mailbox of received frames needs is sized to match it
   (netrepro's choice, like the sibling's pool sizes). */
#define MEMP_NUM_TCPIP_MSG_INPKT      128

/* Priorities, as lwIP numbers (port/sys_arch_os.c maps p to (p + 1) / 2):
   nxdk creates every thread at one priority, the tcpip thread's, apps'
   (DEFAULT_THREAD_PRIO) and the driver's alike; the driver's receive thread
   is one kernel step above, for the Xbox kernel's wake-up boost
   (IO_NETWORK_INCREMENT). The shell (netrepro's, not nxdk's) stays below. */
#define TCPIP_THREAD_PRIO             24
#define DEFAULT_THREAD_PRIO           24
#define NR_NIC_RX_THREAD              1
#define NR_NIC_RX_THREAD_PRIO         26
#define NR_NIC_RX_THREAD_STACKSIZE    4096

/* The report's "lwip iperf server" is lwIP's lwiperf, on the raw API with
   the core held. */
#define NR_APP_API                    NR_APP_API_RAW
