"""What a run records of its capture's analysis: ``AnalysisSummary``, the ``analysis`` object of result.json.

Field names are the JSON keys, so ``summary.device_window.median`` reads what
``result["analysis"]["device_window"]["median"]`` holds. ``as_dict()`` gives the JSON object
(the same keys, nesting and rounding as ever); ``from_dict()`` reads one back, also one written
by an older netrepro: missing keys take their defaults, unknown keys are ignored. Values are
kept as read (no type conversion), so a summary read back writes the same JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.analysis.sides import PerSide
from harness.core.records import known_fields

_UNKNOWN: PerSide[Any] = PerSide(None, None)
_NONE_COUNTED: PerSide[Any] = PerSide(0, 0)


def _known(cls: type, data: Mapping[str, Any] | None) -> dict[str, Any]:
    """The entries of data that are fields of cls, lists as tuples (the dataclasses are frozen)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in known_fields(cls, data).items()}


@dataclass(frozen=True)
class WindowSummary:
    """One side's advertised window over its ACKs (bytes, scaled)."""

    min: int | None = None
    median: float | None = None
    max: int | None = None
    count: int = 0
    unknown_scale: bool = False   # the SYN was not captured: values are as sent

    def as_dict(self) -> dict[str, Any]:
        return {"min": self.min, "median": self.median, "max": self.max, "count": self.count,
                "unknown_scale": self.unknown_scale}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> WindowSummary:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class InFlightSummary:
    """Bytes in flight in the sender's view, and how they were estimated.

    Without a data direction there are no figures: the JSON object then holds the source only.
    """

    min: int | None = None
    median: float | None = None
    p95: float | None = None
    max: int | None = None
    source: str = ""

    def as_dict(self) -> dict[str, Any]:
        if not self.source:
            return {"source": self.source}
        return {"min": self.min, "median": self.median, "p95": self.p95, "max": self.max, "source": self.source}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> InFlightSummary:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class IdleSummary:
    """The sender's pauses (gaps between its data segments at least ``threshold_ms`` long)."""

    gaps: int = 0
    total_s: float | None = 0
    longest_s: float | None = None
    threshold_ms: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"gaps": self.gaps, "total_s": self.total_s, "longest_s": self.longest_s,
                "threshold_ms": self.threshold_ms}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> IdleSummary:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class PauseSharesSummary:
    """Shares of the sending time: back to back, paused at the window, waiting for ACKs, paused by itself."""

    busy: float = 0.0
    window: float = 0.0
    ack_wait: float = 0.0
    sender_paced: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"busy": self.busy, "window": self.window, "ack_wait": self.ack_wait,
                "sender_paced": self.sender_paced}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> PauseSharesSummary | None:
        return cls(**_known(cls, data)) if data else None


_ABSENT_IF_NONE = {"optional": True}  # an evidence entry only some verdicts look at: no key when None


@dataclass(frozen=True)
class Evidence:
    """What the facts and the verdict rest on, beyond the summary's other fields."""

    data_wire_bytes: int | None = None                # the data direction's frames on the wire
    window_release_ms: float | None = field(default=None, metadata=_ABSENT_IF_NONE)
    goodput_from: str | None = None                   # first arrivals, or the receiver's ACKs
    steady_goodput_mbps: float | None = None          # median per interval inside the transfer
    segments_at_window: float | None = None           # share sent with under 2 segments of window left
    zero_window_s: float | None = None
    base_rtt_ms: float | None = None                  # the RTT without a queue
    goodput_mbps: float | None = None
    in_flight_ceiling: int | None = field(default=None, metadata=_ABSENT_IF_NONE)
    in_flight_flat: bool | None = field(default=None, metadata=_ABSENT_IF_NONE)
    in_flight_slice_peaks: tuple[int, ...] | None = field(default=None, metadata=_ABSENT_IF_NONE)
    goodput_per_ceiling_rtt: float | None = field(default=None, metadata=_ABSENT_IF_NONE)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("optional"):
                continue
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Evidence | None:
        return cls(**_known(cls, data)) if data else None


@dataclass(frozen=True)
class ConnectionSummary:
    """The analysed connection as the capture's list of connections shows it."""

    stream: int = 0
    a: str = ""                   # the client (sent the SYN), else the first sender
    b: str = ""
    frames: int = 0
    bytes_a_to_b: int = 0
    bytes_b_to_a: int = 0
    start_s: float = 0.0
    duration_s: float = 0.0
    syn_seen: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ConnectionSummary | None:
        return cls(**_known(cls, data)) if data else None


