"""The emulated link's timing stages through real sockets: the delay, the rate, the token bucket, the jitter, and
the queue in front of the line (tests/linkbench.py runs the link).
"""

from __future__ import annotations

import itertools
import statistics
import time

import pytest
from linkbench import DEV_MAC, MS, PEER_MAC, Bench, frame_number, one_way, raw_frame

from harness.core.ethernet import wire_bytes
from harness.link import LinkSpec, read_drops

# ------------------------------------------------------------------ timing


def test_delay_each_direction(root):
    spec = LinkSpec(to_device=one_way(delay_s=0.010), to_peer=one_way(delay_s=0.020))
    late = {"to_peer": [], "to_device": []}
    delay = {"to_peer": 20 * MS, "to_device": 10 * MS}
    with Bench(spec, root, capture_at="both") as b:
        for i in range(20):
            b.from_device(raw_frame(i))
            b.from_peer(raw_frame(i, 200, PEER_MAC, DEV_MAC))
            (_, f_p), *_ = b.at_peer(1)
            (_, f_d), *_ = b.at_device(1)
            assert frame_number(f_p) == i and frame_number(f_d) == i
        host = {name: b.late_ns(name) for name in late}
        b.link.stop()
    for (name, _), (into, out) in b.passages().items():  # the link's own stamps, not this process's clock
        late[name].append(out - into - delay[name])
    for name, errors in late.items():
        errors.sort()
        assert errors[0] >= 0, f"{name}: a frame arrived {-errors[0] / 1e3:.0f} us early"
        # the bounds are the link's; what a busy host made it late by, it measured itself and is added
        assert errors[len(errors) // 2] < 1 * MS + host[name], (
            f"{name}: median lateness {errors[len(errors) // 2] / 1e3:.0f} us (host {host[name] / 1e3:.0f} us)"
        )
        assert errors[-3] < 1 * MS + host[name], f"{name}: lateness {[e // 1000 for e in errors]} us"
        assert errors[-1] < 10 * MS + host[name]


@pytest.mark.parametrize(("size", "rate", "count"), [(1514, 50_000_000, 100), (42, 1_000_000, 60)])
def test_rate_serialisation_with_ethernet_overhead(root, size, rate, count):
    spec = LinkSpec(to_peer=one_way(rate_bps=rate))
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(count):
                b.from_device(raw_frame(i, size))
        got = b.at_peer(count)
        host = b.late_ns("to_peer")
    assert [frame_number(f) for _, f in got] == list(range(count))
    wire = wire_bytes(size) * 8 / rate * 1e9  # padded to 60 bytes, plus preamble, gap and FCS
    # from the first frame's arrival, so that a late start does not count; every stamp is at most `host`
    # after its schedule (the link's own measure of a busy host), so a span or a gap is off by at most that
    span = got[-1][0] - got[0][0]
    assert abs(span - (count - 1) * wire) <= 0.10 * (count - 1) * wire + host, (span, host)
    gaps = [b_[0] - a[0] for a, b_ in itertools.pairwise(got)]
    assert abs(statistics.median(gaps) - wire) <= 0.10 * wire + host, (statistics.median(gaps), host)


def test_token_bucket_burst(root):
    wire = wire_bytes(1514)
    spec = LinkSpec(to_peer=one_way(rate_bps=10_000_000, burst_bytes=10 * wire))
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(20):
                b.from_device(raw_frame(i))
        got = b.at_peer(20)
        host = b.late_ns("to_peer")  # the link's own measure of how late a busy host made it
    assert len(got) == 20
    ser = wire * 8 / 10e6 * 1e9
    t0 = got[0][0]
    assert got[9][0] - t0 < 0.5 * ser + host  # the bucket's 10 frames pass at once
    assert abs(got[19][0] - t0 - 10 * ser) <= 0.12 * 10 * ser + host  # then the rate rules


def test_jitter_keeps_order_unless_reorder(root):
    results = {}
    for reorder in (False, True):
        sub = root / f"r{int(reorder)}"
        sub.mkdir()
        spec = LinkSpec(to_peer=one_way(delay_s=0.010, jitter_s=0.004, reorder=reorder), seed=3)
        with Bench(spec, sub, capture_at="both") as b:
            for i in range(40):
                b.from_device(raw_frame(i, 100))
                time.sleep(0.0003)
            got = b.at_peer(40)
        order = [frame_number(f) for _, f in got]
        assert sorted(order) == list(range(40))
        delays = [out - into for into, out in b.passages().values()]  # the link's own stamps
        assert len(delays) == 40 and min(delays) >= 6 * MS
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
