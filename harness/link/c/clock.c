/* The board's clock and link time: see clock.h. */
#define _GNU_SOURCE
#include "clock.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* nothing known of the board's clock yet: link time runs with the monotonic clock */
void link_time_init(struct link_time *lt)
{
    memset(lt, 0, sizeof(*lt));
    lt->dilation = 1.0;
    lt->clock_per_ms = 1.0;
    lt->clk = (struct board_clock){.listen_fd = -1, .fd = -1, .slope = 1.0, .cap = INFINITY};
}

/* the start of link time on both clocks */
void link_time_start(struct link_time *lt)
{
    struct timespec ts;
    lt->t0 = clock_pair(&ts, 4); /* once: every timestamp of the run is derived from it */
    lt->wall0 = (ns_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

ns_t wall_of(const struct link_time *lt, ns_t mono) { return lt->wall0 + (ns_t)((double)(mono - lt->t0) / lt->dilation); }


static void stall_note(struct link_time *lt, ns_t at_m, ns_t wall)
{
    lt->stalls_seen++;
    int slot = lt->stalls_n < STALL_KEEP ? lt->stalls_n++ : -1;
    if (slot < 0) { /* full: it replaces the shortest kept, if longer */
        slot = 0;
        for (int i = 1; i < STALL_KEEP; i++)
            if (lt->stalls[i].wall < lt->stalls[slot].wall)
                slot = i;
        if (lt->stalls[slot].wall >= wall)
            return;
    }
    lt->stalls[slot] = (struct stall){at_m, wall};
}

static int stall_earlier(const void *a, const void *b)
{
    ns_t x = ((const struct stall *)a)->at_m, y = ((const struct stall *)b)->at_m;
    return (x > y) - (x < y);
}

/* whether the board's clock holds link time below its next tick at wall time m (a board stopped for
   CLOCK_STALL_NS no longer does) */
static int clock_holding(const struct link_time *lt, ns_t m) { return lt->clk.ticking && m - lt->clk.tick_m < CLOCK_STALL_NS; }

static double link_at(const struct link_time *lt, ns_t m)
{
    double v = lt->clk.anchor_v + (double)(m - lt->clk.anchor_m) * lt->clk.slope;
    if (clock_holding(lt, m) && v > lt->clk.cap)
        v = lt->clk.cap;
    return v;
}

/* link time now (ns since start, in the board's time times D) */
ns_t link_now(struct link_time *lt)
{
    double v = link_at(lt, mono_ns() - lt->t0);
    if (v < lt->clk.last_v)
        v = lt->clk.last_v;
    lt->clk.last_v = v;
    return (ns_t)v;
}

/* whether link time cannot reach `t` before the board's next tick is read */
int clock_holds(const struct link_time *lt, ns_t t) { return clock_holding(lt, mono_ns() - lt->t0) && (double)t > lt->clk.cap; }

/* how many wall ns link time takes to advance by `v` from now (an estimate: it is re-checked) */
ns_t link_wall(const struct link_time *lt, ns_t v)
{
    double s = lt->clk.slope > 0.05 ? lt->clk.slope : 0.05;
    ns_t w = (ns_t)((double)v / s);
    if (lt->clk.ticking && lt->clk.last_v >= lt->clk.cap - 1.0 && w < (ns_t)lt->clk.wall_per_tick)
        w = (ns_t)lt->clk.wall_per_tick; /* held at the next tick: its byte wakes us */
    return w;
}

void clock_listen(struct link_time *lt, const char *path)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path))
        usage_error("--board-clock: path too long (%zu bytes, at most %zu)", strlen(path), sizeof(sa.sun_path) - 1);
    memcpy(sa.sun_path, path, strlen(path));
    lt->clk.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lt->clk.listen_fd < 0)
        die("board clock socket: %s", strerror(errno));
    unlink(path);
    if (bind(lt->clk.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lt->clk.listen_fd, 1) < 0)
        die("cannot listen on board clock socket %s: %s", path, strerror(errno));
}


static void clock_restart(struct link_time *lt, ns_t m, double v, double slope, double cap)
{
    lt->clk.anchor_m = m;
    lt->clk.anchor_v = v;
    lt->clk.slope = slope;
    lt->clk.cap = cap;
    lt->hist[lt->hist_n++ % CLOCK_HISTORY] = (struct clock_segment){m, v, slope, lt->clk.ticking ? cap : INFINITY};
}

/* link time at wall time m (monotonic since start), m in the past: on the segment then in force */
double link_then(const struct link_time *lt, ns_t m)
{
    if (m >= lt->clk.anchor_m || !lt->hist_n)
        return link_at(lt, m);
    uint64_t kept = lt->hist_n < CLOCK_HISTORY ? lt->hist_n : CLOCK_HISTORY;
    double next_v = lt->clk.anchor_v;
    for (uint64_t i = 1; i < kept; i++) {
        const struct clock_segment *s = &lt->hist[(lt->hist_n - 1 - i) % CLOCK_HISTORY];
        if (s->m <= m) {
            double v = s->v + (double)(m - s->m) * s->slope;
            v = v > s->cap ? s->cap : v;
            return v > next_v ? next_v : v;
        }
        next_v = s->v;
    }
    return next_v; /* older than every segment kept: the oldest one's start */
}

/* k ticks read at wall time m (monotonic since start): the gap and the stall they end, the wall time a tick
   takes, link time at the last tick, and how far the board lags */
