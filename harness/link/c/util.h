/*
 * Utilities every unit of the link uses: the time type and the clocks' readings, errors that end the
 * process, allocation, the rings' growth, and the PRNG (xoshiro256**, seeded by splitmix64).
 */
#ifndef NR_UTIL_H
#define NR_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef int64_t ns_t; /* nanoseconds */

#define NS_PER_S 1000000000LL
#define MAX_FRAME 65536
/* Ethernet's sizes (NR_ETH_OVERHEAD, NR_ETH_MIN_FRAME, NR_ETH_MAX_FRAME) and the settings
   (NR_DIR_SETTINGS, NR_LINK_SETTINGS) come from harness/link as -D flags, written once there. */
#if !defined(NR_ETH_OVERHEAD) || !defined(NR_ETH_MIN_FRAME) || !defined(NR_ETH_MAX_FRAME) || \
    !defined(NR_DIR_SETTINGS) || !defined(NR_LINK_SETTINGS)
#error "build netrepro-link with harness.link.link_binary(), which passes Ethernet's sizes and the settings"
#endif

/* what a frame of len bytes (without FCS) takes on the wire: padded, plus preamble, gap and FCS */
static inline uint32_t wire_bytes(uint32_t len)
{
    return (len < NR_ETH_MIN_FRAME ? NR_ETH_MIN_FRAME : len) + NR_ETH_OVERHEAD;
}

ns_t mono_ns(void);
ns_t clock_pair(struct timespec *rt, int tries);

void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void usage_error(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);
void *ring_grow(void *ring, size_t size, size_t n, size_t *cap, size_t *head);

struct rng {
    uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed, unsigned dir, unsigned stream);
uint64_t rng_next(struct rng *r);
double rng_unit(struct rng *r);

#endif
