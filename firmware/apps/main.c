/*
 * netrepro firmware: lwIP (NO_SYS) on one NIC, driven from a single main
 * loop; interrupts only flag work. The loop sleeps in WFI when idle; the
 * 1 ms SysTick, the console UART and the NIC wake it.
 */
#include "lwip/init.h"
#include "lwip/netif.h"
#include "lwip/timeouts.h"
#include "netif/ethernet.h"

#include "board_config.h"
#include "nr_board.h"
#include "nr_nic.h"
#include "nr_printf.h"
#include "apps.h"
#include "shell.h"

struct netif app_netif;

#define NR_APP(name) &nr_app_##name,
const struct nr_app *const nr_apps[] = { NR_APPS NULL };
#undef NR_APP

/* The address stays 0.0.0.0 until the "ip" command sets one. */
static int net_init(void)
{
  lwip_init();
  if (netif_add(&app_netif, NULL, NULL, NULL, NULL, nic_netif_init, netif_input) == NULL) {
    nr_printf("ERROR: %s init failed\n", NIC_NAME);
    return 0;
  }
  netif_set_default(&app_netif);
  netif_set_up(&app_netif);
  return 1;
}

static void idle(void)
{
  uint32_t irq = board_irq_save();

  if (!nic_work_pending() && !board_console_rx_pending()) {
    board_wait_for_interrupt();
  }
  board_irq_restore(irq);
}

int main(void)
{
  int net_ok;

  board_init();
  nr_printf("netrepro firmware board=%s nic=%s lwip=%s profile=%s\n",
            BOARD_NAME, NIC_NAME, LWIP_VERSION_STRING, NETREPRO_PROFILE_NAME);
  net_ok = net_init();
  for (const struct nr_app *const *app = nr_apps; *app != NULL; app++) {
    if ((*app)->init != NULL) {
      (*app)->init();
    }
  }
  shell_start();
  for (;;) {
    if (net_ok) {
      nic_poll(&app_netif);
    }
    shell_poll();
    sys_check_timeouts();
    for (const struct nr_app *const *app = nr_apps; *app != NULL; app++) {
      if ((*app)->poll != NULL) {
        (*app)->poll();
      }
    }
    idle();
  }
}
