"""The facts of a capture: what each TCP side advertised and did, measured, never judged.

Every fact comes from Wireshark's own TCP dissection (tshark): options, scaled windows, relative
sequence numbers, retransmission/duplicate-ACK/zero-window flags, ACK RTTs, bytes in flight.
This module holds the facts' types; ``flow`` groups, times and counts those fields per side,
``flow_transfer`` does the same for the data direction; ``verdict.judge`` reads the result.

Device and peer. netrepro captures at the device. The device is the endpoint whose address the
caller gives (``device_ip``); without it, the endpoint nearest the capture point, judged by how
quickly each side answers (handshake turn-around, tshark's ACK RTTs), and failing that the
server (the side that answered the SYN). ``device_identified_by`` says which rule decided.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.analysis.capture import Row
from harness.analysis.frames import CaptureFacts, Endpoint, Segment
from harness.analysis.scan import CaptureScan
from harness.analysis.sides import PerSide, other_side
from harness.analysis.transfer import TransferFacts
from harness.core.errors import NetreproError


@dataclass
class WindowStats:
    """Advertised receive window (bytes, scaled) over the ACKs of one side (SYNs and RSTs excluded)."""

    min: int | None = None
    median: float | None = None
    max: int | None = None
    count: int = 0
    unknown_scale: bool = False   # the SYN was not captured: values are as sent, scale unknown
    values: Counter = field(default_factory=Counter, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {"min": self.min, "median": self.median, "max": self.max, "count": self.count,
                "unknown_scale": self.unknown_scale}

    def most_common(self) -> tuple[int | None, int]:
        if not self.values:
            return None, 0
        value, n = self.values.most_common(1)[0]
        return value, n


_UNKNOWN: PerSide[Any] = PerSide(None, None)
_NONE_COUNTED: PerSide[int] = PerSide(0, 0)
_NO_SERIES: PerSide[tuple[Any, ...]] = PerSide((), ())


@dataclass(frozen=True)
class Handshake:
    """The options of the SYN (client) and SYN-ACK (server), per side; None where not captured."""

    syn_seen: bool = False
    mss: PerSide[int | None] = _UNKNOWN
    window_scale: PerSide[int | None] = _UNKNOWN
    sack_permitted: PerSide[bool | None] = _UNKNOWN
    syn_window: PerSide[int | None] = _UNKNOWN
    timestamps: PerSide[bool | None] = _UNKNOWN
    window_scaling: str = "unknown"   # "negotiated", "not negotiated", "unknown (SYN not captured)"


@dataclass(frozen=True)
class ConnectionFacts:
    """One connection, per side: who is who, the handshake, advertised windows, tshark's flags."""

    device: Endpoint | None = None
    peer: Endpoint | None = None
    device_identified_by: str = ""
    capture_near: str | None = None        # "device" or "peer": the endpoint next to the capture point
    sender: str | None = None              # the side that sent most payload
    handshake: Handshake = Handshake()
    initial_rtt_ms: float | None = None
    duration_s: float | None = None        # first to last frame of the connection
    windows: PerSide[WindowStats] = field(default_factory=lambda: PerSide(WindowStats(), WindowStats()))
    window_series: PerSide[tuple[tuple[float, int], ...]] = field(default=_NO_SERIES, repr=False)  # (t, window)
    retransmissions: int = 0               # frames tshark flags as retransmissions (both directions)
    fast_retransmissions: int = 0
    spurious_retransmissions: int = 0
    window_full: int = 0
    out_of_order: int = 0
    lost_segments: int = 0                 # tshark's "previous segment not captured"
    dup_acks: PerSide[int] = _NONE_COUNTED
    zero_windows: PerSide[int] = _NONE_COUNTED
    segments_per_ack: PerSide[float | None] = _UNKNOWN
    empty_reason: str | None = None        # why there is no data direction
    warnings: tuple[str, ...] = ()

    @property
    def receiver(self) -> str | None:
        return None if self.sender is None else other_side(self.sender)

    @property
    def data_direction(self) -> str | None:
        return None if self.sender is None else f"{self.sender}->{other_side(self.sender)}"


# ------------------------------------------------------------------ who is who


