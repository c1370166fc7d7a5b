"""One pass over tshark's rows as they come: the capture's facts, and each connection's frames in columns.

A row of tshark's text costs about 1.7 kB as Python strings, a ``Segment`` about 0.4 kB; a frame here costs one
number per column in compact typed arrays (24 bytes a frame: the time and the 32-bit TCP numbers as steps from
the side's previous frame, ``ConnectionColumns``; tshark's ACK RTT, 12 bytes where given, comes on top), and no
row is kept once read. What the whole capture needs (frame counts, snap length, the connections' tallies,
what the frames carry when none is TCP) are counters. ``CaptureScan.finish`` gives the same
``CaptureFacts`` as ``frames.select_connection`` on the list of rows; ``flow.Flow`` reads the chosen
connection's columns as numpy arrays, without one object per frame. tshark's lines come in blocks
(``read_blocks``), read as columns at once by ``scan_lines``; ``read`` takes rows one by one, as
the rare lines of a block are taken.
"""
from __future__ import annotations

import re
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

import numpy as np

from harness.analysis.capture import COLUMN, FIELDS, Row, block_rows
from harness.analysis.frames import (
    ACK,
    SYN,
    CaptureFacts,
    Connection,
    Endpoint,
    Segment,
    _choose,
    _float,
    _int,
    _Tally,
    _Truncation,
    endpoints,
    transport,
)
from harness.analysis.frames import segments as frames_segments
from harness.analysis.scan_lines import (  # the bits' layout, with the block reading that fills them
    FLAG_COLUMNS,
    FLAGS_SHIFT,
    HAS_ACK_RTT,
    HAS_BIF,
    HAS_TSECR,
    SCALE_UNKNOWN,
    SIDE,
    Lines,
    Parsed,
    icmp_rows,
)

# tshark's TCP numbers (sequence, ACK, window, timestamps, bytes in flight) are 32-bit, but from one frame of a
# side to its next they move by small steps: each is kept as its step from the same side's previous frame, 2 bytes,
# with the rare larger steps kept apart (``Steps``). The next sequence number is not kept: it is seq + len but
# where tshark says otherwise (SYN, FIN: sparse)
_STEPPED = ("seq", "ack", "win", "tsval", "tsecr", "bif")
_U16 = ("len", "flen")  # a frame is at most 64 kB: 2 bytes (widened to 8 if one is not)
_LIMIT = {"I": 0xFFFFFFFF, "H": 0xFFFF}
_C = COLUMN
_STEP = 1 << 15            # a step in -_STEP.._STEP-1 fits the 2-byte column
_NS_STEP = 1 << 32         # a time step of 0..4.29 s fits the 4-byte column, in nanoseconds
_NS_TOP = 1 << 53          # nanoseconds below this are exact floats
_NS_TEXT = re.compile(r"[0-9]*\.[0-9]{9}")


def _append(column: array, value: int) -> array:
    """`column` with `value` appended: the same array, or an 8-byte copy if the value does not fit its type."""
    try:
        column.append(value)
    except OverflowError:
        column = array("q", column)
        column.append(value)
    return column


def _extend(column: array, values: np.ndarray) -> array:
    """`column` with `values` appended (widened to 8 bytes first if one does not fit its type)."""
    top = _LIMIT.get(column.typecode)
    if top is not None and len(values) and (int(values.max()) > top or int(values.min()) < 0):
        column = array("q", column)
    column.frombytes(values.astype(column.typecode, copy=False).tobytes())
    return column


def _view(column: array) -> np.ndarray:
    """A typed array read in place, as numpy (no copy)."""
    return np.frombuffer(column, dtype=np.dtype(column.typecode)) if len(column) else np.zeros(0, column.typecode)


CHUNK = 1 << 18  # frames decoded at a time


