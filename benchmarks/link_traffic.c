/*
 * link_traffic: the benchmark's traffic generator and receiver for netrepro-link.
 *
 * It plays both ends of the link at once: the device (a unix datagram socket bound
 * where QEMU's would be) and the peer (bound at the link's --peer-remote). It sends
 * numbered frames, paced at a given offered line rate (Ethernet overhead counted as the
 * link counts it) or at a fixed interval, in one or both directions, receives them at
 * the other end, and reports per direction what arrived, in what order, and when.
 *
 * Each frame carries: direction (u32), sequence number (u64), send time (u64,
 * CLOCK_MONOTONIC ns, taken just before send()).  Receive times are taken in user space
 * (CLOCK_MONOTONIC right after recv) and by the kernel (SO_TIMESTAMPNS, converted to
 * the monotonic clock with an offset measured at start).
 *
 * Output: one JSON object on stdout; with --lat PATH, one line per received frame:
 * "dir seq send_ns recv_user_ns recv_kernel_ns".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef int64_t ns_t;
#define NS_PER_S 1000000000LL

static ns_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (ns_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}
static ns_t mono(void) { return clock_ns(CLOCK_MONOTONIC); }

static void fail(const char *what)
{
    fprintf(stderr, "link_traffic: %s: %s\n", what, strerror(errno));
    exit(1);
}

struct side {
    int fd;
    /* what this side sends */
    int sending;
    uint64_t next_seq, total;
    ns_t next_at;
    uint64_t eagain;
    /* what this side receives (the other direction) */
    uint64_t received, out_of_order, expect_seq;
    ns_t first_rx, last_rx;
    uint8_t *seen;
};

static int open_side(const char *local, const char *remote)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        fail("socket");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", local);
    unlink(local);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        fail(local);
    int sz = 4 << 20, on = 1;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
    struct sockaddr_un ra = {.sun_family = AF_UNIX};
    snprintf(ra.sun_path, sizeof(ra.sun_path), "%s", remote);
    /* connected: the link's socket is connected back to us, so neither side is limited by
       net.unix.max_dgram_qlen, and a full link shows as EAGAIN (counted) */
    if (connect(fd, (struct sockaddr *)&ra, sizeof(ra)) < 0)
        fail(remote);
    return fd;
}

