/*
 * The capture and the drops log: a pcap of what crosses one side of the link (held briefly to write it
 * in time order) and a JSON line for every dropped frame, each file written by a thread of its own.
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
 *   both: each frame at each side, as above, in one file (each frame twice, each copy stamped
 *     where it was): the link's own times of a frame's passage, for timing a ping through it.
 */
#define CAPTURE_DEVICE 1 /* the sides a capture is taken at (--capture-at), a bit each */
#define CAPTURE_PEER 2
#ifndef NR_CAPTURE_H
#define NR_CAPTURE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "util.h"

/*
 * Output files written by a thread of their own (at normal priority), so that disk I/O
 * never holds up the timing loop: the loop copies records into 1 MiB chunks and hands
 * full ones over.  Nothing is ever dropped: if the disk falls 256 MiB behind, the loop
 * waits (and counts it).  In a VM, even asynchronous disk writes can stall the vCPUs for
 * milliseconds, so --hold-capture-mib N keeps up to N MiB per file in memory and writes
 * them when the link stops (beyond N it writes as it goes).
 */
#define CHUNK_BYTES (1u << 20)

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
    size_t max_chunks;  /* the most chunks it may take before the loop waits */
    size_t hold_chunks; /* --hold-capture-mib: chunks kept in memory until exit */
    int *dirty;         /* set when something was written (the capture's flag) */
};

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

struct capture {
    const struct link_time *time;
    struct afile *pcap, *drops;
    uint32_t snaplen;
    int dirty;           /* written since the last flush */
    size_t max_chunks;   /* per file: beyond them the loop waits for the disk */
    size_t hold_chunks;  /* --hold-capture-mib: chunks kept in memory until exit */
    struct pcap_record **pend;
    size_t pend_head, pend_n, pend_cap; /* pend[pend_head .. pend_n) wait, in time order */
    ns_t written;                       /* the stamp of the last record written */
    int sides;                          /* --capture-at: CAPTURE_DEVICE, CAPTURE_PEER or both */
};

void capture_init(struct capture *cap, const struct link_time *time);
void pcap_open(struct capture *cap, const char *path);
void drops_open(struct capture *cap, const char *path);
void pcap_write(struct capture *cap, ns_t mono, const uint8_t *data, uint32_t len);
void pcap_release(struct capture *cap, ns_t upto);
void drops_write(struct capture *cap, ns_t mono, int dir, int reason, uint64_t n, const uint8_t *data, uint32_t len);
void files_flush(struct capture *cap);
void capture_close(struct capture *cap);
uint64_t capture_stalls(const struct capture *cap);

#endif
