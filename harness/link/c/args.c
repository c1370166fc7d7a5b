/* The command line: see args.h. */
#define _GNU_SOURCE
#include "args.h"
#include "capture.h"

#include <stdio.h>
#include <string.h>

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
         "                     [--capture-at device|peer|both] (the side of the link the capture is taken\n"
         "                                           at; default device)\n"
         "                     [--no-defer] [--hold-capture-mib N] [--die-with-parent] [--LINK-WIDE-KEY VALUE]");
    printf("link-wide keys:%s\n"
           "SPEC: key=value,key=value,... (a list continues after a comma: drop=data:3,syn:1) with the keys:\n"
           "     %s\n"
           "Values in plain units (seconds, bit/s, bytes, fractions); harness/link/settings.py describes each.\n"
           "Prints READY when the sockets are bound; SIGTERM/SIGINT stop it (stats written), SIGUSR1 writes stats.\n",
           link_keys, dir_keys);
}


static void args_defaults(struct args *a)
{
    memset(a, 0, sizeof(*a));
    a->spec_dev = a->spec_peer = "";
    a->spin_max = 100000;
    a->budget = 0.15;
    a->defer = 1;
    a->max_chunks = 256;
    a->dilation = 1.0;
    a->clock_per_ms = 1.0;
    a->max_inflight = 100000;
    a->snaplen = 262144;
    a->capture_sides = CAPTURE_DEVICE;
    link_defaults(&a->lc);
}

#define FLAG(s) (!strcmp(name, s))

/* an option that names a file, a socket or a device, or gives a direction's settings: 0 if name is none */
static int path_option(struct args *a, const char *name, const char *val)
{
    if (FLAG("--device-sock"))
        a->device_sock = val;
    else if (FLAG("--device-remote"))
        a->device_remote = val;
    else if (FLAG("--peer-sock"))
        a->peer_sock = val;
    else if (FLAG("--peer-remote"))
        a->peer_remote = val;
    else if (FLAG("--tap"))
        a->tap = val;
    else if (FLAG("--tap-addr"))
        a->tap_addr = val;
    else if (FLAG("--to-device"))
        a->spec_dev = val;
    else if (FLAG("--to-peer"))
        a->spec_peer = val;
    else if (FLAG("--pcap"))
        a->pcap_path = val;
    else if (FLAG("--drops"))
        a->drops_path = val;
    else if (FLAG("--stats"))
        a->stats_path = val;
    else if (FLAG("--board-clock"))
        a->clock_path = val;
    else
        return 0;
    return 1;
}

/* an option of the process: how it runs, and its priority; 0 if name is none */
static int process_option(struct args *a, const char *name, const char *val)
{
    uint64_t tmp;
    double d;
    if (FLAG("--tap-mtu")) {
        if (parse_u64(val, &tmp) || tmp < 68 || tmp > 65535)
            usage_error("--tap-mtu: bad value '%s'", val);
        a->tap_mtu = (int)tmp;
    } else if (FLAG("--capture-at")) {
        if (strcmp(val, "device") && strcmp(val, "peer") && strcmp(val, "both"))
            usage_error("--capture-at: bad value '%s' (device, peer or both)", val);
        a->capture_sides = !strcmp(val, "device") ? CAPTURE_DEVICE
                           : !strcmp(val, "peer") ? CAPTURE_PEER : CAPTURE_DEVICE | CAPTURE_PEER;
    } else if (FLAG("--spin-us")) {
        if (parse_double(val, &d) || d < 0 || d > 10000)
            usage_error("--spin-us: bad value '%s'", val);
        a->spin_max = (ns_t)(d * 1000);
    } else if (FLAG("--spin-budget")) {
        if (parse_double(val, &a->budget) || a->budget < 0 || a->budget > 1)
            usage_error("--spin-budget: bad value '%s' (a fraction 0..1)", val);
    } else if (FLAG("--rt-priority")) {
        if (parse_u64(val, &tmp) || tmp < 1 || tmp > 99)
            usage_error("--rt-priority: bad value '%s' (1..99)", val);
        a->rt_prio = (int)tmp;
    } else if (FLAG("--nice")) {
        if (parse_double(val, &d) || d < -20 || d > 19 || d != (int)d)
            usage_error("--nice: bad value '%s' (-20..19)", val);
        a->nice_level = (int)d;
        a->nice_set = 1;
    } else {
        return 0;
    }
    return 1;
}

