/* The shared medium: see air.h. */
#define _GNU_SOURCE
#include "air.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "link.h"


void air_init(struct medium *air, const struct link_conf *lc, struct dir *dirs, double dilation)
{
    double ns = 1e9 * dilation; /* link ns in a board second */
    air->last = -1;
    air->on = !strcmp(lc->medium, "shared");
    air->access_ns = (lc->sifs + (double)lc->aifsn * lc->slot + (double)lc->cwmin / 2.0 * lc->slot) * ns;
    air->preamble_ns = lc->preamble * ns;
    air->ext_ns = lc->signal_ext * ns;
    air->sifs_ns = lc->sifs * ns;
    air->ba_ns = lc->blockack * ns;
    air->agg_time_ns = lc->agg_time * ns;
    air->ns_per_byte = 8e9 / (double)lc->phy_rate * dilation;
    air->fer = lc->fer;
    air->overhead = lc->mpdu_overhead;
    air->agg_frames = lc->agg_frames;
    air->agg_bytes = lc->agg_bytes;
    air->retry_limit = lc->retry_limit;
    air->free_at = -1e18;
    air->dirs = dirs;
    if (air->on && (dirs[TO_DEVICE].c.rate || dirs[TO_PEER].c.rate))
        fprintf(stderr, "netrepro-link: medium=shared: the air runs at phy_rate %" PRIu64 " bit/s; rate and burst "
                "do not apply\n", lc->phy_rate);
}

static struct frame *aq_at(const struct dir *d, size_t i) { return d->aq[(d->aq_head + i) % d->aq_cap]; }

/* an admitted frame waits for its turn on the air */
void air_admit(struct dir *d, struct frame *f)
{
    if (d->aq_n == d->aq_cap)
        d->aq = ring_grow(d->aq, sizeof(*d->aq), d->aq_n, &d->aq_cap, &d->aq_head);
    d->aq[(d->aq_head + d->aq_n) % d->aq_cap] = f;
    d->aq_n++;
    d->aq_wait++;
    d->aq_wait_bytes += f->len;
    if (d->aq_wait > d->hwm_pkts)
        d->hwm_pkts = d->aq_wait;
    if (d->aq_wait_bytes > d->hwm_bytes)
        d->hwm_bytes = d->aq_wait_bytes;
}

/* a frame's bytes on the air: an A-MPDU subframe, padded to 4 bytes */
static uint64_t air_bytes(const struct medium *air, uint32_t len) { return ((uint64_t)len + air->overhead + 3) & ~(uint64_t)3; }

/* when the next turn's access starts (INFINITY: nothing waits), and whose turn it is */
static double air_next(const struct medium *air, int *winner)
{
    double first[NDIR], s = INFINITY;
    for (int i = 0; i < NDIR; i++) {
        const struct dir *d = &air->dirs[i];
        first[i] = d->aq_n ? (double)aq_at(d, 0)->arrival : INFINITY; /* the head always waits */
        if (first[i] < s)
            s = first[i];
    }
    if (s == INFINITY)
        return s;
    if (s < air->free_at)
        s = air->free_at;
    if (first[TO_DEVICE] <= s && first[TO_PEER] <= s) /* both contend: take turns */
        *winner = air->last >= 0 ? 1 - air->last : first[TO_PEER] < first[TO_DEVICE] ? TO_PEER : TO_DEVICE;
    else
        *winner = first[TO_DEVICE] <= s ? TO_DEVICE : TO_PEER;
    return s;
}

/* the A-MPDU of a turn whose PPDU starts at p: the frames of d that have arrived by then, within the
   block ack window and the aggregate's limits, into sel; how many, and their bytes on the air */
static uint64_t air_select(const struct medium *air, struct dir *d, double p, struct frame **sel, uint64_t *bytes)
{
    uint64_t k = 0;
    size_t window = d->aq_n < AIR_WINDOW ? d->aq_n : AIR_WINDOW;
    for (size_t i = 0; i < window && k < air->agg_frames; i++) {
        struct frame *f = aq_at(d, i);
        if (f->state != AIR_WAITING)
            continue;
        if ((double)f->arrival > p)
            break;
        uint64_t b = air_bytes(air, f->len);
        if (k && (*bytes + b > air->agg_bytes ||
                  (air->agg_time_ns > 0 &&
                   air->preamble_ns + (double)(*bytes + b) * air->ns_per_byte > air->agg_time_ns)))
            break;
        sel[k++] = f;
        *bytes += b;
    }
    return k;
}

/* the frames of d that left the air by link time e (its turn's end), in order: dropped if lost, else to the
   bus or the delay */
static void air_off(struct link *L, struct dir *d, double e)
{
    /* off the air in order, at the end of the turn */
    while (d->aq_n && aq_at(d, 0)->state != AIR_WAITING) {
        struct frame *f = aq_at(d, 0);
        d->aq_head = (d->aq_head + 1) % d->aq_cap;
        d->aq_n--;
        if (f->state == AIR_LOST) {
            count_drop(&L->cap, d, (ns_t)llround(e), R_AIR, f->n, f->data, f->len);
            free(f);
            continue;
        }
        if (d->id == TO_DEVICE && L->bus.on) {
            bus_from_air(&L->bus, f, e); /* the chip hands it to the board over its host bus */
            continue;
        }
        f->due = dir_due(d, e);
        f->order = d->order++;
        heap_push(d, f);
    }
}

/* direction w's turn, its access starting at s */
static void air_turn(struct link *L, int w, double s)
{
    struct medium *air = &L->air;
    struct dir *d = &air->dirs[w];
    double p = s + air->access_ns; /* the PPDU starts: the A-MPDU is what has arrived by now */
    struct frame *sel[AIR_WINDOW];
    uint64_t bytes = 0, k = air_select(air, d, p, sel, &bytes);
    double e = p + air->preamble_ns + (double)bytes * air->ns_per_byte + air->ext_ns + air->sifs_ns +
               air->ba_ns + air->ext_ns;
    d->airtime_ns += e - s;
    d->txops++;
    air->free_at = e;
    air->last = w;
    for (uint64_t j = 0; j < k; j++) {
        struct frame *f = sel[j];
        if (f->tries++)
            d->air_retries++;
        int lost = air->fer > 0 && rng_unit(&d->rng_air) < air->fer;
        if (lost && f->tries < air->retry_limit)
            continue; /* the block ack asks for it again */
        f->state = lost ? AIR_LOST : AIR_THROUGH;
        d->aq_wait--;
        d->aq_wait_bytes -= f->len;
    }
    air_off(L, d, e);
}

/* take every turn whose A-MPDU is settled by link time t */
void air_advance(struct link *L, ns_t t)
{
    const struct medium *air = &L->air;
    int w = 0;
    double s;
    while ((s = air_next(air, &w)) != INFINITY && s + air->access_ns <= (double)t)
        air_turn(L, w, s);
}

/* when the next turn's A-MPDU is settled (INT64_MAX: nothing waits) */
ns_t air_deadline(const struct medium *air)
{
    int w = 0;
    double s = air_next(air, &w);
    return s == INFINITY ? INT64_MAX : (ns_t)ceil(s + air->access_ns);
}
