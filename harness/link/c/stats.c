/* Stats: see stats.h. */
#define _GNU_SOURCE
#include "stats.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "link.h"

/* direction i's member of the stats */
static void write_dir(FILE *f, struct link *L, int i, ns_t now)
{
    const double dilation = L->time.dilation;
    struct dir *d = &L->dirs[i];
    const struct endpoint *in = i == TO_PEER ? &L->dev : &L->peer;
    q_advance(d, now);
    fprintf(f,
            ",\n  \"%s\": {\n    \"frames_in\": %" PRIu64 ",\n    \"bytes_in\": %" PRIu64
            ",\n    \"frames_out\": %" PRIu64 ",\n    \"bytes_out\": %" PRIu64 ",\n    \"dropped\": {",
            dir_name[i], d->frames_in, d->bytes_in, d->frames_out, d->bytes_out);
    for (int r = 0; r < NREASON; r++)
        if (r != R_AIR || L->air.on)
            fprintf(f, "%s\"%s\": %" PRIu64, r ? ", " : "", reason_name[r], d->dropped[r]);
    fprintf(f,
            "},\n    \"queue_hwm_pkts\": %" PRIu64 ",\n    \"queue_hwm_bytes\": %" PRIu64
            ",\n    \"queue_pkts\": %zu,\n    \"in_flight\": %zu,\n    \"late_us_mean\": %.3f,\n"
            "    \"late_us_max\": %.3f,\n    \"late_over_100us\": %" PRIu64 ",\n    \"overflow\": \"%s\",\n"
            "    \"out_sndbuf_bytes\": %d,\n    \"sock_frames\": %d,\n    \"arrivals_kernel_stamped\": %" PRIu64
            ",\n    \"arrivals_stamped_on_read\": %" PRIu64,
            d->hwm_pkts, d->hwm_bytes, L->air.on ? (size_t)d->aq_wait : d->q_n,
            d->heap_n + d->aq_n + (i == TO_DEVICE ? L->bus.p_n : 0),
            d->late_n ? d->late_sum_ns / d->late_n / 1e3 / dilation : 0.0, d->late_max_ns / 1e3 / dilation,
            d->late_over_100us, d->c.overflow, d->out->sndbuf,
            d->out->sock_frames, in->kernel_stamped, in->read_stamped);
    if (L->air.on) /* the air: link time its turns took, the turns, the MPDUs sent again */
        fprintf(f, ",\n    \"airtime_s\": %.9f,\n    \"txops\": %" PRIu64 ",\n    \"air_retries\": %" PRIu64,
                d->airtime_ns / 1e9 / dilation, d->txops, d->air_retries);
    if (L->bus.on) /* the bus: link time its finished transfers took, them, the most that waited for it */
        fprintf(f, ",\n    \"bus_s\": %.9f,\n    \"bus_transfers\": %" PRIu64 ",\n    \"bus_queue_hwm_pkts\": %" PRIu64,
                d->bus_ns / 1e9 / dilation, d->bus_transfers, d->bus_hwm_pkts);
    fputs("\n  }", f);
}

void stats_write(struct link *L, ns_t now, int final)
{
    const double dilation = L->time.dilation;
    struct dir *dirs = L->dirs;
    if (!L->stats_path)
        return;
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", L->stats_path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "netrepro-link: cannot write stats %s: %s\n", tmp, strerror(errno));
        return;
    }
    L->snapshot++;
    fprintf(f,
            "{\n  \"elapsed_s\": %.9f,\n  \"dilation\": %.6f,\n  \"snapshot\": %" PRIu64 ",\n  \"final\": %s,\n"
            "  \"spin_s\": %.6f,\n  \"capture_stalls\": %" PRIu64,
            now / 1e9 / dilation, dilation, L->snapshot, final ? "true" : "false", L->spin_s,
            capture_stalls(&L->cap));
    clock_write_stats(f, &L->time);
    if (L->air.on) {
        double board_s = now / 1e9 / dilation;
        fprintf(f, ",\n  \"medium\": \"shared\",\n  \"txops_per_s\": %.3f",
                board_s > 0 ? (double)(dirs[TO_DEVICE].txops + dirs[TO_PEER].txops) / board_s : 0.0);
    }
    if (L->bus.on)
        bus_settle(&L->bus, (double)now);
    for (int i = 0; i < NDIR; i++)
        write_dir(f, L, i, now);
    fputs("\n}\n", f);
    if (fclose(f) != 0 || rename(tmp, L->stats_path) != 0)
        fprintf(stderr, "netrepro-link: cannot write stats %s: %s\n", L->stats_path, strerror(errno));
}
