"""The Ethernut 2 on simavr through netrepro's whole chain (report R3).

Boot, console, self-test and ping through the link; the known instruction loop and the clock;
the 8 MiB discard transfer of both profiles, reproduced against the report's figures.
The board host itself (XMEM, wait states, the LAN91C111 model) is tested in test_ethernut_host.py.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from harness.analysis import load_capture
from harness.core.errors import NetreproError
from harness.rig.build import FirmwareConfig, build_firmware
from harness.rig.engine import SimavrBoardHost, make_engine, parse_host_summary
from harness.rig.platform import load_platform
from harness.rig.profile import resolve_profile
from tests.conftest import interrupt_run, leftover_processes, socket_dirs

pytestmark = pytest.mark.real

CPU_HZ = 14_745_600
CYCLES_PER_ITERATION = 6  # subi, 3 x sbci, brne taken (firmware/boards/ethernut2/board.c)


@pytest.fixture(scope="module")
def ethernut():
    return load_platform("ethernut2")


@pytest.fixture(scope="module")
def default_elf(ethernut, tree) -> Path:
    return build_firmware(FirmwareConfig(ethernut, resolve_profile(ethernut, "nutos-default", [], [], tree), tree)).elf


def spin(console, argument: str, timeout: float = 10.0) -> dict[str, int]:
    line = console.command(f"spin {argument}", timeout=timeout)
    match = re.search(r"SPIN iterations=(\d+) cycles=(\d+) ms=(\d+)", line)
    assert match, line
    return {"iterations": int(match[1]), "cycles": int(match[2]), "ms": int(match[3])}


def test_boot_console_self_test_and_ping(netrepro, no_leftovers):
    with netrepro.board("ethernut2", "nutos-tuned", link="ethernet") as rig:
        assert rig.console.banner.board == "ethernut2" and rig.console.banner.nic == "lan91c111"
        options = rig.console.opts()
        assert (options["TCP_MSS"], options["TCP_SND_BUF"], options["TCP_WND"]) == (1460, 4 * 1460, 3216)
        assert [rig.ping() for _ in range(5)] == [True] * 5
        stats = rig.console.stats()
        assert stats["nic.rx_frames"] >= 5 and stats["nic.tx_frames"] >= 5
        host_log = rig.run_dir / "host.log"
    assert "self-test ok" in host_log.read_text()
    clock = parse_host_summary(host_log.read_text().splitlines()[-1])
    assert clock is not None and clock["frames_rx"] >= 5


def test_a_known_loop_takes_the_expected_cycles_and_simulated_time_tracks_the_wall_clock(ethernut, default_elf,
                                                                                          tmp_path):
    with make_engine(ethernut, default_elf, tmp_path, tmp_path) as engine:
        console = engine.start(timeout=30)
        short, long = spin(console, "1000 irqoff"), spin(console, "9000 irqoff")
        # Timer1 at clk/1 counts every cycle: the loop is exactly 6 cycles an iteration.
        assert long["cycles"] - short["cycles"] == CYCLES_PER_ITERATION * 8000
        assert 0 < short["cycles"] - CYCLES_PER_ITERATION * 1000 < 20  # plus the timer reads
        iterations = 10 * CPU_HZ // CYCLES_PER_ITERATION  # 10 s of busy loop
        t0 = time.monotonic()
        ten = spin(console, str(iterations), timeout=30)
        wall = time.monotonic() - t0
        engine.stop()
    # 1 kHz tick interrupts add ~0.6 % to the loop's own 10 s.
    assert 10_000 <= ten["ms"] <= 10_100, ten
    clock = parse_host_summary((tmp_path / "host.log").read_text().splitlines()[-1])
    assert clock is not None, clock
    # paced to the wall, never ahead of it; behind it only by what the host itself measured it fell behind
    # (its max lag: a busy machine), so a busy machine widens the bound by exactly its own account
    lag_s = clock["max_lag_ms"] / 1000
    assert -0.02 * ten["ms"] / 1000 <= wall - ten["ms"] / 1000 <= 0.02 * ten["ms"] / 1000 + lag_s, (wall, clock)
    assert abs(clock["simulated_s"] - clock["wall_s"]) <= 0.02 * clock["wall_s"] + lag_s, clock


def test_eight_mib_discard_reproduces_the_report(netrepro, no_leftovers):
    found = netrepro.reproduce("ethernut2", repeats=1)
    default, tuned = found["default 536"], found["tuned 1460"]
    notes = {c["case"]: c["claim_notes"] for c in found.values()}
    for case, mss in ((default, 536), (tuned, 1460)):
        assert case["device_mss"] == mss, notes
        # the board's core busy through the transfer, window open: what the report's figures imply
        assert case["verdict"] == "cpu-limited", case["verdict_reason"]
        assert case["device_cpu_percent"] >= 90, case["verdict_reason"]
        run = Path(case["run_dirs"][0])
        result = json.loads((run / "result.json").read_text())
        assert result["bytes"] == 8 * 1024 * 1024 and result["workload"]["chunk"] == mss
        counters = result["link_counters"]
        assert not any(n for d in ("to_peer", "to_device") for n in counters[d]["dropped"].values()), counters
        analysis = load_capture(run / "capture.pcap", device_ip="10.77.0.2", captured_at="device")
        analysis.expect_mss(device=mss)
        assert analysis.retransmissions == 0, analysis.verdict_reason
    ratio = tuned["median_mbps"] / default["median_mbps"]
    assert abs(ratio / 1.276 - 1) <= 0.15, f"tuned/default {ratio:.3f}, report 1.276"
    for case, report_kb in ((default, 269.4), (tuned, 343.8)):
        assert abs(case["median_in_unit"] / report_kb - 1) <= 0.30, (case["median_in_unit"], report_kb)
    assert all(c["claim_holds"] for c in found.values()), notes


def test_a_missing_firmware_is_one_clear_error(ethernut, tmp_path):
    engine = SimavrBoardHost(ethernut, tmp_path / "nope.elf", tmp_path, tmp_path)
    with pytest.raises(NetreproError) as err, engine:
        engine.start(timeout=10)
    assert "the board host exited at start: cannot read ELF" in str(err.value)


def test_the_host_summary_is_parsed():
    line = ("netrepro-ethernut: stopped; simulated 30.000 s, wall 30.001 s (-0.00%), speed 14.75 MHz-equivalent, "
            "max lag 3.9 ms, 476 of 300041 100-us slices more than 1 ms late; xmem extra cycles 3414; frames tx 7 "
            "(lost at the socket 0) rx 5 rx-dropped overrun 1 filter 0 disabled 0; int5 rising 1; pc 0x002b0")
    clock = parse_host_summary(line)
    assert clock == {"simulated_s": 30.0, "wall_s": 30.001, "drift_percent": -0.0, "mhz_equivalent": 14.75,
                     "max_lag_ms": 3.9, "late_slices": 476, "slices": 300041, "frames_tx": 7, "frames_rx": 5,
                     "rx_dropped_overrun": 1}
    assert parse_host_summary("netrepro-ethernut: self-test ok") is None


def test_ctrl_c_to_the_terminal_group_stops_the_board_host_too(tmp_path):
    """Every process of the foreground group gets SIGINT, the board host included: it prints its
    summary and exits, and netrepro still tears down the rest and keeps the folder."""
    before = leftover_processes()
    stopped = interrupt_run(["run", "ethernut2", "--link", "ethernet", "--workload", "discard", "--chunk", "536",
                             "--out", str(tmp_path)], "running discard", settle_s=3, to_group=True)
    assert stopped.code == 130, stopped
    assert leftover_processes() - before == set()
    assert socket_dirs(stopped.pid) == set()
    (run_dir,) = list(Path(tmp_path).iterdir())
    assert json.loads((run_dir / "result.json").read_text())["status"] == "interrupted"
    assert "stopped; simulated" in (run_dir / "host.log").read_text()
    assert (run_dir / "capture.pcap").stat().st_size > 24
