/*
 * Console shell: line editing, command dispatch, and output that arrives
 * between prompts (reports of background tests).
 */
#ifndef SHELL_H
#define SHELL_H

#include <stdint.h>

#include "lwip/ip4_addr.h"

void shell_start(void);
void shell_poll(void);

/* Prints a complete line (ending in '\n') from a background test without
   splitting a command line that is being typed (see shell.c). */
void shell_async(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Argument parsing for commands; 1 on success. */
int shell_parse_u32(const char *s, uint32_t *out);
int shell_parse_ip4(const char *s, ip4_addr_t *out);

#endif
