/*
 * netrepro-link: the emulated network link between QEMU's NIC (a unix datagram
 * socket) and the TCP peer (a tap device, or a second unix datagram socket for
 * tests).  One timing thread does all the forwarding; the capture and the drops log
 * are written by a thread each, so disk I/O never holds up the timing.
 *
 * Per direction ("to_device": peer -> device, "to_peer": device -> peer), every
 * arriving frame goes through, in this order:
 *
 *   1. loss decision: a deterministic drop list (drop=data:3,frame:12,syn:1,...),
 *      the Gilbert-Elliott model of netem's "loss gemodel p r 1-h 1-k" (gemodel=p,r,1-h,1-k)
 *      and independent random loss (loss=0.01).  Every configured model
 *      draws its random numbers for every arriving frame, so the same frames in the
 *      same order with the same --seed give the same drops.  Precedence of the
 *      logged reason: droplist, gemodel, loss.
 *   2. queue limit (drop-tail): limit frames and/or limit_bytes bytes (frame
 *      length) waiting for the line.  The frame being serialised is "in service" and
 *      not counted.  Unlike netem's limit, frames in the delay line are not counted:
 *      the queue is the bottleneck buffer in front of the line.
 *   3. rate: serialisation at rate (bit/s) counting Ethernet overhead on the wire:
 *      max(len, NR_ETH_MIN_FRAME) + NR_ETH_OVERHEAD bytes (preamble, inter-frame gap,
 *      FCS).  With burst = 0 the line is strict: a frame leaves the rate stage when its
 *      last bit has been serialised, frames one after another.  With burst = B > 0
 *      bytes the stage is a token bucket of B bytes filled at the rate (tbf-like): an
 *      idle link passes B bytes at once, then frames follow at the rate.
 *      With medium=shared (a link-wide setting) the two directions' rate stages are one radio
 *      channel instead, taken in turns (TXOPs) that aggregate frames: see "the shared medium".
 *      With bus_rate > 0 as well, every frame also crosses the WiFi chip's host bus on the board's
 *      side of the air (before the air toward the peer, after it toward the device): see "the WiFi
 *      chip's host bus".
 *   4. delay (seconds) plus jitter: uniform in [-jitter, +jitter] (netem's default
 *      when no distribution table is given) or, with jitter_dist=normal, normal with
 *      sigma = jitter truncated at 4 sigma; the total never goes below zero.  Frames
 *      keep their order (a frame never overtakes the previous one) unless reorder=1.
 *
 * Delivery (to_device): frames are handed to the device no faster than its NIC's wire
 * (pace bit/s, pace_burst full frames back to back).  The wire keeps its own schedule: a frame
 * takes the wire when the wire is free or when the frame is due, whichever is later, not when
 * the link woke up to hand it over, so the link's own wake-up lateness delays that frame alone
 * instead of every frame after it (measured: beside two busy processes, without real-time
 * priority, that lateness had cost 2-4 % of a 100 Mbit/s NIC's rate).  A link that was away
 * longer catches up by at most PACE_CATCHUP_FRAMES full frames back to back; the rest of the
 * time it was away the wire counts as idle.  When the device's socket would block
 * (QEMU reads it only while the emulated NIC has a free RX descriptor), the frame is held
 * until the socket takes it (overflow=hold, the default) or, with overflow=drop, dropped
 * and logged as "device-full", as a real NIC drops what arrives on the wire while its RX
 * ring is full; sock_frames=N
 * then limits what the socket toward the device holds unread to N full-size frames (through
 * SO_SNDBUF), the NIC's FIFO, instead of the kernel's max_dgram_qlen (11).
 *
 * Capture: classic pcap, nanosecond magic, linktype Ethernet, taken at one side of the
 * link (--capture-at).  Timestamps are CLOCK_MONOTONIC offset to the wall clock once at
 * start, so they never step.  Dropped frames go to the drops log (JSON lines).
 *   device (the default): device -> peer frames when they arrive from the device socket,
 *     if the loss models and the queue let them onto the link; peer -> device frames
 *     when they are handed to the device socket.  A dropped frame is in the drops log
 *     only, except a device -> peer frame lost later: on the air ("air"), or one the peer
 *     side cannot take when it is due ("unreachable", the socket mode only): it was
 *     captured on arrival and is in both.
 *   peer, as a capture on the PC beside a real board sees the link: peer -> device frames
 *     when they arrive from the peer (tap or socket), every one of them, so a frame the
 *     link then drops is in both the capture and the drops log; device -> peer frames when
 *     they are handed to the peer, so one lost on the way is in the drops log only.
 *
 * Timing: CLOCK_MONOTONIC, ppoll with nanosecond timeouts, timer slack 1 ns, and an
 * adaptive, CPU-budgeted spin for the last microseconds before a deadline (the
 * spin margin follows the measured wake-up lateness of ppoll; --spin-budget, default
 * 15 % of wall time; no spinning at all while nothing is scheduled).  A frame's arrival
 * time on a unix socket is the kernel's receive timestamp (SO_TIMESTAMPNS), so the
 * link's own wake-up latency does not shift its schedule; that also lets an input wait
 * until the next timed wake-up when nothing arriving could be due before it (a wake-up
 * costs ~20 us of CPU in a VM).  A tap has no such timestamp: its frames are stamped
 * when read.  --rt-priority asks for SCHED_FIFO, --nice for a better nice value, where
 * permitted, so that a busy QEMU next to the link does not delay it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <linux/if_tun.h>
#include <linux/sockios.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef int64_t ns_t; /* nanoseconds */

#define NS_PER_S 1000000000LL
#define MAX_FRAME 65536
/* Ethernet's sizes (NR_ETH_OVERHEAD, NR_ETH_MIN_FRAME, NR_ETH_MAX_FRAME) and the settings
   (NR_DIR_SETTINGS, NR_LINK_SETTINGS) come from harness/link as -D flags, written once there. */
#if !defined(NR_ETH_OVERHEAD) || !defined(NR_ETH_MIN_FRAME) || !defined(NR_ETH_MAX_FRAME) || \
    !defined(NR_DIR_SETTINGS) || !defined(NR_LINK_SETTINGS)
#error "build netrepro-link with harness.link.link_binary(), which passes Ethernet's sizes and the settings"
#endif
#define MAX_DROP_ENTRIES 64
#define READ_BATCH 1024 /* datagrams per input per wake-up, at most */

enum { TO_DEVICE = 0, TO_PEER = 1, NDIR = 2 };
static const char *const dir_name[NDIR] = {"to_device", "to_peer"};

enum { R_LOSS, R_GEMODEL, R_DROPLIST, R_QUEUE, R_UNREACHABLE, R_DEVICE_FULL, R_AIR, NREASON };
static const char *const reason_name[NREASON] = {"loss", "gemodel", "droplist", "queue", "unreachable",
                                                 "device-full", "air"}; /* air: the shared medium only */

enum { K_FRAME, K_DATA, K_SYN, K_FIN, K_RST, K_ACK, K_UDP, NKIND };
static const char *const kind_name[NKIND] = {"frame", "data", "syn", "fin", "rst", "ack", "udp"};

/* ------------------------------------------------------------------ utils */

/* what a frame of len bytes (without FCS) takes on the wire: padded, plus preamble, gap and FCS */
static uint32_t wire_bytes(uint32_t len) { return (len < NR_ETH_MIN_FRAME ? NR_ETH_MIN_FRAME : len) + NR_ETH_OVERHEAD; }

static ns_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ns_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* the wall clock and the monotonic clock at one instant: the monotonic reading is the middle of the
 * tightest of `tries` reads around the wall clock's, so that a preemption between two reads does not
 * shift what is derived from the pair (a stamp must never read earlier than the send it records) */
static ns_t clock_pair(struct timespec *rt, int tries)
{
    ns_t best = INT64_MAX, mono = 0;
    for (int i = 0; i < tries; i++) {
        struct timespec t;
        ns_t before = mono_ns();
        clock_gettime(CLOCK_REALTIME, &t);
        ns_t after = mono_ns();
        if (after - before < best) {
            best = after - before;
            mono = before + (after - before) / 2;
            *rt = t;
        }
    }
    return mono;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("netrepro-link: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("netrepro-link: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (see --help)\n", stderr);
    va_end(ap);
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        die("out of memory (%zu bytes)", n);
    return p;
}

/* A full ring of `n` elements of `size` bytes, `head` its first, made twice as large (1024 at first) and
   unrolled so that its first element is at 0: the new buffer; *cap and *head follow. */
static void *ring_grow(void *ring, size_t size, size_t n, size_t *cap, size_t *head)
{
    size_t ncap = *cap ? *cap * 2 : 1024;
    char *grown = xmalloc(ncap * size);
    for (size_t i = 0; i < n; i++)
        memcpy(grown + i * size, (char *)ring + ((*head + i) % *cap) * size, size);
    free(ring);
    *cap = ncap;
    *head = 0;
    return grown;
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p)
        die("out of memory (%zu bytes)", n);
    return p;
}

/* ------------------------------------------------------------------ PRNG: xoshiro256**, seeded by splitmix64 */

struct rng {
    uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed, unsigned dir, unsigned stream)
{
    uint64_t x = seed ^ (0xd1b54a32d192ed03ULL * (1 + dir * 16 + stream));
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* uniform in [0, 1) */
static double rng_unit(struct rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

/* ------------------------------------------------------------------ frame parsing */

struct pinfo {
    int ethertype;
    int is_ipv4, proto, frag;
    uint8_t src[4], dst[4];
    int sport, dport;
    uint32_t seq, ack;
    uint8_t flags;
    uint16_t win;
    uint32_t payload;
    int icmp_type;
    int arp_op;
};

static void parse_frame(const uint8_t *b, uint32_t len, struct pinfo *p)
{
    memset(p, 0, sizeof(*p));
    p->ethertype = -1;
    p->proto = -1;
    if (len < 14)
        return;
    uint32_t off = 14;
    int et = (b[12] << 8) | b[13];
    if (et == 0x8100 && len >= 18) {
        et = (b[16] << 8) | b[17];
        off = 18;
    }
    p->ethertype = et;
    if (et == 0x0806 && len >= off + 8) {
        p->arp_op = (b[off + 6] << 8) | b[off + 7];
        return;
    }
    if (et != 0x0800 || len < off + 20)
        return;
    const uint8_t *ip = b + off;
    if ((ip[0] >> 4) != 4)
        return;
    uint32_t ihl = (uint32_t)(ip[0] & 0x0f) * 4;
    uint32_t tot = ((uint32_t)ip[2] << 8) | ip[3];
    if (ihl < 20 || tot < ihl || len < off + ihl)
        return;
    if (tot > len - off)
        tot = len - off; /* truncated: trust what is there */
    p->is_ipv4 = 1;
    p->proto = ip[9];
    p->frag = (((ip[6] & 0x1f) << 8) | ip[7]) != 0;
    memcpy(p->src, ip + 12, 4);
    memcpy(p->dst, ip + 16, 4);
    if (p->frag)
        return;
    const uint8_t *l4 = ip + ihl;
    uint32_t l4len = tot - ihl;
    if (p->proto == 6 && l4len >= 20) {
        uint32_t doff = (uint32_t)(l4[12] >> 4) * 4;
        p->sport = (l4[0] << 8) | l4[1];
        p->dport = (l4[2] << 8) | l4[3];
        p->seq = ((uint32_t)l4[4] << 24) | ((uint32_t)l4[5] << 16) | ((uint32_t)l4[6] << 8) | l4[7];
        p->ack = ((uint32_t)l4[8] << 24) | ((uint32_t)l4[9] << 16) | ((uint32_t)l4[10] << 8) | l4[11];
        p->flags = l4[13];
        p->win = (uint16_t)((l4[14] << 8) | l4[15]);
        p->payload = (doff >= 20 && doff <= l4len) ? l4len - doff : 0;
    } else if (p->proto == 17 && l4len >= 8) {
        p->sport = (l4[0] << 8) | l4[1];
        p->dport = (l4[2] << 8) | l4[3];
        p->payload = l4len - 8;
    } else if (p->proto == 1 && l4len >= 1) {
        p->icmp_type = l4[0];
    }
}

static void summarize(const struct pinfo *p, uint32_t len, char *out, size_t cap)
{
    if (p->is_ipv4 && p->proto == 6 && !p->frag) {
        char fl[40] = "";
        static const char *const names[] = {"FIN", "SYN", "RST", "PSH", "ACK", "URG", "ECE", "CWR"};
        for (int i = 0; i < 8; i++)
            if (p->flags & (1 << i)) {
                if (fl[0])
                    strcat(fl, ",");
                strcat(fl, names[i]);
            }
        snprintf(out, cap, "TCP %u.%u.%u.%u:%d > %u.%u.%u.%u:%d [%s] seq=%" PRIu32 " ack=%" PRIu32 " win=%u len=%" PRIu32,
                 p->src[0], p->src[1], p->src[2], p->src[3], p->sport, p->dst[0], p->dst[1], p->dst[2], p->dst[3],
                 p->dport, fl, p->seq, p->ack, p->win, p->payload);
    } else if (p->is_ipv4 && p->proto == 17 && !p->frag) {
        snprintf(out, cap, "UDP %u.%u.%u.%u:%d > %u.%u.%u.%u:%d len=%" PRIu32, p->src[0], p->src[1], p->src[2],
                 p->src[3], p->sport, p->dst[0], p->dst[1], p->dst[2], p->dst[3], p->dport, p->payload);
    } else if (p->is_ipv4 && p->proto == 1) {
        snprintf(out, cap, "ICMP %u.%u.%u.%u > %u.%u.%u.%u type=%d", p->src[0], p->src[1], p->src[2], p->src[3],
                 p->dst[0], p->dst[1], p->dst[2], p->dst[3], p->icmp_type);
    } else if (p->is_ipv4) {
        snprintf(out, cap, "IPv4 %u.%u.%u.%u > %u.%u.%u.%u proto=%d", p->src[0], p->src[1], p->src[2], p->src[3],
                 p->dst[0], p->dst[1], p->dst[2], p->dst[3], p->proto);
    } else if (p->ethertype == 0x0806) {
        snprintf(out, cap, "ARP %s", p->arp_op == 1 ? "request" : p->arp_op == 2 ? "reply" : "other");
    } else if (p->ethertype == 0x86dd) {
        snprintf(out, cap, "IPv6 len=%" PRIu32, len);
    } else if (p->ethertype >= 0) {
        snprintf(out, cap, "ethertype 0x%04x len=%" PRIu32, (unsigned)p->ethertype, len);
    } else {
        snprintf(out, cap, "runt len=%" PRIu32, len);
    }
}

/* ------------------------------------------------------------------ configuration */

struct drop_entry {
    int kind;
    uint64_t lo, hi;
};

/* a number that must use the whole string */
static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end || errno)
        return -1;
    *out = v;
    return 0;
}

