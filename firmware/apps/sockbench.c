/*
 * "sock": a TCP benchmark that uses lwIP the way MicroPython's socket module
 * does (extmod/modlwip.c, NO_SYS), so a MicroPython test such as
 *     while ...: s.write(buf)        or        while ...: s.readinto(buf)
 * meets the same lwIP calls here as on the board the report measured.
 *
 *   sock tx <ip> <port> (-t <sec> | -n <bytes>) [-w <write size>]
 *   sock rx <ip> <port> (-t <sec> | -n <bytes>) [-r <read size>] [-d <us per read>]
 *
 * tx connects to the peer's sink and writes <write size> bytes at a time
 * (default 1024), each write the way modlwip's send does it:
 *  - n = min(rest of this write, tcp_sndbuf()); when tcp_sndbuf() is 0, wait
 *    (the main loop keeps running: RX, timers) until it is at least 16, as
 *    modlwip does to avoid tiny segments (counted in sndbuf_waits);
 *  - tcp_write(n, TCP_WRITE_FLAG_COPY); on ERR_MEM (heap, segment pool or
 *    TCP_SND_QUEUELEN full) call tcp_output() and try again 50 ms later, at
 *    most 200 times, then give up with ERR_MEM (each wait counts in
 *    err_mem_waits); after a successful tcp_write, tcp_output_nagle(): out
 *    now unless Nagle holds a partial segment back while data is unacked.
 * Writing stops at the first write boundary after -t seconds or once -n bytes
 * are written; then FIN. ms runs from the connection being established until
 * our FIN is acknowledged, i.e. until the peer has every byte.
 *
 * rx connects to the peer's source, which sends as fast as it can. As in
 * modlwip, the recv callback only queues the pbufs (chained onto what is
 * queued) and does not call tcp_recved(): the window opens only as the
 * application reads. Each read copies up to <read size> bytes (default 1024),
 * but never past the end of the first queued pbuf (modlwip's recv copies from
 * p->payload at its offset), frees that pbuf once emptied and calls
 * tcp_recved(pcb, copied). -d models the application's own time per read
 * (MicroPython's interpreter, default 0): the next read starts no earlier than
 * that many microseconds after the previous one. The main loop, and so lwIP,
 * keeps running meanwhile, as lwIP runs from interrupts/PendSV under
 * MicroPython while the interpreter works; the wait has the 1 ms resolution
 * of the tick, so reads come in bursts with the right average rate.
 * ms runs from the connection being established until EOF (the peer's FIN,
 * all data read), -n bytes read, or the -t time limit.
 *
 * Both follow MicroPython's extmod/modlwip.c lwip_tcp_send/lwip_tcp_receive
 * (v1.2x): the 16-byte minimum room, the 200 x 50 ms ERR_MEM loop with a
 * tcp_output before each sleep, tcp_output_nagle after a write, one pbuf per
 * recv call and tcp_recved per call.
 *
 * Result, printed when the test ends (the prompt returns at once):
 *   SOCK dir=<tx|rx> bytes=<n> ms=<n> kbps=<n> err_mem_waits=<n> sndbuf_waits=<n>
 *        [err_mem_fragmented=<n> err_mem_heap_full=<n> heap_free=<n>
 *         heap_largest_free=<n> segment_heap_request=<n>]
 *   SOCK dir=<tx|rx> error=<lwIP error name>
 * kbps is bytes * 8 / ms (k = 1000). After an ERR_MEM, what lwIP's heap
 * looked like (nr_heap.h): of the waits, how many met a heap with room for
 * a full segment's pbuf (segment_heap_request bytes) in all but in no single
 * block (fragmented), and how many met fewer bytes free than that in all
 * (full); the rest were not the heap's (TCP_SND_QUEUELEN, the segment pool).
 * heap_free and heap_largest_free are the heap's at the first wait.
 */
#include "app_api.h"

/* A NO_SYS 0 build runs this one only when its apps are on the raw API
   (NR_APP_API, profiles/base.h), in the tcpip thread (main_os.c); with
   sockets or netconn, sockbench_thread.c is the command. */
#if !NR_APPS_THREADED

#include <string.h>

#include "lwip/pbuf.h"
#include "lwip/sys.h"
#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h" /* tcp_output_nagle(), as modlwip uses it */

#include "nr_heap.h"
#include "nr_printf.h"
#include "apps.h"
#include "shell.h"
#include "sockbench_args.h"
#include "test_heap_pin.h"
#include "test_leak.h"
#include "tx_session.h"

