"""The frames of a capture: which are TCP, which connections they form, and one connection's segments.

Every value comes from tshark's rows (``capture.FIELDS``); nothing here parses a header itself.
"""

from __future__ import annotations

import operator
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from harness.analysis.capture import COLUMN, FIELDS, Row
from harness.core.errors import NetreproError

FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10


@dataclass(frozen=True)
class Endpoint:
    ip: str
    port: int

    def __str__(self) -> str:
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"


@dataclass(frozen=True)
class Connection:
    """One TCP connection of the capture (tshark's tcp.stream)."""

    stream: int
    a: Endpoint                 # the client (sent the SYN) when the SYN was captured, else the first sender
    b: Endpoint
    frames: int
    bytes_a_to_b: int
    bytes_b_to_a: int
    start: float                # seconds from the capture's first frame
    duration: float
    syn_seen: bool
    # (first, last) time of a frame carrying payload from a / from b, seconds from the capture's first
    # frame (None: that side sent none): the span the data took, without the handshake and the close
    data_a: tuple[float, float] | None = None
    data_b: tuple[float, float] | None = None

    @property
    def payload_bytes(self) -> int:
        return self.bytes_a_to_b + self.bytes_b_to_a

    def data_seconds(self, sender: Endpoint) -> float | None:
        """How long `sender`'s payload took on this connection, first to last frame carrying it."""
        span = self.data_a if sender == self.a else self.data_b if sender == self.b else None
        return span[1] - span[0] if span else None

    def as_dict(self) -> dict[str, Any]:
        return {"stream": self.stream, "a": str(self.a), "b": str(self.b), "frames": self.frames,
                "bytes_a_to_b": self.bytes_a_to_b, "bytes_b_to_a": self.bytes_b_to_a,
                "start_s": round(self.start, 6), "duration_s": round(self.duration, 6), "syn_seen": self.syn_seen}

    def sent_by(self, device_ip: str | None, side: str) -> int:
        """Bytes the device (side "device") or the other end (side "peer") sent on this connection."""
        from_a = self.a.ip == device_ip
        if side == "device":
            return self.bytes_a_to_b if from_a else self.bytes_b_to_a if self.b.ip == device_ip else 0
        return self.bytes_b_to_a if from_a else self.bytes_a_to_b if self.b.ip == device_ip else 0


@dataclass(slots=True)
class Segment:
    """The fields of one TCP frame of a connection, as tshark dissected them (never changed once read).

    ``side`` is 0 for the source of the connection's first frame, 1 for its destination; ``t`` is
    seconds from that first frame.
    """

    num: int
    t: float
    flen: int
    side: int
    flags: int
    seq: int
    ack: int
    len: int
    nxt: int
    win: int
    scale: int | None
    mss: int | None
    wscale: int | None
    sack: bool
    ts: bool
    tsval: int | None
    tsecr: int | None
    retrans: bool
    fast: bool
    spurious: bool
    dupack: bool
    zerowin: bool
    winfull: bool
    ooo: bool
    lost: bool
    ack_rtt: float | None
    bif: int | None
    irtt: float | None
    keepalive: bool
    zwp: bool


def _int(text: str) -> int | None:
    if not text:
        return None
    try:
        return int(text, 0)
    except ValueError:
        try:
            return int(float(text))
        except ValueError:
            return None


def _float(text: str) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def _source(r: Row) -> tuple[str, int]:
    return r[COLUMN["ip_src"]] or r[COLUMN["ip6_src"]], int(r[COLUMN["sport"]])


def endpoints(r: Row) -> tuple[Endpoint, Endpoint]:
    """Source and destination of one row."""
    c = COLUMN
    return Endpoint(*_source(r)), Endpoint(r[c["ip_dst"]] or r[c["ip6_dst"]], int(r[c["dport"]]))


def transport(protocols: str) -> str:
    """The protocol a non-TCP frame carries, for saying what a capture holds instead."""
    parts = protocols.split(":")
    for name in ("udp", "icmp", "icmpv6", "arp", "sctp", "igmp"):
        if name in parts:
            return name.upper()
    return parts[-1].upper() if parts else "?"


