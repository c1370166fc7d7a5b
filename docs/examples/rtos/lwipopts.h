/*
 * An RTOS port's lwipopts.h in the shape STM32CubeMX writes it for lwIP on
 * CMSIS-RTOS2 (FreeRTOS): NO_SYS 0, lwIP's core in its tcpip thread, the
 * application on sockets and netconn, the priorities in CMSIS-RTOS2 numbers
 * (osPriorityNormal = 24). netrepro builds it as it is on a board with its
 * kernel (openmv-n6, openmv-rt1060, xbox); docs/your-port.md, "An RTOS port's
 * file", runs it.
 */
#ifndef __LWIPOPTS__H__
#define __LWIPOPTS__H__

#define NO_SYS                      0
#define LWIP_SOCKET                 1
#define LWIP_NETCONN                1
#define LWIP_TCPIP_CORE_LOCKING     0

#define TCPIP_MBOX_SIZE             6
#define TCPIP_THREAD_PRIO           24
#define TCPIP_THREAD_STACKSIZE      2048
#define DEFAULT_THREAD_STACKSIZE    1024
#define DEFAULT_TCP_RECVMBOX_SIZE   6
#define DEFAULT_UDP_RECVMBOX_SIZE   6
#define DEFAULT_ACCEPTMBOX_SIZE     6

#define MEM_SIZE                    (16*1024)
#define TCP_MSS                     1460
#define TCP_WND                     (4*TCP_MSS)
#define TCP_SND_BUF                 (4*TCP_MSS)

#endif
