/*
 * The WiFi chip's host bus (medium=shared, bus_rate > 0): the one transfer at a time, for both
 * directions, between the board and the radio.
 *
 * With medium=shared and bus_rate > 0, the WiFi chip hangs on a host bus (SDIO or SPI) between the
 * board and the radio, and every frame crosses it once, on the board's side of the air:
 *   to_peer    the frame the board sends crosses the bus first; it reaches the air's queue when its
 *              transfer ends (it counts against the direction's queue limit from its arrival, with
 *              the frames waiting for the air: the board's queue toward the chip and the chip's queue
 *              toward the air are taken as one);
 *   to_device  the frame off the air (at the end of its turn) crosses the bus, then takes the one-way
 *              delay and jitter; while it waits for the bus it counts against the direction's limit
 *              and limit_bytes (the chip's buffer toward the host; full: dropped as "queue").
 * A transfer takes bus_cost (command and response, block framing, the driver's interrupt turnaround)
 * + the frame's bytes * 8 / bus_rate.  The bus is one half-duplex resource both directions share: one
 * transfer at a time, in the order the frames reached it (FIFO across the directions).  Because it is
 * FIFO, a transfer's start is max(its arrival, the end of the one before) once every earlier arrival
 * is in; a frame from the board is in when it is read (its kernel timestamp), so a frame off the air,
 * whose arrival (its turn's end) is known when the turn is taken, waits in `pending` until link time
 * reaches its arrival (a deadline of its own) and is then put in order.  Link time, as the air's.
 * Busy time is counted per direction when a transfer ends (bus_s in the stats), so that a stats
 * snapshot's bus time and frames_out cover the same frames.
 */
#ifndef NR_BUS_H
#define NR_BUS_H

#include <stddef.h>
#include <stdint.h>

#include "dir.h"
#include "settings.h"
#include "util.h"

struct link;

struct bus_xfer {
    double start, end;
    int dir;
    uint32_t len;
};

struct bus {
    int on;
    double cost_ns, ns_per_byte; /* link ns */
    double free_at;              /* the end of the last transfer scheduled */
    struct bus_xfer *x;          /* the transfers scheduled and not ended, in order: a ring */
    size_t cap, head, n, started; /* started: of the n, how many have started (the first ones) */
    uint64_t wait[NDIR], wait_bytes[NDIR]; /* transfers not started yet, per direction */
    struct frame **p;            /* frames off the air toward the device, not at the bus yet: a ring */
    size_t p_cap, p_head, p_n;
    struct dir *dirs;
};
void bus_init(struct bus *bus, const struct link_conf *lc, struct dir *dirs, double dilation);
void bus_settle(struct bus *bus, double t);
double bus_schedule(struct bus *bus, struct dir *d, uint32_t len, double at);
void bus_from_air(struct bus *bus, struct frame *f, double e);
void bus_advance(struct link *L, ns_t t);
ns_t bus_deadline(const struct bus *bus);

#endif
