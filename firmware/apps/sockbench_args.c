/*
 * The "sock" command's parser (sockbench_args.h), shared by the raw-API
 * benchmark and the thread-based ones so that a command line one accepts
 * the others accept alike, with the same ERROR lines.
 */
#include <string.h>

#include "lwip/def.h"
#include "lwip/sys.h"

#include "nr_printf.h"
#include "shell.h"
#include "sockbench_args.h"

/* The "-x <value>" options after <port>; 1 on success. */
static int parse_options(int argc, char **argv, struct sock_args *a)
{
  for (int i = 4; i < argc; i += 2) {
    uint32_t v;

    if (i + 1 >= argc || argv[i][0] != '-' || argv[i][1] == '\0' || argv[i][2] != '\0' ||
        !shell_parse_u32(argv[i + 1], &v)) {
      return 0;
    }
    switch (argv[i][1]) {
    case 't': a->limit_ms = v * 1000u; break;
    case 'n': a->limit_bytes = v; break;
    case 'w': if (!a->tx) { return 0; } a->io_size = v; break;
    case 'r': if (a->tx) { return 0; } a->io_size = v; break;
    case 'd': if (a->tx) { return 0; } a->read_delay_us = v; break;
    default: return 0;
    }
  }
  /* exactly one of -t and -n, each nonzero */
  return (a->limit_ms != 0) != (a->limit_bytes != 0);
}

int sock_args_parse(int argc, char **argv, struct sock_args *out)
{
  uint32_t port;

  memset(out, 0, sizeof(*out));
  out->io_size = SOCK_IO_DEFAULT;
  if (argc < 4 || (strcmp(argv[1], "tx") != 0 && strcmp(argv[1], "rx") != 0) ||
      !shell_parse_ip4(argv[2], &out->ip) || !shell_parse_u32(argv[3], &port) ||
      port == 0 || port > 0xFFFFu) {
    nr_printf("ERROR: %s\n", SOCK_USAGE);
    return 0;
  }
  out->tx = argv[1][0] == 't';
  out->port = (uint16_t)port;
  if (!parse_options(argc, argv, out)) {
    nr_printf("ERROR: %s\n", SOCK_USAGE);
    return 0;
  }
  if (out->io_size == 0 || out->io_size > SOCK_IO_MAX) {
    nr_printf("ERROR: write/read size must be 1..%u\n", (unsigned)SOCK_IO_MAX);
    return 0;
  }
  return 1;
}

int sock_args_limit_reached(const struct sock_args *a, uint32_t t0, uint32_t bytes)
{
  return (a->limit_ms != 0 && (uint32_t)(sys_now() - t0) >= a->limit_ms) ||
         (a->limit_bytes != 0 && bytes >= a->limit_bytes);
}

uint32_t sock_args_next_io(const struct sock_args *a, uint32_t bytes)
{
  return a->limit_bytes != 0 ? LWIP_MIN(a->io_size, a->limit_bytes - bytes) : a->io_size;
}