/* a probability: "0.01" (fraction) or "1%" */
static int parse_prob(const char *s, double *out)
{
    char buf[64];
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof(buf))
        return -1;
    memcpy(buf, s, n + 1);
    double scale = 1.0;
    if (buf[n - 1] == '%') {
        buf[n - 1] = 0;
        scale = 0.01;
    }
    double v;
    if (parse_double(buf, &v))
        return -1;
    v *= scale;
    if (v < 0 || v > 1)
        return -1;
    *out = v;
    return 0;
}

static int parse_drop_entry(const char *s, struct drop_entry *e)
{
    const char *colon = strchr(s, ':');
    if (!colon)
        return -1;
    size_t klen = (size_t)(colon - s);
    e->kind = -1;
    for (int k = 0; k < NKIND; k++)
        if (strlen(kind_name[k]) == klen && !strncmp(s, kind_name[k], klen))
            e->kind = k;
    if (e->kind < 0)
        return -1;
    char num[64];
    snprintf(num, sizeof(num), "%s", colon + 1);
    char *dash = strchr(num, '-');
    if (dash) {
        *dash = 0;
        if (parse_u64(num, &e->lo) || parse_u64(dash + 1, &e->hi))
            return -1;
    } else {
        if (parse_u64(num, &e->lo))
            return -1;
        e->hi = e->lo;
    }
    if (e->lo == 0 || e->hi < e->lo)
        return -1;
    return 0;
}

/*
 * The settings: one entry each in NR_DIR_SETTINGS (per direction, --to-device/--to-peer
 * key=value) and NR_LINK_SETTINGS (for the whole link, --key value), from the table in
 * harness/link/settings.py, which gives every setting's key, default and range once.
 * An entry is one of
 *   NR_REAL(key, default, lo, hi)        a number from lo to hi (seconds, a fraction)
 *   NR_WHOLE(key, default, lo, hi, off)  a whole number from lo to hi, or off
 *   NR_FLAG(key, default)                0 or 1
 *   NR_CHOICE(key, default, "a|b")       one of the names
 *   NR_GEMODEL(key)                      p,r,1-h,1-k as fractions (empty: no model)
 *   NR_DROPS(key)                        KIND:N or KIND:N-M entries (empty: none)
 * and each becomes a member `key` of struct dir_conf (struct link_conf), with its default and
 * its parser: each use below defines NR_SETTING(key, member, set default, parse) to take
 * what it needs.
 */
struct gemodel {
    int on;
    double p, r, bad_loss, good_loss;
};

struct drop_list {
    struct drop_entry e[MAX_DROP_ENTRIES];
    int n;
};

#define NR_CHOICE_MAX 16

