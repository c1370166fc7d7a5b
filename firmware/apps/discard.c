/*
 * "discard <ip> <bytes> <chunk>": writes exactly <bytes> bytes of
 * pseudo-random data to TCP port 9, one tcp_write(COPY) of <chunk> bytes as
 * soon as tcp_sndbuf() has room for it, each followed by tcp_output() (the
 * pattern of a socket send() loop on lwIP). Then closes and prints
 *   DISCARD bytes=<n> chunk=<n> ms=<n>
 * with ms from the tcp_connect() call until the peer acknowledged our FIN
 * (see tx_session.c), or DISCARD error=<lwIP error name>.
 */
#include <string.h>

#include "lwip/tcp.h"

#include "nr_printf.h"
#include "apps.h"
#include "shell.h"
#include "tx_session.h"

#define DISCARD_PORT 9
#define CHUNK_MAX LWIP_MIN(TCP_SND_BUF, 0xFFFF) /* tcp_sndbuf() never exceeds TCP_SND_BUF */

static struct tx_session session;
static uint32_t remaining;
static uint16_t chunk;
static uint8_t chunk_buf[CHUNK_MAX];

/* xorshift32: the data does not compress. The buffer is filled once per
   command and written over and over, as a benchmark's send() loop does: on
   an 8-bit CPU generating it per chunk would cost more than sending it. */
static void fill_random(uint8_t *buf, uint32_t len)
{
  uint32_t x = 0x2545F491u;

  for (uint32_t i = 0; i < len; i += 4) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    memcpy(&buf[i], &x, LWIP_MIN(4u, len - i));
  }
}

static int discard_fill(struct tx_session *s)
{
  while (remaining > 0) {
    uint16_t len = (uint16_t)LWIP_MIN(chunk, remaining);
    err_t err;

    if (tcp_sndbuf(s->pcb) < len) {
      return TX_MORE;
    }
    err = tcp_write(s->pcb, chunk_buf, len, TCP_WRITE_FLAG_COPY);
    if (err == ERR_MEM) {
      return TX_MORE; /* segment queue or heap full: retry on the next ACK */
    }
    if (err != ERR_OK) {
      return err;
    }
    s->written += len;
    remaining -= len;
    tcp_output(s->pcb);
  }
  return TX_ALL_WRITTEN;
}

static void discard_done(struct tx_session *s, err_t err)
{
  if (err == ERR_OK) {
    shell_async("DISCARD bytes=%lu chunk=%u ms=%lu\n", (unsigned long)s->written,
                (unsigned)chunk, (unsigned long)(s->t_done - s->t_connect));
  } else {
    shell_async("DISCARD error=%s\n", tx_err_name(err));
  }
}

static void cmd_discard(int argc, char **argv)
{
  uint32_t bytes, chunk_arg;
  ip4_addr_t ip;
  err_t err;

  if (argc != 4 || !shell_parse_ip4(argv[1], &ip) ||
      !shell_parse_u32(argv[2], &bytes) || !shell_parse_u32(argv[3], &chunk_arg)) {
    nr_printf("ERROR: usage: discard <ip> <bytes> <chunk>\n");
    return;
  }
  if (chunk_arg == 0 || chunk_arg > CHUNK_MAX) {
    nr_printf("ERROR: chunk must be 1..%lu (TCP_SND_BUF)\n", (unsigned long)CHUNK_MAX);
    return;
  }
  if (session.pcb != NULL) {
    nr_printf("ERROR: discard already running\n");
    return;
  }
  ip_addr_copy_from_ip4(session.remote_ip, ip);
  remaining = bytes;
  chunk = (uint16_t)chunk_arg;
  fill_random(chunk_buf, chunk);
  session.remote_port = DISCARD_PORT;
  session.duration_ms = 0;
  session.fill = discard_fill;
  session.done = discard_done;
  err = tx_session_start(&session);
  if (err != ERR_OK) {
    nr_printf("DISCARD error=%s\n", tx_err_name(err));
  }
}

static void discard_poll(void)
{
  tx_session_poll(&session);
}

const struct nr_app nr_app_discard = {
  "discard", "discard",
  "discard <ip> <bytes> <chunk> - send bytes to TCP port 9 in chunk-sized writes",
  cmd_discard, NULL, discard_poll,
};
