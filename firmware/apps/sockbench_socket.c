/*
 * "sock" on BSD sockets: the socket benchmark of a NO_SYS 0 build whose
 * apps are on sockets (NR_APP_API_SOCKET, the default with LWIP_SOCKET 1),
 * where an application uses lwIP the way most lwIP products do:
 * lwip_socket(), lwip_connect(), then blocking lwip_send()/lwip_recv() in a
 * thread of its own (sockbench_thread.c), lwIP's core in the tcpip thread.
 *
 * tx: lwip_send() of <write size> bytes at a time (a blocking send returns
 * once all is queued); after -t seconds or -n bytes, shutdown(SHUT_WR) and
 * read until the peer closes, so ms runs until the peer has every byte (it
 * closes after our FIN).
 * rx: lwip_recv() of up to <read size> bytes; the window opens as the
 * application reads (netconn's tcp_recved per read). -d is the
 * application's own time per read, slept in whole board ms once it adds up.
 * ms runs from the connection being established until EOF, -n bytes or -t.
 *
 * What it sets on the socket, as an application would, only where the
 * options file compiles the option in:
 *  - LWIP_SO_RCVTIMEO: SO_RCVTIMEO, LWIP_SO_SNDTIMEO: SO_SNDTIMEO, both
 *    SOCK_IO_TIMEOUT_MS (sockbench_thread.h), so a peer that goes silent
 *    ends the test with "error=recv_errno_11" (EWOULDBLOCK) or "send_errno_11"
 *    instead of holding the thread for ever;
 *  - nothing for LWIP_SO_RCVBUF / RECV_BUFSIZE_DEFAULT: lwIP 2.1 holds
 *    only UDP and raw receives to the receive buffer size (api_msg.c); a
 *    TCP connection's receive buffer is its window (TCP_WND), which the
 *    file sets, so SO_RCVBUF would change nothing the benchmark measures.
 * errno is the calling thread's own (the kernel's, firmware/kernel).
 */
#include "lwip/opt.h"

#if !NO_SYS && NR_APP_API == NR_APP_API_SOCKET

#include <errno.h>
#include <string.h>

#include "lwip/sockets.h"
#include "lwip/sys.h"

#include "sockbench_thread.h"

#if LWIP_SO_RCVTIMEO || LWIP_SO_SNDTIMEO
/* lwIP's sockets take a struct timeval unless LWIP_SO_SNDRCVTIMEO_NONSTANDARD (an int of ms). */
static void set_timeout(int s, int name)
{
#if LWIP_SO_SNDRCVTIMEO_NONSTANDARD
  int ms = SOCK_IO_TIMEOUT_MS;

  (void)lwip_setsockopt(s, SOL_SOCKET, name, &ms, sizeof(ms));
#else
  struct timeval tv;

  tv.tv_sec = SOCK_IO_TIMEOUT_MS / 1000;
  tv.tv_usec = (SOCK_IO_TIMEOUT_MS % 1000) * 1000;
  (void)lwip_setsockopt(s, SOL_SOCKET, name, &tv, sizeof(tv));
#endif
}
#endif

static void fail(const struct sock_args *job, int s, const char *call)
{
  int err = errno;

  lwip_close(s);
  sock_thread_error(job, "%s_errno_%d", call, err);
}

void sock_api_run(const struct sock_args *job)
{
  struct sockaddr_in to;
  uint32_t bytes = 0;
  uint32_t t0;
  uint32_t ms;
  int s = lwip_socket(AF_INET, SOCK_STREAM, 0);

  if (s < 0) {
    sock_thread_error(job, "socket_errno_%d", errno);
    return;
  }
#if LWIP_SO_RCVTIMEO
  set_timeout(s, SO_RCVTIMEO);
#endif
#if LWIP_SO_SNDTIMEO
  set_timeout(s, SO_SNDTIMEO);
#endif
  memset(&to, 0, sizeof(to));
  to.sin_len = sizeof(to);
  to.sin_family = AF_INET;
  to.sin_port = lwip_htons(job->port);
  to.sin_addr.s_addr = ip4_addr_get_u32(&job->ip);
  if (lwip_connect(s, (struct sockaddr *)&to, sizeof(to)) != 0) {
    fail(job, s, "connect");
    return;
  }
  t0 = sys_now();
  if (job->tx) {
    int r;

    while (!sock_args_limit_reached(job, t0, bytes)) {
      uint32_t n = sock_args_next_io(job, bytes);

      r = lwip_send(s, sock_io_buf, n, 0);
      if (r < 0) {
        fail(job, s, "send");
        return;
      }
      bytes += (uint32_t)r;
    }
    lwip_shutdown(s, SHUT_WR);
    while ((r = lwip_recv(s, sock_io_buf, sizeof(sock_io_buf), 0)) > 0) {
    }
    if (r < 0 && errno == EWOULDBLOCK) { /* SO_RCVTIMEO: the peer never closed */
      fail(job, s, "recv");
      return;
    }
  } else {
    uint64_t owed_us = 0;

    while (!sock_args_limit_reached(job, t0, bytes)) {
      uint32_t want = sock_args_next_io(job, bytes);
      int r;

      r = lwip_recv(s, sock_io_buf, want, 0);
      if (r == 0) {
        break; /* the peer's FIN, all data read */
      }
      if (r < 0) {
        fail(job, s, "recv");
        return;
      }
      bytes += (uint32_t)r;
      sock_thread_read_delay(job, &owed_us);
    }
  }
  ms = sys_now() - t0;
  lwip_close(s);
  sock_thread_done(job, bytes, ms);
}

#endif /* !NO_SYS && NR_APP_API == NR_APP_API_SOCKET */
