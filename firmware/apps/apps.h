/*
 * What the apps share: the network interface, the shell's built-in commands
 * and the app registry.
 *
 * An app is firmware/apps/<name>.c defining `const struct nr_app
 * nr_app_<name>`. Which apps a firmware has is the make variable APPS
 * (Makefile, a board's board.mk), passed in as NR_APPS, a list of
 * NR_APP(<name>) calls; main.c and the shell walk it, so an app left out is
 * simply absent and nothing refers to it.
 */
#ifndef APPS_H
#define APPS_H

#include <stdint.h>

#include "lwip/netif.h"

extern struct netif app_netif;

struct nr_app {
  const char *name;
  const char *command;              /* shell command, or NULL for a service */
  const char *usage;                /* one help line */
  void (*run)(int argc, char **argv); /* the command; argv[0] is its name */
  void (*init)(void);               /* once, after lwIP is up; or NULL */
  void (*poll)(void);               /* every main-loop pass; or NULL */
};

#ifndef NR_APPS
#define NR_APPS
#endif

#define NR_APP(name) extern const struct nr_app nr_app_##name;
NR_APPS
#undef NR_APP

/* The built apps, in APPS order, NULL-terminated. */
extern const struct nr_app *const nr_apps[];

/* The shell's built-in commands. */
void cmd_opts(int argc, char **argv);
void cmd_ip(int argc, char **argv);
void cmd_stats(int argc, char **argv);
void cmd_uptime(int argc, char **argv);
void cmd_spin(int argc, char **argv);

/* A known instruction loop; returns the CPU cycles it took, 0 if the board cannot count them. */
uint32_t board_spin(uint32_t iterations, int irqs_off);

#endif
