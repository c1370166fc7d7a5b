/* The WiFi chip's host bus: see bus.h. */
#define _GNU_SOURCE
#include "bus.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "link.h"


void bus_init(struct bus *bus, const struct link_conf *lc, struct dir *dirs, double dilation)
{
    if (lc->bus_rate && strcmp(lc->medium, "shared"))
        usage_error("--bus_rate %" PRIu64 ": the WiFi chip's host bus needs medium=shared (it sits between the "
                    "board and the air); set medium=shared, or bus_rate=0 for no bus", lc->bus_rate);
    bus->on = lc->bus_rate > 0;
    bus->cost_ns = lc->bus_cost * 1e9 * dilation;
    bus->ns_per_byte = lc->bus_rate ? 8e9 / (double)lc->bus_rate * dilation : 0;
    bus->free_at = -1e18;
    bus->dirs = dirs;
}

/* transfers that started by link time t stop waiting; those that ended count their busy time */
void bus_settle(struct bus *bus, double t)
{
    while (bus->started < bus->n) {
        struct bus_xfer *x = &bus->x[(bus->head + bus->started) % bus->cap];
        if (x->start > t)
            break;
        bus->wait[x->dir]--;
        bus->wait_bytes[x->dir] -= x->len;
        bus->started++;
    }
    while (bus->started && bus->x[bus->head].end <= t) {
        struct bus_xfer *x = &bus->x[bus->head];
        bus->dirs[x->dir].bus_ns += x->end - x->start;
        bus->dirs[x->dir].bus_transfers++;
        bus->head = (bus->head + 1) % bus->cap;
        bus->n--;
        bus->started--;
    }
}

/* a frame of direction d reaches the bus at link time at (every earlier arrival already in): when its transfer
   ends */
double bus_schedule(struct bus *bus, struct dir *d, uint32_t len, double at)
{
    bus_settle(bus, at);
    if (bus->n == bus->cap)
        bus->x = ring_grow(bus->x, sizeof(*bus->x), bus->n, &bus->cap, &bus->head);
    double start = bus->free_at > at ? bus->free_at : at;
    double end = start + bus->cost_ns + (double)len * bus->ns_per_byte;
    bus->x[(bus->head + bus->n) % bus->cap] = (struct bus_xfer){start, end, d->id, len};
    bus->n++;
    bus->wait[d->id]++;
    bus->wait_bytes[d->id] += len;
    if (bus->wait[d->id] > d->bus_hwm_pkts)
        d->bus_hwm_pkts = bus->wait[d->id];
    bus->free_at = end;
    return end;
}

/* a frame off the air toward the device at link time e (its turn's end): it waits to reach the bus at e */
void bus_from_air(struct bus *bus, struct frame *f, double e)
{
    if (bus->p_n == bus->p_cap)
        bus->p = ring_grow(bus->p, sizeof(*bus->p), bus->p_n, &bus->p_cap, &bus->p_head);
    f->arrival = (ns_t)ceil(e); /* from here on: when it reaches the bus */
    bus->p[(bus->p_head + bus->p_n) % bus->p_cap] = f;
    bus->p_n++;
}

/* the frames off the air that reached the bus by link time t, in order: queued for it (or dropped when the
   chip's buffer toward the board is full), then the delay; then what settled by t */
void bus_advance(struct link *L, ns_t t)
{
    struct bus *bus = &L->bus;
    while (bus->p_n) {
        struct frame *f = bus->p[bus->p_head];
        if (f->arrival > t)
            break;
        bus->p_head = (bus->p_head + 1) % bus->p_cap;
        bus->p_n--;
        struct dir *d = &bus->dirs[TO_DEVICE];
        bus_settle(bus, (double)f->arrival);
        if ((d->c.limit && bus->wait[TO_DEVICE] >= d->c.limit) ||
            (d->c.limit_bytes && bus->wait_bytes[TO_DEVICE] + f->len > d->c.limit_bytes)) {
            count_drop(&L->cap, d, f->arrival, R_QUEUE, f->n, f->data, f->len);
            free(f);
            continue;
        }
        f->due = dir_due(d, bus_schedule(bus, d, f->len, (double)f->arrival));
        f->order = d->order++;
        heap_push(d, f);
    }
    bus_settle(bus, (double)t);
}

/* when the next frame off the air reaches the bus (INT64_MAX: none waits) */
ns_t bus_deadline(const struct bus *bus) { return bus->p_n ? bus->p[bus->p_head]->arrival : INT64_MAX; }

