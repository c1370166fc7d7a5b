/*
 * "iperf" on lwIP's sequential APIs, for a NO_SYS 0 build whose apps are on
 * BSD sockets (NR_APP_API_SOCKET) or netconn (NR_APP_API_NETCONN), as NO_SYS 0
 * products run their iperf: blocking calls in application threads, lwIP's
 * core in the tcpip thread. The raw-API iperf.c (lwiperf) stays for NO_SYS 1
 * and NR_APP_API_RAW; this file gives the same commands and result lines,
 * which the harness parses (harness/rig/workload.py):
 *   iperf server
 *   iperf client <ip> [-p port] [-t seconds | -n bytes]
 *   IPERF role=<server|client> report=<...> remote=<ip>:<port> bytes=<n> ms=<n> kbps=<n>
 *
 * Two threads: the server's (listen on 5001, accept, read iperf2's 24-byte
 * header, count bytes until EOF) and the sender's (one outgoing stream at a
 * time). The sender serves both "iperf client" and the tests the server
 * sends back, as lwiperf does, with the names lwiperf reports: the received
 * test as LWIPERF_TCP_DONE_SERVER, the one sent back (dual -d: at once,
 * while the server goes on receiving; tradeoff -r: once the received one has
 * ended) as LWIPERF_TCP_DONE_CLIENT, both role=server. A stream is a 24-byte
 * header with no flags (a plain one-way test for the other side), then the
 * "0123456789" pattern, written as fast as the send buffer takes it, for the
 * time (board ms, sys_now()) or bytes asked; then our side is shut and the
 * stream timed until the peer closes in turn, i.e. has every byte.
 *
 * Counts: bytes are every byte of the stream, its header included (as the
 * peer's iperf2 counts them); ms runs from the connection (accept or connect
 * returning) to the peer's EOF. kbps = bytes * 8 / ms. lwiperf differs: it
 * counts its first segment as the header alone and times a test sent back
 * only until its last write.
 *
 * The commands run with lwIP's core held (main_os.c) and so only hand work
 * to the threads; the threads hand their result lines to the tcpip thread to
 * print (shell_async() there), so the console has one writer at a time.
 *
 * The two APIs differ only in the small layer below (io_*); everything else
 * is shared.
 */
#include "app_api.h"

#if NR_APPS_THREADED

#include <stdarg.h>
#include <string.h>

#include "lwip/apps/lwiperf.h"
#include "lwip/def.h"
#include "lwip/ip_addr.h"
#include "lwip/sys.h"
#include "lwip/tcpip.h"
#if NR_APP_API == NR_APP_API_SOCKET
#include <errno.h>
#include "lwip/sockets.h"
#else
#include "lwip/api.h"
#include "lwip/pbuf.h"
#endif

#include "nr_printf.h"
#include "apps.h"
#include "iperf_proto.h"
#include "shell.h"
#include "tx_session.h"

#define IPERF_PORT            LWIPERF_TCP_PORT_DEFAULT
/* Where the options file compiles receive/send timeouts in, a connection
   idle this long ends its test, as lwiperf's LWIPERF_TCP_MAX_IDLE_SEC does,
   instead of holding its thread for good. */
#define IPERF_IDLE_MS         10000u
/* Bytes per write and per read: a multiple of the pattern's period, so
   back-to-back writes of the one buffer keep the pattern continuous. */
#define IPERF_IO_SIZE         8000u

/* ---- the API layer: the one place sockets and netconn differ ----
   Each call returns ERR_OK or lwIP's err_t; io_recv() returns the length of
   the next piece of the stream (0 at the peer's EOF, a negative err_t on
   error) and copies its first head_len bytes to head. */

#if NR_APP_API == NR_APP_API_SOCKET

typedef int io_conn;
#define IO_API_NAME "BSD sockets"

/* Where reads go once the header is in: only ever written, so the two
   threads may share it. */
static uint8_t sink[IPERF_IO_SIZE];

/* The err_t behind the errno a failed call left. newlib's errno is one for
   the whole firmware, read at once after the call: another thread's call in
   between can only change which error a failed test names. */
static err_t sock_err(void)
{
  int e = errno;

  for (err_t err = ERR_MEM; err >= ERR_ARG; err--) {
    if (err_to_errno(err) == e) {
      return err;
    }
  }
  return ERR_VAL;
}

