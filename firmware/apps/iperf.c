/*
 * "iperf server": lwIP's lwiperf TCP server on port 5001. lwiperf itself
 * answers iperf2's dual (-d) and tradeoff (-r) requests by connecting back
 * to the client; those tests report as LWIPERF_TCP_DONE_CLIENT.
 *
 * "iperf client <ip> [-p port] [-t seconds | -n bytes]": lwiperf 2.1.3's
 * client has a fixed 10 s duration, so this is a small iperf2-compatible
 * client: a 24-byte iperf2 header with no flags (a plain one-way test for
 * any iperf2 server), then the "0123456789" pattern written with
 * tcp_write(COPY) as fast as the send buffer allows, then FIN. -n counts the
 * header; ms runs from the connection being established until our FIN is
 * acknowledged.
 *
 * Every finished test prints one line:
 *   IPERF role=<server|client> report=<...> remote=<ip>:<port> bytes=<n> ms=<n> kbps=<n>
 * kbps is bytes * 8 / ms (k = 1000). A client error adds " err=<lwIP error>".
 */
#include "lwip/opt.h"

/* NO_SYS 0 builds with the apps on sockets or netconn have iperf_os.c instead. */
#if NO_SYS || NR_APP_API == NR_APP_API_RAW

#include <string.h>

#include "lwip/apps/lwiperf.h"
#include "lwip/def.h"
#include "lwip/ip_addr.h"
#include "lwip/tcp.h"

#include "nr_printf.h"
#include "apps.h"
#include "shell.h"
#include "tx_session.h"

#define IPERF_DEFAULT_SECONDS 10u
#define IPERF_HEADER_LEN 24u
#define PATTERN_PERIOD 10u

static void *server_handle;

static struct tx_session client;
static uint32_t client_byte_limit; /* 0: time-limited */
static uint8_t client_header[IPERF_HEADER_LEN];
static uint8_t pattern[TCP_MSS + PATTERN_PERIOD];

static const char *report_name(enum lwiperf_report_type type)
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

static void server_report(void *arg, enum lwiperf_report_type type,
                          const ip_addr_t *local_addr, u16_t local_port,
                          const ip_addr_t *remote_addr, u16_t remote_port,
                          u32_t bytes, u32_t ms, u32_t kbps_lwiperf)
{
  char ip[IPADDR_STRLEN_MAX];

  LWIP_UNUSED_ARG(arg);
  LWIP_UNUSED_ARG(local_addr);
  LWIP_UNUSED_ARG(local_port);
  LWIP_UNUSED_ARG(kbps_lwiperf); /* (bytes / ms) * 8 loses precision */
  ipaddr_ntoa_r(remote_addr, ip, sizeof(ip));
  shell_async("IPERF role=server report=%s remote=%s:%u bytes=%lu ms=%lu kbps=%lu\n",
              report_name(type), ip, (unsigned)remote_port, (unsigned long)bytes,
              (unsigned long)ms, (unsigned long)tx_kbps(bytes, ms));
}

static void start_server(void)
{
  if (server_handle == NULL) {
    server_handle = lwiperf_start_tcp_server_default(server_report, NULL);
  }
  if (server_handle == NULL) {
    nr_printf("ERROR: iperf server could not listen on port %d\n", LWIPERF_TCP_PORT_DEFAULT);
    return;
  }
  nr_printf("iperf server listening on port %d\n", LWIPERF_TCP_PORT_DEFAULT);
}

static void put_be32(uint8_t *p, uint32_t v)
{
  v = lwip_htonl(v);
  memcpy(p, &v, 4);
}

/* iperf2 client header: flags, threads, port, buffer length, window/rate,
   amount (bytes, or negative hundredths of a second). */
static void build_header(uint32_t amount)
{
  put_be32(&client_header[0], 0);
  put_be32(&client_header[4], 1);
  put_be32(&client_header[8], client.remote_port);
  put_be32(&client_header[12], 0);
  put_be32(&client_header[16], 0);
  put_be32(&client_header[20], amount);
}

