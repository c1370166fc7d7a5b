"""The pre-columns implementation of the capture's figures, kept as the oracle the columns path is held to.

Before the analysis measured a connection on numpy columns (``harness.analysis.flow`` and ``flow_transfer``),
``facts.connection_facts`` and ``transfer.measure_transfer`` read a list of ``frames.Segment`` objects, one per
frame. No production code calls them any more; ``test_analysis_stream`` checks that the columns path gives
exactly what they give. The dataclasses, constants and the helpers both paths share stay in ``harness``.
"""

from __future__ import annotations

import bisect
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.analysis.facts import (
    ConnectionFacts,
    WindowStats,
    _device_side,
    _handshake,
    _handshake_vote,
    _near_by_votes,
    _Roles,
    _warnings,
)
from harness.analysis.frames import ACK, RST, SYN, Endpoint, Segment
from harness.analysis.numbers import percentile, rounded
from harness.analysis.series import thin, thin_sum
from harness.analysis.sides import PerSide
from harness.analysis.transfer import (
    HEADERS,
    PLATEAU_SLICES,
    FlightStats,
    PauseShares,
    Plateau,
    TransferFacts,
    base_rtt,
)
from harness.core.ethernet import OVERHEAD, wire_bytes

# ------------------------------------------------------------------ the connection (was facts.connection_facts)


def _near_side(segs: list[Segment], syn: Segment | None, synack: Segment | None) -> tuple[int | None, str]:
    """The endpoint next to the capture point: it answers quickly, the far one a round trip later."""
    votes = []
    if syn is not None and synack is not None and synack.t >= syn.t:
        ack3 = next((s for s in segs if s.side == syn.side and s.t >= synack.t and s.flags & ACK
                     and not s.flags & SYN), None)
        vote = _handshake_vote(syn, synack, ack3.t) if ack3 is not None else None
        votes = [vote] if vote is not None else []
    med = []
    for side in (0, 1):
        samples = [s.ack_rtt for s in segs if s.side == side and s.ack_rtt is not None and not s.flags & SYN]
        med.append(statistics.median(samples) if samples else None)
    return _near_by_votes(votes, med)


def _roles(segs: list[Segment], ends: list[Endpoint], device_ip: str | None, captured_at: str | None,
           syn: Segment | None, synack: Segment | None) -> _Roles:
    near, near_why = _near_side(segs, syn, synack)
    device, identified_by = _device_side(ends, device_ip, near, near_why, synack)
    if captured_at is not None:  # the caller knows where it captured: no need to judge from the timing
        near = device if captured_at == "device" else 1 - device
    return _Roles(device, near, identified_by)


def _windows(segs: list[Segment], index: int) -> tuple[WindowStats, tuple[tuple[float, int], ...]]:
    """The window one side advertised in its ACKs, and when."""
    acks = [s for s in segs if s.side == index and s.flags & ACK and not s.flags & (SYN | RST)]
    stats = WindowStats(count=len(acks))
    if acks:
        wins = [s.win for s in acks]
        stats.values = Counter(wins)
        stats.min, stats.max = min(wins), max(wins)
        stats.median = statistics.median(wins)
        stats.unknown_scale = any(s.scale == -1 for s in acks)
    return stats, thin([(s.t, s.win) for s in acks])


def _segments_per_ack(segs: list[Segment], index: int) -> float | None:
    """The other side's data segments per ACK of this side that moved the ACK number."""
    data_in = 0
    data_end = None  # end of the other side's payload so far: ACKs of a bare FIN do not count
    last = None
    advancing = 0
    for s in segs:
        if s.side != index:
            if s.len > 0 and not s.keepalive:
                data_in += 1
                data_end = s.nxt if data_end is None else max(data_end, s.nxt)
            continue
        if not s.flags & ACK or s.flags & SYN:
            continue
        if last is not None and s.ack > last and data_end is not None and s.ack <= data_end:
            advancing += 1
        last = s.ack if last is None else max(last, s.ack)
    return round(data_in / advancing, 3) if data_in and advancing else None


