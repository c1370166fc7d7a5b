"""Structure-aware malformed frames toward the board, built with scapy.

Each frame is a well-formed stack of layers with one part made wrong, so it gets past the checks in front of
the code it aims at (a TCP option with a bad length still has a right checksum and reaches the PCB):

ether        runts (cut inside the IP header), unknown and VLAN ethertypes, odd destination MACs,
             frames padded past their IP length
arp          bad hardware/protocol lengths, unknown operations, requests and replies from other hosts
ipv4         header lengths below 5 or past the packet, total lengths that lie, options of bad lengths,
             fragments (first, middle, overlapping, tiny, past 64 KiB), TTL 0, bad checksums, other protocols
icmp         unknown types and codes, echoes of odd sizes, truncated headers, bad checksums
udp          lengths shorter or longer than the datagram, zero checksums, closed ports
tcp-header   data offsets below 5 or past the segment, reserved bits, bad checksums
tcp-options  MSS, window scale, SACK-permitted, SACK and timestamps with wrong length bytes, unknown
             kinds, options past the header, no end-of-list
tcp-flags    every flag combination (SYN+FIN, SYN+RST, none, all, URG with urgent pointers past the data)
tcp-seq      sequence and ACK numbers at the window's edges and far outside, zero-window probes, data
             beyond the advertised window

A TCP frame aims at the echo service's listening port, at the connection the fuzzer holds open to it (its
sequence numbers learned from the tap, `Connection`), or at a closed port. Frames always come from the peer's
own MAC and address, so a board that answers them answers the peer (whose kernel resets what it does not
know) and the liveness probes are not cut off by a poisoned ARP entry.

The same seed draws the same choices: `FrameSource(seed)` gives the same frames for the same targets.
"""

from __future__ import annotations

import logging
import random
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

CLOSED_PORT = 4242  # a port no board service listens on

# family -> weight: TCP, where a board has the most state, gets most of the frames
FAMILIES = {"ether": 1, "arp": 1, "ipv4": 2, "icmp": 1, "udp": 1, "tcp-header": 2, "tcp-options": 3,
            "tcp-flags": 2, "tcp-seq": 2}
_TCP_OPTIONS = {2: 4, 3: 3, 4: 2, 5: 10, 8: 10}  # kind -> its right length (SACK: one block)


@dataclass(frozen=True)
class Connection:
    """The connection the fuzzer holds open to the board: what a segment on it must carry to be accepted."""

    sport: int
    peer_next: int   # the peer's next sequence number (what the board ACKs)
    board_next: int  # the board's next sequence number

    def as_dict(self) -> dict[str, int]:
        return {"sport": self.sport, "peer_next": self.peer_next, "board_next": self.board_next}


@dataclass(frozen=True)
class Target:
    """Where frames go: the run's own peer and board, and the board's listening port."""

    peer_mac: str
    board_mac: str
    peer_ip: str
    board_ip: str
    port: int                      # the board's echo service
    connection: Connection | None  # the established connection, when one is open


@dataclass(frozen=True)
class Frame:
    data: bytes
    family: str
    what: str        # the one part made wrong, in words
    at: float = 0.0  # when it was sent, in seconds of the board's time from the first frame kept with it

    def as_dict(self) -> dict[str, Any]:
        return {"family": self.family, "what": self.what, "bytes": len(self.data), "at": round(self.at, 4)}


def scapy() -> Any:
    """scapy's layers, imported on first use only (fuzz and replay) and without its start-up chatter."""
    logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
    logging.getLogger("scapy.loading").setLevel(logging.ERROR)
    import scapy.all as sc  # slow and noisy: only fuzz and replay import it
    return sc


