/* The endpoints: see endpoint.h. */
#define _GNU_SOURCE
#include "endpoint.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>


static socklen_t fill_sun(struct sockaddr_un *sa, const char *path, const char *opt)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa->sun_path))
        usage_error("%s: path longer than %zu bytes: %s", opt, sizeof(sa->sun_path) - 1, path);
    strcpy(sa->sun_path, path);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
}

static void set_bufs(int fd)
{
    int sz = 4 << 20, on = 1;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    /* the kernel's receive time: the frame's arrival, whatever our own wake-up latency */
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on));
}

/* read one datagram; *arrival is its kernel receive time on our clock (ns since lt->t0)
   when the kernel gave one that makes sense, else now */
ssize_t recv_stamped(struct link_time *lt, int fd, uint8_t *buf, size_t cap, ns_t *arrival)
{
    char cbuf[CMSG_SPACE(sizeof(struct timespec)) + 64];
    struct iovec iov = {buf, cap};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    ssize_t r = recvmsg(fd, &mh, MSG_DONTWAIT);
    if (r < 0)
        return r;
    struct timespec rt_now;
    ns_t m = clock_pair(&rt_now, 1) - lt->t0; /* a frame: one read around, its error is this frame's alone */
    ns_t now = link_now(lt);
    *arrival = now;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_TIMESTAMPNS)
            continue;
        struct timespec ts;
        memcpy(&ts, CMSG_DATA(c), sizeof(ts));
        ns_t age = ((ns_t)rt_now.tv_sec - ts.tv_sec) * NS_PER_S + (rt_now.tv_nsec - ts.tv_nsec);
        if (age >= 0 && age < 50000000) { /* a wall-clock step would make it nonsense: then use now */
            double then = link_then(lt, m - age);
            *arrival = then < (double)now ? (ns_t)then : now;
        }
    }
    return r;
}

void endpoint_unix(struct endpoint *e, const char *what, const char *local, const char *remote,
                   const char *opt_local, const char *opt_remote)
{
    struct sockaddr_un sa;
    socklen_t sl = fill_sun(&sa, local, opt_local);
    e->what = what;
    e->remote_len = fill_sun(&e->remote, remote, opt_remote);
    e->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (e->fd < 0)
        die("socket: %s", strerror(errno));
    struct stat st;
    if (lstat(local, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(local); /* a stale socket from an earlier run */
    if (bind(e->fd, (struct sockaddr *)&sa, sl) < 0)
        die("cannot bind %s %s: %s", what, local, strerror(errno));
    e->bound_path = local;
    set_bufs(e->fd);
}

/* What the kernel charges a unix datagram of len bytes against the sender's SO_SNDBUF
 * (its skb's truesize), measured on a socket pair: SIOCOUTQ after one send. */
static int unix_truesize(uint32_t len)
{
    int sv[2], outq = 0;
    uint8_t *zero = xmalloc(len); /* what is sent does not matter, only its length */
    memset(zero, 0, len);
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0)
        die("socketpair: %s", strerror(errno));
    if (send(sv[0], zero, len, MSG_DONTWAIT) != (ssize_t)len || ioctl(sv[0], SIOCOUTQ, &outq) != 0 || outq <= 0)
        die("cannot measure a datagram's truesize: %s", strerror(errno));
    close(sv[0]);
    close(sv[1]);
    free(zero);
    return outq;
}

/* Limit what the socket toward e may hold unread to `frames` full-size (NR_ETH_MAX_FRAME) frames
 * (0: keep set_bufs' 4 MiB).  A unix datagram counts against the sender's SO_SNDBUF (by its
 * truesize) until the receiver has read it, and a send is allowed while the count is below
 * SO_SNDBUF, which the kernel doubles and keeps at least SOCK_MIN_SNDBUF (two full frames). */
void endpoint_limit_frames(struct endpoint *e, int frames)
{
    socklen_t sl = sizeof(e->sndbuf);
    if (e->is_tap)
        return;
    if (frames > 0) {
        int ts = unix_truesize(NR_ETH_MAX_FRAME);
        int want = (frames * ts - ts / 2) / 2; /* the kernel doubles it: room for frames-1, not frames */
        if (setsockopt(e->fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want)) != 0)
            die("cannot set SO_SNDBUF %d on the %s: %s", want, e->what, strerror(errno));
        if (getsockopt(e->fd, SOL_SOCKET, SO_SNDBUF, &e->sndbuf, &sl) != 0)
            die("getsockopt SO_SNDBUF: %s", strerror(errno));
        e->sock_frames = (e->sndbuf + ts - 1) / ts;
        fprintf(stderr, "netrepro-link: %s holds %d full-size frames unread (SO_SNDBUF %d, truesize %d)\n",
                e->what, e->sock_frames, e->sndbuf, ts);
    } else if (getsockopt(e->fd, SOL_SOCKET, SO_SNDBUF, &e->sndbuf, &sl) != 0) {
        e->sndbuf = 0;
    }
}