#define NR_REAL(key, dflt, lo, hi) NR_SETTING(key, double key, c->key = (dflt), set_real(opt, #key, v, &c->key, lo, hi))
#define NR_WHOLE(key, dflt, lo, hi, off)                                                                            \
    NR_SETTING(key, uint64_t key, c->key = (dflt), set_whole(opt, #key, v, &c->key, lo, hi, off))
#define NR_FLAG(key, dflt) NR_SETTING(key, int key, c->key = (dflt), set_flag(opt, #key, v, &c->key))
#define NR_CHOICE(key, dflt, choices)                                                                               \
    NR_SETTING(key, char key[NR_CHOICE_MAX], snprintf(c->key, NR_CHOICE_MAX, "%s", dflt),                           \
               set_choice(opt, #key, v, c->key, choices))
#define NR_GEMODEL(key) NR_SETTING(key, struct gemodel key, (void)0, set_gemodel(opt, #key, v, &c->key))
#define NR_DROPS(key) NR_SETTING(key, struct drop_list key, (void)0, set_drops(opt, #key, v, &c->key))

#define NR_SETTING(key, member, dflt, parse) member;
struct dir_conf {
    NR_DIR_SETTINGS
};

struct link_conf {
    NR_LINK_SETTINGS
};
#undef NR_SETTING

static void set_real(const char *opt, const char *key, const char *v, double *out, double lo, double hi)
{
    if (parse_double(v, out) || *out < lo || *out > hi)
        usage_error("%s: bad %s '%s' (a number from %g to %g)", opt, key, v, lo, hi);
}

static void set_whole(const char *opt, const char *key, const char *v, uint64_t *out, uint64_t lo, uint64_t hi,
                      uint64_t off)
{
    if (parse_u64(v, out) || (*out != off && (*out < lo || *out > hi)))
        usage_error("%s: bad %s '%s' (a whole number from %" PRIu64 " to %" PRIu64 ", or %" PRIu64 ")", opt, key, v,
                    lo, hi, off);
}

static void set_flag(const char *opt, const char *key, const char *v, int *out)
{
    if (strcmp(v, "0") && strcmp(v, "1"))
        usage_error("%s: bad %s '%s' (0 or 1)", opt, key, v);
    *out = v[0] == '1';
}

static void set_choice(const char *opt, const char *key, const char *v, char *out, const char *choices)
{
    size_t n = strlen(v);
    for (const char *c = choices; c && n && n < NR_CHOICE_MAX; c = strchr(c, '|')) {
        if (*c == '|')
            c++;
        if (!strncmp(c, v, n) && (c[n] == '|' || !c[n])) {
            memcpy(out, v, n + 1);
            return;
        }
    }
    usage_error("%s: bad %s '%s' (one of %s)", opt, key, v, choices);
}

static void set_gemodel(const char *opt, const char *key, const char *v, struct gemodel *g)
{
    g->on = 0;
    double p[4] = {0, 0, 1.0, 0.0};
    char *vv = strdup(v), *save = NULL;
    int m = 0;
    for (char *t = strtok_r(vv, "+/", &save); t; t = strtok_r(NULL, "+/", &save)) {
        if (m == 4 || parse_prob(t, &p[m]))
            usage_error("%s: bad %s '%s' (p,r,1-h,1-k as fractions or percentages)", opt, key, v);
        m++;
    }
    free(vv);
    if (m == 0)
        return;
    if (m == 1)
        p[1] = 1.0 - p[0]; /* iproute2's default for r */
    *g = (struct gemodel){.on = 1, .p = p[0], .r = p[1], .bad_loss = p[2], .good_loss = p[3]};
}

static void set_drops(const char *opt, const char *key, const char *v, struct drop_list *l)
{
    l->n = 0;
    char *vv = strdup(v), *save = NULL;
    for (char *t = strtok_r(vv, "+; ", &save); t; t = strtok_r(NULL, "+; ", &save)) {
        if (l->n == MAX_DROP_ENTRIES)
            usage_error("%s: more than %d %s entries", opt, MAX_DROP_ENTRIES, key);
        if (parse_drop_entry(t, &l->e[l->n]))
            usage_error("%s: bad %s entry '%s' (KIND:N or KIND:N-M, KIND one of frame, data, syn, fin, rst, ack, "
                        "udp; N from 1)",
                        opt, key, t);
        l->n++;
    }
    free(vv);
}

/* set the setting called k from the text v; 0 if there is no such setting */
#define NR_SETTING(key, member, dflt, parse)                                                                        \
    if (!strcmp(k, #key)) {                                                                                         \
        parse;                                                                                                      \
        return 1;                                                                                                   \
    }
static int dir_setting(struct dir_conf *c, const char *opt, const char *k, const char *v)
{
    NR_DIR_SETTINGS
    return 0;
}

static int link_setting(struct link_conf *c, const char *opt, const char *k, const char *v)
{
    NR_LINK_SETTINGS
    return 0;
}
#undef NR_SETTING

#define NR_SETTING(key, member, dflt, parse) dflt;
static void dir_defaults(struct dir_conf *c)
{
    memset(c, 0, sizeof(*c));
    NR_DIR_SETTINGS
}

static void link_defaults(struct link_conf *c)
{
    memset(c, 0, sizeof(*c));
    NR_LINK_SETTINGS
}
#undef NR_SETTING

#define NR_SETTING(key, member, dflt, parse) " " #key
static const char dir_keys[] = NR_DIR_SETTINGS;
static const char link_keys[] = NR_LINK_SETTINGS;
#undef NR_SETTING

/*
 * "key=value,key=value,..."; a comma-separated piece without '=' continues the
 * previous value, so lists read naturally: "gemodel=0.01,0.3,1,0,drop=data:3,syn:1".
 * Inside a list, '+' also separates items ("drop=data:3+data:5").
 */
static void parse_dir_spec(const char *opt, const char *spec, struct dir_conf *c)
{
    dir_defaults(c);
    char *copy = strdup(spec);
    char *keys[64], *vals[64];
    int n = 0;
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        char *eq = strchr(tok, '=');
        if (eq) {
            if (n == 64)
                usage_error("%s: too many keys", opt);
            *eq = 0;
            keys[n] = tok;
            vals[n] = strdup(eq + 1);
            n++;
        } else if (n > 0) {
            size_t a = strlen(vals[n - 1]), b = strlen(tok);
            vals[n - 1] = xrealloc(vals[n - 1], a + b + 2);
            vals[n - 1][a] = '+';
            memcpy(vals[n - 1] + a + 1, tok, b + 1);
        } else {
            usage_error("%s: expected key=value, got '%s'", opt, tok);
        }
    }
    for (int i = 0; i < n; i++)
        if (!dir_setting(c, opt, keys[i], vals[i]))
            usage_error("%s: unknown key '%s' (the keys:%s)", opt, keys[i], dir_keys);
    for (int i = 0; i < n; i++)
        free(vals[i]);
    free(copy);
}

/* ------------------------------------------------------------------ capture and drops log */

static ns_t g_t0;        /* CLOCK_MONOTONIC at start */
static ns_t g_wall0;     /* CLOCK_REALTIME at start */
/* Device time: wall seconds per second of the board's time.  Every setting is in the board's
   time; the link stretches delays and serialisation by D and writes every timestamp (capture,
   drops, stats) in the board's time, so a capture reads as if taken beside the real board. */
static double g_dilation = 1.0;
static uint32_t g_snaplen = 262144;
static int g_files_dirty;

static ns_t wall_of(ns_t mono) { return g_wall0 + (ns_t)((double)(mono - g_t0) / g_dilation); }

/* ------------------------------------------------------------------ the board's clock */

/*
 * Link time: the time base of every due time, rate and timestamp here, in nanoseconds that pass
 * as wall nanoseconds would if the board kept exactly to its dilation D (a board second is
 * D * 1e9 of them).  Open loop it is the monotonic clock since start.  With --board-clock the
 * board reports its own clock, one byte per tick of its timer (--board-clock-per-ms ticks a board
 * millisecond; the tick count's low byte) on a serial port of the emulator, and link time follows it: when the emulator falls behind
 * wall / D (the host is busy, or the emulated NIC costs the host more than its instructions
 * count), the link slows with the board, so delays, rates and timestamps stay in the board's
 * time whatever the host does.  Between ticks link time runs on at a slope aimed to meet the
 * next tick when it is expected, and never passes it before it is seen; it never goes back.
 */
#define CLOCK_STALL_NS 1000000000 /* no tick for a wall second: the board stopped; run on freely */

struct board_clock {
    int listen_fd, fd;       /* -1: none */
    int ticking;             /* the first tick has been seen */
    uint8_t last_byte;
    uint64_t ticks;
    ns_t anchor_m;           /* wall (monotonic since start) of the anchor */
    double anchor_v, slope;  /* link time at the anchor; link ns per wall ns after it */
    double cap;              /* link time stays below this (the next tick) until that tick is seen */
    double tick_v;           /* link time of the last tick */
    ns_t tick_m;             /* wall time it was read */
    double wall_per_tick;    /* EWMA of the wall ns a board ms takes */
    ns_t first_m;            /* the first tick, for the lag figures */
    double first_v;
    double max_lag_ns;       /* the most the board fell behind wall / D, in link ns */
    ns_t max_gap_m;          /* the longest wall time between two reads that brought ticks */
    double last_v;           /* link_now() never returns less */
};
/*
 * The board's stalls: wall gaps between ticks of STALL_RECORD_NS or more, the longest STALL_KEEP kept
 * with when they began (CLOCK_MONOTONIC), so that the harness can tell which fell in its workload.  A
 * stall stops the board's ACKs and the link with it, but not the peer's retransmission timer, which runs
 * on the wall clock (Linux's minimum is 200 ms).
 */
#define STALL_RECORD_NS 50000000
#define STALL_KEEP 64
struct stall {
    ns_t at_m;  /* monotonic ns since start of the last tick before it */
    ns_t wall;  /* its length */
};
static struct stall g_stalls[STALL_KEEP];
static int g_stalls_n;
static uint64_t g_stalls_seen;

static void stall_note(ns_t at_m, ns_t wall)
{
    g_stalls_seen++;
    int slot = g_stalls_n < STALL_KEEP ? g_stalls_n++ : -1;
    if (slot < 0) { /* full: it replaces the shortest kept, if longer */
        slot = 0;
        for (int i = 1; i < STALL_KEEP; i++)
            if (g_stalls[i].wall < g_stalls[slot].wall)
                slot = i;
        if (g_stalls[slot].wall >= wall)
            return;
    }
    g_stalls[slot] = (struct stall){at_m, wall};
}

static int stall_earlier(const void *a, const void *b)
{
    ns_t x = ((const struct stall *)a)->at_m, y = ((const struct stall *)b)->at_m;
    return (x > y) - (x < y);
}
static struct board_clock g_clk = {.listen_fd = -1, .fd = -1, .slope = 1.0, .cap = INFINITY};
static double g_clock_per_ms = 1.0; /* the board's clock ticks a board ms (--board-clock-per-ms) */

/* whether the board's clock holds link time below its next tick at wall time m (a board stopped for
   CLOCK_STALL_NS no longer does) */
static int clock_holding(ns_t m) { return g_clk.ticking && m - g_clk.tick_m < CLOCK_STALL_NS; }

static double link_at(ns_t m)
{
    double v = g_clk.anchor_v + (double)(m - g_clk.anchor_m) * g_clk.slope;
    if (clock_holding(m) && v > g_clk.cap)
        v = g_clk.cap;
    return v;
}

/* link time now (ns since start, in the board's time times D) */
static ns_t link_now(void)
{
    double v = link_at(mono_ns() - g_t0);
    if (v < g_clk.last_v)
        v = g_clk.last_v;
    g_clk.last_v = v;
    return (ns_t)v;
}

/* whether link time cannot reach `t` before the board's next tick is read */
static int clock_holds(ns_t t) { return clock_holding(mono_ns() - g_t0) && (double)t > g_clk.cap; }

/* how many wall ns link time takes to advance by `v` from now (an estimate: it is re-checked) */
static ns_t link_wall(ns_t v)
{
    double s = g_clk.slope > 0.05 ? g_clk.slope : 0.05;
    ns_t w = (ns_t)((double)v / s);
    if (g_clk.ticking && g_clk.last_v >= g_clk.cap - 1.0 && w < (ns_t)g_clk.wall_per_tick)
        w = (ns_t)g_clk.wall_per_tick; /* held at the next tick: its byte wakes us */
    return w;
}

static void clock_listen(const char *path)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path))
        usage_error("--board-clock: path too long (%zu bytes, at most %zu)", strlen(path), sizeof(sa.sun_path) - 1);
    memcpy(sa.sun_path, path, strlen(path));
    g_clk.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (g_clk.listen_fd < 0)
        die("board clock socket: %s", strerror(errno));
    unlink(path);
    if (bind(g_clk.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(g_clk.listen_fd, 1) < 0)
        die("cannot listen on board clock socket %s: %s", path, strerror(errno));
}

/*
 * Link time as it was: every segment of the piecewise line above is kept for a while, so that a
 * frame the kernel stamped a moment ago (read late, see set_pollfds) is given the link time it
 * would have had if read at once.  Extrapolating back along the segment in force now would not do:
 * its slope (0.05-4) is the catch-up or the hold of this moment, not of the frame's.
 */
#define CLOCK_HISTORY 4096 /* segments (one per read of the board's ticks): > 50 ms of wall time */
struct clock_segment {
    ns_t m;
    double v, slope, cap;
};
static struct clock_segment g_clk_hist[CLOCK_HISTORY];
static uint64_t g_clk_hist_n; /* segments ever kept; the newest is g_clk_hist[(n - 1) % CLOCK_HISTORY] */

static void clock_restart(ns_t m, double v, double slope, double cap)
{
    g_clk.anchor_m = m;
    g_clk.anchor_v = v;
    g_clk.slope = slope;
    g_clk.cap = cap;
    g_clk_hist[g_clk_hist_n++ % CLOCK_HISTORY] = (struct clock_segment){m, v, slope, g_clk.ticking ? cap : INFINITY};
}

/* link time at wall time m (monotonic since start), m in the past: on the segment then in force */
static double link_then(ns_t m)
{
    if (m >= g_clk.anchor_m || !g_clk_hist_n)
        return link_at(m);
    uint64_t kept = g_clk_hist_n < CLOCK_HISTORY ? g_clk_hist_n : CLOCK_HISTORY;
    double next_v = g_clk.anchor_v;
    for (uint64_t i = 1; i < kept; i++) {
        const struct clock_segment *s = &g_clk_hist[(g_clk_hist_n - 1 - i) % CLOCK_HISTORY];
        if (s->m <= m) {
            double v = s->v + (double)(m - s->m) * s->slope;
            v = v > s->cap ? s->cap : v;
            return v > next_v ? next_v : v;
        }
        next_v = s->v;
    }
    return next_v; /* older than every segment kept: the oldest one's start */
}

/* take in the ticks the board sent; re-aim link time at the next one */
static void clock_read(void)
{
    uint8_t buf[512];
    ssize_t r = read(g_clk.fd, buf, sizeof(buf));
    ns_t m = mono_ns() - g_t0;
    double v = link_at(m);
    if (v < g_clk.last_v)
        v = g_clk.last_v;
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) { /* the emulator went away */
        close(g_clk.fd);
        g_clk.fd = -1;
        clock_restart(m, v, 1.0, INFINITY);
        g_clk.ticking = 0;
        return;
    }
    if (r <= 0)
        return;
    const double board_ms = g_dilation * 1e6 / g_clock_per_ms; /* link ns in one of the board's ticks */
    ssize_t i = 0;
    if (!g_clk.ticking) { /* the first tick is now: the board's time is what the link thought */
        g_clk.ticking = 1;
        g_clk.last_byte = buf[0];
        g_clk.tick_v = v;
        g_clk.first_m = m;
        g_clk.first_v = v;
        g_clk.wall_per_tick = board_ms;
        g_clk.tick_m = m;
        i = 1;
    }
    uint64_t k = 0;
    for (; i < r; i++) {
        k += (uint8_t)(buf[i] - g_clk.last_byte); /* a tick the board could not send still counts */
        g_clk.last_byte = buf[i];
    }
    if (k) {
        if (m - g_clk.tick_m > g_clk.max_gap_m)
            g_clk.max_gap_m = m - g_clk.tick_m;
        if (m - g_clk.tick_m >= STALL_RECORD_NS)
            stall_note(g_clk.tick_m, m - g_clk.tick_m);
        double per = (double)(m - g_clk.tick_m) / (double)k;
        if (per < 0.25 * board_ms) /* read in a burst after a late wake-up */
            per = 0.25 * board_ms;
        g_clk.wall_per_tick += (per - g_clk.wall_per_tick) / 16.0;
        g_clk.ticks += k;
        g_clk.tick_v += (double)k * board_ms;
        g_clk.tick_m = m;
        double lag = (double)(m - g_clk.first_m) - (g_clk.tick_v - g_clk.first_v);
        if (lag > g_clk.max_lag_ns)
            g_clk.max_lag_ns = lag;
    }
    double next = g_clk.tick_v + board_ms;
    double slope = (next - v) / g_clk.wall_per_tick;
    slope = slope < 0.05 ? 0.05 : slope > 4.0 ? 4.0 : slope;
    clock_restart(m, v, slope, next);
}

static void clock_accept(void)
{
    int fd = accept4(g_clk.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    if (g_clk.fd >= 0)
        close(g_clk.fd);
    g_clk.fd = fd;
}

/* the pollfd of the board's clock: the connection, else the listening socket, else nothing */
static struct pollfd clock_pollfd(void)
{
    return (struct pollfd){.fd = g_clk.fd >= 0 ? g_clk.fd : g_clk.listen_fd, .events = POLLIN};
}

static void clock_ready(short revents)
{
    if (!(revents & (POLLIN | POLLERR | POLLHUP)))
        return;
    if (g_clk.fd >= 0)
        clock_read();
    else if (g_clk.listen_fd >= 0)
        clock_accept();
}

/*
 * Output files written by a thread of their own (at normal priority), so that disk I/O
 * never holds up the timing loop: the loop copies records into 1 MiB chunks and hands
 * full ones over.  Nothing is ever dropped: if the disk falls 256 MiB behind, the loop
 * waits (and counts it).  In a VM, even asynchronous disk writes can stall the vCPUs for
 * milliseconds, so --hold-capture-mib N keeps up to N MiB per file in memory and writes
 * them when the link stops (beyond N it writes as it goes).
 */
#define CHUNK_BYTES (1u << 20)
static size_t g_max_chunks = 256;
static size_t g_hold_chunks; /* --hold-capture-mib: chunks kept in memory until exit */

struct chunk {
    struct chunk *next;
    size_t len;
    uint8_t data[CHUNK_BYTES];
};

struct afile {
    const char *path;
    int fd;
    struct chunk *cur;                    /* being filled by the loop */
    struct chunk *q_head, *q_tail, *free; /* full chunks for the writer; recycled ones */
    size_t nchunks, queued;
    int closing, error;
    uint64_t stalls;
    pthread_mutex_t m;
    pthread_cond_t to_writer, to_loop;
    pthread_t thread;
};

static struct afile *g_pcap, *g_drops;

static void *afile_writer(void *arg)
{
    struct afile *f = arg;
    pthread_mutex_lock(&f->m);
    for (;;) {
        /* with a hold, the disk stays untouched until the backlog passes it or we close */
        while (!f->closing && (!f->q_head || f->queued <= g_hold_chunks))
            pthread_cond_wait(&f->to_writer, &f->m);
        struct chunk *c = f->q_head;
        if (!c)
            break; /* closing and nothing left */
        f->q_head = c->next;
        if (!f->q_head)
            f->q_tail = NULL;
        f->queued--;
        pthread_mutex_unlock(&f->m);
        size_t off = 0;
        while (off < c->len) {
            ssize_t r = write(f->fd, c->data + off, c->len - off);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                if (!f->error)
                    fprintf(stderr, "netrepro-link: writing %s: %s\n", f->path, strerror(errno));
                f->error = 1;
                break;
            }
            off += (size_t)r;
        }
        pthread_mutex_lock(&f->m);
        c->next = f->free;
        f->free = c;
        pthread_cond_signal(&f->to_loop);
    }
    pthread_mutex_unlock(&f->m);
    return NULL;
}

static struct afile *afile_open(const char *path, const char *what)
{
    struct afile *f = calloc(1, sizeof(*f));
    if (!f)
        die("out of memory");
    f->path = path;
    f->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f->fd < 0)
        die("cannot open %s %s: %s", what, path, strerror(errno));
    pthread_mutex_init(&f->m, NULL);
    pthread_cond_init(&f->to_writer, NULL);
    pthread_cond_init(&f->to_loop, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&attr, SCHED_OTHER);
    struct sched_param sp = {.sched_priority = 0};
    pthread_attr_setschedparam(&attr, &sp);
    int err = pthread_create(&f->thread, &attr, afile_writer, f);
    pthread_attr_destroy(&attr);
    if (err)
        die("cannot start the writer of %s: %s", path, strerror(err));
    return f;
}

