/*
 * "sock" on netconn: the socket benchmark of a NO_SYS 0 build whose apps are
 * on lwIP's sequential API (NR_APP_API_NETCONN, the default with
 * LWIP_SOCKET 0 and LWIP_NETCONN 1, as many STM32Cube projects have it):
 * netconn_new(), netconn_connect(), then blocking netconn_write() and
 * netconn_recv_tcp_pbuf() in a thread of its own (sockbench_thread.c),
 * lwIP's core in the tcpip thread. Same command, result lines and meaning
 * as the socket version (sockbench_socket.c), so the two compare directly:
 *
 * tx: netconn_write_partly() of <write size> bytes at a time with
 * NETCONN_COPY (it returns once all is queued, or, with a send timeout, what
 * was queued by then); after -t seconds or -n bytes, netconn_shutdown() of
 * the send side, then receive until the peer closes (ERR_CLSD), so ms runs
 * until the peer has every byte.
 * rx: an application read of up to <read size> bytes into its buffer, as
 * lwip_recv() makes one of netconn calls: the segments' pbufs are taken
 * with NETCONN_NOAUTORCVD and copied out, a read goes on into pbufs already
 * queued (NETCONN_DONTBLOCK) but waits only while it has nothing, and the
 * window opens by what the read copied (netconn_tcp_recvd() per read), not
 * when lwIP hands the pbuf over. -d as in the socket version. ms runs from
 * the connection until EOF, -n bytes or -t.
 *
 * What it sets, as an application would, only where the options file
 * compiles the option in: LWIP_SO_RCVTIMEO: netconn_set_recvtimeout(),
 * LWIP_SO_SNDTIMEO: netconn_set_sendtimeout(), both SOCK_IO_TIMEOUT_MS
 * (sockbench_thread.h), so a peer that goes silent ends the test with
 * "error=recv_ERR_TIMEOUT" or "write_ERR_WOULDBLOCK" instead of holding
 * the thread for ever. Nothing for LWIP_SO_RCVBUF: lwIP 2.1 holds only UDP
 * and raw receives to recv_bufsize; a TCP connection's is its window.
 * Errors are lwIP's err_t: error=<call>_<ERR_NAME>.
 */
#include "lwip/opt.h"

#if !NO_SYS && NR_APP_API == NR_APP_API_NETCONN

#include "lwip/api.h"
#include "lwip/pbuf.h"
#include "lwip/sys.h"

#include "sockbench_thread.h"
#include "tx_session.h"

/* The pbuf a read stopped in, and how much of it was read. */
static struct pbuf *held;
static u16_t held_off;

static void drop_held(void)
{
  if (held != NULL) {
    pbuf_free(held);
    held = NULL;
  }
}

static void end(struct netconn *conn)
{
  drop_held();
  (void)netconn_close(conn);
  (void)netconn_delete(conn);
}

static void fail(const struct sock_args *job, struct netconn *conn, const char *call, err_t err)
{
  end(conn);
  sock_thread_error(job, "%s_%s", call, tx_err_name(err));
}

/* One application read of up to want bytes into sock_io_buf, as lwip_recv()
   does it: *got bytes, ERR_CLSD at EOF (nothing read), or an error. */
static err_t read_some(struct netconn *conn, uint32_t want, uint32_t *got)
{
  uint32_t copied = 0;

  while (copied < want) {
    if (held == NULL) {
      /* Once something is copied, no wait and no FIN yet: the FIN stays
         pending for the next read, which then returns EOF (NETCONN_NOFIN). */
      u8_t flags = NETCONN_NOAUTORCVD | (copied != 0 ? (NETCONN_DONTBLOCK | NETCONN_NOFIN) : 0);
      err_t err = netconn_recv_tcp_pbuf_flags(conn, &held, flags);

      if (err != ERR_OK) {
        held = NULL;
        if (copied != 0) {
          break;
        }
        return err;
      }
      held_off = 0;
    }
    {
      u16_t n = (u16_t)LWIP_MIN(want - copied, (uint32_t)(held->tot_len - held_off));

      n = pbuf_copy_partial(held, &sock_io_buf[copied], n, held_off);
      held_off = (u16_t)(held_off + n);
      copied += n;
      if (held_off == held->tot_len) {
        drop_held();
      }
    }
  }
  (void)netconn_tcp_recvd(conn, copied);
  *got = copied;
  return ERR_OK;
}

/* After our FIN: receive until the peer closes too. */
static err_t wait_peer_close(struct netconn *conn)
{
  struct pbuf *p;
  err_t err;

  while ((err = netconn_recv_tcp_pbuf(conn, &p)) == ERR_OK) {
    pbuf_free(p);
  }
  return err;
}

void sock_api_run(const struct sock_args *job)
{
  struct netconn *conn = netconn_new(NETCONN_TCP);
  ip_addr_t ip;
  uint32_t bytes = 0;
  uint32_t t0;
  uint32_t ms;
  err_t err;

  if (conn == NULL) {
    sock_thread_error(job, "netconn_new_%s", tx_err_name(ERR_MEM));
    return;
  }
#if LWIP_SO_RCVTIMEO
  netconn_set_recvtimeout(conn, SOCK_IO_TIMEOUT_MS);
#endif
#if LWIP_SO_SNDTIMEO
  netconn_set_sendtimeout(conn, SOCK_IO_TIMEOUT_MS);
#endif
  ip_addr_copy_from_ip4(ip, job->ip);
  err = netconn_connect(conn, &ip, job->port);
  if (err != ERR_OK) {
    fail(job, conn, "connect", err);
    return;
  }
  t0 = sys_now();
  if (job->tx) {
    while (!sock_args_limit_reached(job, t0, bytes)) {
      size_t n = sock_args_next_io(job, bytes);
      size_t written = 0;

      err = netconn_write_partly(conn, sock_io_buf, n, NETCONN_COPY, &written);
      if (err != ERR_OK) {
        fail(job, conn, "write", err);
        return;
      }
      bytes += (uint32_t)written;
    }
    err = netconn_shutdown(conn, 0, 1);
    if (err != ERR_OK) {
      fail(job, conn, "shutdown", err);
      return;
    }
    err = wait_peer_close(conn);
    if (err == ERR_TIMEOUT) {
      fail(job, conn, "recv", err);
      return;
    }
  } else {
    uint64_t owed_us = 0;

    while (!sock_args_limit_reached(job, t0, bytes)) {
      uint32_t want = sock_args_next_io(job, bytes);
      uint32_t got;

      err = read_some(conn, want, &got);
      if (err == ERR_CLSD) {
        break; /* the peer's FIN, all data read */
      }
      if (err != ERR_OK) {
        fail(job, conn, "recv", err);
        return;
      }
      bytes += got;
      sock_thread_read_delay(job, &owed_us);
    }
  }
  ms = sys_now() - t0;
  end(conn);
  sock_thread_done(job, bytes, ms);
}

#endif /* !NO_SYS && NR_APP_API == NR_APP_API_NETCONN */
