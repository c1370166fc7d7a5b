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

#include "clock.h"
#include "util.h"

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

ssize_t recv_stamped(struct link_time *lt, int fd, uint8_t *buf, size_t cap, ns_t *arrival);
void endpoint_unix(struct endpoint *e, const char *what, const char *local, const char *remote,
                   const char *opt_local, const char *opt_remote);
void endpoint_tap(struct endpoint *e, const char *name, const char *cidr, int mtu);
void endpoint_limit_frames(struct endpoint *e, int frames);
void endpoint_try_connect(struct endpoint *e, ns_t now);
int endpoint_send(struct endpoint *e, const uint8_t *data, uint32_t len, ns_t now);

#endif
