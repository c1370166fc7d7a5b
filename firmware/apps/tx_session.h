/*
 * An outgoing TCP connection that sends one stream and half-closes it: the
 * common part of "iperf client" and "discard". The session ends when the
 * peer has acknowledged our FIN (so every byte was delivered), or on error.
 */
#ifndef TX_SESSION_H
#define TX_SESSION_H

#include <stdint.h>

#include "lwip/err.h"
#include "lwip/ip_addr.h"
#include "lwip/tcp.h"

/* Results of a fill function besides a negative err_t. */
#define TX_MORE        0 /* call again when the send buffer has room */
#define TX_ALL_WRITTEN 1 /* stream complete: send FIN */

struct tx_session;

/* Queues data with tcp_write() while it fits, adding to s->written. */
typedef int (*tx_fill_fn)(struct tx_session *s);
/* Called once; err is ERR_OK when the FIN was acknowledged. */
typedef void (*tx_done_fn)(struct tx_session *s, err_t err);

struct tx_session {
  struct tcp_pcb *pcb;       /* NULL when no session is running */
  ip_addr_t remote_ip;
  u16_t remote_port;
  uint32_t duration_ms;      /* 0: no time limit, else FIN this long after connecting */
  uint32_t t_connect;        /* sys_now() at tcp_connect() */
  uint32_t t_established;
  uint32_t t_done;
  uint32_t written;
  int established;
  int fin_sent;
  tx_fill_fn fill;
  tx_done_fn done;
};

/* Set remote_ip, remote_port, duration_ms, fill and done first. */
err_t tx_session_start(struct tx_session *s);

/* Main-loop hook: time limit and FIN-acknowledged detection. */
void tx_session_poll(struct tx_session *s);

const char *tx_err_name(err_t err);

/* bytes * 8 / ms, i.e. kbit/s with k = 1000. */
uint32_t tx_kbps(uint32_t bytes, uint32_t ms);

#endif
