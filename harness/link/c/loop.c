/* The event loop: see loop.h. */
#define _GNU_SOURCE
#include "loop.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "air.h"
#include "bus.h"
#include "link.h"
#include "stats.h"

#define READ_BATCH 1024 /* datagrams per input per wake-up, at most */


static ns_t waiter_margin(struct waiter *w, ns_t now)
{
    if (w->spin_max <= 0)
        return 0;
    if (now - w->window_start > 100000000) { /* 100 ms windows */
        w->window_start = now;
        w->window_spin = 0;
    }
    if ((double)w->window_spin > w->budget * 100e6)
        return 0;
    double m = w->over_mean + 3.0 * w->over_dev;
    if (m > (double)w->spin_max)
        m = (double)w->spin_max;
    return (ns_t)m;
}

static void waiter_sample(struct waiter *w, ns_t over)
{
    if (over < 0)
        over = 0;
    double err = (double)over - w->over_mean;
    w->over_mean += err / 16.0;
    w->over_dev += (fabs(err) - w->over_dev) / 16.0;
}


/* the endpoint of input k (0: device socket, feeding to_peer; 1: peer side, feeding to_device) */
static struct endpoint *input_ep(struct link *L, int k) { return k == 0 ? &L->dev : &L->peer; }
static struct dir *input_dir(struct link *L, int k) { return k == 0 ? &L->dirs[TO_PEER] : &L->dirs[TO_DEVICE]; }

/* take in what is waiting on input k, in order, with the kernel's arrival times */
static void drain_input(struct link *L, int k)
{
    struct endpoint *e = input_ep(L, k);
    struct dir *d = input_dir(L, k);
    for (int b = 0; b < READ_BATCH; b++) {
        ssize_t r;
        ns_t t = 0;
        r = recv_stamped(&L->time, e, L->buf, sizeof(L->buf), &t);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            if (errno == ECONNREFUSED) /* a stale error from an earlier send */
                continue;
            fprintf(stderr, "netrepro-link: read from %s: %s\n", e->what, strerror(errno));
            return;
        }
        if (!e->connected)
            endpoint_try_connect(e, t);
        if (r > 0)
            dir_arrive(L, d, L->buf, (uint32_t)r, t);
    }
}

static void handle_signals(struct link *L)
{
    struct signalfd_siginfo si;
    while (read(L->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGUSR1) {
            files_flush(&L->cap);
            stats_write(L, link_now(&L->time), 0);
        } else {
            L->running = 0;
        }
    }
}

/* the next time something is due (INT64_MAX: nothing) */
static ns_t next_deadline(struct link *L)
{
    ns_t deadline = INT64_MAX;
    for (int i = 0; i < NDIR; i++) {
        struct dir *d = &L->dirs[i];
        if (!d->heap_n)
            continue;
        ns_t t = d->heap[0]->due;
        if (d->c.pace && d->pace_tat - d->pace_burst_ns > (double)t)
            t = (ns_t)ceil(d->pace_tat - d->pace_burst_ns);
        if (d->out->blocked) {
            if (d->out->connected)
                continue; /* POLLOUT wakes us */
            if (t < d->out->retry_at)
                t = d->out->retry_at;
        }
        if (t < deadline)
            deadline = t;
    }
    if (L->air.on) {
        ns_t t = air_deadline(&L->air); /* the next turn's A-MPDU is settled */
        if (t < deadline)
            deadline = t;
    }
    if (L->bus.on) {
        ns_t t = bus_deadline(&L->bus); /* the next frame off the air reaches the bus */
        if (t < deadline)
            deadline = t;
    }
    if (L->cap.dirty && L->last_flush + NS_PER_S < deadline)
        deadline = L->last_flush + NS_PER_S;
    return deadline;
}

static void set_pollfds(struct link *L, int all_inputs, ns_t deadline, ns_t now)
{
    for (int k = 0; k < 2; k++) {
        const struct endpoint *e = input_ep(L, k);
        const struct dir *fed = input_dir(L, k);
        ns_t window = deadline - now;
        /* An input need not wake us before the deadline when a frame arriving now could not be
           due before it: its arrival time comes from the kernel, so reading it later loses no
           precision.  This halves the wake-ups, which cost ~20 us of CPU each in a VM. */
        L->in_events[k] = POLLIN;
        if (!all_inputs && L->defer && !e->is_tap && deadline != INT64_MAX && window < 20000000 &&
            fed->min_delay_ns >= (double)window + 100000)
            L->in_events[k] = 0;
        L->pfd[k] = (struct pollfd){.fd = e->fd, .events = L->in_events[k] | (e->blocked && e->connected ? POLLOUT : 0)};
    }
    L->pfd[2] = (struct pollfd){.fd = L->sfd, .events = POLLIN};
    L->pfd[3] = clock_pollfd(&L->time);
}

