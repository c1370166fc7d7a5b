"""Small numeric and wording helpers shared by the facts, the verdict and the summary."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def percentile(values: Sequence[float], q: float) -> float | None:
    """Percentile q (0..100) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def rounded(x: float | None, digits: int = 3) -> float | None:
    """x rounded for a summary; None stays None."""
    return None if x is None else round(x, digits)


def plural(count: int, word: str) -> str:
    """'1 retransmission', '2 retransmissions'."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def median_of(values: np.ndarray) -> float | int | None:
    """``statistics.median`` of a numpy array, the same number (and type: an int stays an int), without a
    Python object per value."""
    n = len(values)
    if not n:
        return None
    i = n // 2
    if n % 2:
        return np.partition(values, i)[i].item()
    part = np.partition(values, (i - 1, i))
    return (part[i - 1].item() + part[i].item()) / 2


def percentile_of(values: np.ndarray, q: float) -> float | None:
    """``percentile`` of a numpy array: the same interpolation on the same two values."""
    n = len(values)
    if not n:
        return None
    if n == 1:
        return values[0].item()
    pos = (n - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    part = np.partition(values, (lo, hi))
    a, b = part[lo].item(), part[hi].item()
    return a + (b - a) * (pos - lo)
