/* Utilities: see util.h. */
#define _GNU_SOURCE
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ns_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ns_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* the wall clock and the monotonic clock at one instant: the monotonic reading is the middle of the
 * tightest of `tries` reads around the wall clock's, so that a preemption between two reads does not
 * shift what is derived from the pair (a stamp must never read earlier than the send it records) */
ns_t clock_pair(struct timespec *rt, int tries)
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

/* Both exits print the same way; only the tail and the status tell a usage error from a failure. */
static void say(const char *fmt, va_list ap, const char *tail)
{
    fputs("netrepro-link: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(tail, stderr);
}

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(fmt, ap, "\n");
    va_end(ap);
    exit(1);
}

void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say(fmt, ap, " (see --help)\n");
    va_end(ap);
    exit(2);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        die("out of memory (%zu bytes)", n);
    return p;
}

/* A full ring of `n` elements of `size` bytes, `head` its first, made twice as large (1024 at first) and
   unrolled so that its first element is at 0: the new buffer; *cap and *head follow. */
void *ring_grow(void *ring, size_t size, size_t n, size_t *cap, size_t *head)
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

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p)
        die("out of memory (%zu bytes)", n);
    return p;
}

/* ------------------------------------------------------------------ PRNG: xoshiro256**, seeded by splitmix64 */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rng_seed(struct rng *r, uint64_t seed, unsigned dir, unsigned stream)
{
    uint64_t x = seed ^ (0xd1b54a32d192ed03ULL * (1 + dir * 16 + stream));
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next(struct rng *r)
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
double rng_unit(struct rng *r) { return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }
