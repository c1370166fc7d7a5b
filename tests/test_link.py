"""The emulated link, driven through real unix datagram sockets (the link's --peer-sock mode).

The test plays both QEMU (a socket bound at the link's device_remote) and the peer (a socket
bound at peer_remote). Arrival times are the kernel's receive timestamps (SO_TIMESTAMPNS),
so the checks measure the link, not how quickly Python wakes up.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from harness.core.errors import NetreproError
from harness.core.ethernet import wire_bytes
from harness.core.native import build_tool
from harness.link import (
    Direction,
    Link,
    LinkCounters,
    LinkSpec,
    link_binary,
    parse_drop_list,
    parse_gemodel,
    parse_percent,
    parse_rate,
    parse_size,
    parse_time,
    read_drops,
    read_pcap,
    read_pcap_ns,
)
from harness.rig.devicetime import LINK_LATE_MS

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux, not exported by Python 3.11
DEV_MAC = bytes.fromhex("020000000002")
PEER_MAC = bytes.fromhex("020000000001")
MS = 1_000_000  # ns


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
                 connect_device: bool = True) -> None:
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
        )

    @staticmethod
    def _socket(path: Path) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(str(path))
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
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

    @contextlib.contextmanager
    def frozen(self):
        """Hold the link (SIGSTOP) while a burst is queued in its socket, so that the link takes
        the whole burst in at once, however slowly this process sends it."""
        pid = self.link.pid
        os.kill(pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + 2
            while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
                assert time.monotonic() < deadline, "the link did not stop"
                time.sleep(0.001)
            yield
        finally:
            os.kill(pid, signal.SIGCONT)

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
                data, anc, _flags, _addr = sock.recvmsg(65536, 64)
            except TimeoutError:
                break
            stamp = time.time_ns()
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", payload[:16])
                    stamp = sec * 1_000_000_000 + nsec
            out.append((stamp, data))
        return out

    def at_peer(self, count: int, timeout: float = 3.0) -> list[tuple[int, bytes]]:
        return self.receive(self.peer, count, timeout)

    def at_device(self, count: int, timeout: float = 3.0) -> list[tuple[int, bytes]]:
        return self.receive(self.dev, count, timeout)

    def wait_arrivals(self, direction: str, frames_in: int, timeout: float = 5.0) -> LinkCounters:
        """Wait until the link has taken in frames_in frames in a direction."""
        deadline = time.monotonic() + timeout
        while True:
            counters = self.link.counters()
            if getattr(counters, direction).frames_in >= frames_in or time.monotonic() > deadline:
                return counters
            time.sleep(0.01)


@pytest.fixture
def root():
    """A short directory (unix socket paths are limited to 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="nrl-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def one_way(**kwargs) -> Direction:
    return Direction(**kwargs)


# ------------------------------------------------------------------ units and specs


def test_time_units():
    assert parse_time("5.5ms") == pytest.approx(0.0055)
    assert parse_time("300us") == pytest.approx(300e-6)
    assert parse_time("2s") == 2.0
    assert parse_time("0") == 0.0
    assert parse_time(0) == 0.0
    assert parse_time("250") == pytest.approx(250e-6)  # tc: a bare number is microseconds
    assert parse_time("1.5msec") == pytest.approx(0.0015)
    for bad in ("5 parsecs", "fast", "-1ms", "", 5, 2.5, None):
        with pytest.raises(NetreproError) as err:
            parse_time(bad)
        assert "\n" not in str(err.value)


def test_rate_units():
    assert parse_rate("43mbit") == 43_000_000
    assert parse_rate("100Mbit") == 100_000_000
    assert parse_rate("1gbit") == 1_000_000_000
    assert parse_rate("64kbit") == 64_000
    assert parse_rate("500000bit") == 500_000
    assert parse_rate("500000") == 500_000
    assert parse_rate("1mbps") == 8_000_000  # tc: bps is bytes per second
    assert parse_rate("10kbps") == 80_000
    assert parse_rate("1mibit") == 1024 * 1024
    for bad in ("43 furlongs", "mbit", "-5mbit", "1.2.3mbit", True):
        with pytest.raises(NetreproError):
            parse_rate(bad)


def test_size_and_percent_units():
    assert parse_size("64k") == 65536
    assert parse_size("1514") == 1514
    assert parse_size(1514) == 1514
    assert parse_size("1m") == 1024 * 1024
    assert parse_size("8kbit") == 1024
    assert parse_percent("0.1%") == pytest.approx(0.001)
    assert parse_percent("100%") == 1.0
    assert parse_percent("0") == 0.0
    for bad in ("0.1", 0.5, "150%", "x%"):
        with pytest.raises(NetreproError):
            parse_percent(bad)
    with pytest.raises(NetreproError):
        parse_size("64 lightyears")


def test_gemodel_and_drop_list_parsing():
    assert parse_gemodel("1% 30% 100% 0%") == pytest.approx((0.01, 0.3, 1.0, 0.0))
    assert parse_gemodel("2%") == pytest.approx((0.02, 0.98, 1.0, 0.0))  # iproute2: r = 1 - p
    assert parse_gemodel(["5%", "20%"]) == pytest.approx((0.05, 0.2, 1.0, 0.0))
    assert parse_gemodel("off") is None
    with pytest.raises(NetreproError):
        parse_gemodel("1% 2% 3% 4% 5%")
    assert parse_drop_list("data:3, frame:12 syn:1") == ("data:3", "frame:12", "syn:1")
    assert parse_drop_list(["data:3-5"]) == ("data:3-5",)
    for bad in ("data:0", "packet:3", "data:5-3", "data"):
        with pytest.raises(NetreproError):
            parse_drop_list(bad)


def test_preset_rtt_split_and_override():
    spec = LinkSpec.from_preset({"rtt": "5.5ms", "rate": "43mbit"})
    for d in (spec.to_device, spec.to_peer):
        assert d.delay_s == pytest.approx(2.75e-3)
        assert d.rate_bps == 43_000_000
        assert d.limit_packets == 1000
    assert spec.rtt_s == pytest.approx(5.5e-3)

    spec = LinkSpec.from_preset(
        {"rtt": "6ms", "rate": "100mbit", "to_device": {"delay": "4ms", "rate": "43mbit", "drop": "data:3"}}
    )
    assert spec.to_device.delay_s == pytest.approx(4e-3)
    assert spec.to_peer.delay_s == pytest.approx(2e-3)  # the rest of the RTT
    assert spec.to_device.rate_bps == 43_000_000 and spec.to_peer.rate_bps == 100_000_000
    assert spec.to_device.drop == ("data:3",) and spec.to_peer.drop == ()

    changed = spec.override(rtt="10ms", loss="1%", limit=50, seed=7)
    assert changed.to_device.delay_s == pytest.approx(5e-3) and changed.to_peer.delay_s == pytest.approx(5e-3)
    assert changed.to_device.loss == pytest.approx(0.01) and changed.to_peer.limit_packets == 50
    assert changed.seed == 7
    assert changed.to_device.rate_bps == 43_000_000  # untouched
    assert spec.to_device.delay_s == pytest.approx(4e-3)  # the original is unchanged

    asym = spec.override(rtt="10ms", delay_to_peer="1ms", rate_to_peer="1gbit", gemodel="1% 30%")
    assert asym.to_peer.delay_s == pytest.approx(1e-3) and asym.to_device.delay_s == pytest.approx(9e-3)
    assert asym.to_peer.rate_bps == 1_000_000_000 and asym.to_device.gemodel == pytest.approx(
        (0.01, 0.3, 1, 0)
    )

    d = asym.as_dict()
    assert d["rtt_s"] == pytest.approx(0.01)
    assert d["to_device"]["gemodel"] == {"p": 0.01, "r": 0.3, "1-h": 1.0, "1-k": 0.0}
    json.dumps(d)

    with pytest.raises(NetreproError, match="unknown link preset key 'bandwidth'"):
        LinkSpec.from_preset({"bandwidth": "43mbit"})
    with pytest.raises(NetreproError):
        LinkSpec.from_preset({"rtt": "5ms", "to_device": {"delay": "4ms"}, "to_peer": {"delay": "4ms"}})
    with pytest.raises(NetreproError):
        spec.override(rtt="2ms", delay_to_device="3ms")


def test_direction_cli_round_trip():
    d = Direction(
        delay_s=2.75e-3, rate_bps=43_000_000, gemodel=(0.01, 0.3, 1.0, 0.0), drop=("data:3", "syn:1")
    )
    cli = d.cli()
    assert "delay=0.00275" in cli and "rate=43000000" in cli  # the settings' names, in plain units
    assert "gemodel=0.01,0.3,1,0" in cli and "drop=data:3,syn:1" in cli
    assert d.serialisation_s(1514) == pytest.approx(1538 * 8 / 43e6)
    assert d.serialisation_s(42) == pytest.approx(84 * 8 / 43e6)


def test_bad_options_exit_2(tmp_path):
    binary = link_binary()
    base = [str(binary), "--device-sock", str(tmp_path / "a"), "--device-remote", str(tmp_path / "b")]
    peer = ["--peer-sock", str(tmp_path / "c"), "--peer-remote", str(tmp_path / "d")]
    cases = [
        (base + peer + ["--frobnicate", "1"], "--frobnicate"),
        (base + peer + ["--to-peer", "delay=5e-6,colour=blue"], "colour"),
        (base + peer + ["--to-device", "rate=fast"], "rate"),
        (base + peer + ["--to-device", "delay=7200"], "delay"),  # ranges come from the settings' table
        (base + peer + ["--to-device", "drop=data:0"], "data:0"),
        (base + peer + ["--seed"], "--seed"),
        (base + peer + ["--to-device", "overflow=spill"], "overflow"),
        (base + peer + ["--to-peer", "overflow=drop"], "overflow=drop"),
        (base + peer + ["--to-device", "sock_frames=many"], "sock_frames"),
        (base + peer + ["--to-device", "sock_frames=1001"], "sock_frames"),
        (base + peer + ["--snaplen", "300000"], "snaplen"),
        (base, "--tap"),
    ]
    for cmd, needle in cases:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
        assert proc.returncode == 2, cmd
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], proc.stderr


# ------------------------------------------------------------------ timing


def test_delay_each_direction(root):
    spec = LinkSpec(to_device=one_way(delay_s=0.010), to_peer=one_way(delay_s=0.020))
    late = {"to_peer": [], "to_device": []}
    with Bench(spec, root) as b:
        for i in range(20):
            sent_d = b.from_device(raw_frame(i))
            sent_p = b.from_peer(raw_frame(i, 200, PEER_MAC, DEV_MAC))
            (t_p, f_p), *_ = b.at_peer(1)
            (t_d, f_d), *_ = b.at_device(1)
            assert frame_number(f_p) == i and frame_number(f_d) == i
            late["to_peer"].append(t_p - sent_d - 20 * MS)
            late["to_device"].append(t_d - sent_p - 10 * MS)
    for name, errors in late.items():
        errors.sort()
        assert errors[0] >= 0, f"{name}: a frame arrived {-errors[0] / 1e3:.0f} us early"
        assert errors[len(errors) // 2] < 1 * MS, (
            f"{name}: median lateness {errors[len(errors) // 2] / 1e3:.0f} us"
        )
        assert errors[-3] < 1 * MS, f"{name}: lateness {[e // 1000 for e in errors]} us"
        assert errors[-1] < 10 * MS


@pytest.mark.parametrize(("size", "rate", "count"), [(1514, 50_000_000, 100), (42, 1_000_000, 60)])
def test_rate_serialisation_with_ethernet_overhead(root, size, rate, count):
    spec = LinkSpec(to_peer=one_way(rate_bps=rate))
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(count):
                b.from_device(raw_frame(i, size))
        got = b.at_peer(count)
    assert [frame_number(f) for _, f in got] == list(range(count))
    wire = wire_bytes(size) * 8 / rate * 1e9  # padded to 60 bytes, plus preamble, gap and FCS
    # from the first frame's arrival, so that a late start (a busy CPU) does not count
    assert got[-1][0] - got[0][0] == pytest.approx((count - 1) * wire, rel=0.10)
    gaps = [b_[0] - a[0] for a, b_ in itertools.pairwise(got)]
    assert statistics.median(gaps) == pytest.approx(wire, rel=0.10)


