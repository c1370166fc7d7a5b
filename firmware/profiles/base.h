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

/* NO_SYS 0 (a board with the kernel, port/lwipopts.h's NETREPRO_OS): what
   lwIP's threads need that opt.h leaves at 0 or at a value no port runs.
   Sizes are bytes and mailbox entries, priorities lwIP's numbers as an
   STM32Cube/CMSIS-RTOS2 file writes them (port/sys_arch_os.c maps them onto
   the kernel: Normal 24 -> 12, High 40 -> 20). */
#if NETREPRO_OS
#ifndef TCPIP_THREAD_STACKSIZE
#define TCPIP_THREAD_STACKSIZE 2048 /* TCP input, the raw apps and the shell's commands run in it */
#endif
#ifndef TCPIP_THREAD_PRIO
#define TCPIP_THREAD_PRIO 24        /* osPriorityNormal */
#endif
#ifndef TCPIP_MBOX_SIZE
#define TCPIP_MBOX_SIZE 8           /* opt.h's 0 cannot hold a message */
#endif
#ifndef DEFAULT_THREAD_STACKSIZE
#define DEFAULT_THREAD_STACKSIZE 1024
#endif
#ifndef DEFAULT_THREAD_PRIO
#define DEFAULT_THREAD_PRIO 24
#endif
#ifndef DEFAULT_RAW_RECVMBOX_SIZE
#define DEFAULT_RAW_RECVMBOX_SIZE 6
#endif
#ifndef DEFAULT_UDP_RECVMBOX_SIZE
#define DEFAULT_UDP_RECVMBOX_SIZE 6
#endif
#ifndef DEFAULT_TCP_RECVMBOX_SIZE
#define DEFAULT_TCP_RECVMBOX_SIZE 6
#endif
#ifndef DEFAULT_ACCEPTMBOX_SIZE
#define DEFAULT_ACCEPTMBOX_SIZE 6
#endif
/* One more lwIP timeout than lwIP counts for itself: apps/main_os.c polls
   the apps from a 1 ms timeout in the tcpip thread. */
#ifndef MEMP_NUM_SYS_TIMEOUT
#define MEMP_NUM_SYS_TIMEOUT (LWIP_NUM_SYS_TIMEOUT_INTERNAL + 1)
#endif
/* Sockets set errno: newlib's <errno.h>, whose errno the kernel makes each
   thread's own (firmware/kernel/kernel.c's __errno(), nr_thread_errno()). */
#if !defined(LWIP_PROVIDE_ERRNO) && !defined(LWIP_ERRNO_INCLUDE) && !defined(LWIP_ERRNO_STDINCLUDE)
#define LWIP_ERRNO_STDINCLUDE 1
#endif
/* The lwIP tree netrepro builds (Debian's lwip 2.1.3) has sockets.c call
   these length macros, which its own POSIX port header would define; lwIP's
   struct sockaddr has sa_len/sin_len, so they read and write those. */
#ifndef IP4ADDR_SOCKADDR_SET_LEN
#define IP4ADDR_SOCKADDR_SET_LEN(sin) ((sin)->sin_len = sizeof(struct sockaddr_in))
#endif
#ifndef IP6ADDR_SOCKADDR_SET_LEN
#define IP6ADDR_SOCKADDR_SET_LEN(sin6) ((sin6)->sin6_len = sizeof(struct sockaddr_in6))
#endif
#ifndef IPADDR_SOCKADDR_GET_LEN
#define IPADDR_SOCKADDR_GET_LEN(addr) ((addr)->sa.sa_len)
#endif
/* newlib has struct timeval (and its fd_set macros come with it), so lwIP
   must not define its own; lwIP then expects <sys/time.h> included. */
#ifndef LWIP_TIMEVAL_PRIVATE
#define LWIP_TIMEVAL_PRIVATE 0
#endif
#if !LWIP_TIMEVAL_PRIVATE
#include <sys/time.h>
#endif

/* The NIC's receive path (firmware/nics/<nic>, apps/main_os.c):
   NR_NIC_RX_THREAD 1: a thread the NIC's interrupt wakes (a semaphore)
     drains the NIC into tcpip_input(), as an STM32Cube ethernetif does;
   NR_NIC_RX_THREAD 0: the same thread polls the NIC once a tick (1 board ms)
     instead of waiting for the interrupt.
   Its priority is a lwIP number like TCPIP_THREAD_PRIO (default
   osPriorityHigh, above the tcpip thread, as Cube's input thread), its
   stack in bytes. */
#ifndef NR_NIC_RX_THREAD
#define NR_NIC_RX_THREAD 1
#endif
#ifndef NR_NIC_RX_THREAD_PRIO
#define NR_NIC_RX_THREAD_PRIO 40
#endif
#ifndef NR_NIC_RX_THREAD_STACKSIZE
#define NR_NIC_RX_THREAD_STACKSIZE 1536
#endif
/* Which of lwIP's APIs the apps (sock, iperf) are written on in a NO_SYS 0
   build: NR_APP_API_SOCKET (BSD sockets, lwip_socket/lwip_send/lwip_recv),
   NR_APP_API_NETCONN (netconn_new/netconn_write/netconn_recv) or
   NR_APP_API_RAW (the raw-API apps of a NO_SYS 1 build, run in the tcpip
   thread). The default is the richest API the options file enables (a
   NO_SYS 1 build has only the raw API and never reads this). */
#define NR_APP_API_RAW     0
#define NR_APP_API_SOCKET  1
#define NR_APP_API_NETCONN 2
#ifndef NR_APP_API
#if !defined(LWIP_SOCKET) || LWIP_SOCKET   /* opt.h's default is 1 */
#define NR_APP_API NR_APP_API_SOCKET
#elif !defined(LWIP_NETCONN) || LWIP_NETCONN
#define NR_APP_API NR_APP_API_NETCONN
#else
#define NR_APP_API NR_APP_API_RAW
#endif
#endif
/* The socket benchmark's thread (apps/sockbench_socket.c): an application
   thread at DEFAULT_THREAD_PRIO unless set. */
#ifndef NR_APP_THREAD_PRIO
#define NR_APP_THREAD_PRIO DEFAULT_THREAD_PRIO
#endif
#ifndef NR_APP_THREAD_STACKSIZE
#define NR_APP_THREAD_STACKSIZE 2048
#endif
/* The shell's thread (main() once the kernel runs), below the others. */
#ifndef NR_SHELL_THREAD_PRIO
#define NR_SHELL_THREAD_PRIO 16     /* osPriorityBelowNormal */
#endif
#endif /* NETREPRO_OS */

#endif
