"""Series kept for the plots, bounded: a long capture keeps at most ``LIMIT`` points of each.

Every figure (counts, bytes, medians, percentiles) is computed on the whole series before it is
thinned; what is kept is only what the plots draw. A series longer than ``LIMIT`` keeps every
k-th point, its last point, and up to ``LIMIT / 2`` points the caller marks as wanted (the
retransmissions, the time the plot's zoom shows). Delivered bytes are summed over the points
dropped, so the goodput curve drawn from them keeps every byte.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

LIMIT = 20_000  # points per series at most

T = TypeVar("T")


def thin(points: Sequence[T], keep: Callable[[T], bool] | None = None, limit: int = LIMIT) -> tuple[T, ...]:
    """The series, or every k-th point of it, its last, and up to limit/2 points `keep` wants."""
    n = len(points)
    if n <= limit:
        return tuple(points)
    wanted = limit // 2 if keep is not None else 0
    stride = math.ceil(n / (limit - wanted - 1))
    out = []
    for i, p in enumerate(points):
        if i % stride == 0 or i == n - 1:
            out.append(p)
        elif wanted and keep is not None and keep(p):
            out.append(p)
            wanted -= 1
    return tuple(out)


def thin_sum(points: Sequence[tuple[float, int]], limit: int = LIMIT) -> tuple[tuple[float, int], ...]:
    """(time, bytes) points merged in runs: each kept point carries the bytes of the run it starts."""
    n = len(points)
    if n <= limit:
        return tuple(points)
    stride = math.ceil(n / limit)
    return tuple((points[i][0], sum(b for _, b in points[i:i + stride])) for i in range(0, n, stride))
