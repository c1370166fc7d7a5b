/*
 * The lwipopts.h lwIP includes (found first through -iquote). Three layers:
 *   1. the profile given by PROFILE_H, then the harness's --set overrides (a netrepro profile or a user's own
 *      lwipopts.h, which may include headers from USER_INC),
 *   2. profiles/base.h: fills in only what the profile left unset,
 *   3. a forced block for what the port cannot support, and for the
 *      apps whose code lwIP's core would call but the firmware does not build.
 * NO_SYS: a board with netrepro's kernel (the Makefile defines NR_HAVE_KERNEL
 * for an architecture with arch/<arch>/kernel_port.c) runs the file's NO_SYS
 * as written: NO_SYS 0 gets lwIP's tcpip thread, sockets and netconn on the
 * kernel (port/sys_arch_os.c, apps/main_os.c); a file that leaves NO_SYS
 * unset gets 1 (base.h), as before. A board without the kernel forces
 * NO_SYS 1 and with it the thread-based APIs off, recorded as FORCED.
 * A profile option that layer 3 overrides with a different value is recorded
 * as NETREPRO_FORCED_<name>, which the "opts" command lists as FORCED=.
 */
#ifndef NETREPRO_PORT_LWIPOPTS_H
#define NETREPRO_PORT_LWIPOPTS_H

#include NETREPRO_PROFILE_H

/* `netrepro --set NAME=VALUE` overrides, generated into GEN_DIR; they beat the profile. */
#if __has_include("netrepro_overrides.h")
#include "netrepro_overrides.h"
#endif

/* With the kernel, NO_SYS is the file's (1 when unset); the thread-based
   APIs are forced off only in a NO_SYS 1 build, where lwIP cannot have them. */
#if defined(NR_HAVE_KERNEL) && NR_HAVE_KERNEL && defined(NO_SYS) && (NO_SYS + 0) == 0
#define NETREPRO_OS 1
#else
#define NETREPRO_OS 0
#endif

#if !NETREPRO_OS && defined(NO_SYS) && (NO_SYS + 0) != 1
#define NETREPRO_FORCED_NO_SYS 1
#endif
#if !NETREPRO_OS && defined(LWIP_SOCKET) && (LWIP_SOCKET + 0) != 0
#define NETREPRO_FORCED_LWIP_SOCKET 1
#endif
#if !NETREPRO_OS && defined(LWIP_NETCONN) && (LWIP_NETCONN + 0) != 0
#define NETREPRO_FORCED_LWIP_NETCONN 1
#endif
#if !NETREPRO_OS && defined(LWIP_NETIF_API) && (LWIP_NETIF_API + 0) != 0
#define NETREPRO_FORCED_LWIP_NETIF_API 1
#endif
#if defined(PPP_SUPPORT) && (PPP_SUPPORT + 0) != 0
#define NETREPRO_FORCED_PPP_SUPPORT 1
#endif
#if defined(LWIP_SNMP) && (LWIP_SNMP + 0) != 0
#define NETREPRO_FORCED_LWIP_SNMP 1
#endif

#include "../profiles/base.h"

#if !NETREPRO_OS
/* Bare-metal main loop: no OS, so none of the thread-based APIs. */
#undef NO_SYS
#define NO_SYS 1
#undef LWIP_SOCKET
#define LWIP_SOCKET 0
#undef LWIP_NETCONN
#define LWIP_NETCONN 0
#undef LWIP_NETIF_API
#define LWIP_NETIF_API 0
#endif

/* Apps the firmware does not build. A port's file may size pools and set
   options for any of lwIP's apps (mDNS, DHCP, IGMP, ...): they build, and
   only the apps the firmware has (make's APPS) run. PPP and SNMP are
   different: with them on, lwIP's core calls into their code (ppp_init()
   from lwip_init(), the mib2_* hooks from netif.c), which is not built, and
   the firmware's one Ethernet netif could use neither. So both are off. */
#undef PPP_SUPPORT
#define PPP_SUPPORT 0
#undef LWIP_SNMP
#define LWIP_SNMP 0

/* The fuzzer's test only (firmware/apps/test_fuzz_bug.h): a planted crash on one malformed TCP option. */
#if defined(NR_TEST_FUZZ_BUG) && NR_TEST_FUZZ_BUG
#include "../apps/test_fuzz_bug.h"
#define LWIP_HOOK_TCP_INPACKET_PCB(pcb, hdr, optlen, opt1len, opt2, p) \
  nr_test_fuzz_bug((hdr), (optlen), (opt1len), (opt2))
#endif

#endif
