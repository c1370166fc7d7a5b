"""The shared medium (medium = "shared"): both directions take turns (TXOPs) on one 802.11n channel,
aggregating frames, with block acks, fair turns and MAC retries (synthetic frames, real sockets).

A turn lasts access (SIFS + aifsn slots + cwmin/2 slots) + preamble + its A-MPDU's bits at phy_rate
+ signal extension + SIFS + block ack + signal extension; `turn_s` (harness/link/air.py, what the
analysis uses for the air's capacity) writes it out again in Python, so that the link's C arithmetic
is checked against an independent copy, exactly through the airtime counters and within tolerances
on the wall clock.
"""

from __future__ import annotations

import itertools
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import pytest

from harness.core.errors import NetreproError
from harness.core.ethernet import wire_bytes
from harness.link import LinkSpec, read_drops, read_pcap
from harness.link.air import air_bytes, frames_per_turn, saturated_rate_bps, turn_s

sys.path.insert(0, str(Path(__file__).resolve().parent))
from linkbench import DEV_MAC, MS, PEER_MAC, Bench, frame_number, one_way, raw_frame

US = 1e-6


@pytest.fixture
def root():
    path = Path(tempfile.mkdtemp(prefix="nra-", dir="/tmp"))  # unix socket paths are short
    yield path
    shutil.rmtree(path, ignore_errors=True)


def shared(**settings) -> LinkSpec:
    return LinkSpec.from_preset({"medium": "shared", **settings})


def bursts(got: list[tuple[int, bytes]], gap_ns: float) -> list[list[int]]:
    """The frame numbers delivered together: a new burst after a silence of gap_ns."""
    groups: list[list[int]] = []
    last = None
    for t, frame in got:
        if last is None or t - last > gap_ns:
            groups.append([])
        groups[-1].append(frame_number(frame))
        last = t
    return groups


# ------------------------------------------------------------------ the settings


def test_the_defaults_are_80211n_at_2_4_ghz():
    spec = LinkSpec()
    assert spec.medium == "wire"  # nothing changes unless a preset asks for the air
    assert (spec.phy_rate_bps, spec.aifsn, spec.cwmin) == (65_000_000, 2, 15)
    assert (spec.slot_s, spec.sifs_s) == pytest.approx((9 * US, 10 * US))
    assert spec.sifs_s + spec.aifsn * spec.slot_s == pytest.approx(28 * US)  # DIFS
    assert (spec.preamble_s, spec.signal_ext_s, spec.blockack_s) == pytest.approx((36 * US, 6 * US, 32 * US))
    assert (spec.agg_frames, spec.agg_bytes, spec.agg_time_s) == (64, 65535, 5.484e-3)
    assert (spec.fer, spec.retry_limit, spec.mpdu_overhead_bytes) == (0.0, 7, 28)
    # one full-size frame: 28 + 67.5 us access, 36 us preamble, 1544 bytes at 65 Mbit/s, 6 + 10 + 32 + 6 us
    assert turn_s(spec, [1514]) == pytest.approx((95.5 + 36 + 1544 * 8 / 65 + 6 + 10 + 32 + 6) * US)
    # the 5.484 ms PPDU limits a turn of full-size frames to 28 at 65 Mbit/s, before 64 frames or 65535 bytes do
    assert (5.484e-3 - 36 * US) * 65e6 / 8 // 1544 == 28
    spec = shared(slot="0.02ms", fer="1%", retry_limit=4, to_peer={"delay": "2ms"})
    assert (spec.medium, spec.slot_s, spec.fer, spec.retry_limit) == ("shared", 2e-5, 0.01, 4)
    assert LinkSpec.from_dict(json.loads(json.dumps(spec.as_dict()))) == spec


# ------------------------------------------------------------------ (1) the airtime arithmetic