/* connect to the remote so that sends see its queue (EAGAIN + POLLOUT) and it may
 * send to us without hitting max_dgram_qlen; fails quietly while it is not there */
void endpoint_try_connect(struct endpoint *e, ns_t now)
{
    if (e->is_tap || e->connected || now < e->next_connect)
        return;
    if (connect(e->fd, (struct sockaddr *)&e->remote, e->remote_len) == 0) {
        e->connected = 1;
    } else {
        e->next_connect = now + 1000000; /* retry at most every millisecond */
    }
}

/* 0 sent, 1 would block, -1 unreachable */
int endpoint_send(struct endpoint *e, const uint8_t *data, uint32_t len, ns_t now)
{
    ssize_t r;
    do {
        if (e->is_tap) {
            r = write(e->fd, data, len);
        } else {
            endpoint_try_connect(e, now);
            if (e->connected)
                r = send(e->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
            else
                r = sendto(e->fd, data, len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&e->remote,
                           e->remote_len);
        }
    } while (r < 0 && errno == EINTR);
    if (r >= 0)
        return 0;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
        return 1;
    if (!e->is_tap && (errno == ECONNREFUSED || errno == ENOTCONN || errno == EPIPE || errno == ECONNRESET ||
                       errno == EDESTADDRREQ)) {
        e->connected = 0; /* the peer went away: reconnect to whoever binds the path next */
        e->next_connect = 0;
    }
    return -1; /* ENOENT, ECONNREFUSED, EIO (tap down), EMSGSIZE, ...: the frame cannot be delivered */
}

/* ------------------------------------------------------------------ tap */

static int tap_open(const char *name)
{
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        die("cannot open /dev/net/tun: %s", strerror(errno));
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0)
        die("cannot create tap %s: %s (needs CAP_NET_ADMIN in this network namespace)", name, strerror(errno));
    return fd;
}

static void tap_configure(const char *name, const char *cidr, int mtu)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        die("socket: %s", strerror(errno));
    struct ifreq ifr;
    if (mtu > 0) {
        memset(&ifr, 0, sizeof(ifr));
        snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
        ifr.ifr_mtu = mtu;
        if (ioctl(s, SIOCSIFMTU, &ifr) < 0)
            die("cannot set MTU %d on %s: %s", mtu, name, strerror(errno));
    }
    if (cidr) {
        char addr[64];
        snprintf(addr, sizeof(addr), "%s", cidr);
        int plen = 24;
        char *slash = strchr(addr, '/');
        if (slash) {
            *slash = 0;
            plen = atoi(slash + 1);
        }
        struct sockaddr_in sin;
        memset(&sin, 0, sizeof(sin));
        sin.sin_family = AF_INET;
        if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1 || plen < 0 || plen > 32)
            usage_error("--tap-addr: bad IPv4 address/prefix '%s'", cidr);
        memset(&ifr, 0, sizeof(ifr));
        snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
        memcpy(&ifr.ifr_addr, &sin, sizeof(sin));
        if (ioctl(s, SIOCSIFADDR, &ifr) < 0)
            die("cannot set address %s on %s: %s", addr, name, strerror(errno));
        sin.sin_addr.s_addr = plen ? htonl(0xffffffffu << (32 - plen)) : 0;
        memcpy(&ifr.ifr_netmask, &sin, sizeof(sin));
        if (ioctl(s, SIOCSIFNETMASK, &ifr) < 0)
            die("cannot set netmask on %s: %s", name, strerror(errno));
    }
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
        die("cannot read flags of %s: %s", name, strerror(errno));
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
        die("cannot bring %s up: %s", name, strerror(errno));
    close(s);
}

/* the peer side as a tap, configured (address, MTU) when asked */
void endpoint_tap(struct endpoint *e, const char *name, const char *cidr, int mtu)
{
    e->what = "tap";
    e->is_tap = 1;
    e->fd = tap_open(name);
    if (cidr || mtu)
        tap_configure(name, cidr, mtu);
}
