/*
 * The "sock" command's arguments, one parser for every build of the socket
 * benchmark: the raw-API one (sockbench.c: NO_SYS 1, or NO_SYS 0 with
 * NR_APP_API_RAW) and the thread-based ones of a NO_SYS 0 build
 * (sockbench_thread.c with sockbench_socket.c or sockbench_netconn.c). The
 * harness sends the same command line to all of them
 * (harness/rig/workload.py), so they must agree on it to the letter.
 *
 *   sock tx <ip> <port> (-t <sec> | -n <bytes>) [-w <write size>]
 *   sock rx <ip> <port> (-t <sec> | -n <bytes>) [-r <read size>] [-d <us per read>]
 */
#ifndef SOCKBENCH_ARGS_H
#define SOCKBENCH_ARGS_H

#include <stdint.h>

#include "lwip/ip4_addr.h"

#define SOCK_IO_MAX     8192u /* largest write or read size: the benchmark's buffer */
#define SOCK_IO_DEFAULT 1024u

#define SOCK_USAGE "usage: sock tx <ip> <port> (-t <sec> | -n <bytes>) [-w <write size>] | " \
                   "sock rx <ip> <port> (-t <sec> | -n <bytes>) [-r <read size>] [-d <us per read>]"
/* The help line's command part; each build appends what it runs on. */
#define SOCK_HELP "sock tx <ip> <port> (-t sec | -n bytes) [-w size] | sock rx <ip> <port> (-t sec | -n bytes) " \
                  "[-r size] [-d us]"

struct sock_args {
  int tx;                 /* 1: sock tx, 0: sock rx */
  ip4_addr_t ip;
  uint16_t port;
  uint32_t limit_ms;      /* 0: no time limit */
  uint32_t limit_bytes;   /* 0: no byte limit; exactly one of the two is set */
  uint32_t io_size;       /* write size (tx) or read size (rx), 1..SOCK_IO_MAX */
  uint32_t read_delay_us; /* rx: the application's own time per read */
};

/* Parses argv (argv[0] "sock") into out. On a bad command prints its
   "ERROR: ..." line and returns 0; 1 when out holds a job to run. */
int sock_args_parse(int argc, char **argv, struct sock_args *out);

/* Whether a test that started at t0 (sys_now()) and has moved bytes is at
   its -t or -n limit. */
int sock_args_limit_reached(const struct sock_args *a, uint32_t t0, uint32_t bytes);

/* The size of the next write (tx) or read (rx) once bytes have moved: the
   -w/-r size, cut so that -n is never passed. */
uint32_t sock_args_next_io(const struct sock_args *a, uint32_t bytes);

#endif
