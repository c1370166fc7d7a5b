/* The pipeline of one direction: see dir.h. */
#define _GNU_SOURCE
#include "dir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "air.h"
#include "bus.h"
#include "link.h"

static int heap_less(const struct frame *a, const struct frame *b)
{
    return a->due < b->due || (a->due == b->due && a->order < b->order);
}

void heap_push(struct dir *d, struct frame *f)
{
    if (d->heap_n == d->heap_cap) {
        d->heap_cap = d->heap_cap ? d->heap_cap * 2 : 1024;
        d->heap = xrealloc(d->heap, d->heap_cap * sizeof(*d->heap));
    }
    size_t i = d->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_less(f, d->heap[parent]))
            break;
        d->heap[i] = d->heap[parent];
        i = parent;
    }
    d->heap[i] = f;
}

static struct frame *heap_pop(struct dir *d)
{
    struct frame *top = d->heap[0];
    struct frame *last = d->heap[--d->heap_n];
    size_t i = 0, n = d->heap_n;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const struct frame *best = last;
        if (l < n && heap_less(d->heap[l], best)) {
            m = l;
            best = d->heap[l];
        }
        if (r < n && heap_less(d->heap[r], best))
            m = r;
        if (m == i)
            break;
        d->heap[i] = d->heap[m];
        i = m;
    }
    if (n > 0)
        d->heap[i] = last;
    return top;
}

static void q_push(struct dir *d, ns_t start, uint32_t len)
{
    if (d->q_n == d->q_cap)
        d->q = ring_grow(d->q, sizeof(*d->q), d->q_n, &d->q_cap, &d->q_head);
    d->q[(d->q_head + d->q_n) % d->q_cap] = (struct qent){start, len};
    d->q_n++;
    d->q_bytes += len;
}

void q_advance(struct dir *d, ns_t now)
{
    while (d->q_n && d->q[d->q_head].start <= now) {
        d->q_bytes -= d->q[d->q_head].len;
        d->q_head = (d->q_head + 1) % d->q_cap;
        d->q_n--;
    }
}

/* where kind k's entries start: the list is sorted by kind */
static int first_of_kind(const struct drop_list *l, int k)
{
    int i = 0;
    while (i < l->n && l->e[i].kind < k)
        i++;
    return i;
}

void dir_init(struct dir *d, int id, const struct dir_conf *c, uint64_t seed, double dilation, struct endpoint *out)
{
    memset(d, 0, sizeof(*d));
    d->id = id;
    d->c = *c;
    d->out = out;
    for (int k = 0; k < NKIND; k++)
        d->drop_at[k] = first_of_kind(&c->drop, k);
    rng_seed(&d->rng_loss, seed, (unsigned)id, 0);
    rng_seed(&d->rng_ge, seed, (unsigned)id, 1);
    rng_seed(&d->rng_jitter, seed, (unsigned)id, 2);
    rng_seed(&d->rng_air, seed, (unsigned)id, 3);
    if (c->rate) {
        d->ns_per_byte = 8e9 / (double)c->rate * dilation;
        d->burst_ns = (double)c->burst * d->ns_per_byte;
    }
    d->tat = -1e18;
    d->pace_tat = -1e18;
    if (c->pace) {
        d->pace_ns_per_byte = 8e9 / (double)c->pace * dilation;
        d->pace_burst_ns = (double)c->pace_burst * wire_bytes(NR_ETH_MAX_FRAME) * d->pace_ns_per_byte;
    }
    d->delay_ns = c->delay * 1e9 * dilation;
    d->jitter_ns = c->jitter * 1e9 * dilation;
    d->jitter_normal = !strcmp(c->jitter_dist, "normal");
    d->overflow_drop = !strcmp(c->overflow, "drop");
    d->min_delay_ns = d->delay_ns - (d->jitter_normal ? 4.0 : 1.0) * d->jitter_ns;
}

