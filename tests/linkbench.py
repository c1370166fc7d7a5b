"""The emulated link between two test sockets, for the link's tests (the link's --peer-sock mode).

The test plays both QEMU (a socket bound at the link's device_remote) and the peer (a socket
bound at peer_remote). Arrival times are the kernel's receive timestamps (SO_TIMESTAMPNS),
so the checks measure the link, not how quickly Python wakes up. The `root` fixture (tests/conftest.py)
gives the short directory its sockets need.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import time
from dataclasses import dataclass
from pathlib import Path

from harness.link import Direction, Link, LinkCounters, LinkSpec, read_pcap_ns
from harness.link.stamps import recv_stamped, stamp_arrivals

DEV_MAC = bytes.fromhex("020000000002")
PEER_MAC = bytes.fromhex("020000000001")
MS = 1_000_000  # ns
ANSWER = 100  # the peer answers the device's frame n with frame ANSWER + n


# ------------------------------------------------------------------ frames


def raw_frame(n: int, size: int = 1514, src: bytes = DEV_MAC, dst: bytes = PEER_MAC) -> bytes:
    """An Ethernet frame of `size` bytes (local experimental ethertype) carrying the number n."""
    body = struct.pack("!I", n)
    return (dst + src + b"\x88\xb5" + body).ljust(size, b"\xaa")


def frame_number(frame: bytes) -> int:
    return struct.unpack("!I", frame[14:18])[0]


def tcp_frame(
    src: str, dst: str, sport: int, dport: int, seq: int, ack: int, flags: int, payload: bytes = b""
) -> bytes:
    """An Ethernet + IPv4 + TCP frame (checksums left zero; the link does not check them)."""
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        20 + len(tcp),
        1,
        0x4000,
        64,
        6,
        0,
        socket.inet_aton(src),
        socket.inet_aton(dst),
    )
    eth_dst, eth_src = (DEV_MAC, PEER_MAC) if src == "10.77.0.1" else (PEER_MAC, DEV_MAC)
    return (eth_dst + eth_src + b"\x08\x00" + ip + tcp).ljust(60, b"\0")


SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01


# ------------------------------------------------------------------ a link between two test sockets


class Bench:
    """A running link with the test on both sides."""

    def __init__(self, spec: LinkSpec, root: Path, device_present: bool = True, extra_args=(),
                 connect_device: bool = True, capture_at: str = "device") -> None:
        self.root = root
        self.connect_device = connect_device
        self.dev = self._socket(root / "qemu.sock") if device_present else None
        self.peer = self._socket(root / "peer.sock")
        self.link = Link(
            spec,
            device_sock=root / "link-dev.sock",
            device_remote=root / "qemu.sock",
            run_dir=root / "run",
            peer_sock=root / "link-peer.sock",
            peer_remote=root / "peer.sock",
            extra_args=list(extra_args),
            capture_at=capture_at,
        )

    @staticmethod
    def _socket(path: Path) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(str(path))
        stamp_arrivals(sock)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        return sock

    def __enter__(self) -> Bench:
        self.link.start()
        # connected back to the link: its sends are not limited by net.unix.max_dgram_qlen
        if self.dev and self.connect_device:
            self.dev.connect(str(self.link.device_sock))
        self.peer.connect(str(self.link.peer_sock))
        return self

    def __exit__(self, *exc) -> None:
        self.link.__exit__(*exc)
        for sock in (self.dev, self.peer):
            if sock:
                sock.close()

    def frozen(self):
        """Hold the link (SIGSTOP) while a burst is queued in its socket, so that the link takes
        the whole burst in at once, however slowly this process sends it."""
        return frozen(self.link.pid)

    def from_device(self, frame: bytes) -> int:
        """Send as the device; returns the wall-clock send time in ns."""
        t = time.time_ns()
        self.dev.send(frame)
        return t

    def from_peer(self, frame: bytes) -> int:
        t = time.time_ns()
        self.peer.send(frame)
        return t

    @staticmethod
    def receive(sock: socket.socket, count: int, timeout: float = 3.0) -> list[tuple[int, bytes]]:
        """Up to count frames as (kernel receive time in ns, frame)."""
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            sock.settimeout(left)
            try:
                data, stamp = recv_stamped(sock)
            except TimeoutError:
                break
            out.append((time.time_ns() if stamp is None else stamp, data))
        return out

    def at_peer(self, count: int, timeout: float = 3.0) -> list[tuple[int, bytes]]:
        return self.receive(self.peer, count, timeout)

    def at_device(self, count: int, timeout: float = 3.0) -> list[tuple[int, bytes]]:
        return self.receive(self.dev, count, timeout)

    def late_ns(self, direction: str) -> int:
        """The most a frame of that direction left the link after its schedule, as the link itself measured it
        (its own clock against each frame's due time): what a busy host added to any stamp the test reads."""
        return round(getattr(self.link.counters(), direction).late_us_max * 1000)

    def passages(self) -> dict[tuple[str, int], list[int]]:
        """(direction, frame number) -> [ns it came into the link, ns it left], from the link's own capture at both
        sides (a Bench made with capture_at="both", read after the link stopped): the kernel's stamp of its arrival
        at the link and the link's clock when it handed it over, in the board's time, so that neither this
        process's clock nor how soon it sent or read counts. A frame the link dropped has its arrival only."""
        out: dict[tuple[str, int], list[int]] = {}
        for stamp, frame in read_pcap_ns(self.link.pcap_path):
            direction = "to_peer" if frame[6:12] == DEV_MAC else "to_device"
            out.setdefault((direction, frame_number(frame)), []).append(stamp)
        return out

    def ping_pong(self, count: int, size: int = 200) -> list[tuple[int, int]]:
        """count frames from the device, each answered by the peer as soon as it arrived: for each, the kernel's
        receive stamps (wall ns) of the frame at the peer and of its answer at the device; exchanges() reads them
        against the link's capture once the link has stopped."""
        stamps = []
        for i in range(count):
            self.from_device(raw_frame(i, size))
            (at_peer, _), *_ = self.at_peer(1)
            self.from_peer(raw_frame(ANSWER + i, size, PEER_MAC, DEV_MAC))
            (at_device, _), *_ = self.at_device(1)
            stamps.append((at_peer, at_device))
        return stamps

    def exchanges(self, stamps: list[tuple[int, int]]) -> list[Exchange]:
        """ping_pong's exchanges timed by the link's capture at both sides (a Bench made with capture_at="both")
        and the kernel's receive stamps, never this process's clock."""
        passages = self.passages()
        out = []
        for i, (at_peer, at_device) in enumerate(stamps):
            into_peer, out_peer = passages["to_peer", i]
            into_device, out_device = passages["to_device", ANSWER + i]
            out.append(Exchange(board_rtt_ns=(out_peer - into_peer) + (out_device - into_device),
                                stretch=(at_device - at_peer) / (out_device - out_peer)))
        return out

    def wait_arrivals(self, direction: str, frames_in: int, timeout: float = 5.0) -> LinkCounters:
        """Wait until the link has taken in frames_in frames in a direction."""
        deadline = time.monotonic() + timeout
        while True:
            counters = self.link.counters()
            if getattr(counters, direction).frames_in >= frames_in or time.monotonic() > deadline:
                return counters
            time.sleep(0.01)



@dataclass(frozen=True)
class Exchange:
    """A frame from the device answered by the peer. board_rtt_ns: the link's delay both ways, each from the frame's
    arrival to its handover in the link's own capture (board ns), the peer's time to answer left out. stretch: the
    wall ns per board ns over the span from the frame's handover to the peer to the answer's to the device, the
    kernel's receive stamps at both sockets over the link's stamps of the same two handovers."""

    board_rtt_ns: int
    stretch: float

    @property
    def wall_rtt_ns(self) -> float:
        """The round trip as the wall clock took it: the board's, stretched as the link stretched that span."""
        return self.board_rtt_ns * self.stretch


@contextlib.contextmanager
def frozen(pid: int):
    """Hold process pid (SIGSTOP) until the block ends, once it has stopped."""
    os.kill(pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 2
        while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
            assert time.monotonic() < deadline, "the process did not stop"
            time.sleep(0.001)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def one_way(**kwargs) -> Direction:
    return Direction(**kwargs)
