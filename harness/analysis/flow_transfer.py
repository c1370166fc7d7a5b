"""The data direction's facts (``transfer.TransferFacts``) on a connection's numpy columns (``flow.Flow``):
no object per frame.

Each step mirrors its namesake in the Segment reference the tests hold it to
(``tests/analysis_reference.py``; ``transfer`` says what the figures mean); here a search over the
ACKs is ``np.searchsorted`` (``bisect`` on the same sorted times), a running maximum
``np.maximum.accumulate``, and a sum of floats ``np.cumsum`` (left to right, as the ``+=`` loops).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.analysis.flow import Flow, _index, pairs, thin_index
from harness.analysis.frames import ACK, RST, SYN
from harness.analysis.numbers import median_of, percentile_of, rounded
from harness.analysis.scan_lines import HAS_BIF, HAS_TSECR
from harness.analysis.series import LIMIT
from harness.analysis.transfer import (
    HEADERS,
    PLATEAU_SLICES,
    FlightStats,
    PauseShares,
    Plateau,
    TransferFacts,
    base_rtt,
)
from harness.core.ethernet import MIN_FRAME, OVERHEAD

CHUNK = 1 << 18  # elements of a work array at a time


def _sum(values: np.ndarray, below: float | None = None) -> float:
    """Floats (those under `below`, if given) added left to right, as a ``+=`` loop adds them: by chunks, each
    started from the sum so far (the same additions in the same order), no running sum per value kept."""
    total = 0.0
    for lo in range(0, len(values), CHUNK):
        part = values[lo:lo + CHUNK]
        total = np.cumsum(np.r_[total, part if below is None else part[part < below]])[-1].item()
    return total


@dataclass
class _Delays:
    """The RTT samples (times ``st``, values ``sv``) and the lag per data segment. The samples' times, one per
    data segment at most, are not copied: ``st`` is ``times[chosen]`` (all of ``times`` when ``chosen`` is None),
    and ``times_of`` picks the few that are shown."""

    times: np.ndarray
    chosen: np.ndarray | None
    sv: np.ndarray
    lags: np.ndarray     # per data segment, NaN where unknown
    rtt_source: str
    in_flight_source: str
    window_release_ms: float | None = None
    warnings: tuple[str, ...] = ()

    @property
    def st(self) -> np.ndarray:
        return self.times if self.chosen is None else self.times[self.chosen]

    def times_of(self, index: np.ndarray) -> np.ndarray:
        """The times of the samples `index` (ascending)."""
        return self.times[index if self.chosen is None else _nth_true(self.chosen, index)]


def _nth_true(mask: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """The positions of the ranks-th True values of a mask (ranks ascending), by chunks."""
    out = np.zeros(len(ranks), np.int64)
    seen = 0
    for lo in range(0, len(mask), CHUNK):
        where = np.flatnonzero(mask[lo:lo + CHUNK])
        a, b = np.searchsorted(ranks, [seen, seen + len(where)])
        out[a:b] = where[ranks[a:b] - seen] + lo
        seen += len(where)
    return out


def _timestamp_lags(data: Flow, acks: Flow, retrans: np.ndarray) -> _Delays | None:
    has_ts = _index(acks.has("tsval"))
    if not len(has_ts):
        return None
    tsv = acks.tsval[has_ts]
    order = np.argsort(tsv, kind="stable")
    keys = tsv[order]
    del tsv
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], len(keys)] - 1
    at = acks.t[has_ts[order]]  # the ACKs' times in the order of their TSvals
    del order
    unique, first_t, last_t = keys[starts], at[starts], at[ends]
    del keys, at, starts, ends  # only one value per distinct TSval is needed from here
    dt, tsecrs = data.t, data.tsecr
    lags = np.full(len(data), np.nan)
    for lo in range(0, len(data), CHUNK):  # in chunks: the work arrays stay small however long the capture
        part = slice(lo, lo + CHUNK)
        tsecr, t = tsecrs[part], dt[part]
        k = np.minimum(np.searchsorted(unique, tsecr), len(unique) - 1)
        span0, span1 = first_t[k], last_t[k]
        ok = ((data.bits[part] & HAS_TSECR) != 0) & (unique[k] == tsecr) & ~(span0 > t)
        lags[part][ok] = t[ok] - (span0[ok] + np.minimum(span1[ok], t[ok])) / 2
    use = ~np.isnan(lags) & ~retrans
    if np.count_nonzero(use) < 3:
        return None
    return _Delays(dt, use, lags[use], lags,
                   "timestamp echo: data's TSecr back to the receiver's segment with that TSval",
                   "estimated at the receiver: data edge minus the receiver's ACK the sender had seen (timestamp echo)")


def _receiver_side_lags(data: Flow, acks: Flow, retrans: np.ndarray, irtt: float | None) -> _Delays:
    echoed = _timestamp_lags(data, acks, retrans)
    if echoed is not None:
        return echoed
    n, dt, at = len(data), data.t, acks.t
    edges = np.maximum(np.maximum.accumulate(acks.ack.astype(np.int64) + acks.win), 0) if len(acks) else at
    k = np.searchsorted(edges, data.nxt().astype(np.int64), side="left")
    inside = k < len(acks)
    kk = np.minimum(k, max(len(acks) - 1, 0))
    use = inside & ~retrans
    if len(acks):
        use &= at[kk] <= dt
    rv = dt[use] - at[kk][use] if len(acks) else dt[use]
    r10 = percentile_of(rv, 10)
    if r10 is not None and (irtt is None or r10 <= 3 * irtt + 1e-3):
        return _Delays(dt, use, rv, np.full(n, r10),
                       "window release: ACK that opened the window to the data it released (capture at receiver)",
                       f"estimated at the receiver: data edge minus the receiver's ACK {r10 * 1e3:.2f} ms "
                       "(one RTT) earlier")
    if irtt is not None:
        return _Delays(np.array([0.0]), None, np.array([irtt]), np.full(n, irtt),
                       "handshake only (no timestamps; the sender did not wait for the window)",
                       f"estimated at the receiver with the handshake RTT {irtt * 1e3:.2f} ms: a lower "
                       "bound (no timestamps, RTT under load unknown)",
                       window_release_ms=None if r10 is None else round(r10 * 1e3, 3),
                       warnings=("in flight at the receiver is a lower bound: no timestamps, and the sender did "
                                 "not wait for the window, so its RTT under load is unknown",))
    return _Delays(np.zeros(0), None, np.zeros(0), np.zeros(n), "none",
                   "as seen at the capture point (receiver side; no RTT estimate)",
                   warnings=("no RTT estimate: in flight is shown as seen at the receiver",))


def _delays(data: Flow, acks: Flow, sender_near: bool, irtt: float | None) -> _Delays:
    retrans = data.has("retrans")
    if sender_near:
        rtt = acks.ack_rtt_dense()
        use = ~np.isnan(rtt) & ((acks.flags & SYN) == 0)
        delays = _Delays(acks.t[use], None, rtt[use], np.zeros(len(data)),
                         "tshark ack_rtt of the receiver's ACKs (capture at the sender)",
                         "tshark bytes_in_flight (capture at the sender)")
    else:
        delays = _receiver_side_lags(data, acks, retrans, irtt)
    sv, source = delays.sv, delays.rtt_source
    if len(sv) < 3 and irtt is not None and not np.any(sv == irtt):
        delays.times, delays.chosen, sv = np.r_[delays.st, 0.0], None, np.r_[sv, irtt]
        source += "; with the handshake's initial RTT (few samples)"
    if not len(sv):
        source = "none: no ACK RTTs, no timestamps, no window releases and no handshake"
    return _Delays(delays.times, delays.chosen, sv, delays.lags, source, delays.in_flight_source,
                   delays.window_release_ms, delays.warnings)


@dataclass
class _View:
    """Per data segment that followed an ACK: its time, in flight, the window the sender knew (room: the
    difference)."""

    t: np.ndarray
    flight: np.ndarray
    window: np.ndarray


def _sender_view(data: Flow, acks: Flow, deltas: np.ndarray, sender_near: bool) -> _View:
    """Chunk by chunk into arrays of one value per data segment, filled in place: in flight in 4 bytes while
    it fits (it is a 32-bit difference or tshark's 32-bit count), the times a view of the segments' own."""
    dt, at, ack, win = data.t, acks.t, acks.ack, acks.win
    bif = data.bif if sender_near else None
    ok = np.zeros(len(data), bool)
    flights = np.zeros(len(data), np.uint32)
    windows = np.zeros(len(data), win.dtype)
    filled, high = 0, 0  # high: the running right edge of the data sent
    for lo in range(0, len(data), CHUNK):
        part = slice(lo, lo + CHUNK)
        edge = np.maximum(np.maximum.accumulate(data.nxt(part)), high)
        high = edge[-1].item()
        k = np.searchsorted(at, dt[part] - deltas[part], side="right") - 1
        ok[part] = k >= 0
        k = k[ok[part]]
        flight = np.maximum(0, edge[ok[part]] - ack[k])
        if bif is not None:
            flight = np.where((data.bits[part][ok[part]] & HAS_BIF) != 0, bif[part][ok[part]], flight)
        if len(flight) and flight.max() > np.iinfo(flights.dtype).max:
            flights = flights.astype(np.int64)
        flights[filled:filled + len(k)] = flight
        windows[filled:filled + len(k)] = win[k]
        filled += len(k)
    first = int(np.argmax(ok)) if filled else len(data)
    # the segments that followed an ACK: all but the first few, as a rule (then a view of their times, no copy)
    t = dt[first:] if filled == len(data) - first else dt[ok]
    return _View(t, flights[:filled], windows[:filled])


def _delivered(data: Flow, acks: Flow, sender_near: bool) -> tuple[np.ndarray, np.ndarray, str]:
    dt = data.t
    if sender_near:
        first = dt[0]
        done0 = int(data.seq.min())
        top = int(data.nxt().max())
        use = acks.t >= first
        ack = acks.ack[use].astype(np.int64)
        capped = np.minimum(ack, top)
        before = np.maximum(done0, np.r_[done0, np.maximum.accumulate(capped)[:-1]]) if len(ack) else ack
        moved = ack > before
        if moved.any():
            return acks.t[use][moved], (capped - before)[moved], "receiver's ACKs (capture at the sender)"
    fresh = ~data.has("retrans")
    if fresh.all():  # the segments' own arrays, not copies
        return dt, data.len, "first arrivals of payload"
    return dt[fresh], data.len[fresh], "first arrivals of payload"  # lengths in their 2 bytes: summed as int64


def _goodput(data: Flow, acks: Flow, sender_near: bool, interval_s: float, end: float):
    when, nbytes, source = _delivered(data, acks, sender_near)
    first, last = data.t[0].item(), when[-1].item()
    span = last - first if last - first > 0 else None
    total = int(nbytes.sum(dtype=np.int64))
    bins = _bytes_per_interval(when, nbytes, interval_s)
    series = []
    top = len(bins) - 1
    for k in range(0, top + 1):
        start = k * interval_s
        length = min(interval_s, end - start)
        if length < interval_s / 4 and k == top and k > 0:
            break
        series.append((start, int(bins[k]) * 8 / max(length, 1e-9) / 1e6))
    slack = interval_s / 20
    inside = [v for t, v in series if t >= first - slack and t + interval_s <= last + slack]
    return (_thin_sum(when, nbytes), source, series, total * 8 / span / 1e6 if span else None,
            rounded(median_of(np.array(inside))) if inside else None, last - first)


def _thin_sum(when: np.ndarray, nbytes: np.ndarray, limit: int = LIMIT) -> tuple[tuple[float, int], ...]:
    n = len(when)
    if n <= limit:
        return pairs(np.arange(n), when, nbytes)
    stride = math.ceil(n / limit)
    starts = np.arange(0, n, stride)
    return tuple(zip(when[starts].tolist(), np.add.reduceat(nbytes, starts, dtype=np.int64).tolist(), strict=True))


def _bytes_per_interval(when: np.ndarray, nbytes: np.ndarray, interval_s: float) -> np.ndarray:
    """Bytes delivered in each interval, counted by chunks (whole numbers as floats: exact in any order)."""
    bins = np.zeros(0)
    for lo in range(0, len(when), CHUNK):
        part = slice(lo, lo + CHUNK)
        chunk = np.bincount((when[part] // interval_s).astype(np.int64), weights=nbytes[part].astype(np.float64))
        if len(chunk) > len(bins):
            bins = np.r_[bins, np.zeros(len(chunk) - len(bins))]
        bins[:len(chunk)] += chunk
    return bins


def _gaps(dt: np.ndarray, lo: int = 0, hi: int | None = None) -> np.ndarray:
    """The gaps between the segments lo..hi (hi: the last) and the next ones."""
    hi = len(dt) - 1 if hi is None else min(hi, len(dt) - 1)
    return dt[lo + 1:hi + 1] - dt[lo:hi]


def _pause_threshold(gap_q25: float | None, rtt: float | None, seg_size: int, link_rate_bps: float | None) -> float:
    """The reference's ``_pause_threshold`` (`gap_q25`: the gaps' 25th percentile, when no link rate is given)."""
    tau = max(0.5e-3, 0.2 * rtt if rtt else 0.0)
    if link_rate_bps:
        return max(tau, 1.5 * (seg_size + HEADERS + OVERHEAD) * 8 / link_rate_bps)
    return max(tau, 2 * (gap_q25 or 0.0))


def _pauses(data: Flow, acks: Flow, deltas: np.ndarray, view: _View, rtt: float | None, seg_size: int,
            link_rate_bps: float | None, gap_q25: float | None):
    """The gaps between data segments, by chunks (each chunk's sum started from the total so far: the same
    additions in the same order as over one array of them)."""
    dt, at = data.t, acks.t
    tau = _pause_threshold(gap_q25, rtt, seg_size, link_rate_bps)
    busy, big = 0.0, []
    for lo in range(0, len(dt) - 1, CHUNK):
        gaps = _gaps(dt, lo, lo + CHUNK)
        busy = np.cumsum(np.r_[busy, gaps[gaps < tau]])[-1].item()
        big.append(np.flatnonzero(gaps >= tau) + lo)
    big = np.concatenate([np.zeros(0, np.int64), *big])
    shares = {"busy": busy, "window": 0.0, "ack_wait": 0.0, "sender_paced": 0.0}
    for i in big.tolist():
        gap = (dt[i + 1] - dt[i]).item()
        j = int(np.searchsorted(view.t, dt[i], side="left"))  # the view's point of this segment, if any
        matched = j < len(view.t) and view.t[j] == dt[i]
        room = view.window[j].item() - view.flight[j].item() if matched else None
        flight = view.flight[j].item() if matched else None
        if room is not None and room < seg_size:
            shares["window"] += gap
            continue
        nxt_t, delta = dt[i + 1].item(), deltas[i + 1].item()
        k = int(np.searchsorted(at, nxt_t - delta, side="right")) - 1
        restart = (nxt_t - delta) - at[k].item() if k >= 0 else None
        clocked = restart is not None and restart <= max(0.5e-3, 0.1 * gap) and at[k].item() > dt[i].item() - delta
        shares["ack_wait" if flight and clocked else "sender_paced"] += gap
    send_span = (dt[-1] - dt[0]).item()
    at_window = sum(int(np.count_nonzero(view.window[lo:lo + CHUNK].astype(np.int64) - view.flight[lo:lo + CHUNK]
                                         < 2 * seg_size)) for lo in range(0, len(view.t), CHUNK))
    return (tau, tuple(zip(dt[big].tolist(), (dt[big + 1] - dt[big]).tolist(), strict=True)),
            PauseShares(**{k: v / send_span for k, v in shares.items()}) if send_span > 0 else None,
            round(at_window / len(view.t), 3) if len(view.t) else None)


def _timeouts(data: Flow, rtt: float | None) -> tuple[int, float]:
    """The stalls before a retransmission, found by chunks."""
    dt = data.t
    stall_min = max(2 * rtt if rtt else 0.0, 10e-3)
    resent = data.has("retrans") & ~data.has("fast")
    stalls = []
    for lo in range(0, len(dt) - 1, CHUNK):
        gaps = _gaps(dt, lo, lo + CHUNK)
        stalls.append(gaps[resent[lo + 1:lo + 1 + len(gaps)] & (gaps >= stall_min)])
    stalls = np.concatenate([np.zeros(0), *stalls])
    return len(stalls), _sum(stalls)


def _zero_window_time(acks: Flow, end: float) -> float:
    at, win = acks.t, acks.win
    nxt = np.r_[at[1:], end] if len(at) else at
    zero = win == 0
    return round(_sum(np.maximum(0.0, nxt[zero] - at[zero])), 6)


def find_plateau(t: np.ndarray, values: np.ndarray, seg: int) -> Plateau | None:
    """The reference's ``find_plateau`` on columns (``transfer.Plateau``)."""
    if not len(values) or not seg:
        return None
    ceiling = percentile_of(values, 95) or 0.0
    n = max(1, min(PLATEAU_SLICES, len(values) // 50))
    t0, t1 = t[0].item(), t[-1].item()
    width = (t1 - t0) / n or 1.0
    tops_all = np.zeros(n, np.int64)
    for lo in range(0, len(values), CHUNK):  # each value into its slice's top, by chunks: no index per value
        part = slice(lo, lo + CHUNK)
        np.maximum.at(tops_all, np.minimum(n - 1, ((t[part] - t0) / width).astype(np.int64)), values[part])
    tops = [v for v in tops_all.tolist() if v]
    top = int(values.max())
    flat = bool(ceiling) and top <= ceiling + seg and all(abs(v - ceiling) <= seg for v in tops)
    return Plateau(flat, ceiling, top, len(tops), tuple(tops),
                   int(np.count_nonzero(values >= ceiling - seg)) / len(values))


def _zoom(data: Flow, rtt: float | None) -> tuple[float, float]:
    dt = data.t
    first, last = dt[0].item(), dt[-1].item()
    zoom_len = min(max(10 * (rtt or 5e-3), 0.02), max(last - first, 1e-3))
    resent = np.flatnonzero(data.has("retrans"))
    focus = dt[resent[0]].item() if len(resent) else first + (last - first) / 2
    start = min(max(first, focus - zoom_len / 2), max(first, last - zoom_len))
    return start, start + zoom_len


def measure_transfer(f: Flow, snd: int, near: int, initial_rtt_ms: float | None, interval_s: float,
                     link_rate_bps: float | None) -> TransferFacts:
    """The facts of the data sent by side `snd`, on columns: the connection split into its data segments' and
    the other side's ACKs' own columns (``Flow.parts``: only those read, the whole connection's freed), each
    freed once used."""
    sender_near = near == snd
    flags = f.flags
    d = _index((f.side == snd) & (f.len > 0) & ~f.has("keepalive"))
    a = _index((f.side != snd) & ((flags & ACK) != 0) & ((flags & RST) == 0))
    del flags
    end = f.end()
    if not sender_near:  # tshark's ACK RTTs are read at the sender only
        f.rtt_at, f.rtt = f.rtt_at[:0], f.rtt[:0]
    data, acks = f.parts((d, a), (("seq", "len", "flen", "tsecr", *(("bif",) if sender_near else ())),
                                  ("ack", "win", "tsval")))
    del d, a
    seg_size = int(data.len.max())
    irtt = initial_rtt_ms / 1e3 if initial_rtt_ms is not None else None
    wire_bytes = _wire_bytes(data.flen)
    data.drop("flen")
    gap_q25 = None if link_rate_bps else percentile_of(_gaps(data.t), 25)
    delays = _delays(data, acks, sender_near, irtt)
    data.drop("tsecr")
    acks.drop("tsval")
    # what the RTT samples give, before the view is built: then they are freed (one float per data segment)
    sample_count = len(delays.sv)
    samples = list(zip(delays.st.tolist(), delays.sv.tolist(), strict=True)) if sample_count < 3 else None
    base_candidates = ([base_rtt(samples) if samples is not None else _base_rtt(delays.sv)] if sample_count
                       else []) + ([initial_rtt_ms / 1e3] if initial_rtt_ms else [])
    rtt_samples = _rtt_samples(delays)
    rtt = _median_in_place(delays.sv)
    delays.sv = delays.chosen = None
    deltas = delays.lags  # the lags, with the median RTT where unknown (in place: one array per data segment)
    deltas[np.isnan(deltas)] = rtt if rtt is not None else 0.0
    view = _sender_view(data, acks, deltas, sender_near)
    data.drop("bif")
    delivered, source, series, total, steady, transfer_s = _goodput(data, acks, sender_near, interval_s, end)
    tau, gaps, shares, at_window = _pauses(data, acks, deltas, view, rtt, seg_size, link_rate_bps, gap_q25)
    delays.lags = deltas = np.zeros(0)  # no further use: freed (one float per data segment)
    rto_count, rto_stall = _timeouts(data, rtt)
    zoom = _zoom(data, rtt)
    dt, at, retrans = data.t, acks.t, data.has("retrans")
    lens = data.len
    flights = view.flight
    shown = thin_index(len(data), retrans | ((zoom[0] <= dt) & (dt <= zoom[1])))
    return TransferFacts(
        mss_used=seg_size,
        data_segments=tuple((t, s, e, bool(r)) for t, s, e, r in pairs(
            np.arange(len(shown)), dt[shown], data.seq[shown], data.nxt(shown), retrans[shown])),
        receiver_acks=pairs(thin_index(len(acks), (zoom[0] - (rtt or 0) <= at) & (at <= zoom[1])), at, acks.ack,
                            acks.win),
        data_segment_count=len(data), resent_segment_count=int(np.count_nonzero(retrans)),
        rtt_sample_count=sample_count,
        data_wire_bytes=wire_bytes,
        in_flight=pairs(thin_index(len(view.t)), view.t, flights),
        in_flight_window=pairs(thin_index(len(view.t)), view.t, view.window),
        in_flight_source=delays.in_flight_source,
        in_flight_stats=FlightStats(int(flights.min()) if len(flights) else None, percentile_of(flights, 50),
                                    percentile_of(flights, 95), int(flights.max()) if len(flights) else None),
        segments_at_window=at_window,
        rtt_samples=rtt_samples, rtt_ms=None if rtt is None else rtt * 1e3,
        rtt_source=delays.rtt_source, window_release_ms=delays.window_release_ms,
        base_rtt_s=min(base_candidates) if base_candidates else None,
        payload_bytes=int(lens[~retrans].sum(dtype=np.int64)),
        retransmitted_bytes=int(lens[retrans].sum(dtype=np.int64)),
        delivered=delivered, goodput_from=source, goodput=tuple(series),
        goodput_mbps=total, steady_goodput_mbps=steady, transfer_s=transfer_s,
        idle_gaps=gaps, idle_threshold_s=tau, pause_shares=shares,
        rto_retransmissions=rto_count, rto_stall_s=rto_stall,
        zero_window_s=_zero_window_time(acks, end),
        plateau=find_plateau(view.t, flights, seg_size),
        warnings=delays.warnings,
    )


def _median_in_place(values: np.ndarray) -> float | None:
    """``numbers.median_of`` of an array no longer needed in its order: the same two values, partitioned in place
    (no copy)."""
    n = len(values)
    if not n:
        return None
    i = n // 2
    if n % 2:
        values.partition(i)
        return values[i].item()
    values.partition((i - 1, i))
    return (values[i - 1].item() + values[i].item()) / 2


def _rtt_samples(delays: _Delays) -> tuple[tuple[float, float], ...]:
    """The RTT samples thinned for the plots, their times picked without an array of them all."""
    index = thin_index(len(delays.sv))
    return tuple(zip(delays.times_of(index).tolist(), delays.sv[index].tolist(), strict=True))


def _wire_bytes(flen: np.ndarray) -> int:
    """The data frames' bytes on the wire (padded to the minimum frame, with the preamble and gap), by chunks."""
    return sum(int((np.maximum(flen[lo:lo + CHUNK].astype(np.int64), MIN_FRAME) + OVERHEAD).sum())
               for lo in range(0, len(flen), CHUNK))


def _base_rtt(values: np.ndarray) -> float:
    """``transfer.base_rtt`` of three or more samples: the lowest median of three in a row."""
    n, low = len(values) - 2, math.inf
    for lo in range(0, n, CHUNK):  # by chunks (each with the two values after it): no array per sample
        hi = min(lo + CHUNK, n)
        a, b, c = values[lo:hi], values[lo + 1:hi + 1], values[lo + 2:hi + 2]
        low = min(low, np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c)).min().item())
    return low
