"""Device time through the real chain: QEMU counting instructions, the board's tick and the link stretched
by D, the capture in the board's time, the host's lag detected, the board's CPU load recorded."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from harness.cli.exit_codes import ExitCode
from harness.link import LinkSpec
from harness.rig.devicetime import BOARD_STALL_MS, LINK_LATE_MS, TimeChoice
from harness.rig.workload import Workload
from harness.runs.disturbed import figures_at_risk, measure_trusted
from harness.runs.plan import Configuration, RunPlan

pytestmark = pytest.mark.real

TIME_KEYS = {"mode", "dilation", "model_mips", "host_mips", "icount_shift", "realtime_priority", "host_lagged",
             "max_lag_ms", "link_follows_board", "effective_dilation", "host_mips_source", "peer_figures_timed_by",
             "link_late_ms", "link_late", "board_stall_ms", "board_stalled"}


def test_a_wifi_run_reads_in_the_boards_time(n6, tree, tmp_path, no_leftovers):
    firmware = Configuration("mp-n6-after").build(n6, tree)
    time = n6.time(TimeChoice("device"))
    # the wire: on the shared medium a standing queue of turns adds to the RTT (tests/test_link_shared_medium.py)
    link = LinkSpec.from_preset(n6.link_preset("wifi-wire"))
    plan = RunPlan(n6, firmware, link, Workload("sock-rx", seconds=2), time=time)
    result = plan.execute(tmp_path)
    assert set(result.time) == TIME_KEYS
    # planned at D = 3.2 (-icount shift 2); a run the host disturbed stands repeated at twice D, in its own folder
    # (harness.runs.disturbed), and everything below is read of the run that stands
    assert len(result.repeats) <= 1 and all(r["dilation"] == 3.2 for r in result.repeats), result.repeats
    dilation = 3.2 * 2 ** len(result.repeats)
    assert (result.time["mode"], result.time["dilation"], result.time["icount_shift"]) == \
        ("device", dilation, 2 + len(result.repeats))
    # the link's 5.5 ms (plus the board's own turnaround) as the capture shows it, though it took D times longer
    assert 5.5 <= result.analysis.rtt_ms < 9.0
    assert result.analysis.device_mss == 1460 and result.analysis.device_window.max == 46720
    stats = json.loads(Path(result.run_dir, "link-stats.json").read_text())
    assert stats["dilation"] == dilation
    # the link followed the board's own clock: it saw every board ms of the run, at the D the board kept
    assert result.time["link_follows_board"] is True
    assert stats["board_clock"]["ticks"] >= 2000
    assert result.time["effective_dilation"] >= dilation * 0.97
    # ticks come 8 a board ms; the longest wall gap between them is recorded, in wall ms (> one tick's 0.4 at 3.2)
    assert result.link_counters["board_clock"]["max_tick_gap_wall_ms"] > dilation / 8
    late_ms = round(max(stats["to_device"]["late_us_max"], stats["to_peer"]["late_us_max"]) / 1000, 3)
    assert (result.time["link_late_ms"], result.time["link_late"]) == (late_ms, late_ms > LINK_LATE_MS)
    # the longest gap within the workload is at most the run's longest, and judged against the peer's RTO
    stall_ms = result.time["board_stall_ms"]
    assert 0 <= stall_ms <= result.link_counters["board_clock"]["max_tick_gap_wall_ms"]
    assert result.time["board_stalled"] is (stall_ms > BOARD_STALL_MS)
    assert 0 <= result.device_cpu["busy_percent"] <= 100
    assert result.device_cpu["total_ms"] > 0
    assert result.time["peer_figures_timed_by"] == {}  # the board timed its socket benchmark itself


def test_the_link_keeps_time_at_real_time_priority_and_qemu_only_at_a_better_nice(n6, tree, tmp_path, no_leftovers):
    """Device time: the link, the board's timekeeper, runs SCHED_FIFO where permitted; QEMU, which the link
    follows, does not (a busy guest at SCHED_FIFO held a core against QEMU's own main loop: two such boards on
    two cores never answered their monitor). Host time keeps QEMU at SCHED_FIFO: there nothing follows its clock."""
    from harness.rig.session import Session

    firmware = Configuration("mp-n6-after").build(n6, tree)
    root = os.geteuid() == 0
    for mode, qemu_policy in (("device", os.SCHED_OTHER), ("host", os.SCHED_FIFO if root else os.SCHED_OTHER)):
        (tmp_path / mode).mkdir()
        with Session(n6, firmware, tmp_path / mode, LinkSpec(), time=n6.time(TimeChoice(mode))) as rig:
            assert os.sched_getscheduler(rig.engine.pid) == qemu_policy, mode
            if root and mode == "device":
                assert os.getpriority(os.PRIO_PROCESS, rig.engine.pid) == -10
            keeper = os.sched_getscheduler(rig.link.pid if mode == "device" else rig.engine.pid)
            assert rig.realtime_priority() == (keeper == os.SCHED_FIFO) == root, mode
            assert rig.ping(), mode


def _run_impossible(tmp_path: Path, platform: str) -> tuple[subprocess.CompletedProcess, dict]:
    """1000 MIPS (-icount shift=0) is beyond this host: the board's clock falls behind wall time / D."""
    out = tmp_path / "runs"
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "run", platform, "--lwip", "mp-n6-after",
                           "--link", "wifi", "--workload", "sock-rx", "--seconds", "2", "--time", "device",
                           "--host-mips", "1000", "--out", str(out), "--quiet"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "CI": "true"})
    assert proc.returncode == 0, proc.stderr
    # the first run's folder; a run the host disturbed is repeated at twice D beside it, in RUN_DIR-slower
    (run_dir,) = [d for d in out.iterdir() if not d.name.endswith("-slower")]
    time = json.loads((run_dir / "result.json").read_text())["time"]
    time["repeated"] = [d.name for d in out.iterdir() if d.name.endswith("-slower")]
    time["repeated_for"] = [json.loads((out / name / "result.json").read_text())["repeats"][-1]["why"]
                            for name in time["repeated"]]
    assert time["icount_shift"] == 0 and time["dilation"] == 0.8
    assert time["host_lagged"] is True and time["max_lag_ms"] > 20
    return proc, time