def test_token_bucket_burst(root):
    wire = wire_bytes(1514)
    spec = LinkSpec(to_peer=one_way(rate_bps=10_000_000, burst_bytes=10 * wire))
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(20):
                b.from_device(raw_frame(i))
        got = b.at_peer(20)
    assert len(got) == 20
    ser = wire * 8 / 10e6 * 1e9
    t0 = got[0][0]
    assert got[9][0] - t0 < 0.5 * ser  # the bucket's 10 frames pass at once
    assert got[19][0] - t0 == pytest.approx(10 * ser, rel=0.12)  # then the rate rules


def test_jitter_keeps_order_unless_reorder(root):
    results = {}
    for reorder in (False, True):
        sub = root / f"r{int(reorder)}"
        sub.mkdir()
        spec = LinkSpec(to_peer=one_way(delay_s=0.010, jitter_s=0.004, reorder=reorder), seed=3)
        with Bench(spec, sub) as b:
            sent = {}
            for i in range(40):
                sent[i] = b.from_device(raw_frame(i, 100))
                time.sleep(0.0003)
            got = b.at_peer(40)
        order = [frame_number(f) for _, f in got]
        assert sorted(order) == list(range(40))
        delays = [t - sent[frame_number(f)] for t, f in got]
        assert min(delays) >= 6 * MS
        results[reorder] = order
    assert results[False] == list(range(40))
    assert results[True] != list(range(40))