def _handshake_vote(syn: Segment, synack: Segment, ack3_t: float) -> tuple[int, str] | None:
    """The handshake's vote for the near end: it answered at once, the far one a round trip later."""
    server_turn, client_turn = synack.t - syn.t, ack3_t - synack.t
    lo, hi = sorted((server_turn, client_turn))
    if hi >= 2 * lo and hi - lo >= 20e-6:
        side = synack.side if server_turn < client_turn else syn.side
        return side, f"handshake: server answered in {server_turn * 1e3:.2f} ms, client in {client_turn * 1e3:.2f} ms"
    return None


def _near_by_votes(votes: list[tuple[int, str]], med: list[float | None]) -> tuple[int | None, str]:
    """The near end from the handshake's vote and each side's median ACK RTT: the end every vote names."""
    if med[0] is not None and med[1] is not None:
        lo, hi = sorted(med)
        if hi >= 2 * lo and hi - lo >= 20e-6:
            side = 0 if med[0] < med[1] else 1
            votes = [*votes, (side, f"ACKs: {med[side] * 1e3:.2f} ms vs {med[1 - side] * 1e3:.2f} ms median")]
    sides = {v[0] for v in votes}
    if len(sides) == 1:
        return votes[0][0], "; ".join(v[1] for v in votes)
    return None, "ambiguous" if votes else "no timing evidence"


def _device_side(ends: list[Endpoint], device_ip: str | None, near: int | None, near_why: str,
                 synack: Segment | None) -> tuple[int, str]:
    if device_ip is not None:
        matches = [i for i in (0, 1) if ends[i].ip == device_ip]
        if not matches:
            raise NetreproError(f"device address {device_ip} is not an endpoint of the connection "
                                f"({ends[0]} <-> {ends[1]})", "give the device's address, or pick the connection "
                                "with --conn")
        return matches[0], f"given (device_ip={device_ip})"
    if near is not None:
        return near, (f"guessed: {ends[near].ip} is next to the capture point ({near_why}); "
                      "pass device_ip to be sure")
    if synack is not None:
        return synack.side, (f"guessed: {ends[synack.side].ip} is the server (answered the SYN); timing was "
                             f"{near_why}; pass device_ip to be sure")
    return 1, (f"guessed: {ends[1].ip} received the connection's first captured frame; "
               "pass device_ip to be sure")


@dataclass(frozen=True)
class _Roles:
    """Which of the two ends (0: source of the first frame) is the device, and which is next to the capture."""

    device: int
    near: int | None
    identified_by: str

    def name(self, index: int) -> str:
        return "device" if index == self.device else "peer"

    def index(self, side: str) -> int:
        return self.device if side == "device" else 1 - self.device


# ------------------------------------------------------------------ per side


def _handshake(syn: Segment | None, synack: Segment | None, roles: _Roles) -> Handshake:
    by_side = {roles.name(s.side): s for s in (syn, synack) if s is not None}

    def option(attribute: str) -> PerSide[Any]:
        return PerSide.of(lambda side: getattr(by_side[side], attribute) if side in by_side else None)

    syn_seen = syn is not None and synack is not None
    window_scale = option("wscale")
    if not syn_seen:
        scaling = "unknown (SYN not captured)"
    elif window_scale.device is not None and window_scale.peer is not None:
        scaling = "negotiated"
    else:
        scaling = "not negotiated"
    return Handshake(syn_seen, option("mss"), window_scale, option("sack"), option("win"), option("ts"), scaling)


def _warnings(roles: _Roles, handshake: Handshake, lost_segments: int) -> tuple[str, ...]:
    out = []
    if roles.near is None:
        out.append("could not tell which endpoint is next to the capture point; assumed the device "
                   "(netrepro captures at the device)")
    if not handshake.syn_seen:
        out.append("the connection's SYN/SYN-ACK were not captured: MSS, window scale, SACK and "
                   "timestamps are unknown, and windows are shown as sent (scale unknown)")
    if lost_segments:
        out.append(f"{lost_segments} gaps where tshark saw a segment missing from the capture "
                   "(not captured, or lost before the capture point)")
    return tuple(out)


# ------------------------------------------------------------------ the capture, measured