/* hand the chunk being filled to the writer (call with nothing locked) */
static void afile_flush(struct afile *f)
{
    if (!f || !f->cur || !f->cur->len)
        return;
    pthread_mutex_lock(&f->m);
    f->cur->next = NULL;
    if (f->q_tail)
        f->q_tail->next = f->cur;
    else
        f->q_head = f->cur;
    f->q_tail = f->cur;
    f->cur = NULL;
    f->queued++;
    pthread_cond_signal(&f->to_writer);
    pthread_mutex_unlock(&f->m);
}

static void afile_write(struct afile *f, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len) {
        if (!f->cur) {
            pthread_mutex_lock(&f->m);
            if (!f->free && f->nchunks >= g_max_chunks) {
                f->stalls++;
                while (!f->free)
                    pthread_cond_wait(&f->to_loop, &f->m);
            }
            if (f->free) {
                f->cur = f->free;
                f->free = f->cur->next;
            } else {
                f->cur = xmalloc(sizeof(struct chunk));
                f->nchunks++;
            }
            pthread_mutex_unlock(&f->m);
            f->cur->len = 0;
        }
        size_t room = CHUNK_BYTES - f->cur->len, n = len < room ? len : room;
        memcpy(f->cur->data + f->cur->len, p, n);
        f->cur->len += n;
        p += n;
        len -= n;
        if (f->cur->len == CHUNK_BYTES)
            afile_flush(f);
    }
    g_files_dirty = 1;
}

static void afile_close(struct afile *f)
{
    if (!f)
        return;
    afile_flush(f);
    pthread_mutex_lock(&f->m);
    f->closing = 1;
    pthread_cond_signal(&f->to_writer);
    pthread_mutex_unlock(&f->m);
    pthread_join(f->thread, NULL);
    if (close(f->fd) != 0 && !f->error)
        fprintf(stderr, "netrepro-link: closing %s: %s\n", f->path, strerror(errno));
}

static void pcap_open(const char *path)
{
    g_pcap = afile_open(path, "capture");
    /* magic, version 2.4 (two uint16), thiszone, sigfigs, snaplen, LINKTYPE_ETHERNET; native byte order */
    uint32_t hdr[6] = {0xa1b23c4d, 0, 0, 0, g_snaplen, 1};
    uint16_t ver[2] = {2, 4};
    memcpy(&hdr[1], ver, 4);
    afile_write(g_pcap, hdr, sizeof(hdr));
}

/*
 * The capture in time order.  A frame read late (from the device, or from the peer at the peer
 * side) carries the link time the kernel stamped it with, which can be before frames already
 * handed to the other side: records wait here for PCAP_HOLD_NS of link time, sorted, before they
 * are written, so that each keeps its own stamp.  (Moving a late one up to the last stamp written,
 * as this once did, made the device's ACKs look later than they left it and the capture's RTT up
 * to 0.6 ms short of the link's.)
 */
#define PCAP_HOLD_NS 200000000 /* > the longest a frame is left unread (20 ms) and the age accepted (50 ms) */
struct pcap_record {
    ns_t t;
    uint32_t len;
    uint8_t data[];
};
static struct pcap_record **g_pend;
static size_t g_pend_head, g_pend_n, g_pend_cap; /* g_pend[g_pend_head .. g_pend_n) wait, in time order */
static ns_t g_pcap_written;                      /* the stamp of the last record written */
static int g_capture_at_peer;                    /* --capture-at peer (else the device side) */

static void pcap_emit(const struct pcap_record *r)
{
    ns_t w = wall_of(r->t);
    uint32_t incl = r->len < g_snaplen ? r->len : g_snaplen;
    uint32_t rec[4] = {(uint32_t)(w / NS_PER_S), (uint32_t)(w % NS_PER_S), incl, r->len};
    afile_write(g_pcap, rec, sizeof(rec));
    afile_write(g_pcap, r->data, incl);
    g_pcap_written = r->t;
}

/* write every waiting record stamped at or before `upto` */
static void pcap_release(ns_t upto)
{
    while (g_pend_head < g_pend_n && g_pend[g_pend_head]->t <= upto) {
        pcap_emit(g_pend[g_pend_head]);
        free(g_pend[g_pend_head++]);
    }
    if (g_pend_head == g_pend_n)
        g_pend_head = g_pend_n = 0;
}

static void pcap_write(ns_t mono, const uint8_t *data, uint32_t len)
{
    if (!g_pcap)
        return;
    if (mono < g_pcap_written)
        mono = g_pcap_written; /* older than the hold: it can only join the end of what is written */
    if (g_pend_n == g_pend_cap) {
        if (g_pend_head) { /* reuse the room of what was written */
            memmove(g_pend, g_pend + g_pend_head, (g_pend_n - g_pend_head) * sizeof(*g_pend));
            g_pend_n -= g_pend_head;
            g_pend_head = 0;
        }
        if (g_pend_n == g_pend_cap) {
            g_pend_cap = g_pend_cap ? 2 * g_pend_cap : 4096;
            g_pend = xrealloc(g_pend, g_pend_cap * sizeof(*g_pend));
        }
    }
    struct pcap_record *r = xmalloc(sizeof(*r) + len);
    r->t = mono;
    r->len = len;
    memcpy(r->data, data, len);
    size_t i = g_pend_n++;
    while (i > g_pend_head && g_pend[i - 1]->t > mono) { /* almost always in order: a step or two */
        g_pend[i] = g_pend[i - 1];
        i--;
    }
    g_pend[i] = r;
    pcap_release(g_pend[g_pend_n - 1]->t - PCAP_HOLD_NS);
}

static void drops_write(ns_t mono, int dir, int reason, uint64_t n, const uint8_t *data, uint32_t len)
{
    if (!g_drops)
        return;
    struct pinfo p;
    char summary[256], line[512];
    parse_frame(data, len, &p);
    summarize(&p, len, summary, sizeof(summary));
    ns_t w = wall_of(mono);
    int k = snprintf(line, sizeof(line),
                     "{\"t\": %" PRId64 ".%09" PRId64 ", \"dir\": \"%s\", \"reason\": \"%s\", \"frame\": %" PRIu64
                     ", \"len\": %" PRIu32 ", \"summary\": \"%s\"}\n",
                     (int64_t)(w / NS_PER_S), (int64_t)(w % NS_PER_S), dir_name[dir], reason_name[reason], n, len,
                     summary);
    afile_write(g_drops, line, (size_t)k < sizeof(line) ? (size_t)k : sizeof(line) - 1);
}

/* hand what is buffered to the writers (they write it soon, asynchronously); with a hold,
   partial chunks stay until they are full or the link stops */
static void files_flush(void)
{
    if (!g_hold_chunks) {
        afile_flush(g_pcap);
        afile_flush(g_drops);
    }
    g_files_dirty = 0;
}

/* ------------------------------------------------------------------ endpoints */

struct endpoint {
    const char *what; /* "device socket", "peer socket", "tap" */
    int fd;
    int is_tap;
    const char *bound_path;
    struct sockaddr_un remote;
    socklen_t remote_len;
    int connected;
    ns_t next_connect;
    int blocked;       /* the last send would block */
    ns_t retry_at;     /* when blocked and not pollable */
    ns_t free_at;      /* when it could take frames again after it blocked (link ns) */
    int sndbuf;        /* SO_SNDBUF as the kernel keeps it (0: a tap) */
    int sock_frames;   /* full-size frames it holds unread (0: not limited by SO_SNDBUF) */
};

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

/* read one datagram; *arrival is its kernel receive time on our clock (ns since g_t0)
   when the kernel gave one that makes sense, else now */
static ssize_t recv_stamped(int fd, uint8_t *buf, size_t cap, ns_t *arrival)
{
    char cbuf[CMSG_SPACE(sizeof(struct timespec)) + 64];
    struct iovec iov = {buf, cap};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf)};
    ssize_t r = recvmsg(fd, &mh, MSG_DONTWAIT);
    if (r < 0)
        return r;
    struct timespec rt_now;
    ns_t m = clock_pair(&rt_now, 1) - g_t0; /* a frame: one read around, its error is this frame's alone */
    ns_t now = link_now();
    *arrival = now;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_TIMESTAMPNS)
            continue;
        struct timespec ts;
        memcpy(&ts, CMSG_DATA(c), sizeof(ts));
        ns_t age = ((ns_t)rt_now.tv_sec - ts.tv_sec) * NS_PER_S + (rt_now.tv_nsec - ts.tv_nsec);
        if (age >= 0 && age < 50000000) { /* a wall-clock step would make it nonsense: then use now */
            double then = link_then(m - age);
            *arrival = then < (double)now ? (ns_t)then : now;
        }
    }
    return r;
}

static void endpoint_unix(struct endpoint *e, const char *what, const char *local, const char *remote,
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
    static uint8_t zero[MAX_FRAME];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0)
        die("socketpair: %s", strerror(errno));
    if (send(sv[0], zero, len, MSG_DONTWAIT) != (ssize_t)len || ioctl(sv[0], SIOCOUTQ, &outq) != 0 || outq <= 0)
        die("cannot measure a datagram's truesize: %s", strerror(errno));
    close(sv[0]);
    close(sv[1]);
    return outq;
}

/* Limit what the socket toward e may hold unread to `frames` full-size (NR_ETH_MAX_FRAME) frames
 * (0: keep set_bufs' 4 MiB).  A unix datagram counts against the sender's SO_SNDBUF (by its
 * truesize) until the receiver has read it, and a send is allowed while the count is below
 * SO_SNDBUF, which the kernel doubles and keeps at least SOCK_MIN_SNDBUF (two full frames). */
static void endpoint_limit_frames(struct endpoint *e, int frames)
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
static void endpoint_try_connect(struct endpoint *e, ns_t now)
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
static int endpoint_send(struct endpoint *e, const uint8_t *data, uint32_t len, ns_t now)
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

/* ------------------------------------------------------------------ the per-direction pipeline */

