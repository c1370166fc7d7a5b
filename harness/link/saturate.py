"""UDP saturation through the link alone: what a link spec carries of a UDP flood, without a board.

This process plays both ends (unix datagram sockets, as the link's tests do): the peer side sends
iperf2-sized UDP datagrams (1470 bytes of payload, one 1512-byte frame each) toward the device at
an offered rate above what the link can carry, the device side receives them, and the goodput is
the UDP payload that arrived over the time it took, after a settling time in which the link's queue
fills. It is the figure a report's "UDP on the same air" measures, so a medium's unknown can be
calibrated against it (harness.studies.medium).

On the shared medium the link also counts the air time its turns took (access to block ack), in
its own schedule: the payload it delivered over that time is the same goodput, untouched by how
late this busy host woke the link or the receiver (the wall-clock figure moves by ~2 % on a loaded
host), and is the one a calibration uses; the receiver's figure stays beside it as a check.

With the WiFi chip's host bus (bus_rate > 0) the frames cross two stages in series, the air and then the
bus, and the end-to-end goodput is the payload delivered over the span the frames took through both.
Under the flood the slower stage never idles (its queue stays full), so its busy time is that span; the
faster one idles part of it, so its busy time is shorter. The link counts both in its own schedule
(`airtime_s`, `bus_s`, the bus's finished transfers only, so that it covers the frames `frames_out`
counts), and the goodput is the payload delivered over the larger of the two: the air's figure as before
when the air is the slower stage, the bus's when the bus is. The airtime alone would not do with a slower
bus: the air, held full by the flood, also carries the frames the bus's queue then drops, and its last
turns run on after the bus has stopped taking frames, so that the air's busy time is not the delivered
frames' span; the receiver's figure is again the check beside it.
"""

from __future__ import annotations

import shutil
import socket
import struct
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import NetreproError
from harness.link.counters import DirectionCounters
from harness.link.process import Link
from harness.link.spec import LinkSpec
from harness.link.stamps import recv_stamped, stamp_arrivals

UDP_PAYLOAD = 1470                    # iperf2's UDP length (harness.rig.workload.UDP_LEN)
HEADERS = 14 + 20 + 8                 # Ethernet, IPv4, UDP
FRAME = UDP_PAYLOAD + HEADERS
SETTLE_S = 0.3                        # the flood's first stretch, not measured: the link's queue fills
_BURST = 64                           # most frames sent at one pass of the pacing loop
_SNAPLEN = 64                         # the capture keeps headers only: a flood's payload is nothing to see


@dataclass(frozen=True)
class Saturation:
    """What one flood through the link delivered."""

    goodput_bps: float                # UDP payload bit/s: over the air's (or a slower bus's) busy time on the
                                      # shared medium, else wall_bps
    wall_bps: float                   # UDP payload bit/s at the receiving end on the wall clock, settled
    offered_bps: float                # what was sent, in payload bits per second
    sent: int                         # datagrams sent
    received: int                     # datagrams that came through
    seconds: float                    # the measured stretch
    to_device: DirectionCounters | None = None  # the link's counters of the flood's direction (airtime_s, bus_s)


def _frame(seq: int) -> bytes:
    """A 1512-byte IPv4/UDP frame peer -> device; the payload starts with iperf's sequence number."""
    eth = bytes.fromhex("020000000002" "020000000001" "0800")
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + UDP_PAYLOAD, 0, 0x4000, 64, 17, 0,
                     bytes([10, 77, 0, 1]), bytes([10, 77, 0, 2]))
    udp = struct.pack("!HHHH", 5003, 5003, 8 + UDP_PAYLOAD, 0)
    return eth + ip + udp + struct.pack("!i", seq) + bytes(UDP_PAYLOAD - 4)


def _socket(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    return sock


class _Receiver(threading.Thread):
    """Receives at the device's end until stopped: (monotonic time, payload bytes) per datagram. The time is the
    kernel's stamp of the link's send (SO_TIMESTAMPNS), not this thread's wake-up, which a busy host delays."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(daemon=True)
        self.sock, self.got, self.stopping = sock, [], threading.Event()
        stamp_arrivals(sock)
        sock.settimeout(0.1)
        self.realtime_ahead_ns = time.time_ns() - time.monotonic_ns()  # the kernel stamps in CLOCK_REALTIME

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                data, stamp = recv_stamped(self.sock)
            except TimeoutError:
                continue
            at = time.monotonic() if stamp is None else (stamp - self.realtime_ahead_ns) / 1e9
            self.got.append((at, len(data) - HEADERS))


def _flood(peer: socket.socket, offered_bps: float, seconds: float) -> int:
    """Send datagrams at the offered payload rate for `seconds`; how many were sent."""
    per_s = offered_bps / (UDP_PAYLOAD * 8)
    start, sent = time.monotonic(), 0
    while (now := time.monotonic()) - start < seconds:
        due = min(int((now - start) * per_s) - sent, _BURST)
        for _ in range(max(due, 0)):
            peer.send(_frame(sent))
            sent += 1
        time.sleep(0.0005)
    return sent


def goodput(got: list[tuple[float, int]], since: float) -> tuple[float, int, float]:
    """Payload bit/s over what arrived after `since`: the bytes after the first datagram over the time
    from it to the last (bits/s, datagrams, seconds); zeros when fewer than two arrived."""
    window = [(t, n) for t, n in got if t >= since]
    if len(window) < 2 or window[-1][0] <= window[0][0]:
        return 0.0, len(window), 0.0
    seconds = window[-1][0] - window[0][0]
    return sum(n for _t, n in window[1:]) * 8 / seconds, len(window), seconds


def udp_saturation(spec: LinkSpec, seconds: float = 2.0, offered_bps: float | None = None) -> Saturation:
    """Flood the link toward the device for SETTLE_S + seconds and measure what it carries (wall time:
    the link runs on the wall clock here, D = 1)."""
    if seconds <= 0:
        raise NetreproError("the saturation run needs a positive length", "give seconds > 0")
    offered = offered_bps or max(100e6, 1.5 * spec.phy_rate_bps, 1.5 * spec.to_device.rate_bps)
    root = Path(tempfile.mkdtemp(prefix="nrs-", dir="/tmp"))  # unix socket paths are short
    dev, peer = _socket(root / "dev.sock"), _socket(root / "peer.sock")
    link = Link(spec.override(snaplen=_SNAPLEN), device_sock=root / "link-dev.sock", device_remote=root / "dev.sock",
                run_dir=root / "run", peer_sock=root / "link-peer.sock", peer_remote=root / "peer.sock")
    receiver = _Receiver(dev)
    try:
        with link:
            peer.connect(str(link.peer_sock))
            receiver.start()
            start = time.monotonic()
            sent = _flood(peer, offered, SETTLE_S + seconds)
            time.sleep(0.05)
            receiver.stopping.set()
            receiver.join(timeout=2)
    finally:
        dev.close()
        peer.close()
        shutil.rmtree(root, ignore_errors=True)
    bps, received, measured_s = goodput(receiver.got, start + SETTLE_S)
    if received < 2:
        raise NetreproError("no UDP datagram came through the link", "check the link spec (a rate of 0 on the air?)")
    air = link.counters_at_stop.to_device if link.counters_at_stop is not None else None
    busy = max(air.airtime_s, air.bus_s) if air is not None else 0.0  # the slower stage's: the frames' span
    air_bps = air.frames_out * UDP_PAYLOAD * 8 / busy if air is not None and busy > 0 else None
    return Saturation(air_bps or bps, bps, offered, sent, len(receiver.got), measured_s, air)
