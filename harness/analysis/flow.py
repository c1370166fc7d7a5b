"""One connection's frames as numpy columns, and its facts measured on them (no object per frame).

The analysis once read a list of ``Segment`` objects (about 0.4 kB a frame, plus the lists built
from it); that implementation stays in the tests (``tests/analysis_reference.py``) as the reference
they hold this module to. Here the same figures come from the scan's compact columns
(``scan.ConnectionColumns``, 24 bytes a frame, decoded as numpy arrays when read), every step
vectorised or looping only over what is rare (pauses, the handshake): the numbers are the same,
operation for operation (sums of floats in the same order, medians and percentiles of the same
values).
"""

from __future__ import annotations

from array import array
from collections import Counter
from typing import Any

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
from harness.analysis.scan import CHUNK, ConnectionColumns, Steps, Times, _view, decoded
from harness.analysis.scan_lines import BIT, FLAGS_SHIFT, SCALE_UNKNOWN, SIDE
from harness.analysis.series import LIMIT
from harness.analysis.sides import PerSide


def _index(mask: np.ndarray) -> np.ndarray:
    """The positions a mask selects, as 4-byte indices (8 if it is that long), found by chunks."""
    kind = np.int32 if len(mask) < 1 << 31 else np.int64
    return np.concatenate([np.zeros(0, kind), *(np.flatnonzero(mask[lo:lo + CHUNK]).astype(kind) + lo
                                                for lo in range(0, len(mask), CHUNK))])


