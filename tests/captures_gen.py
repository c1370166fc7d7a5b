"""Synthetic captures for the analysis tests and benchmark: real Ethernet/IPv4/TCP frames, written as pcap.

Two layers:

- frame building (``tcp_frame``, ``tcp_options``, ``write_pcap``): byte-exact Ethernet II / IPv4 /
  TCP frames with correct IP and TCP checksums, so Wireshark dissects them like any capture;
- ``simulate``: a small event-driven model of one TCP bulk transfer between a sender and a
  receiver over a link with a one-way delay each way and a bottleneck rate in the data
  direction, written as the capture point (the device, at either end) sees it. The model has a
  receive buffer (advertised window, optional window scaling), an application read rate (for
  shrinking and zero windows), a send buffer (cap on unacknowledged bytes), an optional
  congestion window growing a segment per round trip, delayed ACKs every second segment, an
  out-of-order queue at the receiver, dropped segments with retransmission by timeout or after
  three duplicate ACKs, persist probes against a zero window, and an optional stall of the
  device together with its capture point (frames stamped late).

The known answers (MSS, windows, RTT, bottleneck) come from the scenario's parameters, not
from the capture, which is what makes them usable as test oracles.
"""

from __future__ import annotations

import heapq
import itertools
import struct
from dataclasses import dataclass
from pathlib import Path

DEVICE_IP = "10.77.0.2"
PEER_IP = "10.77.0.1"
DEVICE_MAC = bytes.fromhex("020000000002")
PEER_MAC = bytes.fromhex("020000000001")

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


# ------------------------------------------------------------------ frames


def _ones_complement(data: bytes) -> int:
    """Internet checksum of data (RFC 1071), using 2**16 == 1 (mod 0xffff) for speed."""
    if len(data) % 2:
        data += b"\0"
    total = int.from_bytes(data, "big") % 0xFFFF if data else 0
    if total == 0 and any(data):
        total = 0xFFFF
    return (~total) & 0xFFFF


def _ip(addr: str) -> bytes:
    return bytes(int(part) for part in addr.split("."))


def tcp_options(mss: int | None = None, wscale: int | None = None, sack_perm: bool = False,
                timestamps: tuple[int, int] | None = None) -> bytes:
    """TCP options in the order Linux sends them, padded with NOPs to a multiple of 4."""
    out = b""
    if mss is not None:
        out += struct.pack("!BBH", 2, 4, mss)
    if sack_perm:
        out += b"\x04\x02"
    if timestamps is not None:
        out += b"\x01\x01" + struct.pack("!BBII", 8, 10, *timestamps)
    if wscale is not None:
        out += b"\x01" + struct.pack("!BBB", 3, 3, wscale)
    while len(out) % 4:
        out += b"\x01"
    return out


def tcp_frame(src: str, dst: str, sport: int, dport: int, seq: int, ack: int, flags: int, window: int,
              options: bytes = b"", payload: bytes | int = b"", ip_id: int = 0, ttl: int = 64) -> bytes:
    """One Ethernet/IPv4/TCP frame with valid checksums; payload may be a byte count (zeros)."""
    if isinstance(payload, int):
        payload = bytes(payload)
    offset = (20 + len(options)) // 4
    tcp_wo_sum = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, offset << 4, flags,
                             window, 0, 0) + options
    pseudo = _ip(src) + _ip(dst) + struct.pack("!BBH", 0, 6, len(tcp_wo_sum) + len(payload))
    csum = _ones_complement(pseudo + tcp_wo_sum + payload)
    tcp = tcp_wo_sum[:16] + struct.pack("!H", csum) + tcp_wo_sum[18:]
    total = 20 + len(tcp) + len(payload)
    ip_wo_sum = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, ip_id & 0xFFFF, 0x4000, ttl, 6, 0, _ip(src), _ip(dst))
    ip_hdr = ip_wo_sum[:10] + struct.pack("!H", _ones_complement(ip_wo_sum)) + ip_wo_sum[12:]
    smac, dmac = (DEVICE_MAC, PEER_MAC) if src == DEVICE_IP else (PEER_MAC, DEVICE_MAC)
    frame = dmac + smac + b"\x08\x00" + ip_hdr + tcp + payload
    return frame.ljust(60, b"\0")