struct frame {
    ns_t due;
    uint64_t order; /* tie-break: arrival order */
    uint64_t n;     /* frame number in this direction (1-based) */
    ns_t arrival;   /* the shared medium: when it arrived */
    uint32_t tries; /* the shared medium: transmissions so far */
    int state;      /* the shared medium: AIR_WAITING, AIR_THROUGH (held for order) or AIR_LOST */
    uint32_t len;
    uint8_t data[];
};
enum { AIR_WAITING, AIR_THROUGH, AIR_LOST };

struct qent {
    ns_t start;
    uint32_t len;
};

struct dir {
    int id;
    struct dir_conf c;
    struct rng rng_loss, rng_ge, rng_jitter;
    int ge_bad;
    uint64_t kind_count[NKIND];
    /* rate stage */
    double tat; /* when the line would be free under strict serialisation (ns, relative to g_t0) */
    double ns_per_byte;
    double burst_ns;
    /* delivery pacing (GCRA): a frame may be handed over once pace_tat - pace_burst_ns <= now */
    double pace_tat, pace_ns_per_byte, pace_burst_ns;
    /* queue accounting: frames admitted, not yet in service (start > now) */
    struct qent *q;
    size_t q_cap, q_head, q_n;
    uint64_t q_bytes;
    /* delay line: min-heap on (due, order) */
    struct frame **heap;
    size_t heap_n, heap_cap;
    ns_t last_due, last_arrival;
    double delay_ns, jitter_ns;
    int jitter_normal, overflow_drop; /* jitter_dist=normal; overflow=drop */
    double min_delay_ns; /* the least delay a frame can get: delay - the jitter's reach */
    uint64_t order;
    struct endpoint *out;
    /* the shared medium: admitted frames in order, until they are through (or lost) and all before
       them too; waiting ones count against the queue limits */
    struct frame **aq;
    size_t aq_cap, aq_head, aq_n;
    uint64_t aq_wait, aq_wait_bytes;
    struct rng rng_air;
    double airtime_ns;
    uint64_t txops, air_retries;
    /* the WiFi chip's host bus (medium=shared, bus_rate > 0): link time its finished transfers took, and them */
    double bus_ns;
    uint64_t bus_transfers, bus_hwm_pkts;
    /* counters */
    uint64_t frames_in, bytes_in, frames_out, bytes_out, dropped[NREASON];
    uint64_t hwm_pkts, hwm_bytes;
    uint64_t late_n, late_over_100us;
    double late_sum_ns;
    ns_t late_max_ns;
};

static uint64_t g_max_inflight = 100000;
static int g_defer = 1; /* --no-defer: wake for every arrival */

static int heap_less(const struct frame *a, const struct frame *b)
{
    return a->due < b->due || (a->due == b->due && a->order < b->order);
}

static void heap_push(struct dir *d, struct frame *f)
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

static void q_advance(struct dir *d, ns_t now)
{
    while (d->q_n && d->q[d->q_head].start <= now) {
        d->q_bytes -= d->q[d->q_head].len;
        d->q_head = (d->q_head + 1) % d->q_cap;
        d->q_n--;
    }
}

