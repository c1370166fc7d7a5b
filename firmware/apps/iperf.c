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
#include "app_api.h"

/* NO_SYS 0 builds with the apps on sockets or netconn have iperf_os.c instead. */
#if !NR_APPS_THREADED

#include <string.h>

#include "lwip/apps/lwiperf.h"
#include "lwip/def.h"
#include "lwip/ip_addr.h"
#include "lwip/tcp.h"

#include "nr_printf.h"
#include "apps.h"
#include "iperf_proto.h"
#include "shell.h"
#include "tx_session.h"

static void *server_handle;

static struct tx_session client;
static uint32_t client_byte_limit; /* 0: time-limited */
static uint8_t client_header[IPERF_HDR_LEN];
static uint8_t pattern[TCP_MSS + IPERF_PATTERN_PERIOD];

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
              iperf_report_name(type), ip, (unsigned)remote_port, (unsigned long)bytes,
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
    if (s->written < IPERF_HDR_LEN) {
      src = &client_header[s->written];
      len = IPERF_HDR_LEN - s->written;
    } else {
      src = &pattern[(s->written - IPERF_HDR_LEN) % IPERF_PATTERN_PERIOD];
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

static void start_client(int argc, char **argv)
{
  struct iperf_client_args args;
  err_t err;

  if (client.pcb != NULL) {
    nr_printf("ERROR: iperf client already running\n");
    return;
  }
  if (!iperf_client_args_parse(argc, argv, &args)) {
    nr_printf("ERROR: usage: " IPERF_CLIENT_USAGE "\n");
    return;
  }
  ip_addr_copy(client.remote_ip, args.ip);
  client.remote_port = args.port;
  client_byte_limit = args.bytes;
  iperf_header_write(client_header, args.port, args.bytes, args.seconds * 1000u);
  for (size_t i = 0; i < sizeof(pattern); i++) {
    pattern[i] = (uint8_t)('0' + i % IPERF_PATTERN_PERIOD);
  }
  client.duration_ms = args.bytes != 0 ? 0 : args.seconds * 1000u;
  client.fill = client_fill;
  client.done = client_done;
  err = tx_session_start(&client);
  if (err != ERR_OK) {
    client_done(&client, err);
  }
}

static void cmd_iperf(int argc, char **argv)
{
  iperf_command(argc, argv, start_server, start_client);
}

static void iperf_poll(void)
{
  tx_session_poll(&client);
}

const struct nr_app nr_app_iperf = {
  "iperf", "iperf",
  IPERF_USAGE " - iperf2 TCP test",
  cmd_iperf, NULL, iperf_poll,
};

#endif /* !NR_APPS_THREADED */
