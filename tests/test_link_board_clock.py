"""The link following the board's own clock (device time, closed loop): a fake board sends one byte
per board millisecond on the clock socket, slower than wall / D, and the link's delays, rates and
timestamps follow it (synthetic frames, real sockets, the real C link)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

import pytest

from harness.link import LinkCounters, LinkSpec, read_pcap
from harness.rig.devicetime import LINK_LATE_MS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from linkbench import DEV_MAC, PEER_MAC, Bench, one_way, raw_frame

D = 4.0
SLOWER = 2.0  # the fake board runs at half the speed the dilation asks: its ms lasts 2 * D wall ms


class FakeBoardClock:
    """A board's clock port: connects to the link and sends its tick count's low byte every board ms."""

    def __init__(self, path: Path, wall_per_ms: float) -> None:
        self.path = path
        self.wall_per_ms = wall_per_ms
        self.paused = threading.Event()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(self.path))
        tick, due = 0, time.monotonic()
        with sock:
            while not self.stopped.is_set():
                due += self.wall_per_ms
                time.sleep(max(0.0, due - time.monotonic()))
                if self.paused.is_set():
                    due = time.monotonic()
                    continue
                tick += 1
                try:
                    sock.send(bytes([tick & 0xFF]))
                except OSError:  # the link has stopped
                    return

    def __enter__(self) -> FakeBoardClock:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=2)


@contextlib.contextmanager
def bench_with_clock(spec: LinkSpec, root: Path, wall_per_ms: float, capture_at: str = "device"):
    bench = Bench(spec, root, capture_at=capture_at)
    bench.link.dilation = D
    bench.link.board_clock = root / "clock.sock"
    with bench, FakeBoardClock(bench.link.board_clock, wall_per_ms) as clock:
        time.sleep(20 * wall_per_ms)  # a few ticks, so the link has the board's pace
        yield bench, clock


@pytest.fixture
def root(tmp_path_factory):
    return Path(tmp_path_factory.mktemp("clk", numbered=True))


def test_a_slow_boards_round_trip_still_reads_as_its_rtt(root):
    """Timed by the link's capture at both sides and the kernel's receive stamps (Bench.exchanges), not this test's
    clock: a busy host slows this process's fake board, and the link with it, never the figures."""
    spec = LinkSpec.from_preset({"rtt": "5.5ms"})
    with bench_with_clock(spec, root, D * SLOWER / 1000, capture_at="both") as (b, _):
        stamps = b.ping_pong(8)
        b.link.stop()
    exchanges = b.exchanges(stamps)
    wall = [x.wall_rtt_ns for x in exchanges]
    captured = [x.board_rtt_ns / 1e9 for x in exchanges]
    # the board's ms lasts 8 wall ms: 5.5 board ms of RTT take ~44 ms of wall time, and read 5.5 ms
    assert statistics.median(wall) / 1e6 == pytest.approx(5.5 * D * SLOWER, rel=0.2)
    assert statistics.median(captured) * 1e3 == pytest.approx(5.5, abs=0.4)
    clock = LinkCounters.from_file(b.link.stats_path).board_clock
    assert clock is not None and clock.ticks > 50
    assert clock.effective_dilation == pytest.approx(D * SLOWER, rel=0.1)
    assert clock.max_lag_ms > 0
    assert 0 < clock.max_tick_gap_wall_ms < 20 * D * SLOWER  # a tick every 8 wall ms, read a little late at most


def test_a_rate_follows_the_boards_clock(root):
    rate, count = 10_000_000, 20
    spec = LinkSpec(to_device=one_way(rate_bps=rate))
    with bench_with_clock(spec, root, D * SLOWER / 1000) as (b, _):
        with b.frozen():
            for i in range(count):
                b.from_peer(raw_frame(i, 1514, PEER_MAC, DEV_MAC))
        got = b.at_device(count, timeout=10)
        b.link.stop()
    wall_span = (got[-1][0] - got[0][0]) / 1e9
    board_span = (count - 1) * (1514 + 24) * 8 / rate
    assert wall_span == pytest.approx(board_span * D * SLOWER, rel=0.15)
    stamps = [t for t, _ in read_pcap(b.link.pcap_path)]
    assert stamps[-1] - stamps[0] == pytest.approx(board_span, rel=0.15)  # handed to the device, in board time


