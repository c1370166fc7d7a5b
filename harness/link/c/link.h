/*
 * netrepro-link: the emulated network link between QEMU's NIC (a unix datagram
 * socket) and the TCP peer (a tap device, or a second unix datagram socket for
 * tests).  One timing thread does all the forwarding; the capture and the drops log
 * are written by a thread each, so disk I/O never holds up the timing.
 *
 * Its units, each with a header that says what it is for: the command line (args) and the
 * settings, the pipeline of one direction (dir), the shared medium (air), the WiFi chip's host
 * bus (bus), the board's clock and link time (clock), the capture and the drops log (capture),
 * the stats, the endpoints and the tap (endpoint), frames and utilities (frame, util), the event
 * loop (loop) and main.
 *
 * This header is the link's state: one struct, made once by main and passed to every unit that
 * works on more than its own part.
 */
#ifndef NR_LINK_H
#define NR_LINK_H

#include <poll.h>
#include <stdint.h>

#include "air.h"
#include "bus.h"
#include "capture.h"
#include "clock.h"
#include "dir.h"
#include "endpoint.h"
#include "frame.h"
#include "loop.h"
#include "util.h"

struct link {
    struct link_time time; /* link time and the board's clock */
    struct capture cap;
    struct dir dirs[NDIR];
    struct medium air;
    struct bus bus;
    struct endpoint dev, peer;
    struct waiter w;
    uint64_t max_inflight;  /* --max-inflight: frames in flight in a direction, at most */
    int defer;              /* --no-defer: wake for every arrival */
    const char *stats_path; /* --stats */
    uint64_t snapshot;      /* stats written so far */
    double spin_s;          /* wall time spent spinning */
    /* the event loop */
    int sfd; /* the signals */
    int running;
    ns_t last_flush;
    struct pollfd pfd[4]; /* the two inputs, the signals, the board's clock */
    short in_events[2];
    uint8_t buf[MAX_FRAME]; /* the frame being read */
};

#endif
