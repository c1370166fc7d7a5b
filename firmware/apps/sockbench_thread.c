/*
 * "sock" in a NO_SYS 0 build whose apps are on sockets or netconn
 * (sockbench_thread.h): the command, run with lwIP's core held (main_os.c),
 * only hands the job to the benchmark's own thread, where an application
 * would make its blocking calls; the thread hands its result line back to
 * the tcpip thread to print (tcpip_callback()), so it never writes the
 * console while the shell does.
 */
#include "app_api.h"

#if NR_APPS_THREADED

#include <stdarg.h>
#include <string.h>

#include "lwip/sys.h"
#include "lwip/tcpip.h"

#include "nr_kernel.h"
#include "nr_printf.h"
#include "apps.h"
#include "shell.h"
#include "sockbench_thread.h"
#include "tx_session.h"

uint8_t sock_io_buf[SOCK_IO_MAX];

static struct sock_args job;
static volatile int busy;
static struct nr_sem go;
static nr_thread_t *thread;
static char result[160];

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

/* Appends to the result line, truncating; len is what it holds so far. */
static size_t append(size_t len, const char *fmt, va_list ap)
{
  int n = nr_vsnprintf(result + len, sizeof(result) - len, fmt, ap);

  return n < 0 ? len : LWIP_MIN(len + (size_t)n, sizeof(result) - 1u);
}

static size_t put(size_t len, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t put(size_t len, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  len = append(len, fmt, ap);
  va_end(ap);
  return len;
}

void sock_thread_done(const struct sock_args *a, uint32_t bytes, uint32_t ms)
{
  (void)put(0, "SOCK dir=%s bytes=%lu ms=%lu kbps=%lu err_mem_waits=0 sndbuf_waits=0\n",
            a->tx ? "tx" : "rx", (unsigned long)bytes, (unsigned long)ms, (unsigned long)tx_kbps(bytes, ms));
  report();
}

void sock_thread_error(const struct sock_args *a, const char *fmt, ...)
{
  va_list ap;
  size_t len = put(0, "SOCK dir=%s error=", a->tx ? "tx" : "rx");

  va_start(ap, fmt);
  len = append(len, fmt, ap);
  va_end(ap);
  /* the line ends in '\n' even when truncated: the harness reads lines */
  len = LWIP_MIN(len, sizeof(result) - 2u);
  result[len] = '\n';
  result[len + 1u] = '\0';
  report();
}

void sock_thread_read_delay(const struct sock_args *a, uint64_t *owed_us)
{
  *owed_us += a->read_delay_us;
  if (*owed_us >= 1000u) {
    (void)nr_sleep_ms((uint32_t)(*owed_us / 1000u));
    *owed_us %= 1000u;
  }
}

static void sock_thread(void *arg)
{
  LWIP_UNUSED_ARG(arg);
  for (;;) {
    (void)nr_sem_take(&go, NR_FOREVER);
    sock_api_run(&job);
  }
}

static void cmd_sock(int argc, char **argv)
{
  struct sock_args args;

  if (busy) {
    nr_printf("ERROR: sock %s already running\n", job.tx ? "tx" : "rx");
    return;
  }
  if (!sock_args_parse(argc, argv, &args)) {
    return;
  }
  if (thread == NULL) {
    nr_printf("ERROR: the socket benchmark's thread did not start\n");
    return;
  }
  job = args;
  memset(sock_io_buf, 0xA5, sizeof(sock_io_buf));
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
#if NR_APP_API == NR_APP_API_SOCKET
  SOCK_HELP " - socket benchmark on BSD sockets (an application thread)",
#else
  SOCK_HELP " - socket benchmark on netconn (an application thread)",
#endif
  cmd_sock, sockbench_init, NULL,
};

#endif /* NR_APPS_THREADED */
