/*
 * The event loop: one timing thread reads both inputs, sends what is due, and waits for the next
 * deadline.
 *
 * Timing: CLOCK_MONOTONIC, ppoll with nanosecond timeouts, timer slack 1 ns, and an
 * adaptive, CPU-budgeted spin for the last microseconds before a deadline (the
 * spin margin follows the measured wake-up lateness of ppoll; --spin-budget, default
 * 15 % of wall time; no spinning at all while nothing is scheduled).  A frame's arrival
 * time on a unix socket is the kernel's receive timestamp (SO_TIMESTAMPNS), so the
 * link's own wake-up latency does not shift its schedule; that also lets an input wait
 * until the next timed wake-up when nothing arriving could be due before it (a wake-up
 * costs ~20 us of CPU in a VM).  A tap has no such timestamp: its frames are stamped
 * when read.
 */
#ifndef NR_LOOP_H
#define NR_LOOP_H

#include "util.h"

struct link;

/* wait with an adaptive spin */
struct waiter {
    ns_t spin_max;      /* upper bound of the spin margin */
    double budget;      /* fraction of wall time the spin may use */
    double over_mean;   /* EWMA of ppoll's wake-up lateness */
    double over_dev;    /* EWMA of its absolute deviation */
    ns_t window_start;  /* budget window */
    ns_t window_spin;
};

void loop_once(struct link *L);

#endif
