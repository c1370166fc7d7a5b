/*
 * The pipeline of one direction: loss, the queue, the rate, the delay and jitter, and the delivery.
 *
 * Per direction ("to_device": peer -> device, "to_peer": device -> peer), every
 * arriving frame goes through, in this order:
 *
 *   1. loss decision: a deterministic drop list (drop=data:3,frame:12,syn:1,...),
 *      the Gilbert-Elliott model of netem's "loss gemodel p r 1-h 1-k" (gemodel=p,r,1-h,1-k)
 *      and independent random loss (loss=0.01).  Every configured model
 *      draws its random numbers for every arriving frame, so the same frames in the
 *      same order with the same --seed give the same drops.  Precedence of the
 *      logged reason: droplist, gemodel, loss.
 *   2. queue limit (drop-tail): limit frames and/or limit_bytes bytes (frame
 *      length) waiting for the line.  The frame being serialised is "in service" and
 *      not counted.  Unlike netem's limit, frames in the delay line are not counted:
 *      the queue is the bottleneck buffer in front of the line.
 *   3. rate: serialisation at rate (bit/s) counting Ethernet overhead on the wire:
 *      max(len, NR_ETH_MIN_FRAME) + NR_ETH_OVERHEAD bytes (preamble, inter-frame gap,
 *      FCS).  With burst = 0 the line is strict: a frame leaves the rate stage when its
 *      last bit has been serialised, frames one after another.  With burst = B > 0
 *      bytes the stage is a token bucket of B bytes filled at the rate (tbf-like): an
 *      idle link passes B bytes at once, then frames follow at the rate.
 *      With medium=shared (a link-wide setting) the two directions' rate stages are one radio
 *      channel instead, taken in turns (TXOPs) that aggregate frames: see air.h.
 *      With bus_rate > 0 as well, every frame also crosses the WiFi chip's host bus on the board's
 *      side of the air (before the air toward the peer, after it toward the device): see bus.h.
 *   4. delay (seconds) plus jitter: uniform in [-jitter, +jitter] (netem's default
 *      when no distribution table is given) or, with jitter_dist=normal, normal with
 *      sigma = jitter truncated at 4 sigma; the total never goes below zero.  Frames
 *      keep their order (a frame never overtakes the previous one) unless reorder=1.
 *
 * Delivery (to_device): frames are handed to the device no faster than its NIC's wire
 * (pace bit/s, pace_burst full frames back to back).  The wire keeps its own schedule: a frame
 * takes the wire when the wire is free or when the frame is due, whichever is later, not when
 * the link woke up to hand it over, so the link's own wake-up lateness delays that frame alone
 * instead of every frame after it (measured: beside two busy processes, without real-time
 * priority, that lateness had cost 2-4 % of a 100 Mbit/s NIC's rate).  A link that was away
 * longer catches up by at most PACE_CATCHUP_FRAMES full frames back to back; the rest of the
 * time it was away the wire counts as idle.  When the device's socket would block
 * (QEMU reads it only while the emulated NIC has a free RX descriptor), the frame is held
 * until the socket takes it (overflow=hold, the default) or, with overflow=drop, dropped
 * and logged as "device-full", as a real NIC drops what arrives on the wire while its RX
 * ring is full; sock_frames=N
 * then limits what the socket toward the device holds unread to N full-size frames (through
 * SO_SNDBUF), the NIC's FIFO, instead of the kernel's max_dgram_qlen (11).
 */
#ifndef NR_DIR_H
#define NR_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "endpoint.h"
#include "frame.h"
#include "settings.h"
#include "util.h"

struct link;

struct frame {
    ns_t due;
    uint64_t order; /* tie-break: arrival order */
    uint64_t n;     /* frame number in this direction (1-based) */
    ns_t arrival;   /* the shared medium: when it arrived */
    uint32_t tries; /* the shared medium: transmissions so far */
    int state;      /* the shared medium: AIR_WAITING, AIR_THROUGH (held for order) or AIR_LOST */
    uint32_t len;
    uint8_t data[];
};
enum { AIR_WAITING, AIR_THROUGH, AIR_LOST };

struct qent {
    ns_t start;
    uint32_t len;
};

struct dir {
    int id;
    struct dir_conf c;
    struct rng rng_loss, rng_ge, rng_jitter;
    int ge_bad;
    uint64_t kind_count[NKIND];
    int drop_at[NKIND]; /* each kind's first drop-list entry not yet passed (the list is sorted) */
    uint32_t isn, seq_top; /* the last SYN's sequence number; the relative byte after the highest sent (seq:N) */
    int have_isn;
    /* rate stage */
    double tat; /* when the line would be free under strict serialisation (ns, relative to the start of link time) */
    double ns_per_byte;
    double burst_ns;
    /* delivery pacing (GCRA): a frame may be handed over once pace_tat - pace_burst_ns <= now */
    double pace_tat, pace_ns_per_byte, pace_burst_ns;
    /* queue accounting: frames admitted, not yet in service (start > now) */
    struct qent *q;
    size_t q_cap, q_head, q_n;
    uint64_t q_bytes;
    /* delay line: min-heap on (due, order) */
    struct frame **heap;
    size_t heap_n, heap_cap;
    ns_t last_due, last_arrival;
    double delay_ns, jitter_ns;
    int jitter_normal, overflow_drop; /* jitter_dist=normal; overflow=drop */
    double min_delay_ns; /* the least delay a frame can get: delay - the jitter's reach */
    uint64_t order;
    struct endpoint *out;
    /* the shared medium: admitted frames in order, until they are through (or lost) and all before
       them too; waiting ones count against the queue limits */
    struct frame **aq;
    size_t aq_cap, aq_head, aq_n;
    uint64_t aq_wait, aq_wait_bytes;
    struct rng rng_air;
    double airtime_ns;
    uint64_t txops, air_retries;
    /* the WiFi chip's host bus (medium=shared, bus_rate > 0): link time its finished transfers took, and them */
    double bus_ns;
    uint64_t bus_transfers, bus_hwm_pkts;
    /* counters */
    uint64_t frames_in, bytes_in, frames_out, bytes_out, dropped[NREASON];
    uint64_t hwm_pkts, hwm_bytes;
    uint64_t late_n, late_over_100us;
    double late_sum_ns;
    ns_t late_max_ns;
};

void dir_init(struct dir *d, int id, const struct dir_conf *c, uint64_t seed, double dilation, struct endpoint *out);
void heap_push(struct dir *d, struct frame *f);
void q_advance(struct dir *d, ns_t now);
void count_drop(struct capture *cap, struct dir *d, ns_t now, int reason, uint64_t n, const uint8_t *data,
                uint32_t len);
ns_t dir_due(struct dir *d, double dep);
void dir_arrive(struct link *L, struct dir *d, const uint8_t *data, uint32_t len, ns_t now);
void dir_deliver(struct link *L, struct dir *d, ns_t now);

#endif
