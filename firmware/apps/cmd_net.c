/*
 * "ip", "uptime", "spin", "tick" and "cpu" commands.
 */
#include <string.h>

#include "lwip/ip4_addr.h"
#include "lwip/netif.h"
#include "lwip/sys.h"
#include "nr_board.h"

#include "nr_printf.h"
#include "apps.h"
#include "shell.h"

static void print_ip(void)
{
  char ip[IP4ADDR_STRLEN_MAX], mask[IP4ADDR_STRLEN_MAX], gw[IP4ADDR_STRLEN_MAX];
  const u8_t *mac = app_netif.hwaddr;

  ip4addr_ntoa_r(netif_ip4_addr(&app_netif), ip, sizeof(ip));
  ip4addr_ntoa_r(netif_ip4_netmask(&app_netif), mask, sizeof(mask));
  ip4addr_ntoa_r(netif_ip4_gw(&app_netif), gw, sizeof(gw));
  nr_printf("ip=%s netmask=%s gw=%s mac=%02x:%02x:%02x:%02x:%02x:%02x link=%s\n",
            ip, mask, gw, mac[0], mac[1], mac[2], mac[3], mac[4], mac[5],
            netif_is_link_up(&app_netif) ? "up" : "down");
}

/* "a.b.c.d/len" into address and netmask. */
static int parse_cidr(char *s, ip4_addr_t *addr, ip4_addr_t *mask)
{
  char *slash = strchr(s, '/');
  uint32_t prefix;

  if (slash == NULL) {
    return 0;
  }
  *slash = '\0';
  if (!shell_parse_ip4(s, addr) || !shell_parse_u32(slash + 1, &prefix) || prefix > 32u) {
    return 0;
  }
  ip4_addr_set_u32(mask, prefix == 0u ? 0u : lwip_htonl(0xFFFFFFFFu << (32u - prefix)));
  return 1;
}


void cmd_ip(int argc, char **argv)
{
  ip4_addr_t addr, mask, gw;

  if (argc > 3) {
    nr_printf("ERROR: usage: ip [<a.b.c.d>/<prefixlen> [<gw>]]\n");
    return;
  }
  if (argc >= 2) {
    ip4_addr_set_zero(&gw);
    if (!parse_cidr(argv[1], &addr, &mask) || (argc == 3 && !shell_parse_ip4(argv[2], &gw))) {
      nr_printf("ERROR: usage: ip [<a.b.c.d>/<prefixlen> [<gw>]]\n");
      return;
    }
    netif_set_addr(&app_netif, &addr, &mask, &gw);
  }
  print_ip();
}

void cmd_uptime(int argc, char **argv)
{
  LWIP_UNUSED_ARG(argc);
  LWIP_UNUSED_ARG(argv);
  nr_printf("ms=%lu\n", (unsigned long)sys_now());
}

/* Boards with a known instruction loop override these (the arch and board
   folders). The default runs a plain countdown loop and can say neither how
   many cycles nor how many instructions it took. */
__attribute__((weak)) uint32_t board_spin(uint32_t iterations, int irqs_off)
{
  uint32_t state = irqs_off ? board_irq_save() : 0;

  for (volatile uint32_t n = iterations; n > 0; n--) {
  }
  if (irqs_off) {
    board_irq_restore(state);
  }
  return 0;
}

__attribute__((weak)) uint32_t board_spin_instructions(void)
{
  return 0;
}

/* "spin <iterations> [irqoff]": a known instruction loop, for checking an
   emulator's clock: prints the board's milliseconds it took, the
   instructions one iteration executes (0 = unknown) and, where the board
   counts them, the CPU cycles (0 = not counted). With irqoff the timer
   interrupt that counts the board's ms is held, so ms stays near 0: use it
   for the cycle count only. */
