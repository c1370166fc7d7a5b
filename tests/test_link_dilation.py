"""Device time through the link: settings stay in the board's time, the link stretches them by D on the
wall clock, and the capture, drops and stats read in the board's time (synthetic frames, real sockets)."""

from __future__ import annotations

import itertools
import json
import statistics
import sys
import time
from pathlib import Path

import pytest

from harness.core.ethernet import wire_bytes
from harness.link import LinkSpec, read_drops, read_pcap

sys.path.insert(0, str(Path(__file__).resolve().parent))
from linkbench import DEV_MAC, MS, PEER_MAC, Bench, one_way, raw_frame

D = 4.0


def _bench(spec: LinkSpec, root: Path, dilation: float, capture_at: str = "device") -> Bench:
    bench = Bench(spec, root, capture_at=capture_at)
    bench.link.dilation = dilation
    return bench


@pytest.fixture
def root(tmp_path_factory):
    return Path(tmp_path_factory.mktemp("dil", numbered=True))


def _round_trips(root: Path, dilation: float, rtt_s: float = 0.0055,
                 count: int = 8) -> tuple[list[float], list[float], float]:
    """(the RTT of each exchange in the link's capture, s; as the wall clock took it, ns; the most the link measured
    itself late in both directions together, board ms): a device frame answered by the peer, timed by the link's
    capture at both sides and the kernel's receive stamps (Bench.exchanges), never by this test's clock."""
    spec = LinkSpec.from_preset({"rtt": f"{rtt_s * 1e3:g}ms"})
    with _bench(spec, root, dilation, capture_at="both") as b:
        stamps = b.ping_pong(count)
        counters = b.link.stop()
    exchanges = b.exchanges(stamps)
    late_ms = (counters.to_peer.late_us_max + counters.to_device.late_us_max) / 1000
    return [x.board_rtt_ns / 1e9 for x in exchanges], [x.wall_rtt_ns for x in exchanges], late_ms


def test_a_round_trip_reads_in_the_boards_time(root):
    captured, wall, late_ms = _round_trips(root, D)
    # a 5.5 ms RTT at D = 4 takes 22 ms on the wall clock and appears as 5.5 ms in the capture; a busy host makes
    # the link late by what it measures itself (late_ms), never early
    assert abs(statistics.median(wall) / 1e6 - 5.5 * D) <= 1.0 + late_ms * D
    assert abs(statistics.median(captured) * 1e3 - 5.5) <= 0.25 + late_ms
    assert min(captured) * 1e3 >= 5.5 - 0.05


def test_a_rate_reads_in_the_boards_time(root):
    rate, count = 10_000_000, 30
    spec = LinkSpec(to_device=one_way(rate_bps=rate))
    with _bench(spec, root, D) as b:
        with b.frozen():
            for i in range(count):
                b.from_peer(raw_frame(i, 1514, PEER_MAC, DEV_MAC))
        got = b.at_device(count, timeout=10)
        late_s = b.link.stop().to_device.late_us_max / 1e6  # the link's own measure of a busy host, board s
    board_gap = wire_bytes(1514) * 8 / rate
    wall_gaps = [y[0] - x[0] for x, y in itertools.pairwise(got)]
    assert abs(statistics.median(wall_gaps) / 1e9 - board_gap * D) <= 0.10 * board_gap * D + late_s * D
    stamps = [t for t, _ in read_pcap(b.link.pcap_path)]
    assert abs(statistics.median(y - x for x, y in itertools.pairwise(stamps)) - board_gap) <= 0.10 * board_gap + late_s


def test_stats_and_drops_read_in_the_boards_time(root):
    """The link's stats in the board's time: its lifetime over D. Bracketed, not timed: the link lived through this
    test's 0.4 s sleep, and within the interval this test spent around its whole life, so a busy host that stretches
    the link's life stretches the outer bound with it and can break neither."""
    spec = LinkSpec(to_peer=one_way(drop=("frame:2",)))
    began = time.monotonic()
    with _bench(spec, root, D) as b:
        for i in range(3):
            b.from_device(raw_frame(i, 200))
        b.at_peer(2)
        time.sleep(0.4)
        b.link.stop()
    around_s = time.monotonic() - began
    stats = json.loads(b.link.stats_path.read_text())
    assert stats["dilation"] == D
    assert 0.4 / D <= stats["elapsed_s"] <= around_s / D, (stats["elapsed_s"], around_s)
    (drop,) = read_drops(b.link.drops_path)
    first = read_pcap(b.link.pcap_path)[0][0]
    assert 0 <= drop["t"] - first < 5 * MS / 1e9   # stamped on the same (board) clock as the capture


def test_without_dilation_nothing_changes(root):
    """At D = 1 the capture reads the wall clock: it shows the round trip the sockets saw, never less than the
    link's 5.5 ms (on a loaded host the link's own wake-ups may add to both; a suite run on two workers saw 6.3)."""
    captured, wall, late_ms = _round_trips(root, 1.0, count=5)
    assert statistics.median(captured) * 1e3 == pytest.approx(statistics.median(wall) / 1e6, abs=0.25)
    assert min(captured) * 1e3 >= 5.5 - 0.05
    assert abs(statistics.median(wall) / 1e6 - 5.5) <= 1.0 + late_ms


def test_a_bad_dilation_is_refused(root):
    with pytest.raises(Exception, match="dilation"), _bench(LinkSpec(), root, 0.0):
        pass