def test_an_impossible_host_rate_is_detected_and_followed(tmp_path, no_leftovers):
    proc, time = _run_impossible(tmp_path, "openmv-n6")
    assert time["link_follows_board"] is True and time["effective_dilation"] > 0.8 * 1.05
    # the link followed the board: the lag is no reason to repeat (frames the board's NIC lost uncounted are)
    assert all("the board's NIC lost" in why for why in time["repeated_for"]), time["repeated_for"]
    standing = 0.8 * 2 ** len(time["repeated"])  # the run that stands: its repeat, if the NIC lost frames
    assert f"the host could not keep D = {standing:g}" in proc.stdout and "WARNING" not in proc.stdout


def test_an_impossible_host_rate_without_the_boards_clock_is_a_warning(tmp_path, no_leftovers):
    """A board without a clock port leaves the link on wall / D: a lag then puts every figure at risk."""
    text = (Path(__file__).resolve().parent.parent / "platforms" / "openmv-n6.toml").read_text()
    start = text.index("[clock_port]")
    unclocked = tmp_path / "openmv-n6.toml"
    unclocked.write_text(text[:start] + text[text.index("[nic]", start):])
    proc, time = _run_impossible(tmp_path, str(unclocked))
    assert time["link_follows_board"] is False
    # every figure at risk: the one policy for a disturbed run repeats it at twice D (and says so even --quiet)
    assert len(time["repeated"]) == 1 and "repeating at D = 1.6" in proc.stderr, proc.stderr[-2000:]


def test_host_time_says_its_figures_depend_on_the_host(n6, tree, tmp_path):
    firmware = Configuration("mp-n6-after").build(n6, tree)
    result = RunPlan(n6, firmware, LinkSpec(), Workload("sock-rx", seconds=1)).execute(tmp_path)
    assert (result.time["mode"], result.time["dilation"], result.time["icount_shift"]) == ("host", 1.0, None)
    assert result.time["host_lagged"] is False
    assert 0 <= result.device_cpu["busy_percent"] <= 100


def test_a_qemu_that_refuses_its_arguments_is_one_line(tmp_path):
    """QEMU opens its monitor socket before it checks every option: its own message must still come out."""
    text = (Path(__file__).resolve().parent.parent / "platforms" / "openmv-n6.toml").read_text()
    bad = tmp_path / "refused.toml"
    refused = 'extra_args = ["-icount", "shift=2,align=on,sleep=off"]'
    bad.write_text(text.replace('boot = "kernel"', f'boot = "kernel"\n{refused}'))
    kept_in = Path(tempfile.mkdtemp(prefix="nrt-", dir="/tmp"))  # short: the boot's sockets live in it
    try:
        proc = subprocess.run([sys.executable, "-m", "harness.cli", "boot", str(bad), "--quiet"], capture_output=True,
                              text=True, timeout=120, env={**os.environ, "CI": "true", "TMPDIR": str(kept_in)})
        assert proc.returncode == ExitCode.COULD_NOT and "Traceback" not in proc.stderr
        error = proc.stderr.strip().splitlines()[-1]
        assert error.startswith("netrepro: error: QEMU exited at start: ") and "align=on and sleep=off" in error
        # the failed boot keeps its folder, with QEMU's console, and names it
        (kept,) = kept_in.glob("netrepro-boot-openmv-n6-*")
        assert "align=on and sleep=off" in (kept / "console.log").read_text() and str(kept) in proc.stderr
    finally:
        shutil.rmtree(kept_in, ignore_errors=True)