# ------------------------------------------------------------------ queue


def test_queue_limit_packets(root):
    # 100 kbit/s: 123 ms per frame on the line, so the burst is in the queue long before one leaves
    spec = LinkSpec(to_peer=one_way(rate_bps=100_000, limit_packets=10))
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(30):
                b.from_device(raw_frame(i))
        b.wait_arrivals("to_peer", 30)
        first = b.at_peer(1, timeout=1.0)
        counters = b.link.stop()
    assert [frame_number(f) for _, f in first] == [0]
    c = counters.to_peer
    assert c.frames_in == 30
    assert c.dropped["queue"] == 19 and c.dropped_total == 19
    assert c.frames_out + c.in_flight == 11  # 10 queued + the one on the line
    assert c.queue_hwm_pkts == 10
    assert c.queue_hwm_bytes == 10 * 1514
    drops = read_drops(b.link.drops_path)
    assert [d["frame"] for d in drops] == list(range(12, 31))
    assert {d["reason"] for d in drops} == {"queue"}
    assert {d["dir"] for d in drops} == {"to_peer"} and {d["len"] for d in drops} == {1514}


def test_queue_limit_bytes(root):
    spec = LinkSpec(to_peer=one_way(rate_bps=100_000, limit_packets=0, limit_bytes=5 * 1514))
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(12):
                b.from_device(raw_frame(i))
        b.wait_arrivals("to_peer", 12)
        counters = b.link.stop()
    c = counters.to_peer
    assert c.dropped["queue"] == 6 and c.frames_out + c.in_flight == 6
    assert c.queue_hwm_bytes == 5 * 1514 and c.queue_hwm_pkts == 5


# ------------------------------------------------------------------ loss


def _lossy_run(
    root: Path, direction: Direction, seed: int, count: int = 5000
) -> tuple[list[int], LinkCounters]:
    root.mkdir()
    spec = LinkSpec(to_peer=direction, seed=seed)
    with Bench(spec, root) as b:
        for i in range(count):
            b.from_device(raw_frame(i, 60))
            if i % 500 == 499:
                b.at_peer(10**6, timeout=0.001)  # keep the receive queue short
        b.wait_arrivals("to_peer", count)
        counters = b.link.stop()
    drops = read_drops(b.link.drops_path)
    return [d["frame"] for d in drops], counters


def test_random_loss_rate_and_determinism(root):
    lost_a, counters = _lossy_run(root / "a", one_way(loss=0.10), seed=11)
    lost_b, _ = _lossy_run(root / "b", one_way(loss=0.10), seed=11)
    lost_c, _ = _lossy_run(root / "c", one_way(loss=0.10), seed=12)
    # binomial(5000, 0.1): mean 500, sd 21; 5 sd either side
    assert 394 <= len(lost_a) <= 606
    assert counters.to_peer.dropped["loss"] == len(lost_a)
    assert counters.to_peer.frames_in == 5000
    assert counters.to_peer.frames_out + len(lost_a) == 5000
    assert lost_a == lost_b
    assert lost_a != lost_c


def test_gilbert_elliott_bursts(root):
    p, r = 0.05, 0.30  # stationary loss p/(p+r) = 14.3 %, mean burst 1/r = 3.3 frames
    lost, counters = _lossy_run(root / "ge", one_way(gemodel=(p, r, 1.0, 0.0)), seed=5)
    assert counters.to_peer.dropped["gemodel"] == len(lost)
    fraction = len(lost) / 5000
    assert fraction == pytest.approx(p / (p + r), abs=0.04)
    bursts, run = [], 1
    for a, b_ in itertools.pairwise(lost):
        if b_ == a + 1:
            run += 1
        else:
            bursts.append(run)
            run = 1
    bursts.append(run)
    mean_burst = statistics.mean(bursts)
    assert 2.5 < mean_burst < 4.5  # independent loss at this rate would give ~1.17


