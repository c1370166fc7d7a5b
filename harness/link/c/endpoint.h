/*
 * The endpoints: the link's two sides, the device's unix datagram socket (QEMU's NIC) and the peer's
 * (a tap device, or a second unix datagram socket for tests): reading a frame with its kernel arrival
 * time, sending one without blocking, and what the socket toward a side may hold unread.
 */
#ifndef NR_ENDPOINT_H
#define NR_ENDPOINT_H

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <stdint.h>

#include "clock.h"
#include "util.h"

/* A tap's frames are read by write(2)'s opposite, which carries no time; a packet socket on the tap sees each frame
 * the kernel sends into it (PACKET_OUTGOING) with the kernel's transmit time, a moment before the frame can be
 * read from the tap.  The link keeps a few of those stamps ahead and gives each frame read the stamp whose
 * head it matches, so a busy host that wakes the link late does not add its lateness to the peer's frames. */
#define TAP_STAMP_SNAP 96 /* bytes of a frame the packet socket keeps: headers up to TCP's options */
#define TAP_STAMPS 64     /* stamps read ahead of the tap, at most */
struct tap_stamp {
    uint32_t len, snap;
    struct timespec ts;
    uint8_t head[TAP_STAMP_SNAP];
};

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
    int stamp_fd;      /* a tap: its packet socket (-1: none, frames are stamped when read) */
    struct tap_stamp *ahead; /* a ring of TAP_STAMPS stamps read from it, not yet matched */
    int ahead_first, ahead_n;
    uint64_t kernel_stamped, read_stamped; /* frames read with the kernel's time, with the time of reading */
};

ssize_t recv_stamped(struct link_time *lt, struct endpoint *e, uint8_t *buf, size_t cap, ns_t *arrival);
void endpoint_unix(struct endpoint *e, const char *what, const char *local, const char *remote,
                   const char *opt_local, const char *opt_remote);
void endpoint_tap(struct endpoint *e, const char *name, const char *cidr, int mtu);
void endpoint_limit_frames(struct endpoint *e, int frames);
void endpoint_try_connect(struct endpoint *e, ns_t now);
int endpoint_send(struct endpoint *e, const uint8_t *data, uint32_t len, ns_t now);

#endif