#define MP_SNDBUF_MIN       16u   /* modlwip: after a full buffer, wait for this much room */
#define MP_ERR_MEM_WAIT_MS  50u   /* modlwip: mp_hal_delay_ms(50) after ERR_MEM */
#define MP_ERR_MEM_TRIES    200u  /* modlwip: for (i = 0; i < 200; ++i) */

enum sock_dir { SOCK_TX, SOCK_RX };
enum sock_state { SOCK_IDLE, SOCK_CONNECTING, SOCK_RUNNING, SOCK_CLOSING };

struct sock_bench {
  struct tcp_pcb *pcb;
  enum sock_state state;
  enum sock_dir dir;
  uint32_t limit_ms;        /* 0: no time limit */
  uint32_t limit_bytes;     /* 0: no byte limit */
  uint32_t io_size;         /* write size (tx) or read size (rx) */
  uint32_t read_delay_us;
  uint32_t t_established;
  uint32_t bytes;
  uint32_t err_mem_waits;
  uint32_t err_mem_fragmented;  /* ERR_MEM waits the heap's holes explain (nr_heap.h) */
  uint32_t err_mem_heap_full;   /* ERR_MEM waits with less than a segment's pbuf free in all */
  struct nr_heap_layout first_err_mem_heap; /* the heap at the first wait */
  uint32_t segment_heap_request; /* a full segment's pbuf in heap bytes, at the first wait (0: none yet) */
  uint32_t sndbuf_waits;
  /* tx */
  uint32_t write_left;      /* bytes of the current application write not yet queued */
  uint32_t mem_tries;       /* ERR_MEM retries of the current tcp_write */
  uint32_t retry_at;        /* sys_now() of the next try after ERR_MEM */
  int waiting_mem;
  int waiting_sndbuf;
  /* rx */
  struct pbuf *queue;       /* received, not yet read; first payload starts at the unread byte */
  int peer_closed;
  uint64_t app_free_us;     /* the application is busy with its previous read until then */
  int app_blocked;          /* the application found nothing to read and waits for data */
};

static struct sock_bench sb;
static uint8_t io_buf[SOCK_IO_MAX];

static const char *dir_name(void)
{
  return sb.dir == SOCK_TX ? "tx" : "rx";
}

static void detach(void)
{
  tcp_arg(sb.pcb, NULL);
  tcp_recv(sb.pcb, NULL);
  tcp_err(sb.pcb, NULL);
  sb.pcb = NULL;
}

static void drop_queue(void)
{
  if (sb.queue != NULL) {
    pbuf_free(sb.queue);
    sb.queue = NULL;
  }
}

static void report_error(err_t err)
{
  shell_async("SOCK dir=%s error=%s\n", dir_name(), tx_err_name(err));
}

/* Ends the test. A pcb still ours goes back to lwIP: closed after a good
   test (lwIP resets the connection if received data was left unread, as a
   MicroPython s.close() would), aborted after an error. */
static void finish(err_t err)
{
  uint32_t ms = sys_now() - sb.t_established;

  if (sb.pcb != NULL) {
    struct tcp_pcb *pcb = sb.pcb;

    detach();
    if (err != ERR_OK || tcp_close(pcb) != ERR_OK) {
      tcp_abort(pcb);
    }
  }
  drop_queue();
  test_heap_pin_release();
  sb.state = SOCK_IDLE;
  if (err != ERR_OK) {
    report_error(err);
    return;
  }
  shell_async("SOCK dir=%s bytes=%lu ms=%lu kbps=%lu err_mem_waits=%lu sndbuf_waits=%lu",
              dir_name(), (unsigned long)sb.bytes, (unsigned long)ms,
              (unsigned long)tx_kbps(sb.bytes, ms), (unsigned long)sb.err_mem_waits,
              (unsigned long)sb.sndbuf_waits);
  if (sb.segment_heap_request != 0) { /* an ERR_MEM met a heap that could be walked */
    shell_async(" err_mem_fragmented=%lu err_mem_heap_full=%lu heap_free=%lu heap_largest_free=%lu "
                "segment_heap_request=%lu", (unsigned long)sb.err_mem_fragmented,
                (unsigned long)sb.err_mem_heap_full, (unsigned long)sb.first_err_mem_heap.free_bytes,
                (unsigned long)sb.first_err_mem_heap.largest_free, (unsigned long)sb.segment_heap_request);
  }
  shell_async("\n");
}

static int time_is_up(void)
{
  return sb.limit_ms != 0 && (uint32_t)(sys_now() - sb.t_established) >= sb.limit_ms;
}

static int bytes_done(void)
{
  return sb.limit_bytes != 0 && sb.bytes >= sb.limit_bytes;
}

/* ---- tx ---------------------------------------------------------------- */