LINKTYPE_LINUX_SLL = 113  # "Linux cooked" captures, as tcpdump -i any wrote them before SLL2


def linux_cooked(frame: bytes, outgoing: bool = False) -> bytes:
    """An Ethernet frame as a Linux cooked (SLL) capture holds it: a 16-byte header in place of Ethernet's 14."""
    header = struct.pack("!HHH8sH", 4 if outgoing else 0, 1, 6, frame[6:12] + b"\0\0", 0x0800)
    return header + frame[14:]


def udp_frame(src: str, dst: str, sport: int, dport: int, payload: bytes) -> bytes:
    """An Ethernet/IPv4/UDP frame (UDP checksum 0 = none)."""
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip_wo_sum = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0, _ip(src), _ip(dst))
    ip_hdr = ip_wo_sum[:10] + struct.pack("!H", _ones_complement(ip_wo_sum)) + ip_wo_sum[12:]
    return (PEER_MAC + DEVICE_MAC + b"\x08\x00" + ip_hdr + udp).ljust(60, b"\0")


def write_pcap(path: Path, records: list[tuple[float, bytes]], snaplen: int = 262144,
               nanosecond: bool = True, linktype: int = 1) -> Path:
    """A classic pcap (linktype Ethernet unless told, like netrepro's link writes); frames cut at snaplen."""
    path = Path(path)
    magic = 0xA1B23C4D if nanosecond else 0xA1B2C3D4
    scale = 1_000_000_000 if nanosecond else 1_000_000
    parts = [struct.pack("<IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for t, frame in records:
        sec = int(t)
        frac = round((t - sec) * scale)
        if frac >= scale:
            sec, frac = sec + 1, frac - scale
        kept = frame[:snaplen]
        parts.append(struct.pack("<IIII", sec, frac, len(kept), len(frame)))
        parts.append(kept)
    path.write_bytes(b"".join(parts))
    return path


# ------------------------------------------------------------------ flow model


def _tsval(t: float) -> int:
    """TCP timestamp value of a 1 ms clock (like Linux's)."""
    return int(t * 1000) + 1


@dataclass
class Scenario:
    """One bulk TCP transfer. Times in seconds, sizes in bytes, rates in bit/s.

    ``sender`` is "device" or "peer" (who sends the payload); the capture is taken at the device,
    as netrepro's link does, unless ``capture_at`` is "peer". ``client`` is the side that sends the SYN.
    """

    sender: str = "peer"
    client: str = "peer"
    duration: float = 2.0                 # the sender stops queueing new data after this
    total_bytes: int | None = None        # or: send exactly this much
    rtt: float = 0.006                    # base round trip: one-way delay rtt/2 each way
    rate_bps: float | None = 100e6        # bottleneck rate in the data direction (None: unlimited)
    device_mss: int = 1460                # MSS option the device puts in its SYN / SYN-ACK
    peer_mss: int = 1460
    device_wscale: int | None = None      # window-scale option of each side (None: no option)
    peer_wscale: int | None = None
    sack: bool = False                    # SACK-permitted by both
    timestamps: bool = False              # timestamps by both
    rcv_buf: int = 23360                  # receiver's buffer = its window when the app keeps up
    snd_buf: int | None = None            # cap on the sender's unacknowledged bytes
    cwnd: int | None = None               # sender's initial congestion window; grows a segment per RTT (Reno's
                                          # congestion avoidance) as ACKs arrive (None: no congestion window)
    send_cost: float = 0.0                # sender's CPU time per segment (a CPU-bound sender)
    app_read_bps: float | None = None     # receiving app's read rate (None: reads at once)
    app_pause: tuple[float, float] | None = None  # (start, length): the receiving app stops reading
    ack_every: int = 2                    # receiver ACKs every n-th full segment at once
    delack: float = 0.2                   # delayed-ACK timeout otherwise
    ack_delay: float = 30e-6              # receiver's processing time before an ACK leaves
    drop: frozenset[int] = frozenset()    # data segments (first transmissions, 0-based) lost on the link
    rto: float = 0.25                     # retransmission timeout (doubles per repeat)
    fast_retransmit: bool = True          # retransmit after three duplicate ACKs
    handshake: bool = True                # False: the capture starts after the SYNs (scale unknown)
    # (start, length): the device and its capture point stop, as when the host deschedules both. What reaches the
    # device is handled when the stall ends; what the capture had to stamp meanwhile, and the last frame the device
    # sent before it, is stamped then (a data segment stamped late: its ACK RTT falls below the path's)
    device_stall: tuple[float, float] | None = None
    start: float = 1.0                    # capture time of the first frame
    device_port: int = 5001
    peer_port: int = 40000
    capture_at: str = "device"            # where the capture is taken: "device" or "peer" (a PC-side capture)


class _Model:
    """The event-driven model behind ``simulate``: "snd" sends the payload, "rcv" receives it."""

    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.events: list[tuple[float, int, str, tuple]] = []
        self.counter = itertools.count()
        self.records: list[tuple[float, bytes]] = []
        self.one_way = sc.rtt / 2
        snd_is_dev = sc.sender == "device"
        names = {"snd": sc.sender, "rcv": "peer" if snd_is_dev else "device"}
        self.ip = {k: DEVICE_IP if v == "device" else PEER_IP for k, v in names.items()}
        self.port = {k: sc.device_port if v == "device" else sc.peer_port for k, v in names.items()}
        self.mss_opt = {k: sc.device_mss if v == "device" else sc.peer_mss for k, v in names.items()}
        self.ws_opt = {k: sc.device_wscale if v == "device" else sc.peer_wscale for k, v in names.items()}
        self.at_device = "snd" if snd_is_dev else "rcv"
        self.at_capture = self.at_device if sc.capture_at == "device" else ("rcv" if snd_is_dev else "snd")
        self.client = "snd" if sc.client == sc.sender else "rcv"
        self.server = "rcv" if self.client == "snd" else "snd"
        scaling = sc.device_wscale is not None and sc.peer_wscale is not None
        self.shift = {k: (self.ws_opt[k] if scaling else 0) for k in ("snd", "rcv")}
        self.seg = min(self.mss_opt["snd"], self.mss_opt["rcv"]) - (12 if sc.timestamps else 0)
        self.isn = {self.client: 1_000_000, self.server: 3_000_000_000}
        self.ip_id = {"snd": 0, "rcv": 0}
        self.ts_recent = {"snd": 0, "rcv": 0}   # last TSval heard from the other side (echoed as TSecr)
        self.link_free = 0.0
        # sender
        self.snd_una = self.snd_nxt = self.snd_max = 0
        self.peer_edge = 0
        self.peer_wnd = 0
        self.seg_index = 0
        self.dupacks = 0
        self.rto_cur = sc.rto
        self.rto_deadline: float | None = None
        self.cwnd = float(sc.cwnd) if sc.cwnd else None
        self.recovering = False
        self.limit = sc.total_bytes
        self.fin_sent = False
        self.done = False
        self.next_send = 0.0
        self.send_pending = False
        # receiver
        self.rcv_nxt = 0
        self.ooo: dict[int, int] = {}
        self.unread = 0
        self.unacked_segs = 0
        self.delack_at: float | None = None
        self.adv_edge = 0
        self.rcv_fin = False

    # ------------------------------------------------------------ plumbing

    def push(self, t: float, kind: str, *data) -> None:
        heapq.heappush(self.events, (t, next(self.counter), kind, data))

    def frame(self, side: str, t: float, seq: int, ack: int, flags: int, window: int, payload: int = 0,
              options: bytes | None = None) -> bytes:
        """seq and ack are absolute."""
        other = "rcv" if side == "snd" else "snd"
        if options is None:
            options = tcp_options(timestamps=(_tsval(t), self.ts_recent[side])) if self.sc.timestamps else b""
        self.ip_id[side] += 1
        return tcp_frame(self.ip[side], self.ip[other], self.port[side], self.port[other], seq, ack, flags, window,
                         options, payload, self.ip_id[side], ttl=255 if self.ip[side] == DEVICE_IP else 64)

    def seg_frame(self, side: str, t: float, seq_rel: int, flags: int = ACK, payload: int = 0) -> bytes:
        """A non-SYN segment of side; seq_rel counts from the first byte after the SYN."""
        other = "rcv" if side == "snd" else "snd"
        ack_rel = self.rcv_nxt if side == "rcv" else 0
        ack_extra = 1 if (side == "snd" and self.rcv_fin) else 0
        return self.frame(side, t, self.isn[side] + 1 + seq_rel, self.isn[other] + 1 + ack_rel + ack_extra, flags,
                          self.raw_window(side), payload)

    def capture(self, side: str, t_sent: float, frame: bytes, t_arrive: float | None) -> None:
        """The capture point's view (the device's unless told): frames its side sends when sent, frames it
        receives when they arrive."""
        if side == self.at_capture:
            self.records.append((t_sent, frame))
        elif t_arrive is not None:
            self.records.append((t_arrive, frame))

    def rcv_window(self) -> int:
        return max(0, self.sc.rcv_buf - self.unread)

    def raw_window(self, side: str) -> int:
        if side == "rcv":
            return min(0xFFFF, self.rcv_window() >> self.shift["rcv"])
        return min(0xFFFF, 262144 >> self.shift["snd"])

    # ------------------------------------------------------------ run

    def run(self) -> list[tuple[float, bytes]]:
        sc = self.sc
        start = self.handshake() if sc.handshake else 0.0
        if not sc.handshake:
            self.peer_wnd = self.rcv_window()
            self.peer_edge = self.peer_wnd
            self.adv_edge = self.peer_wnd
        self.data_start = start
        self.end_time = start + sc.duration
        self.stall = None
        if sc.device_stall:
            self.stall = (start + sc.device_stall[0], start + sc.device_stall[0] + sc.device_stall[1])
        device_kinds = ({"send", "paced", "ack", "rto"} if self.at_device == "snd"
                        else {"data", "delack", "fin", "read"})
        self.push(start, "send")
        if sc.app_read_bps or sc.app_pause:
            self.push(start + 0.001, "read")
        steps = 0
        while self.events and not self.done:
            t, _, kind, data = heapq.heappop(self.events)
            steps += 1
            if steps > 20_000_000:
                raise RuntimeError("simulation does not terminate")
            if self.stall and self.stall[0] <= t < self.stall[1] and kind in device_kinds:
                self.push(self.stall[1], kind, *data)  # the device is not running: handled when it resumes
                continue
            getattr(self, "on_" + kind)(t, *data)
        self.records.sort(key=lambda r: r[0])
        if self.stall:
            s0, s1 = self.stall
            dev_ip = _ip(DEVICE_IP)
            last = max((i for i, (t, f) in enumerate(self.records) if t < s0 and f[26:30] == dev_ip), default=None)
            self.records = [(s1 if (s0 <= t < s1 or i == last) else t, f) for i, (t, f) in enumerate(self.records)]
            self.records.sort(key=lambda r: r[0])
        base = sc.start - self.records[0][0]
        return [(t + base, fr) for t, fr in self.records]

    def handshake(self) -> float:
        sc = self.sc
        c, s = self.client, self.server
        d = self.one_way
        ts = (lambda t: (int(t * 1000) + 1, 0)) if sc.timestamps else (lambda t: None)
        syn_win = {"snd": 65535, "rcv": min(0xFFFF, sc.rcv_buf)}
        t0 = 0.0
        f = self.frame(c, t0, self.isn[c], 0, SYN, syn_win[c],
                       options=tcp_options(self.mss_opt[c], self.ws_opt[c], sc.sack, ts(t0)))
        self.capture(c, t0, f, t0 + d)
        t1 = t0 + d + 0.0001
        s_ws = self.ws_opt[s] if self.ws_opt[c] is not None else None
        f = self.frame(s, t1, self.isn[s], self.isn[c] + 1, SYN | ACK, syn_win[s],
                       options=tcp_options(self.mss_opt[s], s_ws, sc.sack, ts(t1)))
        self.capture(s, t1, f, t1 + d)
        t2 = t1 + d + 0.0001
        f = self.seg_frame(c, t2, 0)
        self.capture(c, t2, f, t2 + d)
        self.peer_wnd = self.rcv_window()
        self.peer_edge = self.peer_wnd
        self.adv_edge = self.peer_wnd
        return t2 if c == "snd" else t2 + d

    # ------------------------------------------------------------ sender

    def on_send(self, t: float) -> None:
        sc = self.sc
        while not self.fin_sent:
            if self.limit is None and t >= self.end_time:
                self.limit = self.snd_max
            if self.limit is not None and self.snd_nxt >= self.limit:
                if self.snd_una >= self.limit:
                    self.send_fin(t)
                return
            remaining = (self.limit if self.limit is not None else 1 << 62) - self.snd_nxt
            length = min(self.seg, remaining)
            room = self.peer_edge - self.snd_nxt
            if self.cwnd is not None:
                room = min(room, int(self.cwnd) - (self.snd_nxt - self.snd_una))
            if sc.snd_buf:
                room = min(room, sc.snd_buf - (self.snd_nxt - self.snd_una))
            if room < length:
                return
            if sc.send_cost and t < self.next_send:
                if not self.send_pending:
                    self.send_pending = True
                    self.push(self.next_send, "paced")
                return
            self.next_send = t + sc.send_cost
            self.transmit(t, self.snd_nxt, length, first=True)
            self.snd_nxt += length
            self.snd_max = max(self.snd_max, self.snd_nxt)
            if self.limit is None and sc.total_bytes is None and t >= self.end_time:
                return

    def on_paced(self, t: float) -> None:
        self.send_pending = False
        self.on_send(t)

    def transmit(self, t: float, seq: int, length: int, first: bool) -> None:
        sc = self.sc
        lost = False
        if first:
            lost = self.seg_index in sc.drop
            self.seg_index += 1
        f = self.seg_frame("snd", t, seq, ACK | PSH, length)
        begin = max(t, self.link_free)
        end = begin + ((max(len(f), 60) + 24) * 8 / sc.rate_bps if sc.rate_bps else 0.0)
        self.link_free = end
        arrive = None if lost else end + self.one_way
        self.capture("snd", t, f, arrive)
        if arrive is not None:
            self.push(arrive, "data", seq, length, _tsval(t))
        if self.rto_deadline is None:
            self.arm_rto(t)

    def arm_rto(self, t: float) -> None:
        self.rto_deadline = t + self.rto_cur
        self.push(self.rto_deadline, "rto", self.rto_deadline)

    def on_ack(self, t: float, ack: int, wnd: int, fin: bool, tsval: int = 0) -> None:
        if ack >= self.snd_una:
            self.ts_recent["snd"] = tsval
        if fin:
            f = self.seg_frame("snd", t, self.snd_max + 1)
            self.capture("snd", t, f, t + self.one_way)
            self.done = True
            return
        if ack > self.snd_una:
            if self.cwnd is not None:
                self.cwnd += self.seg * (ack - self.snd_una) / self.cwnd
            self.snd_una = ack
            self.dupacks = 0
            self.recovering = False
            self.rto_cur = self.sc.rto
            self.rto_deadline = None
            if self.snd_una < self.snd_nxt:
                self.arm_rto(t)
        elif ack == self.snd_una and self.snd_nxt > self.snd_una and ack + wnd == self.peer_edge:
            self.dupacks += 1
            if self.dupacks == 3 and self.sc.fast_retransmit and not self.recovering:
                self.recovering = True
                self.transmit(t, self.snd_una, min(self.seg, self.snd_max - self.snd_una), first=False)
        self.peer_wnd = wnd
        self.peer_edge = max(self.peer_edge, ack + wnd)
        self.on_send(t)

    def on_rto(self, t: float, deadline: float) -> None:
        if deadline != self.rto_deadline or self.snd_una >= self.snd_max or self.fin_sent:
            return
        self.rto_cur *= 2
        self.rto_deadline = None
        self.transmit(t, self.snd_una, min(self.seg, self.snd_max - self.snd_una), first=False)

    def send_fin(self, t: float) -> None:
        self.fin_sent = True
        f = self.seg_frame("snd", t, self.snd_max, FIN | ACK)
        self.capture("snd", t, f, t + self.one_way)
        self.push(t + self.one_way, "fin")

    # ------------------------------------------------------------ receiver

    def on_data(self, t: float, seq: int, length: int, tsval: int = 0) -> None:
        if seq <= self.rcv_nxt:
            self.ts_recent["rcv"] = tsval
        if seq + length <= self.rcv_nxt:
            self.send_ack(t + self.sc.ack_delay)
            return
        if seq > self.rcv_nxt:
            self.ooo[seq] = length
            self.send_ack(t + self.sc.ack_delay)
            return
        hole = bool(self.ooo)
        self.rcv_nxt = seq + length
        while self.rcv_nxt in self.ooo:
            self.rcv_nxt += self.ooo.pop(self.rcv_nxt)
        if self.sc.app_read_bps or self.sc.app_pause:
            self.unread += length
        self.unacked_segs += 1
        if hole or self.unacked_segs >= self.sc.ack_every or length < self.seg or self.rcv_window() < self.seg:
            self.send_ack(t + self.sc.ack_delay)
        elif self.delack_at is None:
            self.delack_at = t + self.sc.delack
            self.push(self.delack_at, "delack", self.delack_at)

    def on_delack(self, t: float, when: float) -> None:
        if self.delack_at == when:
            self.send_ack(t)

    def send_ack(self, t: float, flags: int = ACK) -> None:
        self.unacked_segs = 0
        self.delack_at = None
        raw = self.raw_window("rcv")
        wnd = raw << self.shift["rcv"]
        self.adv_edge = self.rcv_nxt + wnd
        f = self.seg_frame("rcv", t, 0, flags)
        self.capture("rcv", t, f, t + self.one_way)
        self.push(t + self.one_way, "ack", self.rcv_nxt + (1 if flags & FIN else 0), wnd, bool(flags & FIN),
                  _tsval(t))

    def on_fin(self, t: float) -> None:
        self.rcv_fin = True
        self.rcv_nxt += 1
        self.send_ack(t, FIN | ACK)

    def on_read(self, t: float) -> None:
        sc = self.sc
        step = 0.001
        pause = sc.app_pause
        paused = pause is not None and self.data_start + pause[0] <= t < self.data_start + pause[0] + pause[1]
        if not paused:
            self.unread = max(0, self.unread - int(sc.app_read_bps / 8 * step)) if sc.app_read_bps else 0
        wnd = self.rcv_window()
        opened = self.rcv_nxt + wnd - self.adv_edge
        if opened > 0 and (self.adv_edge - self.rcv_nxt < self.seg <= wnd or opened >= min(sc.rcv_buf // 2,
                                                                                           4 * self.seg)):
            self.send_ack(t)
        if not self.fin_sent:
            self.push(t + step, "read")


def simulate(sc: Scenario) -> list[tuple[float, bytes]]:
    """The capture (time, frame) of one scenario, as seen at the device."""
    return _Model(sc).run()


def write_scenario(path: Path, sc: Scenario, **pcap_kw) -> Path:
    return write_pcap(path, simulate(sc), **pcap_kw)


# ------------------------------------------------------------------ a real Linux transfer


def linux_capture_possible() -> str | None:
    """None if a real capture can be made here (root, ip, tc, iperf, dumpcap), else why not."""
    import os
    import shutil

    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("ip", "tc", "iperf", "dumpcap"):
        if shutil.which(tool) is None:
            return f"{tool} not installed"
    return None


def linux_capture(path: Path, seconds: float = 2.0, rate: str = "50mbit", device_receives: bool = True,
                  queue_bytes: int = 64000, snaplen: int = 128, receive_buffer: str | None = None) -> Path:
    """A real Linux TCP transfer (iperf2) through a rate-limited router, captured at the device.

    Three private namespaces: "device" (10.77.0.2), a router, and "peer" (10.77.1.1). A tbf qdisc
    on the router's interface toward the receiver limits the rate and drops beyond queue_bytes,
    as a real bottleneck does (no local backpressure to the sender). Segmentation offload is
    limited to one segment so the capture holds wire-size frames. dumpcap writes a classic pcap
    at the device's interface. receive_buffer (iperf -w on the receiving side) bounds the receiver's
    window: below queue_bytes, the router never drops and a short stall of either process leaves the
    queue enough to keep the link busy. Everything is removed afterwards.
    """
    import os
    import signal
    import subprocess
    import time

    path = Path(path)
    tag = f"nran{os.getpid() % 100000}"
    dev_ns, rtr_ns, peer_ns = f"{tag}d", f"{tag}r", f"{tag}p"
    procs: list[subprocess.Popen] = []

    def sh(*args: str, ns: str | None = None) -> None:
        cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
        subprocess.run(cmd, check=True, capture_output=True, timeout=60)

    def bg(ns: str, *args: str) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", ns, *args], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(p)
        return p

    def link(ns_a: str, if_a: str, addr_a: str, ns_b: str, if_b: str, addr_b: str) -> None:
        sh("ip", "link", "add", if_a, "netns", ns_a, "type", "veth", "peer", "name", if_b, "netns", ns_b)
        for ns, ifname, addr in ((ns_a, if_a, addr_a), (ns_b, if_b, addr_b)):
            sh("ip", "link", "set", ifname, "gso_max_segs", "1", "gso_max_size", "1514", ns=ns)
            sh("ip", "addr", "add", addr, "dev", ifname, ns=ns)
            sh("ip", "link", "set", ifname, "up", ns=ns)

    try:
        for ns in (dev_ns, rtr_ns, peer_ns):
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        link(dev_ns, "dev0", "10.77.0.2/24", rtr_ns, "rd0", "10.77.0.254/24")
        link(peer_ns, "peer0", "10.77.1.1/24", rtr_ns, "rp0", "10.77.1.254/24")
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=rtr_ns)
        sh("ip", "route", "add", "default", "via", "10.77.0.254", ns=dev_ns)
        sh("ip", "route", "add", "default", "via", "10.77.1.254", ns=peer_ns)
        bottleneck = "rd0" if device_receives else "rp0"
        sh("tc", "qdisc", "add", "dev", bottleneck, "root", "tbf", "rate", rate, "burst", "16kb", "limit",
           str(queue_bytes), ns=rtr_ns)
        path.unlink(missing_ok=True)
        cap = bg(dev_ns, "dumpcap", "-q", "-P", "-i", "dev0", "-s", str(snaplen), "-w", str(path))
        deadline = time.monotonic() + 10
        while not (path.exists() and path.stat().st_size >= 24) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        srv_ns, cli_ns = (dev_ns, peer_ns) if device_receives else (peer_ns, dev_ns)
        sizing = ["-w", receive_buffer] if receive_buffer else []  # the server receives
        server = bg(srv_ns, "iperf", "-s", "-p", "5001", *sizing)
        time.sleep(0.3)
        dst = "10.77.0.2" if device_receives else "10.77.1.1"
        sh("iperf", "-c", dst, "-p", "5001", "-t", f"{seconds:g}", ns=cli_ns)
        time.sleep(0.5)
        for p in (cap, server):
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=10)
        return path
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for ns in (dev_ns, rtr_ns, peer_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