static double jitter_draw(struct dir *d)
{
    double j = d->jitter_ns;
    if (j <= 0)
        return 0;
    if (!d->jitter_normal)
        return (2.0 * rng_unit(&d->rng_jitter) - 1.0) * j;
    /* Box-Muller; truncated at 4 sigma */
    double u1 = rng_unit(&d->rng_jitter), u2 = rng_unit(&d->rng_jitter);
    if (u1 < 1e-300)
        u1 = 1e-300;
    double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
    if (z > 4)
        z = 4;
    if (z < -4)
        z = -4;
    return z * j;
}

void count_drop(struct capture *cap, struct dir *d, ns_t now, int reason, uint64_t n, const uint8_t *data,
                uint32_t len)
{
    d->dropped[reason]++;
    drops_write(cap, now + cap->time->t0, d->id, reason, n, data, len); /* now is since t0 */
}

/* when a frame that leaves the rate stage (or the air) at dep is due: plus the delay and jitter, in order
   unless reorder */
ns_t dir_due(struct dir *d, double dep)
{
    double extra = d->delay_ns + jitter_draw(d);
    if (extra < 0)
        extra = 0;
    ns_t due = (ns_t)llround(dep + extra);
    if (!d->c.reorder && due < d->last_due)
        due = d->last_due;
    d->last_due = due;
    return due;
}

/* a TCP frame's bytes as seq:N names them: [*first, *last] relative to the last SYN that way, if it carries data
   never sent before (a retransmission is never named by seq:N) */
static int new_bytes(struct dir *d, const struct pinfo *p, uint64_t *first, uint64_t *last)
{
    if (p->flags & 0x02) { /* a connection opens: its bytes count from 1, and every seq entry may name them */
        d->isn = p->seq;
        d->seq_top = 1;
        d->have_isn = 1;
        d->drop_at[K_SEQ] = first_of_kind(&d->c.drop, K_SEQ);
    }
    if (!d->have_isn || p->payload == 0)
        return 0;
    uint32_t rel = p->seq - d->isn, end = rel + p->payload;
    int fresh = (int32_t)(rel - d->seq_top) >= 0;
    if ((int32_t)(end - d->seq_top) > 0)
        d->seq_top = end;
    *first = rel;
    *last = (uint64_t)end - 1;
    return fresh;
}

/* the drop list's verdict on a frame arriving: its kinds are counted, and whether an entry names it */
static int drop_listed(struct dir *d, const uint8_t *data, uint32_t len)
{
    struct pinfo p;
    int is_kind[NKIND] = {0};
    uint64_t first = 0, last = 0;
    is_kind[K_FRAME] = 1;
    if (d->c.drop.n) {
        parse_frame(data, len, &p);
        if (p.is_ipv4 && !p.frag && p.proto == 6) {
            is_kind[K_DATA] = p.payload > 0;
            is_kind[K_SYN] = (p.flags & 0x02) != 0;
            is_kind[K_FIN] = (p.flags & 0x01) != 0;
            is_kind[K_RST] = (p.flags & 0x04) != 0;
            is_kind[K_ACK] = p.payload == 0 && (p.flags & 0x07) == 0 && (p.flags & 0x10);
            is_kind[K_SEQ] = new_bytes(d, &p, &first, &last);
        }
        is_kind[K_UDP] = p.is_ipv4 && !p.frag && p.proto == 17;
    }
    for (int k = 0; k < NKIND; k++)
        d->kind_count[k] += (uint64_t)is_kind[k];
    /* counts (and new bytes) only grow: an entry whose last N is passed never names a frame again */
    const struct drop_list *l = &d->c.drop;
    int listed = 0;
    for (int k = 0; k < NKIND; k++) {
        if (!is_kind[k])
            continue;
        uint64_t lo = k == K_SEQ ? first : d->kind_count[k], hi = k == K_SEQ ? last : d->kind_count[k];
        while (d->drop_at[k] < l->n && l->e[d->drop_at[k]].kind == k && l->e[d->drop_at[k]].hi < lo)
            d->drop_at[k]++;
        for (int i = d->drop_at[k]; i < l->n && l->e[i].kind == k && l->e[i].lo <= hi; i++)
            listed |= l->e[i].hi >= lo;
    }
    return listed;
}