# how from_dict reads the nested objects (each class's from_dict accepts None and {})
_NESTED: dict[str, Any] = {
    "window_scale": PerSide.from_dict, "sack_permitted": PerSide.from_dict, "syn_window": PerSide.from_dict,
    "timestamps": PerSide.from_dict, "dup_acks": PerSide.from_dict, "zero_windows": PerSide.from_dict,
    "segments_per_ack": PerSide.from_dict, "device_window": WindowSummary.from_dict,
    "peer_window": WindowSummary.from_dict, "in_flight": InFlightSummary.from_dict, "idle": IdleSummary.from_dict,
    "pause_shares": PauseSharesSummary.from_dict, "evidence": Evidence.from_dict,
    "connection": ConnectionSummary.from_dict,
}


@dataclass(frozen=True)
class AnalysisSummary:
    """A capture's analysis as a run records it (see the module's docstring). Sides are "device" and "peer";
    times in seconds unless the name says ms, windows and in flight in bytes, rates in Mbit/s."""

    capture: str = ""
    frames: int = 0
    tcp_frames: int = 0
    connections: int = 0
    conn: int | None = None
    conn_chosen_by: str = ""
    empty_reason: str | None = None
    device: str | None = None
    peer: str | None = None
    device_identified_by: str = ""
    capture_near: str | None = None
    data_direction: str | None = None
    syn_seen: bool = False
    device_mss: int | None = None
    peer_mss: int | None = None
    mss_used: int | None = None
    window_scale: PerSide[int | None] = _UNKNOWN
    window_scaling: str = "unknown"
    sack_permitted: PerSide[bool | None] = _UNKNOWN
    syn_window: PerSide[int | None] = _UNKNOWN
    timestamps: PerSide[bool | None] = _UNKNOWN
    device_window: WindowSummary = WindowSummary()
    peer_window: WindowSummary = WindowSummary()
    in_flight: InFlightSummary = InFlightSummary()
    rtt_ms: float | None = None
    rtt_source: str = ""
    rtt_samples: int = 0
    initial_rtt_ms: float | None = None
    goodput_mbps: float | None = None
    goodput_interval_s: float = 1.0
    goodput_per_interval_mbps: tuple[float | None, ...] = ()
    payload_bytes: int = 0
    retransmitted_bytes: int = 0
    transfer_s: float | None = None
    duration_s: float | None = None
    retransmissions: int = 0
    fast_retransmissions: int = 0
    spurious_retransmissions: int = 0
    rto_retransmissions: int = 0
    rto_stall_s: float | None = 0.0
    dup_acks: PerSide[int | None] = _NONE_COUNTED
    zero_windows: PerSide[int | None] = _NONE_COUNTED
    window_full: int = 0
    out_of_order: int = 0
    lost_segments: int = 0
    segments_per_ack: PerSide[float | None] = _UNKNOWN
    idle: IdleSummary = IdleSummary()
    pause_shares: PauseSharesSummary | None = None   # None: no data direction ({} in JSON)
    truncated_frames: int = 0
    snaplen: int | None = None
    link_rate_mbps: float | None = None
    link_payload_mbps: float | None = None
    window_bound_mbps: float | None = None
    bound_mbps: float | None = None
    verdict: str = "unknown"
    verdict_reason: str = ""
    evidence: Evidence | None = None                 # None: no data direction ({} in JSON)
    warnings: tuple[str, ...] = ()
    connection: ConnectionSummary | None = None      # None: no connection (no key in JSON)

    def as_dict(self) -> dict[str, Any]:
        """The JSON-able ``analysis`` object of a run's result."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.name in ("pause_shares", "evidence"):
                out[f.name] = {}
            elif value is None and f.name == "connection":
                continue
            elif isinstance(value, tuple):
                out[f.name] = list(value)
            elif hasattr(value, "as_dict"):
                out[f.name] = value.as_dict()
            else:
                out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnalysisSummary:
        """A summary from as_dict()'s output, e.g. result.json's ``analysis``."""
        values = _known(cls, data)
        for name, read in _NESTED.items():
            if name in values:
                values[name] = read(data[name])
        return cls(**values)
