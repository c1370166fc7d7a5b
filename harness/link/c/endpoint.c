/* The endpoints: see endpoint.h. */
#define _GNU_SOURCE
#include "endpoint.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
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

/* A stamp older than this is not believed (a step of the wall clock would make one nonsense); a link held this
   long by the host is a stall, which the board's clock records anyway. */
#define STAMP_AGE_MAX_NS 1000000000

/* *arrival: the link time of a frame the kernel stamped ts (CLOCK_REALTIME), read at rt_now (m: monotonic since
   start) when link time was now; 0 (and *arrival untouched) when the stamp makes no sense (a wall-clock step) */
static int link_time_of_stamp(const struct link_time *lt, const struct timespec *ts, const struct timespec *rt_now,
                              ns_t m, ns_t now, ns_t *arrival)
{
    ns_t age = ((ns_t)rt_now->tv_sec - ts->tv_sec) * NS_PER_S + (rt_now->tv_nsec - ts->tv_nsec);
    if (age < 0 || age >= STAMP_AGE_MAX_NS)
        return 0;
    double then = link_then(lt, m - age);
    *arrival = then < (double)now ? (ns_t)then : now;
    return 1;
}

/* the kernel's SO_TIMESTAMPNS of a message received, if it carries one */
static int message_stamp(struct msghdr *mh, struct timespec *ts)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
            memcpy(ts, CMSG_DATA(c), sizeof(*ts));
            return 1;
        }
    return 0;
}

/* read one stamp from the tap's packet socket into the ring's next slot; 0: none waiting */
static int tap_read_ahead(struct endpoint *e)
{
    struct tap_stamp *s = &e->ahead[(e->ahead_first + e->ahead_n) % TAP_STAMPS];
    char cbuf[CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(sizeof(struct tpacket_auxdata)) + 64];
    struct iovec iov = {s->head, sizeof(s->head)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    ssize_t r = recvmsg(e->stamp_fd, &mh, MSG_DONTWAIT);
    if (r < 0)
        return 0;
    s->snap = (uint32_t)r; /* the filter cut the frame to TAP_STAMP_SNAP: its length is in the auxiliary data */
    s->len = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_PACKET && c->cmsg_type == PACKET_AUXDATA) {
            struct tpacket_auxdata aux;
            memcpy(&aux, CMSG_DATA(c), sizeof(aux));
            s->len = aux.tp_len;
        }
    if (s->len && message_stamp(&mh, &s->ts))
        e->ahead_n++; /* else the slot stays free: the next read takes it */
    return 1;
}

/* the stamp of the frame just read from the tap: the first one ahead with its length and head; those before it
   were frames the tap did not keep (its queue was full).  NULL: the packet socket lost it, or gave it none. */
static const struct tap_stamp *tap_stamp_of(struct endpoint *e, const uint8_t *frame, size_t len)
{
    for (int reads = 0; reads <= 2 * TAP_STAMPS;) {
        for (int i = 0; i < e->ahead_n; i++) {
            const struct tap_stamp *s = &e->ahead[(e->ahead_first + i) % TAP_STAMPS];
            if (s->len == len && memcmp(s->head, frame, s->snap) == 0) {
                e->ahead_first = (e->ahead_first + i + 1) % TAP_STAMPS;
                e->ahead_n -= i + 1;
                return s; /* its slot is free now but not written before the next call */
            }
        }
        if (e->ahead_n == TAP_STAMPS) { /* none of them: the oldest cannot be this frame's or a later one's */
            e->ahead_first = (e->ahead_first + 1) % TAP_STAMPS;
            e->ahead_n--;
        }
        if (!tap_read_ahead(e))
            return NULL;
        reads++;
    }
    return NULL;
}

/* read one frame from input e; *arrival is the link time the kernel received it (a socket's datagram) or sent
   it into the tap (its packet socket's stamp) when the kernel gave one that makes sense, else now */
ssize_t recv_stamped(struct link_time *lt, struct endpoint *e, uint8_t *buf, size_t cap, ns_t *arrival)
{
    char cbuf[CMSG_SPACE(sizeof(struct timespec)) + 64];
    struct iovec iov = {buf, cap};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    ssize_t r = e->is_tap ? read(e->fd, buf, cap) : recvmsg(e->fd, &mh, MSG_DONTWAIT);
    if (r < 0)
        return r;
    struct timespec rt_now, ts;
    ns_t m = clock_pair(&rt_now, 1) - lt->t0; /* a frame: one read around, its error is this frame's alone */
    ns_t now = link_now(lt);
    const struct tap_stamp *s = NULL;
    int stamped = e->is_tap ? (e->stamp_fd >= 0 && (s = tap_stamp_of(e, buf, (size_t)r)) != NULL)
                            : message_stamp(&mh, &ts);
    *arrival = now;
    if (stamped && link_time_of_stamp(lt, s ? &s->ts : &ts, &rt_now, m, now, arrival))
        e->kernel_stamped++;
    else
        e->read_stamped++;
    return r;
}

void endpoint_unix(struct endpoint *e, const char *what, const char *local, const char *remote,
                   const char *opt_local, const char *opt_remote)
{
    struct sockaddr_un sa;
    socklen_t sl = fill_sun(&sa, local, opt_local);
    e->what = what;
    e->stamp_fd = -1;
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

/* a packet socket on the tap that keeps the head and the kernel's transmit time of each frame sent into it
   (PACKET_OUTGOING only, by a filter); -1 when the kernel will not give one (then frames are stamped when read) */
static int tap_stamps_open(const char *name)
{
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
    if (fd < 0) {
        fprintf(stderr, "netrepro-link: no packet socket on %s (%s): its frames are stamped when read\n", name,
                strerror(errno));
        return -1;
    }
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (uint32_t)(SKF_AD_OFF + SKF_AD_PKTTYPE)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, TAP_STAMP_SNAP),
        BPF_STMT(BPF_RET | BPF_K, 0),
    };
    struct sock_fprog prog = {sizeof(code) / sizeof(code[0]), code};
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
                              .sll_ifindex = (int)if_nametoindex(name)};
    int on = 1, sz = 1 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) != 0 ||
        bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0 ||
        setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) != 0 ||
        setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &on, sizeof(on)) != 0) {
        fprintf(stderr, "netrepro-link: cannot watch %s's frames (%s): they are stamped when read\n", name,
                strerror(errno));
        close(fd);
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    return fd;
}

/* the peer side as a tap, configured (address, MTU) when asked */
void endpoint_tap(struct endpoint *e, const char *name, const char *cidr, int mtu)
{
    e->what = "tap";
    e->is_tap = 1;
    e->fd = tap_open(name);
    if (cidr || mtu)
        tap_configure(name, cidr, mtu);
    e->stamp_fd = tap_stamps_open(name);
    e->ahead = xmalloc(TAP_STAMPS * sizeof(*e->ahead));
}