static void dir_init(struct dir *d, int id, const struct dir_conf *c, uint64_t seed, struct endpoint *out)
{
    memset(d, 0, sizeof(*d));
    d->id = id;
    d->c = *c;
    d->out = out;
    rng_seed(&d->rng_loss, seed, (unsigned)id, 0);
    rng_seed(&d->rng_ge, seed, (unsigned)id, 1);
    rng_seed(&d->rng_jitter, seed, (unsigned)id, 2);
    rng_seed(&d->rng_air, seed, (unsigned)id, 3);
    if (c->rate) {
        d->ns_per_byte = 8e9 / (double)c->rate * g_dilation;
        d->burst_ns = (double)c->burst * d->ns_per_byte;
    }
    d->tat = -1e18;
    d->pace_tat = -1e18;
    if (c->pace) {
        d->pace_ns_per_byte = 8e9 / (double)c->pace * g_dilation;
        d->pace_burst_ns = (double)c->pace_burst * wire_bytes(NR_ETH_MAX_FRAME) * d->pace_ns_per_byte;
    }
    d->delay_ns = c->delay * 1e9 * g_dilation;
    d->jitter_ns = c->jitter * 1e9 * g_dilation;
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

static void count_drop(struct dir *d, ns_t now, int reason, uint64_t n, const uint8_t *data, uint32_t len)
{
    d->dropped[reason]++;
    drops_write(now + g_t0, d->id, reason, n, data, len); /* now is since g_t0 */
}

/* when a frame that leaves the rate stage (or the air) at dep is due: plus the delay and jitter, in order
   unless reorder */
static ns_t dir_due(struct dir *d, double dep)
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

/* the WiFi chip's host bus (below the shared medium): a frame off the air toward the device goes to it */
static int bus_on(void);
static void bus_from_air(struct dir *d, struct frame *f, double e);

/* ------------------------------------------------------------------ the shared medium */

/*
 * With medium=shared the two directions take turns on one channel, as 802.11 stations do under
 * DCF with A-MPDU aggregation and block acks (the defaults are 802.11n at 2.4 GHz; the table in
 * harness/link/settings.py gives each with its source); rate and burst do not apply.  A turn
 * (TXOP) starts when the channel is free and a direction has frames waiting,
 * s = max(channel free, the first waiting frame's arrival), and lasts
 *   access    SIFS + aifsn slots (DIFS with aifsn 2) + the mean backoff, cwmin/2 slots
 *   PPDU      preamble + the A-MPDU's bytes * 8 / phy_rate + signal_ext
 *   response  SIFS + blockack + signal_ext
 * It carries frames of one direction that arrived by the end of its access (when a station builds
 * its A-MPDU): at most agg_frames MPDUs from the first 64 not yet through (the block ack window),
 * agg_bytes bytes and an agg_time PPDU (preamble + frames), and always at least one.  On the air a
 * frame is mpdu_overhead bytes longer than on Ethernet, padded to 4 bytes.  When both directions
 * have frames waiting when the channel is free they alternate, as DCF gives each station an equal
 * chance (collisions are not modelled).  Each MPDU is lost with probability fer and sent again in
 * a later turn, up to retry_limit transmissions, then dropped ("air").  Frames leave the air at the
 * end of their turn and in order (the receiver's reorder buffer holds what follows a lost frame
 * until that one is through or dropped), then take the one-way delay and jitter.  Everything is in
 * link time, as the wire's serialisation is.
 */
#define AIR_WINDOW 64

struct medium {
    int on;
    double access_ns, preamble_ns, ext_ns, sifs_ns, ba_ns, agg_time_ns, ns_per_byte, fer;
    uint64_t overhead, agg_frames, agg_bytes, retry_limit;
    double free_at; /* link time the channel is free again */
    int last;       /* the direction of the last turn (-1: none yet) */
    struct dir *dirs;
};
static struct medium g_air = {.last = -1};

static void air_init(const struct link_conf *lc, struct dir *dirs)
{
    double ns = 1e9 * g_dilation; /* link ns in a board second */
    g_air.on = !strcmp(lc->medium, "shared");
    g_air.access_ns = (lc->sifs + (double)lc->aifsn * lc->slot + (double)lc->cwmin / 2.0 * lc->slot) * ns;
    g_air.preamble_ns = lc->preamble * ns;
    g_air.ext_ns = lc->signal_ext * ns;
    g_air.sifs_ns = lc->sifs * ns;
    g_air.ba_ns = lc->blockack * ns;
    g_air.agg_time_ns = lc->agg_time * ns;
    g_air.ns_per_byte = 8e9 / (double)lc->phy_rate * g_dilation;
    g_air.fer = lc->fer;
    g_air.overhead = lc->mpdu_overhead;
    g_air.agg_frames = lc->agg_frames;
    g_air.agg_bytes = lc->agg_bytes;
    g_air.retry_limit = lc->retry_limit;
    g_air.free_at = -1e18;
    g_air.dirs = dirs;
    if (g_air.on && (dirs[TO_DEVICE].c.rate || dirs[TO_PEER].c.rate))
        fprintf(stderr, "netrepro-link: medium=shared: the air runs at phy_rate %" PRIu64 " bit/s; rate and burst "
                "do not apply\n", lc->phy_rate);
}

static struct frame *aq_at(const struct dir *d, size_t i) { return d->aq[(d->aq_head + i) % d->aq_cap]; }

/* an admitted frame waits for its turn on the air */
static void air_admit(struct dir *d, struct frame *f)
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
static uint64_t air_bytes(uint32_t len) { return ((uint64_t)len + g_air.overhead + 3) & ~(uint64_t)3; }

/* when the next turn's access starts (INFINITY: nothing waits), and whose turn it is */
static double air_next(int *winner)
{
    double first[NDIR], s = INFINITY;
    for (int i = 0; i < NDIR; i++) {
        const struct dir *d = &g_air.dirs[i];
        first[i] = d->aq_n ? (double)aq_at(d, 0)->arrival : INFINITY; /* the head always waits */
        if (first[i] < s)
            s = first[i];
    }
    if (s == INFINITY)
        return s;
    if (s < g_air.free_at)
        s = g_air.free_at;
    if (first[TO_DEVICE] <= s && first[TO_PEER] <= s) /* both contend: take turns */
        *winner = g_air.last >= 0 ? 1 - g_air.last : first[TO_PEER] < first[TO_DEVICE] ? TO_PEER : TO_DEVICE;
    else
        *winner = first[TO_DEVICE] <= s ? TO_DEVICE : TO_PEER;
    return s;
}

/* direction w's turn, its access starting at s */
static void air_turn(int w, double s)
{
    struct dir *d = &g_air.dirs[w];
    double p = s + g_air.access_ns; /* the PPDU starts: the A-MPDU is what has arrived by now */
    struct frame *sel[AIR_WINDOW];
    uint64_t k = 0, bytes = 0;
    size_t window = d->aq_n < AIR_WINDOW ? d->aq_n : AIR_WINDOW;
    for (size_t i = 0; i < window && k < g_air.agg_frames; i++) {
        struct frame *f = aq_at(d, i);
        if (f->state != AIR_WAITING)
            continue;
        if ((double)f->arrival > p)
            break;
        uint64_t b = air_bytes(f->len);
        if (k && (bytes + b > g_air.agg_bytes ||
                  (g_air.agg_time_ns > 0 &&
                   g_air.preamble_ns + (double)(bytes + b) * g_air.ns_per_byte > g_air.agg_time_ns)))
            break;
        sel[k++] = f;
        bytes += b;
    }
    double e = p + g_air.preamble_ns + (double)bytes * g_air.ns_per_byte + g_air.ext_ns + g_air.sifs_ns +
               g_air.ba_ns + g_air.ext_ns;
    d->airtime_ns += e - s;
    d->txops++;
    g_air.free_at = e;
    g_air.last = w;
    for (uint64_t j = 0; j < k; j++) {
        struct frame *f = sel[j];
        if (f->tries++)
            d->air_retries++;
        int lost = g_air.fer > 0 && rng_unit(&d->rng_air) < g_air.fer;
        if (lost && f->tries < g_air.retry_limit)
            continue; /* the block ack asks for it again */
        f->state = lost ? AIR_LOST : AIR_THROUGH;
        d->aq_wait--;
        d->aq_wait_bytes -= f->len;
    }
    /* off the air in order, at the end of the turn */
    while (d->aq_n && aq_at(d, 0)->state != AIR_WAITING) {
        struct frame *f = aq_at(d, 0);
        d->aq_head = (d->aq_head + 1) % d->aq_cap;
        d->aq_n--;
        if (f->state == AIR_LOST) {
            count_drop(d, (ns_t)llround(e), R_AIR, f->n, f->data, f->len);
            free(f);
            continue;
        }
        if (d->id == TO_DEVICE && bus_on()) {
            bus_from_air(d, f, e); /* the chip hands it to the board over its host bus */
            continue;
        }
        f->due = dir_due(d, e);
        f->order = d->order++;
        heap_push(d, f);
    }
}

/* take every turn whose A-MPDU is settled by link time t */
static void air_advance(ns_t t)
{
    int w = 0;
    double s;
    while ((s = air_next(&w)) != INFINITY && s + g_air.access_ns <= (double)t)
        air_turn(w, s);
}

/* when the next turn's A-MPDU is settled (INT64_MAX: nothing waits) */
static ns_t air_deadline(void)
{
    int w = 0;
    double s = air_next(&w);
    return s == INFINITY ? INT64_MAX : (ns_t)ceil(s + g_air.access_ns);
}

/* ------------------------------------------------------------------ the WiFi chip's host bus */

/*
 * With medium=shared and bus_rate > 0, the WiFi chip hangs on a host bus (SDIO or SPI) between the
 * board and the radio, and every frame crosses it once, on the board's side of the air:
 *   to_peer    the frame the board sends crosses the bus first; it reaches the air's queue when its
 *              transfer ends (it counts against the direction's queue limit from its arrival, with
 *              the frames waiting for the air: the board's queue toward the chip and the chip's queue
 *              toward the air are taken as one);
 *   to_device  the frame off the air (at the end of its turn) crosses the bus, then takes the one-way
 *              delay and jitter; while it waits for the bus it counts against the direction's limit
 *              and limit_bytes (the chip's buffer toward the host; full: dropped as "queue").
 * A transfer takes bus_cost (command and response, block framing, the driver's interrupt turnaround)
 * + the frame's bytes * 8 / bus_rate.  The bus is one half-duplex resource both directions share: one
 * transfer at a time, in the order the frames reached it (FIFO across the directions).  Because it is
 * FIFO, a transfer's start is max(its arrival, the end of the one before) once every earlier arrival
 * is in; a frame from the board is in when it is read (its kernel timestamp), so a frame off the air,
 * whose arrival (its turn's end) is known when the turn is taken, waits in `pending` until link time
 * reaches its arrival (a deadline of its own) and is then put in order.  Link time, as the air's.
 * Busy time is counted per direction when a transfer ends (bus_s in the stats), so that a stats
 * snapshot's bus time and frames_out cover the same frames.
 */
struct bus_xfer {
    double start, end;
    int dir;
    uint32_t len;
};

struct bus {
    int on;
    double cost_ns, ns_per_byte; /* link ns */
    double free_at;              /* the end of the last transfer scheduled */
    struct bus_xfer *x;          /* the transfers scheduled and not ended, in order: a ring */
    size_t cap, head, n, started; /* started: of the n, how many have started (the first ones) */
    uint64_t wait[NDIR], wait_bytes[NDIR]; /* transfers not started yet, per direction */
    struct frame **p;            /* frames off the air toward the device, not at the bus yet: a ring */
    size_t p_cap, p_head, p_n;
    struct dir *dirs;
};
static struct bus g_bus;

static int bus_on(void) { return g_bus.on; }

static void bus_init(const struct link_conf *lc, struct dir *dirs)
{
    if (lc->bus_rate && strcmp(lc->medium, "shared"))
        usage_error("--bus_rate %" PRIu64 ": the WiFi chip's host bus needs medium=shared (it sits between the "
                    "board and the air); set medium=shared, or bus_rate=0 for no bus", lc->bus_rate);
    g_bus.on = lc->bus_rate > 0;
    g_bus.cost_ns = lc->bus_cost * 1e9 * g_dilation;
    g_bus.ns_per_byte = lc->bus_rate ? 8e9 / (double)lc->bus_rate * g_dilation : 0;
    g_bus.free_at = -1e18;
    g_bus.dirs = dirs;
}

/* transfers that started by link time t stop waiting; those that ended count their busy time */
static void bus_settle(double t)
{
    while (g_bus.started < g_bus.n) {
        struct bus_xfer *x = &g_bus.x[(g_bus.head + g_bus.started) % g_bus.cap];
        if (x->start > t)
            break;
        g_bus.wait[x->dir]--;
        g_bus.wait_bytes[x->dir] -= x->len;
        g_bus.started++;
    }
    while (g_bus.started && g_bus.x[g_bus.head].end <= t) {
        struct bus_xfer *x = &g_bus.x[g_bus.head];
        g_bus.dirs[x->dir].bus_ns += x->end - x->start;
        g_bus.dirs[x->dir].bus_transfers++;
        g_bus.head = (g_bus.head + 1) % g_bus.cap;
        g_bus.n--;
        g_bus.started--;
    }
}

/* a frame of direction d reaches the bus at link time at (every earlier arrival already in): when its transfer
   ends */
static double bus_schedule(struct dir *d, uint32_t len, double at)
{
    bus_settle(at);
    if (g_bus.n == g_bus.cap)
        g_bus.x = ring_grow(g_bus.x, sizeof(*g_bus.x), g_bus.n, &g_bus.cap, &g_bus.head);
    double start = g_bus.free_at > at ? g_bus.free_at : at;
    double end = start + g_bus.cost_ns + (double)len * g_bus.ns_per_byte;
    g_bus.x[(g_bus.head + g_bus.n) % g_bus.cap] = (struct bus_xfer){start, end, d->id, len};
    g_bus.n++;
    g_bus.wait[d->id]++;
    g_bus.wait_bytes[d->id] += len;
    if (g_bus.wait[d->id] > d->bus_hwm_pkts)
        d->bus_hwm_pkts = g_bus.wait[d->id];
    g_bus.free_at = end;
    return end;
}

/* a frame off the air toward the device at link time e (its turn's end): it waits to reach the bus at e */
static void bus_from_air(struct dir *d, struct frame *f, double e)
{
    (void)d;
    if (g_bus.p_n == g_bus.p_cap)
        g_bus.p = ring_grow(g_bus.p, sizeof(*g_bus.p), g_bus.p_n, &g_bus.p_cap, &g_bus.p_head);
    f->arrival = (ns_t)ceil(e); /* from here on: when it reaches the bus */
    g_bus.p[(g_bus.p_head + g_bus.p_n) % g_bus.p_cap] = f;
    g_bus.p_n++;
}

/* the frames off the air that reached the bus by link time t, in order: queued for it (or dropped when the
   chip's buffer toward the board is full), then the delay; then what settled by t */
static void bus_advance(ns_t t)
{
    while (g_bus.p_n) {
        struct frame *f = g_bus.p[g_bus.p_head];
        if (f->arrival > t)
            break;
        g_bus.p_head = (g_bus.p_head + 1) % g_bus.p_cap;
        g_bus.p_n--;
        struct dir *d = &g_bus.dirs[TO_DEVICE];
        bus_settle((double)f->arrival);
        if ((d->c.limit && g_bus.wait[TO_DEVICE] >= d->c.limit) ||
            (d->c.limit_bytes && g_bus.wait_bytes[TO_DEVICE] + f->len > d->c.limit_bytes)) {
            count_drop(d, f->arrival, R_QUEUE, f->n, f->data, f->len);
            free(f);
            continue;
        }
        f->due = dir_due(d, bus_schedule(d, f->len, (double)f->arrival));
        f->order = d->order++;
        heap_push(d, f);
    }
    bus_settle((double)t);
}

/* when the next frame off the air reaches the bus (INT64_MAX: none waits) */
static ns_t bus_deadline(void) { return g_bus.p_n ? g_bus.p[g_bus.p_head]->arrival : INT64_MAX; }

/* a frame arrives at time now (ns since g_t0) */
static void dir_arrive(struct dir *d, const uint8_t *data, uint32_t len, ns_t now)
{
    if (now < d->last_arrival)
        now = d->last_arrival; /* arrival times from the kernel: never let them go backwards */
    d->last_arrival = now;
    d->frames_in++;
    d->bytes_in += len;
    uint64_t n = d->frames_in;
    if (g_capture_at_peer && d->id == TO_DEVICE)
        pcap_write(now + g_t0, data, len); /* peer side: all the peer sent, the frames the link loses too */

    /* classify for the drop list */
    struct pinfo p;
    int is_kind[NKIND] = {0};
    is_kind[K_FRAME] = 1;
    if (d->c.drop.n) {
        parse_frame(data, len, &p);
        if (p.is_ipv4 && !p.frag && p.proto == 6) {
            is_kind[K_DATA] = p.payload > 0;
            is_kind[K_SYN] = (p.flags & 0x02) != 0;
            is_kind[K_FIN] = (p.flags & 0x01) != 0;
            is_kind[K_RST] = (p.flags & 0x04) != 0;
            is_kind[K_ACK] = p.payload == 0 && (p.flags & 0x07) == 0 && (p.flags & 0x10);
        }
        is_kind[K_UDP] = p.is_ipv4 && !p.frag && p.proto == 17;
    }
    for (int k = 0; k < NKIND; k++)
        d->kind_count[k] += (uint64_t)is_kind[k];
    int drop_listed = 0;
    for (int i = 0; i < d->c.drop.n; i++) {
        const struct drop_entry *e = &d->c.drop.e[i];
        uint64_t cnt = d->kind_count[e->kind];
        if (is_kind[e->kind] && cnt >= e->lo && cnt <= e->hi)
            drop_listed = 1;
    }

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

    int reason = drop_listed ? R_DROPLIST : lost_ge ? R_GEMODEL : lost_random ? R_LOSS : -1;
    if (reason >= 0) {
        count_drop(d, now, reason, n, data, len);
        return;
    }

    /* queue limit */
    if (g_air.on)
        air_advance(now);
    if (g_bus.on)
        bus_advance(now); /* the frames off the air that reached the bus before this one */
    q_advance(d, now);
    uint64_t q_n = g_air.on ? d->aq_wait : d->q_n, q_bytes = g_air.on ? d->aq_wait_bytes : d->q_bytes;
    if ((d->c.limit && q_n >= d->c.limit) || (d->c.limit_bytes && q_bytes + len > d->c.limit_bytes) ||
        d->heap_n + d->aq_n + (d->id == TO_DEVICE ? g_bus.p_n : 0) >= g_max_inflight) {
        count_drop(d, now, R_QUEUE, n, data, len);
        return;
    }

    struct frame *f = xmalloc(sizeof(*f) + len);
    f->n = n;
    f->len = len;
    f->arrival = now;
    f->tries = 0;
    f->state = AIR_WAITING;
    memcpy(f->data, data, len);
    if (g_air.on) {
        if (g_bus.on && d->id == TO_PEER) /* the board's frame crosses the bus first: it reaches the air's queue
                                               when that ends (toward the device it crosses after the air) */
            f->arrival = (ns_t)ceil(bus_schedule(d, len, (double)now));
        air_admit(d, f);
        if (!g_capture_at_peer && d->id == TO_PEER)
            pcap_write(now + g_t0, data, len); /* device side: stamped on arrival from the device */
        return;
    }

    /* rate */
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

    /* delay */
    f->due = dir_due(d, dep);
    f->order = d->order++;
    heap_push(d, f);

    if (!g_capture_at_peer && d->id == TO_PEER)
        pcap_write(now + g_t0, data, len); /* device side: stamped on arrival from the device */
}

/* a late link hands over at most this many full frames' wire time back to back to catch up */
#define PACE_CATCHUP_FRAMES 2

/* send what is due, until the output would block */
static void dir_deliver(struct dir *d, ns_t now)
{
    while (d->heap_n && d->heap[0]->due <= now) {
        if (d->out->blocked) {
            if (d->out->connected || now < d->out->retry_at)
                return;
            d->out->blocked = 0;
            d->out->free_at = now;
        }
        struct frame *f = d->heap[0];
        ns_t t = link_now();
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
        if (d->c.pace) {
            /* on the wire from when it was free or the frame was due, not from our wake-up */
            double catchup = PACE_CATCHUP_FRAMES * wire_bytes(NR_ETH_MAX_FRAME) * d->pace_ns_per_byte;
            double from = d->pace_tat > (double)f->due ? d->pace_tat : (double)f->due;
            if (from < (double)t - catchup)
                from = (double)t - catchup;
            d->pace_tat = from + wire_bytes(f->len) * d->pace_ns_per_byte;
        }
        if (r == 0) {
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
            if (late > 100000 * g_dilation)
                d->late_over_100us++;
            /* stamped when handed over: to the device for a device-side capture, to the peer for a peer-side one */
            if (d->id == (g_capture_at_peer ? TO_PEER : TO_DEVICE))
                pcap_write(t + g_t0, f->data, f->len);
        } else {
            count_drop(d, t, r == 1 ? R_DEVICE_FULL : R_UNREACHABLE, f->n, f->data, f->len);
        }
        free(f);
    }
}

/* ------------------------------------------------------------------ stats */

static const char *g_stats_path;
static uint64_t g_snapshot;
static double g_spin_s;

static void stats_write(struct dir *dirs, ns_t now, int final)
{
    if (!g_stats_path)
        return;
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", g_stats_path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "netrepro-link: cannot write stats %s: %s\n", tmp, strerror(errno));
        return;
    }
    g_snapshot++;
    fprintf(f,
            "{\n  \"elapsed_s\": %.9f,\n  \"dilation\": %.6f,\n  \"snapshot\": %" PRIu64 ",\n  \"final\": %s,\n"
            "  \"spin_s\": %.6f,\n  \"capture_stalls\": %" PRIu64,
            now / 1e9 / g_dilation, g_dilation, g_snapshot, final ? "true" : "false", g_spin_s,
            (g_pcap ? g_pcap->stalls : 0) + (g_drops ? g_drops->stalls : 0));
    if (g_clk.listen_fd >= 0) {
        /* how the board's own clock went against wall / D since its first tick */
        double board_ns = g_clk.tick_v - g_clk.first_v, wall_ns = (double)(g_clk.tick_m - g_clk.first_m);
        fprintf(f,
                ",\n  \"board_clock\": {\"ticks\": %" PRIu64 ", \"board_s\": %.6f, \"wall_s\": %.6f, "
                "\"effective_dilation\": %.6f, \"max_lag_ms\": %.3f, \"max_tick_gap_wall_ms\": %.3f",
                g_clk.ticks, board_ns / 1e9 / g_dilation, wall_ns / 1e9,
                board_ns > 0 ? wall_ns / board_ns * g_dilation : 0.0, g_clk.max_lag_ns / 1e6 / g_dilation,
                (double)g_clk.max_gap_m / 1e6);
        /* the stalls as [CLOCK_MONOTONIC s of their start, wall ms], in time order */
        fprintf(f, ", \"stalls_seen\": %" PRIu64 ", \"stalls\": [", g_stalls_seen);
        struct stall by_time[STALL_KEEP];
        memcpy(by_time, g_stalls, sizeof(by_time));
        qsort(by_time, (size_t)g_stalls_n, sizeof(by_time[0]), stall_earlier);
        for (int k = 0; k < g_stalls_n; k++)
            fprintf(f, "%s[%.6f, %.3f]", k ? ", " : "", (double)(g_t0 + by_time[k].at_m) / 1e9,
                    (double)by_time[k].wall / 1e6);
        fputs("]}", f);
    }
    if (g_air.on) {
        double board_s = now / 1e9 / g_dilation;
        fprintf(f, ",\n  \"medium\": \"shared\",\n  \"txops_per_s\": %.3f",
                board_s > 0 ? (double)(dirs[TO_DEVICE].txops + dirs[TO_PEER].txops) / board_s : 0.0);
    }
    if (g_bus.on)
        bus_settle((double)now);
    for (int i = 0; i < NDIR; i++) {
        struct dir *d = &dirs[i];
        q_advance(d, now);
        fprintf(f,
                ",\n  \"%s\": {\n    \"frames_in\": %" PRIu64 ",\n    \"bytes_in\": %" PRIu64
                ",\n    \"frames_out\": %" PRIu64 ",\n    \"bytes_out\": %" PRIu64 ",\n    \"dropped\": {",
                dir_name[i], d->frames_in, d->bytes_in, d->frames_out, d->bytes_out);
        for (int r = 0; r < NREASON; r++)
            if (r != R_AIR || g_air.on)
                fprintf(f, "%s\"%s\": %" PRIu64, r ? ", " : "", reason_name[r], d->dropped[r]);
        fprintf(f,
                "},\n    \"queue_hwm_pkts\": %" PRIu64 ",\n    \"queue_hwm_bytes\": %" PRIu64
                ",\n    \"queue_pkts\": %zu,\n    \"in_flight\": %zu,\n    \"late_us_mean\": %.3f,\n"
                "    \"late_us_max\": %.3f,\n    \"late_over_100us\": %" PRIu64 ",\n    \"overflow\": \"%s\",\n"
                "    \"out_sndbuf_bytes\": %d,\n    \"sock_frames\": %d",
                d->hwm_pkts, d->hwm_bytes, g_air.on ? (size_t)d->aq_wait : d->q_n,
                d->heap_n + d->aq_n + (i == TO_DEVICE ? g_bus.p_n : 0),
                d->late_n ? d->late_sum_ns / d->late_n / 1e3 / g_dilation : 0.0, d->late_max_ns / 1e3 / g_dilation,
                d->late_over_100us, d->c.overflow, d->out->sndbuf,
                d->out->sock_frames);
        if (g_air.on) /* the air: link time its turns took, the turns, the MPDUs sent again */
            fprintf(f, ",\n    \"airtime_s\": %.9f,\n    \"txops\": %" PRIu64 ",\n    \"air_retries\": %" PRIu64,
                    d->airtime_ns / 1e9 / g_dilation, d->txops, d->air_retries);
        if (g_bus.on) /* the bus: link time its finished transfers took, them, the most that waited for it */
            fprintf(f, ",\n    \"bus_s\": %.9f,\n    \"bus_transfers\": %" PRIu64 ",\n    \"bus_queue_hwm_pkts\": %" PRIu64,
                    d->bus_ns / 1e9 / g_dilation, d->bus_transfers, d->bus_hwm_pkts);
        fputs("\n  }", f);
    }
    fputs("\n}\n", f);
    if (fclose(f) != 0 || rename(tmp, g_stats_path) != 0)
        fprintf(stderr, "netrepro-link: cannot write stats %s: %s\n", g_stats_path, strerror(errno));
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

/* ------------------------------------------------------------------ wait with an adaptive spin */

struct waiter {
    ns_t spin_max;      /* upper bound of the spin margin */
    double budget;      /* fraction of wall time the spin may use */
    double over_mean;   /* EWMA of ppoll's wake-up lateness */
    double over_dev;    /* EWMA of its absolute deviation */
    ns_t window_start;  /* budget window */
    ns_t window_spin;
};

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

/* ------------------------------------------------------------------ main */

/* ------------------------------------------------------------------ the event loop */

struct loop {
    struct endpoint *dev, *peer;
    struct dir *dirs;
    int sfd;
    struct waiter *w;
    int running;
    ns_t last_flush;
    struct pollfd pfd[4]; /* the two inputs, the signals, the board's clock */
    short in_events[2];
};

static uint8_t g_buf[MAX_FRAME];

/* the endpoint of input k (0: device socket, feeding to_peer; 1: peer side, feeding to_device) */
static struct endpoint *input_ep(struct loop *L, int k) { return k == 0 ? L->dev : L->peer; }
static struct dir *input_dir(struct loop *L, int k) { return k == 0 ? &L->dirs[TO_PEER] : &L->dirs[TO_DEVICE]; }

/* take in what is waiting on input k, in order, with the kernel's arrival times */
static void drain_input(struct loop *L, int k)
{
    struct endpoint *e = input_ep(L, k);
    struct dir *d = input_dir(L, k);
    for (int b = 0; b < READ_BATCH; b++) {
        ssize_t r;
        ns_t t = 0;
        if (e->is_tap) {
            r = read(e->fd, g_buf, sizeof(g_buf));
            t = link_now();
        } else {
            r = recv_stamped(e->fd, g_buf, sizeof(g_buf), &t);
        }
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
            dir_arrive(d, g_buf, (uint32_t)r, t);
    }
}

static void handle_signals(struct loop *L)
{
    struct signalfd_siginfo si;
    while (read(L->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGUSR1) {
            files_flush();
            stats_write(L->dirs, link_now(), 0);
        } else {
            L->running = 0;
        }
    }
}

/* the next time something is due (INT64_MAX: nothing) */
static ns_t next_deadline(struct loop *L)
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
    if (g_air.on) {
        ns_t t = air_deadline(); /* the next turn's A-MPDU is settled */
        if (t < deadline)
            deadline = t;
    }
    if (g_bus.on) {
        ns_t t = bus_deadline(); /* the next frame off the air reaches the bus */
        if (t < deadline)
            deadline = t;
    }
    if (g_files_dirty && L->last_flush + NS_PER_S < deadline)
        deadline = L->last_flush + NS_PER_S;
    return deadline;
}