def _sender(segs: list[Segment]) -> int | None:
    """The end (0/1) that sent most payload (first transmissions); None when neither sent any."""
    sent = [sum(s.len for s in segs if s.side == side and not s.retrans) for side in (0, 1)]
    if max(sent) == 0:
        return None
    return 0 if sent[0] >= sent[1] else 1


def connection_facts(segs: list[Segment], ends: list[Endpoint], conn: int, device_ip: str | None,
                     captured_at: str | None) -> tuple[ConnectionFacts, _Roles, int | None]:
    """The connection's facts, who is who, and the end (0/1) that sent the data (None: no payload)."""
    syn = next((s for s in segs if s.flags & SYN and not s.flags & ACK), None)
    synack = next((s for s in segs if s.flags & SYN and s.flags & ACK), None)
    irtt = next((s.irtt for s in segs if s.irtt is not None), None)
    roles = _roles(segs, ends, device_ip, captured_at, syn, synack)
    handshake = _handshake(syn, synack, roles)
    windows = PerSide.of(lambda side: _windows(segs, roles.index(side)))

    def per_side(count: Any) -> PerSide[Any]:
        return PerSide.of(lambda side: count(roles.index(side)))

    lost = sum(s.lost for s in segs)
    snd = _sender(segs)
    facts = ConnectionFacts(
        device=ends[roles.device], peer=ends[1 - roles.device], device_identified_by=roles.identified_by,
        capture_near=roles.name(roles.near) if roles.near is not None else "device",
        sender=None if snd is None else roles.name(snd),
        handshake=handshake, initial_rtt_ms=None if irtt is None else irtt * 1e3, duration_s=segs[-1].t,
        windows=windows.map(lambda w: w[0]), window_series=windows.map(lambda w: w[1]),
        retransmissions=sum(s.retrans for s in segs), fast_retransmissions=sum(s.fast for s in segs),
        spurious_retransmissions=sum(s.spurious for s in segs), window_full=sum(s.winfull for s in segs),
        out_of_order=sum(s.ooo for s in segs), lost_segments=lost,
        dup_acks=per_side(lambda i: sum(s.dupack for s in segs if s.side == i)),
        zero_windows=per_side(lambda i: sum(s.zerowin for s in segs if s.side == i)),
        segments_per_ack=per_side(lambda i: _segments_per_ack(segs, i)),
        empty_reason=f"connection {conn} carries no payload" if snd is None else None,
        warnings=_warnings(roles, handshake, lost),
    )
    return facts, roles, snd




# ------------------------------------------------------------------ the data direction (was transfer.measure_transfer)


@dataclass(frozen=True)
class _Delays:
    """RTT samples and, per data segment, how long before it the sender last heard from the receiver."""

    samples: list[tuple[float, float]]
    lags: list[float | None]
    rtt_source: str
    in_flight_source: str
    window_release_ms: float | None = None
    warnings: tuple[str, ...] = ()


def _timestamp_lags(data: list[Segment], acks: list[Segment]) -> _Delays | None:
    """With timestamps, the segment's TSecr names the receiver's TSval the sender had seen: the lag
    is the time since the receiver sent that TSval (middle of its first and last use)."""
    ts_seen: dict[int, list[float]] = {}
    for a in acks:
        if a.tsval is not None:
            ts_seen.setdefault(a.tsval, [a.t, a.t])[1] = a.t
    if not ts_seen:
        return None
    lags: list[float | None] = [None] * len(data)
    samples = []
    for i, s in enumerate(data):
        span = ts_seen.get(s.tsecr) if s.tsecr is not None else None
        if span is None or span[0] > s.t:
            continue
        lag = s.t - (span[0] + min(span[1], s.t)) / 2
        lags[i] = lag
        if not s.retrans:
            samples.append((s.t, lag))
    if len(samples) < 3:
        return None
    return _Delays(samples, lags, "timestamp echo: data's TSecr back to the receiver's segment with that TSval",
                   "estimated at the receiver: data edge minus the receiver's ACK the sender had seen (timestamp echo)")