static void set_timeouts(int s)
{
#if LWIP_SO_SNDRCVTIMEO_NONSTANDARD
  int t = IPERF_IDLE_MS;
#else
  struct timeval t = { IPERF_IDLE_MS / 1000u, 0 };
#endif

  LWIP_UNUSED_ARG(s);
  LWIP_UNUSED_ARG(t);
#if LWIP_SO_RCVTIMEO
  (void)lwip_setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof(t));
#endif
#if LWIP_SO_SNDTIMEO
  (void)lwip_setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof(t));
#endif
}

static void to_sockaddr(struct sockaddr_in *sa, const ip_addr_t *ip, u16_t port)
{
  memset(sa, 0, sizeof(*sa));
  sa->sin_len = sizeof(*sa);
  sa->sin_family = AF_INET;
  sa->sin_port = lwip_htons(port);
  sa->sin_addr.s_addr = ip_addr_get_ip4_u32(ip);
}

static err_t io_listen(u16_t port, io_conn *out)
{
  struct sockaddr_in sa;
  int s = lwip_socket(AF_INET, SOCK_STREAM, 0);

  if (s < 0) {
    return sock_err();
  }
  to_sockaddr(&sa, IP_ADDR_ANY, port);
  if (lwip_bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0 || lwip_listen(s, 1) != 0) {
    err_t err = sock_err();
    lwip_close(s);
    return err;
  }
  *out = s;
  return ERR_OK;
}

static err_t io_accept(io_conn listener, io_conn *out, ip_addr_t *ip, u16_t *port)
{
  struct sockaddr_in sa;
  socklen_t len = sizeof(sa);
  int s = lwip_accept(listener, (struct sockaddr *)&sa, &len);

  if (s < 0) {
    return sock_err();
  }
  ip_addr_set_ip4_u32(ip, sa.sin_addr.s_addr);
  *port = lwip_ntohs(sa.sin_port);
  set_timeouts(s);
  *out = s;
  return ERR_OK;
}

static err_t io_connect(const ip_addr_t *ip, u16_t port, io_conn *out)
{
  struct sockaddr_in sa;
  int s = lwip_socket(AF_INET, SOCK_STREAM, 0);

  if (s < 0) {
    return sock_err();
  }
  set_timeouts(s);
  to_sockaddr(&sa, ip, port);
  if (lwip_connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
    err_t err = sock_err();
    lwip_close(s);
    return err;
  }
  *out = s;
  return ERR_OK;
}

static err_t io_send(io_conn s, const uint8_t *data, size_t len)
{
  /* A blocking send returns once all of it is queued. */
  return lwip_send(s, data, len, 0) == (int)len ? ERR_OK : sock_err();
}

static int io_recv(io_conn s, uint8_t *head, size_t head_len)
{
  int n = head_len != 0 ? lwip_recv(s, head, head_len, 0) : lwip_recv(s, sink, sizeof(sink), 0);

  return n >= 0 ? n : sock_err();
}

static err_t io_shutdown_tx(io_conn s)
{
  return lwip_shutdown(s, SHUT_WR) == 0 ? ERR_OK : sock_err();
}

static void io_close(io_conn s)
{
  (void)lwip_close(s);
}

#else /* NR_APP_API_NETCONN */

typedef struct netconn *io_conn;
#define IO_API_NAME "netconn"

static void set_timeouts(struct netconn *conn)
{
  LWIP_UNUSED_ARG(conn);
#if LWIP_SO_RCVTIMEO
  netconn_set_recvtimeout(conn, IPERF_IDLE_MS);
#endif
#if LWIP_SO_SNDTIMEO
  netconn_set_sendtimeout(conn, IPERF_IDLE_MS);
#endif
}

static void io_close(struct netconn *conn)
{
  (void)netconn_close(conn);
  (void)netconn_delete(conn);
}

static err_t io_listen(u16_t port, io_conn *out)
{
  struct netconn *conn = netconn_new(NETCONN_TCP);
  err_t err;

  if (conn == NULL) {
    return ERR_MEM;
  }
  err = netconn_bind(conn, IP_ADDR_ANY, port);
  if (err == ERR_OK) {
    err = netconn_listen(conn);
  }
  if (err != ERR_OK) {
    (void)netconn_delete(conn);
    return err;
  }
  *out = conn;
  return ERR_OK;
}

static err_t io_accept(io_conn listener, io_conn *out, ip_addr_t *ip, u16_t *port)
{
  struct netconn *conn;
  err_t err = netconn_accept(listener, &conn);

  if (err != ERR_OK) {
    return err;
  }
  err = netconn_peer(conn, ip, port);
  if (err != ERR_OK) {
    io_close(conn);
    return err;
  }
  set_timeouts(conn);
  *out = conn;
  return ERR_OK;
}