def test_drop_list_counts_data_segments_and_syns(root):
    spec = LinkSpec(to_device=one_way(drop=("data:3",)), to_peer=one_way(drop=("syn:1", "frame:5")))
    srv, dev = ("10.77.0.1", 5001), ("10.77.0.2", 40000)
    with Bench(spec, root) as b:
        # device -> peer: SYN (dropped: syn:1), SYN retransmitted (passes), ACK, ACK, FIN (frame:5)
        b.from_device(tcp_frame(dev[0], srv[0], dev[1], srv[1], 100, 0, SYN))
        b.from_device(tcp_frame(dev[0], srv[0], dev[1], srv[1], 100, 0, SYN))
        b.from_device(tcp_frame(dev[0], srv[0], dev[1], srv[1], 101, 5001, ACK))
        b.from_device(tcp_frame(dev[0], srv[0], dev[1], srv[1], 101, 5001, ACK))
        b.from_device(tcp_frame(dev[0], srv[0], dev[1], srv[1], 101, 5001, ACK | FIN))
        # peer -> device: SYN-ACK, data 1, pure ACK, data 2, data 2 again (retransmission = 3rd data), data 3
        payload = b"x" * 100
        segs = [
            tcp_frame(srv[0], dev[0], srv[1], dev[1], 5000, 101, SYN | ACK),
            tcp_frame(srv[0], dev[0], srv[1], dev[1], 5001, 101, ACK | PSH, payload),
            tcp_frame(srv[0], dev[0], srv[1], dev[1], 5101, 101, ACK),
            tcp_frame(srv[0], dev[0], srv[1], dev[1], 5101, 101, ACK | PSH, payload),
            tcp_frame(srv[0], dev[0], srv[1], dev[1], 5101, 101, ACK | PSH, payload),
            tcp_frame(srv[0], dev[0], srv[1], dev[1], 5201, 101, ACK | PSH, payload),
        ]
        for seg in segs:
            b.from_peer(seg)
        at_device = [f for _, f in b.at_device(6, timeout=0.5)]
        at_peer = [f for _, f in b.at_peer(5, timeout=0.5)]
        counters = b.link.stop()
    assert at_device == [segs[0], segs[1], segs[2], segs[3], segs[5]]
    assert len(at_peer) == 3 and at_peer[0][47] == SYN  # the retransmitted SYN
    assert counters.to_device.dropped["droplist"] == 1 and counters.to_peer.dropped["droplist"] == 2
    drops = read_drops(b.link.drops_path)
    by_dir = {(d["dir"], d["frame"]): d for d in drops}
    assert set(by_dir) == {("to_device", 5), ("to_peer", 1), ("to_peer", 5)}
    d = by_dir[("to_device", 5)]
    assert d["reason"] == "droplist" and d["len"] == len(segs[4])
    assert d["summary"].startswith("TCP 10.77.0.1:5001 > 10.77.0.2:40000 [PSH,ACK] seq=5101")
    assert d["summary"].endswith("len=100")
    assert "[SYN]" in by_dir[("to_peer", 1)]["summary"]


def test_unreachable_device_counts_as_drop(root):
    spec = LinkSpec()
    with Bench(spec, root, device_present=False) as b:
        for i in range(3):
            b.from_peer(raw_frame(i, 100, PEER_MAC, DEV_MAC))
        b.wait_arrivals("to_device", 3)
        counters = b.link.stop()
    assert counters.to_device.dropped["unreachable"] == 3 and counters.to_device.frames_out == 0
    assert {d["reason"] for d in read_drops(b.link.drops_path)} == {"unreachable"}
    assert len(read_pcap(b.link.pcap_path)) == 0  # never handed to the device


# ------------------------------------------------------------------ a device that cannot take a frame


def _max_dgram_qlen() -> int:
    """What a unix datagram socket queues before its senders block (net.unix.max_dgram_qlen + 1)."""
    return int(Path("/proc/sys/net/unix/max_dgram_qlen").read_text()) + 1