@dataclass
class _Tally:
    """A connection while its rows are counted."""

    a: Endpoint
    b: Endpoint
    start: float
    end: float
    frames: int = 0
    bytes_a_to_b: int = 0
    bytes_b_to_a: int = 0
    syn_seen: bool = False
    data_a: tuple[float, float] | None = None
    data_b: tuple[float, float] | None = None

    def add(self, r: Row, t: float) -> None:
        c = COLUMN
        flags = int(r[c["flags"]], 16) if r[c["flags"]] else 0
        forward = _source(r) == (self.a.ip, self.a.port)
        if flags & SYN and not flags & ACK and not self.syn_seen:
            self.syn_seen = True
            if not forward:  # the SYN's sender is the client: make it side a
                self.a, self.b = self.b, self.a
                self.bytes_a_to_b, self.bytes_b_to_a = self.bytes_b_to_a, self.bytes_a_to_b
                self.data_a, self.data_b = self.data_b, self.data_a
                forward = True
        self.frames += 1
        n = int(r[c["tcplen"]] or 0)
        if forward:
            self.bytes_a_to_b += n
            if n:
                self.data_a = (self.data_a[0] if self.data_a else t, t)
        else:
            self.bytes_b_to_a += n
            if n:
                self.data_b = (self.data_b[0] if self.data_b else t, t)
        self.end = t


def list_connections(rows: list[Row]) -> list[Connection]:
    """The TCP connections of the rows (all TCP), by stream number."""
    tallies: dict[int, _Tally] = {}
    for r in rows:
        stream = int(r[COLUMN["stream"]])
        t = float(r[COLUMN["t"]])
        tally = tallies.get(stream)
        if tally is None:
            tally = tallies[stream] = _Tally(*endpoints(r), start=t, end=t)
        tally.add(r, t)
    return [Connection(s, k.a, k.b, k.frames, k.bytes_a_to_b, k.bytes_b_to_a, k.start, k.end - k.start, k.syn_seen,
                       k.data_a, k.data_b)
            for s, k in sorted(tallies.items())]


_SEGMENT_COLUMNS = ("num", "t", "len", "flags", "seq", "ack", "tcplen", "nxtseq", "win", "scale", "mss", "wscale",
                    "sack_perm", "tsval", "tsecr", "retrans", "fast", "spurious", "dupack", "zerowin", "winfull",
                    "ooo", "lost", "ack_rtt", "bif", "irtt", "keepalive", "zwp", "ip_src", "ip6_src", "sport")


def segments(rows: list[Row]) -> tuple[list[Segment], list[Endpoint]]:
    """The frames of one connection, and its two ends: [source, destination] of its first frame."""
    first, other = endpoints(rows[0])
    first_key = (first.ip, first.port)
    t0 = float(rows[0][COLUMN["t"]])
    pick = operator.itemgetter(*(COLUMN[k] for k in _SEGMENT_COLUMNS))
    out = []
    for r in rows:
        (num, t, flen, flags, seq, ack, tlen, nxt, win, scale, mss, wscale, sack, tsval, tsecr, retrans, fast, spurious,
         dupack, zerowin, winfull, ooo, lost, ack_rtt, bif, irtt, keepalive, zwp, ip_src, ip6_src, sport) = pick(r)
        seq_n = int(seq) if seq else 0
        len_n = int(tlen) if tlen else 0
        out.append(Segment(  # positional, in the order of Segment's fields: tens of thousands of frames
            int(num), float(t) - t0, int(flen), 0 if ((ip_src or ip6_src), int(sport)) == first_key else 1,
            int(flags, 16) if flags else 0, seq_n, int(ack) if ack else 0, len_n, int(nxt) if nxt else seq_n + len_n,
            int(win) if win else 0, int(scale) if scale else None, _int(mss), _int(wscale), bool(sack), bool(tsval),
            _int(tsval), _int(tsecr), bool(retrans), bool(fast), bool(spurious), bool(dupack), bool(zerowin),
            bool(winfull), bool(ooo), bool(lost), _float(ack_rtt), _int(bif), _float(irtt), bool(keepalive),
            bool(zwp)))
    return out, [first, other]


# ------------------------------------------------------------------ the capture as a whole


