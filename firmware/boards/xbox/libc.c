/*
 * The C library functions the firmware calls, written for this board
 * (there is no libc for a freestanding i386 target here). Byte loops are
 * enough except for memcpy/memset, which the pktdrv design calls for every
 * frame twice: those move 32-bit words with rep movsl/stosl, which QEMU's
 * TCG runs as a tight helper loop.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void board_console_write(const char *buf, size_t len);

void *memcpy(void *dst, const void *src, size_t n)
{
  void *ret = dst;
  size_t words = n / 4u;
  size_t rest = n % 4u;

  __asm volatile("rep movsl" : "+D"(dst), "+S"(src), "+c"(words) : : "memory");
  __asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(rest) : : "memory");
  return ret;
}

void *memmove(void *dst, const void *src, size_t n)
{
  unsigned char *d = dst;
  const unsigned char *s = src;

  if (d == s || n == 0) {
    return dst;
  }
  if (d < s || d >= s + n) {
    return memcpy(dst, src, n);
  }
  while (n-- > 0) {
    d[n] = s[n];
  }
  return dst;
}

void *memset(void *dst, int c, size_t n)
{
  void *ret = dst;
  uint32_t b = (uint8_t)c;
  uint32_t word = b * 0x01010101u;
  size_t words = n / 4u;
  size_t rest = n % 4u;

  __asm volatile("rep stosl" : "+D"(dst), "+c"(words) : "a"(word) : "memory");
  __asm volatile("rep stosb" : "+D"(dst), "+c"(rest) : "a"(word) : "memory");
  return ret;
}

int memcmp(const void *a, const void *b, size_t n)
{
  const unsigned char *x = a;
  const unsigned char *y = b;

  for (size_t i = 0; i < n; i++) {
    if (x[i] != y[i]) {
      return x[i] < y[i] ? -1 : 1;
    }
  }
  return 0;
}

size_t strlen(const char *s)
{
  size_t n = 0;

  while (s[n] != '\0') {
    n++;
  }
  return n;
}

int strncmp(const char *a, const char *b, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    unsigned char x = (unsigned char)a[i];
    unsigned char y = (unsigned char)b[i];

    if (x != y) {
      return x < y ? -1 : 1;
    }
    if (x == '\0') {
      break;
    }
  }
  return 0;
}

int strcmp(const char *a, const char *b)
{
  return strncmp(a, b, SIZE_MAX);
}

char *strchr(const char *s, int c)
{
  for (;; s++) {
    if (*s == (char)c) {
      return (char *)s;
    }
    if (*s == '\0') {
      return NULL;
    }
  }
}

char *strncpy(char *dst, const char *src, size_t n)
{
  size_t i = 0;

  for (; i < n && src[i] != '\0'; i++) {
    dst[i] = src[i];
  }
  for (; i < n; i++) {
    dst[i] = '\0';
  }
  return dst;
}

static int digit_value(char c)
{
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'z') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'Z') {
    return c - 'A' + 10;
  }
  return 99;
}

unsigned long strtoul(const char *s, char **end, int base)
{
  unsigned long v = 0;

  while (*s == ' ' || *s == '\t') {
    s++;
  }
  if (*s == '+') {
    s++;
  }
  if ((base == 0 || base == 16) && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s += 2;
    base = 16;
  } else if (base == 0) {
    base = s[0] == '0' ? 8 : 10;
  }
  for (; digit_value(*s) < base; s++) {
    v = v * (unsigned long)base + (unsigned long)digit_value(*s);
  }
  if (end != NULL) {
    *end = (char *)s;
  }
  return v;
}

int atoi(const char *s)
{
  int neg = 0;

  while (*s == ' ' || *s == '\t') {
    s++;
  }
  if (*s == '-' || *s == '+') {
    neg = *s == '-';
    s++;
  }
  return neg ? -(int)strtoul(s, NULL, 10) : (int)strtoul(s, NULL, 10);
}

void abort(void)
{
  static const char msg[] = "\nFAULT abort\n";

  board_console_write(msg, sizeof(msg) - 1u);
  for (;;) {
    __asm volatile("cli\n\thlt");
  }
}

#if NR_KERNEL
#include "nr_kernel.h"

/* Each thread's own (the kernel's), so a socket call's error in one thread
   is not overwritten by another's before it is read. */
int *nr_libc_errno(void)
{
  return nr_thread_errno();
}
#else
static int errno_value;

int *nr_libc_errno(void)
{
  return &errno_value;
}
#endif