void cmd_spin(int argc, char **argv)
{
  uint32_t iterations, t0, cycles;
  int irqs_off = argc == 3 && strcmp(argv[2], "irqoff") == 0;

  if (argc < 2 || argc > 3 || (argc == 3 && !irqs_off) || !shell_parse_u32(argv[1], &iterations)) {
    nr_printf("ERROR: usage: spin <iterations> [irqoff]\n");
    return;
  }
  t0 = sys_now();
  cycles = board_spin(iterations, irqs_off);
  nr_printf("SPIN iterations=%lu cycles=%lu ms=%lu instructions_per_iteration=%lu\n", (unsigned long)iterations,
            (unsigned long)cycles, (unsigned long)(sys_now() - t0), (unsigned long)board_spin_instructions());
}

/* "tick [<dilation_milli>]": one ms of the board lasts dilation_milli/1000 ms
   of the emulated clock from now on (device time; the harness sends it
   right after boot). Without an argument it shows the current setting. */
void cmd_tick(int argc, char **argv)
{
  struct board_tick tick;
  uint32_t milli;
  int err;

  if (argc > 2 || (argc == 2 && !shell_parse_u32(argv[1], &milli))) {
    nr_printf("ERROR: usage: tick [<dilation_milli>]\n");
    return;
  }
  board_get_tick(&tick);
  if (argc == 2) {
    err = board_set_tick_dilation(milli);
    if (err == BOARD_TICK_PACED) {
      nr_printf("ERROR: this board's host paces its clock; tick stays %lu\n", (unsigned long)tick.dilation_milli);
      return;
    }
    if (err != BOARD_TICK_OK) {
      nr_printf("ERROR: dilation_milli %lu outside %lu..%lu for this board's tick timer (%lu Hz)\n",
                (unsigned long)milli, (unsigned long)tick.min_milli, (unsigned long)tick.max_milli,
                (unsigned long)tick.input_hz);
      return;
    }
    board_get_tick(&tick);
  }
  nr_printf("TICK dilation_milli=%lu period=%lu\n", (unsigned long)tick.dilation_milli, (unsigned long)tick.period);
}

/* "clock on|off": the tick sends the board's clock on its clock port (one
   byte per board ms), for the link to follow in device time. */
void cmd_clock(int argc, char **argv)
{
  int on;

  if (argc != 2 || (strcmp(argv[1], "on") != 0 && strcmp(argv[1], "off") != 0)) {
    nr_printf("ERROR: usage: clock on|off\n");
    return;
  }
  on = strcmp(argv[1], "on") == 0;
  if (board_clock_port(on) != BOARD_TICK_OK) {
    nr_printf("ERROR: this board has no clock port (its host paces its clock)\n");
    return;
  }
  nr_printf("CLOCK %s\n", on ? "on" : "off");
}

/* "cpu [reset]": the share of the board's time its core was busy, from the
   time it slept waiting for an interrupt (board_idle_ns), since the last
   reset (or boot). */
static uint64_t cpu_t0_ns, cpu_idle0_ns;

void cmd_cpu(int argc, char **argv)
{
  uint64_t total_us, idle_us, busy_ppm;

  if (argc > 2 || (argc == 2 && strcmp(argv[1], "reset") != 0)) {
    nr_printf("ERROR: usage: cpu [reset]\n");
    return;
  }
  if (argc == 2) {
    cpu_idle0_ns = board_idle_ns();
    cpu_t0_ns = board_time_ns();
  }
  total_us = (board_time_ns() - cpu_t0_ns) / 1000u;
  idle_us = (board_idle_ns() - cpu_idle0_ns) / 1000u;
  if (idle_us > total_us) {
    idle_us = total_us; /* the two are read one after the other */
  }
  busy_ppm = total_us == 0u ? 0u : (total_us - idle_us) * 1000000u / total_us;
  nr_printf("CPU busy_ppm=%lu idle_us=%llu total_us=%llu\n", (unsigned long)busy_ppm,
            (unsigned long long)idle_us, (unsigned long long)total_us);
}
