"""The emulated link's loss through real sockets: random loss, Gilbert-Elliott, the drop list, and a device that
is not there (tests/linkbench.py runs the link).
"""

from __future__ import annotations

import itertools
import statistics
from pathlib import Path

import pytest
from linkbench import ACK, DEV_MAC, FIN, PEER_MAC, PSH, SYN, Bench, one_way, raw_frame, tcp_frame

from harness.link import Direction, LinkCounters, LinkSpec, read_drops, read_pcap

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


def test_a_long_drop_list_in_any_order_drops_exactly_its_frames(root):
    """A capture's losses replayed (report from-capture) are thousands of entries: more than the link once held,
    given in any order, ranges overlapping."""
    single = list(range(4999, 0, -3))  # 1667 entries, the last frame first
    ranges = ["frame:100-140", "frame:120-160", "frame:4990-5000"]
    drop = tuple(f"frame:{n}" for n in single) + tuple(ranges)
    lost, counters = _lossy_run(root / "list", one_way(drop=drop), seed=1)
    expected = set(single) | set(range(100, 161)) | set(range(4990, 5001))
    assert len(drop) > 1000 and sorted(lost) == sorted(expected)
    assert counters.to_peer.dropped["droplist"] == len(expected)


def test_seq_entries_drop_the_first_frame_carrying_those_bytes(root):
    """seq:N counts bytes from the SYN as Wireshark does (the first byte of data is 1) and drops only a frame that
    first carries one: never a retransmission, and a SYN that opens a connection starts the count again."""
    spec = LinkSpec(to_device=one_way(drop=("seq:101", "seq:250-301", "seq:1")))
    srv, dev = ("10.77.0.1", 5001), ("10.77.0.2", 40000)
    isn = 2**32 - 150  # the sequence numbers wrap inside the transfer

    def data(offset: int, size: int = 100, start: int = isn) -> bytes:
        return tcp_frame(srv[0], dev[0], srv[1], dev[1], (start + 1 + offset) % 2**32, 101, ACK | PSH, b"x" * size)

    segs = [tcp_frame(srv[0], dev[0], srv[1], dev[1], isn, 101, SYN | ACK),
            data(0),      # bytes 1-100: seq:1 drops it
            data(0),      # 1-100 again: a retransmission passes
            data(100),    # 101-200: seq:101
            data(200),    # 201-300: seq:250-301
            data(300),    # 301-400: seq:250-301 (byte 301)
            data(400),    # 401-500: passes
            data(100),    # 101-200 again: passes
            tcp_frame(srv[0], dev[0], srv[1], dev[1], 7000, 101, SYN | ACK),  # a new connection
            data(0, start=7000)]  # its bytes 1-100: seq:1 again
    with Bench(spec, root) as b:
        for seg in segs:
            b.from_peer(seg)
        at_device = [f for _, f in b.at_device(5, timeout=0.5)]
        counters = b.link.stop()
    assert at_device == [segs[0], segs[2], segs[6], segs[7], segs[8]]
    assert counters.to_device.dropped["droplist"] == 5
    assert [d["frame"] for d in read_drops(b.link.drops_path)] == [2, 4, 5, 6, 10]