/* handle what ppoll reported */
static void handle_ready(struct link *L)
{
    if (L->pfd[2].revents & POLLIN)
        handle_signals(L);
    clock_ready(&L->time, L->pfd[3].revents);
    for (int k = 0; k < 2; k++) {
        if (L->pfd[k].revents & POLLOUT) {
            input_ep(L, k)->blocked = 0;
            input_ep(L, k)->free_at = link_now(&L->time);
        }
        if (L->pfd[k].revents & (POLLIN | POLLERR))
            drain_input(L, k);
    }
}

static int xppoll(struct link *L, ns_t timeout)
{
    struct timespec to = {timeout / NS_PER_S, timeout % NS_PER_S};
    int n = ppoll(L->pfd, 4, timeout < 0 ? NULL : &to, NULL);
    if (n < 0 && errno != EINTR)
        die("ppoll: %s", strerror(errno));
    return n;
}

/*
 * The last stretch before the deadline: take in everything now, then spin watching all inputs; a spin
 * outlasting its margin (the board's clock has not reached the deadline) goes back to waiting, so that
 * it never takes a core from a lagging emulator.
 */
static void spin_to(struct link *L, ns_t deadline, ns_t now)
{
    set_pollfds(L, 1, deadline, now);
    for (int k = 0; k < 2; k++)
        drain_input(L, k); /* deferred inputs above all; an empty one costs one syscall */
    ns_t w0 = mono_ns(), s0 = link_now(&L->time), t = s0;
    int outlasted = 0;
    while (t < deadline && L->running) {
        if (xppoll(L, 0) > 0)
            handle_ready(L);
        t = link_now(&L->time);
        if (L->time.clk.ticking && mono_ns() - w0 > 2 * L->w.spin_max + 20000) {
            outlasted = 1;
            break;
        }
    }
    ns_t spun = mono_ns() - w0;
    L->w.window_spin += spun;
    L->spin_s += (double)spun / 1e9;
    if (outlasted && t < deadline) { /* back to waiting: until an input or the deadline at this pace */
        set_pollfds(L, 0, deadline, t);
        if (xppoll(L, link_wall(&L->time, deadline - t)) > 0)
            handle_ready(L);
    }
}

/* wait for a deadline still ahead: sleep in ppoll until a margin before it (the margin follows ppoll's
   measured lateness), then spin; an input or a signal ends the wait early */
static void wait_for(struct link *L, ns_t deadline, ns_t now)
{
    /* A deadline past the board's next tick comes only with that tick, an input: wait for it in
       ppoll.  Spinning for it would hold a core (at real-time priority) from the emulator that has
       to send it; two runs on two cores did so until the kernel's real-time throttling gave the
       emulators their 50 ms a second, and the boards stood still for 950 ms at a time. */
    int held = clock_holds(&L->time, deadline);
    ns_t margin = deadline == INT64_MAX || held ? 0 : waiter_margin(&L->w, now);
    ns_t wake = deadline == INT64_MAX ? INT64_MAX : deadline - margin;
    if (held || wake > now + 2000) {
        set_pollfds(L, 0, deadline, now);
        int n = xppoll(L, wake == INT64_MAX ? -1 : link_wall(&L->time, wake - now));
        if (n != 0) {
            if (n > 0)
                handle_ready(L);
            return; /* woken by an input or a signal: start over */
        }
        if (held)
            return;
        waiter_sample(&L->w, link_now(&L->time) - wake);
    }
    spin_to(L, deadline, now);
}

/*
 * One round: send what is due, then wait for the next deadline or an input.  The wait
 * sleeps in ppoll until a margin before the deadline (the margin follows ppoll's measured
 * lateness), then takes in every input, deferred ones included, and spins to the deadline
 * while still watching all inputs, so that what arrives is read before what is sent.
 */
void loop_once(struct link *L)
{
    ns_t now = link_now(&L->time);
    if (L->air.on)
        air_advance(L, now);
    if (L->bus.on)
        bus_advance(L, now);
    for (int i = 0; i < NDIR; i++)
        dir_deliver(L, &L->dirs[i], now);

    ns_t deadline = next_deadline(L);
    now = link_now(&L->time);
    if (deadline > now) {
        wait_for(L, deadline, now);
    } else {
        /* already due: a quick look at the inputs and the signals first */
        set_pollfds(L, 1, deadline, now);
        if (xppoll(L, 0) > 0)
            handle_ready(L);
    }
    now = link_now(&L->time);
    if (L->cap.dirty && now - L->last_flush >= NS_PER_S) {
        files_flush(&L->cap);
        L->last_flush = now;
    }
}