def _receiver_side_lags(data: list[Segment], acks: list[Segment], irtt: float | None) -> _Delays:
    """Capture at the receiver: when did the sender last hear from it, before each data segment?

    Timestamps first (``_timestamp_lags``). Without, the lag is the window release delay: the time
    since the first ACK whose window allowed the segment. That is the RTT when the sender waits
    for the window (it sends the moment the ACK arrives) and longer when something else held it,
    so it is used only when its 10th percentile is within 3 x the handshake RTT + 1 ms.
    """
    echoed = _timestamp_lags(data, acks)
    if echoed is not None:
        return echoed
    edges = []  # running right edge of the receiver's window, as seen at the capture point
    top = 0
    for a in acks:
        top = max(top, a.ack + a.win)
        edges.append(top)
    release = []
    for s in data:
        k = bisect.bisect_left(edges, s.nxt)
        if k < len(acks) and acks[k].t <= s.t and not s.retrans:
            release.append((s.t, s.t - acks[k].t))
    r10 = percentile([v for _, v in release], 10)
    if r10 is not None and (irtt is None or r10 <= 3 * irtt + 1e-3):
        return _Delays(release, [r10] * len(data),
                       "window release: ACK that opened the window to the data it released (capture at receiver)",
                       f"estimated at the receiver: data edge minus the receiver's ACK {r10 * 1e3:.2f} ms "
                       "(one RTT) earlier")
    if irtt is not None:
        return _Delays([(0.0, irtt)], [irtt] * len(data),
                       "handshake only (no timestamps; the sender did not wait for the window)",
                       f"estimated at the receiver with the handshake RTT {irtt * 1e3:.2f} ms: a lower "
                       "bound (no timestamps, RTT under load unknown)",
                       window_release_ms=None if r10 is None else round(r10 * 1e3, 3),
                       warnings=("in flight at the receiver is a lower bound: no timestamps, and the sender did "
                                 "not wait for the window, so its RTT under load is unknown",))
    return _Delays([], [0.0] * len(data), "none", "as seen at the capture point (receiver side; no RTT estimate)",
                   warnings=("no RTT estimate: in flight is shown as seen at the receiver",))


def _delays(data: list[Segment], acks: list[Segment], sender_near: bool, irtt: float | None) -> _Delays:
    """The RTT samples where the capture point is, with the handshake's RTT added when there are few."""
    if sender_near:
        delays = _Delays([(s.t, s.ack_rtt) for s in acks if s.ack_rtt is not None and not s.flags & SYN],
                         [0.0] * len(data), "tshark ack_rtt of the receiver's ACKs (capture at the sender)",
                         "tshark bytes_in_flight (capture at the sender)")
    else:
        delays = _receiver_side_lags(data, acks, irtt)
    samples, source = delays.samples, delays.rtt_source
    if len(samples) < 3 and irtt is not None and not any(v == irtt for _, v in samples):
        samples = [*samples, (0.0, irtt)]
        source += "; with the handshake's initial RTT (few samples)"
    if not samples:
        source = "none: no ACK RTTs, no timestamps, no window releases and no handshake"
    return _Delays(samples, delays.lags, source, delays.in_flight_source, delays.window_release_ms, delays.warnings)


# ------------------------------------------------------------------ the sender's view


@dataclass(frozen=True)
class _View:
    """Per data segment that followed an ACK: in flight, the window the sender knew, and the room left."""

    in_flight: list[tuple[float, int]]
    window: list[tuple[float, int]]
    rooms: list[int]


