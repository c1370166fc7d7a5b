/* The capture and the drops log: see capture.h. */
#define _GNU_SOURCE
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"

void capture_init(struct capture *cap, const struct link_time *time)
{
    memset(cap, 0, sizeof(*cap));
    cap->time = time;
    cap->snaplen = 262144;
    cap->max_chunks = 256;
}



static void *afile_writer(void *arg)
{
    struct afile *f = arg;
    pthread_mutex_lock(&f->m);
    for (;;) {
        /* with a hold, the disk stays untouched until the backlog passes it or we close */
        while (!f->closing && (!f->q_head || f->queued <= f->hold_chunks))
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

static struct afile *afile_open(struct capture *cap, const char *path, const char *what)
{
    struct afile *f = calloc(1, sizeof(*f));
    if (!f)
        die("out of memory");
    f->path = path;
    f->max_chunks = cap->max_chunks;
    f->hold_chunks = cap->hold_chunks;
    f->dirty = &cap->dirty;
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
            if (!f->free && f->nchunks >= f->max_chunks) {
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
    *f->dirty = 1;
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

void pcap_open(struct capture *cap, const char *path)
{
    cap->pcap = afile_open(cap, path, "capture");
    /* magic, version 2.4 (two uint16), thiszone, sigfigs, snaplen, LINKTYPE_ETHERNET; native byte order */
    uint32_t hdr[6] = {0xa1b23c4d, 0, 0, 0, cap->snaplen, 1};
    uint16_t ver[2] = {2, 4};
    memcpy(&hdr[1], ver, 4);
    afile_write(cap->pcap, hdr, sizeof(hdr));
}


static void pcap_emit(struct capture *cap, const struct pcap_record *r)
{
    ns_t w = wall_of(cap->time, r->t);
    uint32_t incl = r->len < cap->snaplen ? r->len : cap->snaplen;
    uint32_t rec[4] = {(uint32_t)(w / NS_PER_S), (uint32_t)(w % NS_PER_S), incl, r->len};
    afile_write(cap->pcap, rec, sizeof(rec));
    afile_write(cap->pcap, r->data, incl);
    cap->written = r->t;
}

/* write every waiting record stamped at or before `upto` */
void pcap_release(struct capture *cap, ns_t upto)
{
    while (cap->pend_head < cap->pend_n && cap->pend[cap->pend_head]->t <= upto) {
        pcap_emit(cap, cap->pend[cap->pend_head]);
        free(cap->pend[cap->pend_head++]);
    }
    if (cap->pend_head == cap->pend_n)
        cap->pend_head = cap->pend_n = 0;
}

void pcap_write(struct capture *cap, ns_t mono, const uint8_t *data, uint32_t len)
{
    if (!cap->pcap)
        return;
    if (mono < cap->written)
        mono = cap->written; /* older than the hold: it can only join the end of what is written */
    if (cap->pend_n == cap->pend_cap) {
        if (cap->pend_head) { /* reuse the room of what was written */
            memmove(cap->pend, cap->pend + cap->pend_head, (cap->pend_n - cap->pend_head) * sizeof(*cap->pend));
            cap->pend_n -= cap->pend_head;
            cap->pend_head = 0;
        }
        if (cap->pend_n == cap->pend_cap) {
            cap->pend_cap = cap->pend_cap ? 2 * cap->pend_cap : 4096;
            cap->pend = xrealloc(cap->pend, cap->pend_cap * sizeof(*cap->pend));
        }
    }
    struct pcap_record *r = xmalloc(sizeof(*r) + len);
    r->t = mono;
    r->len = len;
    memcpy(r->data, data, len);
    size_t i = cap->pend_n++;
    while (i > cap->pend_head && cap->pend[i - 1]->t > mono) { /* almost always in order: a step or two */
        cap->pend[i] = cap->pend[i - 1];
        i--;
    }
    cap->pend[i] = r;
    pcap_release(cap, cap->pend[cap->pend_n - 1]->t - PCAP_HOLD_NS);
}

void drops_write(struct capture *cap, ns_t mono, int dir, int reason, uint64_t n, const uint8_t *data, uint32_t len)
{
    if (!cap->drops)
        return;
    struct pinfo p;
    char summary[256], line[512];
    parse_frame(data, len, &p);
    summarize(&p, len, summary, sizeof(summary));
    ns_t w = wall_of(cap->time, mono);
    int k = snprintf(line, sizeof(line),
                     "{\"t\": %" PRId64 ".%09" PRId64 ", \"dir\": \"%s\", \"reason\": \"%s\", \"frame\": %" PRIu64
                     ", \"len\": %" PRIu32 ", \"summary\": \"%s\"}\n",
                     (int64_t)(w / NS_PER_S), (int64_t)(w % NS_PER_S), dir_name[dir], reason_name[reason], n, len,
                     summary);
    afile_write(cap->drops, line, (size_t)k < sizeof(line) ? (size_t)k : sizeof(line) - 1);
}

/* hand what is buffered to the writers (they write it soon, asynchronously); with a hold,
   partial chunks stay until they are full or the link stops */
void files_flush(struct capture *cap)
{
    if (!cap->hold_chunks) {
        afile_flush(cap->pcap);
        afile_flush(cap->drops);
    }
    cap->dirty = 0;
}


void drops_open(struct capture *cap, const char *path) { cap->drops = afile_open(cap, path, "drops log"); }

/* the capture's last records, then both files: waits until everything is on disk (in the page cache) */
void capture_close(struct capture *cap)
{
    pcap_release(cap, INT64_MAX);
    afile_close(cap->pcap);
    afile_close(cap->drops);
}

/* how often the loop waited for the disk */
uint64_t capture_stalls(const struct capture *cap)
{
    return (cap->pcap ? cap->pcap->stalls : 0) + (cap->drops ? cap->drops->stalls : 0);
}