static int client_fill(struct tx_session *s)
{
  for (;;) {
    uint32_t space = tcp_sndbuf(s->pcb);
    const uint8_t *src;
    uint32_t len;
    err_t err;

    if (client_byte_limit != 0 && s->written >= client_byte_limit) {
      return TX_ALL_WRITTEN;
    }
    if (s->written < IPERF_HEADER_LEN) {
      src = &client_header[s->written];
      len = IPERF_HEADER_LEN - s->written;
    } else {
      src = &pattern[(s->written - IPERF_HEADER_LEN) % PATTERN_PERIOD];
      len = TCP_MSS;
    }
    len = LWIP_MIN(len, space);
    if (client_byte_limit != 0) {
      len = LWIP_MIN(len, client_byte_limit - s->written);
    }
    if (len == 0) {
      return TX_MORE;
    }
    err = tcp_write(s->pcb, src, (u16_t)len, TCP_WRITE_FLAG_COPY);
    if (err == ERR_MEM) {
      return TX_MORE;
    }
    if (err != ERR_OK) {
      return err;
    }
    s->written += len;
  }
}

static void client_done(struct tx_session *s, err_t err)
{
  char ip[IPADDR_STRLEN_MAX];
  uint32_t ms = s->established ? s->t_done - s->t_established : 0;

  ipaddr_ntoa_r(&s->remote_ip, ip, sizeof(ip));
  if (err == ERR_OK) {
    shell_async("IPERF role=client report=done remote=%s:%u bytes=%lu ms=%lu kbps=%lu\n",
                ip, (unsigned)s->remote_port, (unsigned long)s->written,
                (unsigned long)ms, (unsigned long)tx_kbps(s->written, ms));
  } else {
    shell_async("IPERF role=client report=error remote=%s:%u bytes=%lu ms=%lu kbps=%lu err=%s\n",
                ip, (unsigned)s->remote_port, (unsigned long)s->written,
                (unsigned long)ms, (unsigned long)tx_kbps(s->written, ms), tx_err_name(err));
  }
}

/* Parses "<ip> [-p port] [-t seconds | -n bytes]" into the client session. */
static int parse_client_args(int argc, char **argv, uint32_t *seconds)
{
  uint32_t port = LWIPERF_TCP_PORT_DEFAULT;
  int have_t = 0;
  ip4_addr_t ip;

  if (argc < 3 || !shell_parse_ip4(argv[2], &ip)) {
    return 0;
  }
  ip_addr_copy_from_ip4(client.remote_ip, ip);
  *seconds = IPERF_DEFAULT_SECONDS;
  client_byte_limit = 0;
  for (int i = 3; i < argc; i += 2) {
    uint32_t v;
    if (i + 1 >= argc || !shell_parse_u32(argv[i + 1], &v)) {
      return 0;
    }
    if (strcmp(argv[i], "-p") == 0 && v > 0 && v <= 0xFFFFu) {
      port = v;
    } else if (strcmp(argv[i], "-t") == 0 && v > 0 && v <= 86400u && client_byte_limit == 0) {
      *seconds = v;
      have_t = 1;
    } else if (strcmp(argv[i], "-n") == 0 && v > 0 && !have_t) {
      client_byte_limit = v;
    } else {
      return 0;
    }
  }
  client.remote_port = (u16_t)port;
  return 1;
}

static void start_client(int argc, char **argv)
{
  uint32_t seconds;
  err_t err;

  if (client.pcb != NULL) {
    nr_printf("ERROR: iperf client already running\n");
    return;
  }
  if (!parse_client_args(argc, argv, &seconds)) {
    nr_printf("ERROR: usage: iperf client <ip> [-p port] [-t seconds | -n bytes]\n");
    return;
  }
  build_header(client_byte_limit != 0 ? client_byte_limit : (uint32_t)-(int32_t)(seconds * 100u));
  for (size_t i = 0; i < sizeof(pattern); i++) {
    pattern[i] = (uint8_t)('0' + i % PATTERN_PERIOD);
  }
  client.duration_ms = client_byte_limit != 0 ? 0 : seconds * 1000u;
  client.fill = client_fill;
  client.done = client_done;
  err = tx_session_start(&client);
  if (err != ERR_OK) {
    client_done(&client, err);
  }
}

static void cmd_iperf(int argc, char **argv)
{
  if (argc == 2 && strcmp(argv[1], "server") == 0) {
    start_server();
  } else if (argc >= 3 && strcmp(argv[1], "client") == 0) {
    start_client(argc, argv);
  } else {
    nr_printf("ERROR: usage: iperf server | iperf client <ip> [-p port] [-t seconds | -n bytes]\n");
  }
}

static void iperf_poll(void)
{
  tx_session_poll(&client);
}

const struct nr_app nr_app_iperf = {
  "iperf", "iperf",
  "iperf server | iperf client <ip> [-p port] [-t seconds | -n bytes] - iperf2 TCP test",
  cmd_iperf, NULL, iperf_poll,
};

#endif /* NO_SYS || NR_APP_API == NR_APP_API_RAW */
