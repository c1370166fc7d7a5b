/*
 * "sock" on BSD sockets: the socket benchmark of sockbench.c for a NO_SYS 0
 * build with LWIP_SOCKET 1, where an application uses lwIP the way most
 * lwIP products do: lwip_socket(), lwip_connect(), then blocking
 * lwip_send()/lwip_recv() in a thread of its own, lwIP's core in the tcpip
 * thread. Same command and result lines as sockbench.c (the harness parses
 * them, harness/rig/workload.py):
 *   sock tx <ip> <port> (-t <sec> | -n <bytes>) [-w <write size>]
 *   sock rx <ip> <port> (-t <sec> | -n <bytes>) [-r <read size>] [-d <us per read>]
 *   SOCK dir=<tx|rx> bytes=<n> ms=<n> kbps=<n> err_mem_waits=0 sndbuf_waits=0
 *   SOCK dir=<tx|rx> error=<name>
 * tx: lwip_send() of <write size> bytes at a time (a blocking send returns
 * once all is queued; the waits for room happen inside lwIP, so the two wait
 * counters of the raw benchmark are 0 here); after -t seconds or -n bytes,
 * shutdown(SHUT_WR) and read until the peer closes, so ms runs until the
 * peer has every byte (it closes after our FIN).
 * rx: lwip_recv() of up to <read size> bytes; the window opens as the
 * application reads (netconn's tcp_recved per read). -d is the
 * application's own time per read, slept in whole board ms once it adds up.
 * ms runs from the connection being established until EOF, -n bytes or -t.
 *
 * The command (run with lwIP's core held, main_os.c) only hands the job to
 * the benchmark's thread; the thread hands its result line back to the
 * tcpip thread to print (tcpip_callback()), so it never writes the console
 * while the shell does.
 */
#include "lwip/opt.h"

#if !NO_SYS && LWIP_SOCKET

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "lwip/sockets.h"
#include "lwip/sys.h"
#include "lwip/tcpip.h"

#include "nr_kernel.h"
#include "nr_printf.h"
#include "apps.h"
#include "shell.h"
#include "tx_session.h"

#define SOCK_IO_MAX     8192u
#define SOCK_IO_DEFAULT 1024u

struct sock_job {
  int tx;
  ip4_addr_t ip;
  uint16_t port;
  uint32_t limit_ms;
  uint32_t limit_bytes;
  uint32_t io_size;
  uint32_t read_delay_us;
};

static struct sock_job job;
static volatile int busy;
static struct nr_sem go;
static nr_thread_t *thread;
static uint8_t io_buf[SOCK_IO_MAX];
static char result[160];

