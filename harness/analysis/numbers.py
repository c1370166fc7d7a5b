"""Small numeric and wording helpers shared by the facts, the verdict and the summary."""

from __future__ import annotations

import math
from collections.abc import Sequence


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