static err_t io_connect(const ip_addr_t *ip, u16_t port, io_conn *out)
{
  struct netconn *conn = netconn_new(NETCONN_TCP);
  err_t err;

  if (conn == NULL) {
    return ERR_MEM;
  }
  set_timeouts(conn);
  err = netconn_connect(conn, ip, port);
  if (err != ERR_OK) {
    (void)netconn_delete(conn);
    return err;
  }
  *out = conn;
  return ERR_OK;
}

/* NETCONN_COPY, as lwip_send() and the raw iperf.c's tcp_write() copy too:
   the three builds then differ in how the data reaches lwIP's core, not in
   what it does there. */
static err_t io_send(io_conn conn, const uint8_t *data, size_t len)
{
  return netconn_write(conn, data, len, NETCONN_COPY);
}

/* The segments' pbufs are only counted: a netconn application need not
   copy them out, and lwIP opens the window as each is taken. */
static int io_recv(io_conn conn, uint8_t *head, size_t head_len)
{
  struct pbuf *p;
  err_t err = netconn_recv_tcp_pbuf(conn, &p);
  int n;

  if (err == ERR_CLSD) {
    return 0;
  }
  if (err != ERR_OK) {
    return err;
  }
  n = p->tot_len;
  if (head_len != 0) {
    (void)pbuf_copy_partial(p, head, (u16_t)LWIP_MIN(head_len, (size_t)n), 0);
  }
  pbuf_free(p);
  return n;
}

static err_t io_shutdown_tx(io_conn conn)
{
  return netconn_shutdown(conn, 0, 1);
}

#endif /* NR_APP_API */

/* ---- result lines, printed by the tcpip thread ---- */

/* One per thread: its line stays put until the tcpip thread has printed it. */
struct reporter {
  char line[160];
  sys_sem_t printed;
};

static void print_line(void *arg)
{
  struct reporter *r = arg;

  shell_async("%s", r->line);
  sys_sem_signal(&r->printed);
}