/* lwIP has our FIN acknowledged once the pcb reached FIN_WAIT_2 or TIME_WAIT;
   a pure ACK calls no callback, so the main loop looks. */
static int fin_acked(void)
{
  return sb.pcb->state == FIN_WAIT_2 || sb.pcb->state == TIME_WAIT;
}

/* Whether the heap was full or only cut into holes when tcp_write() met
   ERR_MEM, against what it asks for a full segment of this connection. */
static void judge_err_mem(void)
{
  struct nr_heap_layout layout;
  int walked = nr_heap_layout(&layout);
  uint32_t request = nr_heap_transport_pbuf_request(sb.pcb->mss);

  if (sb.segment_heap_request == 0 && walked == 0) {
    sb.first_err_mem_heap = layout;
    sb.segment_heap_request = request;
  }
  switch (nr_heap_judge(&layout, walked, request)) {
  case NR_HEAP_FRAGMENTED:
    sb.err_mem_fragmented++;
    break;
  case NR_HEAP_FULL:
    sb.err_mem_heap_full++;
    break;
  default:
    break;
  }
}

/* Room in the send buffer as modlwip's send sees it: 0 means "wait". */
static u16_t tx_room(void)
{
  u16_t room = tcp_sndbuf(sb.pcb);

  if (room == 0 || (sb.waiting_sndbuf && room < MP_SNDBUF_MIN)) {
    if (!sb.waiting_sndbuf) {
      sb.waiting_sndbuf = 1;
      sb.sndbuf_waits++;
    }
    return 0;
  }
  sb.waiting_sndbuf = 0;
  return room;
}

/* One tcp_write of modlwip's send. Returns 1 when data was queued, 0 when
   the application has to wait, or a negative err_t. */
static int tx_send_once(void)
{
  u16_t room = tx_room();
  u16_t n;
  err_t err;

  if (room == 0) {
    return 0;
  }
  n = (u16_t)LWIP_MIN(sb.write_left, room);
  err = tcp_write(sb.pcb, &io_buf[sb.io_size - sb.write_left], n, TCP_WRITE_FLAG_COPY);
  if (err == ERR_MEM) {
    if (++sb.mem_tries >= MP_ERR_MEM_TRIES) {
      return ERR_MEM;
    }
    sb.err_mem_waits++;
    judge_err_mem();
    sb.waiting_mem = 1;
    sb.retry_at = sys_now() + MP_ERR_MEM_WAIT_MS;
    err = tcp_output(sb.pcb); /* modlwip pushes out what is queued before sleeping */
    return err == ERR_OK ? 0 : err;
  }
  if (err != ERR_OK) {
    return err;
  }
  sb.mem_tries = 0;
  sb.write_left -= n;
  sb.bytes += n;
  err = tcp_output_nagle(sb.pcb);
  return err == ERR_OK ? 1 : err;
}

static void tx_send_fin(void)
{
  err_t err = tcp_shutdown(sb.pcb, 0, 1);

  if (err != ERR_OK) {
    finish(err);
    return;
  }
  sb.state = SOCK_CLOSING;
}

/* Application writes until lwIP makes it wait. */
static void tx_run(void)
{
  if (sb.waiting_mem) {
    if ((int32_t)(sys_now() - sb.retry_at) < 0) {
      return;
    }
    sb.waiting_mem = 0;
  }
  for (;;) {
    int r;

    if (sb.write_left == 0) {
      if (time_is_up() || bytes_done()) {
        tx_send_fin();
        return;
      }
      sb.write_left = sb.io_size;
      if (sb.limit_bytes != 0) {
        sb.write_left = LWIP_MIN(sb.write_left, sb.limit_bytes - sb.bytes);
      }
    }
    r = tx_send_once();
    if (r < 0) {
      finish((err_t)r);
      return;
    }
    if (r == 0) {
      return;
    }
  }
}

/* ---- rx ---------------------------------------------------------------- */

/* Like modlwip's recv callback: keep the data for the application, and leave
   the window closed by that much until it is read. */
static err_t on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
  LWIP_UNUSED_ARG(arg);
  LWIP_UNUSED_ARG(pcb);
  LWIP_UNUSED_ARG(err);
  if (p == NULL) {
    sb.peer_closed = 1;
  } else if (sb.queue == NULL) {
    sb.queue = p;
  } else {
    pbuf_cat(sb.queue, p);
  }
  return ERR_OK;
}

static uint64_t now_us(void)
{
  return (uint64_t)sys_now() * 1000u;
}

static int app_busy(void)
{
  return sb.read_delay_us != 0 && sb.app_free_us > now_us();
}