def test_calibrate_saves_the_host_rate_device_time_then_uses(n6, no_leftovers, tmp_path, monkeypatch):
    monkeypatch.setenv("NETREPRO_CALIBRATION", str(tmp_path / "calibration"))  # this test's own
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "calibrate", "openmv-n6", "--seconds", "1", "--json",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CI": "true"})
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["free_mips"] > 0 and got["model_mips"] == 800
    assert got["kept_dilation"] >= 0.97 * got["planned_dilation"] == 0.97 * 3.2
    # the chosen rate is one QEMU counts at, not above what the host sustained under load
    assert got["host_mips"] == 1000 / 2 ** got["icount_shift"] <= min(got["sustained_mips"], got["free_mips"])
    time = n6.time(TimeChoice("device"))
    assert (time.host_mips, time.host_mips_source) == (got["host_mips"], "calibrated")
    assert n6.time(TimeChoice("device", host_mips=250)).host_mips_source == "--host-mips"


def test_calibrating_a_self_paced_board_is_one_line():
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "calibrate", "ethernut2", "--quiet"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "CI": "true"})
    assert proc.returncode == ExitCode.COULD_NOT and "Traceback" not in proc.stderr
    assert "paces its clock itself" in proc.stderr.strip().splitlines()[-1]


def test_a_peer_run_gets_the_boards_seconds_when_the_host_falls_behind(tmp_path, no_leftovers):
    """iperf times itself on the wall clock: planned at D = 0.8 (1000 MIPS, beyond this host) it would stop
    after 1.6 s of wall time, under half the 2 s asked in the board's time at the D over 2 the host keeps.
    The board's clock ends it instead, and its figure, converted with the D kept, agrees with the capture's.
    Over ethernet: the host's lag is its time emulating the NIC, ~0.15 wall ms a frame (docs/device-time.md),
    ~1.3 wall s a board s at 100 Mbit/s; over the WiFi's ~30 Mbit/s the board kept only D = 1.5 once."""
    out = tmp_path / "runs"
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "run", "openmv-n6", "--lwip", "mp-n6-after",
                           "--link", "ethernet", "--workload", "rx", "--seconds", "2", "--host-mips", "1000",
                           "--out", str(out), "--quiet", "--json"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "CI": "true"})
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["time"]["host_lagged"] is True and result["time"]["effective_dilation"] > 0.8 * 2
    assert result["seconds"] >= 1.5, result["seconds"]
    assert result["throughput_mbps"] == pytest.approx(result["analysis"]["goodput_mbps"], rel=0.05)


def test_a_board_the_host_stops_for_over_a_second_is_found_late_and_the_run_repeated(n6, tree, tmp_path,
                                                                                    monkeypatch, no_leftovers):
    """QEMU stopped (SIGSTOP) for 1.5 s of wall time mid-run: after a wall second without the board's tick the
    link takes the board for stopped and runs on by itself (harness/link/c/clock.h, CLOCK_STALL_NS), so the frames
    it holds leave ~300 ms of the board's time late. The run is marked, its figures at risk, and repeated at
    twice the D. (A shorter stop, or one of the link, stops the board and the link together: no figure moves.)"""
    import harness.runs.plan as run_module

    real_workload, stalls = run_module.run_workload, []

    def stalled_once(rig, workload):
        if not stalls:
            stalls.append(threading.Timer(1.0, _stop_for, (rig.engine.pid, 1.5)))
            stalls[0].start()
        return real_workload(rig, workload)

    monkeypatch.setattr(run_module, "run_workload", stalled_once)
    firmware = Configuration("mp-n6-after").build(n6, tree)
    link = LinkSpec.from_preset(n6.link_preset("wifi-wire"))
    plan = RunPlan(n6, firmware, link, Workload("rx", seconds=2), time=n6.time(TimeChoice("device")))
    (tmp_path / "run").mkdir()
    result = measure_trusted(plan, tmp_path / "run").analysed()
    stalls[0].join()
    first = json.loads((tmp_path / "run" / "result.json").read_text())["time"]
    assert set(first) == TIME_KEYS and first["link_follows_board"] is True
    assert first["link_late"] is True and first["link_late_ms"] > LINK_LATE_MS, first
    # QEMU stopped 1.5 s during the workload: the board sent no tick for as long (the link gave it up after 1 s)
    assert first["board_stalled"] is True and first["board_stall_ms"] >= 1400, first
    assert figures_at_risk(first)
    assert result.run_dir == str(tmp_path / "run-slower")
    assert result.time["dilation"] == 2 * first["dilation"] and result.time["link_late"] is False, result.time
    assert result.time["link_late_ms"] < LINK_LATE_MS / 5


def _stop_for(pid: int, seconds: float) -> None:
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(pid, signal.SIGCONT)
