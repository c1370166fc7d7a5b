"""An idle ping through the link: what it reads, from the link's arithmetic and through the link alone.

A report's RTT is what ping measured over its link, idle: the two one-way delays, and each way's
passage of one small frame (on the shared medium a turn of the air: channel access, preamble,
block ack, and its transfer across the WiFi chip's host bus; on a wire the frame's time at the
rate). `idle_ping_s` is the arithmetic; `pings`
measures it through the link binary with this process at both ends (unix datagram sockets, as
harness.link.saturate does): the peer's echo request goes through, the device's end answers at
once. Each ping is timed by the link's own capture at both sides: from the request's arrival at the
peer's side to the reply's hand-over there, less the device's turnaround between the request's
hand-over at the device's side and the reply's arrival there (which a board's own turnaround
replaces in a run). What is left is the link's two passages, not this process's wake-ups. The
link's own counters, read after each ping, say how late it handed that ping's two frames over
against its schedule: a host busy elsewhere (another board's QEMU, a hypervisor's steal) wakes it
late, and a ping that waited on such a wake-up is not on time (`Ping.on_time`).
"""

from __future__ import annotations

import shutil
import socket
import struct
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import NetreproError
from harness.core.ethernet import wire_bytes
from harness.link.air import bus_s, turn_s
from harness.link.capture import read_pcap_ns
from harness.link.process import Link
from harness.link.spec import LinkSpec

PING_FRAME = 14 + 20 + 8 + 56  # ping's default: 56 bytes of data in an ICMP echo, in IPv4, in Ethernet
_WAIT_S = 2.0                  # one ping's longest wait on the wall clock
# the link's lateness a ping may carry and still be on time: a quarter of the 2 % a calibration allows on a
# 2 ms RTT, so that an on-time ping reads the schedule, not the host
ON_TIME_S = 10e-6
BATCHES = 5  # batches of pings `pings_on_time` may take to find one the host did not make late


@dataclass(frozen=True)
class Ping:
    """One idle ping through the link alone: what it read, and how late the link handed its two frames over
    against its own schedule (the host's share of the reading)."""

    read_s: float
    late_s: float

    @property
    def on_time(self) -> bool:
        return self.late_s <= ON_TIME_S


def passage_s(spec: LinkSpec, way: str, size: int = PING_FRAME) -> float:
    """One frame's passage through one direction of an idle link, its delay aside: a turn of the air on the
    shared medium and its transfer across the WiFi chip's host bus (when the preset has one), the frame's time
    at the direction's rate on a wire (none without a rate)."""
    if spec.medium == "shared":
        return turn_s(spec, [size]) + bus_s(spec, size)
    rate = getattr(spec, way).rate_bps
    return wire_bytes(size) * 8 / rate if rate else 0.0


def idle_ping_s(spec: LinkSpec, size: int = PING_FRAME) -> float:
    """What an idle ping through the link reads, the board's turnaround aside: both delays and both passages."""
    return spec.rtt_s + passage_s(spec, "to_device", size) + passage_s(spec, "to_peer", size)


def base_delay_for(spec: LinkSpec, ping_s: float, size: int = PING_FRAME) -> float:
    """The RTT the link must add (its two delays) so that an idle ping through it reads `ping_s`."""
    passages = passage_s(spec, "to_device", size) + passage_s(spec, "to_peer", size)
    if passages >= ping_s:
        raise NetreproError(f"an idle ping through this link reads at least {passages * 1e3:.3f} ms (the frames' "
                            f"passages alone), more than the {ping_s * 1e3:g} ms asked",
                            "check the link's rate or PHY rate, or the RTT given")
    return ping_s - passages


def _echo(seq: int, reply: bool) -> bytes:
    """An ICMP echo request (peer -> device) or reply (device -> peer) of PING_FRAME bytes."""
    macs = bytes.fromhex("020000000001" "020000000002") if reply else bytes.fromhex("020000000002" "020000000001")
    addrs = bytes([10, 77, 0, 2, 10, 77, 0, 1]) if reply else bytes([10, 77, 0, 1, 10, 77, 0, 2])
    ip = struct.pack("!BBHHHBB", 0x45, 0, PING_FRAME - 14, seq, 0x4000, 64, 1) + b"\0\0" + addrs
    icmp = struct.pack("!BBHHH", 0 if reply else 8, 0, 0, 0x6e72, seq) + bytes(56)
    return macs + b"\x08\x00" + ip + icmp


def _socket(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(_WAIT_S)
    return sock


def pings(spec: LinkSpec, count: int = 20, gap_s: float = 0.02) -> list[Ping]:
    """`count` idle pings through the link alone (wall time: the link runs at D = 1), each as the link's capture
    at both its sides timed it, the device's end's turnaround taken off, with the link's lateness on it."""
    if count < 1:
        raise NetreproError("a ping needs a count of at least 1", "give --pings 1 or more")
    root = Path(tempfile.mkdtemp(prefix="nrp-", dir="/tmp"))  # unix socket paths are short
    dev, peer = _socket(root / "dev.sock"), _socket(root / "peer.sock")
    link = Link(spec, device_sock=root / "link-dev.sock", device_remote=root / "dev.sock", run_dir=root / "run",
                peer_sock=root / "link-peer.sock", peer_remote=root / "peer.sock", capture_at="both")
    lateness = [0.0]  # the link's lateness summed over every frame it handed over, after each ping
    try:
        with link:
            peer.connect(str(link.peer_sock))
            dev.connect(str(link.device_sock))
            for seq in range(count):
                peer.send(_echo(seq, reply=False))
                dev.recv(2048)
                dev.send(_echo(seq, reply=True))
                peer.recv(2048)
                lateness.append(link.counters().late_s_total)
                time.sleep(gap_s)
        passages = _passages(link.pcap_path)
    except TimeoutError:
        raise NetreproError(f"a ping through the link got no answer within {_WAIT_S:g} s",
                            "check the link spec (a delay of seconds, or a loss?)") from None
    finally:
        dev.close()
        peer.close()
        shutil.rmtree(root, ignore_errors=True)
    return [Ping(passages[seq], lateness[seq + 1] - lateness[seq]) for seq in range(count)]


def pings_on_time(spec: LinkSpec, count: int, warn: Callable[[str], None] | None = None) -> list[Ping]:
    """A batch of `count` pings with at least one the link handed over on time, if one of BATCHES batches has it
    (a host busy elsewhere can make every ping of a batch late), else the last batch; `warn` hears each retry."""
    measured = pings(spec, count)
    for _ in range(BATCHES - 1):
        if any(p.on_time for p in measured):
            break
        if warn is not None:
            warn(f"the host woke the link late for all {count} pings; pinging again")
        measured = pings(spec, count)
    return measured


def _passages(capture: Path) -> dict[int, float]:
    """ICMP sequence -> the seconds its echo spent in the link, both ways, from a capture at both sides: each
    frame shows twice, first where it came in, then where it left (a request at the peer's side, then at the
    device's; a reply the other way round)."""
    seen: dict[tuple[int, int], list[int]] = {}
    for stamp, frame in read_pcap_ns(capture):
        if len(frame) >= PING_FRAME and frame[12:14] == b"\x08\x00" and frame[23] == 1:
            seen.setdefault((struct.unpack("!H", frame[40:42])[0], frame[34]), []).append(stamp)
    found = {}
    for (seq, kind), stamps in seen.items():
        if kind == 8 and (seq, 0) in seen:
            (request_in, request_out), (reply_in, reply_out) = sorted(stamps), sorted(seen[(seq, 0)])
            found[seq] = ((request_out - request_in) + (reply_out - reply_in)) / 1e9
    return found
