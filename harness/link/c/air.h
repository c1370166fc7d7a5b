/*
 * The shared medium (medium=shared): the two directions' turns on one radio channel, 802.11 DCF with
 * A-MPDU aggregation and block acks, in place of each direction's rate stage.
 *
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
#ifndef NR_AIR_H
#define NR_AIR_H

#include <stdint.h>

#include "dir.h"
#include "settings.h"
#include "util.h"

struct link;

#define AIR_WINDOW 64

struct medium {
    int on;
    double access_ns, preamble_ns, ext_ns, sifs_ns, ba_ns, agg_time_ns, ns_per_byte, fer;
    uint64_t overhead, agg_frames, agg_bytes, retry_limit;
    double free_at; /* link time the channel is free again */
    int last;       /* the direction of the last turn (-1: none yet) */
    struct dir *dirs;
};

void air_init(struct medium *air, const struct link_conf *lc, struct dir *dirs, double dilation);
void air_admit(struct dir *d, struct frame *f);
void air_advance(struct link *L, ns_t t);
ns_t air_deadline(const struct medium *air);

#endif
