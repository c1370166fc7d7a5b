/*
 * Small printf for the console and for strings (no libc stdio):
 * %d %i %u %x %X %c %s %p %%, flags '-' and '0', width and precision
 * ('*' too), length modifiers hh h l ll z j t.
 */
#ifndef NR_PRINTF_H
#define NR_PRINTF_H

#include <stdarg.h>
#include <stddef.h>

int nr_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int nr_vprintf(const char *fmt, va_list ap);
/* Like vsnprintf: truncates to size - 1 characters, returns the full length. */
int nr_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);

#endif
