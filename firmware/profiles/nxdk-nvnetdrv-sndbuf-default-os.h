/*
 * Profile "nxdk-nvnetdrv-sndbuf-default-os": nxdk-nvnetdrv-sndbuf-default
 * (TCP_SND_BUF left at lwIP's 2 * TCP_MSS, included below) with nxdk's
 * threads, as nxdk-nvnetdrv-os: NO_SYS 0, the tcpip thread, nvnetdrv's
 * receive thread woken by the NIC's interrupt (nxdk-nvnetdrv-os.h).
 */
#include "nxdk-nvnetdrv-sndbuf-default.h"
#define NXDK_OS_SIBLING_INCLUDED 1
#include "nxdk-nvnetdrv-os.h"
