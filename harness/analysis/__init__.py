"""Capture analysis: what each TCP side advertised, and what limited the throughput.

Every fact comes from Wireshark's own TCP dissection (tshark, driven through pyshark): options,
scaled windows, relative sequence numbers, retransmission/duplicate-ACK/zero-window flags, ACK
RTTs, bytes in flight. This module only groups, times and compares those fields; it never
parses a TCP header itself.

How tshark is driven. pyshark's per-packet objects (PDML, JSON or EK) cost tens of microseconds
each, and pyshark's EK/JSON readers cannot take a ``-e`` field selection (they expect a
``frame`` layer that field output does not have). ``TsharkFields`` is therefore a pyshark
``FileCapture`` that asks tshark for tab-separated fields (``-T fields -e ...``) and reads them
in large chunks through pyshark's output-parser interface; parameters, preferences and the
capture loop are pyshark's. tshark itself is started with ``subprocess.Popen`` and its pipes
are attached to the loop, so no asyncio child watcher is involved. The whole read runs in a
worker thread with its own event loop: it works from inside a running asyncio program, from a
pytest test, and after other code has installed a signal-based child watcher.

Device and peer. netrepro captures at the device. The device is the endpoint whose address the
caller gives (``device_ip``); without it, the endpoint nearest the capture point, judged by how
quickly each side answers (handshake turn-around, tshark's ACK RTTs), and failing that the
server (the side that answered the SYN). ``device_identified_by`` says which rule decided.

The sender's view. Whether the sender was window-limited is a question about what the sender
knew when it sent each segment. At the sender's side of the link (device transmits) that is
what the capture shows, and tshark's ``tcp.analysis.bytes_in_flight`` is used as it is. At the
receiver's side (device receives) the sender learnt of each ACK about one round trip after the
capture saw it: in flight is then the data's right edge minus the receiver's ACK the sender had
seen. Which ACK that was comes from TCP timestamps when both sides use them (the data's TSecr
names it); without them (lwIP's default) from the window release delay, the time between the
ACK that first allowed a segment and the segment's arrival, which is the RTT when the sender
waits for the window. ``rtt_source`` and ``in_flight_source`` say which was used.

Goodput counts payload once (retransmissions excluded): first arrivals at the receiver's side,
the receiver's cumulative ACKs at the sender's side (there the capture sees data before the
link's queue).

The RTT without a queue (``evidence["base_rtt_ms"]``, against which a standing queue is judged)
is the lowest median of three consecutive RTT samples, not the lowest sample: a capture point
that stalls stamps a data segment late, and that one segment's data->ACK time falls below the
path's round trip.

A send buffer (lwIP's TCP_SND_BUF) shows as in flight held at a flat ceiling below the
receiver's window: the same peak in every time slice, never exceeded. When the application
refills the buffer the moment an ACK frees room, the sender hardly pauses; the evidence is then
that goodput = ceiling / RTT while the link could carry more. A congestion window is not flat:
it grows and varies, and is not called a send buffer.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import fcntl
import functools
import math
import operator
import os
import statistics
import subprocess
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError

VERDICTS = ("window-limited", "send-buffer-limited", "link-limited", "loss-limited", "receiver-limited",
            "sender-limited", "unknown")

# Thresholds of the verdict (fractions of the data-transfer time unless said otherwise).
LINK_BUSY = 0.85          # goodput >= 85 % of the payload rate the link can carry -> link-limited
RTO_SHARE = 0.20          # stalls before timeout retransmissions >= 20 % -> loss-limited
ZERO_WINDOW_SHARE = 0.05  # receiver at zero window >= 5 % -> receiver-limited
SHRUNK_WINDOW = 0.75      # median advertised window <= 75 % of its largest (or its SYN's) = shrinking
BLOCKED_SHARE = 0.20      # sender paused at the window / waiting for ACKs >= 20 % of the time
SENDER_PACED_SHARE = 0.50  # paused by itself (no window, no ACK to wait for) most of the time: sender-limited
AT_WINDOW_SEGMENTS = 0.5  # or >= half the segments left less than a segment of window
BUFFER_BELOW_WINDOW = 0.8  # send buffer: in flight (p95) below 80 % of the window
PLATEAU_SLICES = 10       # send buffer: in flight's ceiling must be the same in each of up to 10 time slices
PLATEAU_GOODPUT = (0.75, 1.25)  # and goodput within 75-125 % of ceiling / RTT (the pipe held the ceiling)
RETRANS_SHARE = 0.01      # >= 1 % of data segments retransmitted (and >= 3) -> loss-limited fallback
QUEUE_RTT_GROWTH = 1.5    # link rate unknown: RTT >= 1.5 x its minimum (a standing queue) and
SENDER_BUSY = 0.8         # the sender busy >= 80 % of the time -> link-limited
QUEUE_MIN_S = 1e-3        # and the RTT grew by at least 1 ms (and 3 full frames' time on the link)
ETHERNET_OVERHEAD = 24    # preamble, gap and FCS per frame on the wire (as netrepro's link counts)
ETHERNET_MIN_FRAME = 60

# tshark preferences: timestamps per conversation, relative sequence numbers, the sequence
# analysis (retransmissions, in flight, RTT). No reassembly: nothing above TCP is needed.
TSHARK_PREFS = {
    "tcp.calculate_timestamps": "TRUE",
    "tcp.relative_sequence_numbers": "TRUE",
    "tcp.analyze_sequence_numbers": "TRUE",
    "tcp.track_bytes_in_flight": "TRUE",
    "tcp.desegment_tcp_streams": "FALSE",
    "tcp.try_heuristic_first": "FALSE",
    "tcp.check_checksum": "FALSE",
}

_FIELDS = (
    ("num", "frame.number"),
    ("t", "frame.time_relative"),
    ("len", "frame.len"),
    ("caplen", "frame.cap_len"),
    ("protocols", "frame.protocols"),
    ("ip_src", "ip.src"),
    ("ip_dst", "ip.dst"),
    ("ip6_src", "ipv6.src"),
    ("ip6_dst", "ipv6.dst"),
    ("ip_proto", "ip.proto"),
    ("ip6_nxt", "ipv6.nxt"),
    ("stream", "tcp.stream"),
    ("sport", "tcp.srcport"),
    ("dport", "tcp.dstport"),
    ("flags", "tcp.flags"),
    ("seq", "tcp.seq"),
    ("ack", "tcp.ack"),
    ("tcplen", "tcp.len"),
    ("nxtseq", "tcp.nxtseq"),
    ("win_raw", "tcp.window_size_value"),
    ("win", "tcp.window_size"),
    ("scale", "tcp.window_size_scalefactor"),
    ("mss", "tcp.options.mss_val"),
    ("wscale", "tcp.options.wscale.shift"),
    ("sack_perm", "tcp.options.sack_perm"),
    ("tsval", "tcp.options.timestamp.tsval"),
    ("tsecr", "tcp.options.timestamp.tsecr"),
    ("retrans", "tcp.analysis.retransmission"),
    ("fast", "tcp.analysis.fast_retransmission"),
    ("spurious", "tcp.analysis.spurious_retransmission"),
    ("dupack", "tcp.analysis.duplicate_ack"),
    ("zerowin", "tcp.analysis.zero_window"),
    ("winfull", "tcp.analysis.window_full"),
    ("ooo", "tcp.analysis.out_of_order"),
    ("lost", "tcp.analysis.lost_segment"),
    ("ack_rtt", "tcp.analysis.ack_rtt"),
    ("bif", "tcp.analysis.bytes_in_flight"),
    ("irtt", "tcp.analysis.initial_rtt"),
    ("keepalive", "tcp.analysis.keep_alive"),
    ("zwp", "tcp.analysis.zero_window_probe"),
)
TSHARK_FIELDS = tuple(f for _, f in _FIELDS)
_COL = {name: i for i, (name, _) in enumerate(_FIELDS)}

FIN, SYN, RST, ACK = 0x01, 0x02, 0x04, 0x10


# ============================================================== tshark through pyshark


@functools.cache
def _pyshark_classes():
    """pyshark's classes, imported on first use (pyshark pulls in lxml and friends)."""
    from pyshark.capture.file_capture import FileCapture
    from pyshark.tshark.output_parser.base_parser import BaseTsharkOutputParser

    class FieldRows(BaseTsharkOutputParser):
        """Output parser for ``-T fields``: hands over every complete line read so far, as one batch."""

        DEFAULT_BATCH_SIZE = 1 << 20

        def _extract_packet_from_data(self, data, got_first_packet=True):
            end = data.rfind(b"\n")
            if end < 0:
                return None, data
            return data[: end + 1], data[end + 1 :]

        def _parse_single_packet(self, packet):
            return [line.split("\t") for line in packet.decode("utf-8", "replace").split("\n") if line]

    class PipeProcess:
        """What pyshark expects of an asyncio subprocess, over a plain Popen (no child watcher)."""

        def __init__(self, popen: subprocess.Popen, stdout, stderr) -> None:
            self.popen, self.stdout, self.stderr, self.pid = popen, stdout, stderr, popen.pid

        @property
        def returncode(self):
            return self.popen.poll()

        def kill(self) -> None:
            if self.popen.poll() is None:
                self.popen.kill()

        async def wait(self) -> int:
            try:
                return self.popen.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                return self.popen.wait()

    async def pipe_reader(loop, pipe):
        reader = asyncio.StreamReader(limit=1 << 24, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
        return reader

    class TsharkFields(FileCapture):
        """pyshark FileCapture reading tshark's field output (-T fields) in batches of rows."""

        def __init__(self, path: Path, fields: Sequence[str], prefs: dict[str, str], loop) -> None:
            params = ["-T", "fields", "-E", "separator=/t", "-E", "occurrence=f", "-E", "header=n", "-E", "quote=n"]
            for name in fields:
                params += ["-e", name]
            super().__init__(str(path), keep_packets=False, override_prefs=prefs, eventloop=loop,
                             custom_parameters=params)
            self.stderr_lines: list[str] = []
            self.returncode: int | None = None

        async def _get_tshark_process(self, packet_count=None, stdin=None):
            self._verify_capture_parameters()
            parameters = [self._get_tshark_path(), "-n", *self.get_parameters(packet_count=packet_count)]
            popen = subprocess.Popen(parameters, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
            with contextlib.suppress(OSError):  # a deep pipe: tshark does not wait while rows are parsed
                fcntl.fcntl(popen.stdout.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
            process = PipeProcess(popen, await pipe_reader(self.eventloop, popen.stdout),
                                  await pipe_reader(self.eventloop, popen.stderr))
            self._create_stderr_handling_task(process.stderr)
            self._created_new_process(parameters, process)
            return process

        def _setup_tshark_output_parser(self):
            return FieldRows()

        async def _handle_process_stderr_forever(self, stderr):
            while line := await stderr.readline():
                self.stderr_lines.append(line.decode("utf-8", "replace").strip())

        async def _cleanup_subprocess(self, process):
            self.returncode = await process.wait()

    return TsharkFields


@dataclass
class _TsharkOutput:
    rows: list[list[str]]
    returncode: int
    stderr: list[str]


def _run_tshark(path: Path) -> _TsharkOutput:
    """tshark's fields for every frame, read in a worker thread with its own event loop."""
    box: dict[str, Any] = {}

    def work() -> None:
        loop = asyncio.new_event_loop()
        capture = None
        try:
            capture = _pyshark_classes()(path, TSHARK_FIELDS, TSHARK_PREFS, loop)
            rows: list[list[str]] = []
            capture.apply_on_packets(rows.extend)
            box["out"] = _TsharkOutput(rows, capture.returncode or 0, capture.stderr_lines)
        except BaseException as exc:  # handed to the calling thread
            box["error"] = exc
            if capture is not None:  # do not leave tshark running, nor pyshark's __del__ a closed loop
                for process in list(capture._running_processes):
                    process.kill()
                with contextlib.suppress(Exception):
                    capture.close()
                capture._running_processes.clear()
        finally:
            loop.close()

    worker = threading.Thread(target=work, name="netrepro-tshark", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        exc = box["error"]
        if type(exc).__name__ == "TSharkNotFoundException":
            raise NetreproError("tshark not found", "install it: apt-get install tshark") from None
        raise exc
    return box["out"]


# ============================================================== data model


@dataclass
class Endpoint:
    ip: str
    port: int

    def __str__(self) -> str:
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"


@dataclass
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

    @property
    def payload_bytes(self) -> int:
        return self.bytes_a_to_b + self.bytes_b_to_a

    def as_dict(self) -> dict[str, Any]:
        return {"stream": self.stream, "a": str(self.a), "b": str(self.b), "frames": self.frames,
                "bytes_a_to_b": self.bytes_a_to_b, "bytes_b_to_a": self.bytes_b_to_a,
                "start_s": round(self.start, 6), "duration_s": round(self.duration, 6), "syn_seen": self.syn_seen}


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


class _Seg:
    """The fields of one TCP frame of the chosen connection, as tshark dissected them."""

    __slots__ = ("ack", "ack_rtt", "bif", "dupack", "fast", "flags", "flen", "irtt", "keepalive", "len", "lost", "mss",
                 "num", "nxt", "ooo", "retrans", "sack", "scale", "seq", "side", "spurious", "t", "ts", "tsecr",
                 "tsval", "win", "winfull", "wscale", "zerowin", "zwp")


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


def _pct(values: Sequence[float], q: float) -> float | None:
    """Percentile q (0..100) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _n(count: int, word: str) -> str:
    """'1 retransmission', '2 retransmissions'."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _r(x: float | None, nd: int = 3) -> float | None:
    return None if x is None else round(x, nd)


@dataclass
class CaptureAnalysis:
    """What a capture shows about one TCP connection, plus the list of all connections.

    Sides are "device" and "peer". Times are seconds from the connection's first frame; windows
    and in flight are bytes; rates are Mbit/s.
    """

    path: str
    frames: int = 0
    tcp_frames: int = 0
    connections: list[Connection] = field(default_factory=list)
    conn: int | None = None
    conn_chosen_by: str = ""
    empty_reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    # identification
    device: Endpoint | None = None
    peer: Endpoint | None = None
    device_identified_by: str = ""
    capture_near: str | None = None        # "device" or "peer": the endpoint next to the capture point
    sender: str | None = None              # the side that sent most payload
    data_direction: str | None = None      # "device->peer" / "peer->device"
    # handshake
    syn_seen: bool = False
    device_mss: int | None = None
    peer_mss: int | None = None
    window_scale: dict[str, int | None] = field(default_factory=lambda: {"device": None, "peer": None})
    window_scaling: str = "unknown"        # "negotiated", "not negotiated", "unknown (SYN not captured)"
    sack_permitted: dict[str, bool | None] = field(default_factory=lambda: {"device": None, "peer": None})
    syn_window: dict[str, int | None] = field(default_factory=lambda: {"device": None, "peer": None})
    timestamps: dict[str, bool | None] = field(default_factory=lambda: {"device": None, "peer": None})
    # windows
    device_window: WindowStats = field(default_factory=WindowStats)
    peer_window: WindowStats = field(default_factory=WindowStats)
    device_windows: list[tuple[float, int]] = field(default_factory=list, repr=False)  # (t, window) per ACK
    peer_windows: list[tuple[float, int]] = field(default_factory=list, repr=False)
    # the data direction
    mss_used: int | None = None            # largest payload of a sender segment
    data_segments: list[tuple[float, int, int, bool]] = field(default_factory=list, repr=False)  # t, seq, end, re
    receiver_acks: list[tuple[float, int, int]] = field(default_factory=list, repr=False)  # t, ack, window
    in_flight: list[tuple[float, int]] = field(default_factory=list, repr=False)  # sender's view, per segment
    in_flight_window: list[tuple[float, int]] = field(default_factory=list, repr=False)  # window it saw then
    in_flight_source: str = ""
    in_flight_stats: dict[str, float | None] = field(default_factory=dict)
    rtt_samples: list[tuple[float, float]] = field(default_factory=list, repr=False)  # (t, seconds)
    rtt_ms: float | None = None
    rtt_source: str = ""
    initial_rtt_ms: float | None = None
    # throughput
    interval_s: float = 1.0
    goodput: list[tuple[float, float]] = field(default_factory=list)  # (interval start, Mbit/s)
    delivered: list[tuple[float, int]] = field(default_factory=list, repr=False)  # (t, new bytes) behind goodput
    goodput_mbps: float | None = None
    payload_bytes: int = 0                 # sender's payload, first transmissions only
    retransmitted_bytes: int = 0
    transfer_s: float | None = None        # first to last data segment
    duration_s: float | None = None        # first to last frame of the connection
    # events
    retransmissions: int = 0               # frames tshark flags as retransmissions (both directions)
    fast_retransmissions: int = 0
    spurious_retransmissions: int = 0
    rto_retransmissions: int = 0           # sender's retransmissions after a stall (estimated timeouts)
    rto_stall_s: float = 0.0
    dup_acks: dict[str, int] = field(default_factory=lambda: {"device": 0, "peer": 0})
    zero_windows: dict[str, int] = field(default_factory=lambda: {"device": 0, "peer": 0})
    window_full: int = 0
    out_of_order: int = 0
    lost_segments: int = 0                 # tshark's "previous segment not captured"
    segments_per_ack: dict[str, float | None] = field(default_factory=lambda: {"device": None, "peer": None})
    idle_gaps: list[tuple[float, float]] = field(default_factory=list)  # sender pauses: (start, length)
    idle_threshold_s: float | None = None
    pause_shares: dict[str, float] = field(default_factory=dict)  # share of transfer time per kind of pause
    # capture quality
    truncated_frames: int = 0
    snaplen: int | None = None
    # verdict
    link_rate_bps: float | None = None
    link_payload_mbps: float | None = None
    window_bound_mbps: float | None = None
    bound_mbps: float | None = None
    verdict: str = "unknown"
    verdict_reason: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)

    # ---------------------------------------------------------- derived

    @property
    def truncated(self) -> bool:
        return self.truncated_frames > 0

    @property
    def receiver(self) -> str | None:
        return None if self.sender is None else ("peer" if self.sender == "device" else "device")

    def window_of(self, side: str) -> WindowStats:
        return self.device_window if side == "device" else self.peer_window

    def summary(self) -> dict[str, Any]:
        """The JSON-able ``analysis`` object of a run's result."""
        conn = next((c for c in self.connections if c.stream == self.conn), None)
        out: dict[str, Any] = {
            "capture": self.path,
            "frames": self.frames,
            "tcp_frames": self.tcp_frames,
            "connections": len(self.connections),
            "conn": self.conn,
            "conn_chosen_by": self.conn_chosen_by,
            "empty_reason": self.empty_reason,
            "device": str(self.device) if self.device else None,
            "peer": str(self.peer) if self.peer else None,
            "device_identified_by": self.device_identified_by,
            "capture_near": self.capture_near,
            "data_direction": self.data_direction,
            "syn_seen": self.syn_seen,
            "device_mss": self.device_mss,
            "peer_mss": self.peer_mss,
            "mss_used": self.mss_used,
            "window_scale": dict(self.window_scale),
            "window_scaling": self.window_scaling,
            "sack_permitted": dict(self.sack_permitted),
            "syn_window": dict(self.syn_window),
            "timestamps": dict(self.timestamps),
            "device_window": self.device_window.as_dict(),
            "peer_window": self.peer_window.as_dict(),
            "in_flight": dict(self.in_flight_stats, source=self.in_flight_source),
            "rtt_ms": _r(self.rtt_ms),
            "rtt_source": self.rtt_source,
            "rtt_samples": len(self.rtt_samples),
            "initial_rtt_ms": _r(self.initial_rtt_ms),
            "goodput_mbps": _r(self.goodput_mbps),
            "goodput_interval_s": self.interval_s,
            "goodput_per_interval_mbps": [_r(v) for _, v in self.goodput],
            "payload_bytes": self.payload_bytes,
            "retransmitted_bytes": self.retransmitted_bytes,
            "transfer_s": _r(self.transfer_s, 6),
            "duration_s": _r(self.duration_s, 6),
            "retransmissions": self.retransmissions,
            "fast_retransmissions": self.fast_retransmissions,
            "spurious_retransmissions": self.spurious_retransmissions,
            "rto_retransmissions": self.rto_retransmissions,
            "rto_stall_s": _r(self.rto_stall_s, 6),
            "dup_acks": dict(self.dup_acks),
            "zero_windows": dict(self.zero_windows),
            "window_full": self.window_full,
            "out_of_order": self.out_of_order,
            "lost_segments": self.lost_segments,
            "segments_per_ack": {k: _r(v) for k, v in self.segments_per_ack.items()},
            "idle": {"gaps": len(self.idle_gaps), "total_s": _r(sum(g for _, g in self.idle_gaps), 6),
                     "longest_s": _r(max((g for _, g in self.idle_gaps), default=None), 6),
                     "threshold_ms": _r(None if self.idle_threshold_s is None else self.idle_threshold_s * 1e3)},
            "pause_shares": {k: _r(v) for k, v in self.pause_shares.items()},
            "truncated_frames": self.truncated_frames,
            "snaplen": self.snaplen,
            "link_rate_mbps": _r(None if self.link_rate_bps is None else self.link_rate_bps / 1e6),
            "link_payload_mbps": _r(self.link_payload_mbps),
            "window_bound_mbps": _r(self.window_bound_mbps),
            "bound_mbps": _r(self.bound_mbps),
            "verdict": self.verdict,
            "verdict_reason": self.verdict_reason,
            "evidence": self.evidence,
            "warnings": list(self.warnings),
        }
        if conn is not None:
            out["connection"] = conn.as_dict()
        return out

    # ---------------------------------------------------------- assertion helpers (pytest)

    def _need_connection(self) -> None:
        if self.conn is None:
            raise AssertionError(f"no connection to check in {self.path}: {self.empty_reason}")

    def expect_window(self, side: str, expected: int, min_share: float = 0.95) -> None:
        """At least min_share of side's ACKs (SYNs and RSTs aside) advertised exactly `expected` bytes.

        The default leaves room for a few window updates (e.g. while the application closes);
        min_share=1.0 asks for every ACK.
        """
        self._need_connection()
        stats = self.window_of(side)
        if stats.count == 0:
            raise AssertionError(f"{side} sent no ACKs in connection {self.conn}, expected window {expected}")
        hits = stats.values.get(expected, 0)
        if hits >= math.ceil(min_share * stats.count) and hits > 0:
            return
        value, n = stats.most_common()
        others = ", ".join(f"{v} x{c}" for v, c in stats.values.most_common(4) if v != value)
        need = "all of them" if min_share >= 1 else f"at least {min_share:.0%} of them"
        msg = f"{side} advertised {value} in {n} of {stats.count} ACKs, expected {expected} in {need}"
        if hits and value != expected:
            msg += f" ({expected} in {hits})"
        if others:
            msg += f"; other values: {others}"
        if stats.unknown_scale:
            msg += "; window scale unknown (SYN not captured), values as sent"
        raise AssertionError(msg)

    def expect_device_window(self, expected: int, min_share: float = 0.95) -> None:
        self.expect_window("device", expected, min_share)

    def expect_peer_window(self, expected: int, min_share: float = 0.95) -> None:
        self.expect_window("peer", expected, min_share)

    def expect_mss(self, device: int | None = None, peer: int | None = None) -> None:
        self._need_connection()
        problems = []
        for side, want, got in (("device", device, self.device_mss), ("peer", peer, self.peer_mss)):
            if want is None or got == want:
                continue
            if got is None:
                why = "SYN not captured" if not self.syn_seen else "no MSS option in its SYN"
                problems.append(f"{side} MSS unknown ({why}), expected {want}")
            else:
                problems.append(f"{side} MSS option {got}, expected {want}")
        if problems:
            raise AssertionError("; ".join(problems))

    def expect_window_scale(self, device: int | None = None, peer: int | None = None) -> None:
        """The window-scale shift each side announced (None: do not check that side)."""
        self._need_connection()
        if not self.syn_seen:
            raise AssertionError("window scaling unknown: the SYN was not captured")
        problems = [f"{side} window scale {got if got is not None else 'absent'}, expected {want}"
                    for side, want, got in (("device", device, self.window_scale["device"]),
                                            ("peer", peer, self.window_scale["peer"]))
                    if want is not None and got != want]
        if problems:
            raise AssertionError("; ".join(problems) + f" (scaling {self.window_scaling})")

    def expect_no_window_scaling(self) -> None:
        self._need_connection()
        if not self.syn_seen:
            raise AssertionError("window scaling unknown: the SYN was not captured")
        if self.window_scaling != "not negotiated":
            raise AssertionError(f"window scaling negotiated: device shift {self.window_scale['device']}, "
                                 f"peer shift {self.window_scale['peer']}, expected no window scaling")

    def expect_verdict(self, expected: str) -> None:
        if expected not in VERDICTS:
            raise ValueError(f"unknown verdict {expected!r}; one of {', '.join(VERDICTS)}")
        if self.verdict != expected:
            raise AssertionError(f"verdict {self.verdict}, expected {expected}: {self.verdict_reason}")

    def expect_retransmissions(self, at_most: int | None = None, at_least: int | None = None) -> None:
        n = self.retransmissions
        if (at_most is not None and n > at_most) or (at_least is not None and n < at_least):
            rng = " and ".join(x for x in (f">= {at_least}" if at_least is not None else "",
                                           f"<= {at_most}" if at_most is not None else "") if x)
            raise AssertionError(f"{n} retransmissions ({self.fast_retransmissions} fast, "
                                 f"{self.rto_retransmissions} after a timeout), expected {rng}")

    def expect_goodput(self, at_least: float | None = None, at_most: float | None = None) -> None:
        """Total goodput in Mbit/s."""
        self._need_connection()
        g = self.goodput_mbps
        if g is None or (at_least is not None and g < at_least) or (at_most is not None and g > at_most):
            rng = " and ".join(x for x in (f">= {at_least}" if at_least is not None else "",
                                           f"<= {at_most}" if at_most is not None else "") if x)
            shown = "none" if g is None else f"{g:.2f} Mbit/s"
            raise AssertionError(f"goodput {shown}, expected {rng} (verdict {self.verdict}: {self.verdict_reason})")


# ============================================================== loading


def load_capture(path: str | os.PathLike, device_ip: str | None = None, conn: int | None = None,
                 link_rate_bps: float | None = None, interval_s: float = 1.0,
                 captured_at: str | None = None, sender: str | None = None) -> CaptureAnalysis:
    """Analyse one TCP connection of a capture (default: the one with the most payload).

    ``sender`` ("device" or "peer", with ``device_ip``) picks the connection carrying the most
    data from that side instead: one direction of an iperf -r or -d run.

    ``captured_at`` ("device" or "peer") says where the capture was taken when the caller knows
    (netrepro's own captures are at the device side); otherwise it is judged from the timing.

    Raises NetreproError (one line) for a missing, empty or unreadable file, an unknown
    connection number or a device address that is not an endpoint. A readable capture without
    a usable TCP connection gives a CaptureAnalysis whose ``empty_reason`` says why.
    """
    path = Path(path)
    if not path.exists():
        raise NetreproError(f"capture {path} not found", "check the path (a run keeps it as capture.pcap)")
    if path.is_dir():
        raise NetreproError(f"{path} is a directory, not a capture", "give the capture file, e.g. RUN/capture.pcap")
    if path.stat().st_size == 0:
        raise NetreproError(f"capture {path} is empty (0 bytes)", "the capture was never written: check the link's log")
    if interval_s <= 0:
        raise NetreproError(f"interval {interval_s} s is not positive", "give a goodput interval > 0")
    if captured_at not in (None, "device", "peer"):
        raise NetreproError(f"captured_at '{captured_at}' is not a side", "give 'device' or 'peer'")
    if sender not in (None, "device", "peer") or (sender and not device_ip):
        raise NetreproError(f"sender '{sender}' needs device_ip and is 'device' or 'peer'", "give both")
    out = _run_tshark(path)
    result = CaptureAnalysis(path=str(path), interval_s=interval_s, link_rate_bps=link_rate_bps)
    errors = [line for line in out.stderr if line and not line.startswith("Running as user")]
    if out.returncode != 0:
        message = errors[-1] if errors else f"tshark exited with status {out.returncode}"
        message = message.removeprefix("tshark: ")
        if "cut short in the middle of a packet" in message or "damaged or corrupt" in message:
            if not out.rows:
                raise NetreproError(f"capture {path} is damaged: {message}", "recapture; nothing could be read")
            what = ("cut short in the middle of frame" if "cut short" in message else "damaged after frame")
            result.warnings.append(f"capture file {what} {len(out.rows) + 1} (was its writer stopped?); "
                                   f"analysed the {len(out.rows)} complete frames")
        elif "isn't a capture file" in message or "unknown file format" in message.lower():
            raise NetreproError(f"{path} is not a capture file tshark can read",
                                "give a pcap or pcapng file (a run keeps it as capture.pcap)")
        else:
            raise NetreproError(f"tshark cannot read {path}: {message}", "check the file with capinfos")
    _analyse(result, out.rows, device_ip, conn, captured_at, sender)
    return result


def _analyse(res: CaptureAnalysis, rows: list[list[str]], device_ip: str | None, conn: int | None,
             captured_at: str | None = None, sender: str | None = None) -> None:
    res.frames = len(rows)
    n_fields = len(_FIELDS)
    rows = [r for r in rows if len(r) == n_fields]
    c = _COL
    truncated = [r for r in rows if r[c["caplen"]] != r[c["len"]]]
    res.truncated_frames = len(truncated)
    if truncated:
        res.snaplen = max(int(r[c["caplen"]]) for r in truncated)
    cut_tcp = sum(1 for r in truncated if not r[c["stream"]] and "6" in (r[c["ip_proto"]], r[c["ip6_nxt"]]))
    if truncated:
        detail = (f"{cut_tcp} TCP headers cut off, those frames are missing from the analysis" if cut_tcp else
                  "headers intact, so windows, sequence numbers and payload lengths are still right")
        res.warnings.append(f"{len(truncated)} of {res.frames} frames truncated by the capture's snap length "
                            f"({res.snaplen} bytes kept): {detail}")
    if not rows:
        res.empty_reason = "the capture holds no frames"
        res.verdict_reason = res.empty_reason
        return
    tcp_rows = [r for r in rows if r[c["stream"]] and "icmp" not in r[c["protocols"]]]
    res.tcp_frames = len(tcp_rows)
    if not tcp_rows:
        if cut_tcp:
            res.empty_reason = (f"the snap length ({res.snaplen} bytes) cut off every TCP header; "
                                "recapture with a snap length of at least 128 bytes")
        else:
            kinds = Counter(_transport(r[c["protocols"]]) for r in rows)
            shown = ", ".join(f"{k} x{n}" for k, n in kinds.most_common(5))
            res.empty_reason = f"the capture holds {res.frames} frames, none of them TCP ({shown})"
        res.verdict_reason = res.empty_reason
        return
    res.connections = _connections(tcp_rows)
    if conn is None and sender:
        best = max(res.connections, key=lambda k: (_sent_by(k, device_ip, sender), -k.stream))
        conn = best.stream
        res.conn_chosen_by = f"most data sent by the {sender} of {len(res.connections)} connections"
    elif conn is None:
        best = max(res.connections, key=lambda k: (k.payload_bytes, k.frames, -k.stream))
        conn = best.stream
        res.conn_chosen_by = ("the only connection" if len(res.connections) == 1
                              else f"most payload of {len(res.connections)} connections")
    elif not any(k.stream == conn for k in res.connections):
        have = ", ".join(str(k.stream) for k in res.connections[:20])
        raise NetreproError(f"connection {conn} is not in the capture", f"pick one of: {have}")
    else:
        res.conn_chosen_by = "asked for"
    res.conn = conn
    segs, ends = _segments([r for r in tcp_rows if int(r[c["stream"]]) == conn])
    _connection_facts(res, segs, ends, device_ip, captured_at)


def _sent_by(k: Connection, device_ip: str | None, side: str) -> int:
    """Bytes the device (side "device") or the other end (side "peer") sent on connection k."""
    from_a = k.a.ip == device_ip
    if side == "device":
        return k.bytes_a_to_b if from_a else k.bytes_b_to_a if k.b.ip == device_ip else 0
    return k.bytes_b_to_a if from_a else k.bytes_a_to_b if k.b.ip == device_ip else 0


def _transport(protocols: str) -> str:
    parts = protocols.split(":")
    for name in ("udp", "icmp", "icmpv6", "arp", "sctp", "igmp"):
        if name in parts:
            return name.upper()
    return parts[-1].upper() if parts else "?"


def _endpoints(r: list[str]) -> tuple[Endpoint, Endpoint]:
    c = _COL
    src = r[c["ip_src"]] or r[c["ip6_src"]]
    dst = r[c["ip_dst"]] or r[c["ip6_dst"]]
    return Endpoint(src, int(r[c["sport"]])), Endpoint(dst, int(r[c["dport"]]))


def _connections(rows: list[list[str]]) -> list[Connection]:
    c = _COL
    by_stream: dict[int, list] = {}
    for r in rows:
        stream = int(r[c["stream"]])
        t = float(r[c["t"]])
        n = int(r[c["tcplen"]] or 0)
        flags = int(r[c["flags"]], 16) if r[c["flags"]] else 0
        entry = by_stream.get(stream)
        if entry is None:
            src, dst = _endpoints(r)
            entry = by_stream[stream] = [src, dst, 0, 0, 0, t, t, False]
        src_key = (r[c["ip_src"]] or r[c["ip6_src"]], int(r[c["sport"]]))
        forward = src_key == (entry[0].ip, entry[0].port)
        if flags & SYN and not flags & ACK and not entry[7]:
            entry[7] = True
            if not forward:  # the SYN's sender is the client: make it side a
                entry[0], entry[1] = entry[1], entry[0]
                entry[3], entry[4] = entry[4], entry[3]
                forward = True
        entry[2] += 1
        entry[3 if forward else 4] += n
        entry[6] = t
    return [Connection(s, e[0], e[1], e[2], e[3], e[4], e[5], e[6] - e[5], e[7]) for s, e in sorted(by_stream.items())]


def _segments(rows: list[list[str]]) -> tuple[list[_Seg], list[Endpoint]]:
    """The frames of one connection; side 0 is the source of its first frame, side 1 the destination."""
    c = _COL
    out = []
    first, other = _endpoints(rows[0])
    first_key = (first.ip, first.port)
    ci = [c[k] for k in ("num", "t", "len", "flags", "seq", "ack", "tcplen", "nxtseq", "win", "scale", "mss", "wscale",
                         "sack_perm", "tsval", "tsecr", "retrans", "fast", "spurious", "dupack", "zerowin", "winfull",
                         "ooo", "lost", "ack_rtt", "bif", "irtt", "keepalive", "zwp", "ip_src", "ip6_src", "sport")]
    pick = operator.itemgetter(*ci)
    for r in rows:
        (num, t, flen, flags, seq, ack, tlen, nxt, win, scale, mss, wscale, sack, tsval, tsecr, retrans, fast, spurious,
         dupack, zerowin, winfull, ooo, lost, ack_rtt, bif, irtt, keepalive, zwp, ip_src, ip6_src,
         sport) = pick(r)
        s = _Seg()
        s.num = int(num)
        s.t = float(t)
        s.flen = int(flen)
        s.side = 0 if ((ip_src or ip6_src), int(sport)) == first_key else 1
        s.flags = int(flags, 16) if flags else 0
        s.seq = int(seq) if seq else 0
        s.ack = int(ack) if ack else 0
        s.len = int(tlen) if tlen else 0
        s.nxt = int(nxt) if nxt else s.seq + s.len
        s.win = int(win) if win else 0
        s.scale = int(scale) if scale else None
        s.mss = _int(mss)
        s.wscale = _int(wscale)
        s.sack = bool(sack)
        s.ts = bool(tsval)
        s.tsval = _int(tsval)
        s.tsecr = _int(tsecr)
        s.retrans = bool(retrans)
        s.fast = bool(fast)
        s.spurious = bool(spurious)
        s.dupack = bool(dupack)
        s.zerowin = bool(zerowin)
        s.winfull = bool(winfull)
        s.ooo = bool(ooo)
        s.lost = bool(lost)
        s.ack_rtt = _float(ack_rtt)
        s.bif = _int(bif)
        s.irtt = _float(irtt)
        s.keepalive = bool(keepalive)
        s.zwp = bool(zwp)
        out.append(s)
    return out, [first, other]


# ============================================================== one connection


def _connection_facts(res: CaptureAnalysis, segs: list[_Seg], ends: list[Endpoint], device_ip: str | None,
                      captured_at: str | None = None) -> None:
    t0 = segs[0].t
    for s in segs:
        s.t -= t0
    res.duration_s = segs[-1].t

    # ---- handshake: SYN (client) and SYN-ACK (server)
    syn = next((s for s in segs if s.flags & SYN and not s.flags & ACK), None)
    synack = next((s for s in segs if s.flags & SYN and s.flags & ACK), None)
    res.syn_seen = syn is not None and synack is not None
    irtt = next((s.irtt for s in segs if s.irtt is not None), None)
    res.initial_rtt_ms = None if irtt is None else irtt * 1e3

    # ---- which side is the device, which is next to the capture point
    near, near_why = _near_side(segs, syn, synack)
    device_side, res.device_identified_by = _device_side(ends, device_ip, near, near_why, syn, synack, segs)
    if captured_at is not None:  # the caller knows where it captured: no need to judge from the timing
        near = device_side if captured_at == "device" else 1 - device_side
    name = {device_side: "device", 1 - device_side: "peer"}
    res.device, res.peer = ends[device_side], ends[1 - device_side]
    res.capture_near = name[near] if near is not None else "device"
    if near is None:
        res.warnings.append("could not tell which endpoint is next to the capture point; assumed the device "
                            "(netrepro captures at the device)")

    # ---- options from the handshake
    for s in (syn, synack):
        if s is None:
            continue
        side = name[s.side]
        setattr(res, f"{side}_mss", s.mss)
        res.window_scale[side] = s.wscale
        res.sack_permitted[side] = s.sack
        res.syn_window[side] = s.win
        res.timestamps[side] = s.ts
    if res.syn_seen:
        both = res.window_scale["device"] is not None and res.window_scale["peer"] is not None
        res.window_scaling = "negotiated" if both else "not negotiated"
    else:
        res.window_scaling = "unknown (SYN not captured)"
        res.warnings.append("the connection's SYN/SYN-ACK were not captured: MSS, window scale, SACK and "
                            "timestamps are unknown, and windows are shown as sent (scale unknown)")

    # ---- advertised windows per side
    for side in (0, 1):
        acks = [s for s in segs if s.side == side and s.flags & ACK and not s.flags & (SYN | RST)]
        stats = WindowStats(count=len(acks))
        if acks:
            wins = [s.win for s in acks]
            stats.values = Counter(wins)
            stats.min, stats.max = min(wins), max(wins)
            stats.median = statistics.median(wins)
            stats.unknown_scale = any(s.scale == -1 for s in acks)
        setattr(res, f"{name[side]}_window", stats)
        setattr(res, f"{name[side]}_windows", [(s.t, s.win) for s in acks])

    # ---- counts of tshark's analysis flags
    res.retransmissions = sum(s.retrans for s in segs)
    res.fast_retransmissions = sum(s.fast for s in segs)
    res.spurious_retransmissions = sum(s.spurious for s in segs)
    res.window_full = sum(s.winfull for s in segs)
    res.out_of_order = sum(s.ooo for s in segs)
    res.lost_segments = sum(s.lost for s in segs)
    for side in (0, 1):
        res.dup_acks[name[side]] = sum(s.dupack for s in segs if s.side == side)
        res.zero_windows[name[side]] = sum(s.zerowin for s in segs if s.side == side)
    if res.lost_segments:
        res.warnings.append(f"{res.lost_segments} gaps where tshark saw a segment missing from the capture "
                            "(not captured, or lost before the capture point)")

    # ---- segments per ACK: the other side's data segments per ACK that moved the ACK number
    for side in (0, 1):
        data_in = 0
        data_end = None  # end of the other side's payload so far: ACKs of a bare FIN do not count
        last = None
        advancing = 0
        for s in segs:
            if s.side != side:
                if s.len > 0 and not s.keepalive:
                    data_in += 1
                    data_end = s.nxt if data_end is None else max(data_end, s.nxt)
                continue
            if not s.flags & ACK or s.flags & SYN:
                continue
            if last is not None and s.ack > last and data_end is not None and s.ack <= data_end:
                advancing += 1
            last = s.ack if last is None else max(last, s.ack)
        res.segments_per_ack[name[side]] = round(data_in / advancing, 3) if data_in and advancing else None

    # ---- data direction
    sent = [sum(s.len for s in segs if s.side == side and not s.retrans) for side in (0, 1)]
    if max(sent) == 0:
        res.empty_reason = f"connection {res.conn} carries no payload"
        res.verdict = "unknown"
        res.verdict_reason = res.empty_reason
        return
    snd = 0 if sent[0] >= sent[1] else 1
    res.sender = name[snd]
    res.data_direction = f"{name[snd]}->{name[1 - snd]}"
    _data_direction(res, segs, snd, near if near is not None else device_side)
    _verdict(res)


def _near_side(segs: list[_Seg], syn: _Seg | None, synack: _Seg | None) -> tuple[int | None, str]:
    """The endpoint next to the capture point: it answers quickly, the far one a round trip later."""
    votes = []
    if syn is not None and synack is not None and synack.t >= syn.t:
        ack3 = next((s for s in segs if s.side == syn.side and s.t >= synack.t and s.flags & ACK
                     and not s.flags & SYN), None)
        if ack3 is not None:
            server_turn, client_turn = synack.t - syn.t, ack3.t - synack.t
            lo, hi = sorted((server_turn, client_turn))
            if hi >= 2 * lo and hi - lo >= 20e-6:
                side = synack.side if server_turn < client_turn else syn.side
                votes.append((side, f"handshake: server answered in {server_turn * 1e3:.2f} ms, "
                                    f"client in {client_turn * 1e3:.2f} ms"))
    med = []
    for side in (0, 1):
        samples = [s.ack_rtt for s in segs if s.side == side and s.ack_rtt is not None and not s.flags & SYN]
        med.append(statistics.median(samples) if samples else None)
    if med[0] is not None and med[1] is not None:
        lo, hi = sorted(med)
        if hi >= 2 * lo and hi - lo >= 20e-6:
            side = 0 if med[0] < med[1] else 1
            votes.append((side, f"ACKs: {med[side] * 1e3:.2f} ms vs {med[1 - side] * 1e3:.2f} ms median"))
    sides = {v[0] for v in votes}
    if len(sides) == 1:
        return votes[0][0], "; ".join(v[1] for v in votes)
    return None, "ambiguous" if votes else "no timing evidence"


def _device_side(ends: list[Endpoint], device_ip: str | None, near: int | None, near_why: str,
                 syn: _Seg | None, synack: _Seg | None, segs: list[_Seg]) -> tuple[int, str]:
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


def _data_direction(res: CaptureAnalysis, segs: list[_Seg], snd: int, near: int) -> None:
    """In flight, RTT, goodput, pauses, retransmission timing: all of the sender's data."""
    rcv = 1 - snd
    data = [s for s in segs if s.side == snd and s.len > 0 and not s.keepalive]
    acks = [s for s in segs if s.side == rcv and s.flags & ACK and not s.flags & RST]
    res.mss_used = max(s.len for s in data)
    seg_size = res.mss_used
    res.data_segments = [(s.t, s.seq, s.nxt, s.retrans) for s in data]
    res.evidence["data_wire_bytes"] = sum(max(s.flen, ETHERNET_MIN_FRAME) + ETHERNET_OVERHEAD for s in data)
    res.receiver_acks = [(s.t, s.ack, s.win) for s in acks]
    ack_t = [s.t for s in acks]
    # running right edge of the receiver's window, as seen at the capture point
    edges = []
    top = 0
    for s in acks:
        top = max(top, s.ack + s.win)
        edges.append(top)

    # ---- RTT, and how long before each data segment the sender last heard from the receiver (lag)
    sender_near = near == snd
    irtt = res.initial_rtt_ms / 1e3 if res.initial_rtt_ms is not None else None
    lags: list[float | None] = [0.0] * len(data)
    if sender_near:
        samples = [(s.t, s.ack_rtt) for s in acks if s.ack_rtt is not None and not s.flags & SYN]
        res.rtt_source = "tshark ack_rtt of the receiver's ACKs (capture at the sender)"
        res.in_flight_source = "tshark bytes_in_flight (capture at the sender)"
    else:
        samples, lags = _receiver_side_lags(res, data, acks, edges, irtt)
    if len(samples) < 3 and irtt is not None and not any(v == irtt for _, v in samples):
        samples = [*samples, (0.0, irtt)]
        res.rtt_source += "; with the handshake's initial RTT (few samples)"
    res.rtt_samples = samples
    rtt = statistics.median(v for _, v in samples) if samples else None
    res.rtt_ms = None if rtt is None else rtt * 1e3
    if rtt is None:
        res.rtt_source = "none: no ACK RTTs, no timestamps, no window releases and no handshake"
    fallback = rtt if rtt is not None else 0.0
    deltas = [fallback if v is None else v for v in lags]

    # ---- the sender's view: in flight and the window it knew of, per data segment
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
    res.in_flight = in_flight
    res.in_flight_window = window
    flights = [f for _, f in in_flight]
    res.in_flight_stats = {"min": min(flights, default=None), "median": _pct(flights, 50),
                           "p95": _pct(flights, 95), "max": max(flights, default=None)}

    # ---- goodput: payload delivered once (retransmissions excluded), per interval and in total.
    # At the receiver's side that is the first arrival of each byte; at the sender's side the
    # capture shows data when it leaves (before the link's queue), so delivery is read from the
    # receiver's cumulative ACKs instead.
    new = [s for s in data if not s.retrans]
    res.payload_bytes = sum(s.len for s in new)
    res.retransmitted_bytes = sum(s.len for s in data if s.retrans)
    first = data[0].t
    delivered: list[tuple[float, int]] = []
    if sender_near:
        base = min(s.seq for s in data)
        top = max(s.nxt for s in data)
        done_to = base
        for a in acks:
            if a.t >= first and a.ack > done_to:
                delivered.append((a.t, min(a.ack, top) - done_to))
                done_to = min(a.ack, top)
        res.evidence["goodput_from"] = "receiver's ACKs (capture at the sender)"
    if not delivered:
        delivered = [(s.t, s.len) for s in new]
        res.evidence["goodput_from"] = "first arrivals of payload"
    res.delivered = delivered
    last = delivered[-1][0]
    res.transfer_s = last - first
    span = res.transfer_s if res.transfer_s > 0 else None
    total = sum(n for _, n in delivered)
    res.goodput_mbps = total * 8 / span / 1e6 if span else None
    bins: dict[int, int] = {}
    for t, n in delivered:
        k = int(t // res.interval_s)
        bins[k] = bins.get(k, 0) + n
    end = segs[-1].t
    # intervals from the connection's start; a last one shorter than a quarter is left out of the series
    res.goodput = []
    for k in range(0, max(bins) + 1):
        start = k * res.interval_s
        length = min(res.interval_s, end - start)
        if length < res.interval_s / 4 and k == max(bins) and k > 0:
            break
        res.goodput.append((start, bins.get(k, 0) * 8 / max(length, 1e-9) / 1e6))
    slack = res.interval_s / 20
    inside = [v for t, v in res.goodput if t >= first - slack and t + res.interval_s <= last + slack]
    res.evidence["steady_goodput_mbps"] = _r(statistics.median(inside)) if inside else None

    # ---- pauses of the sender and what each one waited for
    gaps = [(data[i].t, data[i + 1].t - data[i].t, i) for i in range(len(data) - 1)]
    # a pause is a gap longer than tau: a fifth of the RTT, and more than a frame's time on the link
    # (with the link rate unknown, twice the shorter gaps between segments stand in for it)
    tau = max(0.5e-3, 0.2 * rtt if rtt else 0.0)
    if res.link_rate_bps:
        tau = max(tau, 1.5 * (seg_size + 54 + ETHERNET_OVERHEAD) * 8 / res.link_rate_bps)
    else:
        tau = max(tau, 2 * (_pct([g for _, g, _ in gaps], 25) or 0.0))
    res.idle_threshold_s = tau
    res.idle_gaps = [(t, g) for t, g, _ in gaps if g >= tau]
    room_at = {}
    j = 0
    for i, s in enumerate(data):
        while j < len(in_flight) and in_flight[j][0] < s.t:
            j += 1
        if j < len(in_flight) and in_flight[j][0] == s.t:
            room_at[i] = (rooms[j], in_flight[j][1])
    shares = {"busy": 0.0, "window": 0.0, "ack_wait": 0.0, "sender_paced": 0.0}
    for _t, g, i in gaps:
        if g < tau:
            shares["busy"] += g
            continue
        room, flight = room_at.get(i, (None, None))
        nxt = data[i + 1]
        if room is not None and room < seg_size:
            shares["window"] += g
            continue
        delta = deltas[i + 1]
        k = bisect.bisect_right(ack_t, nxt.t - delta) - 1
        restart = (nxt.t - delta) - acks[k].t if k >= 0 else None
        clocked = restart is not None and restart <= max(0.5e-3, 0.1 * g) and acks[k].t > data[i].t - delta
        if flight and clocked:
            shares["ack_wait"] += g
        else:
            shares["sender_paced"] += g
    send_span = data[-1].t - data[0].t
    if send_span > 0:
        res.pause_shares = {k: v / send_span for k, v in shares.items()}
    at_window = sum(1 for r in rooms if r < 2 * seg_size)
    res.evidence["segments_at_window"] = round(at_window / len(rooms), 3) if rooms else None

    # ---- retransmissions after a stall (timeouts)
    stall_min = max(2 * rtt if rtt else 0.0, 10e-3)
    prev_t = None
    for s in data:
        if s.retrans and not s.fast and prev_t is not None and s.t - prev_t >= stall_min:
            res.rto_retransmissions += 1
            res.rto_stall_s += s.t - prev_t
        prev_t = s.t

    # ---- the receiver at zero window
    zero_time = 0.0
    for k, a in enumerate(acks):
        if a.win == 0:
            nxt_t = acks[k + 1].t if k + 1 < len(acks) else end
            zero_time += max(0.0, nxt_t - a.t)
    res.evidence["zero_window_s"] = round(zero_time, 6)


def _receiver_side_lags(res: CaptureAnalysis, data: list[_Seg], acks: list[_Seg], edges: list[int],
                        irtt: float | None) -> tuple[list[tuple[float, float]], list[float | None]]:
    """Capture at the receiver: when did the sender last hear from it, before each data segment?

    With timestamps, the segment's TSecr names the receiver's TSval the sender had seen: the lag
    is the time since the receiver sent that TSval (middle of its first and last use). Without,
    the lag is the window release delay: the time since the first ACK whose window allowed the
    segment. That is the RTT when the sender waits for the window (it sends the moment the ACK
    arrives) and longer when something else held it, so it is used only when its 10th percentile
    is within 3 x the handshake RTT + 1 ms.
    """
    lags: list[float | None] = [None] * len(data)
    ts_seen: dict[int, list[float]] = {}
    for a in acks:
        if a.tsval is not None:
            ts_seen.setdefault(a.tsval, [a.t, a.t])[1] = a.t
    if ts_seen:
        samples = []
        for i, s in enumerate(data):
            span = ts_seen.get(s.tsecr) if s.tsecr is not None else None
            if span is None or span[0] > s.t:
                continue
            lag = s.t - (span[0] + min(span[1], s.t)) / 2
            lags[i] = lag
            if not s.retrans:
                samples.append((s.t, lag))
        if len(samples) >= 3:
            res.rtt_source = "timestamp echo: data's TSecr back to the receiver's segment with that TSval"
            res.in_flight_source = ("estimated at the receiver: data edge minus the receiver's ACK the sender "
                                    "had seen (timestamp echo)")
            return samples, lags
    release = []
    for i, s in enumerate(data):
        k = bisect.bisect_left(edges, s.nxt)
        if k < len(acks) and acks[k].t <= s.t:
            lags[i] = s.t - acks[k].t
            if not s.retrans:
                release.append((s.t, s.t - acks[k].t))
    r10 = _pct([v for _, v in release], 10)
    if r10 is not None and (irtt is None or r10 <= 3 * irtt + 1e-3):
        res.rtt_source = "window release: ACK that opened the window to the data it released (capture at receiver)"
        res.in_flight_source = (f"estimated at the receiver: data edge minus the receiver's ACK {r10 * 1e3:.2f} ms "
                                "(one RTT) earlier")
        return release, [r10] * len(data)
    if irtt is not None:
        if r10 is not None:
            res.evidence["window_release_ms"] = round(r10 * 1e3, 3)
        res.rtt_source = "handshake only (no timestamps; the sender did not wait for the window)"
        res.in_flight_source = (f"estimated at the receiver with the handshake RTT {irtt * 1e3:.2f} ms: a lower "
                                "bound (no timestamps, RTT under load unknown)")
        res.warnings.append("in flight at the receiver is a lower bound: no timestamps, and the sender did not "
                            "wait for the window, so its RTT under load is unknown")
        return [(0.0, irtt)], [irtt] * len(data)
    res.rtt_source = "none"
    res.in_flight_source = "as seen at the capture point (receiver side; no RTT estimate)"
    res.warnings.append("no RTT estimate: in flight is shown as seen at the receiver")
    return [], [0.0] * len(data)


def _base_rtt(samples: Sequence[tuple[float, float]]) -> float:
    """The RTT without a queue: the lowest median of three consecutive samples (in time order).

    Not the lowest sample: a capture point that stalls stamps the frames it then reads late, and
    a data segment stamped late gives one data->ACK time below the path's own round trip (seen:
    2.94 ms on a 5.5 ms path, the segment stamped with the ACK read in the same batch after a
    22 ms stall). Such samples come one at a time; three in a row are the path.
    """
    values = [v for _, v in samples]
    if len(values) < 3:
        return min(values)
    return min(sorted(values[i:i + 3])[1] for i in range(len(values) - 2))


def _plateau(res: CaptureAnalysis) -> dict[str, Any] | None:
    """Whether in flight was held at a constant ceiling (a send buffer); None without in flight.

    The ceiling is in flight's 95th percentile. Flat: in flight never went more than a segment
    above it, and in each time slice of the transfer (up to PLATEAU_SLICES, 50+ segments each) it
    came within a segment of it. A congestion window grows and varies between slices; lwIP's
    TCP_SND_BUF is a byte count that in flight meets again and again.
    """
    flights = res.in_flight
    seg = res.mss_used or 0
    if not flights or not seg:
        return None
    values = [f for _, f in flights]
    ceiling = _pct(values, 95) or 0.0
    n = max(1, min(PLATEAU_SLICES, len(flights) // 50))
    t0, t1 = flights[0][0], flights[-1][0]
    width = (t1 - t0) / n or 1.0
    tops = [0] * n
    for t, f in flights:
        k = min(n - 1, int((t - t0) / width))
        tops[k] = max(tops[k], f)
    tops = [v for v in tops if v]
    flat = bool(ceiling) and max(values) <= ceiling + seg and all(abs(v - ceiling) <= seg for v in tops)
    return {"flat": flat, "ceiling": ceiling, "max": max(values), "slices": len(tops), "slice_peaks": tops,
            "at_ceiling": sum(1 for f in values if f >= ceiling - seg) / len(values)}


def _verdict(res: CaptureAnalysis) -> None:
    """One verdict, checked in this order: link, loss by timeouts, receiver, window, send buffer, loss, unknown."""
    rcv = res.receiver
    wstats = res.window_of(rcv)
    span = res.transfer_s or 0.0
    rtt = res.rtt_ms / 1e3 if res.rtt_ms else None
    wnd = wstats.median
    if wnd is not None and rtt:
        res.window_bound_mbps = wnd * 8 / rtt / 1e6
    if res.link_rate_bps:
        wire = res.evidence.get("data_wire_bytes") or 0  # frames of the data direction, with Ethernet's overhead
        eff = (res.payload_bytes + res.retransmitted_bytes) / wire if wire else 1.0
        res.link_payload_mbps = res.link_rate_bps * eff / 1e6
        link_mbps = res.link_rate_bps / 1e6
        res.bound_mbps = min(link_mbps, res.window_bound_mbps) if res.window_bound_mbps else link_mbps
    g = res.goodput_mbps
    ev = res.evidence
    sh = res.pause_shares
    n_data = len(res.data_segments)
    fl = res.in_flight_stats
    p95 = fl.get("p95")
    rs = f"the {rcv}'s"
    w_txt = f"{wnd:.0f} B" if wnd is not None else "unknown"
    rtt_txt = f"{res.rtt_ms:.2f} ms" if res.rtt_ms else "unknown RTT"
    base_candidates = ([_base_rtt(res.rtt_samples)] if res.rtt_samples else []) + (
        [res.initial_rtt_ms / 1e3] if res.initial_rtt_ms else [])
    base_rtt = min(base_candidates) if base_candidates else None
    ev["base_rtt_ms"] = _r(base_rtt * 1e3 if base_rtt else None)
    ev["goodput_mbps"] = _r(g)
    busy, blocked = sh.get("busy", 0.0), sh.get("window", 0.0)
    ack_wait, paced = sh.get("ack_wait", 0.0), sh.get("sender_paced", 0.0)
    at_window = ev.get("segments_at_window") or 0.0
    zero_s = ev.get("zero_window_s", 0.0)
    ref_window = max(wstats.max or 0, res.syn_window.get(rcv) or 0)

    def done(verdict: str, reason: str) -> None:
        res.verdict, res.verdict_reason = verdict, reason

    if n_data < 10 or not span or g is None:
        return done("unknown", f"too little data to judge ({n_data} data segments)")
    # 1. the link: goodput at its payload rate, or (rate unknown) a standing queue with the sender never idle
    steady = ev.get("steady_goodput_mbps")
    g_link = max(g, steady or 0.0)
    if res.link_payload_mbps and g_link >= LINK_BUSY * res.link_payload_mbps:
        per = f" ({steady:.1f} Mbit/s per {res.interval_s:g} s, median)" if steady and steady > 1.02 * g else ""
        return done("link-limited", f"goodput {g:.1f} Mbit/s{per} = {g_link / res.link_payload_mbps:.0%} of the "
                    f"{res.link_payload_mbps:.1f} Mbit/s of payload the {res.link_rate_bps / 1e6:g} Mbit/s link "
                    f"carries; {rs} window {w_txt}, RTT {rtt_txt}")
    at_receiver = res.capture_near == rcv
    if at_receiver and res.link_rate_bps is None and busy >= SENDER_BUSY:
        return done("link-limited", f"data arrived back to back {busy:.0%} of the time at {g:.1f} Mbit/s: the "
                    f"bottleneck upstream (the link, or a sender that cannot go faster) never went idle (link rate "
                    f"unknown); {rs} window {w_txt}, RTT {rtt_txt}")
    frame_time = (1538 * 8 / res.link_rate_bps) if res.link_rate_bps else 0.0
    queue = (rtt is not None and base_rtt and rtt >= QUEUE_RTT_GROWTH * base_rtt
             and rtt - base_rtt >= max(QUEUE_MIN_S, 3 * frame_time))
    if queue and busy >= SENDER_BUSY:
        rate = "link rate unknown" if res.link_rate_bps is None else f"link {res.link_rate_bps / 1e6:g} Mbit/s"
        return done("link-limited", f"a queue stood at the bottleneck: RTT grew from {base_rtt * 1e3:.2f} ms to "
                    f"{rtt_txt} (median) while the sender sent {busy:.0%} of the time without pausing; goodput "
                    f"{g:.1f} Mbit/s ({rate})")
    # 2. timeouts
    if res.rto_stall_s >= RTO_SHARE * span:
        return done("loss-limited", f"{_n(res.rto_retransmissions, 'retransmission')} after timeouts stalled "
                    f"the sender {res.rto_stall_s:.2f} s of {span:.2f} s ({res.rto_stall_s / span:.0%}); "
                    f"{_n(res.retransmissions, 'retransmission')} in all; goodput {g:.1f} Mbit/s")
    # 3./4. the window: the receiver's (shrinking, zero) or the window as configured
    window_held = (blocked >= BLOCKED_SHARE and blocked >= ack_wait) or at_window >= AT_WINDOW_SEGMENTS
    shrunk = bool(ref_window) and wnd is not None and wnd <= SHRUNK_WINDOW * ref_window
    if zero_s >= ZERO_WINDOW_SHARE * span:
        n = res.zero_windows[rcv]
        return done("receiver-limited", f"{rcv} advertised a zero window {_n(n, 'time')}, "
                    f"closed {zero_s:.2f} s of {span:.2f} s ({zero_s / span:.0%}); window {wstats.min}-"
                    f"{wstats.max} B, median {w_txt}; goodput {g:.1f} Mbit/s")
    held = (f"{at_window:.0%} of segments left under 2 segments of window, sender paused at the window "
            f"{blocked:.0%} of the time")
    if window_held and shrunk:
        return done("receiver-limited", f"sender held at {rs} window, which shrank: median {w_txt} of "
                    f"{ref_window} B (the receiving application is not keeping up); {held}; goodput {g:.1f} Mbit/s")
    if window_held:
        bound_txt = (f"; window/RTT = {w_txt} / {rtt_txt} = {res.window_bound_mbps:.1f} Mbit/s"
                     if res.window_bound_mbps else "")
        return done("window-limited", f"in flight sat at {rs} advertised window ({w_txt}): {held}; goodput "
                    f"{g:.1f} Mbit/s{bound_txt}")
    # 5. the sender's buffer: in flight at a flat ceiling well below the window, the sender waiting for
    # ACKs to free room. Either it sat idle for long, or (an application that refills the buffer the
    # moment an ACK frees room) it hardly paused, and goodput = ceiling / RTT, below the link's rate.
    below_window = p95 is not None and bool(wnd) and p95 < BUFFER_BELOW_WINDOW * wnd
    plateau = _plateau(res) if below_window else None
    flat = bool(plateau and plateau["flat"])
    if plateau:
        ev["in_flight_ceiling"] = round(plateau["ceiling"])
        ev["in_flight_flat"] = flat
        ev["in_flight_slice_peaks"] = plateau["slice_peaks"]
    pipe = plateau["ceiling"] * 8 / rtt / 1e6 if plateau and rtt else None
    if pipe:
        ev["goodput_per_ceiling_rtt"] = round(g / pipe, 3)
    idle_for_acks = ack_wait >= BLOCKED_SHARE
    refilled = (pipe is not None and paced < BLOCKED_SHARE and not queue
                and PLATEAU_GOODPUT[0] <= g / pipe <= PLATEAU_GOODPUT[1])
    if flat and (idle_for_acks or refilled):
        c = plateau["ceiling"]
        top = "p95 = max" if plateau["max"] == round(c) else f"p95; max {plateau['max']} B"
        if res.link_payload_mbps:
            room = (f"below what the link carries ({g / res.link_payload_mbps:.0%} of "
                    f"{res.link_payload_mbps:.1f} Mbit/s)")
        elif not queue and base_rtt:
            room = f"with no standing queue (RTT {rtt_txt}, base {base_rtt * 1e3:.2f} ms; link rate unknown)"
        else:
            room = "link rate unknown"
        law = (f" = {g / pipe:.0%} of in flight/RTT ({c:.0f} B / {rtt_txt} = {pipe:.1f} Mbit/s)" if pipe else "")
        slices = f", the same in all {plateau['slices']} time slices" if plateau["slices"] > 1 else ""
        return done("send-buffer-limited", f"in flight plateaued at {c:.0f} B ({top}{slices}), below {rs} window "
                    f"{w_txt}, {room}; goodput {g:.1f} Mbit/s{law}; the sender waited for ACKs {ack_wait:.0%} of "
                    f"the time ({_n(len(res.idle_gaps), 'pause')})")
    # 6. frequent retransmissions with the window open
    sender_retrans = sum(1 for *_, re in res.data_segments if re)
    if sender_retrans >= 3 and sender_retrans >= RETRANS_SHARE * n_data:
        return done("loss-limited", f"{sender_retrans} of {n_data} data segments retransmitted "
                    f"({res.fast_retransmissions} fast, {res.rto_retransmissions} after timeouts) with the "
                    f"window open; goodput {g:.1f} Mbit/s")
    if plateau and not flat and idle_for_acks:
        peaks = plateau["slice_peaks"]
        why = (f"the sender waited for ACKs {ack_wait:.0%} of the time with in flight (p95 {p95:.0f} B) below {rs} "
               f"window {w_txt}, but in flight had no fixed ceiling (peak per time slice {min(peaks)}-{max(peaks)} "
               f"B, max {plateau['max']} B): a congestion window or the application, not a fixed send buffer; "
               f"goodput {g:.1f} Mbit/s")
    elif paced >= SENDER_PACED_SHARE:
        return done("sender-limited", f"the sender paused {paced:.0%} of the time with the window open and no "
                    f"ACK it was waiting for: its CPU, application or memory set the pace; in flight p95 "
                    f"{p95 or 0:.0f} B of {w_txt}; goodput {g:.1f} Mbit/s")
    elif paced >= BLOCKED_SHARE:
        why = (f"the sender paused {paced:.0%} of the time with the window open and not waiting for ACKs "
               f"(application, CPU or memory pacing); in flight p95 {p95 or 0:.0f} B of {w_txt}; "
               f"goodput {g:.1f} Mbit/s")
    elif res.link_rate_bps is None:
        why = (f"the sender was busy {busy:.0%} of the time with in flight (p95 {p95 or 0:.0f} B) below {rs} "
               f"window {w_txt} and no standing queue; link rate unknown (give it to test for link-limited); "
               f"goodput {g:.1f} Mbit/s")
    else:
        why = (f"goodput {g:.1f} Mbit/s is {g / (res.link_payload_mbps or 1):.0%} of the link's payload rate, "
               f"in flight (p95 {p95 or 0:.0f} B) below {rs} window {w_txt}, sender busy {busy:.0%} of the "
               "time (congestion control or pacing)")
    return done("unknown", why)


# ============================================================== text table


def format_table(analysis: CaptureAnalysis) -> str:
    """A short table for ``netrepro inspect``."""
    a = analysis
    lines = [f"capture   {a.path}: {a.frames} frames, {a.tcp_frames} TCP, {len(a.connections)} connection(s)"]
    if a.conn is None:
        lines.append(f"nothing to analyse: {a.empty_reason}")
        lines += [f"warning   {w}" for w in a.warnings]
        return "\n".join(lines)
    conn = next(k for k in a.connections if k.stream == a.conn)
    lines.append(f"conn {a.conn}    {conn.a} -> {conn.b}, {conn.frames} frames, {a.duration_s:.3f} s "
                 f"({a.conn_chosen_by})")
    if len(a.connections) > 1:
        others = ", ".join(f"{k.stream}: {k.a}->{k.b} {k.payload_bytes} B" for k in a.connections
                           if k.stream != a.conn)[:200]
        lines.append(f"others    {others}")
    lines.append(f"device    {a.device}: {a.device_identified_by}")
    lines.append(f"peer      {a.peer}; capture next to the {a.capture_near}; data {a.data_direction or 'none'}")

    def cell(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, float):
            return f"{v:.2f}".rstrip("0").rstrip(".")
        return str(v)

    def win(w: WindowStats) -> str:
        if not w.count:
            return "-"
        s = f"{w.min}/{cell(w.median)}/{w.max} ({w.count} ACKs)"
        return s + " scale?" if w.unknown_scale else s

    rows = [
        ("", "device", "peer"),
        ("MSS option", cell(a.device_mss), cell(a.peer_mss)),
        ("window scale", cell(a.window_scale["device"]) if a.syn_seen else "?",
         cell(a.window_scale["peer"]) if a.syn_seen else "?"),
        ("SACK / timestamps", f"{cell(a.sack_permitted['device'])} / {cell(a.timestamps['device'])}",
         f"{cell(a.sack_permitted['peer'])} / {cell(a.timestamps['peer'])}"),
        ("window min/med/max", win(a.device_window), win(a.peer_window)),
        ("dup ACKs", cell(a.dup_acks["device"]), cell(a.dup_acks["peer"])),
        ("zero windows", cell(a.zero_windows["device"]), cell(a.zero_windows["peer"])),
        ("segments per ACK", cell(a.segments_per_ack["device"]), cell(a.segments_per_ack["peer"])),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    for r in rows:
        lines.append(f"  {r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]}")
    lines.append(f"scaling   {a.window_scaling}")
    if a.sender is not None:
        per = " ".join(f"{v:.1f}" for _, v in a.goodput[:12]) + (" ..." if len(a.goodput) > 12 else "")
        g = f"{a.goodput_mbps:.2f} Mbit/s" if a.goodput_mbps is not None else "-"
        lines.append(f"goodput   {g} over {a.transfer_s:.3f} s ({a.payload_bytes} B); per {a.interval_s:g} s: {per}")
        rtt = f"{a.rtt_ms:.2f} ms median of {len(a.rtt_samples)}" if a.rtt_ms is not None else "-"
        irtt = f", handshake {a.initial_rtt_ms:.2f} ms" if a.initial_rtt_ms is not None else ""
        lines.append(f"RTT       {rtt}{irtt}")
        f = a.in_flight_stats
        if f.get("median") is not None:
            lines.append(f"in flight median {f['median']:.0f} B, p95 {f['p95']:.0f} B, max {f['max']} B "
                         f"({a.in_flight_source})")
        lines.append(f"retrans   {a.retransmissions} ({a.fast_retransmissions} fast, {a.rto_retransmissions} after "
                     f"timeouts, {a.spurious_retransmissions} spurious); out of order {a.out_of_order}; "
                     f"window full {a.window_full}")
        idle = sum(g for _, g in a.idle_gaps)
        shares = ", ".join(f"{k} {v:.0%}" for k, v in a.pause_shares.items() if v >= 0.005)
        lines.append(f"pauses    {len(a.idle_gaps)} >= {a.idle_threshold_s * 1e3:.2f} ms, {idle:.3f} s in all; "
                     f"time: {shares}")
        if a.bound_mbps is not None:
            wb = f"{a.window_bound_mbps:.1f}" if a.window_bound_mbps else "?"
            lines.append(f"bound     {a.bound_mbps:.1f} Mbit/s = min(link {a.link_rate_bps / 1e6:g}, "
                         f"window/RTT {wb})")
        elif a.window_bound_mbps is not None:
            lines.append(f"bound     window/RTT {a.window_bound_mbps:.1f} Mbit/s (link rate unknown)")
    lines.append(f"verdict   {a.verdict}: {a.verdict_reason}")
    lines += [f"warning   {w}" for w in a.warnings]
    return "\n".join(lines)


__all__ = [
    "TSHARK_FIELDS",
    "TSHARK_PREFS",
    "VERDICTS",
    "CaptureAnalysis",
    "Connection",
    "Endpoint",
    "WindowStats",
    "format_table",
    "load_capture",
]