@dataclass
class Steps:
    """A whole-number column of a connection, 2 bytes a frame: each frame's step from the previous frame of its
    side (0 for a side's first from 0); a step that does not fit is 0 there and kept apart, with its frame index."""

    steps: array = field(default_factory=lambda: array("h"))
    last: list[int] = field(default_factory=lambda: [0, 0])   # each side's last value
    big_at: array = field(default_factory=lambda: array("I"))
    big: array = field(default_factory=lambda: array("q"))
    wide: bool = False     # a value outside 0..2**32-1: decoded as 8-byte numbers

    def append(self, value: int, side: int) -> None:
        step = value - self.last[side]
        self.last[side] = value
        self.wide |= not 0 <= value <= 0xFFFFFFFF
        if -_STEP <= step < _STEP:
            self.steps.append(step)
            return
        self.big_at = _append(self.big_at, len(self.steps))
        self.big.append(step)
        self.steps.append(0)

    def extend(self, values: np.ndarray, side: np.ndarray) -> None:
        """``append`` of each value (int64) of frames from side `side` (bool: side 1)."""
        if not len(values):
            return
        prev = np.empty_like(values)
        for s, mine in ((0, np.flatnonzero(~side)), (1, np.flatnonzero(side))):
            if len(mine):
                prev[mine[0]] = self.last[s]
                prev[mine[1:]] = values[mine[:-1]]
                self.last[s] = int(values[mine[-1]])
        step = values - prev
        self.wide |= bool(values.min() < 0 or values.max() > 0xFFFFFFFF)
        big = np.flatnonzero((step < -_STEP) | (step >= _STEP))
        if len(big):
            self.big_at = _extend(self.big_at, big + len(self.steps))
            self.big.frombytes(step[big].tobytes())
            step[big] = 0
        self.steps.frombytes(step.astype(np.int16).tobytes())

    def __len__(self) -> int:
        return len(self.steps)

    def arrays(self) -> tuple[array, ...]:
        return self.steps, self.big_at, self.big

    def dtype(self) -> np.dtype:
        return np.dtype(np.int64 if self.wide else np.uint32)

    def chunks(self, side: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        """The values (`side`: each frame's side), a chunk of frames at a time, with the first's index: the
        running sums of each side's steps."""
        steps, big_at, big = _view(self.steps), _view(self.big_at), _view(self.big)
        carry = [0, 0]
        for lo in range(0, len(steps), CHUNK):
            part = steps[lo:lo + CHUNK].astype(np.int64)
            a, b = np.searchsorted(big_at, [lo, lo + len(part)])
            part[big_at[a:b] - lo] = big[a:b]
            ones = side[lo:lo + CHUNK] != 0
            out = np.empty(len(part), self.dtype())
            for s, mine in ((0, ~ones), (1, ones)):
                sums = np.cumsum(part[mine]) + carry[s]
                if len(sums):
                    out[mine] = sums
                    carry[s] = int(sums[-1])
            yield lo, out

    def decode(self, side: np.ndarray) -> np.ndarray:
        """The values, one per frame, as uint32 (int64 if one does not fit)."""
        return decoded(self.chunks(side), len(self), self.dtype())


def decoded(chunks: Iterable[tuple[int, np.ndarray]], n: int, dtype: np.dtype,
            index: np.ndarray | None = None) -> np.ndarray:
    """The values of the frames `index` (ascending; all when None) of a column given by chunks."""
    out = np.empty(n if index is None else len(index), dtype)
    for lo, part in chunks:
        if index is None:
            out[lo:lo + len(part)] = part
        else:
            a, b = np.searchsorted(index, [lo, lo + len(part)])
            out[a:b] = part[index[a:b] - lo]
    return out


def _nanoseconds(text: str) -> int:
    """A time with nine decimals (tshark's) in nanoseconds, an exact float once divided by 1e9; -1 if not such."""
    if not _NS_TEXT.fullmatch(text):
        return -1
    ns = int(text.replace(".", ""))
    return ns if ns < _NS_TOP else -1


@dataclass
class Times:
    """The frames' times, 4 bytes a frame: each one's step in nanoseconds from the previous frame whose time is
    whole nanoseconds (the first such: ``base``); a step back or of 4.29 s or more is 0 there and kept apart (12
    bytes), and so is a time that is not whole nanoseconds, as tshark's float (its step 0). ``floats`` gives
    Python's ``float`` of each time's text: the nanoseconds, exact below 2**53, divided by 1e9 (one correctly
    rounded division, as ``float`` rounds the text)."""

    steps: array = field(default_factory=lambda: array("I"))
    base: int = -1
    last: int = -1
    big_at: array = field(default_factory=lambda: array("I"))
    big: array = field(default_factory=lambda: array("q"))
    odd_at: array = field(default_factory=lambda: array("I"))
    odd: array = field(default_factory=lambda: array("d"))

    def append(self, ns: int, t: float) -> None:
        n = len(self.steps)
        if ns < 0:
            self.odd_at = _append(self.odd_at, n)
            self.odd.append(t)
            self.steps.append(0)
        elif self.last < 0:
            self.base = self.last = ns
            self.steps.append(0)
        else:
            step, self.last = ns - self.last, ns
            if 0 <= step < _NS_STEP:
                self.steps.append(step)
                return
            self.big_at = _append(self.big_at, n)
            self.big.append(step)
            self.steps.append(0)

    def extend(self, ns: np.ndarray, t: np.ndarray) -> None:
        """``append`` of each (ns: -1 where the time is not whole nanoseconds); at once when each is."""
        if not len(ns):
            return
        if self.last < 0 or np.any(ns < 0):
            for n, v in zip(ns.tolist(), t.tolist(), strict=True):
                self.append(n, v)
            return
        step = np.diff(ns, prepend=self.last)
        big = np.flatnonzero((step < 0) | (step >= _NS_STEP))
        if len(big):
            self.big_at = _extend(self.big_at, big + len(self.steps))
            self.big.frombytes(step[big].tobytes())
            step[big] = 0
        self.steps.frombytes(step.astype(np.uint32).tobytes())
        self.last = int(ns[-1])

    def __len__(self) -> int:
        return len(self.steps)

    def arrays(self) -> tuple[array, ...]:
        return self.steps, self.big_at, self.big, self.odd_at, self.odd

    def chunks(self, t0: float = 0.0) -> Iterator[tuple[int, np.ndarray]]:
        """The times less `t0`, a chunk of frames at a time, with the first's index."""
        steps, big_at, big = _view(self.steps), _view(self.big_at), _view(self.big)
        odd_at, odd = _view(self.odd_at), _view(self.odd)
        carry = self.base
        for lo in range(0, len(steps), CHUNK):
            part = steps[lo:lo + CHUNK].astype(np.int64)
            a, b = np.searchsorted(big_at, [lo, lo + len(part)])
            part[big_at[a:b] - lo] = big[a:b]
            ns = np.cumsum(part) + carry
            carry = int(ns[-1])
            out = ns / 1e9
            a, b = np.searchsorted(odd_at, [lo, lo + len(out)])
            out[odd_at[a:b] - lo] = odd[a:b]
            out -= t0
            yield lo, out

    def last_float(self, t0: float = 0.0) -> float:
        """The last frame's time less `t0` (as ``floats`` gives it)."""
        if len(self.odd_at) and self.odd_at[-1] == len(self.steps) - 1:
            return self.odd[-1] - t0
        return self.last / 1e9 - t0

    def floats(self, t0: float = 0.0) -> np.ndarray:
        """The times less `t0`, one float per frame."""
        return decoded(self.chunks(t0), len(self), np.dtype(np.float64))


def _segment(r: Row, side: int, t: float) -> Segment:
    """One frame as ``frames.segments`` reads it (kept only for the handshake's SYN and SYN-ACK)."""
    seg = frames_segments([r])[0][0]
    seg.side, seg.t = side, t
    return seg


@dataclass
class ConnectionColumns:
    """The frames of one connection in compact columns, 24 bytes a frame: the time's step (4 bytes, ``Times``),
    the sequence and ACK numbers, window, timestamps and bytes in flight as steps (``Steps``, 2 bytes each), the
    payload and frame lengths (2 bytes each), the bits (4 bytes: flags, side, what tshark gave); the rare values
    that do not fit kept apart (12 bytes each).

    What only the handshake needs (MSS, window scale, SACK, the initial RTT) is kept once, as the first
    SYN's and SYN-ACK's ``Segment``; tshark's ACK RTT, present on a part of the frames, is kept sparse (12 bytes
    each: its frame's index and its value), and so is its next sequence number where it is not seq + len.
    """

    first: tuple[str, int]   # source (address, port) of the connection's first frame: side 0
    t0: float                # its time
    ends: list[Endpoint]
    stepped: dict[str, Steps] = field(default_factory=lambda: {k: Steps() for k in _STEPPED})
    ints: dict[str, array] = field(default_factory=lambda: {k: array("H") for k in _U16})
    t: Times = field(default_factory=Times)
    bits: array = field(default_factory=lambda: array("I"))
    rtt_at: array = field(default_factory=lambda: array("I"))   # frame index of each ACK RTT
    rtt: array = field(default_factory=lambda: array("d"))
    nxt_at: array = field(default_factory=lambda: array("I"))   # frame index where nxtseq is not seq + len
    nxt: array = field(default_factory=lambda: array("q"))
    syn: Segment | None = None       # the first SYN without ACK
    synack: Segment | None = None    # the first SYN-ACK
    irtt: float | None = None        # tshark's initial RTT, first seen

    def add(self, r: Row, t: float | None = None) -> None:
        c = _C
        seq = int(r[c["seq"]]) if r[c["seq"]] else 0
        length = int(r[c["tcplen"]]) if r[c["tcplen"]] else 0
        flags = int(r[c["flags"]], 16) if r[c["flags"]] else 0
        side = 0 if ((r[c["ip_src"]] or r[c["ip6_src"]]), int(r[c["sport"]])) == self.first else 1
        t = float(r[c["t"]]) if t is None else t
        bits = (SIDE if side else 0) | flags << FLAGS_SHIFT
        for column, bit in FLAG_COLUMNS:
            if r[column]:
                bits |= bit
        tsecr, bif = _int(r[c["tsecr"]]), _int(r[c["bif"]])
        bits |= (SCALE_UNKNOWN if r[c["scale"]] and int(r[c["scale"]]) == -1 else 0) | (
            HAS_TSECR if tsecr is not None else 0) | (HAS_BIF if bif is not None else 0)
        n = len(self.bits)
        rtt = _float(r[c["ack_rtt"]])
        if rtt is not None:
            bits |= HAS_ACK_RTT
            self.rtt_at.append(n)
            self.rtt.append(rtt)
        nxt = r[c["nxtseq"]]
        if nxt and int(nxt) != seq + length:
            self.nxt_at.append(n)
            self.nxt.append(int(nxt))
        values = (seq, int(r[c["ack"]]) if r[c["ack"]] else 0, int(r[c["win"]]) if r[c["win"]] else 0,
                  _int(r[c["tsval"]]) or 0, tsecr or 0, bif or 0)
        for name, value in zip(_STEPPED, values, strict=True):
            self.stepped[name].append(value, side)
        self.ints["len"] = _append(self.ints["len"], length)
        self.ints["flen"] = _append(self.ints["flen"], int(r[c["len"]]))
        self.t.append(_nanoseconds(r[c["t"]]), t)
        self.bits = _append(self.bits, bits)
        if self.irtt is None:
            self.irtt = _float(r[c["irtt"]])
        if flags & SYN and ((flags & ACK and self.synack is None) or (not flags & ACK and self.syn is None)):
            seg = _segment(r, side, t - self.t0)
            if flags & ACK:
                self.synack = seg
            else:
                self.syn = seg

    def extend(self, lines: Lines, rows: np.ndarray, p: Parsed, side: np.ndarray) -> None:
        """The frames `rows` of a block (``add`` on each of them, at once): none is a SYN."""
        n = len(self.bits)
        seq, length = p.seq[rows], p.len[rows]
        nxt = p.nxtseq[rows]
        other = np.flatnonzero(p.has_nxtseq[rows] & (nxt != seq + length))
        if len(other):
            self.nxt_at = _extend(self.nxt_at, other + n)
            self.nxt.frombytes(nxt[other].tobytes())
        rtt = p.ack_rtt[rows]
        has_rtt = np.flatnonzero(~np.isnan(rtt))
        if len(has_rtt):
            self.rtt_at = _extend(self.rtt_at, has_rtt + n)
            self.rtt.frombytes(rtt[has_rtt].tobytes())
        for name in _STEPPED:
            self.stepped[name].extend(getattr(p, name)[rows], side)
        self.ints["len"] = _extend(self.ints["len"], length)
        self.ints["flen"] = _extend(self.ints["flen"], p.flen[rows])
        self.t.extend(p.t_ns[rows], p.t[rows])
        self.bits = _extend(self.bits, p.bits[rows] | np.where(side, SIDE, 0))
        if self.irtt is None:
            has_irtt = np.flatnonzero(lines.present(_C["irtt"], rows))
            if len(has_irtt):
                self.irtt = _float(lines.text(int(rows[has_irtt[0]]), _C["irtt"]))

    def __len__(self) -> int:
        return len(self.bits)

    def nbytes(self) -> int:
        arrays = [*self.ints.values(), *(a for k in self.stepped.values() for a in k.arrays()), *self.t.arrays(),
                  self.bits, self.rtt_at, self.rtt, self.nxt_at, self.nxt]
        return sum(a.buffer_info()[1] * a.itemsize for a in arrays)


def _tally_rows(tally: _Tally, forward: np.ndarray, lengths: np.ndarray, t: np.ndarray) -> None:
    """``_Tally.add`` of frames that are not SYNs, at once: `forward` from its side a, `lengths` of payload."""
    tally.frames += len(t)
    for sent, ahead in ((forward, True), (~forward, False)):
        nbytes = int(lengths[sent].sum())
        data = np.flatnonzero(sent & (lengths > 0))
        if ahead:
            tally.bytes_a_to_b += nbytes
        else:
            tally.bytes_b_to_a += nbytes
        if len(data):
            span = getattr(tally, "data_a" if ahead else "data_b")
            span = (span[0] if span else t[data[0]].item(), t[data[-1]].item())
            setattr(tally, "data_a" if ahead else "data_b", span)
    tally.end = t[-1].item()


@dataclass
class CaptureScan:
    """The capture read once, row by row: counters for the whole capture, columns per connection."""

    frames: int = 0
    complete: int = 0
    cut: int = 0                      # frames the snap length cut short
    snaplen: int = 0
    tcp_headers_cut: int = 0
    kinds: Counter = field(default_factory=Counter)   # what the complete frames carry (while none is TCP)
    tallies: dict[int, _Tally] = field(default_factory=dict)
    columns: dict[int, ConnectionColumns] = field(default_factory=dict)

    def add(self, r: Row) -> None:
        c = _C
        self.frames += 1
        if len(r) != len(FIELDS):
            return
        self.complete += 1
        if r[c["caplen"]] != r[c["len"]]:
            self.cut += 1
            self.snaplen = max(self.snaplen, int(r[c["caplen"]]))
            if not r[c["stream"]] and "6" in (r[c["ip_proto"]], r[c["ip6_nxt"]]):
                self.tcp_headers_cut += 1
        stream_text = r[c["stream"]]
        if not stream_text or "icmp" in r[c["protocols"]]:
            if not self.tallies:  # only needed to say what a capture without TCP holds
                self.kinds[transport(r[c["protocols"]])] += 1
            return
        stream = int(stream_text)
        t = float(r[c["t"]])
        tally = self.tallies.get(stream)
        if tally is None:
            ends = endpoints(r)
            tally = self.tallies[stream] = _Tally(*ends, start=t, end=t)
            self.columns[stream] = ConnectionColumns((ends[0].ip, ends[0].port), t, list(ends))
        tally.add(r, t)
        self.columns[stream].add(r, t)

    def read(self, rows: Iterable[Row]) -> CaptureScan:
        for r in rows:
            self.add(r)
        return self

    def read_blocks(self, blocks: Iterable[bytes]) -> CaptureScan:
        """``read`` of tshark's lines, a block at a time (``capture.TsharkStream.blocks``)."""
        for block in blocks:
            self.add_block(block)
        return self

    def add_block(self, block: bytes) -> None:
        """``add`` of each line of a block. The lines are read as columns at once (``scan_lines``); only the
        rare ones go through ``add`` itself, in their place: a connection's first frame, a SYN, a frame that
        is not TCP (or TCP inside ICMP). A block whose fields are not all plain numbers is read row by row."""
        lines = Lines.of(block)
        parsed = Parsed.of(lines) if lines is not None else None
        if lines is None or parsed is None:
            for r in block_rows(block):
                self.add(r)
            return
        special = ~parsed.has_stream | ((parsed.flags & SYN) != 0)
        special[icmp_rows(lines)] = True
        tcp = np.flatnonzero(~special)
        if len(tcp):
            first = parsed.first_rows(tcp)
            special[[i for i, s in zip(first.tolist(), parsed.stream[first].tolist(), strict=True)
                     if s not in self.columns]] = True
        lo = 0
        for i in [*np.flatnonzero(special).tolist(), len(lines)]:
            if i > lo:
                self._add_run(lines, parsed, lo, i)
            if i < len(lines):
                self.add(lines.row(i))
            lo = i + 1

    def _add_run(self, lines: Lines, p: Parsed, lo: int, hi: int) -> None:
        """Lines lo..hi-1 of a block: TCP frames of connections already seen, none a SYN."""
        self.frames += hi - lo
        self.complete += hi - lo
        caplen = p.caplen[lo:hi]
        cut = caplen != p.flen[lo:hi]
        if cut.any():
            self.cut += int(np.count_nonzero(cut))
            self.snaplen = max(self.snaplen, int(caplen[cut].max()))
        streams = p.stream[lo:hi]
        rows = np.arange(lo, hi)
        if np.all(streams == streams[0]):  # one connection: the usual case
            self._add_rows(lines, p, int(streams[0]), rows)
            return
        for stream in np.unique(streams).tolist():
            self._add_rows(lines, p, stream, rows[streams == stream])

    def _add_rows(self, lines: Lines, p: Parsed, stream: int, rows: np.ndarray) -> None:
        """The frames `rows` of one connection: its tally and its columns."""
        columns, tally = self.columns[stream], self.tallies[stream]
        ip, port = columns.first
        src = np.where(lines.present(_C["ip_src"], rows), lines.equals(_C["ip_src"], ip, rows),
                       lines.equals(_C["ip6_src"], ip, rows))
        from_first = src & (p.sport[rows] == port)
        forward = from_first if (tally.a.ip, tally.a.port) == columns.first else ~from_first
        _tally_rows(tally, forward, p.len[rows], p.t[rows])
        columns.extend(lines, rows, p, ~from_first)

    @property
    def tcp_frames(self) -> int:
        return sum(len(k) for k in self.columns.values())

    def connections(self) -> list[Connection]:
        return [Connection(s, k.a, k.b, k.frames, k.bytes_a_to_b, k.bytes_b_to_a, k.start, k.end - k.start,
                           k.syn_seen, k.data_a, k.data_b) for s, k in sorted(self.tallies.items())]

    def _truncation(self) -> _Truncation:
        if not self.cut:
            return _Truncation(0, None, 0, None)
        headers_cut = self.tcp_headers_cut
        detail = (f"{headers_cut} TCP headers cut off, those frames are missing from the analysis" if headers_cut
                  else "headers intact, so windows, sequence numbers and payload lengths are still right")
        return _Truncation(self.cut, self.snaplen, headers_cut,
                           f"{self.cut} of {self.frames} frames truncated by the capture's snap length "
                           f"({self.snaplen} bytes kept): {detail}")

    def finish(self, read_warnings: tuple[str, ...], device_ip: str | None, conn: int | None,
               sender: str | None) -> CaptureFacts:
        """The capture's facts, as ``frames.select_connection`` gives them; ``columns[facts.conn]`` holds
        the chosen connection's frames."""
        cut = self._truncation()
        facts = CaptureFacts(frames=self.frames, truncated_frames=cut.frames, snaplen=cut.snaplen,
                             warnings=read_warnings + ((cut.warning,) if cut.warning else ()))
        if not self.complete:
            return replace(facts, empty_reason="the capture holds no frames")
        if not self.tallies:
            return replace(facts, empty_reason=self._no_tcp_reason(cut))
        connections = self.connections()
        stream, why = _choose(connections, device_ip, conn, sender)
        return replace(facts, tcp_frames=self.tcp_frames, connections=tuple(connections), conn=stream,
                       conn_chosen_by=why)

    def _no_tcp_reason(self, cut: _Truncation) -> str:
        if cut.tcp_headers_cut:
            return (f"the snap length ({cut.snaplen} bytes) cut off every TCP header; "
                    "recapture with a snap length of at least 128 bytes")
        shown = ", ".join(f"{k} x{n}" for k, n in self.kinds.most_common(5))
        return f"the capture holds {self.frames} frames, none of them TCP ({shown})"
