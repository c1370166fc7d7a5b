"""Reading a real board's capture: the facts a report needs (``read_board_capture``).

A user's capture of their board's TCP transfer (pcap or pcapng; tshark, tcpdump, Wireshark),
taken at the board's side or at the PC's, goes through ``load_capture``'s own steps (tshark's
rows, ``facts.measure``, ``verdict.judge``): MSS, windows, RTTs, retransmissions, goodput and
the verdict are the analysis's. What this module adds:

- which connection: the only one carrying substantial data, or the one asked for (several
  transfers and no stream is an error that lists them);
- which end is the board: the address given, else the end that advertised the smaller window
  (an lwIP board offers a few segments, a PC's window grows to megabytes);
- the bottleneck's rate, not told but read from the capture (``estimate_rate``);
- the share of data segments lost, as well as this side of the link can see it.

The estimated rate goes to the analysis as the link's rate, so its verdict can test for
"link-limited" as a run's own analysis does when it knows its link.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.analysis.capture import COLUMN, Row, check_capture_file, read_capture
from harness.analysis.capture_analysis import CaptureAnalysis
from harness.analysis.facts import Facts, measure
from harness.analysis.frames import ACK, RST, SYN, Connection, Endpoint, Segment, segments, select_connection
from harness.analysis.summary import AnalysisSummary
from harness.analysis.verdict import judge
from harness.core.cache import file_sha256
from harness.core.errors import NetreproError
from harness.core.ethernet import MAX_FRAME, wire_bytes

SUBSTANTIAL_SHARE = 0.10     # a connection is a transfer of its own with >= 10 % of the largest one's payload
SUBSTANTIAL_MIN = 10 * 1460  # and at least ten full segments (an iperf control connection is not one)
CLUSTER_WIDTH = 0.10         # per-interval rates within 10 % of the cluster's slowest belong to one cluster
PEAK_WIDTH = 0.02            # and its peak: within 2 % (intervals a short pause stretched form its slow shoulder)
MIN_RATE_SAMPLES = 8         # fewer back-to-back intervals give no rate
RATE_DIGITS = 4              # the rate is kept to 4 significant digits (0.05 %: far below its own spread)
UNKNOWN_SCALE = -1           # tshark's window_size_scalefactor when the SYN was not captured
ETHERNET_HEADER = 14
BASE_HEADERS = {4: ETHERNET_HEADER + 20 + 20, 6: ETHERNET_HEADER + 40 + 20}  # Ethernet, IP and TCP, no options
# Link-layer headers of captures that are not Ethernet, by tshark's first protocol: Linux cooked
# captures (tcpdump -i any) hold 16 bytes (SLL; SLL2's 20 show as "sll" too, and count 4 B, 0.3 %
# of a full frame, too many), raw-IP captures none, BSD loopback 4.
LINK_HEADERS = {"eth": ETHERNET_HEADER, "sll": 16, "raw": 0, "null": 4, "loop": 4}


@dataclass(frozen=True)
class CaptureReading:
    """What a board's capture shows, for a report. Rates in bit/s unless the name says Mbit/s."""

    file: str                        # the capture's path as given
    name: str                        # file name
    sha256: str                      # of the file's bytes
    frames: int                      # frames in the file
    frames_used: tuple[int, int]     # first and last frame number of the chosen connection
    stream: int                      # tshark's tcp.stream of the chosen connection
    device: str                      # the device's address
    device_identified_by: str
    peer: str
    direction: str                   # "rx" (peer -> device data) or "tx" (device -> peer), the device's view
    captured_at: str                 # "device" or "peer": where the capture was taken
    mss: int | None                  # the device's advertised MSS (SYN option)
    window_max: int | None           # the largest window the device advertised (scaled)
    window_scaling: bool | None      # None: the SYNs were not captured
    window_scale: int | None         # the device's window-scale option (None: it sent none, or no SYN seen)
    idle_rtt_ms: float | None        # the handshake's RTT
    loaded_rtt_ms: float | None      # median RTT under load
    rate_bps: float | None           # the bottleneck's rate on the wire (Ethernet's overhead counted)
    rate_from: str                   # "data spacing", "ack spacing" or "" (none)
    loss: float | None               # fraction of data segments lost
    lost_data: tuple[LostData, ...]  # which: the bytes the sender's first transmissions lost
    syn_seen: bool                   # the sender's SYN is in the capture: its bytes are numbered from it
    retransmissions: int
    throughput_mbps: float | None    # goodput of the transfer
    verdict: str
    verdict_reason: str
    analysis: AnalysisSummary        # the full summary (for comparisons)

    def as_dict(self) -> dict[str, Any]:
        """JSON-able: the fields by name, frames_used as a list, the analysis as result.json holds it."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["frames_used"] = list(self.frames_used)
        out["analysis"] = self.analysis.as_dict()
        return out


# ------------------------------------------------------------------ which connection, which end


def _size(n: int) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def _describe(k: Connection) -> str:
    """'stream 0: 10.77.0.1:40000 -> 10.77.0.2:5001 8.26 MB' (the arrow from the side that sent more)."""
    src, dst = (k.a, k.b) if k.bytes_a_to_b >= k.bytes_b_to_a else (k.b, k.a)
    back = min(k.bytes_a_to_b, k.bytes_b_to_a)
    return f"stream {k.stream}: {src} -> {dst} {_size(max(k.bytes_a_to_b, k.bytes_b_to_a))}" + (
        f" (+{_size(back)} back)" if back else "")


def _listing(connections: Sequence[Connection], most: int = 8) -> str:
    shown = sorted(connections, key=lambda k: -k.payload_bytes)[:most]
    more = len(connections) - len(shown)
    return "; ".join(_describe(k) for k in shown) + (f"; and {more} more" if more > 0 else "")


def _is_endpoint(k: Connection, ip: str) -> bool:
    return ip in (k.a.ip, k.b.ip)


def choose_stream(connections: Sequence[Connection], name: str, stream: int | None,
                  device: str | None) -> Connection:
    """The connection to read: the one asked for, else the only substantial transfer (of the device's, when given)."""
    if stream is not None:
        found = next((k for k in connections if k.stream == stream), None)
        if found is None:
            raise NetreproError(f"stream {stream} is not in {name} (its TCP streams: {_listing(connections)})",
                                "give --stream N with one of them")
        return found
    mine = [k for k in connections if device is None or _is_endpoint(k, device)]
    if not mine:
        raise NetreproError(f"device {device} is not an endpoint of any TCP connection in {name} "
                            f"({_listing(connections)})", "give --device with the board's address")
    top = max(k.payload_bytes for k in mine)
    transfers = [k for k in mine if k.payload_bytes >= max(SUBSTANTIAL_SHARE * top, SUBSTANTIAL_MIN)]
    if len(transfers) > 1:
        raise NetreproError(f"{name} holds {len(transfers)} transfers ({_listing(transfers)})",
                            "give --stream N to pick one")
    return max(mine, key=lambda k: (k.payload_bytes, k.frames, -k.stream))


def _largest_windows(segs: Sequence[Segment]) -> tuple[int, int]:
    """The largest window each end (0, 1) advertised, scaled where tshark knows the scale."""
    tops = [0, 0]
    for s in segs:
        if not s.flags & RST:
            tops[s.side] = max(tops[s.side], s.win)
    return tops[0], tops[1]


def identify_device(segs: Sequence[Segment], ends: Sequence[Endpoint], device: str | None,
                    stream: int) -> tuple[str | None, str]:
    """The device's address and how it was known; None (and why) when the windows cannot tell: the analysis
    then guesses from the timing."""
    if device is not None:
        if not any(e.ip == device for e in ends):
            raise NetreproError(f"device {device} is not an endpoint of stream {stream} ({ends[0]} <-> {ends[1]})",
                                f"give --device {ends[0].ip} or {ends[1].ip}, or another --stream")
        return device, f"given (--device {device})"
    if any(s.scale == UNKNOWN_SCALE for s in segs):  # raw windows: a PC's scaled one can look the smaller
        return None, "windows not comparable (SYN not captured, scale unknown)"
    windows = _largest_windows(segs)
    if windows[0] == windows[1]:
        return None, f"both ends advertised at most {windows[0]} B"
    small = 0 if windows[0] < windows[1] else 1
    return ends[small].ip, (f"guessed: {ends[small].ip} advertised the smaller window (at most {windows[small]} B, "
                            f"{ends[1 - small].ip} {windows[1 - small]} B); give --device to be sure")


# ------------------------------------------------------------------ the bottleneck's rate


@dataclass(frozen=True)
class RateEstimate:
    """The bottleneck's rate on the wire, where it was read, and from how many intervals."""

    bps: float | None = None
    source: str = ""          # "data spacing", "ack spacing", "" (too few back-to-back intervals)
    samples: int = 0          # intervals in the cluster the rate is the median of
    intervals: int = 0        # intervals looked at


def ethernet_length(protocols: str) -> Callable[[int], int]:
    """Captured frame length -> the Ethernet frame's (what the link's wire rule counts), for this capture's
    link layer (tshark's frame.protocols of one of its frames)."""
    header = LINK_HEADERS.get(protocols.split(":", 1)[0], ETHERNET_HEADER)
    return lambda captured: captured - header + ETHERNET_HEADER


@dataclass(frozen=True)
class _Frames:
    """The data direction's frames, in wire terms."""

    data: list[Segment]
    acks: list[Segment]
    full: int                         # payload of a full-size segment
    full_wire: int                    # the wire bytes of one
    wire: Callable[[Segment], int]    # bytes one data frame occupies on the wire


def _segment_size(data: Sequence[Segment], segs: Sequence[Segment], sender: int, eth: Callable[[int], int],
                  ip_version: int) -> int | None:
    """A full segment's payload: the largest that went on the wire as one frame. Larger "frames" are the PC's
    segmentation offload (TSO/GRO), several segments each with its own headers and overhead; with those in the
    capture (a sending PC's), the frames that went as they are may all be short pushes, so a segment is the
    receiver's MSS less the TCP options the data carries, when the SYN shows the MSS."""
    on_wire = [s.len for s in data if eth(s.flen) <= MAX_FRAME]
    mss = next((s.mss for s in segs if s.side != sender and s.flags & SYN and s.mss), None)
    if len(on_wire) < len(data) and mss:
        options = eth(data[0].flen) - data[0].len - BASE_HEADERS[ip_version]
        if mss > options:
            return mss - options
    return max(on_wire) if on_wire else None


def _frames(segs: Sequence[Segment], sender: int, eth: Callable[[int], int], ip_version: int) -> _Frames | None:
    data = [s for s in segs if s.side == sender and s.len > 0 and not s.keepalive]
    acks = [s for s in segs if s.side != sender and s.flags & ACK and not s.flags & (SYN | RST)]
    full = _segment_size(data, segs, sender, eth, ip_version) if data else None
    if full is None:
        return None
    header = eth(data[0].flen) - data[0].len

    def wire(s: Segment) -> int:
        if eth(s.flen) <= MAX_FRAME:
            return wire_bytes(eth(s.flen))
        pieces = math.ceil(s.len / full)
        return (pieces - 1) * wire_bytes(header + full) + wire_bytes(header + s.len - (pieces - 1) * full)

    return _Frames(data, acks, full, wire_bytes(header + full), wire)


def _data_spacing(f: _Frames) -> list[float]:
    """Per pair of consecutive full-size data frames: the second's wire bits over the gap between them."""
    return [f.wire(b) * 8 / (b.t - a.t) for a, b in zip(f.data, f.data[1:], strict=False)
            if a.len >= f.full and b.len >= f.full and b.t > a.t]


def _ack_spacing(f: _Frames) -> list[float]:
    """Per ACK that moved the ACK number by a full segment or more: the wire bits of the data it acknowledged
    over the time since the ACK before."""
    bits_per_byte = f.full_wire * 8 / f.full
    rates = []
    last = None
    for a in f.acks:
        if last is None:
            last = a
        elif a.ack > last.ack:
            if a.ack - last.ack >= f.full and a.t > last.t:
                rates.append((a.ack - last.ack) * bits_per_byte / (a.t - last.t))
            last = a
    return rates


def densest_cluster(rates: Sequence[float], width: float = CLUSTER_WIDTH) -> list[float]:
    """The largest group of rates all within `width` of the group's slowest; among groups as large, the fastest.

    Back-to-back intervals all give the bottleneck's rate, so they cluster tightly; intervals that span
    a pause (window-limited sender, delayed ACK, loss recovery) give lower rates spread wide, and a
    capture point that stamps frames in batches scatters a few both ways."""
    xs = sorted(rates)
    best_start, best_count = 0, 0
    end = 0
    for start, x in enumerate(xs):
        end = max(end, start)
        while end < len(xs) and xs[end] <= x * (1 + width):
            end += 1
        if end - start >= best_count:
            best_start, best_count = start, end - start
    return xs[best_start:best_start + best_count]


def _significant(x: float, digits: int = RATE_DIGITS) -> float:
    return round(x, digits - 1 - math.floor(math.log10(abs(x)))) if x else x


def estimate_rate(segs: Sequence[Segment], sender: int, capture_near: int, protocols: str = "eth",
                  ip_version: int = 4) -> RateEstimate:
    """The bottleneck's rate on the wire, from the capture alone (``sender`` and ``capture_near`` are ends 0/1).

    The bottleneck forwards frames back to back, each taking its wire bytes (ethernet.wire_bytes:
    the frame padded to the minimum, plus preamble, inter-frame gap and FCS) x 8 / rate. At the
    data's receiving side the capture sees that spacing between consecutive full-size data frames
    ("data spacing"). At the sending side the data leaves at the sender's own pace, but the
    receiver's ACKs come back clocked by the bottleneck: each ACK covers the wire bytes of the data
    it acknowledges since the previous one ("ack spacing"). Either way the rate is the median of the
    densest cluster of per-interval rates (``densest_cluster``), so a window-limited transfer's
    pauses do not count; within 10 %, then its peak within 2 %: an interval that a pause shorter
    than a frame stretched gives a rate a few percent low, and such intervals are many when the
    sender keeps the link only just busy (a send buffer a little under the path's bandwidth x RTT).

    A sender that paces itself below the link's rate looks like a slower link: the capture alone
    cannot tell them apart.
    """
    f = _frames(segs, sender, ethernet_length(protocols), ip_version)
    if f is None:
        return RateEstimate()
    at_receiver = capture_near != sender
    rates = _data_spacing(f) if at_receiver else _ack_spacing(f)
    cluster = densest_cluster(rates)
    peak = densest_cluster(cluster, PEAK_WIDTH)
    cluster = peak if len(peak) >= MIN_RATE_SAMPLES else cluster
    if len(cluster) < MIN_RATE_SAMPLES:
        return RateEstimate(intervals=len(rates))
    return RateEstimate(_significant(statistics.median(cluster)), "data spacing" if at_receiver else "ack spacing",
                        len(cluster), len(rates))


# ------------------------------------------------------------------ loss


@dataclass(frozen=True)
class LostData:
    """Data the sender's first transmissions lost on the way: the bytes (relative to its SYN, as tshark numbers
    them: the first byte of data is 1), in the frames that carried them."""

    first: int
    last: int
    frames: int


def _data_frames(segs: Sequence[Segment], sender: int) -> list[Segment]:
    """The sender's frames that carry its data (keepalives and zero-window probes left out)."""
    return [s for s in segs if s.side == sender and s.len > 0 and not s.keepalive and not s.zwp]


def syn_sent(segs: Sequence[Segment], sender: int) -> bool:
    """The sender's SYN is in the capture: its bytes are numbered from it."""
    return any(s.side == sender and s.flags & SYN for s in segs)


def lost_data(segs: Sequence[Segment], sender: int, capture_near: int) -> tuple[LostData, ...]:
    """What the sender's first transmissions lost on the way, in sequence order.

    At the receiver's side a lost frame never shows: a gap in the sequence space (a frame starting past the
    highest byte seen) is data lost, in as many frames as the largest segment seen divides it into. At the
    sender's side every frame shows: each segment it resent, once (a timeout may resend what a fast retransmit
    already repaired), leaving out what tshark calls spurious, as the first frame that carried it. A lost
    retransmission shows at neither side."""
    data = _data_frames(segs, sender)
    if not data:
        return ()
    if capture_near == sender:
        resent = sorted({s.seq for s in data if s.retrans and not s.spurious})
        carried: dict[int, Segment] = {}  # a resent segment's first byte -> the first frame that carried it
        for s in data:
            for seq in resent[bisect.bisect_left(resent, s.seq):bisect.bisect_left(resent, s.nxt)]:
                carried.setdefault(seq, s)
        frames = sorted({(s.seq, s.nxt - 1) for s in carried.values()})
        return tuple(LostData(first, last, 1) for first, last in frames)
    size = max(s.len for s in data)
    lost: list[LostData] = []
    top = 1 if syn_sent(segs, sender) else None  # else: from the first seen
    for s in data:
        if top is not None and s.seq > top:
            lost.append(LostData(top, s.seq - 1, math.ceil((s.seq - top) / size)))
        top = s.nxt if top is None else max(top, s.nxt)
    return tuple(lost)


def data_loss(segs: Sequence[Segment], sender: int, capture_near: int, lost: Sequence[LostData]) -> float | None:
    """The share of the sender's data frames lost between it and the receiver (``lost``: ``lost_data``), out
    of those it sent: at the receiver's side those seen plus those lost, at its own side all it sent."""
    frames = len(_data_frames(segs, sender))
    if not frames:
        return None
    missing = sum(g.frames for g in lost)
    return round(missing / (frames + (missing if capture_near != sender else 0)), 6)


# ------------------------------------------------------------------ the capture, read


def _rows(path: Path) -> list[Row]:
    """tshark's rows of the whole file; a file cut short is an error (a report must not rest on part of it)."""
    check_capture_file(path)
    read = read_capture(path)
    if read.warnings:  # read_capture warns only of a file that ends mid-frame or is damaged
        raise NetreproError(f"capture {path.name} is truncated: tshark read {len(read.rows)} complete frames, then "
                            "the file ends mid-frame or is damaged",
                            f"copy the capture again once its writer has stopped, or keep the complete frames: "
                            f"editcap {path} {path.stem}-fixed.pcapng")
    return read.rows


@dataclass(frozen=True)
class _Sides:
    """Ends 0/1 of the segments: which sent the data, which is next to the capture."""

    sender: int
    near: int


def _sides(facts: Facts, ends: Sequence[Endpoint]) -> _Sides:
    connection = facts.connection
    device = 0 if ends[0] == connection.device else 1
    by_name = {"device": device, "peer": 1 - device}
    return _Sides(by_name[connection.sender or "peer"], by_name[connection.capture_near or "device"])


def read_board_capture(path: str | os.PathLike, device: str | None = None, stream: int | None = None
                       ) -> CaptureReading:
    """Read a board's capture into the facts a report needs (see the module's docstring).

    ``device`` is the board's address (else: the end that advertised the smaller window);
    ``stream`` tshark's tcp.stream of the transfer (else: the only one carrying substantial data).
    Raises NetreproError (one line) for a file that cannot be read or is truncated, a capture
    without TCP or without data, several transfers and no stream, an unknown stream, and a device
    that is not an endpoint.
    """
    file = Path(path)
    rows = _rows(file)
    capture, _ = select_connection(rows, (), None, None, None)
    if capture.conn is None:
        raise NetreproError(f"{file.name} holds no TCP connection: {capture.empty_reason}",
                            "capture the board's TCP transfer (e.g. tcpdump -i IFACE -w FILE tcp)")
    chosen = choose_stream(capture.connections, file.name, stream, device)
    if not chosen.payload_bytes:
        raise NetreproError(f"stream {chosen.stream} of {file.name} carries no data ({_describe(chosen)})",
                            "capture the transfer itself, or give --stream N of one that carries data")
    _, conn_rows = select_connection(rows, (), None, chosen.stream, None)
    segs, ends = segments(conn_rows)
    device_ip, identified_by = identify_device(segs, ends, device, chosen.stream)
    # the first reading says who sent the data and where the capture was; the second has the link's rate
    first = measure(str(path), rows, device_ip=device_ip, conn=chosen.stream)
    sides = _sides(first, ends)
    rate = estimate_rate(segs, sides.sender, sides.near, conn_rows[0][COLUMN["protocols"]],
                         6 if ":" in ends[0].ip else 4)
    facts = measure(str(path), rows, device_ip=device_ip, conn=chosen.stream, link_rate_bps=rate.bps)
    return _reading(file, str(path), facts, segs, sides, rate, identified_by)


def _reading(file: Path, given: str, facts: Facts, segs: Sequence[Segment], sides: _Sides, rate: RateEstimate,
             identified_by: str) -> CaptureReading:
    connection = facts.connection
    assert connection.device is not None and connection.peer is not None
    if connection.device_identified_by.startswith("guessed"):  # the windows could not tell: the analysis guessed
        identified_by = f"{identified_by}; {connection.device_identified_by}"
    summary = CaptureAnalysis(facts, judge(facts)).to_summary()
    note = (f"link rate {rate.bps / 1e6:g} Mbit/s estimated from the capture ({rate.source}, {rate.samples} of "
            f"{rate.intervals} intervals)" if rate.bps else "link rate unknown: too few back-to-back intervals")
    summary = dataclasses.replace(summary, device_identified_by=identified_by, warnings=(*summary.warnings, note))
    scaling = {"negotiated": True, "not negotiated": False}.get(summary.window_scaling)
    windows = [w for w in (summary.device_window.max, summary.syn_window.device) if w is not None]
    lost = lost_data(segs, sides.sender, sides.near)
    return CaptureReading(
        file=given, name=file.name, sha256=file_sha256(file), frames=summary.frames,
        frames_used=(segs[0].num, segs[-1].num), stream=summary.conn or 0, device=connection.device.ip,
        device_identified_by=identified_by, peer=connection.peer.ip,
        direction="rx" if connection.sender == "peer" else "tx", captured_at=summary.capture_near or "device",
        mss=summary.device_mss, window_max=max(windows) if windows else None, window_scaling=scaling,
        window_scale=summary.window_scale.device, idle_rtt_ms=summary.initial_rtt_ms, loaded_rtt_ms=summary.rtt_ms,
        rate_bps=rate.bps, rate_from=rate.source, loss=data_loss(segs, sides.sender, sides.near, lost), lost_data=lost,
        syn_seen=syn_sent(segs, sides.sender),
        retransmissions=summary.retransmissions, throughput_mbps=summary.goodput_mbps, verdict=summary.verdict,
        verdict_reason=summary.verdict_reason, analysis=summary)
