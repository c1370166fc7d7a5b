/*
 * TCP stream sender shared by the iperf client and discard.
 *
 * Completion is "our FIN acknowledged": the stream is half-closed with
 * tcp_shutdown(TX), which keeps the pcb ours, and the pcb state is watched
 * for FIN_WAIT_2 or TIME_WAIT (from the callbacks and the main loop, as a
 * pure FIN ACK triggers no callback). If the peer closed first, the end of
 * LAST_ACK arrives as the err callback with ERR_CLSD. If both sides close at
 * once (CLOSING), the peer's FIN is taken as the end.
 */
#include "lwip/sys.h"
#include "lwip/tcp.h"

#include "tx_session.h"

static void detach(struct tx_session *s)
{
  struct tcp_pcb *pcb = s->pcb;

  tcp_arg(pcb, NULL);
  tcp_sent(pcb, NULL);
  tcp_recv(pcb, NULL);
  tcp_err(pcb, NULL);
  tcp_poll(pcb, NULL, 0);
  s->pcb = NULL;
}

static void end(struct tx_session *s, err_t err)
{
  s->t_done = sys_now();
  s->done(s, err);
}

/* FIN acknowledged: in FIN_WAIT_2/TIME_WAIT/CLOSING tcp_close() only marks
   the pcb closed for us; lwIP frees it after the peer's FIN / 2*MSL. */
static void complete(struct tx_session *s)
{
  struct tcp_pcb *pcb = s->pcb;

  detach(s);
  tcp_close(pcb);
  end(s, ERR_OK);
}

/* Fatal error with the pcb still alive. Returns ERR_ABRT for callbacks. */
static err_t fail(struct tx_session *s, err_t err)
{
  struct tcp_pcb *pcb = s->pcb;

  detach(s);
  tcp_abort(pcb);
  end(s, err);
  return ERR_ABRT;
}

static int fin_acked(const struct tx_session *s)
{
  return s->fin_sent && (s->pcb->state == FIN_WAIT_2 || s->pcb->state == TIME_WAIT);
}

static int time_is_up(const struct tx_session *s)
{
  return s->duration_ms != 0 && s->established &&
         (uint32_t)(sys_now() - s->t_established) >= s->duration_ms;
}

static err_t send_fin(struct tx_session *s)
{
  err_t err = tcp_shutdown(s->pcb, 0, 1);

  if (err != ERR_OK) {
    return fail(s, err);
  }
  s->fin_sent = 1;
  return ERR_OK;
}

/* Writes what fits, sends FIN when the stream is complete, and completes the
   session if the FIN is already acknowledged. */
static err_t pump(struct tx_session *s)
{
  if (!s->fin_sent) {
    int r = time_is_up(s) ? TX_ALL_WRITTEN : s->fill(s);

    if (r < 0) {
      return fail(s, (err_t)r);
    }
    tcp_output(s->pcb);
    if (r == TX_ALL_WRITTEN && send_fin(s) != ERR_OK) {
      return ERR_ABRT;
    }
  }
  if (fin_acked(s)) {
    complete(s);
  }
  return ERR_OK;
}

static err_t on_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
  struct tx_session *s = arg;

  LWIP_UNUSED_ARG(pcb);
  LWIP_UNUSED_ARG(err); /* lwIP 2.1 only calls this with ERR_OK */
  s->established = 1;
  s->t_established = sys_now();
  return pump(s);
}

static err_t on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
  LWIP_UNUSED_ARG(pcb);
  LWIP_UNUSED_ARG(len);
  return pump(arg);
}

static err_t on_poll(void *arg, struct tcp_pcb *pcb)
{
  LWIP_UNUSED_ARG(pcb);
  return pump(arg);
}

/* The peer sends nothing we need; its FIN may end the session. */
static err_t on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
  struct tx_session *s = arg;

  LWIP_UNUSED_ARG(err);
  if (p != NULL) {
    tcp_recved(pcb, p->tot_len);
    pbuf_free(p);
    return ERR_OK;
  }
  if (s->fin_sent) {
    complete(s); /* TIME_WAIT, or CLOSING (simultaneous close) */
  }
  return ERR_OK;
}

/* The pcb is already gone here. */
static void on_err(void *arg, err_t err)
{
  struct tx_session *s = arg;

  s->pcb = NULL;
  end(s, (s->fin_sent && err == ERR_CLSD) ? ERR_OK : err);
}

err_t tx_session_start(struct tx_session *s)
{
  struct tcp_pcb *pcb = tcp_new_ip_type(IP_GET_TYPE(&s->remote_ip));
  err_t err;

  if (pcb == NULL) {
    return ERR_MEM;
  }
  s->pcb = pcb;
  s->written = 0;
  s->established = 0;
  s->fin_sent = 0;
  tcp_arg(pcb, s);
  tcp_sent(pcb, on_sent);
  tcp_recv(pcb, on_recv);
  tcp_err(pcb, on_err);
  tcp_poll(pcb, on_poll, 1);
  s->t_connect = sys_now();
  err = tcp_connect(pcb, &s->remote_ip, s->remote_port, on_connected);
  if (err != ERR_OK) {
    detach(s);
    tcp_abort(pcb);
  }
  return err;
}

void tx_session_poll(struct tx_session *s)
{
  if (s->pcb == NULL) {
    return;
  }
  if (!s->fin_sent && time_is_up(s)) {
    pump(s);
  } else if (fin_acked(s)) {
    complete(s);
  }
}

const char *tx_err_name(err_t err)
{
  switch (err) {
  case ERR_OK:         return "ERR_OK";
  case ERR_MEM:        return "ERR_MEM";
  case ERR_BUF:        return "ERR_BUF";
  case ERR_TIMEOUT:    return "ERR_TIMEOUT";
  case ERR_RTE:        return "ERR_RTE";
  case ERR_INPROGRESS: return "ERR_INPROGRESS";
  case ERR_VAL:        return "ERR_VAL";
  case ERR_WOULDBLOCK: return "ERR_WOULDBLOCK";
  case ERR_USE:        return "ERR_USE";
  case ERR_ALREADY:    return "ERR_ALREADY";
  case ERR_ISCONN:     return "ERR_ISCONN";
  case ERR_CONN:       return "ERR_CONN";
  case ERR_IF:         return "ERR_IF";
  case ERR_ABRT:       return "ERR_ABRT";
  case ERR_RST:        return "ERR_RST";
  case ERR_CLSD:       return "ERR_CLSD";
  case ERR_ARG:        return "ERR_ARG";
  default:             return "ERR_UNKNOWN";
  }
}

uint32_t tx_kbps(uint32_t bytes, uint32_t ms)
{
  return ms == 0 ? 0 : (uint32_t)((uint64_t)bytes * 8u / ms);
}
