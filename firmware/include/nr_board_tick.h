/*
 * The part of the board's timer interrupt every board shares: the board's
 * millisecond is BOARD_CLOCK_SUBTICKS timer interrupts, and with the clock
 * port on each interrupt sends the low byte of the tick count (device time:
 * the link follows it). A board keeps one struct nr_tick, calls
 * nr_tick_advance() from its timer interrupt and implements
 * board_clock_port() with nr_tick_clock_port(); the clock port's driver
 * (clock_port_init, clock_port_send) is the board's console UART code.
 */
#ifndef NR_BOARD_TICK_H
#define NR_BOARD_TICK_H

#include <stdint.h>

#include "board_config.h"
#include "nr_board.h"

struct nr_tick {
  volatile uint32_t ms;      /* the board's milliseconds */
  volatile uint32_t subtick; /* 0 .. BOARD_CLOCK_SUBTICKS - 1 within the ms */
  volatile int clock_on;     /* the clock port is sending */
};

#ifdef CLOCK_PORT_BASE
void clock_port_init(void);
void clock_port_send(uint8_t count);
#endif

static inline void nr_tick_advance(struct nr_tick *t)
{
  if (++t->subtick == BOARD_CLOCK_SUBTICKS) {
    t->subtick = 0;
    t->ms++;
  }
#ifdef CLOCK_PORT_BASE
  if (t->clock_on) {
    clock_port_send((uint8_t)(t->ms * BOARD_CLOCK_SUBTICKS + t->subtick));
  }
#endif
}

/* The tick count (subticks since boot); call with interrupts masked. */
static inline uint64_t nr_tick_count(const struct nr_tick *t)
{
  return (uint64_t)t->ms * BOARD_CLOCK_SUBTICKS + t->subtick;
}

static inline int nr_tick_clock_port(struct nr_tick *t, int on)
{
#ifdef CLOCK_PORT_BASE
  if (on) {
    clock_port_init();
  }
  t->clock_on = on;
  return BOARD_TICK_OK;
#else
  (void)t;
  (void)on;
  return BOARD_TICK_PACED;
#endif
}

#endif