static void set_pollfds(struct loop *L, int all_inputs, ns_t deadline, ns_t now)
{
    for (int k = 0; k < 2; k++) {
        const struct endpoint *e = input_ep(L, k);
        const struct dir *fed = input_dir(L, k);
        ns_t window = deadline - now;
        /* An input need not wake us before the deadline when a frame arriving now could not be
           due before it: its arrival time comes from the kernel, so reading it later loses no
           precision.  This halves the wake-ups, which cost ~20 us of CPU each in a VM. */
        L->in_events[k] = POLLIN;
        if (!all_inputs && g_defer && !e->is_tap && deadline != INT64_MAX && window < 20000000 &&
            fed->min_delay_ns >= (double)window + 100000)
            L->in_events[k] = 0;
        L->pfd[k] = (struct pollfd){.fd = e->fd, .events = L->in_events[k] | (e->blocked && e->connected ? POLLOUT : 0)};
    }
    L->pfd[2] = (struct pollfd){.fd = L->sfd, .events = POLLIN};
    L->pfd[3] = clock_pollfd();
}

/* handle what ppoll reported */
static void handle_ready(struct loop *L)
{
    if (L->pfd[2].revents & POLLIN)
        handle_signals(L);
    clock_ready(L->pfd[3].revents);
    for (int k = 0; k < 2; k++) {
        if (L->pfd[k].revents & POLLOUT) {
            input_ep(L, k)->blocked = 0;
            input_ep(L, k)->free_at = link_now();
        }
        if (L->pfd[k].revents & (POLLIN | POLLERR))
            drain_input(L, k);
    }
}

static int xppoll(struct loop *L, ns_t timeout)
{
    struct timespec to = {timeout / NS_PER_S, timeout % NS_PER_S};
    int n = ppoll(L->pfd, 4, timeout < 0 ? NULL : &to, NULL);
    if (n < 0 && errno != EINTR)
        die("ppoll: %s", strerror(errno));
    return n;
}

/*
 * One round: send what is due, then wait for the next deadline or an input.  The wait
 * sleeps in ppoll until a margin before the deadline (the margin follows ppoll's measured
 * lateness), then takes in every input, deferred ones included, and spins to the deadline
 * while still watching all inputs, so that what arrives is read before what is sent.
 */
static void loop_once(struct loop *L)
{
    ns_t now = link_now();
    if (g_air.on)
        air_advance(now);
    if (g_bus.on)
        bus_advance(now);
    for (int i = 0; i < NDIR; i++)
        dir_deliver(&L->dirs[i], now);

    ns_t deadline = next_deadline(L);
    now = link_now();
    if (deadline > now) {
        /* A deadline past the board's next tick comes only with that tick, an input: wait for it in
           ppoll.  Spinning for it would hold a core (at real-time priority) from the emulator that has
           to send it; two runs on two cores did so until the kernel's real-time throttling gave the
           emulators their 50 ms a second, and the boards stood still for 950 ms at a time. */
        int held = clock_holds(deadline);
        ns_t margin = deadline == INT64_MAX || held ? 0 : waiter_margin(L->w, now);
        ns_t wake = deadline == INT64_MAX ? INT64_MAX : deadline - margin;
        if (held || wake > now + 2000) {
            set_pollfds(L, 0, deadline, now);
            int n = xppoll(L, wake == INT64_MAX ? -1 : link_wall(wake - now));
            if (n != 0) {
                if (n > 0)
                    handle_ready(L);
                goto housekeeping; /* woken by an input or a signal: start over */
            }
            if (held)
                goto housekeeping;
            waiter_sample(L->w, link_now() - wake);
        }
        /* the last stretch: take in everything now, then spin watching all inputs; a spin
           outlasting its margin (the board's clock has not reached the deadline) goes back
           to waiting, so that it never takes a core from a lagging emulator */
        set_pollfds(L, 1, deadline, now);
        for (int k = 0; k < 2; k++)
            drain_input(L, k); /* deferred inputs above all; an empty one costs one syscall */
        ns_t w0 = mono_ns(), s0 = link_now(), t = s0;
        int outlasted = 0;
        while (t < deadline && L->running) {
            if (xppoll(L, 0) > 0)
                handle_ready(L);
            t = link_now();
            if (g_clk.ticking && mono_ns() - w0 > 2 * L->w->spin_max + 20000) {
                outlasted = 1;
                break;
            }
        }
        ns_t spun = mono_ns() - w0;
        L->w->window_spin += spun;
        g_spin_s += (double)spun / 1e9;
        if (outlasted && t < deadline) { /* back to waiting: until an input or the deadline at this pace */
            set_pollfds(L, 0, deadline, t);
            if (xppoll(L, link_wall(deadline - t)) > 0)
                handle_ready(L);
        }
    } else {
        /* already due: a quick look at the inputs and the signals first */
        set_pollfds(L, 1, deadline, now);
        if (xppoll(L, 0) > 0)
            handle_ready(L);
    }
housekeeping:
    now = link_now();
    if (g_files_dirty && now - L->last_flush >= NS_PER_S) {
        files_flush();
        L->last_flush = now;
    }
}

