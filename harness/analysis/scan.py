"""One pass over tshark's rows as they come: the capture's facts, and each connection's frames in columns.

A row of tshark's text costs about 1.7 kB as Python strings, a ``Segment`` about 0.4 kB; a
frame here costs one number per column in a compact typed array (about 50 bytes), and no row is kept
once read. What the whole capture needs (frame counts, snap length, the connections' tallies,
what the frames carry when none is TCP) are counters. ``CaptureScan.finish`` gives the same
``CaptureFacts`` as ``frames.select_connection`` on the list of rows; ``flow.Flow`` reads the chosen
connection's columns as numpy arrays, without one object per frame.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from harness.analysis.capture import COLUMN, FIELDS, Row
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

_FLAGS = ("sack_perm", "tsval", "retrans", "fast", "spurious", "dupack", "zerowin", "winfull", "ooo", "lost",
          "keepalive", "zwp")  # one bit each: the field was present (non-empty)
# further bits: which side sent the frame, and what was in the frame besides the flags above
SIDE, SCALE_UNKNOWN, HAS_TSECR, HAS_BIF, HAS_ACK_RTT = 1 << 12, 1 << 13, 1 << 14, 1 << 15, 1 << 16
BIT = {name: 1 << k for k, name in enumerate(_FLAGS)}
_FLAG_COLUMNS = tuple((COLUMN[name], 1 << k) for k, name in enumerate(_FLAGS))
# tshark's TCP numbers (sequence, ACK, window, timestamps, bytes in flight) are 32-bit: 4 bytes a frame each
_U32 = ("seq", "ack", "nxt", "win", "tsval", "tsecr", "bif")
_U16 = ("len", "flen", "flags")  # a frame is at most 64 kB: 2 bytes (widened to 4 if one is not)
_C = COLUMN


def _append(columns: dict[str, array], name: str, value: int) -> None:
    try:
        columns[name].append(value)
    except OverflowError:  # a value wider than the column's type: widen the column, keep every value
        columns[name] = array("q", columns[name])
        columns[name].append(value)


def _segment(r: Row, side: int, t: float) -> Segment:
    """One frame as ``frames.segments`` reads it (kept only for the handshake's SYN and SYN-ACK)."""
    seg = frames_segments([r])[0][0]
    seg.side, seg.t = side, t
    return seg


@dataclass
class ConnectionColumns:
    """The frames of one connection, one compact typed array per field (about 50 bytes a frame).

    What only the handshake needs (MSS, window scale, SACK, the initial RTT) is kept once, as the first
    SYN's and SYN-ACK's ``Segment``; tshark's ACK RTT, present on a part of the frames, is kept sparse.
    """

    first: tuple[str, int]   # source (address, port) of the connection's first frame: side 0
    t0: float                # its time
    ends: list[Endpoint]
    ints: dict[str, array] = field(default_factory=lambda: {
        **{k: array("I") for k in _U32}, **{k: array("H") for k in _U16}})
    t: array = field(default_factory=lambda: array("d"))
    bits: array = field(default_factory=lambda: array("I"))
    rtt_at: array = field(default_factory=lambda: array("I"))   # frame index of each ACK RTT
    rtt: array = field(default_factory=lambda: array("d"))
    syn: Segment | None = None       # the first SYN without ACK
    synack: Segment | None = None    # the first SYN-ACK
    irtt: float | None = None        # tshark's initial RTT, first seen

    def add(self, r: Row, t: float | None = None) -> None:
        c = _C
        seq = int(r[c["seq"]]) if r[c["seq"]] else 0
        length = int(r[c["tcplen"]]) if r[c["tcplen"]] else 0
        nxt = r[c["nxtseq"]]
        flags = int(r[c["flags"]], 16) if r[c["flags"]] else 0
        side = 0 if ((r[c["ip_src"]] or r[c["ip6_src"]]), int(r[c["sport"]])) == self.first else 1
        t = float(r[c["t"]]) if t is None else t
        bits = SIDE if side else 0
        for column, bit in _FLAG_COLUMNS:
            if r[column]:
                bits |= bit
        tsecr, bif = _int(r[c["tsecr"]]), _int(r[c["bif"]])
        bits |= (SCALE_UNKNOWN if r[c["scale"]] and int(r[c["scale"]]) == -1 else 0) | (
            HAS_TSECR if tsecr is not None else 0) | (HAS_BIF if bif is not None else 0)
        rtt = _float(r[c["ack_rtt"]])
        if rtt is not None:
            bits |= HAS_ACK_RTT
            self.rtt_at.append(len(self.t))
            self.rtt.append(rtt)
        values = (seq, int(r[c["ack"]]) if r[c["ack"]] else 0, int(nxt) if nxt else seq + length,
                  int(r[c["win"]]) if r[c["win"]] else 0, _int(r[c["tsval"]]) or 0, tsecr or 0, bif or 0,
                  length, int(r[c["len"]]), flags)
        n = len(self.t)
        try:
            for column, value in zip(self._ints, values):  # noqa: B905 (as many as _INT_NAMES: checked in _widen)
                column.append(value)
        except OverflowError:
            self._widen(values, n)
        self.t.append(t)
        self.bits.append(bits)
        if self.irtt is None:
            self.irtt = _float(r[c["irtt"]])
        if flags & SYN and ((flags & ACK and self.synack is None) or (not flags & ACK and self.syn is None)):
            seg = _segment(r, side, t - self.t0)
            if flags & ACK:
                self.synack = seg
            else:
                self.syn = seg

    def __post_init__(self) -> None:
        self._ints = [self.ints[k] for k in _INT_NAMES]

    def _widen(self, values: tuple[int, ...], n: int) -> None:
        """A value wider than its column's type: that column becomes 8-byte, every value kept."""
        for name, value in zip(_INT_NAMES, values, strict=True):
            del self.ints[name][n:]
            _append(self.ints, name, value)
        self._ints = [self.ints[k] for k in _INT_NAMES]

    def __len__(self) -> int:
        return len(self.t)

    def nbytes(self) -> int:
        arrays = [*self.ints.values(), self.t, self.bits, self.rtt_at, self.rtt]
        return sum(a.buffer_info()[1] * a.itemsize for a in arrays)


_INT_NAMES = (*_U32, *_U16)


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