def test_one_frame_a_turn_takes_the_formulas_time(root):
    """Frames sent one at a time each take a turn of their own: the airtime counter is exactly n turns,
    and each frame arrives a turn (plus the one-way delay) after it was sent."""
    spec = shared(to_peer={"delay": "2ms"})
    turn = turn_s(spec, [1514])
    with Bench(spec, root, capture_at="both") as b:
        for i in range(6):
            b.from_device(raw_frame(i))
            (_, frame), *_ = b.at_peer(1)
            assert frame_number(frame) == i
        counters = b.link.stop()
    late = [out - into - (turn + 2e-3) * 1e9 for into, out in b.passages().values()]  # the link's own stamps
    c = counters.to_peer
    assert counters.medium == "shared" and counters.txops_per_s > 0
    assert c.txops == 6 and c.frames_out == 6 and c.air_retries == 0
    assert c.airtime_s == pytest.approx(6 * turn, abs=1e-8)
    assert counters.to_device.txops == 0 and counters.to_device.airtime_s == 0
    late.sort()
    host = c.late_us_max * 1000  # the link's own measure of how late a busy host made it hand a frame over
    assert late[0] >= -50_000, f"a frame arrived {-late[0] / 1e3:.0f} us before its turn ended"
    assert late[len(late) // 2] < 1 * MS + host, f"lateness {[x // 1000 for x in late]} us, host {host / 1e3} us"


def test_turns_are_in_the_boards_time(root):
    """Device time: with dilation D a turn takes D times as long on the link's clock, and the airtime counter
    reads in the board's time, as every other figure of the link does."""
    spec = shared(phy_rate="6.5mbit")
    turn, dilation = turn_s(spec, [1514]), 3.0
    bench = Bench(spec, root, capture_at="both")
    bench.link.dilation = dilation
    with bench as b:
        for i in range(4):
            b.from_device(raw_frame(i))
            assert len(b.at_peer(1)) == 1
        counters = b.link.stop()
    # the link's own stamps, in the board's time: a turn kept in wall time would read turn / D, far below 0
    late = [out - into - turn * 1e9 for into, out in b.passages().values()]
    assert counters.to_peer.txops == 4 and counters.to_peer.airtime_s == pytest.approx(4 * turn, abs=1e-8)
    host = counters.to_peer.late_us_max * 1000  # the link's lateness, in board ns
    assert min(late) >= -50_000 and statistics.median(late) < 1 * MS + host, f"lateness {[x // 1000 for x in late]} us"


def test_an_aggregated_turn_and_the_frame_limit(root):
    """16 frames queued at once with agg_frames 8: two turns of 8, delivered in two bursts a turn apart.
    A long access (50 us slots, CWmin 1023: 25.6 ms) lets every frame arrive before the first A-MPDU is built;
    agg_time 0 lifts the PPDU's 5.484 ms (which would allow 6 of these frames at 10 Mbit/s)."""
    spec = shared(phy_rate="10mbit", slot="50us", cwmin=1023, agg_frames=8, agg_time="0")
    turn = turn_s(spec, [1000] * 8)
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(16):
                b.from_device(raw_frame(i, 1000))
        got = b.at_peer(16)
        counters = b.link.stop()
    assert [frame_number(f) for _, f in got] == list(range(16))
    c = counters.to_peer
    assert c.txops == 2 and c.airtime_s == pytest.approx(2 * turn, abs=1e-8)
    assert c.queue_hwm_pkts == 16 and c.in_flight == 0
    # a turn's frames leave the air together; the second burst one turn after the first. The link never delivers
    # early, so frames sent one by one at the PHY rate could spread a burst no less than 7 frames' air time
    # (5.8 ms); the spread measured includes the link's 8 writes in a row to the peer's socket, a few us each on a
    # quiet host, 0.35 ms each once in a CI run (2.46 ms a burst), so the faster burst is held to 0.6 of that
    one_by_one_ns = 7 * air_bytes(spec, 1000) * 8 / spec.phy_rate_bps * 1e9
    assert min(got[7][0] - got[0][0], got[15][0] - got[8][0]) < 0.6 * one_by_one_ns
    assert abs(got[8][0] - got[0][0] - turn * 1e9) <= 2 * MS + c.late_us_max * 1000  # plus the link's own lateness


# ------------------------------------------------------------------ (3) the aggregation limits


@pytest.mark.parametrize(("limit", "per_turn"), [({"agg_bytes": 3100}, 3), ({"agg_time": "0.7ms"}, 5),
                                                 ({"agg_frames": 4}, 4)])
def test_aggregation_limits(root, limit, per_turn):
    """At 65 Mbit/s a 1000-byte frame is 1028 bytes and 126.5 us on the air: 3100 bytes carry 3 of them,
    a 0.7 ms PPDU 5 (36 us preamble + 5 * 126.5 us), and agg_frames 4 four."""
    spec = shared(slot="50us", cwmin=1023, **limit)
    count = 4 * per_turn
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(count):
                b.from_device(raw_frame(i, 1000))
        got = b.at_peer(count)
        counters = b.link.stop()
    assert [frame_number(f) for _, f in got] == list(range(count))
    c = counters.to_peer
    assert c.txops == 4  # count / per_turn: no turn carried more than the limit, none fewer
    assert c.airtime_s == pytest.approx(4 * turn_s(spec, [1000] * per_turn), abs=1e-8)
    # the air's capacity the analysis takes as the link's rate: what these full turns carried, in their time
    assert frames_per_turn(spec, 1000) == per_turn
    assert saturated_rate_bps(spec, 1000) == pytest.approx(count * wire_bytes(1000) * 8 / c.airtime_s, rel=1e-6)
    firsts = [got[j * per_turn][0] for j in range(4)]
    assert statistics.median(b_ - a for a, b_ in itertools.pairwise(firsts)) == pytest.approx(
        turn_s(spec, [1000] * per_turn) * 1e9, rel=0.10)
    assert sorted(len(g) for g in bursts(got, 10 * MS))[-1] >= per_turn


def test_the_queue_limit_counts_what_waits_for_the_air(root):
    spec = shared(slot="50us", cwmin=1023, limit=5)
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(20):
                b.from_device(raw_frame(i, 500))
        b.wait_arrivals("to_peer", 20)
        got = b.at_peer(5)
        counters = b.link.stop()
    c = counters.to_peer
    assert [frame_number(f) for _, f in got] == list(range(5))
    assert c.dropped["queue"] == 15 and c.frames_out == 5 and c.queue_hwm_pkts == 5 and c.txops == 1
    assert {d["reason"] for d in read_drops(b.link.drops_path)} == {"queue"}


# ------------------------------------------------------------------ (2) fair turns


def test_two_busy_directions_share_the_air_evenly(root):
    spec = shared()
    count = 300
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(count):
                b.from_device(raw_frame(i))
                b.from_peer(raw_frame(i, 1514, PEER_MAC, DEV_MAC))
        at_peer = b.at_peer(count, timeout=5)
        at_device = b.at_device(count, timeout=5)
        counters = b.link.stop()
    assert [frame_number(f) for _, f in at_peer] == list(range(count))
    assert [frame_number(f) for _, f in at_device] == list(range(count))
    dev, peer = counters.to_device, counters.to_peer
    assert dev.airtime_s == pytest.approx(peer.airtime_s, rel=0.03)
    assert abs(dev.txops - peer.txops) <= 2
    assert min(dev.txops, peer.txops) >= count // 28  # a turn carries at most 28 full-size frames (5.484 ms)
    # interleaved on the wall clock: each direction finishes as the air's whole work does, not half-way
    busy = (dev.airtime_s + peer.airtime_s) * 1e9
    start = min(at_peer[0][0], at_device[0][0])
    host = max(dev.late_us_max, peer.late_us_max) * 1000  # the link's own measure of how late a busy host made it
    assert abs(at_peer[-1][0] - at_device[-1][0]) < 20 * MS + host
    assert 0.9 * busy - host < max(at_peer[-1][0], at_device[-1][0]) - start < busy + 30 * MS + host
    assert counters.txops_per_s > 0 and counters.total_dropped == 0


# ------------------------------------------------------------------ (4) frame errors and retries


def test_frame_errors_below_the_retry_limit_lose_nothing(root):
    spec = shared(fer="20%", retry_limit=10)  # a frame is lost for good with 0.2^10 = 1e-7
    count = 200
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(count):
                b.from_device(raw_frame(i))
        got = b.at_peer(count, timeout=5)
        counters = b.link.stop()
    assert [frame_number(f) for _, f in got] == list(range(count))  # in order: the reorder buffer holds them
    c = counters.to_peer
    assert c.frames_out == count and c.dropped_total == 0
    assert 15 <= c.air_retries <= 110  # 200 * 0.2 / 0.8 = 50 expected
    assert c.txops > count / 28


def test_frames_that_exhaust_their_retries_are_dropped_as_air(root):
    spec = shared(fer="100%", retry_limit=3)
    with Bench(spec, root) as b:
        for i in range(10):
            b.from_device(raw_frame(i, 300))
        b.wait_arrivals("to_peer", 10)
        assert b.at_peer(1, timeout=0.3) == []
        counters = b.link.stop()
    c = counters.to_peer
    assert c.dropped["air"] == 10 == c.dropped_total and c.frames_out == 0 and c.in_flight == 0
    assert c.air_retries == 20  # three transmissions each
    drops = read_drops(b.link.drops_path)
    assert [(d["dir"], d["reason"], d["frame"], d["len"]) for d in drops] == [
        ("to_peer", "air", n, 300) for n in range(1, 11)]
    assert len(read_pcap(b.link.pcap_path)) == 10  # captured on arrival from the device, as on a wire
    raw = json.loads(b.link.stats_path.read_text())
    assert raw["medium"] == "shared" and raw["to_peer"]["dropped"]["air"] == 10


def _lossy(root: Path, seed: int) -> tuple[list[int], list[int], object]:
    root.mkdir()
    spec = shared(fer="50%", retry_limit=1, seed=seed)  # one transmission each: lost with 1/2
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(400):
                b.from_device(raw_frame(i, 100))
        b.wait_arrivals("to_peer", 400)
        got = b.at_peer(400, timeout=2)
        counters = b.link.stop()
    return [frame_number(f) for _, f in got], [d["frame"] for d in read_drops(b.link.drops_path)], counters


def test_frame_error_rate_without_retries_and_its_seed(root):
    out_a, lost_a, counters = _lossy(root / "a", 3)
    out_b, lost_b, _ = _lossy(root / "b", 3)
    c = counters.to_peer
    assert 140 <= len(lost_a) <= 260  # binomial(400, 0.5): 5 sd either side
    assert c.dropped["air"] == len(lost_a) and c.frames_out == len(out_a) == 400 - len(lost_a)
    assert out_a == sorted(out_a) and c.air_retries == 0
    assert set(out_a).isdisjoint(n - 1 for n in lost_a)  # drops count frames from 1
    assert (out_a, lost_a) == (out_b, lost_b)  # each frame draws once, in order: the seed decides


# ------------------------------------------------------------------ (5) the wire is unchanged


def test_the_wire_ignores_the_mediums_settings(root):
    """medium = "wire" (the default) with every medium setting changed: the rate test's result as before."""
    size, rate, count = 1514, 50_000_000, 100
    spec = LinkSpec(to_peer=one_way(rate_bps=rate)).override(
        medium="wire", phy_rate="1mbit", slot="1ms", cwmin=1023, fer="100%", retry_limit=1, agg_frames=1)
    with Bench(spec, root) as b:
        with b.frozen():
            for i in range(count):
                b.from_device(raw_frame(i, size))
        got = b.at_peer(count)
        counters = b.link.stop()
    assert [frame_number(f) for _, f in got] == list(range(count))
    wire = wire_bytes(size) * 8 / rate * 1e9
    host = counters.to_peer.late_us_max * 1000  # every stamp is at most this after its schedule (the link's measure)
    assert abs(got[-1][0] - got[0][0] - (count - 1) * wire) <= 0.10 * (count - 1) * wire + host
    gaps = [b_[0] - a[0] for a, b_ in itertools.pairwise(got)]
    assert abs(statistics.median(gaps) - wire) <= 0.10 * wire + host
    assert counters.medium == "wire" and counters.txops_per_s == 0 and counters.to_peer.txops == 0
    raw = json.loads(b.link.stats_path.read_text())
    assert "medium" not in raw and "airtime_s" not in raw["to_peer"] and "air" not in raw["to_peer"]["dropped"]


def test_a_wire_setting_on_the_shared_medium_is_one_clear_error():
    air = shared(rtt="5ms")
    for build in (lambda: air.override(rate="20mbit"), lambda: air.override(burst_to_peer="3000"),
                  lambda: LinkSpec.from_preset({"medium": "shared", "rate": "43mbit"})):
        with pytest.raises(NetreproError, match=r"does not apply on the shared medium: its phy_rate does.*wifi-wire"):
            build()
    assert air.override(phy_rate="20mbit").phy_rate_bps == 20_000_000
    # the NIC's own wire still caps what the board puts out (RunPlan's sent_through_wire), whatever the medium
    assert air.sent_through_wire(100_000_000).to_peer.rate_bps == 100_000_000