class Flow:
    """Frames of one connection in columns; ``t`` is seconds from its first frame, ``side`` 0 or 1.

    A whole connection (``of``) keeps its columns as the scan made them, each decoded whenever it is read: the
    times (``scan.Times``, 4 bytes a frame; read as floats, 8), the whole numbers' steps (``scan.Steps``, 2 bytes
    a frame: ``seq``, ``ack``, ``win``, ``tsval``, ``tsecr``, ``bif``) and the lengths (``len``, ``flen``, 2 bytes
    each), the bits (4) and the side (1). ``parts`` splits it into flows of the frames one side sends and of the
    other's ACKs, plain numpy columns, only those the measure reads, freeing the whole connection's column by
    column. ``flags``, the TCP flags, are read from the bits.
    """

    def __init__(self, side: np.ndarray, bits: np.ndarray, columns: dict[str, Any],
                 rtt_at: np.ndarray, rtt: np.ndarray, nxt_at: np.ndarray, nxt_other: np.ndarray,
                 syn: Segment | None, synack: Segment | None, irtt: float | None, ends: list[Endpoint],
                 t0: float = 0.0) -> None:
        self.side, self.bits, self.columns, self.t0 = side, bits, columns, t0
        self.rtt_at, self.rtt = rtt_at, rtt
        self.nxt_at, self.nxt_other = nxt_at, nxt_other  # frames whose next sequence number is not seq + len
        self.syn, self.synack, self.irtt, self.ends = syn, synack, irtt, ends

    def __getattr__(self, name: str) -> np.ndarray:
        """A column: ``t`` or a whole-number one (``seq``, ``ack``, ``win``, ``len``, ``flen``, ``tsval``,
        ``tsecr``, ``bif``)."""
        columns = self.__dict__.get("columns")
        if columns is None or name not in columns:
            raise AttributeError(name)
        column = columns[name]
        if isinstance(column, np.ndarray):
            return column
        if isinstance(column, Times):
            return column.floats(self.t0)  # seconds from the first frame
        return column.decode(self.side)

    def take(self, name: str, index: np.ndarray) -> np.ndarray:
        """Column `name` of the frames `index` (ascending), decoded by chunks (no array of the whole column)."""
        column = self.columns[name]
        if isinstance(column, np.ndarray):
            return column[index]
        if isinstance(column, Times):
            return decoded(column.chunks(self.t0), len(self), np.dtype(np.float64), index)
        return decoded(column.chunks(self.side), len(self), column.dtype(), index)

    @property
    def flags(self) -> np.ndarray:
        """The TCP flags, 12 bits above the scan's own (by chunks: no 4-byte array of them all)."""
        out = np.empty(len(self.bits), np.uint16)
        for lo in range(0, len(out), CHUNK):
            out[lo:lo + CHUNK] = self.bits[lo:lo + CHUNK] >> FLAGS_SHIFT
        return out

    @classmethod
    def of(cls, columns: ConnectionColumns) -> Flow:
        """The columns taken from the scan (`columns` is left empty)."""
        bits = _view(columns.bits)
        side = ((bits & SIDE) != 0).astype(np.int8)
        taken = {"t": columns.t, **columns.stepped, **{k: _view(v) for k, v in columns.ints.items()}}
        columns.stepped = {k: Steps() for k in columns.stepped}
        columns.ints = {k: array(v.typecode) for k, v in columns.ints.items()}
        columns.t, columns.bits = Times(), array(columns.bits.typecode)
        rtt_at, rtt = _view(columns.rtt_at), _view(columns.rtt)
        columns.rtt_at, columns.rtt = array(columns.rtt_at.typecode), array("d")
        return cls(side, bits, taken, rtt_at, rtt, _view(columns.nxt_at),
                   _view(columns.nxt), columns.syn, columns.synack, columns.irtt, columns.ends, columns.t0)

    def parts(self, index: tuple[np.ndarray, ...], names: tuple[tuple[str, ...], ...]) -> tuple[Flow, ...]:
        """Flows of the frames of each `index` (ascending), with the columns `names` of each (and the times and
        bits); this flow's columns are freed one by one as they are taken, and this flow is left empty."""
        out = [Flow(np.zeros(0, np.int8), self.bits[i], {}, *_sparse(i, self.rtt_at, self.rtt),
                    *_sparse(i, self.nxt_at, self.nxt_other), self.syn, self.synack, self.irtt, self.ends)
               for i in index]
        self.bits, self.rtt_at, self.rtt = np.zeros(0, self.bits.dtype), np.zeros(0, np.int64), np.zeros(0)
        for name in sorted(self.columns, key=lambda k: k == "t"):  # the times (8 bytes a frame) last
            for part, i, n in zip(out, index, names, strict=True):
                if name == "t" or name in n:
                    part.columns[name] = self.take(name, i)
            del self.columns[name]
        self.side = np.zeros(0, np.int8)
        return tuple(out)

    def __len__(self) -> int:
        return len(self.bits)

    def end(self) -> float:
        """The last frame's time."""
        column = self.columns["t"]
        return column.last_float(self.t0) if isinstance(column, Times) else column[-1].item()

    def since(self, start: float) -> np.ndarray:
        """Frames at `start` or later (the times read by chunks)."""
        column = self.columns["t"]
        if not isinstance(column, Times):
            return column >= start
        out = np.empty(len(self), bool)
        for lo, t in column.chunks(self.t0):
            out[lo:lo + len(t)] = t >= start
        return out

    def drop(self, *names: str) -> None:
        """Free columns the measure has no more use for."""
        for name in names:
            self.columns.pop(name, None)

    def nxt(self, index: np.ndarray | slice = slice(None), seq: np.ndarray | None = None) -> np.ndarray:
        """tshark's next sequence number of the frames `index` (ascending, or a slice): seq + len, or what
        tshark said (`seq`: the sequence numbers already decoded)."""
        if isinstance(index, slice):
            start, stop, _ = index.indices(len(self))
            out = self.seq[start:stop].astype(np.int64) + self.len[start:stop]
            a, b = np.searchsorted(self.nxt_at, [start, stop])
            out[self.nxt_at[a:b] - start] = self.nxt_other[a:b]
            return out
        out = (self.seq if seq is None else seq)[index].astype(np.int64) + self.len[index]
        if len(self.nxt_at) and len(index):
            k = np.minimum(np.searchsorted(index, self.nxt_at), len(index) - 1)
            hit = index[k] == self.nxt_at
            out[k[hit]] = self.nxt_other[hit]
        return out

    def has(self, name: str) -> np.ndarray:
        """Frames where tshark gave the field (one of ``scan_lines._FLAGS``)."""
        return self.bit(BIT[name])

    def bit(self, bit: int) -> np.ndarray:
        """Frames with that bit set (by chunks: no 4-byte array of them all)."""
        out = np.empty(len(self.bits), bool)
        for lo in range(0, len(out), CHUNK):
            out[lo:lo + CHUNK] = (self.bits[lo:lo + CHUNK] & bit) != 0
        return out

    def ack_rtt(self, where: np.ndarray) -> np.ndarray:
        """tshark's ACK RTTs of the frames `where` (a mask) selects, in frame order."""
        return self.rtt[where[self.rtt_at]]

    def ack_rtt_dense(self) -> np.ndarray:
        """The ACK RTT of each frame (NaN where tshark gave none)."""
        out = np.full(len(self), np.nan)
        out[self.rtt_at] = self.rtt
        return out

    def count(self, name: str, where: np.ndarray | None = None) -> int:
        has = self.has(name)
        return int(np.count_nonzero(has if where is None else has & where))


