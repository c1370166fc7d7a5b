"""Device time: the dilation from the platform's CPU model and the host's rate, and what it converts."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.link.counters import BoardClockCounters
from harness.rig.devicetime import (
    BOARD_STALL_MS,
    HOST_MIPS_ENV,
    LINK_LATE_MS,
    CpuModel,
    DeviceTime,
    TimeChoice,
    icount_shift,
    plan_time,
)
from harness.rig.platform import load_platform
from harness.rig.transfer import Transfer, parse_iperf_csv
from harness.runs.disturbed import figures_at_risk, measure_trusted, risk_text
from harness.runs.plan import RunPlan
from harness.runs.result import RunResult

M55 = CpuModel(clock_mhz=800, ipc=1.0, host_mips=250, source="test")


@pytest.mark.parametrize(("host_mips", "shift"), [(1000, 0), (999, 1), (500, 1), (250, 2), (200, 3), (125, 3),
                                                  (2.0, 9)])
def test_the_icount_shift_is_the_fastest_rate_not_above_the_hosts(host_mips, shift):
    assert icount_shift(host_mips) == shift
    assert 1000 / 2**shift <= host_mips


def test_every_platform_has_a_model_and_its_dilation():
    expected = {"openmv-n6": (800, 2, 3.2), "openmv-rt1060": (600, 2, 2.4), "xbox": (733, 2, 2.932),
                "ethernut2": (14.7456, None, 1.0)}
    for name, (mips, shift, dilation) in expected.items():
        platform = load_platform(name)
        time = plan_time(platform.engine.kind, platform.cpu, "device")
        assert (time.model_mips, time.icount_shift) == (mips, shift), name
        assert time.dilation == pytest.approx(dilation), name
        assert time.qemu_args() == ([] if shift is None else ["-icount", f"shift={shift},align=on,sleep=on"])


def test_the_model_and_the_host_rate_are_knobs(monkeypatch):
    monkeypatch.delenv(HOST_MIPS_ENV, raising=False)
    assert plan_time("qemu", M55, "device", mips=400).dilation == pytest.approx(1.6)
    assert plan_time("qemu", M55, "device", host_mips=125).dilation == pytest.approx(6.4)
    monkeypatch.setenv(HOST_MIPS_ENV, "500")
    assert plan_time("qemu", M55, "device").dilation == pytest.approx(1.6)
    assert plan_time("qemu", M55, "device", host_mips=250).dilation == pytest.approx(3.2)   # the option wins
    assert plan_time("simavr", CpuModel(14.7456, 1.0, 14.7456, "t"), "device", host_mips=7.3728).dilation == 2.0


def test_device_time_is_the_default_and_host_time_is_asked_for():
    assert plan_time("qemu", M55).mode == "device" == TimeChoice().mode
    assert plan_time("qemu", M55, "host") == DeviceTime("host")


def test_no_realtime_is_planned_and_kept_through_a_repeat():
    time = TimeChoice("device", realtime=False).for_platform("qemu", M55)
    assert time.realtime_priority is False and not time.favoured
    assert time.slower().realtime_priority is False
    assert TimeChoice("device").for_platform("qemu", M55).favoured


def test_a_lagging_run_is_repeated_at_twice_the_dilation():
    time = plan_time("qemu", M55, "device")
    slower = time.slower()
    assert (slower.dilation, slower.icount_shift, slower.host_mips) == (6.4, 3, 125.0)
    assert DeviceTime("host").slower() == DeviceTime("host")


def test_host_mode_runs_free():
    time = plan_time("qemu", M55, mode="host")
    assert (time.mode, time.dilation, time.qemu_args()) == ("host", 1.0, [])


@pytest.mark.parametrize(("call", "message"), [
    (lambda: plan_time("qemu", M55, mode="fast"), "unknown time mode 'fast'"),
    (lambda: plan_time("qemu", None, "device"), "no [cpu] model"),
    (lambda: plan_time("qemu", M55, "device", mips=0), "bad --mips 0"),
    (lambda: plan_time("qemu", M55, "device", host_mips=-3), "bad --host-mips -3"),
    (lambda: icount_shift(0.5), "too slow"),
])
def test_bad_settings_are_one_line_errors(call, message):
    with pytest.raises(NetreproError, match=message.replace("[", r"\[").replace("]", r"\]")) as caught:
        call()
    assert "\n" not in str(caught.value)


def test_a_bad_host_rate_in_the_environment_is_named(monkeypatch):
    monkeypatch.setenv(HOST_MIPS_ENV, "fast")
    with pytest.raises(NetreproError, match=f"{HOST_MIPS_ENV}='fast' is not a number"):
        plan_time("qemu", M55, "device")


def test_a_peer_figure_is_converted_to_the_boards_time():
    wall = Transfer("rx", bytes=10_000_000, seconds=32.0, per_second_mbps=[2.5, 2.5])
    board = wall.in_board_time(DeviceTime("device", dilation=3.2))
    assert board.bytes == wall.bytes
    assert board.seconds == pytest.approx(10.0)
    assert board.mbps == pytest.approx(wall.mbps * 3.2)
    assert board.per_second_mbps == pytest.approx([8.0, 8.0])
    assert wall.in_board_time(DeviceTime("host")) is wall


def test_each_leg_of_a_peer_run_is_converted_with_the_d_the_board_kept_over_it():
    """iperf -r: the peer's leg (rx), then the board's (tx); the board fell behind more in the second."""
    from types import SimpleNamespace

    from harness.rig.workload import _kept, _legs

    rx = Transfer("rx", bytes=10_000_000, seconds=10.0)
    tx = Transfer("tx", bytes=10_000_000, seconds=10.0)
    # (monotonic s, board s, link wall s): the board kept D = 4 for 10 s, then D = 5 for 10 s
    samples = [(100.0, 0.0, 0.0), (110.0, 2.5, 10.0), (120.0, 4.5, 20.0)]
    rig = SimpleNamespace(time=DeviceTime("device", dilation=3.2))
    legs = _legs([tx, rx], start=100.0, sequential=True)
    assert [(t.direction, span) for t, span in legs] == [("rx", (100.0, 110.0)), ("tx", (110.0, 120.0))]
    kept = [_kept(rig, samples, span).dilation for _, span in legs]
    assert kept == pytest.approx([4.0, 5.0])
    # both legs at once (iperf -d): one stretch, one D
    both = _legs([tx, rx], start=100.0, sequential=False)
    assert [span for _, span in both] == [(100.0, 110.0), (100.0, 110.0)]
    # no samples (the link on wall / D): the planned D
    assert _kept(rig, [], (100.0, 110.0)).dilation == 3.2


def test_the_legs_of_iperf_r_are_retimed_by_their_connections_in_the_capture(tmp_path):
    """The peer's figures, converted with a D a few percent off (short legs, coarse clock samples), read more
    than the link carries; over the seconds each connection's data took in the capture they read the link."""
    from captures_gen import DEVICE_IP, PEER_IP, Scenario, simulate, write_pcap

    from harness.analysis import load_capture
    from harness.analysis.frames import Endpoint

    rx = simulate(Scenario(sender="peer", client="peer", duration=2.0, rate_bps=100e6, rtt=0.0004, rcv_buf=64440,
                           peer_port=40001, device_port=5001))
    tx = simulate(Scenario(sender="device", client="device", duration=2.0, rate_bps=100e6, rtt=0.0004,
                           rcv_buf=64440, peer_port=5001, device_port=49153, start=3.5))
    connections = load_capture(write_pcap(tmp_path / "r.pcap", sorted(rx + tx)), device_ip=DEVICE_IP).connections
    csv = (f"20261201,{PEER_IP},40001,{DEVICE_IP},5001,3,0.0-6.0,25000000,33333333\n"
           f"20261201,{DEVICE_IP},49153,{PEER_IP},5001,4,0.0-6.0,25000000,33333333\n")
    legs = [t.in_board_time(DeviceTime("device", dilation=3.08)) for t in parse_iperf_csv(csv, DEVICE_IP)]
    assert [t.ports for t in legs] == [(40001, 5001), (49153, 5001)]
    retimed = [t.retimed(connections, DEVICE_IP) for t in legs]
    for before, after in zip(legs, retimed, strict=True):
        conn = next(c for c in connections if before.ports[0] in (c.a.port, c.b.port))
        sender = Endpoint(DEVICE_IP if before.direction == "tx" else PEER_IP, before.ports[0])
        assert after.bytes == before.bytes and after.seconds == pytest.approx(conn.data_seconds(sender))
        assert after.timed_by.startswith("its connection's data in the capture")
    # the synthetic iperf's bytes over each leg's 2 s of data: what 100 Mbit/s carries, not the 3 % more of the guess
    assert [round(t.mbps) for t in legs] == [103, 103]
    assert all(97 <= t.mbps <= 101 for t in retimed), [t.mbps for t in retimed]
    # no matching connection (another port), or a transfer the board timed: as it was
    other = replace(legs[0], ports=(40999, 5001))
    assert other.retimed(connections, DEVICE_IP) is other
    board_timed = Transfer("rx", bytes=1, seconds=1.0, ports=(40001, 5001))
    assert board_timed.retimed(connections, DEVICE_IP) is board_timed


