/*
 * The console's receive ring, shared by the UART drivers whose emulated UART
 * holds input back while its own buffer is full (QEMU's CMSDK UART and
 * 16550): the RX interrupt stores characters, the main loop takes them. When
 * the ring is full the handler stops reading the UART and switches its RX
 * interrupt off (nr_ring_pause), so no character is read without being
 * stored; nr_ring_get says when the main loop has made room and the driver
 * must switch it on again.
 */
#ifndef NR_CONSOLE_RING_H
#define NR_CONSOLE_RING_H

#include <stdint.h>

#define NR_CONSOLE_RING_SIZE 256u /* power of two */

struct nr_console_ring {
  volatile uint8_t buf[NR_CONSOLE_RING_SIZE];
  volatile uint32_t head;  /* written by the interrupt handler */
  volatile uint32_t tail;  /* written by the main loop */
  volatile int paused;
};

/* In the handler, before reading a character: 1 when there is no room (the
   ring is then marked paused and the driver switches its RX interrupt off). */
static inline int nr_ring_pause(struct nr_console_ring *r)
{
  if (r->head - r->tail == NR_CONSOLE_RING_SIZE) {
    r->paused = 1;
    return 1;
  }
  return 0;
}

static inline void nr_ring_put(struct nr_console_ring *r, uint8_t c)
{
  r->buf[r->head % NR_CONSOLE_RING_SIZE] = c;
  r->head++;
}

static inline int nr_ring_pending(const struct nr_console_ring *r)
{
  return r->head != r->tail;
}

/* Next character or -1; *resume is set when the handler had paused and the
   driver must switch its RX interrupt on again. */
static inline int nr_ring_get(struct nr_console_ring *r, int *resume)
{
  int c;

  *resume = 0;
  if (r->head == r->tail) {
    return -1;
  }
  c = r->buf[r->tail % NR_CONSOLE_RING_SIZE];
  r->tail++;
  if (r->paused) {
    r->paused = 0;
    *resume = 1;
  }
  return c;
}

#endif