def test_nothing_is_delivered_while_the_boards_clock_stands_still(root):
    spec = LinkSpec(to_peer=one_way(delay_s=0.002))
    with bench_with_clock(spec, root, D / 1000) as (b, clock):
        paused = time.monotonic()
        clock.paused.set()
        time.sleep(0.05)
        b.from_device(raw_frame(1, 200))
        assert b.at_peer(1, timeout=0.3) == []  # 2 board ms never pass while the board is stopped
        clock.paused.clear()
        resumed = time.monotonic()
        assert len(b.at_peer(1, timeout=2)) == 1
        b.link.stop()
    stats = json.loads(b.link.stats_path.read_text())
    assert stats["to_peer"]["frames_out"] == 1
    assert stats["board_clock"]["max_tick_gap_wall_ms"] >= 350  # the pause, in wall ms
    # the pause is kept as a stall, with when it began on the monotonic clock the harness reads
    board_clock = LinkCounters.from_file(b.link.stats_path).board_clock
    (at, ms), *_ = [(at, ms) for at, ms in board_clock.stalls if ms >= 350]
    assert paused - 0.05 < at < paused + 0.01 and ms < (time.monotonic() - paused) * 1000
    assert board_clock.longest_stall_ms(paused, resumed + 1) >= 350
    assert board_clock.longest_stall_ms(resumed + 0.1, resumed + 10) < 350  # after it: not counted
    assert stats["to_peer"]["late_us_max"] < 1000  # held while the board stood still: not late in its time


def _cpu_s(pid: int) -> float:
    """A process's user + system CPU seconds so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_frame_due_just_past_the_boards_next_tick_is_waited_for_without_spinning(root):
    """Link time stops at the board's next tick until that tick is read. A frame due just past it (here 1
    link ns past) can come only with the tick, an input: the link waits for it in ppoll. Spinning for it held
    a core at real-time priority from the emulator that had to send the tick; two runs on two cores stood
    still until the kernel's real-time throttling let the emulators run (950 ms stalls, once a few seconds)."""
    spec = LinkSpec(to_peer=one_way(delay_s=0.25e-9))  # a quarter of a board ns: 1 link ns at D = 4
    with bench_with_clock(spec, root, D / 1000) as (b, clock):
        clock.paused.set()
        time.sleep(0.05)  # the link's time has reached the next tick and waits there
        b.from_device(raw_frame(1, 200))
        b.wait_arrivals("to_peer", 1)
        before, start = _cpu_s(b.link.pid), time.monotonic()
        assert b.at_peer(1, timeout=0.5) == []  # due past the tick: not before the board goes on
        used = (_cpu_s(b.link.pid) - before) / (time.monotonic() - start)
        clock.paused.clear()
        assert len(b.at_peer(1, timeout=2)) == 1
        b.link.stop()
    assert used < 0.2, f"the link used {used:.0%} of a core while it waited for the board's tick"


def test_a_board_clock_stopped_for_over_a_wall_second_is_given_up_and_what_the_link_held_leaves_late(root):
    """After a wall second without a tick the link takes the board for stopped and runs on by itself; when
    the board goes on, the frame the link held has left hundreds of board ms after its time (up to a wall
    second at the link's fastest pace, 4 link ns a wall ns, over D), which a run judges `link_late`."""
    spec = LinkSpec(to_peer=one_way(delay_s=0.050))  # 50 board ms: 200 wall ms at D = 4
    with bench_with_clock(spec, root, D / 1000) as (b, clock):
        b.from_device(raw_frame(1, 200))
        b.wait_arrivals("to_peer", 1)
        clock.paused.set()
        assert b.at_peer(1, timeout=0.8) == []  # the board stands still: its 50 ms do not pass
        assert len(b.at_peer(1, timeout=3)) == 1  # given up: the link ran on without it
        clock.paused.clear()
        time.sleep(0.05)
        counters = b.link.stop()
    assert counters.board_clock.max_tick_gap_wall_ms >= 1000
    assert LINK_LATE_MS < counters.late_ms_max < 4 * 1000 / D


def test_without_a_board_clock_the_link_runs_on_wall_over_d(root):
    bench = Bench(LinkSpec(), root)
    bench.link.dilation = D
    with bench as b:
        b.link.stop()
    assert LinkCounters.from_file(b.link.stats_path).board_clock is None