def _to_a_device_that_stops_reading(root: Path, spec: LinkSpec, count: int = 30) -> tuple[Bench, LinkCounters]:
    """count full-size frames toward a device socket nobody reads; the counters once all are in.

    The device socket is not connected back to the link, as QEMU's is not (it sends with
    sendto), so its queue takes max_dgram_qlen frames before the link's sends would block."""
    b = Bench(spec, root, connect_device=False)
    b.__enter__()
    for i in range(count):
        b.from_peer(raw_frame(i, 1514, PEER_MAC, DEV_MAC))
    counters = b.wait_arrivals("to_device", count)
    deadline = time.monotonic() + 2
    while counters.to_device.frames_out + counters.to_device.dropped_total + counters.to_device.in_flight < count:
        assert time.monotonic() < deadline, counters
        counters = b.link.counters()
    return b, counters


@pytest.mark.parametrize("sock_frames", [2, 4])
def test_overflow_drop_loses_what_the_device_cannot_take(root, sock_frames):
    # A real NIC with a full RX ring drops what comes in on the wire: nothing is held back.
    spec = LinkSpec(to_device=one_way(overflow="drop", sock_frames=sock_frames))
    b, snap = _to_a_device_that_stops_reading(root, spec)
    try:
        c = snap.to_device
        assert c.frames_in == 30 and c.in_flight == 0  # none held
        assert c.frames_out == sock_frames  # what the socket toward the device holds unread
        assert c.dropped["device-full"] == 30 - sock_frames == c.dropped_total
        assert c.overflow == "drop" and c.sock_frames == sock_frames and c.out_sndbuf_bytes > 0
        got = b.at_device(30, timeout=0.3)
        assert [frame_number(f) for _, f in got] == list(range(sock_frames))
        # once the device reads again, frames get through again
        for i in range(100, 100 + sock_frames):
            b.from_peer(raw_frame(i, 1514, PEER_MAC, DEV_MAC))
            time.sleep(0.005)  # one at a time: the test reads them only afterwards
        assert [frame_number(f) for _, f in b.at_device(sock_frames)] == list(range(100, 100 + sock_frames))
        counters = b.link.stop()
    finally:
        b.__exit__(None, None, None)
    assert counters.to_device.frames_out == 2 * sock_frames
    assert counters.dropped["device-full"] == 30 - sock_frames
    drops = read_drops(b.link.drops_path)
    assert [d["frame"] for d in drops] == list(range(sock_frames + 1, 31))
    assert {(d["dir"], d["reason"], d["len"]) for d in drops} == {("to_device", "device-full", 1514)}
    assert len(read_pcap(b.link.pcap_path)) == 2 * sock_frames  # dropped frames are not in the capture


def test_overflow_drop_without_a_socket_limit_stops_at_the_kernels_queue(root):
    spec = LinkSpec(to_device=one_way(overflow="drop"))
    b, snap = _to_a_device_that_stops_reading(root, spec)
    b.__exit__(None, None, None)
    qlen = _max_dgram_qlen()
    assert snap.to_device.frames_out == qlen and snap.to_device.sock_frames == 0
    assert snap.to_device.dropped["device-full"] == 30 - qlen and snap.to_device.in_flight == 0


def test_overflow_hold_is_the_default_and_loses_nothing(root):
    assert Direction().overflow == "hold" and Direction().sock_frames == 0
    b, snap = _to_a_device_that_stops_reading(root, LinkSpec())
    try:
        c = snap.to_device
        assert c.dropped_total == 0 and c.overflow == "hold"
        assert c.frames_out == _max_dgram_qlen() and c.in_flight == 30 - c.frames_out  # held by the link
        time.sleep(0.3)  # the device takes nothing for a while: the held frames wait, and are not late
        got = b.at_device(30)  # the device reads again: everything arrives, in order
        assert [frame_number(f) for _, f in got] == list(range(30))
        counters = b.link.stop()
    finally:
        b.__exit__(None, None, None)
    assert counters.to_device.frames_out == 30 and counters.total_dropped == 0
    assert read_drops(b.link.drops_path) == []
    # lateness is the link's own: the time the receiver could not take a frame does not count
    assert counters.late_ms_max < LINK_LATE_MS / 5, counters.to_device


