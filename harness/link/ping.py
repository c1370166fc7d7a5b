"""An idle ping through the link: what it reads, from the link's arithmetic and through the link alone.

A report's RTT is what ping measured over its link, idle: the two one-way delays, and each way's
passage of one small frame (on the shared medium a turn of the air: channel access, preamble,
block ack, and its transfer across the WiFi chip's host bus; on a wire the frame's time at the
rate). `idle_ping_s` is the arithmetic; `pings`
measures it through the link binary with this process at both ends (unix datagram sockets, as
harness.link.saturate does): the peer's echo request goes through, the device's end answers at
once. Each ping is timed as the link saw it at the peer's side (its capture there: the request's
arrival, the reply's hand-over), less the time the device's end took to answer (from the kernel's
stamp of the request's arrival at its socket to its reply), which a board's own turnaround
replaces in a run: what is left is the link, not this process's wake-ups.
"""

from __future__ import annotations

import shutil
import socket
import statistics
import struct
import tempfile
import time
from pathlib import Path

from harness.core.errors import NetreproError
from harness.core.ethernet import wire_bytes
from harness.link.air import bus_s, turn_s
from harness.link.capture import read_pcap_ns
from harness.link.process import Link
from harness.link.spec import LinkSpec
from harness.link.stamps import recv_stamped, stamp_arrivals

PING_FRAME = 14 + 20 + 8 + 56  # ping's default: 56 bytes of data in an ICMP echo, in IPv4, in Ethernet
_WAIT_S = 2.0                  # one ping's longest wait on the wall clock


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
    return stamp_arrivals(sock)


def pings(spec: LinkSpec, count: int = 20, gap_s: float = 0.02) -> list[float]:
    """`count` idle pings through the link alone (wall time: the link runs at D = 1), in seconds each: the
    round trip the link's capture at the peer's side shows, less the device's end's own time to answer."""
    if count < 1:
        raise NetreproError("a ping needs a count of at least 1", "give --pings 1 or more")
    root = Path(tempfile.mkdtemp(prefix="nrp-", dir="/tmp"))  # unix socket paths are short
    dev, peer = _socket(root / "dev.sock"), _socket(root / "peer.sock")
    link = Link(spec, device_sock=root / "link-dev.sock", device_remote=root / "dev.sock", run_dir=root / "run",
                peer_sock=root / "link-peer.sock", peer_remote=root / "peer.sock", capture_at="peer")
    answering: list[int] = []
    try:
        with link:
            peer.connect(str(link.peer_sock))
            dev.connect(str(link.device_sock))
            for seq in range(count):
                answering.append(_one_ping(dev, peer, seq))
                time.sleep(gap_s)
        stamps = _stamps(link.pcap_path)
    except TimeoutError:
        raise NetreproError(f"a ping through the link got no answer within {_WAIT_S:g} s",
                            "check the link spec (a delay of seconds, or a loss?)") from None
    finally:
        dev.close()
        peer.close()
        shutil.rmtree(root, ignore_errors=True)
    return [(stamps[(seq, 0)] - stamps[(seq, 8)] - answering[seq]) / 1e9 for seq in range(count)]


def _one_ping(dev: socket.socket, peer: socket.socket, seq: int) -> int:
    """One echo through the link and back; the ns the device's end took, from the kernel's stamp of the
    request's arrival at its socket to its reply (both on the realtime clock the stamp is on). The reply's
    time is read before it is sent, so that this process's pause after sending it is not taken off the ping."""
    peer.send(_echo(seq, reply=False))
    _data, arrived = recv_stamped(dev, 2048)
    answered = time.time_ns()  # before the reply leaves: a pause of this process here would count as the link's
    dev.send(_echo(seq, reply=True))
    peer.recv(2048)
    return answered - arrived


def _stamps(capture: Path) -> dict[tuple[int, int], int]:
    """(ICMP sequence, type) -> the capture's ns stamp of each echo request (8) and reply (0)."""
    found = {}
    for stamp, frame in read_pcap_ns(capture):
        if len(frame) >= PING_FRAME and frame[12:14] == b"\x08\x00" and frame[23] == 1:
            found[(struct.unpack("!H", frame[40:42])[0], frame[34])] = stamp
    return found


def median_ping_s(spec: LinkSpec, count: int = 20) -> float:
    """The median of `count` idle pings through the link alone."""
    return statistics.median(pings(spec, count))