def test_a_peer_program_that_writes_more_than_a_pipe_holds_still_ends():
    """A long run's interval reports outgrow a pipe: read as they come, or the program blocks and never ends."""
    import subprocess
    import sys
    from types import SimpleNamespace

    from harness.rig.workload import _run_sampling_clock

    rig = SimpleNamespace(namespace=SimpleNamespace(popen=lambda argv, **kw: subprocess.Popen(argv, **kw)),
                          clock_sample=lambda: None)
    writer = "import sys; sys.stdout.write('x' * 300_000); sys.stderr.write('e' * 100_000)"
    out, err, returncode, samples = _run_sampling_clock(rig, [sys.executable, "-c", writer], timeout=30)
    assert (len(out), len(err), returncode, samples) == (300_000, 100_000, 0, [])


def test_a_board_ended_peer_leg_whose_board_clock_stops_is_given_up(monkeypatch):
    """A leg the board's clock ends has a long backstop; a board whose clock stops must not hold it that long."""
    import subprocess
    import sys
    import time
    from types import SimpleNamespace

    from harness.rig import workload

    monkeypatch.setattr(workload, "_CLOCK_STOPPED_S", 1.0)
    rig = SimpleNamespace(namespace=SimpleNamespace(popen=lambda argv, **kw: subprocess.Popen(argv, **kw)),
                          clock_sample=lambda: (time.monotonic(), 3.25, 10.0))  # the board's seconds never move
    start = time.monotonic()
    with pytest.raises(NetreproError, match="the board's clock did not move for 1 s"):
        workload._run_sampling_clock(rig, [sys.executable, "-c", "import time; time.sleep(60)"], timeout=60,
                                     stop_after_board_s=2.0)
    assert time.monotonic() - start < 10


