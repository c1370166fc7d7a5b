/*
 * The command line: every option of netrepro-link, checked, with the settings of each direction
 * (--to-device/--to-peer key=value,...) and the link-wide ones (--key value), and --help.
 */
#ifndef NR_ARGS_H
#define NR_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "settings.h"
#include "util.h"

struct args {
    const char *device_sock, *device_remote, *peer_sock, *peer_remote, *tap, *tap_addr;
    const char *pcap_path, *drops_path, *stats_path, *clock_path;
    const char *spec_dev, *spec_peer;
    int tap_mtu, die_with_parent, nice_level, nice_set, rt_prio;
    int capture_sides;   /* --capture-at: CAPTURE_DEVICE (the default), CAPTURE_PEER or both (capture.h) */
    int defer;           /* 0: --no-defer */
    ns_t spin_max;       /* --spin-us, in ns */
    double budget;       /* --spin-budget */
    size_t hold_chunks;  /* --hold-capture-mib: chunks kept in memory until exit */
    size_t max_chunks;   /* chunks a file may take before the loop waits for the disk */
    double dilation;     /* --dilation */
    double clock_per_ms; /* --board-clock-per-ms */
    uint64_t max_inflight;
    uint32_t snaplen;
    struct link_conf lc; /* the link-wide settings: --seed, --snaplen, the medium's */
    struct dir_conf conf[NDIR];
};

int args_parse(struct args *a, int argc, char **argv);

#endif
