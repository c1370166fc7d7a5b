/* The iperf apps' shared parts (iperf_proto.h). */
#include <string.h>

#include "lwip/def.h"

#include "iperf_proto.h"
#include "nr_printf.h"
#include "shell.h"

void iperf_command(int argc, char **argv, void (*server)(void), void (*client)(int argc, char **argv))
{
  if (argc == 2 && strcmp(argv[1], "server") == 0) {
    server();
  } else if (argc >= 3 && strcmp(argv[1], "client") == 0) {
    client(argc, argv);
  } else {
    nr_printf("ERROR: usage: " IPERF_USAGE "\n");
  }
}

int iperf_client_args_parse(int argc, char **argv, struct iperf_client_args *out)
{
  uint32_t port = LWIPERF_TCP_PORT_DEFAULT;
  int have_t = 0;
  ip4_addr_t ip;

  if (argc < 3 || !shell_parse_ip4(argv[2], &ip)) {
    return 0;
  }
  memset(out, 0, sizeof(*out));
  ip_addr_copy_from_ip4(out->ip, ip);
  out->seconds = IPERF_DEFAULT_SECONDS;
  for (int i = 3; i < argc; i += 2) {
    uint32_t v;

    if (i + 1 >= argc || !shell_parse_u32(argv[i + 1], &v)) {
      return 0;
    }
    if (strcmp(argv[i], "-p") == 0 && v > 0 && v <= 0xFFFFu) {
      port = v;
    } else if (strcmp(argv[i], "-t") == 0 && v > 0 && v <= 86400u && out->bytes == 0) {
      out->seconds = v;
      have_t = 1;
    } else if (strcmp(argv[i], "-n") == 0 && v > 0 && !have_t) {
      out->bytes = v;
    } else {
      return 0;
    }
  }
  out->port = (u16_t)port;
  return 1;
}

static void put_be32(uint8_t *p, uint32_t v)
{
  v = lwip_htonl(v);
  memcpy(p, &v, 4);
}

uint32_t iperf_get_be32(const uint8_t *p)
{
  uint32_t v;

  memcpy(&v, p, 4);
  return lwip_ntohl(v);
}

void iperf_header_write(uint8_t hdr[IPERF_HDR_LEN], u16_t port, uint32_t bytes, uint32_t ms)
{
  memset(hdr, 0, IPERF_HDR_LEN);
  put_be32(&hdr[IPERF_HDR_THREADS], 1);
  put_be32(&hdr[IPERF_HDR_PORT], port);
  put_be32(&hdr[IPERF_HDR_AMOUNT], bytes != 0 ? bytes : (uint32_t)-(int32_t)(ms / 10u));
}

const char *iperf_report_name(enum lwiperf_report_type type)
{
  switch (type) {
  case LWIPERF_TCP_DONE_SERVER:             return "LWIPERF_TCP_DONE_SERVER";
  case LWIPERF_TCP_DONE_CLIENT:             return "LWIPERF_TCP_DONE_CLIENT";
  case LWIPERF_TCP_ABORTED_LOCAL:           return "LWIPERF_TCP_ABORTED_LOCAL";
  case LWIPERF_TCP_ABORTED_LOCAL_DATAERROR: return "LWIPERF_TCP_ABORTED_LOCAL_DATAERROR";
  case LWIPERF_TCP_ABORTED_LOCAL_TXERROR:   return "LWIPERF_TCP_ABORTED_LOCAL_TXERROR";
  case LWIPERF_TCP_ABORTED_REMOTE:          return "LWIPERF_TCP_ABORTED_REMOTE";
  default:                                  return "LWIPERF_UNKNOWN";
  }
}
