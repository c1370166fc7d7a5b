"""One pass over tshark's rows as they come: the capture's facts, and each connection's frames in columns.

A row of tshark's text costs about 1.7 kB as Python strings, a ``Segment`` about 0.4 kB; a
frame here costs one number per column in a typed array (about 130 bytes), and no row is kept
once read. What the whole capture needs (frame counts, snap length, the connections' tallies,
what the frames carry when none is TCP) are counters. ``CaptureScan.finish`` gives the same
``CaptureFacts`` as ``frames.select_connection`` on the list of rows, and ``segments`` the same
``Segment`` objects as ``frames.segments`` on the chosen connection's rows.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from harness.analysis.capture import COLUMN, FIELDS, Row
from harness.analysis.frames import (
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

_NONE = -(1 << 63)  # an integer column's "not in the frame"
_FLAGS = ("sack_perm", "tsval", "retrans", "fast", "spurious", "dupack", "zerowin", "winfull", "ooo", "lost",
          "keepalive", "zwp")  # one bit each: the field was present (non-empty)
_INTS = ("num", "flen", "flags", "seq", "ack", "len", "nxt", "win", "scale", "mss", "wscale", "tsval", "tsecr", "bif")
_C = COLUMN


def _opt(value: int | None) -> int:
    return _NONE if value is None else value


def _back(value: int) -> int | None:
    return None if value == _NONE else value


@dataclass
class ConnectionColumns:
    """The frames of one connection, as ``frames.segments`` reads them, one typed array per field."""

    first: tuple[str, int]   # source (address, port) of the connection's first frame: side 0
    t0: float                # its time
    ends: list[Endpoint]
    ints: dict[str, array] = field(default_factory=lambda: {k: array("q") for k in _INTS})
    t: array = field(default_factory=lambda: array("d"))
    ack_rtt: array = field(default_factory=lambda: array("d"))
    irtt: array = field(default_factory=lambda: array("d"))
    side: array = field(default_factory=lambda: array("b"))
    bits: array = field(default_factory=lambda: array("H"))

    def add(self, r: Row) -> None:
        c, ints = _C, self.ints
        seq = int(r[c["seq"]]) if r[c["seq"]] else 0
        length = int(r[c["tcplen"]]) if r[c["tcplen"]] else 0
        nxt = r[c["nxtseq"]]
        scale = r[c["scale"]]
        values = (int(r[c["num"]]), int(r[c["len"]]), int(r[c["flags"]], 16) if r[c["flags"]] else 0, seq,
                  int(r[c["ack"]]) if r[c["ack"]] else 0, length, int(nxt) if nxt else seq + length,
                  int(r[c["win"]]) if r[c["win"]] else 0, int(scale) if scale else _NONE, _opt(_int(r[c["mss"]])),
                  _opt(_int(r[c["wscale"]])), _opt(_int(r[c["tsval"]])), _opt(_int(r[c["tsecr"]])),
                  _opt(_int(r[c["bif"]])))
        for name, value in zip(_INTS, values, strict=True):
            ints[name].append(value)
        self.t.append(float(r[c["t"]]))
        rtt, irtt = _float(r[c["ack_rtt"]]), _float(r[c["irtt"]])
        self.ack_rtt.append(math.nan if rtt is None else rtt)
        self.irtt.append(math.nan if irtt is None else irtt)
        self.side.append(0 if ((r[c["ip_src"]] or r[c["ip6_src"]]), int(r[c["sport"]])) == self.first else 1)
        bits = 0
        for k, name in enumerate(_FLAGS):
            if r[c[name]]:
                bits |= 1 << k
        self.bits.append(bits)

    def __len__(self) -> int:
        return len(self.t)

    def segments(self) -> list[Segment]:
        """The frames as ``Segment`` objects, equal to ``frames.segments`` of the same rows."""
        i = self.ints
        out = []
        for k in range(len(self.t)):
            b = self.bits[k]
            rtt, irtt = self.ack_rtt[k], self.irtt[k]
            out.append(Segment(
                i["num"][k], self.t[k] - self.t0, i["flen"][k], self.side[k], i["flags"][k], i["seq"][k],
                i["ack"][k], i["len"][k], i["nxt"][k], i["win"][k], _back(i["scale"][k]), _back(i["mss"][k]),
                _back(i["wscale"][k]), bool(b & 1), bool(b & 2), _back(i["tsval"][k]), _back(i["tsecr"][k]),
                bool(b & 4), bool(b & 8), bool(b & 16), bool(b & 32), bool(b & 64), bool(b & 128), bool(b & 256),
                bool(b & 512), None if math.isnan(rtt) else rtt, _back(i["bif"][k]),
                None if math.isnan(irtt) else irtt, bool(b & 1024), bool(b & 2048)))
        return out

    def nbytes(self) -> int:
        arrays = [*self.ints.values(), self.t, self.ack_rtt, self.irtt, self.side, self.bits]
        return sum(a.buffer_info()[1] * a.itemsize for a in arrays)


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
        self.columns[stream].add(r)

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