def test_a_link_that_handed_frames_over_late_puts_the_figures_at_risk_even_when_it_followed_the_board():
    followed = DeviceTime("device", dilation=3.2, host_lagged=True, link_follows_board=True)
    assert not followed.figures_at_risk  # the lag alone moved no figure: the link kept to the board's clock
    assert not followed.with_link_lateness(LINK_LATE_MS).figures_at_risk
    late = followed.with_link_lateness(LINK_LATE_MS + 0.5)
    assert (late.link_late, late.link_late_ms, late.figures_at_risk) == (True, LINK_LATE_MS + 0.5, True)
    assert not DeviceTime("host").with_link_lateness(300).link_late  # host time: figures are the host's anyway
    assert DeviceTime("device").with_link_lateness(1.2344).link_late_ms == 1.234


def test_a_results_time_object_reads_back_without_its_other_keys():
    time = DeviceTime("device", dilation=2.4, model_mips=600, link_late_ms=312.1, link_late=True)
    data = {**time.as_dict(), "peer_figures_timed_by": {"rx": "the capture"}}
    assert DeviceTime.from_dict(data) == time
    assert figures_at_risk(data) and not figures_at_risk({})
    assert "312.1 ms of the board's time late" in risk_text(data)
    assert "fell behind the board by 7 ms" in risk_text(DeviceTime("device", host_lagged=True, max_lag_ms=7).as_dict())