class FrameSource:
    """An endless seeded stream of malformed frames."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.sc = scapy()
        self.makers = {"ether": self._ether, "arp": self._arp, "ipv4": self._ipv4, "icmp": self._icmp,
                       "udp": self._udp, "tcp-header": self._tcp_header, "tcp-options": self._tcp_options,
                       "tcp-flags": self._tcp_flags, "tcp-seq": self._tcp_seq}

    def next(self, target: Target) -> Frame:
        family = self.rng.choices(list(FAMILIES), weights=list(FAMILIES.values()))[0]
        data, what = self.makers[family](target)
        return Frame(bytes(data), family, what)

    # --- helpers -------------------------------------------------------------------------------
    def _eth(self, t: Target, kind: int = 0x0800) -> Any:
        return self.sc.Ether(src=t.peer_mac, dst=t.board_mac, type=kind)

    def _ip(self, t: Target, **fields: Any) -> Any:
        fields.setdefault("id", self.rng.randrange(65536))
        return self.sc.IP(src=t.peer_ip, dst=t.board_ip, **fields)

    def _bytes(self, n: int) -> bytes:
        return bytes(self.rng.randrange(256) for _ in range(n))

    def _pick(self, *choices: Any) -> Any:
        return self.rng.choice(choices)

    # --- link and network layers -----------------------------------------------------------------
    def _ether(self, t: Target) -> tuple[bytes, str]:
        case = self._pick("runt", "ethertype", "vlan", "dst", "padded")
        if case == "runt":
            # a tap takes nothing shorter than the Ethernet header: the runt is cut inside the IP header
            n = self.rng.randrange(0, 20)
            return bytes(self._eth(t) / self._ip(t) / self.sc.ICMP())[:14 + n], f"runt cut {n} bytes into IP"
        if case == "ethertype":
            kind = self._pick(0x0000, 0x05DC, 0x86DD, 0x8100, 0x88CC, 0xFFFF, self.rng.randrange(65536))
            return bytes(self._eth(t, kind)) + self._bytes(self.rng.randrange(0, 64)), f"ethertype {kind:#06x}"
        if case == "vlan":
            inner = self._ip(t) / self.sc.ICMP(id=1, seq=1)
            return bytes(self.sc.Ether(src=t.peer_mac, dst=t.board_mac) / self.sc.Dot1Q(vlan=self.rng.randrange(4096))
                         / inner), "VLAN-tagged echo request"
        if case == "dst":
            dst = self._pick("ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01", "33:33:00:00:00:01", "00:00:00:00:00:00")
            frame = self.sc.Ether(src=t.peer_mac, dst=dst) / self._ip(t) / self.sc.ICMP(id=2, seq=2)
            return bytes(frame), f"echo request to {dst}"
        pad = self._bytes(self.rng.randrange(1, 200))
        return bytes(self._eth(t) / self._ip(t) / self.sc.ICMP(id=3, seq=3)) + pad, f"{len(pad)} bytes past IP's length"

    def _arp(self, t: Target) -> tuple[bytes, str]:
        other = f"10.77.0.{self.rng.randrange(3, 255)}"
        case = self._pick("hwlen", "plen", "op", "request", "reply", "truncated")
        arp = self.sc.ARP(hwsrc=t.peer_mac, psrc=other, pdst=t.board_ip, op=1)
        what = f"ARP request from {other}"
        if case == "hwlen":
            arp.hwlen = self._pick(0, 1, 5, 7, 255)
            what = f"ARP hardware length {arp.hwlen}"
        elif case == "plen":
            arp.plen = self._pick(0, 1, 3, 5, 16, 255)
            what = f"ARP protocol length {arp.plen}"
        elif case == "op":
            arp.op = self._pick(0, 3, 4, 8, 9, 0xFFFF)
            what = f"ARP operation {arp.op}"
        elif case == "reply":
            arp.op, arp.hwdst, arp.pdst = 2, t.board_mac, t.board_ip
            what = f"unasked ARP reply from {other}"
        frame = bytes(self.sc.Ether(src=t.peer_mac, dst=self._pick(t.board_mac, "ff:ff:ff:ff:ff:ff"),
                                    type=0x0806) / arp)
        if case == "truncated":
            cut = self.rng.randrange(14, 14 + 28)
            return frame[:cut], f"ARP cut to {cut - 14} bytes"
        return frame, what

    def _ipv4(self, t: Target) -> tuple[bytes, str]:
        case = self._pick("ihl", "total", "options", "fragment", "ttl", "checksum", "proto", "version")
        l4 = bytes(self.sc.ICMP(id=4, seq=4) / self._bytes(self.rng.randrange(0, 64)))
        if case == "fragment":
            return self._fragment(t, l4)
        if case == "options":
            return self._ip_options(t, l4)
        header = bytearray(bytes(self._ip(t, proto=1) / l4)[:20])
        payload = l4
        if case == "ihl":
            header[0] = 0x40 | self._pick(0, 1, 4, 6, 15)
            what = f"IP header length {header[0] & 15} words with none of options"
        elif case == "total":
            total = self._pick(0, 19, 20, 21, 20 + len(l4) - 1, 20 + len(l4) + 1, 1500, 65535)
            header[2:4] = struct.pack("!H", total)
            what = f"IP total length {total} for {20 + len(l4)} bytes"
        elif case == "ttl":
            header[8] = 0
            what = "TTL 0"
        elif case == "proto":
            header[9] = self._pick(0, 2, 4, 41, 47, 50, 132, 255)
            what = f"IP protocol {header[9]}"
        elif case == "version":
            header[0] = (self._pick(0, 4 + 2, 15) << 4) | 5
            what = f"IP version {header[0] >> 4}"
        else:
            what = "bad IP header checksum"
        header[10:12] = b"\0\0"
        checksum = self.sc.checksum(bytes(header[:max(20, (header[0] & 15) * 4)]))
        header[10:12] = struct.pack("!H", checksum if case != "checksum" else checksum ^ 0x5A5A)
        return bytes(self._eth(t)) + bytes(header) + payload, what

    def _ip_options(self, t: Target, l4: bytes) -> tuple[bytes, str]:
        kind = self._pick(0x07, 0x83, 0x89, 0x44, 0x94, 0x01, self.rng.randrange(256))  # RR LSRR SSRR TS RA NOP
        length = self._pick(0, 1, 2, 3, 39, 40, 255, self.rng.randrange(256))
        options = bytes([kind, length]) + self._bytes(self.rng.randrange(0, 38))
        options += b"\0" * (-len(options) % 4)
        options = options[:40]
        ihl = 5 + len(options) // 4
        header = bytearray(bytes(self._ip(t, proto=1, ihl=ihl, len=ihl * 4 + len(l4)) / l4)[:20]) + options
        header[10:12] = b"\0\0"
        header[10:12] = struct.pack("!H", self.sc.checksum(bytes(header)))
        return bytes(self._eth(t)) + bytes(header) + l4, f"IP option {kind:#04x} length {length}"

    def _fragment(self, t: Target, l4: bytes) -> tuple[bytes, str]:
        case = self._pick("first", "middle", "overlap", "tiny", "past-64k", "zero")
        flags, offset = {"first": (1, 0), "middle": (1, self.rng.randrange(1, 200)),
                         "overlap": (0, self.rng.randrange(0, 3)), "tiny": (1, 0),
                         "past-64k": (0, 8189), "zero": (1, 0)}[case]
        data = {"tiny": l4[:1], "zero": b""}.get(case, l4 if case != "past-64k" else l4 + self._bytes(64))
        ip = self._ip(t, proto=self._pick(1, 6, 17), flags=flags, frag=offset, id=0x4E52)
        return bytes(self._eth(t) / ip / self.sc.Raw(data)), f"fragment {case} (offset {offset * 8})"

    def _icmp(self, t: Target) -> tuple[bytes, str]:
        case = self._pick("type", "size", "truncated", "checksum")
        if case == "type":
            kind, code = self._pick(3, 4, 5, 11, 12, 13, 17, 255, self.rng.randrange(256)), self.rng.randrange(256)
            icmp = self.sc.ICMP(type=kind, code=code) / self._bytes(self.rng.randrange(0, 48))
            return bytes(self._eth(t) / self._ip(t) / icmp), f"ICMP type {kind} code {code}"
        if case == "size":
            size = self._pick(0, 1, 1472, 1473, self.rng.randrange(0, 1480))
            frame = self._eth(t) / self._ip(t) / self.sc.ICMP(id=5, seq=5) / (b"x" * size)
            return bytes(frame), f"echo of {size} bytes"
        if case == "truncated":
            cut = self.rng.randrange(0, 8)
            ip = self._ip(t, proto=1, len=20 + cut)
            return bytes(self._eth(t) / ip / self.sc.Raw(bytes(self.sc.ICMP(id=6, seq=6))[:cut])), f"ICMP cut to {cut}"
        icmp = self.sc.ICMP(id=7, seq=7, chksum=self.rng.randrange(65536)) / b"netrepro"
        return bytes(self._eth(t) / self._ip(t) / icmp), "bad ICMP checksum"

    def _udp(self, t: Target) -> tuple[bytes, str]:
        dport = self._pick(7, 9, 53, 5001, CLOSED_PORT, self.rng.randrange(65536))
        data = self._bytes(self.rng.randrange(0, 64))
        case = self._pick("short", "long", "zero-checksum", "bad-checksum", "plain")
        length = {"short": self._pick(0, 1, 7, 8 + len(data) - 1), "long": self._pick(8 + len(data) + 1, 65535)}
        udp = self.sc.UDP(sport=self.rng.randrange(1024, 65536), dport=dport, len=length.get(case))
        if case == "zero-checksum":
            udp.chksum = 0
        elif case == "bad-checksum":
            udp.chksum = self.rng.randrange(1, 65536)
        return bytes(self._eth(t) / self._ip(t) / udp / self.sc.Raw(data)), f"UDP to {dport}, {case}"

    # --- TCP -----------------------------------------------------------------------------------
    def _tcp_to(self, t: Target) -> tuple[Any, str]:
        """A TCP layer aimed at the listening port, the open connection or a closed port."""
        aim = self.rng.choices(("listen", "connection", "closed"), weights=(9, 9, 2))[0]
        if aim == "connection" and t.connection is not None:
            c = t.connection
            return self.sc.TCP(sport=c.sport, dport=t.port, seq=c.peer_next, ack=c.board_next, flags="A",
                               window=8192), "on the connection"
        sport = self.rng.randrange(1024, 65536)
        port = CLOSED_PORT if aim == "closed" else t.port
        return (self.sc.TCP(sport=sport, dport=port, seq=self.rng.randrange(1 << 32), flags="S", window=8192),
                "to a closed port" if aim == "closed" else "to the listening port")

    def _segment(self, t: Target, tcp: Any, options: bytes = b"", data: bytes = b"") -> bytes:
        """The frame with options written in as raw bytes, so their lengths can lie and the checksum stays right."""
        options += b"\0" * (-len(options) % 4)
        tcp.dataofs = 5 + len(options) // 4 if tcp.dataofs is None else tcp.dataofs
        return bytes(self._eth(t) / self._ip(t) / tcp / self.sc.Raw(options + data))

    def _tcp_header(self, t: Target) -> tuple[bytes, str]:
        tcp, aim = self._tcp_to(t)
        case = self._pick("offset-low", "offset-high", "reserved", "checksum")
        data = self._bytes(self.rng.randrange(0, 24))
        if case == "offset-low":
            tcp.dataofs = self.rng.randrange(0, 5)
            return self._segment(t, tcp, data=data), f"TCP data offset {tcp.dataofs} {aim}"
        if case == "offset-high":
            tcp.dataofs = self.rng.randrange(6 + len(data) // 4, 16) if len(data) < 40 else 15
            return self._segment(t, tcp, data=data), f"TCP data offset {tcp.dataofs} past the segment {aim}"
        if case == "reserved":
            tcp.reserved = self.rng.randrange(1, 8)
            return self._segment(t, tcp, data=data), f"TCP reserved bits {tcp.reserved} {aim}"
        tcp.chksum = self.rng.randrange(65536)
        return self._segment(t, tcp, data=data), f"bad TCP checksum {aim}"

    def _tcp_options(self, t: Target) -> tuple[bytes, str]:
        tcp, aim = self._tcp_to(t)
        kind = self._pick(*_TCP_OPTIONS, self.rng.randrange(9, 256))
        right = _TCP_OPTIONS.get(kind, 2 + self.rng.randrange(0, 8))
        length = self._pick(0, 1, 2, right - 1, right + 1, 40, self.rng.randrange(256))
        body = self._bytes(max(0, min(length, 40) - 2))
        wrong = bytes([kind, length]) + body
        well = [b"\x02\x04\x05\xb4", b"\x01\x03\x03\x07", b"\x04\x02", b"\x08\x0a" + bytes(8)]
        self.rng.shuffle(well)
        at = self.rng.randrange(0, 3)
        options = b"".join(well[:at]) + wrong + b"".join(well[at:at + 1])
        ending = self._pick("padded", "no-end", "past-header")
        if ending == "past-header" and len(options) < 40:
            options = options[:40]
            tcp.dataofs = 5 + max(0, len(options) - 2) // 4  # the header ends inside the last option
        return (self._segment(t, tcp, options[:40]),
                f"TCP option {kind} with length {length} (right: {right}) {aim}, {ending}")

    def _tcp_flags(self, t: Target) -> tuple[bytes, str]:
        tcp, aim = self._tcp_to(t)
        tcp.flags = self._pick(0x00, 0x03, 0x05, 0x06, 0x07, 0x3F, 0xFF, 0x29, 0x21, 0x11, self.rng.randrange(256))
        data = self._bytes(self.rng.randrange(0, 16))
        if tcp.flags & 0x20:
            tcp.urgptr = self._pick(0, 1, len(data), len(data) + 1, 65535)
        return self._segment(t, tcp, data=data), f"TCP flags {int(tcp.flags):#04x} urgent {tcp.urgptr} {aim}"

    def _tcp_seq(self, t: Target) -> tuple[bytes, str]:
        tcp, aim = self._tcp_to(t)
        c = t.connection
        peer, board = (c.peer_next, c.board_next) if c and aim == "on the connection" else (tcp.seq, 0)
        case = self._pick("seq-edge", "ack-edge", "zero-window-probe", "past-window", "window-zero")
        data = self._bytes(self.rng.randrange(1, 32))
        if case == "seq-edge":
            delta = self._pick(-1, 1, -65535, 65535, 1 << 31, -(1 << 31), 0x7FFFFFFF)
            tcp.seq = (peer + delta) & 0xFFFFFFFF
            what = f"seq {delta:+d} from the next"
        elif case == "ack-edge":
            delta = self._pick(-1, 1, 2, -65536, 1 << 31, 0x7FFFFFFF)
            tcp.ack = (board + delta) & 0xFFFFFFFF
            what = f"ack {delta:+d} from the board's next"
        elif case == "zero-window-probe":
            tcp.seq, tcp.window = (peer - 1) & 0xFFFFFFFF, 0
            data = data[:1]
            what = "zero-window probe (1 byte before the next)"
        elif case == "past-window":
            tcp.seq = (peer + self._pick(8192, 65535, 1 << 20)) & 0xFFFFFFFF
            what = "data past the board's window"
        else:
            tcp.window = 0
            what = "window 0"
        return self._segment(t, tcp, data=data), f"{what} {aim}"


# ------------------------------------------------------------------ reproducers: what a replay needs

PACE_GRAIN_S = 0.01  # frames sent closer than this (board seconds) are replayed together


def paced(frames: list[bytes], times: list[float] | None) -> list[tuple[float, list[bytes]]]:
    """The frames in groups sent at once: (board seconds from the first, frames), in order."""
    if not times or len(times) != len(frames):
        return [(0.0, frames)] if frames else []
    groups: list[tuple[float, list[bytes]]] = []
    for at, frame in zip((t - times[0] for t in times), frames, strict=True):
        if groups and at - groups[-1][0] < PACE_GRAIN_S:
            groups[-1][1].append(frame)
        else:
            groups.append((at, [frame]))
    return groups


def drop_families(frames: list[Frame], reproduces: Callable[[list[Frame]], bool], max_trials: int
                  ) -> tuple[list[Frame], int]:
    """Without each family of frames in turn (all its frames at once), kept out when the finding still comes:
    a coarse first cut before ddmin for a long reproducer whose few frames that matter are spread through it
    (fragments among every batch of 16 s). (what is left, trials)."""
    trials = 0
    for family in sorted({f.family for f in frames}):
        rest = [f for f in frames if f.family != family]
        if not rest or trials >= max_trials:
            continue
        trials += 1
        if reproduces(rest):
            frames = rest
    return frames, trials


def reproducer_times(meta: dict[str, Any]) -> list[float] | None:
    """When the fuzz sent each frame of a reproducer (its .json's `at`, board seconds); None for one written
    before frames were timed, whose frames go back to back."""
    frames = meta.get("frames") or []
    if not frames or any("at" not in f for f in frames):
        return None
    return [float(f["at"]) for f in frames]


def readdress(frame: bytes, was_mac: str, now_mac: str) -> bytes:
    """A frame sent to the MAC `was_mac`, sent to `now_mac` instead (others, broadcasts, as they are)."""
    if not was_mac or not now_mac or frame[:6] != bytes.fromhex(was_mac.replace(":", "")):
        return frame
    return bytes.fromhex(now_mac.replace(":", "")) + frame[6:]


@dataclass
class History:
    """The batches sent within the last `window_s` wall seconds: what a finding that built up over several
    batches (fragments held for reassembly) needs to be made again, and when each was sent."""

    window_s: float
    dilation: float = 1.0  # wall seconds per board second: the frames' times are kept in the board's
    batches: deque[tuple[float, list[Frame]]] = field(default_factory=deque)

    def add(self, at: float, batch: list[Frame]) -> None:
        self.batches.append((at, batch))
        while self.batches and at - self.batches[0][0] > self.window_s:
            self.batches.popleft()

    def timed(self) -> list[list[Frame]]:
        """The batches kept, each frame stamped with when it was sent (board seconds from the first batch)."""
        if not self.batches:
            return []
        first = self.batches[0][0]
        return [[replace(f, at=(at - first) / self.dilation) for f in batch] for at, batch in self.batches]

    def before_last(self) -> list[Frame]:
        """Every frame of the batches kept, but the last batch's, stamped."""
        return [frame for batch in self.timed()[:-1] for frame in batch]

    def last(self) -> list[Frame]:
        """The last batch's frames, stamped on the same clock as before_last()'s."""
        timed = self.timed()
        return timed[-1] if timed else []