def _sender_view(data: list[Segment], acks: list[Segment], deltas: list[float], sender_near: bool) -> _View:
    ack_t = [a.t for a in acks]
    in_flight, window, rooms = [], [], []
    high = 0
    for s, delta in zip(data, deltas, strict=True):
        high = max(high, s.nxt)
        k = bisect.bisect_right(ack_t, s.t - delta) - 1
        if k < 0:
            continue
        a = acks[k]
        flight = s.bif if (sender_near and s.bif is not None) else max(0, high - a.ack)
        in_flight.append((s.t, flight))
        window.append((s.t, a.win))
        rooms.append(a.win - flight)
    return _View(in_flight, window, rooms)


# ------------------------------------------------------------------ goodput


@dataclass(frozen=True)
class _Goodput:
    delivered: list[tuple[float, int]]
    source: str
    series: list[tuple[float, float]]
    total_mbps: float | None
    steady_mbps: float | None
    transfer_s: float


def _delivered(data: list[Segment], acks: list[Segment], sender_near: bool) -> tuple[list[tuple[float, int]], str]:
    """Payload delivered once, in time. At the receiver's side that is the first arrival of each byte; at
    the sender's side the capture shows data when it leaves (before the link's queue), so delivery is
    read from the receiver's cumulative ACKs instead."""
    if sender_near:
        first = data[0].t
        done_to = min(s.seq for s in data)
        top = max(s.nxt for s in data)
        delivered = []
        for a in acks:
            if a.t >= first and a.ack > done_to:
                delivered.append((a.t, min(a.ack, top) - done_to))
                done_to = min(a.ack, top)
        if delivered:
            return delivered, "receiver's ACKs (capture at the sender)"
    return [(s.t, s.len) for s in data if not s.retrans], "first arrivals of payload"