def test_a_run_whose_link_was_late_is_repeated_once_at_twice_the_dilation(tmp_path, monkeypatch):
    measured: list[_Measured] = []

    def measure(plan, run_dir, progress=None):
        late = 300.0 if not measured else 2.0
        time = replace(plan.time, link_follows_board=True).with_link_lateness(late)
        measured.append(_Measured(RunResult(platform="p", profile="q", lwip_version="2", link=LinkSpec(), workload={},
                                            run_dir=str(run_dir), capture="", console_log="", device="",
                                            time=time.as_dict())))
        return measured[-1]

    monkeypatch.setattr(RunPlan, "measure", measure)
    warnings: list[str] = []
    progress = Progress(quiet=True)
    monkeypatch.setattr(progress, "warn", warnings.append)
    plan = RunPlan(None, None, None, None, time=plan_time("qemu", M55, "device"))  # type: ignore[arg-type]
    result = measure_trusted(plan, tmp_path / "run", progress).result
    assert [Path(m.result.run_dir).name for m in measured] == ["run", "run-slower"]
    assert [m.result.time["dilation"] for m in measured] == [3.2, 6.4] and (tmp_path / "run-slower").is_dir()
    assert result is measured[1].result and result.time["link_late"] is False
    assert [m.analyses for m in measured] == [1, 0]  # the late run's folder keeps its analysis; the repeat's is next
    (warning,) = warnings
    assert warning.startswith("the host stalled the link: a frame reached the other side 300 ms") and "6.4" in warning


class _Measured:
    """A MeasuredRun stand-in whose analyses are counted."""

    def __init__(self, result: RunResult) -> None:
        self.result, self.analyses = result, 0

    def analysed(self) -> RunResult:
        self.analyses += 1
        return self.result


def test_a_board_held_longer_than_the_peers_shortest_retransmission_timeout_puts_its_figures_at_risk():
    followed = DeviceTime("device", dilation=3.2, link_follows_board=True)
    assert not followed.with_board_stall(BOARD_STALL_MS).figures_at_risk
    held = followed.with_board_stall(BOARD_STALL_MS + 0.5)
    assert (held.board_stalled, held.board_stall_ms, held.figures_at_risk) == (True, BOARD_STALL_MS + 0.5, True)
    assert not DeviceTime("host").with_board_stall(900).board_stalled  # host time: figures are the host's anyway
    assert DeviceTime.from_dict(held.as_dict()) == held
    text = risk_text(held.as_dict())
    assert text.startswith(f"the host held the board {BOARD_STALL_MS + 0.5:g} ms of wall time") and "200 ms" in text


def test_only_the_stalls_within_the_workload_count_and_only_the_part_within_it():
    # [CLOCK_MONOTONIC s at the start, wall ms]: one at boot, one straddling the workload's start, one within
    clock = BoardClockCounters.from_dict({"ticks": 10, "stalls": [[100.0, 950.0], [109.9, 400.0], [112.0, 250.0]],
                                          "stalls_seen": 3})
    assert clock.stalls == ((100.0, 950.0), (109.9, 400.0), (112.0, 250.0)) and clock.stalls_seen == 3
    assert clock.longest_stall_ms(110.0, 120.0) == 300.0  # the boot's 950 ms is outside; 100 ms of 400 fell before
    assert clock.longest_stall_ms(112.1, 120.0) == 150.0
    assert clock.longest_stall_ms(120.0, 130.0) == 0.0
    assert BoardClockCounters.from_dict({"ticks": 1}).longest_stall_ms(0.0, 1e9) == 0.0  # an older link: none


@pytest.mark.parametrize(("judge", "calm", "risky", "words"), [
    ("with_link_lateness", 3.0, 312.1, ("312.1 ms of the board's time late", "--host-mips")),
    ("with_board_stall", 120.0, 480.0, ("held the board 480 ms of wall time", "fewer jobs")),
])
def test_run_warns_of_a_disturbed_run_in_place_of_the_note_that_the_link_followed(judge, calm, risky, words):
    from harness.cli.main import _time_lines

    followed = DeviceTime("device", dilation=3.2, model_mips=800, host_mips=250, host_lagged=True, max_lag_ms=900,
                          link_follows_board=True, effective_dilation=5.9)
    result = RunResult(platform="p", profile="q", lwip_version="2", link=LinkSpec(), workload={}, run_dir="",
                       capture="", console_log="", device="", time=getattr(followed, judge)(calm).as_dict())
    assert any("the link followed its clock" in line for line in _time_lines(result))
    result.time = getattr(followed, judge)(risky).as_dict()
    lines = _time_lines(result)
    assert not any("the link followed its clock" in line for line in lines)
    (warning,) = [line for line in lines if "WARNING" in line]
    assert all(word in warning for word in words), warning
