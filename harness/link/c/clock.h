/*
 * The board's clock and link time: the time base the link runs on (its start on both clocks, the
 * dilation D), link time following the board's own clock when it reports one (--board-clock), the
 * board's stalls, and link time as it was a moment ago (the clock's history).
 */
#ifndef NR_CLOCK_H
#define NR_CLOCK_H

#include <poll.h>
#include <stdint.h>
#include <stdio.h>

#include "util.h"

/*
 * Link time: the time base of every due time, rate and timestamp here, in nanoseconds that pass
 * as wall nanoseconds would if the board kept exactly to its dilation D (a board second is
 * D * 1e9 of them).  Open loop it is the monotonic clock since start.  With --board-clock the
 * board reports its own clock, one byte per tick of its timer (--board-clock-per-ms ticks a board
 * millisecond; the tick count's low byte) on a serial port of the emulator, and link time follows it: when the emulator falls behind
 * wall / D (the host is busy, or the emulated NIC costs the host more than its instructions
 * count), the link slows with the board, so delays, rates and timestamps stay in the board's
 * time whatever the host does.  Between ticks link time runs on at a slope aimed to meet the
 * next tick when it is expected, and never passes it before it is seen; it never goes back.
 */
#define CLOCK_STALL_NS 1000000000 /* no tick for a wall second: the board stopped; run on freely */

struct board_clock {
    int listen_fd, fd;       /* -1: none */
    int ticking;             /* the first tick has been seen */
    uint8_t last_byte;
    uint64_t ticks;
    ns_t anchor_m;           /* wall (monotonic since start) of the anchor */
    double anchor_v, slope;  /* link time at the anchor; link ns per wall ns after it */
    double cap;              /* link time stays below this (the next tick) until that tick is seen */
    double tick_v;           /* link time of the last tick */
    ns_t tick_m;             /* wall time it was read */
    double wall_per_tick;    /* EWMA of the wall ns a board ms takes */
    ns_t first_m;            /* the first tick, for the lag figures */
    double first_v;
    double max_lag_ns;       /* the most the board fell behind wall / D, in link ns */
    ns_t max_gap_m;          /* the longest wall time between two reads that brought ticks */
    double last_v;           /* link_now() never returns less */
};
/*
 * The board's stalls: wall gaps between ticks of STALL_RECORD_NS or more, the longest STALL_KEEP kept
 * with when they began (CLOCK_MONOTONIC), so that the harness can tell which fell in its workload.  A
 * stall stops the board's ACKs and the link with it, but not the peer's retransmission timer, which runs
 * on the wall clock (Linux's minimum is 200 ms).
 */
#define STALL_RECORD_NS 50000000
#define STALL_KEEP 64
struct stall {
    ns_t at_m;  /* monotonic ns since start of the last tick before it */
    ns_t wall;  /* its length */
};

/*
 * Link time as it was: every segment of the piecewise line above is kept for a while, so that a
 * frame the kernel stamped a moment ago (read late, see set_pollfds in loop.c) is given the link time it
 * would have had if read at once.  Extrapolating back along the segment in force now would not do:
 * its slope (0.05-4) is the catch-up or the hold of this moment, not of the frame's.
 */
#define CLOCK_HISTORY 4096 /* segments (one per read of the board's ticks): > 50 ms of wall time */
struct clock_segment {
    ns_t m;
    double v, slope, cap;
};

struct link_time {
    ns_t t0;    /* CLOCK_MONOTONIC at start */
    ns_t wall0; /* CLOCK_REALTIME at start */
    /* Device time: wall seconds per second of the board's time.  Every setting is in the board's
       time; the link stretches delays and serialisation by D and writes every timestamp (capture,
       drops, stats) in the board's time, so a capture reads as if taken beside the real board. */
    double dilation;
    double clock_per_ms; /* the board's clock ticks a board ms (--board-clock-per-ms) */
    struct board_clock clk;
    struct stall stalls[STALL_KEEP];
    int stalls_n;
    uint64_t stalls_seen;
    struct clock_segment hist[CLOCK_HISTORY];
    uint64_t hist_n; /* segments ever kept; the newest is hist[(n - 1) % CLOCK_HISTORY] */
};

void link_time_init(struct link_time *lt);
void link_time_start(struct link_time *lt);
ns_t wall_of(const struct link_time *lt, ns_t mono);
ns_t link_now(struct link_time *lt);
int clock_holds(const struct link_time *lt, ns_t t);
ns_t link_wall(const struct link_time *lt, ns_t v);
double link_then(const struct link_time *lt, ns_t m);
void clock_listen(struct link_time *lt, const char *path);
struct pollfd clock_pollfd(const struct link_time *lt);
void clock_ready(struct link_time *lt, short revents);
void clock_write_stats(FILE *f, const struct link_time *lt);

#endif
