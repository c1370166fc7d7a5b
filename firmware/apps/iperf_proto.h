/*
 * What the two iperf apps share (iperf.c on the raw API, iperf_os.c on
 * sockets or netconn): the command's arguments and usage, iperf2's client
 * header as lwiperf reads it (lwiperf_settings_t), the pattern iperf2 sends,
 * and the report names the result lines carry (the harness parses them,
 * harness/rig/workload.py).
 */
#ifndef IPERF_PROTO_H
#define IPERF_PROTO_H

#include <stdint.h>

#include "lwip/apps/lwiperf.h"
#include "lwip/ip_addr.h"

#define IPERF_CLIENT_USAGE    "iperf client <ip> [-p port] [-t seconds | -n bytes]"
#define IPERF_USAGE           "iperf server | " IPERF_CLIENT_USAGE
#define IPERF_DEFAULT_SECONDS 10u
#define IPERF_PATTERN_PERIOD  10u   /* "0123456789" */

/* iperf2's client header: six big-endian words; the two not named here
   (buffer length, window/rate) are unused by both sides and sent as 0. */
#define IPERF_HDR_LEN     24u
#define IPERF_HDR_FLAGS    0u
#define IPERF_HDR_THREADS  4u
#define IPERF_HDR_PORT     8u  /* where the client listens for a test sent back */
#define IPERF_HDR_AMOUNT  20u  /* bytes, or (negative) hundredths of a second */
#define IPERF_FLAG_ANSWER_TEST 0x80000000u /* send a test back ... */
#define IPERF_FLAG_ANSWER_NOW  0x00000001u /* ... at once (-d), else after this one (-r) */

/* "iperf client <ip> [-p port] [-t seconds | -n bytes]" */
struct iperf_client_args {
  ip_addr_t ip;
  u16_t port;
  uint32_t seconds;     /* the test's length when bytes is 0 */
  uint32_t bytes;       /* 0: time-limited; -n counts the header */
};

/* Parses argv (argv[1] is "client"); 0 on a usage error. */
int iperf_client_args_parse(int argc, char **argv, struct iperf_client_args *out);

/* A plain one-way test's header (no flags, one thread) to the server at
   `port`: its amount is `bytes` or, when that is 0, `ms` as negative
   hundredths of a second. */
void iperf_header_write(uint8_t hdr[IPERF_HDR_LEN], u16_t port, uint32_t bytes, uint32_t ms);

uint32_t iperf_get_be32(const uint8_t *p);

/* The iperf command: "server" or "client ...", else the usage. */
void iperf_command(int argc, char **argv, void (*server)(void), void (*client)(int argc, char **argv));

/* The name lwiperf gives a report type, as the IPERF line prints it. */
const char *iperf_report_name(enum lwiperf_report_type type);

#endif