int main(int argc, char **argv)
{
    const char *dev_sock = NULL, *dev_link = NULL, *peer_sock = NULL, *peer_link = NULL, *lat_path = NULL;
    const char *dirs = "both";
    uint64_t frames = 1000;
    int size = 1514, busy = 0;
    double rate_bps = 0, interval_us = 0, settle_ms = 500, offset_us = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(s) (!strcmp(a, s) && v && ++i)
        if (OPT("--dev-sock"))
            dev_sock = v;
        else if (OPT("--dev-link"))
            dev_link = v;
        else if (OPT("--peer-sock"))
            peer_sock = v;
        else if (OPT("--peer-link"))
            peer_link = v;
        else if (OPT("--dirs"))
            dirs = v;
        else if (OPT("--frames"))
            frames = strtoull(v, NULL, 10);
        else if (OPT("--size"))
            size = atoi(v);
        else if (OPT("--rate-bps"))
            rate_bps = atof(v);
        else if (OPT("--interval-us"))
            interval_us = atof(v);
        else if (OPT("--offset-us"))
            offset_us = atof(v);
        else if (OPT("--settle-ms"))
            settle_ms = atof(v);
        else if (OPT("--lat"))
            lat_path = v;
        else if (!strcmp(a, "--busy-poll"))
            busy = 1;
        else {
            fprintf(stderr, "link_traffic: unknown or incomplete option %s\n", a);
            return 2;
        }
    }
    if (!dev_sock || !dev_link || !peer_sock || !peer_link || size < 30 || size > 9000 ||
        (rate_bps <= 0 && interval_us <= 0)) {
        fprintf(stderr, "link_traffic: need --dev-sock --dev-link --peer-sock --peer-link and --rate-bps or "
                        "--interval-us\n");
        return 2;
    }
    prctl(PR_SET_TIMERSLACK, 1UL);
    double wire = (size < 60 ? 60 : size) + 24;
    ns_t interval = interval_us > 0 ? (ns_t)(interval_us * 1000) : (ns_t)(wire * 8e9 / rate_bps);
    ns_t offset = offset_us >= 0 ? (ns_t)(offset_us * 1000) : interval / 2;

    /* side 0 = device (sends to_peer, receives to_device); side 1 = peer */
    struct side s[2];
    memset(s, 0, sizeof(s));
    s[0].fd = open_side(dev_sock, dev_link);
    s[1].fd = open_side(peer_sock, peer_link);
    s[0].sending = !strcmp(dirs, "both") || !strcmp(dirs, "to_peer");
    s[1].sending = !strcmp(dirs, "both") || !strcmp(dirs, "to_device");
    for (int k = 0; k < 2; k++) {
        s[k].total = s[k].sending ? frames : 0;
        s[k].seen = calloc(frames + 1, 1);
    }
    uint64_t nlat = 0, lat_cap = 2 * frames + 16;
    struct lat {
        uint32_t dir;
        uint64_t seq;
        ns_t tx, rx_user, rx_kernel;
    } *lat = lat_path ? calloc(lat_cap, sizeof(*lat)) : NULL;

    /* CLOCK_REALTIME -> CLOCK_MONOTONIC offset, the tightest of a few samples */
    ns_t rt_off = 0, best = INT64_MAX;
    for (int i = 0; i < 50; i++) {
        ns_t a = mono(), r = clock_ns(CLOCK_REALTIME), b = mono();
        if (b - a < best) {
            best = b - a;
            rt_off = r - (a + (b - a) / 2);
        }
    }

    uint8_t frame[9000], buf[9100];
    memset(frame, 0xaa, sizeof(frame));
    memcpy(frame, "\x02\0\0\0\0\x01\x02\0\0\0\0\x02\x88\xb5", 14);
    char cbuf[256];
    ns_t start = mono() + 20 * 1000000LL;
    s[0].next_at = start;
    s[1].next_at = start + offset;
    ns_t last_send = 0;
    int done_sending = 0;
    ns_t settle_until = INT64_MAX;

    for (;;) {
        ns_t now = mono();
        /* send what is due */
        for (int k = 0; k < 2; k++) {
            struct side *x = &s[k];
            while (x->next_seq < x->total && x->next_at <= now) {
                uint32_t dir = (uint32_t)k; /* 0: to_peer, 1: to_device */
                memcpy(frame + 14, &dir, 4);
                memcpy(frame + 18, &x->next_seq, 8);
                ns_t t = mono();
                memcpy(frame + 26, &t, 8);
                if (send(x->fd, frame, (size_t)size, MSG_DONTWAIT) < 0) {
                    if (errno == EAGAIN || errno == ENOBUFS) {
                        x->eagain++;
                        break; /* retry on the next round */
                    }
                    fail("send");
                }
                x->next_seq++;
                x->next_at += interval;
                last_send = t;
                now = mono();
            }
        }
        if (!done_sending && s[0].next_seq == s[0].total && s[1].next_seq == s[1].total) {
            done_sending = 1;
            settle_until = last_send + (ns_t)(settle_ms * 1e6);
        }
        /* receive what is there */
        for (int k = 0; k < 2; k++) {
            struct side *x = &s[k];
            for (int b = 0; b < 256; b++) {
                struct iovec iov = {buf, sizeof(buf)};
                struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                                    .msg_controllen = sizeof(cbuf)};
                ssize_t r = recvmsg(x->fd, &mh, MSG_DONTWAIT);
                if (r < 0) {
                    if (errno == EAGAIN || errno == EINTR)
                        break;
                    fail("recv");
                }
                ns_t t_user = mono(), t_kernel = 0;
                for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
                        struct timespec ts;
                        memcpy(&ts, CMSG_DATA(c), sizeof(ts));
                        t_kernel = (ns_t)ts.tv_sec * NS_PER_S + ts.tv_nsec - rt_off;
                    }
                if (r < 34)
                    continue;
                uint32_t dir;
                uint64_t seq;
                ns_t tx;
                memcpy(&dir, buf + 14, 4);
                memcpy(&seq, buf + 18, 8);
                memcpy(&tx, buf + 26, 8);
                if (dir != (uint32_t)(1 - k) || seq >= frames)
                    continue;
                if (!x->seen[seq]) {
                    x->seen[seq] = 1;
                    x->received++;
                }
                if (seq != x->expect_seq)
                    x->out_of_order++;
                x->expect_seq = seq + 1;
                if (!x->first_rx)
                    x->first_rx = t_user;
                x->last_rx = t_user;
                if (lat && nlat < lat_cap)
                    lat[nlat++] = (struct lat){dir, seq, tx, t_user, t_kernel};
            }
        }
        now = mono();
        int all_in = s[0].received == s[1].total && s[1].received == s[0].total;
        if (done_sending && (all_in || now >= settle_until))
            break;
        /* wait */
        ns_t next = settle_until;
        for (int k = 0; k < 2; k++)
            if (s[k].next_seq < s[k].total && s[k].next_at < next)
                next = s[k].next_at;
        if (busy)
            continue;
        struct pollfd pfd[2] = {{s[0].fd, POLLIN, 0}, {s[1].fd, POLLIN, 0}};
        ns_t wait = next - now;
        if (wait <= 0)
            continue;
        if (wait < 30000) { /* spin the last microseconds before a send */
            while (mono() < next && poll(pfd, 2, 0) == 0)
                ;
            continue;
        }
        wait -= 30000;
        struct timespec to = {wait / NS_PER_S, wait % NS_PER_S};
        ppoll(pfd, 2, &to, NULL);
    }

    if (lat) {
        FILE *f = fopen(lat_path, "w");
        if (!f)
            fail(lat_path);
        for (uint64_t i = 0; i < nlat; i++)
            fprintf(f, "%u %" PRIu64 " %" PRId64 " %" PRId64 " %" PRId64 "\n", lat[i].dir, lat[i].seq, lat[i].tx,
                    lat[i].rx_user, lat[i].rx_kernel);
        fclose(f);
    }
    printf("{\"interval_ns\": %" PRId64 ", \"size\": %d", interval, size);
    static const char *const names[2] = {"to_peer", "to_device"};
    for (int k = 0; k < 2; k++) {
        struct side *tx = &s[k], *rx = &s[1 - k];
        printf(", \"%s\": {\"sent\": %" PRIu64 ", \"received\": %" PRIu64 ", \"out_of_order\": %" PRIu64
               ", \"eagain\": %" PRIu64 ", \"rx_span_s\": %.9f}",
               names[k], tx->next_seq, rx->received, rx->out_of_order, tx->eagain,
               rx->last_rx > rx->first_rx ? (rx->last_rx - rx->first_rx) / 1e9 : 0.0);
    }
    printf("}\n");
    return 0;
}