def _sparse(index: np.ndarray, at: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sparse values at frames `at` of a flow, as the positions in `index` (ascending) of those it holds."""
    if not len(index) or not len(at):
        return np.zeros(0, np.int64), values[:0]
    k = np.minimum(np.searchsorted(index, at), len(index) - 1)
    hit = index[k] == at
    return k[hit].astype(index.dtype), values[hit]


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
        flags = f.flags
        hits = np.flatnonzero((f.side == syn.side) & f.since(synack.t) & ((flags & ACK) != 0) & ((flags & SYN) == 0))
        vote = _handshake_vote(syn, synack, f.take("t", hits[:1])[0].item()) if len(hits) else None
        del flags
        votes = [vote] if vote is not None else []
    no_syn = (f.flags & SYN) == 0
    med = [median_of(f.ack_rtt((f.side == side) & no_syn)) for side in (0, 1)]
    return _near_by_votes(votes, med)


def _roles(f: Flow, device_ip: str | None, captured_at: str | None) -> _Roles:
    near, near_why = _near_side(f, f.syn, f.synack)
    device, identified_by = _device_side(f.ends, device_ip, near, near_why, f.synack)
    if captured_at is not None:
        near = device if captured_at == "device" else 1 - device
    return _Roles(device, near, identified_by)


# ------------------------------------------------------------------ per side


def _counter(values: np.ndarray) -> Counter:
    """``Counter(values)``, its keys in the order they first occur (``most_common`` breaks ties by it); counted
    by chunks against the distinct values (no index per value)."""
    unique = np.unique(values)
    counts = np.zeros(len(unique), np.int64)
    first = np.full(len(unique), len(values))
    for lo in range(0, len(values), CHUNK):
        codes = np.searchsorted(unique, values[lo:lo + CHUNK])
        counts += np.bincount(codes, minlength=len(unique))
        seen, at = np.unique(codes, return_index=True)
        first[seen] = np.minimum(first[seen], at + lo)
    order = np.argsort(first, kind="stable")
    return Counter(dict(zip(unique[order].tolist(), counts[order].tolist(), strict=True)))


def _windows(f: Flow, index: int) -> tuple[WindowStats, tuple[tuple[float, int], ...]]:
    """The reference's ``_windows`` on columns."""
    flags = f.flags
    acks = _index((f.side == index) & ((flags & ACK) != 0) & ((flags & (SYN | RST)) == 0))
    del flags
    stats = WindowStats(count=len(acks))
    shown = acks[thin_index(len(acks))]
    win = f.win
    wins, shown_win = win[acks], win[shown]  # in the column's own type: the same counts, median and extremes
    del win
    if len(acks):
        stats.values = _counter(wins)
        stats.min, stats.max = int(wins.min()), int(wins.max())
        stats.median = median_of(wins)
        stats.unknown_scale = bool(np.any(f.bits[acks] & SCALE_UNKNOWN))
    return stats, pairs(np.arange(len(shown)), f.take("t", shown), shown_win)


def _segments_per_ack(f: Flow, index: int) -> float | None:
    """The reference's ``_segments_per_ack`` on columns: the running ends as cumulative maxima, by chunks."""
    data = _index((f.side != index) & (f.len > 0) & ~f.has("keepalive"))
    data_in = len(data)
    if not len(data):
        return None
    flags = f.flags
    mine = _index((f.side == index) & ((flags & ACK) != 0) & ((flags & SYN) == 0))
    del flags
    if len(mine) < 2:
        return None
    acks = f.ack[mine]
    seq = f.seq
    # by chunks of my ACKs, in order: the running end of the other side's data at each (the highest end of its
    # data frames so far, `high` up to frame `done`) and the highest of my ACKs before it (`last`)
    advancing, last, high, done = 0, None, None, 0
    for lo in range(1, len(acks), CHUNK):
        hi = min(lo + CHUNK, len(acks))
        ack, run = acks[lo:hi].astype(np.int64), np.maximum.accumulate(acks[lo - 1:hi - 1].astype(np.int64))
        if last is not None:
            run = np.maximum(run, last)
        last = run[-1]
        k = np.searchsorted(data, mine[lo:hi], side="right") - 1  # its last data frame before (or at) the ACK
        top = int(k[-1]) + 1
        ends = np.maximum.accumulate(f.nxt(data[done:top], seq)) if top > done else np.zeros(0, np.int64)
        if high is not None:
            ends = np.maximum(ends, high)
        # each ACK's end: the running end at its last data frame (`high`: before this chunk's data frames)
        end = np.r_[high if high is not None else 0, ends][np.maximum(k - done + 1, 0)]
        if len(ends):
            high, done = ends[-1], top
        advancing += int(np.count_nonzero((ack > run) & (k >= 0) & (ack <= end)))
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
    duration = f.end()
    facts = ConnectionFacts(
        device=f.ends[roles.device], peer=f.ends[1 - roles.device], device_identified_by=roles.identified_by,
        capture_near=roles.name(roles.near) if roles.near is not None else "device",
        sender=None if snd is None else roles.name(snd),
        handshake=handshake, initial_rtt_ms=None if f.irtt is None else f.irtt * 1e3, duration_s=duration,
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