/* One application read: copy out, free what was emptied, open the window. */
static void rx_read_once(void)
{
  uint32_t want = sb.io_size;
  u16_t copied;

  if (sb.limit_bytes != 0) {
    want = LWIP_MIN(want, sb.limit_bytes - sb.bytes);
  }
  copied = pbuf_copy_partial(sb.queue, io_buf, (u16_t)LWIP_MIN(want, sb.queue->len), 0);
  sb.queue = pbuf_free_header(sb.queue, copied);
  tcp_recved(sb.pcb, copied);
  sb.bytes += copied;
  /* A busy application goes straight on from its previous read; one that was
     blocked waiting for data starts when the data came (now, to the tick).
     Restarting from the coarse clock after every read would allow only one
     read per tick. */
  if (sb.app_blocked) {
    sb.app_free_us = LWIP_MAX(sb.app_free_us, now_us());
    sb.app_blocked = 0;
  }
  sb.app_free_us += sb.read_delay_us;
}

static void rx_run(void)
{
  while (sb.queue != NULL && !app_busy() && !bytes_done() && !time_is_up()) {
    rx_read_once();
  }
  if (sb.queue == NULL) {
    sb.app_blocked = 1;
  }
  if (bytes_done() || time_is_up() || (sb.queue == NULL && sb.peer_closed)) {
    finish(ERR_OK);
  }
}

/* ---- connection -------------------------------------------------------- */

static err_t on_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
  LWIP_UNUSED_ARG(arg);
  LWIP_UNUSED_ARG(pcb);
  LWIP_UNUSED_ARG(err); /* lwIP 2.1 only calls this with ERR_OK */
  sb.state = SOCK_RUNNING;
  sb.t_established = sys_now();
  test_leak_per_connection(); /* nothing unless built with NR_TEST_LEAK_PBUF */
  test_heap_pin_take();       /* nothing unless built with NR_TEST_HEAP_PIN */
  return ERR_OK;
}

/* The pcb is already freed here. ERR_CLSD after our FIN means the peer had
   closed first and has now acknowledged our FIN (end of LAST_ACK): done. */
static void on_err(void *arg, err_t err)
{
  LWIP_UNUSED_ARG(arg);
  sb.pcb = NULL;
  finish((sb.state == SOCK_CLOSING && err == ERR_CLSD) ? ERR_OK : err);
}

static void sockbench_poll(void)
{
  if (sb.pcb == NULL || sb.state == SOCK_CONNECTING) {
    return;
  }
  if (sb.state == SOCK_CLOSING) {
    if (fin_acked()) {
      finish(ERR_OK);
    }
  } else if (sb.dir == SOCK_TX) {
    tx_run();
  } else {
    rx_run();
  }
}

static err_t start(const ip_addr_t *ip, u16_t port)
{
  struct tcp_pcb *pcb = tcp_new_ip_type(IP_GET_TYPE(ip));
  err_t err;

  if (pcb == NULL) {
    return ERR_MEM;
  }
  sb.pcb = pcb;
  sb.state = SOCK_CONNECTING;
  tcp_arg(pcb, NULL);
  tcp_recv(pcb, on_recv);
  tcp_err(pcb, on_err);
  err = tcp_connect(pcb, ip, port, on_connected);
  if (err != ERR_OK) {
    detach();
    tcp_abort(pcb);
    sb.state = SOCK_IDLE;
  }
  return err;
}

/* ---- command ----------------------------------------------------------- */

static void reset_test(enum sock_dir dir)
{
  memset(&sb, 0, sizeof(sb));
  sb.dir = dir;
  sb.io_size = SOCK_IO_DEFAULT;
  sb.app_blocked = 1;
}

static void cmd_sock(int argc, char **argv)
{
  struct sock_args args;
  ip_addr_t ip;
  err_t err;

  if (sb.state != SOCK_IDLE) {
    nr_printf("ERROR: sock %s already running\n", dir_name());
    return;
  }
  if (!sock_args_parse(argc, argv, &args)) {
    return;
  }
  reset_test(args.tx ? SOCK_TX : SOCK_RX);
  sb.limit_ms = args.limit_ms;
  sb.limit_bytes = args.limit_bytes;
  sb.io_size = args.io_size;
  sb.read_delay_us = args.read_delay_us;
  memset(io_buf, 0xA5, sizeof(io_buf));
  ip_addr_copy_from_ip4(ip, args.ip);
  err = start(&ip, args.port);
  if (err != ERR_OK) {
    report_error(err);
  }
}

const struct nr_app nr_app_sockbench = {
  "sockbench", "sock",
  SOCK_HELP " - MicroPython-style socket benchmark",
  cmd_sock, NULL, sockbench_poll,
};

#endif /* !NR_APPS_THREADED */
