/*
 * netrepro firmware for lwIP with NO_SYS 0 (built instead of main.c when
 * the options file's NO_SYS is 0 on a board with the kernel, see the
 * Makefile): lwIP's core runs in its tcpip thread (tcpip_init()), the NIC's
 * receive path in a thread of its own (nic_thread.c, frames through
 * tcpip_input()), the socket benchmark and iperf in application threads on
 * sockets or netconn (NR_APP_API: sockbench_thread.c, iperf_os.c), and
 * main() becomes the shell's thread.
 *
 * The shell's commands, the raw-API apps (discard, echo, udp; iperf and the
 * socket benchmark too when NR_APP_API is NR_APP_API_RAW) and
 * their polls touch lwIP's core, so they run where the core may be touched:
 * with LWIP_TCPIP_CORE_LOCKING, in the shell's thread under
 * LOCK_TCPIP_CORE(); without it, in the tcpip thread (tcpip_callback(), the
 * shell's thread waiting for it to finish). The apps' polls run from a 1 ms
 * lwIP timeout in the tcpip thread. Everything the shell prints is thus
 * printed with the core held, one writer at a time.
 */
#include "lwip/init.h"
#include "lwip/netif.h"
#include "lwip/netifapi.h"
#include "lwip/sys.h"
#include "lwip/tcpip.h"
#include "lwip/timeouts.h"
#include "netif/ethernet.h"

#include "board_config.h"
#include "nr_board.h"
#include "nr_kernel.h"
#include "nr_nic.h"
#include "nr_printf.h"
#include "apps.h"
#include "nic_thread.h"
#include "shell.h"

struct netif app_netif;

#define NR_APP(name) &nr_app_##name,
const struct nr_app *const nr_apps[] = { NR_APPS NULL };
#undef NR_APP

#define APP_POLL_MS 1u
#define CONSOLE_POLL_MS 1u

static int net_ok;

/* ---- running code with lwIP's core held ---- */

#if !LWIP_TCPIP_CORE_LOCKING
struct core_call {
  void (*fn)(void);
  struct nr_sem done;
};

static void core_call_in_tcpip(void *arg)
{
  struct core_call *call = arg;

  call->fn();
  (void)nr_sem_give(&call->done);
}
#endif

/* Runs fn where lwIP's core may be used, and returns once it has run. */
static void in_core(void (*fn)(void))
{
#if LWIP_TCPIP_CORE_LOCKING
  LOCK_TCPIP_CORE();
  fn();
  UNLOCK_TCPIP_CORE();
#else
  struct core_call call;

  call.fn = fn;
  nr_sem_init(&call.done, 0, 1);
  if (tcpip_callback(core_call_in_tcpip, &call) == ERR_OK) {
    (void)nr_sem_take(&call.done, NR_FOREVER);
  }
#endif
}

/* ---- the apps ---- */

static void apps_poll(void *arg)
{
  LWIP_UNUSED_ARG(arg);
  for (const struct nr_app *const *app = nr_apps; *app != NULL; app++) {
    if ((*app)->poll != NULL) {
      (*app)->poll();
    }
  }
  sys_timeout(APP_POLL_MS, apps_poll, NULL);
}

/* The address stays 0.0.0.0 until the "ip" command sets one. With
   LWIP_NETIF_API the options file asks for lwIP's thread-safe netif calls,
   so the interface is added from main's thread with them (each one a call
   into the tcpip thread), as an application written for that file does;
   without it, with the core held. */
#if LWIP_NETIF_API
static void net_init(void)
{
  if (netifapi_netif_add(&app_netif, NULL, NULL, NULL, NULL, nic_netif_init, tcpip_input) != ERR_OK) {
    nr_printf("ERROR: %s init failed\n", NIC_NAME);
    return;
  }
  (void)netifapi_netif_set_default(&app_netif);
  (void)netifapi_netif_set_up(&app_netif);
  net_ok = 1;
}
#else
static void net_init_in_core(void)
{
  if (netif_add(&app_netif, NULL, NULL, NULL, NULL, nic_netif_init, tcpip_input) == NULL) {
    nr_printf("ERROR: %s init failed\n", NIC_NAME);
  } else {
    netif_set_default(&app_netif);
    netif_set_up(&app_netif);
    net_ok = 1;
  }
}

static void net_init(void)
{
  in_core(net_init_in_core);
}
#endif

static void apps_init(void)
{
  for (const struct nr_app *const *app = nr_apps; *app != NULL; app++) {
    if ((*app)->init != NULL) {
      (*app)->init();
    }
  }
  sys_timeout(APP_POLL_MS, apps_poll, NULL);
  shell_start();
}

static void tcpip_ready(void *arg)
{
  (void)nr_sem_give((struct nr_sem *)arg);
}

int main(void)
{
  struct nr_sem ready;

  board_init();
  nr_printf("netrepro firmware board=%s nic=%s lwip=%s profile=%s\n",
            BOARD_NAME, NIC_NAME, LWIP_VERSION_STRING, NETREPRO_PROFILE_NAME);
  if (nr_kernel_start(nr_sys_prio(NR_SHELL_THREAD_PRIO)) != NR_OK) {
    nr_printf("FAULT kernel did not start\n");
    for (;;) {
    }
  }
  nr_sem_init(&ready, 0, 1);
  tcpip_init(tcpip_ready, &ready);
  (void)nr_sem_take(&ready, NR_FOREVER);
  net_init();
  in_core(apps_init);
  if (net_ok && !nic_rx_thread_start(&app_netif)) {
    nr_printf("ERROR: %s receive thread not started\n", NIC_NAME);
  }
  for (;;) {
    if (board_console_rx_pending()) {
      in_core(shell_poll);
    }
    (void)nr_sleep_ms(CONSOLE_POLL_MS);
  }
}