def test_a_stalled_link_hands_its_frames_over_late(root):
    """The host stalling the link (here SIGSTOP, 600 ms) while it holds frames due 200 ms after they came in
    hands them over ~400 ms late against their schedule: what a run's `link_late` judges."""
    spec = LinkSpec(to_peer=one_way(delay_s=0.200))
    with Bench(spec, root) as b:
        for i in range(5):
            b.from_device(raw_frame(i, 500))
        b.wait_arrivals("to_peer", 5)  # in the link, not yet due
        with b.frozen():
            time.sleep(0.6)
        assert [frame_number(f) for _, f in b.at_peer(5)] == list(range(5))
        counters = b.link.stop()
    assert 300 <= counters.to_peer.late_us_max / 1000 < 2000
    assert counters.late_ms_max == counters.to_peer.late_us_max / 1000 > LINK_LATE_MS
    assert counters.to_device.late_us_max == 0


def test_overflow_in_the_spec_and_from_the_platform(tmp_path):
    from harness.rig.platform import load_platform
    from harness.rig.session import Session

    with pytest.raises(NetreproError, match="overflow"):
        Direction(overflow="spill")
    d = Direction(overflow="drop", sock_frames=4)
    assert "overflow=drop" in d.cli() and "sock_frames=4" in d.cli()
    assert d.as_dict()["overflow"] == "drop" and d.as_dict()["sock_frames"] == 4

    xbox = load_platform("xbox")
    text = xbox.path.read_text()
    preset = LinkSpec.from_preset(xbox.link_preset("ethernet"))
    variants = {}
    for name, nic_lines in (("hold", ""), ("drop", 'rx_overflow = "drop"\n'),
                            ("drop6", 'rx_overflow = "drop"\nrx_overflow_frames = 6\n')):
        body = "\n".join(line for line in text.splitlines() if not line.startswith("rx_overflow"))
        path = tmp_path / f"{name}.toml"
        path.write_text(body.replace("[nic]\n", "[nic]\n" + nic_lines) + "\n")
        variants[name] = Session.link_as_run(preset, load_platform(str(path)))
    assert variants["hold"].to_device.overflow == "hold" and variants["hold"].to_device.sock_frames == 0
    burst = int(xbox.nic.get("rx_burst_frames", 0))
    assert variants["drop"].to_device.overflow == "drop"
    assert variants["drop"].to_device.sock_frames == max(2, burst)  # the pacing's burst fits
    assert variants["drop6"].to_device.sock_frames == 6
    assert variants["drop"].to_peer.overflow == "hold"
    assert variants["drop"].as_dict()["to_device"]["overflow"] == "drop"  # what link.json records
    bad = tmp_path / "bad.toml"
    bad.write_text(body.replace("[nic]\n", '[nic]\nrx_overflow = "spill"\n', 1) + "\n")
    with pytest.raises(NetreproError, match="rx_overflow") as err:
        load_platform(str(bad))
    assert "\n" not in str(err.value)


def test_a_stand_in_nic_sends_no_faster_than_its_wire():
    """The N6's gigabit preset over a 10/100 stand-in NIC: 100 Mbit/s each way as run; a slower preset
    keeps its own rate, and a preset without a rate gets the wire's."""
    from harness.rig.platform import load_platform
    from harness.rig.session import Session

    n6 = load_platform("openmv-n6")
    wire = parse_rate(n6.nic["wire_rate"])
    gigabit = LinkSpec.from_preset(n6.link_preset("ethernet"))
    assert gigabit.to_peer.rate_bps > wire
    as_run = Session.link_as_run(gigabit, n6)
    assert as_run.to_peer.rate_bps == wire and as_run.to_device.pace_bps == wire
    assert Session.link_as_run(LinkSpec.from_preset({"rate": "43mbit"}), n6).to_peer.rate_bps == 43_000_000
    assert Session.link_as_run(LinkSpec(), n6).to_peer.rate_bps == wire


# ------------------------------------------------------------------ capture, stats, process