def _goodput(data: list[Segment], acks: list[Segment], sender_near: bool, interval_s: float, end: float) -> _Goodput:
    """Goodput per interval and in total; intervals from the connection's start, and a last one shorter than a
    quarter left out of the series."""
    delivered, source = _delivered(data, acks, sender_near)
    first, last = data[0].t, delivered[-1][0]
    span = last - first if last - first > 0 else None
    total = sum(n for _, n in delivered)
    bins: dict[int, int] = {}
    for t, n in delivered:
        k = int(t // interval_s)
        bins[k] = bins.get(k, 0) + n
    series = []
    for k in range(0, max(bins) + 1):
        start = k * interval_s
        length = min(interval_s, end - start)
        if length < interval_s / 4 and k == max(bins) and k > 0:
            break
        series.append((start, bins.get(k, 0) * 8 / max(length, 1e-9) / 1e6))
    slack = interval_s / 20
    inside = [v for t, v in series if t >= first - slack and t + interval_s <= last + slack]
    return _Goodput(delivered, source, series, total * 8 / span / 1e6 if span else None,
                    rounded(statistics.median(inside)) if inside else None, last - first)


# ------------------------------------------------------------------ pauses, timeouts, zero windows


@dataclass(frozen=True)
class _Pauses:
    threshold_s: float
    gaps: list[tuple[float, float]]
    shares: PauseShares | None
    at_window: float | None


def _pause_threshold(gaps: list[float], rtt: float | None, seg_size: int, link_rate_bps: float | None) -> float:
    """A pause is a gap longer than a fifth of the RTT, and more than a frame's time on the link (with the link
    rate unknown, twice the shorter gaps between segments stand in for it)."""
    tau = max(0.5e-3, 0.2 * rtt if rtt else 0.0)
    if link_rate_bps:
        return max(tau, 1.5 * (seg_size + HEADERS + OVERHEAD) * 8 / link_rate_bps)
    return max(tau, 2 * (percentile(gaps, 25) or 0.0))


def _pauses(data: list[Segment], acks: list[Segment], deltas: list[float], view: _View, rtt: float | None,
            seg_size: int, link_rate_bps: float | None) -> _Pauses:
    """The sender's pauses and what each one waited for: the window, an ACK, or nothing (itself)."""
    gaps = [(data[i].t, data[i + 1].t - data[i].t, i) for i in range(len(data) - 1)]
    tau = _pause_threshold([g for _, g, _ in gaps], rtt, seg_size, link_rate_bps)
    room_at = {}  # data segment index -> (room, in flight) of the sender's view
    j = 0
    for i, s in enumerate(data):
        while j < len(view.in_flight) and view.in_flight[j][0] < s.t:
            j += 1
        if j < len(view.in_flight) and view.in_flight[j][0] == s.t:
            room_at[i] = (view.rooms[j], view.in_flight[j][1])
    ack_t = [a.t for a in acks]
    shares = {"busy": 0.0, "window": 0.0, "ack_wait": 0.0, "sender_paced": 0.0}
    for _t, gap, i in gaps:
        if gap < tau:
            shares["busy"] += gap
            continue
        room, flight = room_at.get(i, (None, None))
        if room is not None and room < seg_size:
            shares["window"] += gap
            continue
        # the sender restarted right after an ACK it had seen: it was waiting for that ACK
        nxt, delta = data[i + 1], deltas[i + 1]
        k = bisect.bisect_right(ack_t, nxt.t - delta) - 1
        restart = (nxt.t - delta) - acks[k].t if k >= 0 else None
        clocked = restart is not None and restart <= max(0.5e-3, 0.1 * gap) and acks[k].t > data[i].t - delta
        shares["ack_wait" if flight and clocked else "sender_paced"] += gap
    send_span = data[-1].t - data[0].t
    at_window = sum(1 for r in view.rooms if r < 2 * seg_size)
    return _Pauses(tau, [(t, g) for t, g, _ in gaps if g >= tau],
                   PauseShares(**{k: v / send_span for k, v in shares.items()}) if send_span > 0 else None,
                   round(at_window / len(view.rooms), 3) if view.rooms else None)


def _timeouts(data: list[Segment], rtt: float | None) -> tuple[int, float]:
    """Retransmissions after a stall of the sender (estimated timeouts), and the stalls' total length."""
    stall_min = max(2 * rtt if rtt else 0.0, 10e-3)
    count, stalled = 0, 0.0
    prev_t = None
    for s in data:
        if s.retrans and not s.fast and prev_t is not None and s.t - prev_t >= stall_min:
            count += 1
            stalled += s.t - prev_t
        prev_t = s.t
    return count, stalled


def _zero_window_time(acks: list[Segment], end: float) -> float:
    zero_time = 0.0
    for k, a in enumerate(acks):
        if a.win == 0:
            nxt_t = acks[k + 1].t if k + 1 < len(acks) else end
            zero_time += max(0.0, nxt_t - a.t)
    return round(zero_time, 6)


def find_plateau(in_flight: Sequence[tuple[float, int]], seg: int) -> Plateau | None:
    """In flight's ceiling and whether it was flat (see ``Plateau``); None without in flight."""
    if not in_flight or not seg:
        return None
    values = [f for _, f in in_flight]
    ceiling = percentile(values, 95) or 0.0
    n = max(1, min(PLATEAU_SLICES, len(in_flight) // 50))
    t0, t1 = in_flight[0][0], in_flight[-1][0]
    width = (t1 - t0) / n or 1.0
    tops = [0] * n
    for t, f in in_flight:
        k = min(n - 1, int((t - t0) / width))
        tops[k] = max(tops[k], f)
    tops = [v for v in tops if v]
    flat = bool(ceiling) and max(values) <= ceiling + seg and all(abs(v - ceiling) <= seg for v in tops)
    return Plateau(flat, ceiling, max(values), len(tops), tuple(tops),
                   sum(1 for f in values if f >= ceiling - seg) / len(values))


# ------------------------------------------------------------------ all of it


def _zoom(data: list[Segment], rtt: float | None) -> tuple[float, float]:
    """The time the time-sequence plot's zoom shows (``plots._time_sequence``): kept whole in thinned series."""
    first, last = data[0].t, data[-1].t
    zoom_len = min(max(10 * (rtt or 5e-3), 0.02), max(last - first, 1e-3))
    focus = next((s.t for s in data if s.retrans), first + (last - first) / 2)
    start = min(max(first, focus - zoom_len / 2), max(first, last - zoom_len))
    return start, start + zoom_len


def measure_transfer(segs: list[Segment], snd: int, near: int, initial_rtt_ms: float | None, interval_s: float,
                     link_rate_bps: float | None) -> TransferFacts:
    """The facts of the data sent by side `snd` (0/1 as in `segs`), the capture being next to side `near`."""
    data = [s for s in segs if s.side == snd and s.len > 0 and not s.keepalive]
    acks = [s for s in segs if s.side == 1 - snd and s.flags & ACK and not s.flags & RST]
    seg_size = max(s.len for s in data)
    sender_near = near == snd
    irtt = initial_rtt_ms / 1e3 if initial_rtt_ms is not None else None
    delays = _delays(data, acks, sender_near, irtt)
    rtt = statistics.median(v for _, v in delays.samples) if delays.samples else None
    fallback = rtt if rtt is not None else 0.0
    deltas = [fallback if v is None else v for v in delays.lags]
    view = _sender_view(data, acks, deltas, sender_near)
    flights = [f for _, f in view.in_flight]
    goodput = _goodput(data, acks, sender_near, interval_s, segs[-1].t)
    pauses = _pauses(data, acks, deltas, view, rtt, seg_size, link_rate_bps)
    rto_count, rto_stall = _timeouts(data, rtt)
    base_candidates = ([base_rtt(delays.samples)] if delays.samples else []) + (
        [initial_rtt_ms / 1e3] if initial_rtt_ms else [])
    zoom = _zoom(data, rtt)
    return TransferFacts(
        mss_used=seg_size,
        data_segments=thin([(s.t, s.seq, s.nxt, s.retrans) for s in data],
                           lambda p: p[3] or zoom[0] <= p[0] <= zoom[1]),
        receiver_acks=thin([(a.t, a.ack, a.win) for a in acks], lambda p: zoom[0] - (rtt or 0) <= p[0] <= zoom[1]),
        data_segment_count=len(data), resent_segment_count=sum(s.retrans for s in data),
        rtt_sample_count=len(delays.samples),
        data_wire_bytes=sum(wire_bytes(s.flen) for s in data),
        in_flight=thin(view.in_flight), in_flight_window=thin(view.window),
        in_flight_source=delays.in_flight_source,
        in_flight_stats=FlightStats(min(flights, default=None), percentile(flights, 50), percentile(flights, 95),
                                    max(flights, default=None)),
        segments_at_window=pauses.at_window,
        rtt_samples=thin(delays.samples), rtt_ms=None if rtt is None else rtt * 1e3, rtt_source=delays.rtt_source,
        window_release_ms=delays.window_release_ms,
        base_rtt_s=min(base_candidates) if base_candidates else None,
        payload_bytes=sum(s.len for s in data if not s.retrans),
        retransmitted_bytes=sum(s.len for s in data if s.retrans),
        delivered=thin_sum(goodput.delivered), goodput_from=goodput.source, goodput=tuple(goodput.series),
        goodput_mbps=goodput.total_mbps, steady_goodput_mbps=goodput.steady_mbps, transfer_s=goodput.transfer_s,
        idle_gaps=tuple(pauses.gaps), idle_threshold_s=pauses.threshold_s, pause_shares=pauses.shares,
        rto_retransmissions=rto_count, rto_stall_s=rto_stall,
        zero_window_s=_zero_window_time(acks, segs[-1].t),
        plateau=find_plateau(view.in_flight, seg_size),
        warnings=delays.warnings,
    )