static void report(struct reporter *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void report(struct reporter *r, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  (void)nr_vsnprintf(r->line, sizeof(r->line), fmt, ap);
  va_end(ap);
  if (tcpip_callback(print_line, r) == ERR_OK) {
    (void)sys_arch_sem_wait(&r->printed, 0);
  }
}

static void report_server(struct reporter *r, enum lwiperf_report_type type, const ip_addr_t *ip,
                          u16_t port, uint32_t bytes, uint32_t ms)
{
  char addr[IPADDR_STRLEN_MAX];

  ipaddr_ntoa_r(ip, addr, sizeof(addr));
  report(r, "IPERF role=server report=%s remote=%s:%u bytes=%lu ms=%lu kbps=%lu\n", iperf_report_name(type),
         addr, (unsigned)port, (unsigned long)bytes, (unsigned long)ms, (unsigned long)tx_kbps(bytes, ms));
}

/* ---- the sender: one outgoing stream at a time ---- */

struct stream {
  ip_addr_t ip;
  u16_t port;
  uint32_t limit_ms;    /* 0: no time limit */
  uint32_t limit_bytes; /* 0: no byte limit; exactly one of the two is set */
  int back;             /* a test the server sends back, not "iperf client" */
};

static struct stream stream;
static volatile int sender_busy;
static sys_sem_t sender_go;
static struct reporter sender_report;
/* The header, then the pattern; the first write starts at the header, the
   others at the pattern. */
static uint8_t tx_buf[IPERF_HDR_LEN + IPERF_IO_SIZE];

/* Claims the sender for a new stream (from the command or the server's
   thread); 0 if it is busy. */
static int claim_sender(void)
{
  SYS_ARCH_DECL_PROTECT(lev);
  int claimed;

  SYS_ARCH_PROTECT(lev);
  claimed = !sender_busy;
  sender_busy = 1;
  SYS_ARCH_UNPROTECT(lev);
  return claimed;
}

static err_t send_all(io_conn c, uint32_t t0, uint32_t *sent)
{
  for (;;) {
    size_t off = *sent == 0 ? 0 : IPERF_HDR_LEN;
    size_t len = sizeof(tx_buf) - off;
    err_t err;

    if ((stream.limit_ms != 0 && (uint32_t)(sys_now() - t0) >= stream.limit_ms) ||
        (stream.limit_bytes != 0 && *sent >= stream.limit_bytes)) {
      return ERR_OK;
    }
    if (stream.limit_bytes != 0) {
      len = LWIP_MIN(len, stream.limit_bytes - *sent);
    }
    err = io_send(c, &tx_buf[off], len);
    if (err != ERR_OK) {
      return err;
    }
    *sent += (uint32_t)len;
  }
}

static void run_stream(void)
{
  char addr[IPADDR_STRLEN_MAX];
  uint32_t sent = 0;
  uint32_t ms = 0;
  int connected = 0;
  io_conn c;
  err_t err;

  iperf_header_write(tx_buf, stream.port, stream.limit_bytes, stream.limit_ms);
  err = io_connect(&stream.ip, stream.port, &c);
  if (err == ERR_OK) {
    uint32_t t0 = sys_now();
    int n = 0;

    connected = 1;
    err = send_all(c, t0, &sent);
    if (err == ERR_OK) {
      err = io_shutdown_tx(c);
    }
    while (err == ERR_OK && (n = io_recv(c, NULL, 0)) > 0) {
    }
    if (err == ERR_OK && n < 0) {
      err = (err_t)n;
    }
    ms = sys_now() - t0;
    io_close(c);
  }
  if (stream.back) {
    enum lwiperf_report_type type = err == ERR_OK ? LWIPERF_TCP_DONE_CLIENT
                                    : connected ? LWIPERF_TCP_ABORTED_REMOTE : LWIPERF_TCP_ABORTED_LOCAL;
    report_server(&sender_report, type, &stream.ip, stream.port, sent, ms);
    return;
  }
  ipaddr_ntoa_r(&stream.ip, addr, sizeof(addr));
  if (err == ERR_OK) {
    report(&sender_report, "IPERF role=client report=done remote=%s:%u bytes=%lu ms=%lu kbps=%lu\n",
           addr, (unsigned)stream.port, (unsigned long)sent, (unsigned long)ms,
           (unsigned long)tx_kbps(sent, ms));
  } else {
    report(&sender_report, "IPERF role=client report=error remote=%s:%u bytes=%lu ms=%lu kbps=%lu err=%s\n",
           addr, (unsigned)stream.port, (unsigned long)sent, (unsigned long)ms,
           (unsigned long)tx_kbps(sent, ms), tx_err_name(err));
  }
}

static void sender_thread(void *arg)
{
  LWIP_UNUSED_ARG(arg);
  for (size_t i = 0; i < IPERF_IO_SIZE; i++) {
    tx_buf[IPERF_HDR_LEN + i] = (uint8_t)('0' + i % IPERF_PATTERN_PERIOD);
  }
  for (;;) {
    (void)sys_arch_sem_wait(&sender_go, 0);
    run_stream();
    sender_busy = 0;
  }
}

/* ---- the server ---- */

static volatile int server_started;
static sys_sem_t server_go;
static struct reporter server_report;

/* The test the client asked back (hdr), to its address; 0 if the sender
   is busy with another stream. */
static int send_back(const uint8_t *hdr, const ip_addr_t *ip)
{
  uint32_t amount = iperf_get_be32(&hdr[IPERF_HDR_AMOUNT]);

  if (!claim_sender()) {
    return 0;
  }
  memset(&stream, 0, sizeof(stream));
  ip_addr_copy(stream.ip, *ip);
  stream.port = (u16_t)iperf_get_be32(&hdr[IPERF_HDR_PORT]);
  if (amount & 0x80000000u) {
    stream.limit_ms = (uint32_t)-(int32_t)amount * 10u;
  } else {
    stream.limit_bytes = amount;
  }
  if (stream.limit_ms == 0 && stream.limit_bytes == 0) {
    stream.limit_ms = IPERF_DEFAULT_SECONDS * 1000u;
  }
  stream.back = 1;
  sys_sem_signal(&sender_go);
  return 1;
}

static void serve(io_conn c, const ip_addr_t *ip, u16_t port)
{
  enum lwiperf_report_type type = LWIPERF_TCP_DONE_SERVER;
  uint8_t hdr[IPERF_HDR_LEN];
  size_t have = 0;
  uint32_t bytes = 0;
  uint32_t t0 = sys_now();
  uint32_t flags = 0;
  uint32_t ms;

  for (;;) {
    int n = io_recv(c, &hdr[have], IPERF_HDR_LEN - have);

    if (n == 0) {
      break;
    }
    if (n < 0) {
      type = (err_t)n == ERR_TIMEOUT || (err_t)n == ERR_WOULDBLOCK ? LWIPERF_TCP_ABORTED_LOCAL
                                                                  : LWIPERF_TCP_ABORTED_REMOTE;
      break;
    }
    bytes += (uint32_t)n;
    if (have < IPERF_HDR_LEN) {
      have += LWIP_MIN((size_t)n, IPERF_HDR_LEN - have);
      if (have == IPERF_HDR_LEN) {
        flags = iperf_get_be32(&hdr[IPERF_HDR_FLAGS]);
        if ((flags & (IPERF_FLAG_ANSWER_TEST | IPERF_FLAG_ANSWER_NOW)) == (IPERF_FLAG_ANSWER_TEST | IPERF_FLAG_ANSWER_NOW) &&
            !send_back(hdr, ip)) {
          type = LWIPERF_TCP_ABORTED_LOCAL_TXERROR;
          break;
        }
      }
    }
  }
  ms = sys_now() - t0;
  io_close(c);
  report_server(&server_report, type, ip, port, bytes, ms);
  if (type == LWIPERF_TCP_DONE_SERVER && (flags & (IPERF_FLAG_ANSWER_TEST | IPERF_FLAG_ANSWER_NOW)) == IPERF_FLAG_ANSWER_TEST &&
      !send_back(hdr, ip)) {
    report_server(&server_report, LWIPERF_TCP_ABORTED_LOCAL_TXERROR, ip, (u16_t)iperf_get_be32(&hdr[IPERF_HDR_PORT]), 0, 0);
  }
}

static void server_thread(void *arg)
{
  io_conn listener;

  LWIP_UNUSED_ARG(arg);
  for (;;) {
    err_t err;

    (void)sys_arch_sem_wait(&server_go, 0);
    err = io_listen(IPERF_PORT, &listener);
    if (err == ERR_OK) {
      break;
    }
    report(&server_report, "ERROR: iperf server could not listen on port %d: %s\n", IPERF_PORT,
           tx_err_name(err));
    server_started = 0;
  }
  for (;;) {
    ip_addr_t ip;
    u16_t port;
    io_conn c;

    if (io_accept(listener, &c, &ip, &port) == ERR_OK) {
      serve(c, &ip, port);
    } else {
      /* A connection reset before it was accepted costs nothing, but a
         lasting failure (no netconn left) must not spin this thread at its
         priority, above the shell's. */
      sys_msleep(10);
    }
  }
}

/* ---- the command ---- */

static sys_thread_t server_tid;
static sys_thread_t sender_tid;

static void start_server(void)
{
  if (server_tid == NULL) {
    nr_printf("ERROR: the iperf server's thread did not start\n");
    return;
  }
  if (!server_started) {
    server_started = 1;
    sys_sem_signal(&server_go);
  }
  nr_printf("iperf server listening on port %d\n", IPERF_PORT);
}

static void start_client(int argc, char **argv)
{
  struct iperf_client_args args;

  if (!iperf_client_args_parse(argc, argv, &args)) {
    nr_printf("ERROR: usage: " IPERF_CLIENT_USAGE "\n");
    return;
  }
  if (sender_tid == NULL) {
    nr_printf("ERROR: the iperf sender's thread did not start\n");
    return;
  }
  if (!claim_sender()) {
    nr_printf("ERROR: iperf client already running\n");
    return;
  }
  memset(&stream, 0, sizeof(stream));
  ip_addr_copy(stream.ip, args.ip);
  stream.port = args.port;
  stream.limit_bytes = args.bytes;
  stream.limit_ms = args.bytes != 0 ? 0 : args.seconds * 1000u;
  sys_sem_signal(&sender_go);
}

static void cmd_iperf(int argc, char **argv)
{
  iperf_command(argc, argv, start_server, start_client);
}

static void iperf_init(void)
{
  if (sys_sem_new(&server_go, 0) != ERR_OK || sys_sem_new(&sender_go, 0) != ERR_OK ||
      sys_sem_new(&server_report.printed, 0) != ERR_OK || sys_sem_new(&sender_report.printed, 0) != ERR_OK) {
    return;
  }
  server_tid = sys_thread_new("iperf_srv", server_thread, NULL, NR_APP_THREAD_STACKSIZE, NR_APP_THREAD_PRIO);
  sender_tid = sys_thread_new("iperf_tx", sender_thread, NULL, NR_APP_THREAD_STACKSIZE, NR_APP_THREAD_PRIO);
}

const struct nr_app nr_app_iperf = {
  "iperf", "iperf",
  IPERF_USAGE " - iperf2 TCP test on "
  IO_API_NAME " (application threads)",
  cmd_iperf, iperf_init, NULL,
};

#endif /* NR_APPS_THREADED */
