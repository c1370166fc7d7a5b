/*
 * Which of lwIP's APIs this build's apps are written on (NR_APP_API,
 * profiles/base.h), checked once against what the options file enables:
 * asking for an API the file turns off stops the build here.
 */
#ifndef APP_API_H
#define APP_API_H

#include "lwip/opt.h"

/* The apps run in threads of their own on a sequential API (sockets or
   netconn): sockbench_thread.c, iperf_os.c. Otherwise they are the raw-API
   apps of a NO_SYS 1 build (or of NR_APP_API_RAW, in the tcpip thread). */
#define NR_APPS_THREADED (!NO_SYS && (NR_APP_API == NR_APP_API_SOCKET || NR_APP_API == NR_APP_API_NETCONN))

#if NR_APPS_THREADED && NR_APP_API == NR_APP_API_SOCKET && !LWIP_SOCKET
#error "NR_APP_API is NR_APP_API_SOCKET but the options file has LWIP_SOCKET 0"
#endif
#if NR_APPS_THREADED && NR_APP_API == NR_APP_API_NETCONN && !LWIP_NETCONN
#error "NR_APP_API is NR_APP_API_NETCONN but the options file has LWIP_NETCONN 0"
#endif

#endif