/* an option of the link's time and its buffers; 0 if name is none */
static int link_option(struct args *a, const char *name, const char *val)
{
    uint64_t tmp;
    if (FLAG("--hold-capture-mib")) {
        if (parse_u64(val, &tmp) || tmp > 65536)
            usage_error("--hold-capture-mib: bad value '%s' (0..65536)", val);
        a->hold_chunks = (size_t)tmp;
        if (a->max_chunks < a->hold_chunks + 64)
            a->max_chunks = a->hold_chunks + 64;
    } else if (FLAG("--dilation")) {
        if (parse_double(val, &a->dilation) || !(a->dilation >= 0.001 && a->dilation <= 1000))
            usage_error("--dilation: bad value '%s' (wall seconds per board second, 0.001..1000)", val);
    } else if (FLAG("--board-clock-per-ms")) {
        if (parse_double(val, &a->clock_per_ms) || !(a->clock_per_ms >= 1 && a->clock_per_ms <= 1000))
            usage_error("--board-clock-per-ms: bad value '%s' (ticks a board ms, 1..1000)", val);
    } else if (FLAG("--max-inflight")) {
        if (parse_u64(val, &a->max_inflight) || a->max_inflight == 0)
            usage_error("--max-inflight: bad value '%s'", val);
    } else if (!strncmp(name, "--", 2) && link_setting(&a->lc, name, name + 2, val)) {
        return 1;
    } else {
        return 0;
    }
    return 1;
}

/* what was given fits together; the directions' settings */
static void args_check(struct args *a)
{
    if (a->lc.snaplen)
        a->snaplen = (uint32_t)a->lc.snaplen;
    if (!a->device_sock || !a->device_remote)
        usage_error("--device-sock and --device-remote are required");
    if (!a->tap == !(a->peer_sock || a->peer_remote))
        usage_error("give either --tap or --peer-sock with --peer-remote");
    if (!a->tap && !(a->peer_sock && a->peer_remote))
        usage_error("--peer-sock and --peer-remote go together");
    if ((a->tap_addr || a->tap_mtu) && !a->tap)
        usage_error("--tap-addr/--tap-mtu need --tap");

    parse_dir_spec("--to-device", a->spec_dev, &a->conf[TO_DEVICE]);
    parse_dir_spec("--to-peer", a->spec_peer, &a->conf[TO_PEER]);
    if (!strcmp(a->conf[TO_PEER].overflow, "drop"))
        usage_error("--to-peer: overflow=drop is for --to-device (the device's NIC ring)");
}

/* the command line into a; a bad one ends the process (exit 2).  1: --help was asked for (and printed) */
int args_parse(struct args *a, int argc, char **argv)
{
    args_defaults(a);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *val = NULL;
        char name[64];
        const char *eq = strchr(arg, '=');
        if (!strncmp(arg, "--", 2) && eq) {
            snprintf(name, sizeof(name), "%.*s", (int)(eq - arg), arg);
            val = eq + 1;
        } else {
            snprintf(name, sizeof(name), "%s", arg);
        }
        if (FLAG("--help") || FLAG("-h")) {
            help();
            return 1;
        } else if (FLAG("--die-with-parent")) {
            a->die_with_parent = 1;
            continue;
        } else if (FLAG("--no-defer")) {
            a->defer = 0;
            continue;
        }
        if (!val) {
            if (i + 1 >= argc)
                usage_error("option %s needs a value", name);
            val = argv[++i];
        }
        if (!path_option(a, name, val) && !process_option(a, name, val) && !link_option(a, name, val))
            usage_error("unknown option %s", name);
    }
    args_check(a);
    return 0;
}
