/*
 * Stats: the counters of both directions, the board's clock, the air and the bus, written as one JSON
 * object (atomically: a temporary file renamed into place) on SIGUSR1 and when the link stops.
 */
#ifndef NR_STATS_H
#define NR_STATS_H

#include "util.h"

struct link;

void stats_write(struct link *L, ns_t now, int final);

#endif
