/*
 * printf for the console (collected in a small buffer and written in pieces,
 * so a line costs few driver calls) and for strings.
 */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "nr_printf.h"
#include "nr_board.h"

/* Output goes either to the console, through buf in pieces, or into a
   caller's string, truncated at size. */
struct out {
  char *buf;
  size_t size;
  size_t len;
  int total;
  int console;
};

static void out_flush(struct out *o)
{
  board_console_write(o->buf, o->len);
  o->len = 0;
}

static void out_char(struct out *o, char c)
{
  o->total++;
  if (o->len == o->size) {
    if (!o->console) {
      return;
    }
    out_flush(o);
  }
  o->buf[o->len++] = c;
}

static void out_repeat(struct out *o, char c, int n)
{
  while (n-- > 0) {
    out_char(o, c);
  }
}

struct spec {
  int left;      /* '-' */
  char pad;      /* ' ' or '0' */
  int width;
  int precision; /* -1: none */
};

/* Emits body (len chars) with an optional sign/prefix, padded to the width. */
static void out_field(struct out *o, const struct spec *sp, const char *prefix,
                      const char *body, int len, int zeros)
{
  int plen = (int)strlen(prefix);
  int fill = sp->width - plen - zeros - len;

  if (!sp->left && sp->pad == ' ') {
    out_repeat(o, ' ', fill);
  }
  while (*prefix) {
    out_char(o, *prefix++);
  }
  if (!sp->left && sp->pad == '0') {
    out_repeat(o, '0', fill);
  }
  out_repeat(o, '0', zeros);
  while (len-- > 0) {
    out_char(o, *body++);
  }
  if (sp->left) {
    out_repeat(o, ' ', fill);
  }
}

static void out_number(struct out *o, struct spec *sp, unsigned long long v,
                       unsigned base, int upper, const char *prefix)
{
  const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  char tmp[24];
  int n = 0;
  int zeros = 0;

  do {
    tmp[sizeof(tmp) - 1 - n++] = digits[v % base];
    v /= base;
  } while (v != 0);
  if (sp->precision >= 0) {
    sp->pad = ' ';
    if (sp->precision > n) {
      zeros = sp->precision - n;
    }
  }
  out_field(o, sp, prefix, &tmp[sizeof(tmp) - n], n, zeros);
}

enum length { LEN_INT, LEN_CHAR, LEN_SHORT, LEN_LONG, LEN_LLONG, LEN_SIZE };

static const char *parse_length(const char *f, enum length *len)
{
  *len = LEN_INT;
  if (*f == 'h') {
    *len = (f[1] == 'h') ? LEN_CHAR : LEN_SHORT;
    f += (f[1] == 'h') ? 2 : 1;
  } else if (*f == 'l') {
    *len = (f[1] == 'l') ? LEN_LLONG : LEN_LONG;
    f += (f[1] == 'l') ? 2 : 1;
  } else if (*f == 'z' || *f == 't') {
    *len = LEN_SIZE;
    f++;
  } else if (*f == 'j') {
    *len = LEN_LLONG;
    f++;
  }
  return f;
}

static unsigned long long arg_unsigned(va_list *ap, enum length len)
{
  switch (len) {
  case LEN_CHAR:  return (unsigned char)va_arg(*ap, unsigned int);
  case LEN_SHORT: return (unsigned short)va_arg(*ap, unsigned int);
  case LEN_LONG:  return va_arg(*ap, unsigned long);
  case LEN_LLONG: return va_arg(*ap, unsigned long long);
  case LEN_SIZE:  return va_arg(*ap, size_t);
  default:        return va_arg(*ap, unsigned int);
  }
}

static long long arg_signed(va_list *ap, enum length len)
{
  switch (len) {
  case LEN_CHAR:  return (signed char)va_arg(*ap, int);
  case LEN_SHORT: return (short)va_arg(*ap, int);
  case LEN_LONG:  return va_arg(*ap, long);
  case LEN_LLONG: return va_arg(*ap, long long);
  case LEN_SIZE:  return (long long)va_arg(*ap, size_t);
  default:        return va_arg(*ap, int);
  }
}

static const char *parse_spec(const char *f, struct spec *sp, va_list *ap)
{
  sp->left = 0;
  sp->pad = ' ';
  sp->width = 0;
  sp->precision = -1;
  for (;; f++) {
    if (*f == '-') {
      sp->left = 1;
    } else if (*f == '0') {
      sp->pad = '0';
    } else if (*f != ' ' && *f != '+' && *f != '#') {
      break;
    }
  }
  if (*f == '*') {
    sp->width = va_arg(*ap, int);
    f++;
  }
  while (*f >= '0' && *f <= '9') {
    sp->width = sp->width * 10 + (*f++ - '0');
  }
  if (*f == '.') {
    f++;
    sp->precision = 0;
    if (*f == '*') {
      sp->precision = va_arg(*ap, int);
      f++;
    }
    while (*f >= '0' && *f <= '9') {
      sp->precision = sp->precision * 10 + (*f++ - '0');
    }
  }
  if (sp->left) {
    sp->pad = ' ';
  }
  return f;
}

static void out_conversion(struct out *o, char conv, struct spec *sp,
                           enum length len, va_list *ap)
{
  switch (conv) {
  case 'd':
  case 'i': {
    long long v = arg_signed(ap, len);
    unsigned long long mag = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    out_number(o, sp, mag, 10, 0, v < 0 ? "-" : "");
    break;
  }
  case 'u':
    out_number(o, sp, arg_unsigned(ap, len), 10, 0, "");
    break;
  case 'x':
  case 'X':
    out_number(o, sp, arg_unsigned(ap, len), 16, conv == 'X', "");
    break;
  case 'p':
    out_number(o, sp, (uintptr_t)va_arg(*ap, void *), 16, 0, "0x");
    break;
  case 'c': {
    char c = (char)va_arg(*ap, int);
    out_field(o, sp, "", &c, 1, 0);
    break;
  }
  case 's': {
    const char *s = va_arg(*ap, const char *);
    int n = 0;
    if (s == NULL) {
      s = "(null)";
    }
    while (s[n] && (sp->precision < 0 || n < sp->precision)) {
      n++;
    }
    out_field(o, sp, "", s, n, 0);
    break;
  }
  default: /* "%%" and anything unknown are printed as is */
    out_char(o, conv);
    break;
  }
}

static void format(struct out *o, const char *fmt, va_list ap)
{
  va_list args;

  va_copy(args, ap);
  while (*fmt) {
    struct spec sp;
    enum length len;

    if (*fmt != '%') {
      out_char(o, *fmt++);
      continue;
    }
    fmt = parse_spec(fmt + 1, &sp, &args);
    fmt = parse_length(fmt, &len);
    if (*fmt == '\0') {
      break;
    }
    out_conversion(o, *fmt++, &sp, len, &args);
  }
  va_end(args);
}

int nr_vprintf(const char *fmt, va_list ap)
{
  char piece[64];
  struct out o = { .buf = piece, .size = sizeof(piece), .console = 1 };

  format(&o, fmt, ap);
  out_flush(&o);
  return o.total;
}

int nr_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
  struct out o = { .buf = buf, .size = size > 0 ? size - 1 : 0, .console = 0 };

  format(&o, fmt, ap);
  if (size > 0) {
    buf[o.len] = '\0';
  }
  return o.total;
}

int nr_printf(const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = nr_vprintf(fmt, ap);
  va_end(ap);
  return n;
}