/* why the loss models drop the frame (-1: they keep it); the drop list's verdict comes first */
static int loss_reason(struct dir *d, int listed)
{
    /* the random models draw for every arrival, whatever else happens to the frame */
    int lost_ge = 0, lost_random = 0;
    if (d->c.gemodel.on) {
        double u_trans = rng_unit(&d->rng_ge), u_loss = rng_unit(&d->rng_ge);
        if (!d->ge_bad) {
            lost_ge = u_loss < d->c.gemodel.good_loss;
            if (u_trans < d->c.gemodel.p)
                d->ge_bad = 1;
        } else {
            lost_ge = u_loss < d->c.gemodel.bad_loss;
            if (u_trans < d->c.gemodel.r)
                d->ge_bad = 0;
        }
    }
    if (d->c.loss > 0)
        lost_random = rng_unit(&d->rng_loss) < d->c.loss;
    return listed ? R_DROPLIST : lost_ge ? R_GEMODEL : lost_random ? R_LOSS : -1;
}

/* whether a frame of len bytes arriving at now finds the queue full (or too many frames in flight) */
static int queue_full(struct link *L, struct dir *d, uint32_t len, ns_t now)
{
    if (L->air.on)
        air_advance(L, now);
    if (L->bus.on)
        bus_advance(L, now); /* the frames off the air that reached the bus before this one */
    q_advance(d, now);
    uint64_t q_n = L->air.on ? d->aq_wait : d->q_n, q_bytes = L->air.on ? d->aq_wait_bytes : d->q_bytes;
    return (d->c.limit && q_n >= d->c.limit) || (d->c.limit_bytes && q_bytes + len > d->c.limit_bytes) ||
           d->heap_n + d->aq_n + (d->id == TO_DEVICE ? L->bus.p_n : 0) >= L->max_inflight;
}

static struct frame *frame_new(const uint8_t *data, uint32_t len, uint64_t n, ns_t now)
{
    struct frame *f = xmalloc(sizeof(*f) + len);
    f->n = n;
    f->len = len;
    f->arrival = now;
    f->tries = 0;
    f->state = AIR_WAITING;
    memcpy(f->data, data, len);
    return f;
}

/* rate: when a frame of len bytes arriving at now leaves the rate stage; the queue counts it until its
   service starts */
static double rate_departure(struct dir *d, uint32_t len, ns_t now)
{
    double dep = (double)now;
    if (d->c.rate) {
        double ser = wire_bytes(len) * d->ns_per_byte;
        double start = d->tat > (double)now ? d->tat : (double)now;
        d->tat = start + ser;
        double t = d->tat - d->burst_ns;
        if (t > dep)
            dep = t;
        double service_start = dep - ser;
        if (service_start > (double)now) {
            q_push(d, (ns_t)ceil(service_start), len);
            if (d->q_n > d->hwm_pkts)
                d->hwm_pkts = d->q_n;
            if (d->q_bytes > d->hwm_bytes)
                d->hwm_bytes = d->q_bytes;
        }
    }
    return dep;
}

/* a frame from the device, taken onto the link: a device-side capture has it now */
static void capture_from_device(struct capture *cap, const struct dir *d, ns_t now, const uint8_t *data,
                                uint32_t len)
{
    if ((cap->sides & CAPTURE_DEVICE) && d->id == TO_PEER)
        pcap_write(cap, now + cap->time->t0, data, len); /* device side: stamped on arrival from the device */
}

/* a frame arrives at time now (ns since the start of link time) */
void dir_arrive(struct link *L, struct dir *d, const uint8_t *data, uint32_t len, ns_t now)
{
    if (now < d->last_arrival)
        now = d->last_arrival; /* arrival times from the kernel: never let them go backwards */
    d->last_arrival = now;
    d->frames_in++;
    d->bytes_in += len;
    uint64_t n = d->frames_in;
    if ((L->cap.sides & CAPTURE_PEER) && d->id == TO_DEVICE)
        pcap_write(&L->cap, now + L->time.t0, data, len); /* peer side: all the peer sent, the frames the link loses too */

    int reason = loss_reason(d, drop_listed(d, data, len));
    if (reason >= 0) {
        count_drop(&L->cap, d, now, reason, n, data, len);
        return;
    }

    /* queue limit */
    if (queue_full(L, d, len, now)) {
        count_drop(&L->cap, d, now, R_QUEUE, n, data, len);
        return;
    }

    struct frame *f = frame_new(data, len, n, now);
    if (L->air.on) {
        if (L->bus.on && d->id == TO_PEER) /* the board's frame crosses the bus first: it reaches the air's queue
                                               when that ends (toward the device it crosses after the air) */
            f->arrival = (ns_t)ceil(bus_schedule(&L->bus, d, len, (double)now));
        air_admit(d, f);
        capture_from_device(&L->cap, d, now, data, len);
        return;
    }

    double dep = rate_departure(d, len, now);

    /* delay */
    f->due = dir_due(d, dep);
    f->order = d->order++;
    heap_push(d, f);

    capture_from_device(&L->cap, d, now, data, len);
}

