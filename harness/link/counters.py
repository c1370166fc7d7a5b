"""The link's counters: what each direction did, as the C link writes them to link-stats.json."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.records import known_fields

DROP_REASONS = ("loss", "gemodel", "droplist", "queue", "unreachable", "device-full", "air")  # air: medium=shared


@dataclass(frozen=True)
class DirectionCounters:
    """What one direction of the link did."""

    frames_in: int = 0
    bytes_in: int = 0
    frames_out: int = 0
    bytes_out: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    queue_hwm_pkts: int = 0
    queue_hwm_bytes: int = 0
    in_flight: int = 0  # admitted but not yet delivered when the counters were written
    # how late frames left the link against their schedule (board us in device time), not counting the
    # time the receiver could not take them: the link, or the board's clock it follows, falling behind
    late_us_mean: float = 0.0
    late_us_max: float = 0.0
    late_over_100us: int = 0
    overflow: str = "hold"  # what the link did with a frame the receiver could not take
    out_sndbuf_bytes: int = 0  # SO_SNDBUF of the socket toward the receiver, as the kernel kept it
    sock_frames: int = 0  # full-size frames that socket holds unread (0: not limited by SO_SNDBUF)
    # the shared medium (0 on a wire): the time its turns took the channel (board seconds, access to
    # block ack), the turns (TXOPs) and the MPDUs sent again after a frame error
    airtime_s: float = 0.0
    txops: int = 0
    air_retries: int = 0
    # the WiFi chip's host bus (0 without one): the board seconds its finished transfers of this direction took,
    # those transfers, and the most frames of this direction that waited for it at once
    bus_s: float = 0.0
    bus_transfers: int = 0
    bus_queue_hwm_pkts: int = 0
    # the frames read from this direction's input with the kernel's time of their arrival (a socket's receive
    # stamp, or the time the peer's kernel sent them into the tap), and those given the time the link read them
    # (no stamp the link could use): a busy host that wakes the link late delays only the second kind
    arrivals_kernel_stamped: int = 0
    arrivals_stamped_on_read: int = 0

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DirectionCounters:
        values = known_fields(cls, data)
        values["dropped"] = {reason: int(data.get("dropped", {}).get(reason, 0)) for reason in DROP_REASONS}
        return cls(**values)


@dataclass(frozen=True)
class BoardClockCounters:
    """How the board's own clock went against wall / D, as the link saw its ticks (device time with
    the link following the board; see harness/link/c/clock.h, "the board's clock")."""

    ticks: int = 0                    # board milliseconds reported
    board_s: float = 0.0              # the board's time from its first tick to its last
    wall_s: float = 0.0               # the wall time over the same ticks
    effective_dilation: float = 0.0   # wall seconds per board second, as it came out
    max_lag_ms: float = 0.0           # the most the board fell behind wall / D (board ms)
    # the longest the board sent no tick, in wall ms: a board stopped this long stops its ACKs, while the
    # peer's retransmission timer (Linux's minimum 200 ms) runs on the wall clock
    max_tick_gap_wall_ms: float = 0.0
    # the longest gaps of 50 ms or more (at most 64 kept), as (CLOCK_MONOTONIC s at their start, wall ms),
    # in time order, and how many there were in all
    stalls: tuple[tuple[float, float], ...] = ()
    stalls_seen: int = 0

    def longest_stall_ms(self, start: float, end: float) -> float:
        """The longest wall ms the board sent no tick within [start, end] (time.monotonic() seconds)."""
        within = [min(at + ms / 1000, end) - max(at, start) for at, ms in self.stalls]
        return round(max([w for w in within if w > 0], default=0.0) * 1000, 3)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BoardClockCounters:
        values = known_fields(cls, data)
        values["stalls"] = tuple((float(at), float(ms)) for at, ms in data.get("stalls", ()))
        return cls(**values)


@dataclass(frozen=True)
class LinkCounters:
    """The link's stats file: both directions and the elapsed time."""

    to_device: DirectionCounters
    to_peer: DirectionCounters
    elapsed_s: float
    final: bool = True
    snapshot: int = 0
    spin_s: float = 0.0  # CPU time spent spinning before deadlines
    capture_stalls: int = 0  # times the link waited for the disk (capture backlog over 256 MiB)
    board_clock: BoardClockCounters | None = None  # None: the link ran open loop (wall / D)
    medium: str = "wire"  # "shared": both directions took turns on one channel
    txops_per_s: float = 0.0  # the shared medium's turns (both directions) per second

    @property
    def total_frames_in(self) -> int:
        return self.to_device.frames_in + self.to_peer.frames_in

    @property
    def total_frames_out(self) -> int:
        return self.to_device.frames_out + self.to_peer.frames_out

    @property
    def total_bytes_out(self) -> int:
        return self.to_device.bytes_out + self.to_peer.bytes_out

    @property
    def total_dropped(self) -> int:
        return self.to_device.dropped_total + self.to_peer.dropped_total

    @property
    def late_s_total(self) -> float:
        """How late, in all, every frame left the link against its schedule, both ways (its counters keep the
        mean; in board seconds in device time)."""
        return sum(d.late_us_mean * d.frames_out for d in (self.to_device, self.to_peer)) / 1e6

    @property
    def late_ms_max(self) -> float:
        """The latest any frame left the link against its schedule, either way (board ms in device time)."""
        return max(self.to_device.late_us_max, self.to_peer.late_us_max) / 1000

    @property
    def dropped(self) -> dict[str, int]:
        """Drops of both directions by reason."""
        return {r: self.to_device.dropped.get(r, 0) + self.to_peer.dropped.get(r, 0) for r in DROP_REASONS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinkCounters:
        return cls(
            to_device=DirectionCounters.from_dict(data["to_device"]),
            to_peer=DirectionCounters.from_dict(data["to_peer"]),
            elapsed_s=float(data["elapsed_s"]),
            final=bool(data.get("final", True)),
            snapshot=int(data.get("snapshot", 0)),
            spin_s=float(data.get("spin_s", 0.0)),
            capture_stalls=int(data.get("capture_stalls", 0)),
            board_clock=BoardClockCounters.from_dict(data["board_clock"]) if "board_clock" in data else None,
            medium=str(data.get("medium", "wire")),
            txops_per_s=float(data.get("txops_per_s", 0.0)),
        )

    @classmethod
    def from_file(cls, path: Path) -> LinkCounters:
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise NetreproError(
                f"cannot read the link's stats {path}: {exc}", "see link.log next to it"
            ) from exc

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
