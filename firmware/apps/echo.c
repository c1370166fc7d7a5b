/*
 * TCP echo service on port 7, running from boot. Received data is held
 * (and not acknowledged to the window) until it could be queued for
 * sending, so a fast sender is flow-controlled instead of dropped.
 */
#include "lwip/tcp.h"

#include "nr_printf.h"
#include "apps.h"

#define ECHO_PORT 7
#define ECHO_MAX_CONNS 4

struct echo_conn {
  struct tcp_pcb *pcb;    /* NULL: slot free */
  struct pbuf *pending;   /* received, not yet queued for sending */
  int peer_closed;
};

static struct echo_conn conns[ECHO_MAX_CONNS];

static void echo_release(struct echo_conn *c)
{
  tcp_arg(c->pcb, NULL);
  tcp_recv(c->pcb, NULL);
  tcp_sent(c->pcb, NULL);
  tcp_err(c->pcb, NULL);
  if (c->pending != NULL) {
    pbuf_free(c->pending);
  }
  c->pending = NULL;
  c->pcb = NULL;
}

/* Returns ERR_ABRT if the pcb had to be aborted. */
static err_t echo_close(struct echo_conn *c)
{
  struct tcp_pcb *pcb = c->pcb;

  echo_release(c);
  if (tcp_close(pcb) != ERR_OK) {
    tcp_abort(pcb);
    return ERR_ABRT;
  }
  return ERR_OK;
}

/* Queues as much pending data as the send buffer takes. */
static err_t echo_flush(struct echo_conn *c)
{
  while (c->pending != NULL) {
    u16_t len = (u16_t)LWIP_MIN(c->pending->len, tcp_sndbuf(c->pcb));

    if (len == 0 || tcp_write(c->pcb, c->pending->payload, len, TCP_WRITE_FLAG_COPY) != ERR_OK) {
      break;
    }
    tcp_recved(c->pcb, len);
    c->pending = pbuf_free_header(c->pending, len);
  }
  tcp_output(c->pcb);
  if (c->pending == NULL && c->peer_closed) {
    return echo_close(c);
  }
  return ERR_OK;
}

static err_t echo_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
  struct echo_conn *c = arg;

  LWIP_UNUSED_ARG(pcb);
  LWIP_UNUSED_ARG(err);
  if (p == NULL) {
    c->peer_closed = 1;
  } else if (c->pending == NULL) {
    c->pending = p;
  } else {
    pbuf_cat(c->pending, p);
  }
  return echo_flush(c);
}

static err_t echo_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
  LWIP_UNUSED_ARG(pcb);
  LWIP_UNUSED_ARG(len);
  return echo_flush(arg);
}

static void echo_err(void *arg, err_t err)
{
  struct echo_conn *c = arg;

  LWIP_UNUSED_ARG(err);
  c->pcb = NULL; /* already freed by lwIP */
  if (c->pending != NULL) {
    pbuf_free(c->pending);
    c->pending = NULL;
  }
}

static err_t echo_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
  LWIP_UNUSED_ARG(arg);
  if (err != ERR_OK || pcb == NULL) {
    return ERR_VAL;
  }
  for (int i = 0; i < ECHO_MAX_CONNS; i++) {
    struct echo_conn *c = &conns[i];
    if (c->pcb == NULL) {
      c->pcb = pcb;
      c->pending = NULL;
      c->peer_closed = 0;
      tcp_arg(pcb, c);
      tcp_recv(pcb, echo_recv);
      tcp_sent(pcb, echo_sent);
      tcp_err(pcb, echo_err);
      return ERR_OK;
    }
  }
  return ERR_MEM; /* all slots busy: lwIP aborts the new connection */
}

static void echo_init(void)
{
  struct tcp_pcb *pcb = tcp_new_ip_type(IPADDR_TYPE_ANY);
  struct tcp_pcb *listener = NULL;

  if (pcb != NULL && tcp_bind(pcb, IP_ANY_TYPE, ECHO_PORT) == ERR_OK) {
    listener = tcp_listen(pcb); /* frees pcb on success */
  }
  if (listener == NULL) {
    if (pcb != NULL) {
      tcp_close(pcb);
    }
    nr_printf("ERROR: echo service on port %d not started\n", ECHO_PORT);
    return;
  }
  tcp_accept(listener, echo_accept);
}

const struct nr_app nr_app_echo = { "echo", NULL, NULL, NULL, echo_init, NULL };