/* a late link hands over at most this many full frames' wire time back to back to catch up */
#define PACE_CATCHUP_FRAMES 2

/* whether the output may be tried now: not blocked, or blocked without a POLLOUT to wait for and past its
   retry time */
static int out_open(struct dir *d, ns_t now)
{
    if (!d->out->blocked)
        return 1;
    if (d->out->connected || now < d->out->retry_at)
        return 0;
    d->out->blocked = 0;
    d->out->free_at = now;
    return 1;
}

/* the NIC's wire after the frame f went over it (handed over, or lost, at t) */
static void pace_after(struct dir *d, const struct frame *f, ns_t t)
{
    /* on the wire from when it was free or the frame was due, not from our wake-up */
    double catchup = PACE_CATCHUP_FRAMES * wire_bytes(NR_ETH_MAX_FRAME) * d->pace_ns_per_byte;
    double from = d->pace_tat > (double)f->due ? d->pace_tat : (double)f->due;
    if (from < (double)t - catchup)
        from = (double)t - catchup;
    d->pace_tat = from + wire_bytes(f->len) * d->pace_ns_per_byte;
}

/* the frame f was handed over at t: counted, its lateness noted, and captured on that side */
static void delivered(struct link *L, struct dir *d, const struct frame *f, ns_t t)
{
    d->frames_out++;
    d->bytes_out += f->len;
    /* late against its schedule, not counting the time the receiver could not take it: what is
     * left is the link (or the board's clock it follows) falling behind, a host disturbance */
    ns_t late = t - (f->due > d->out->free_at ? f->due : d->out->free_at);
    if (late < 0)
        late = 0;
    d->late_n++;
    d->late_sum_ns += (double)late;
    if (late > d->late_max_ns)
        d->late_max_ns = late;
    if (late > 100000 * L->time.dilation)
        d->late_over_100us++;
    /* stamped when handed over: to the device for a device-side capture, to the peer for a peer-side one */
    if (L->cap.sides & (d->id == TO_PEER ? CAPTURE_PEER : CAPTURE_DEVICE))
        pcap_write(&L->cap, t + L->time.t0, f->data, f->len);
}

/* send what is due, until the output would block */
void dir_deliver(struct link *L, struct dir *d, ns_t now)
{
    while (d->heap_n && d->heap[0]->due <= now) {
        if (!out_open(d, now))
            return;
        struct frame *f = d->heap[0];
        ns_t t = link_now(&L->time);
        /* A late wake-up must not turn due frames into a burst the receiving NIC cannot take
         * (QEMU's LAN9118 drops beyond ~6 frames): hand them over no faster than its wire. */
        if (d->c.pace && d->pace_tat - d->pace_burst_ns > (double)t)
            return;
        int r = endpoint_send(d->out, f->data, f->len, t);
        if (r == 1 && !d->overflow_drop) {
            d->out->blocked = 1;
            d->out->retry_at = t + 50000;
            return;
        }
        /* overflow=drop: the receiver is full now, as a NIC whose RX ring (and FIFO) is full
         * when the frame comes in on the wire: the frame is lost, after taking its wire time */
        heap_pop(d);
        if (d->c.pace)
            pace_after(d, f, t);
        if (r == 0)
            delivered(L, d, f, t);
        else
            count_drop(&L->cap, d, t, r == 1 ? R_DEVICE_FULL : R_UNREACHABLE, f->n, f->data, f->len);
        free(f);
    }
}
