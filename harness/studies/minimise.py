"""Delta debugging (Zeller's ddmin): the fewest frames of a reproducer that still reproduce its finding.

Each trial is expensive (a fresh board, the frames replayed, a liveness probe), so the search stops after
`max_trials` and says whether it finished; what it has by then still reproduces.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Minimised(Generic[T]):
    items: list[T]
    trials: int     # how many times `reproduces` ran (cached repeats not counted)
    complete: bool  # False: the trial budget ran out before the search could shrink it further


def ddmin(items: Sequence[T], reproduces: Callable[[list[T]], bool], max_trials: int = 40) -> Minimised[T]:
    """A 1-minimal sublist of items (in their order) for which reproduces() holds, given it holds for all."""
    seen: dict[tuple[int, ...], bool] = {}
    current = list(range(len(items)))
    n = 2

    def test(indices: list[int]) -> bool | None:
        key = tuple(indices)
        if key not in seen:
            if len(seen) >= max_trials:
                return None
            seen[key] = reproduces([items[i] for i in indices])
        return seen[key]

    while len(current) >= 2:
        size = -(-len(current) // n)
        chunks = [current[i:i + size] for i in range(0, len(current), size)]
        candidates = chunks + ([[i for c in chunks if c is not chunk for i in c] for chunk in chunks] if n > 2 else [])
        for candidate in candidates:
            outcome = test(candidate)
            if outcome is None:
                return Minimised([items[i] for i in current], len(seen), False)
            if outcome:
                n = 2 if candidate in chunks else max(n - 1, 2)
                current = candidate
                break
        else:
            if n >= len(current):
                break
            n = min(2 * n, len(current))
    return Minimised([items[i] for i in current], len(seen), True)
