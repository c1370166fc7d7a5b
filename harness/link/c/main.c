/*
 * main: the process of netrepro-link (link.h says what the link is; args.h its command line): its
 * priority and signals, the link's state made from the command line, the event loop until a signal
 * stops it, and the files and stats written at the end.  --rt-priority asks for SCHED_FIFO, --nice
 * for a better nice value, where permitted, so that a busy QEMU next to the link does not delay it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "args.h"
#include "link.h"
#include "stats.h"

/* whether the parent is gone, after asking for SIGTERM when it goes */
static int parent_gone(void)
{
    /* SIGTERM (not the harness's SIGKILL) so that the capture and stats are still written;
       a parent that died before this line is caught by comparing the parent's pid */
    pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    return getppid() != parent;
}

static void set_priority(const struct args *a)
{
    prctl(PR_SET_TIMERSLACK, 1UL);
    /* the link's timing depends on waking up on time next to a busy QEMU: SCHED_FIFO if
       allowed (the link blocks when idle and its spin is budgeted), else a better nice */
    int rt_ok = 0;
    if (a->rt_prio) {
        struct sched_param sp = {.sched_priority = a->rt_prio};
        rt_ok = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
        if (!rt_ok)
            fprintf(stderr, "netrepro-link: could not use SCHED_FIFO %d (%s)%s\n", a->rt_prio, strerror(errno),
                    a->nice_set ? "; trying nice instead" : "");
    }
    if (!rt_ok && a->nice_set && setpriority(PRIO_PROCESS, 0, a->nice_level) != 0)
        fprintf(stderr, "netrepro-link: could not set nice %d (%s); running at the default priority\n",
                a->nice_level, strerror(errno));
}

/* the signals that stop the link or ask for stats, as a file descriptor the loop polls */
static int signals_fd(void)
{
    signal(SIGPIPE, SIG_IGN);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    sigaddset(&sigs, SIGUSR1);
    sigprocmask(SIG_BLOCK, &sigs, NULL);
    int sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0)
        die("signalfd: %s", strerror(errno));
    return sfd;
}

static void open_endpoints(struct link *L, const struct args *a)
{
    endpoint_unix(&L->dev, "device socket", a->device_sock, a->device_remote, "--device-sock", "--device-remote");
    if (a->tap)
        endpoint_tap(&L->peer, a->tap, a->tap_addr, a->tap_mtu);
    else
        endpoint_unix(&L->peer, "peer socket", a->peer_sock, a->peer_remote, "--peer-sock", "--peer-remote");
}

/* the link's state from the command line, its endpoints bound and its files open */
static void link_setup(struct link *L, const struct args *a, int sfd)
{
    link_time_init(&L->time);
    L->time.dilation = a->dilation;
    L->time.clock_per_ms = a->clock_per_ms;
    capture_init(&L->cap, &L->time);
    L->cap.snaplen = a->snaplen;
    L->cap.max_chunks = a->max_chunks;
    L->cap.hold_chunks = a->hold_chunks;
    L->cap.sides = a->capture_sides;
    L->max_inflight = a->max_inflight;
    L->defer = a->defer;
    L->stats_path = a->stats_path;
    L->w = (struct waiter){.spin_max = a->spin_max, .budget = a->budget};
    L->sfd = sfd;
    L->running = 1;

    open_endpoints(L, a);
    link_time_start(&L->time);
    if (a->clock_path)
        clock_listen(&L->time, a->clock_path);
    if (a->pcap_path)
        pcap_open(&L->cap, a->pcap_path);
    if (a->drops_path)
        drops_open(&L->cap, a->drops_path);

    /* What the socket toward a side may hold unread (sock_frames): with overflow=drop, the
     * buffering in front of the device should be its NIC's ring (and a small FIFO), not the
     * kernel's socket queue (max_dgram_qlen, 11 frames by default). */
    endpoint_limit_frames(&L->dev, (int)a->conf[TO_DEVICE].sock_frames);
    endpoint_limit_frames(&L->peer, (int)a->conf[TO_PEER].sock_frames);

    dir_init(&L->dirs[TO_DEVICE], TO_DEVICE, &a->conf[TO_DEVICE], a->lc.seed, L->time.dilation, &L->dev);
    dir_init(&L->dirs[TO_PEER], TO_PEER, &a->conf[TO_PEER], a->lc.seed, L->time.dilation, &L->peer);
    air_init(&L->air, &a->lc, L->dirs, L->time.dilation);
    bus_init(&L->bus, &a->lc, L->dirs, L->time.dilation);
    endpoint_try_connect(&L->dev, 0);
    endpoint_try_connect(&L->peer, 0);
}

/* the files complete and the final stats; the sockets the link bound gone */
static void link_finish(struct link *L, const struct args *a)
{
    ns_t end = link_now(&L->time);
    capture_close(&L->cap);
    stats_write(L, end, 1);
    unlink(L->dev.bound_path);
    if (L->peer.bound_path)
        unlink(L->peer.bound_path);
    if (a->clock_path)
        unlink(a->clock_path);
}

int main(int argc, char **argv)
{
    struct args a;
    if (args_parse(&a, argc, argv))
        return 0;
    if (a.die_with_parent && parent_gone())
        return 0;
    set_priority(&a);
    int sfd = signals_fd();

    struct link *L = calloc(1, sizeof(*L));
    if (!L)
        die("out of memory");
    link_setup(L, &a, sfd);

    fputs("READY\n", stdout);
    fflush(stdout);
    while (L->running)
        loop_once(L);

    link_finish(L, &a);
    return 0;
}
