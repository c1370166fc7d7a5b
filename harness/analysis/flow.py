"""One connection's frames as numpy columns, and its facts measured on them (no object per frame).

The analysis once read a list of ``Segment`` objects (about 0.4 kB a frame, plus the lists built
from it); that implementation stays in the tests (``tests/analysis_reference.py``) as the reference
they hold this module to. Here the same figures come from the scan's compact columns
(``scan.ConnectionColumns``, about 44 bytes a frame) read in place as numpy arrays, every step
vectorised or looping only over what is rare (pauses, the handshake): the numbers are the same,
operation for operation (sums of floats in the same order, medians and percentiles of the same
values).
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass

import numpy as np

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
from harness.analysis.numbers import median_of
from harness.analysis.scan import ConnectionColumns
from harness.analysis.scan_lines import BIT, FLAGS_SHIFT, HAS_BIF, HAS_TSECR, SCALE_UNKNOWN, SIDE
from harness.analysis.series import LIMIT
from harness.analysis.sides import PerSide


def _view(column) -> np.ndarray:
    """A typed array read in place, as numpy (no copy)."""
    return np.frombuffer(column, dtype=np.dtype(column.typecode)) if len(column) else np.zeros(0, column.typecode)


@dataclass
class Flow:
    """The frames of one connection in columns; ``t`` is seconds from its first frame, ``side`` 0 or 1."""

    t: np.ndarray
    side: np.ndarray
    bits: np.ndarray
    flags: np.ndarray
    seq: np.ndarray
    ack: np.ndarray
    len: np.ndarray
    flen: np.ndarray
    win: np.ndarray
    tsval: np.ndarray
    tsecr: np.ndarray
    bif: np.ndarray
    rtt_at: np.ndarray
    rtt: np.ndarray
    nxt_at: np.ndarray   # frames whose next sequence number is not seq + len (a SYN, a FIN), and theirs
    nxt_other: np.ndarray
    syn: Segment | None
    synack: Segment | None
    irtt: float | None
    ends: list[Endpoint]

    @classmethod
    def of(cls, columns: ConnectionColumns) -> Flow:
        """The columns read in place; the flow takes them (`columns` is left empty), so that a column is freed
        once the measure has used it (``drop``)."""
        i = {k: _view(v) for k, v in columns.ints.items()}
        columns.ints = {k: array(v.typecode) for k, v in columns.ints.items()}
        bits = _view(columns.bits)
        t = _view(columns.t)
        columns.t, columns.bits = array("d"), array(columns.bits.typecode)
        t -= columns.t0  # seconds from the first frame, in place: the columns are the chosen connection's own
        flags = (bits >> FLAGS_SHIFT).astype(np.uint16)  # the TCP flags, 12 bits above the scan's own
        return cls(t, ((bits & SIDE) != 0).astype(np.int8), bits, flags, i["seq"],
                   i["ack"], i["len"], i["flen"], i["win"], i["tsval"], i["tsecr"], i["bif"],
                   _view(columns.rtt_at), _view(columns.rtt), _view(columns.nxt_at), _view(columns.nxt),
                   columns.syn, columns.synack, columns.irtt, columns.ends)

    def __len__(self) -> int:
        return len(self.t)

    def drop(self, *names: str) -> None:
        """Free columns the measure has no more use for (4 bytes a frame each)."""
        for name in names:
            setattr(self, name, np.zeros(0, getattr(self, name).dtype))

    def nxt(self, index: np.ndarray) -> np.ndarray:
        """tshark's next sequence number of the frames `index` (ascending): seq + len, or what tshark said."""
        out = self.seq[index].astype(np.int64) + self.len[index]
        if len(self.nxt_at) and len(index):
            k = np.minimum(np.searchsorted(index, self.nxt_at), len(index) - 1)
            hit = index[k] == self.nxt_at
            out[k[hit]] = self.nxt_other[hit]
        return out

    def has(self, name: str) -> np.ndarray:
        """Frames where tshark gave the field (one of ``scan_lines._FLAGS``)."""
        return (self.bits & BIT[name]) != 0

    def has_tsecr(self) -> np.ndarray:
        return (self.bits & HAS_TSECR) != 0

    def has_bif(self) -> np.ndarray:
        return (self.bits & HAS_BIF) != 0

    def ack_rtt(self, where: np.ndarray) -> np.ndarray:
        """tshark's ACK RTTs of the frames `where` (a mask) selects, in frame order."""
        return self.rtt[where[self.rtt_at]]

    def ack_rtt_dense(self, index: np.ndarray) -> np.ndarray:
        """The ACK RTT of each frame of `index` (NaN where tshark gave none)."""
        out = np.full(len(self), np.nan)
        out[self.rtt_at] = self.rtt
        return out[index]

    def count(self, name: str, where: np.ndarray | None = None) -> int:
        has = self.has(name)
        return int(np.count_nonzero(has if where is None else has & where))