static void help(void)
{
    puts("usage: netrepro-link --device-sock PATH --device-remote PATH\n"
         "                     (--tap NAME [--tap-addr A.B.C.D/N] [--tap-mtu N] | --peer-sock PATH --peer-remote PATH)\n"
         "                     [--to-device SPEC] [--to-peer SPEC] [--pcap PATH] [--drops PATH] [--stats PATH]\n"
         "                     [--spin-us N] [--spin-budget FRACTION] [--max-inflight N] [--rt-priority N] [--nice N]\n"
         "                     [--dilation D]   (device time: wall seconds per second of the board's time)\n"
         "                     [--board-clock PATH] (listen here for the board's clock, a byte per tick:\n"
         "                                           link time then follows the board, not the wall)\n"
         "                     [--board-clock-per-ms N] (the board's clock ticks N times a board ms; default 1)\n"
         "                     [--capture-at device|peer] (the side of the link the capture is taken at;\n"
         "                                           default device)\n"
         "                     [--no-defer] [--hold-capture-mib N] [--die-with-parent] [--LINK-WIDE-KEY VALUE]");
    printf("link-wide keys:%s\n"
           "SPEC: key=value,key=value,... (a list continues after a comma: drop=data:3,syn:1) with the keys:\n"
           "     %s\n"
           "Values in plain units (seconds, bit/s, bytes, fractions); harness/link/settings.py describes each.\n"
           "Prints READY when the sockets are bound; SIGTERM/SIGINT stop it (stats written), SIGUSR1 writes stats.\n",
           link_keys, dir_keys);
}

int main(int argc, char **argv)
{
    const char *device_sock = NULL, *device_remote = NULL, *peer_sock = NULL, *peer_remote = NULL, *tap = NULL;
    const char *tap_addr = NULL, *pcap_path = NULL, *drops_path = NULL, *clock_path = NULL;
    const char *spec_dev = "", *spec_peer = "";
    uint64_t tmp;
    int tap_mtu = 0, die_with_parent = 0, nice_level = 0, nice_set = 0, rt_prio = 0;
    struct waiter w = {.spin_max = 100000, .budget = 0.15};
    struct link_conf lc; /* the link-wide settings: --seed, --snaplen, the medium's */
    link_defaults(&lc);

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        char name[64];
        const char *eq = strchr(a, '=');
        if (!strncmp(a, "--", 2) && eq) {
            snprintf(name, sizeof(name), "%.*s", (int)(eq - a), a);
            val = eq + 1;
        } else {
            snprintf(name, sizeof(name), "%s", a);
        }
#define FLAG(s) (!strcmp(name, s))
#define VALUE()                                                                                                   \
    do {                                                                                                          \
        if (!val) {                                                                                               \
            if (i + 1 >= argc)                                                                                    \
                usage_error("option %s needs a value", name);                                                     \
            val = argv[++i];                                                                                      \
        }                                                                                                         \
    } while (0)
        if (FLAG("--help") || FLAG("-h")) {
            help();
            return 0;
        } else if (FLAG("--die-with-parent")) {
            die_with_parent = 1;
            continue;
        } else if (FLAG("--no-defer")) {
            g_defer = 0;
            continue;
        }
        VALUE();
        if (FLAG("--device-sock"))
            device_sock = val;
        else if (FLAG("--device-remote"))
            device_remote = val;
        else if (FLAG("--peer-sock"))
            peer_sock = val;
        else if (FLAG("--peer-remote"))
            peer_remote = val;
        else if (FLAG("--tap"))
            tap = val;
        else if (FLAG("--tap-addr"))
            tap_addr = val;
        else if (FLAG("--tap-mtu")) {
            if (parse_u64(val, &tmp) || tmp < 68 || tmp > 65535)
                usage_error("--tap-mtu: bad value '%s'", val);
            tap_mtu = (int)tmp;
        } else if (FLAG("--to-device"))
            spec_dev = val;
        else if (FLAG("--to-peer"))
            spec_peer = val;
        else if (FLAG("--pcap"))
            pcap_path = val;
        else if (FLAG("--capture-at")) {
            if (strcmp(val, "device") && strcmp(val, "peer"))
                usage_error("--capture-at: bad value '%s' (device or peer)", val);
            g_capture_at_peer = !strcmp(val, "peer");
        } else if (FLAG("--drops"))
            drops_path = val;
        else if (FLAG("--stats"))
            g_stats_path = val;
        else if (FLAG("--spin-us")) {
            double d;
            if (parse_double(val, &d) || d < 0 || d > 10000)
                usage_error("--spin-us: bad value '%s'", val);
            w.spin_max = (ns_t)(d * 1000);
        } else if (FLAG("--spin-budget")) {
            if (parse_double(val, &w.budget) || w.budget < 0 || w.budget > 1)
                usage_error("--spin-budget: bad value '%s' (a fraction 0..1)", val);
        } else if (FLAG("--rt-priority")) {
            if (parse_u64(val, &tmp) || tmp < 1 || tmp > 99)
                usage_error("--rt-priority: bad value '%s' (1..99)", val);
            rt_prio = (int)tmp;
        } else if (FLAG("--nice")) {
            double d;
            if (parse_double(val, &d) || d < -20 || d > 19 || d != (int)d)
                usage_error("--nice: bad value '%s' (-20..19)", val);
            nice_level = (int)d;
            nice_set = 1;
        } else if (FLAG("--hold-capture-mib")) {
            if (parse_u64(val, &tmp) || tmp > 65536)
                usage_error("--hold-capture-mib: bad value '%s' (0..65536)", val);
            g_hold_chunks = (size_t)tmp;
            if (g_max_chunks < g_hold_chunks + 64)
                g_max_chunks = g_hold_chunks + 64;
        } else if (FLAG("--dilation")) {
            if (parse_double(val, &g_dilation) || !(g_dilation >= 0.001 && g_dilation <= 1000))
                usage_error("--dilation: bad value '%s' (wall seconds per board second, 0.001..1000)", val);
        } else if (FLAG("--board-clock")) {
            clock_path = val;
        } else if (FLAG("--board-clock-per-ms")) {
            if (parse_double(val, &g_clock_per_ms) || !(g_clock_per_ms >= 1 && g_clock_per_ms <= 1000))
                usage_error("--board-clock-per-ms: bad value '%s' (ticks a board ms, 1..1000)", val);
        } else if (FLAG("--max-inflight")) {
            if (parse_u64(val, &g_max_inflight) || g_max_inflight == 0)
                usage_error("--max-inflight: bad value '%s'", val);
        } else if (!strncmp(name, "--", 2) && link_setting(&lc, name, name + 2, val))
            continue;
        else
            usage_error("unknown option %s", name);
    }
    if (lc.snaplen)
        g_snaplen = (uint32_t)lc.snaplen;
    if (!device_sock || !device_remote)
        usage_error("--device-sock and --device-remote are required");
    if (!tap == !(peer_sock || peer_remote))
        usage_error("give either --tap or --peer-sock with --peer-remote");
    if (!tap && !(peer_sock && peer_remote))
        usage_error("--peer-sock and --peer-remote go together");
    if ((tap_addr || tap_mtu) && !tap)
        usage_error("--tap-addr/--tap-mtu need --tap");

    struct dir_conf conf[NDIR];
    parse_dir_spec("--to-device", spec_dev, &conf[TO_DEVICE]);
    parse_dir_spec("--to-peer", spec_peer, &conf[TO_PEER]);
    if (!strcmp(conf[TO_PEER].overflow, "drop"))
        usage_error("--to-peer: overflow=drop is for --to-device (the device's NIC ring)");

    if (die_with_parent) {
        /* SIGTERM (not the harness's SIGKILL) so that the capture and stats are still written;
           a parent that died before this line is caught by comparing the parent's pid */
        pid_t parent = getppid();
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            return 0;
    }
    prctl(PR_SET_TIMERSLACK, 1UL);
    /* the link's timing depends on waking up on time next to a busy QEMU: SCHED_FIFO if
       allowed (the link blocks when idle and its spin is budgeted), else a better nice */
    int rt_ok = 0;
    if (rt_prio) {
        struct sched_param sp = {.sched_priority = rt_prio};
        rt_ok = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
        if (!rt_ok)
            fprintf(stderr, "netrepro-link: could not use SCHED_FIFO %d (%s)%s\n", rt_prio, strerror(errno),
                    nice_set ? "; trying nice instead" : "");
    }
    if (!rt_ok && nice_set && setpriority(PRIO_PROCESS, 0, nice_level) != 0)
        fprintf(stderr, "netrepro-link: could not set nice %d (%s); running at the default priority\n", nice_level,
                strerror(errno));
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

    struct endpoint dev_ep, peer_ep;
    memset(&dev_ep, 0, sizeof(dev_ep));
    memset(&peer_ep, 0, sizeof(peer_ep));
    endpoint_unix(&dev_ep, "device socket", device_sock, device_remote, "--device-sock", "--device-remote");
    if (tap) {
        peer_ep.what = "tap";
        peer_ep.is_tap = 1;
        peer_ep.fd = tap_open(tap);
        if (tap_addr || tap_mtu)
            tap_configure(tap, tap_addr, tap_mtu);
    } else {
        endpoint_unix(&peer_ep, "peer socket", peer_sock, peer_remote, "--peer-sock", "--peer-remote");
    }

    struct timespec ts;
    g_t0 = clock_pair(&ts, 4); /* once: every timestamp of the run is derived from it */
    g_wall0 = (ns_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
    if (clock_path)
        clock_listen(clock_path);
    if (pcap_path)
        pcap_open(pcap_path);
    if (drops_path)
        g_drops = afile_open(drops_path, "drops log");

    /* What the socket toward a side may hold unread (sock_frames): with overflow=drop, the
     * buffering in front of the device should be its NIC's ring (and a small FIFO), not the
     * kernel's socket queue (max_dgram_qlen, 11 frames by default). */
    endpoint_limit_frames(&dev_ep, (int)conf[TO_DEVICE].sock_frames);
    endpoint_limit_frames(&peer_ep, (int)conf[TO_PEER].sock_frames);

    struct dir dirs[NDIR];
    dir_init(&dirs[TO_DEVICE], TO_DEVICE, &conf[TO_DEVICE], lc.seed, &dev_ep);
    dir_init(&dirs[TO_PEER], TO_PEER, &conf[TO_PEER], lc.seed, &peer_ep);
    air_init(&lc, dirs);
    bus_init(&lc, dirs);
    endpoint_try_connect(&dev_ep, 0);
    endpoint_try_connect(&peer_ep, 0);

    w.window_start = 0;
    fputs("READY\n", stdout);
    fflush(stdout);

    struct loop L = {.dev = &dev_ep, .peer = &peer_ep, .dirs = dirs, .sfd = sfd, .w = &w, .running = 1};
    while (L.running)
        loop_once(&L);

    ns_t end = link_now();
    pcap_release(INT64_MAX);
    afile_close(g_pcap); /* waits until everything is on disk (in the page cache) */
    afile_close(g_drops);
    stats_write(dirs, end, 1);
    unlink(dev_ep.bound_path);
    if (peer_ep.bound_path)
        unlink(peer_ep.bound_path);
    if (clock_path)
        unlink(clock_path);
    return 0;
}