static void clock_ticked(struct link_time *lt, ns_t m, uint64_t k, double board_ms)
{
    if (m - lt->clk.tick_m > lt->clk.max_gap_m)
        lt->clk.max_gap_m = m - lt->clk.tick_m;
    if (m - lt->clk.tick_m >= STALL_RECORD_NS)
        stall_note(lt, lt->clk.tick_m, m - lt->clk.tick_m);
    double per = (double)(m - lt->clk.tick_m) / (double)k;
    if (per < 0.25 * board_ms) /* read in a burst after a late wake-up */
        per = 0.25 * board_ms;
    lt->clk.wall_per_tick += (per - lt->clk.wall_per_tick) / 16.0;
    lt->clk.ticks += k;
    lt->clk.tick_v += (double)k * board_ms;
    lt->clk.tick_m = m;
    double lag = (double)(m - lt->clk.first_m) - (lt->clk.tick_v - lt->clk.first_v);
    if (lag > lt->clk.max_lag_ns)
        lt->clk.max_lag_ns = lag;
}

/* take in the ticks the board sent; re-aim link time at the next one */
static void clock_read(struct link_time *lt)
{
    uint8_t buf[512];
    ssize_t r = read(lt->clk.fd, buf, sizeof(buf));
    ns_t m = mono_ns() - lt->t0;
    double v = link_at(lt, m);
    if (v < lt->clk.last_v)
        v = lt->clk.last_v;
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) { /* the emulator went away */
        close(lt->clk.fd);
        lt->clk.fd = -1;
        clock_restart(lt, m, v, 1.0, INFINITY);
        lt->clk.ticking = 0;
        return;
    }
    if (r <= 0)
        return;
    const double board_ms = lt->dilation * 1e6 / lt->clock_per_ms; /* link ns in one of the board's ticks */
    ssize_t i = 0;
    if (!lt->clk.ticking) { /* the first tick is now: the board's time is what the link thought */
        lt->clk.ticking = 1;
        lt->clk.last_byte = buf[0];
        lt->clk.tick_v = v;
        lt->clk.first_m = m;
        lt->clk.first_v = v;
        lt->clk.wall_per_tick = board_ms;
        lt->clk.tick_m = m;
        i = 1;
    }
    uint64_t k = 0;
    for (; i < r; i++) {
        k += (uint8_t)(buf[i] - lt->clk.last_byte); /* a tick the board could not send still counts */
        lt->clk.last_byte = buf[i];
    }
    if (k)
        clock_ticked(lt, m, k, board_ms);
    double next = lt->clk.tick_v + board_ms;
    double slope = (next - v) / lt->clk.wall_per_tick;
    slope = slope < 0.05 ? 0.05 : slope > 4.0 ? 4.0 : slope;
    clock_restart(lt, m, v, slope, next);
}

static void clock_accept(struct link_time *lt)
{
    int fd = accept4(lt->clk.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (lt->clk.fd >= 0)
        close(lt->clk.fd);
    lt->clk.fd = fd;
}

/* the pollfd of the board's clock: the connection, else the listening socket, else nothing */
struct pollfd clock_pollfd(const struct link_time *lt)
{
    return (struct pollfd){.fd = lt->clk.fd >= 0 ? lt->clk.fd : lt->clk.listen_fd, .events = POLLIN};
}

void clock_ready(struct link_time *lt, short revents)
{
    if (!(revents & (POLLIN | POLLERR | POLLHUP)))
        return;
    if (lt->clk.fd >= 0)
        clock_read(lt);
    else if (lt->clk.listen_fd >= 0)
        clock_accept(lt);
}

/* the "board_clock" member of the stats: how the board's own clock went against wall / D since its first tick */
void clock_write_stats(FILE *f, const struct link_time *lt)
{
    if (lt->clk.listen_fd < 0)
        return;
    double board_ns = lt->clk.tick_v - lt->clk.first_v, wall_ns = (double)(lt->clk.tick_m - lt->clk.first_m);
    fprintf(f,
            ",\n  \"board_clock\": {\"ticks\": %" PRIu64 ", \"board_s\": %.6f, \"wall_s\": %.6f, "
            "\"effective_dilation\": %.6f, \"max_lag_ms\": %.3f, \"max_tick_gap_wall_ms\": %.3f",
            lt->clk.ticks, board_ns / 1e9 / lt->dilation, wall_ns / 1e9,
            board_ns > 0 ? wall_ns / board_ns * lt->dilation : 0.0, lt->clk.max_lag_ns / 1e6 / lt->dilation,
            (double)lt->clk.max_gap_m / 1e6);
    /* the stalls as [CLOCK_MONOTONIC s of their start, wall ms], in time order */
    fprintf(f, ", \"stalls_seen\": %" PRIu64 ", \"stalls\": [", lt->stalls_seen);
    struct stall by_time[STALL_KEEP];
    memcpy(by_time, lt->stalls, sizeof(by_time));
    qsort(by_time, (size_t)lt->stalls_n, sizeof(by_time[0]), stall_earlier);
    for (int k = 0; k < lt->stalls_n; k++)
        fprintf(f, "%s[%.6f, %.3f]", k ? ", " : "", (double)(lt->t0 + by_time[k].at_m) / 1e9,
                (double)by_time[k].wall / 1e6);
    fputs("]}", f);
}
