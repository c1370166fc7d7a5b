"""The two ends of a connection, "device" and "peer", and a value for each."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

SIDES = ("device", "peer")

T = TypeVar("T")


def other_side(side: str) -> str:
    return "peer" if side == "device" else "device"


@dataclass(frozen=True)
class PerSide(Generic[T]):
    """One value for the device and one for the peer (a JSON object {"device": ..., "peer": ...})."""

    device: T
    peer: T

    def __getitem__(self, side: str) -> T:
        if side not in SIDES:
            raise KeyError(side)
        return self.device if side == "device" else self.peer

    def as_dict(self) -> dict[str, T]:
        return {"device": self.device, "peer": self.peer}

    def map(self, f: Callable[[T], Any]) -> PerSide[Any]:
        return PerSide(f(self.device), f(self.peer))

    @classmethod
    def of(cls, f: Callable[[str], T]) -> PerSide[T]:
        """f(side) for each side."""
        return cls(f("device"), f("peer"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> PerSide[Any]:
        data = data or {}
        return cls(data.get("device"), data.get("peer"))