@dataclass(frozen=True)
class Bounds:
    """The rates the link and the receiver's window allow the data direction (Mbit/s)."""

    window_bound_mbps: float | None = None   # the receiver's median window per RTT
    link_payload_mbps: float | None = None   # the link's rate less Ethernet's and the headers' share
    bound_mbps: float | None = None          # the lower of the link's rate and window/RTT


def _bounds(window: float | None, transfer: TransferFacts, link_rate_bps: float | None) -> Bounds:
    rtt = transfer.rtt_ms / 1e3 if transfer.rtt_ms else None
    window_bound = window * 8 / rtt / 1e6 if window is not None and rtt else None
    if not link_rate_bps:
        return Bounds(window_bound)
    wire = transfer.data_wire_bytes or 0  # frames of the data direction, with Ethernet's overhead
    efficiency = (transfer.payload_bytes + transfer.retransmitted_bytes) / wire if wire else 1.0
    link_mbps = link_rate_bps / 1e6
    return Bounds(window_bound, link_rate_bps * efficiency / 1e6,
                  min(link_mbps, window_bound) if window_bound else link_mbps)


@dataclass(frozen=True)
class Facts:
    """Everything measured on a capture: the verdict's only input."""

    path: str
    interval_s: float = 1.0                  # goodput interval
    link_rate_bps: float | None = None       # the link's rate, when the caller knows it
    capture: CaptureFacts = field(default_factory=CaptureFacts)
    connection: ConnectionFacts = field(default_factory=ConnectionFacts)  # its WindowStats are not shared
    transfer: TransferFacts | None = None    # None: no payload to measure
    bounds: Bounds = Bounds()
    device_busy: float | None = None         # the board's own measure of its core: busy share of the workload
    # the stage of the link that sets link_rate_bps: "link", or "bus" when the WiFi chip's host bus (its ACKs the
    # other way included) carries less than the air (harness.link.air.tcp_capacity_bps)
    link_stage: str = "link"

    @property
    def empty_reason(self) -> str | None:
        return self.capture.empty_reason or self.connection.empty_reason

    @property
    def receiver(self) -> str | None:
        return self.connection.receiver

    @property
    def warnings(self) -> tuple[str, ...]:
        transfer = self.transfer.warnings if self.transfer else ()
        return self.capture.warnings + self.connection.warnings + transfer


def measure(path: str, rows: Iterable[Row], read_warnings: tuple[str, ...] = (), device_ip: str | None = None,
            conn: int | None = None, captured_at: str | None = None, sender: str | None = None,
            link_rate_bps: float | None = None, interval_s: float = 1.0) -> Facts:
    """The facts of one TCP connection of tshark's rows (see ``load_capture`` for the arguments)."""
    return measure_scan(path, CaptureScan().read(rows), read_warnings, device_ip, conn, captured_at, sender,
                        link_rate_bps, interval_s)


def measure_scan(path: str, scan: CaptureScan, read_warnings: tuple[str, ...] = (), device_ip: str | None = None,
                 conn: int | None = None, captured_at: str | None = None, sender: str | None = None,
                 link_rate_bps: float | None = None, interval_s: float = 1.0) -> Facts:
    """The facts of one TCP connection of a capture read once (``scan.CaptureScan``); the other connections'
    columns are dropped once the connection is chosen."""
    capture = scan.finish(read_warnings, device_ip, conn, sender)
    facts = Facts(path, interval_s, link_rate_bps, capture)
    if capture.conn is None:
        return facts
    from harness.analysis import flow, flow_transfer  # they build on this module's dataclasses

    columns = scan.columns.pop(capture.conn)
    scan.columns.clear()
    frames = flow.Flow.of(columns)  # the columns read in place: no object per frame
    connection, roles, snd = flow.connection_facts(frames, capture.conn, device_ip, captured_at)
    if snd is None:
        return Facts(path, interval_s, link_rate_bps, capture, connection)
    near = roles.near if roles.near is not None else roles.device
    transfer = flow_transfer.measure_transfer(frames, snd, near, connection.initial_rtt_ms, interval_s,
                                              link_rate_bps)
    window = connection.windows[other_side(roles.name(snd))].median
    return Facts(path, interval_s, link_rate_bps, capture, connection, transfer,
                 _bounds(window, transfer, link_rate_bps))