def test_capture_device_side_timestamps(root):
    spec = LinkSpec(to_device=one_way(delay_s=0.020), to_peer=one_way(delay_s=0.020), snaplen=128)
    with Bench(spec, root) as b:
        sent = []
        for i in range(5):
            sent.append(("to_peer", i, b.from_device(raw_frame(i, 1514))))
            sent.append(("to_device", i, b.from_peer(raw_frame(100 + i, 300, PEER_MAC, DEV_MAC))))
            time.sleep(0.002)
        at_device = b.at_device(5)
        b.at_peer(5)
        counters = b.link.stop()
    records = read_pcap(b.link.pcap_path)
    assert len(records) == 10 == counters.total_frames_out
    stamps = [t for t, _ in read_pcap_ns(b.link.pcap_path)]  # exact: floats keep only ~240 ns here
    assert stamps == sorted(stamps)
    numbers = [frame_number(f) for _, f in records]
    assert numbers == [0, 1, 2, 3, 4, 100, 101, 102, 103, 104]  # device->peer stamped on arrival
    for t, (_, frame), (_, _i, t_sent) in zip(stamps[:5], records[:5], [s for s in sent if s[0] == "to_peer"],
                                              strict=True):
        assert len(frame) == 128  # snap length
        assert 0 <= t - t_sent < 5 * MS  # not the 20 ms delay later
    for t, (_, frame), (t_rx, _) in zip(stamps[5:], records[5:], at_device, strict=True):
        assert len(frame) == 128
        assert abs(t - t_rx) < 1 * MS  # peer->device stamped when handed to the device
    data = Path(b.link.pcap_path).read_bytes()
    magic, major, minor, _, _, snaplen, linktype = struct.unpack("<IHHiIII", data[:24])
    assert (magic, major, minor, snaplen, linktype) == (0xA1B23C4D, 2, 4, 128, 1)
    orig_len = struct.unpack("<IIII", data[24:40])[3]
    assert orig_len == 1514


def test_stats_json_and_snapshot(root):
    spec = LinkSpec(to_peer=one_way(delay_s=0.001))
    with Bench(spec, root) as b:
        for i in range(7):
            b.from_device(raw_frame(i, 500))
        b.at_peer(7)
        snap = b.wait_arrivals("to_peer", 7)
        assert not snap.final and snap.to_peer.frames_out == 7
        counters = b.link.stop()
    raw = json.loads(b.link.stats_path.read_text())
    assert raw["final"] is True and raw["elapsed_s"] > 0
    for name in ("to_device", "to_peer"):
        for key in ("frames_in", "bytes_in", "frames_out", "bytes_out", "queue_hwm_pkts", "queue_hwm_bytes"):
            assert isinstance(raw[name][key], int)
        assert set(raw[name]["dropped"]) == {"loss", "gemodel", "droplist", "queue", "unreachable", "device-full"}
        assert raw[name]["overflow"] == "hold" and raw[name]["sock_frames"] == 0
    assert counters.to_peer.bytes_in == counters.to_peer.bytes_out == 3500
    assert counters.total_frames_out == 7 and counters.total_dropped == 0
    assert counters.to_peer.late_us_max < 5000


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_stop_leaves_no_process(root):
    b = Bench(LinkSpec(), root)
    with b:
        pid = b.link.pid
        assert pid and not _gone(pid)
    assert _gone(pid)
    assert not (root / "link-dev.sock").exists()

    sub = root / "again"
    sub.mkdir()
    with pytest.raises(RuntimeError), Bench(LinkSpec(), sub) as b2:
        pid = b2.link.pid
        raise RuntimeError("the test fails half-way")
    assert _gone(pid)


def test_start_failure_names_the_log(root):
    (root / "run").mkdir()
    link = Link(
        LinkSpec(),
        device_sock=root / "missing-dir" / "dev.sock",
        device_remote=root / "qemu.sock",
        run_dir=root / "run",
        peer_sock=root / "p.sock",
        peer_remote=root / "peer.sock",
    )
    with pytest.raises(NetreproError, match=r"cannot bind"):
        link.start(timeout=5)
    assert link.proc is not None and link.proc.poll() is not None


def test_native_build_is_cached_and_errors_are_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("NETREPRO_CACHE", str(tmp_path / "cache"))
    good = tmp_path / "good.c"
    good.write_text("int main(void) { return 0; }\n")
    first = build_tool("good", [good])
    assert first.parent == tmp_path / "cache" / "bin" and first.name.startswith("good-")
    stamp = first.stat().st_mtime_ns
    assert build_tool("good", [good]) == first and first.stat().st_mtime_ns == stamp
    assert build_tool("good", [good], cflags=["-O0"]) != first  # the flags are part of the name
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return nope; }\n")
    with pytest.raises(NetreproError, match=r"building bad failed: .*error.*nope") as err:
        build_tool("bad", [bad])
    assert "\n" not in str(err.value)
    assert not [
        p for p in (tmp_path / "cache" / "bin").iterdir() if p.name.startswith(".")
    ]  # no temp files left
    monkeypatch.setenv("CC", "no-such-compiler")
    with pytest.raises(NetreproError, match="no C compiler"):
        build_tool("good", [good])
