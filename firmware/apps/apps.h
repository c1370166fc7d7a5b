/*
 * What the apps share: the network interface, the shell commands and the
 * services that run from the main loop.
 */
#ifndef APPS_H
#define APPS_H

#include "lwip/netif.h"

extern struct netif app_netif;

/* Shell commands: argv[0] is the command name. */
void cmd_opts(int argc, char **argv);
void cmd_ip(int argc, char **argv);
void cmd_stats(int argc, char **argv);
void cmd_iperf(int argc, char **argv);
void cmd_discard(int argc, char **argv);
void cmd_sock(int argc, char **argv);
void cmd_uptime(int argc, char **argv);
void cmd_spin(int argc, char **argv);

/* A known instruction loop; returns the CPU cycles it took, 0 if the board cannot count them. */
uint32_t board_spin(uint32_t iterations, int irqs_off);

void echo_init(void);

/* Main-loop hooks of the TCP senders (deadlines, close completion). */
void iperf_poll(void);
void discard_poll(void);
void sockbench_poll(void);

#endif