def thin_index(n: int, keep: np.ndarray | None = None, limit: int = LIMIT) -> np.ndarray:
    """The indices ``series.thin`` keeps of n points (``keep``: the mask of points wanted): every stride-th and
    the last, and the first wanted ones of the rest (built from the strides, not an index per point)."""
    if n <= limit:
        return np.arange(n)
    wanted = limit // 2 if keep is not None else 0
    stride = -(-n // (limit - wanted - 1))
    base = np.union1d(np.arange(0, n, stride), [n - 1])
    if not wanted or keep is None:
        return base
    rest = keep.copy()
    rest[base] = False
    return np.union1d(base, np.flatnonzero(rest)[:wanted])


def pairs(index: np.ndarray, *columns: np.ndarray) -> tuple[tuple, ...]:
    """Tuples of Python numbers, one per index, of the columns."""
    return tuple(zip(*(c[index].tolist() for c in columns), strict=True))


# ------------------------------------------------------------------ who is who


def _near_side(f: Flow, syn: Segment | None, synack: Segment | None) -> tuple[int | None, str]:
    """The reference's ``_near_side`` on columns."""
    votes = []
    if syn is not None and synack is not None and synack.t >= syn.t:
        match = (f.side == syn.side) & (f.t >= synack.t) & ((f.flags & ACK) != 0) & ((f.flags & SYN) == 0)
        hits = np.flatnonzero(match)
        vote = _handshake_vote(syn, synack, f.t[hits[0]].item()) if len(hits) else None
        votes = [vote] if vote is not None else []
    med = [median_of(f.ack_rtt((f.side == side) & ((f.flags & SYN) == 0))) for side in (0, 1)]
    return _near_by_votes(votes, med)


def _roles(f: Flow, device_ip: str | None, captured_at: str | None) -> _Roles:
    near, near_why = _near_side(f, f.syn, f.synack)
    device, identified_by = _device_side(f.ends, device_ip, near, near_why, f.synack)
    if captured_at is not None:
        near = device if captured_at == "device" else 1 - device
    return _Roles(device, near, identified_by)


# ------------------------------------------------------------------ per side


def _counter(values: np.ndarray) -> Counter:
    """``Counter(values)``, its keys in the order they first occur (``most_common`` breaks ties by it)."""
    unique, first, counts = np.unique(values, return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    return Counter(dict(zip(unique[order].tolist(), counts[order].tolist(), strict=True)))


def _windows(f: Flow, index: int) -> tuple[WindowStats, tuple[tuple[float, int], ...]]:
    """The reference's ``_windows`` on columns."""
    acks = np.flatnonzero((f.side == index) & ((f.flags & ACK) != 0) & ((f.flags & (SYN | RST)) == 0))
    acks = acks.astype(np.int32) if len(f) < 1 << 31 else acks
    stats = WindowStats(count=len(acks))
    if len(acks):
        wins = f.win[acks]  # in the column's own type: the same counts, median and extremes as Python ints
        stats.values = _counter(wins)
        stats.min, stats.max = int(wins.min()), int(wins.max())
        stats.median = median_of(wins)
        stats.unknown_scale = bool(np.any(f.bits[acks] & SCALE_UNKNOWN))
    t, win = f.t[acks], f.win[acks]
    return stats, pairs(thin_index(len(acks)), t, win)


def _segments_per_ack(f: Flow, index: int) -> float | None:
    """The reference's ``_segments_per_ack`` on columns: the running ends as cumulative maxima."""
    other_data = (f.side != index) & (f.len > 0) & ~f.has("keepalive")
    data_in = int(np.count_nonzero(other_data))
    data = np.flatnonzero(other_data)
    if not len(data):
        return None
    mine = np.flatnonzero((f.side == index) & ((f.flags & ACK) != 0) & ((f.flags & SYN) == 0))
    acks = f.ack[mine].astype(np.int64)
    if len(acks) < 2:
        return None
    last = np.maximum.accumulate(acks)[:-1]
    # the running end of the other side's data at each of my ACKs: the highest end of its data frames so far
    ends = np.maximum.accumulate(f.nxt(data))
    k = np.searchsorted(data, mine[1:], side="right") - 1  # its last data frame before (or at) the ACK
    seen = k >= 0
    end = ends[np.maximum(k, 0)]
    advancing = int(np.count_nonzero((acks[1:] > last) & seen & (acks[1:] <= end)))
    return round(data_in / advancing, 3) if data_in and advancing else None


def _sender(f: Flow) -> int | None:
    sent = [int(f.len[(f.side == side) & ~f.has("retrans")].sum(dtype=np.int64)) for side in (0, 1)]
    if max(sent) == 0:
        return None
    return 0 if sent[0] >= sent[1] else 1


def connection_facts(f: Flow, conn: int, device_ip: str | None,
                     captured_at: str | None) -> tuple[ConnectionFacts, _Roles, int | None]:
    """The reference's ``connection_facts`` on columns: the same facts, roles and sending end."""
    roles = _roles(f, device_ip, captured_at)
    handshake = _handshake(f.syn, f.synack, roles)
    windows = PerSide.of(lambda side: _windows(f, roles.index(side)))

    def per_side(count) -> PerSide:
        return PerSide.of(lambda side: count(roles.index(side)))

    lost = f.count("lost")
    snd = _sender(f)
    facts = ConnectionFacts(
        device=f.ends[roles.device], peer=f.ends[1 - roles.device], device_identified_by=roles.identified_by,
        capture_near=roles.name(roles.near) if roles.near is not None else "device",
        sender=None if snd is None else roles.name(snd),
        handshake=handshake, initial_rtt_ms=None if f.irtt is None else f.irtt * 1e3, duration_s=f.t[-1].item(),
        windows=windows.map(lambda w: w[0]), window_series=windows.map(lambda w: w[1]),
        retransmissions=f.count("retrans"), fast_retransmissions=f.count("fast"),
        spurious_retransmissions=f.count("spurious"), window_full=f.count("winfull"),
        out_of_order=f.count("ooo"), lost_segments=lost,
        dup_acks=per_side(lambda i: f.count("dupack", f.side == i)),
        zero_windows=per_side(lambda i: f.count("zerowin", f.side == i)),
        segments_per_ack=per_side(lambda i: _segments_per_ack(f, i)),
        empty_reason=f"connection {conn} carries no payload" if snd is None else None,
        warnings=_warnings(roles, handshake, lost),
    )
    return facts, roles, snd
