/* What lwIP includes stdlib.h for (netif.c: atoi). */
#ifndef XBOX_STDLIB_H
#define XBOX_STDLIB_H

#include <stddef.h>

int atoi(const char *s);
unsigned long strtoul(const char *s, char **end, int base);
void abort(void) __attribute__((noreturn));

#endif