@dataclass(frozen=True)
class CaptureFacts:
    """What the capture holds as a whole, and which connection the analysis looks at."""

    frames: int = 0
    tcp_frames: int = 0
    connections: tuple[Connection, ...] = ()
    conn: int | None = None
    conn_chosen_by: str = ""
    truncated_frames: int = 0
    snaplen: int | None = None
    empty_reason: str | None = None     # why there is no connection to analyse
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Truncation:
    frames: int
    snaplen: int | None
    tcp_headers_cut: int
    warning: str | None


def _truncation(rows: list[Row], total: int) -> _Truncation:
    """Frames the snap length cut short, and whether their TCP headers survived."""
    c = COLUMN
    cut = [r for r in rows if r[c["caplen"]] != r[c["len"]]]
    if not cut:
        return _Truncation(0, None, 0, None)
    snaplen = max(int(r[c["caplen"]]) for r in cut)
    # a frame cut inside its TCP header has no tcp.stream although IP says TCP
    headers_cut = sum(1 for r in cut if not r[c["stream"]] and "6" in (r[c["ip_proto"]], r[c["ip6_nxt"]]))
    detail = (f"{headers_cut} TCP headers cut off, those frames are missing from the analysis" if headers_cut else
              "headers intact, so windows, sequence numbers and payload lengths are still right")
    return _Truncation(len(cut), snaplen, headers_cut,
                       f"{len(cut)} of {total} frames truncated by the capture's snap length ({snaplen} bytes kept): "
                       f"{detail}")


def _no_tcp_reason(rows: list[Row], total: int, cut: _Truncation) -> str:
    if cut.tcp_headers_cut:
        return (f"the snap length ({cut.snaplen} bytes) cut off every TCP header; "
                "recapture with a snap length of at least 128 bytes")
    kinds = Counter(transport(r[COLUMN["protocols"]]) for r in rows)
    shown = ", ".join(f"{k} x{n}" for k, n in kinds.most_common(5))
    return f"the capture holds {total} frames, none of them TCP ({shown})"


def _choose(connections: list[Connection], device_ip: str | None, conn: int | None,
            sender: str | None) -> tuple[int, str]:
    """The connection to analyse and why: asked for, most data from `sender`, or most payload."""
    if conn is None and sender:
        best = max(connections, key=lambda k: (k.sent_by(device_ip, sender), -k.stream))
        return best.stream, f"most data sent by the {sender} of {len(connections)} connections"
    if conn is None:
        best = max(connections, key=lambda k: (k.payload_bytes, k.frames, -k.stream))
        return best.stream, ("the only connection" if len(connections) == 1
                             else f"most payload of {len(connections)} connections")
    if not any(k.stream == conn for k in connections):
        have = ", ".join(str(k.stream) for k in connections[:20])
        raise NetreproError(f"connection {conn} is not in the capture", f"pick one of: {have}")
    return conn, "asked for"


def select_connection(rows: list[Row], read_warnings: tuple[str, ...], device_ip: str | None, conn: int | None,
                      sender: str | None) -> tuple[CaptureFacts, list[Row]]:
    """The capture's facts and the rows of the connection to analyse (none: ``empty_reason`` says why)."""
    complete = [r for r in rows if len(r) == len(FIELDS)]
    cut = _truncation(complete, len(rows))
    facts = CaptureFacts(frames=len(rows), truncated_frames=cut.frames, snaplen=cut.snaplen,
                         warnings=read_warnings + ((cut.warning,) if cut.warning else ()))
    if not complete:
        return replace(facts, empty_reason="the capture holds no frames"), []
    c = COLUMN
    tcp_rows = [r for r in complete if r[c["stream"]] and "icmp" not in r[c["protocols"]]]
    if not tcp_rows:
        return replace(facts, empty_reason=_no_tcp_reason(complete, len(rows), cut)), []
    connections = list_connections(tcp_rows)
    stream, why = _choose(connections, device_ip, conn, sender)
    chosen = [r for r in tcp_rows if int(r[c["stream"]]) == stream]
    return replace(facts, tcp_frames=len(tcp_rows), connections=tuple(connections), conn=stream,
                    conn_chosen_by=why), chosen