static void format_result(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void format_result(const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  (void)nr_vsnprintf(result, sizeof(result), fmt, ap);
  va_end(ap);
}

static void print_result(void *arg)
{
  LWIP_UNUSED_ARG(arg);
  shell_async("%s", result);
  busy = 0;
}

static void report(void)
{
  if (tcpip_callback(print_result, NULL) != ERR_OK) {
    busy = 0;
  }
}

static void report_error(const char *what, int err)
{
  format_result("SOCK dir=%s error=%s_errno_%d\n", job.tx ? "tx" : "rx", what, err);
  report();
}

static int limits_reached(uint32_t t0, uint32_t bytes)
{
  return (job.limit_ms != 0 && (uint32_t)(sys_now() - t0) >= job.limit_ms) ||
         (job.limit_bytes != 0 && bytes >= job.limit_bytes);
}

static void run_job(void)
{
  struct sockaddr_in to;
  uint32_t bytes = 0;
  uint32_t t0;
  uint32_t ms;
  int s = lwip_socket(AF_INET, SOCK_STREAM, 0);

  if (s < 0) {
    report_error("socket", errno);
    return;
  }
  memset(&to, 0, sizeof(to));
  to.sin_len = sizeof(to);
  to.sin_family = AF_INET;
  to.sin_port = lwip_htons(job.port);
  to.sin_addr.s_addr = ip4_addr_get_u32(&job.ip);
  if (lwip_connect(s, (struct sockaddr *)&to, sizeof(to)) != 0) {
    int err = errno;
    lwip_close(s);
    report_error("connect", err);
    return;
  }
  t0 = sys_now();
  if (job.tx) {
    while (!limits_reached(t0, bytes)) {
      uint32_t n = job.io_size;
      int r;

      if (job.limit_bytes != 0) {
        n = LWIP_MIN(n, job.limit_bytes - bytes);
      }
      r = lwip_send(s, io_buf, n, 0);
      if (r < 0) {
        int err = errno;
        lwip_close(s);
        report_error("send", err);
        return;
      }
      bytes += (uint32_t)r;
    }
    lwip_shutdown(s, SHUT_WR);
    while (lwip_recv(s, io_buf, sizeof(io_buf), 0) > 0) {
    }
  } else {
    uint64_t busy_us = 0; /* the application's own time not yet slept */

    while (!limits_reached(t0, bytes)) {
      uint32_t want = job.io_size;
      int r;

      if (job.limit_bytes != 0) {
        want = LWIP_MIN(want, job.limit_bytes - bytes);
      }
      r = lwip_recv(s, io_buf, want, 0);
      if (r == 0) {
        break; /* the peer's FIN, all data read */
      }
      if (r < 0) {
        int err = errno;
        lwip_close(s);
        report_error("recv", err);
        return;
      }
      bytes += (uint32_t)r;
      busy_us += job.read_delay_us;
      if (busy_us >= 1000u) {
        (void)nr_sleep_ms((uint32_t)(busy_us / 1000u));
        busy_us %= 1000u;
      }
    }
  }
  ms = sys_now() - t0;
  lwip_close(s);
  format_result("SOCK dir=%s bytes=%lu ms=%lu kbps=%lu err_mem_waits=0 sndbuf_waits=0\n",
              job.tx ? "tx" : "rx", (unsigned long)bytes, (unsigned long)ms,
              (unsigned long)tx_kbps(bytes, ms));
  report();
}

static void sock_thread(void *arg)
{
  LWIP_UNUSED_ARG(arg);
  for (;;) {
    (void)nr_sem_take(&go, NR_FOREVER);
    run_job();
  }
}

#define SOCK_USAGE "usage: sock tx <ip> <port> (-t <sec> | -n <bytes>) [-w <write size>] | " \
                   "sock rx <ip> <port> (-t <sec> | -n <bytes>) [-r <read size>] [-d <us per read>]"

static int parse_options(int argc, char **argv)
{
  for (int i = 4; i < argc; i += 2) {
    uint32_t v;

    if (i + 1 >= argc || argv[i][0] != '-' || argv[i][1] == '\0' || argv[i][2] != '\0' ||
        !shell_parse_u32(argv[i + 1], &v)) {
      return 0;
    }
    switch (argv[i][1]) {
    case 't': job.limit_ms = v * 1000u; break;
    case 'n': job.limit_bytes = v; break;
    case 'w': if (!job.tx) { return 0; } job.io_size = v; break;
    case 'r': if (job.tx) { return 0; } job.io_size = v; break;
    case 'd': if (job.tx) { return 0; } job.read_delay_us = v; break;
    default: return 0;
    }
  }
  return (job.limit_ms != 0) != (job.limit_bytes != 0);
}

static void cmd_sock(int argc, char **argv)
{
  uint32_t port;

  if (busy) {
    nr_printf("ERROR: sock %s already running\n", job.tx ? "tx" : "rx");
    return;
  }
  memset(&job, 0, sizeof(job));
  job.io_size = SOCK_IO_DEFAULT;
  if (argc < 4 || (strcmp(argv[1], "tx") != 0 && strcmp(argv[1], "rx") != 0) ||
      !shell_parse_ip4(argv[2], &job.ip) || !shell_parse_u32(argv[3], &port) ||
      port == 0 || port > 0xFFFFu) {
    nr_printf("ERROR: %s\n", SOCK_USAGE);
    return;
  }
  job.tx = argv[1][0] == 't';
  job.port = (uint16_t)port;
  if (!parse_options(argc, argv)) {
    nr_printf("ERROR: %s\n", SOCK_USAGE);
    return;
  }
  if (job.io_size == 0 || job.io_size > SOCK_IO_MAX) {
    nr_printf("ERROR: write/read size must be 1..%u\n", (unsigned)SOCK_IO_MAX);
    return;
  }
  if (thread == NULL) {
    nr_printf("ERROR: the socket benchmark's thread did not start\n");
    return;
  }
  memset(io_buf, 0xA5, sizeof(io_buf));
  busy = 1;
  (void)nr_sem_give(&go);
}

static void sockbench_init(void)
{
  nr_sem_init(&go, 0, 1);
  thread = sys_thread_new("sock", sock_thread, NULL, NR_APP_THREAD_STACKSIZE, NR_APP_THREAD_PRIO);
}

const struct nr_app nr_app_sockbench = {
  "sockbench", "sock",
  "sock tx <ip> <port> (-t sec | -n bytes) [-w size] | sock rx <ip> <port> (-t sec | -n bytes) [-r size] "
  "[-d us] - socket benchmark on BSD sockets (an application thread)",
  cmd_sock, sockbench_init, NULL,
};

#endif /* !NO_SYS && LWIP_SOCKET */
