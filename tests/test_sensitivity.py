"""reproduce --sensitivity without an emulator: where each assumed input goes, its units, the cases that run with
it, the deltas, what a case hangs on and the table, with a fake run in place of the real one."""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import harness.rig.build as build_module
import harness.runs.plan as run_module
import harness.studies.reproduce as reproduce_module
from harness.analysis import AnalysisSummary
from harness.core.errors import NetreproError
from harness.link import LinkSpec, parse_rate, parse_time
from harness.link.air import udp_goodput_bps
from harness.link.saturate import FRAME, UDP_PAYLOAD
from harness.rig.devicetime import TimeChoice
from harness.rig.platform import load_platform
from harness.rig.session import Session
from harness.runs.result import RunResult
from harness.studies.report_file import load_report, report_names
from harness.studies.reproduce import reproduce
from harness.studies.sensitivity import (
    Setup,
    Target,
    Unvaried,
    apply,
    case_setup,
    delta_pct,
    depends,
    format_sensitivity,
    moved,
    parse_sets,
    plan_input,
    plan_inputs,
    planned_runs,
    sensitivity,
    setting,
)

DEVICE = TimeChoice("device")
cli = importlib.import_module("harness.cli.main")  # harness.cli's `main` is the function, not the module


def _plan(name: str, time: TimeChoice = DEVICE) -> tuple[dict[str, Any], dict[str, str]]:
    report = load_report(name)
    varied, not_varied = plan_inputs(report, name, time, [c["case"] for c in report["cases"]])
    return {v.name: v for v in varied}, {n["name"]: n["why"] for n in not_varied}


# ------------------------------------------------------------------ every assumed input maps, or says why not

# (report, input) -> where it goes, or the start of why it is not varied
EXPECTED: dict[tuple[str, str], Target | str] = {
    ("ethernut2", "RTT"): Target("link", "ethernut2", "rtt", "ethernet"),
    ("ethernut2", "bytes in a K of KB/s"): "it changes no run, only the report's figures converted to Mbit/s",
    ("openmv-n6", "ethernet rate"): Target("link", "openmv-n6", "rate", "ethernet"),
    ("openmv-n6", "ethernet RTT"): Target("link", "openmv-n6", "rtt", "ethernet"),
    ("openmv-n6", "socket write/read size"): Target("chunk", "openmv-n6", "chunk"),
    ("openmv-n6", "instructions per cycle (device time only)"): Target("cpu", "openmv-n6", "ipc"),
    ("openmv-n6", "wifi aggregation limit (A-MPDU frames)"): Target("air", "openmv-n6", "agg_frames", "wifi"),
    ("openmv-n6", "wifi chip's host bus rate (SDIO)"): Target("air", "openmv-n6", "bus_rate", "wifi"),
    ("openmv-n6", "wifi chip's host bus cost a transfer"): Target("air", "openmv-n6", "bus_cost", "wifi"),
    ("openmv-rt1060", "wifi chip's host bus rate (SDIO)"): Target("air", "openmv-rt1060", "bus_rate", "wifi"),
    ("openmv-rt1060", "wifi chip's host bus cost a transfer"): Target("air", "openmv-rt1060", "bus_cost", "wifi"),
    ("openmv-n6", "wifi contention window (CWmin, slots)"): Target("air", "openmv-n6", "cwmin", "wifi"),
    ("openmv-rt1060", "wifi UDP goodput (calibrates the shared medium)"):
        Target("air", "openmv-rt1060", "phy_rate", "wifi"),
    ("openmv-rt1060", "wifi aggregation limit (A-MPDU frames)"): Target("air", "openmv-rt1060", "agg_frames", "wifi"),
    ("openmv-rt1060", "wifi contention window (CWmin, slots)"): Target("air", "openmv-rt1060", "cwmin", "wifi"),
    ("openmv-rt1060", "ethernet RTT"): Target("link", "openmv-rt1060", "rtt", "ethernet"),
    ("openmv-rt1060", "socket write/read size"): Target("chunk", "openmv-rt1060", "chunk"),
    ("openmv-rt1060", "instructions per cycle (device time only)"): Target("cpu", "openmv-rt1060", "ipc"),
    ("xbox", "RTT"): Target("link", "xbox", "rtt", "ethernet"),
    ("xbox", "frames held in front of the RX ring (rx_overflow_frames)"): Target("nic", "xbox", "rx_overflow_frames"),
    ("xbox", "frames a late link may hand the NIC back to back (rx_burst_frames)"):
        Target("nic", "xbox", "rx_burst_frames"),
    ("xbox", "instructions per cycle (device time only)"): Target("cpu", "xbox", "ipc"),
}


def test_every_assumed_input_of_every_report_is_varied_or_listed_with_why():
    seen = set()
    for name in report_names():
        assumed = {i["name"] for i in load_report(name)["inputs"] if i["provenance"] in ("assumed", "chosen")}
        varied, not_varied = _plan(name)
        assert set(varied) | set(not_varied) == assumed and not set(varied) & set(not_varied), name
        for input_name in assumed:
            expected = EXPECTED[(name, input_name)]  # a new assumed input needs its line above
            if isinstance(expected, Target):
                assert varied[input_name].target == expected, input_name
            else:
                assert not_varied[input_name].startswith(expected), not_varied[input_name]
            seen.add((name, input_name))
    assert seen == set(EXPECTED)


def test_the_baselines_ran_at_the_inputs_values():
    """Every varied input's value is what netrepro's files give: the reproduction's median is the figure at it."""
    for name in report_names():
        varied, _ = _plan(name)
        assert all(v.note is None for v in varied.values()), name


def test_an_input_whose_value_the_reproduction_did_not_run_with_is_marked():
    report = {"platform": "openmv-n6", "cases": [{"case": "c", "workload": "sock-rx", "link": "wifi"}], "inputs": [
        {"name": "rtt", "value": 5, "unit": "ms", "provenance": "assumed", "range": [4, 6],
         "sets": "platforms/openmv-n6.toml: links.wifi.rtt"},
        {"name": "rate", "value": 43, "unit": "Mbit/s", "provenance": "assumed", "range": [30, 50],
         "sets": "platforms/openmv-n6.toml: links.wifi.rate"}]}
    varied, _ = plan_inputs(report, "r", DEVICE, ["c"])
    rtt = load_platform("openmv-n6").links["wifi"]["rtt"]  # the calibrated delay
    assert varied[0].note == (f"the reproduction ran with {rtt} (platforms/openmv-n6.toml: links.wifi.rtt), not the "
                              "input's 5ms: its median is not the figure at the input's value")
    assert varied[1].note is None  # 43 Mbit/s is the preset's "43mbit"


def test_the_kinds_of_sets():
    assert parse_sets("platforms/openmv-n6.toml: links.wifi.rate") == Target("link", "openmv-n6", "rate", "wifi")
    assert parse_sets("platforms/xbox.toml: links.ethernet.rtt") == Target("link", "xbox", "rtt", "ethernet")
    assert parse_sets("platforms/xbox.toml: nic.rx_burst_frames") == Target("nic", "xbox", "rx_burst_frames")
    assert parse_sets("platforms/xbox.toml: cpu.ipc") == Target("cpu", "xbox", "ipc")
    assert parse_sets("reports/openmv-n6.toml: chunk") == Target("chunk", "openmv-n6", "chunk")
    for sets, why in [(None, "no sets"), ("the link", "is not 'platforms/P.toml: KEY'"),
                      ("platforms/xbox.toml: nic.wire_rate", "nic.wire_rate is not a key netrepro varies"),
                      ("platforms/xbox.toml: links.ethernet.loss", "is not a key"),
                      ("reports/xbox.toml: warmup", "the report key warmup is not one netrepro varies")]:
        with pytest.raises(Unvaried, match=why):
            parse_sets(sets)


def test_an_input_that_cannot_be_varied_says_why():
    report = {"platform": "openmv-n6", "cases": [{"case": "c", "workload": "sock-rx", "link": "wifi"}], "inputs": [
        {"name": "a", "value": 5, "unit": "ms", "provenance": "assumed", "range": [1, 9],
         "sets": "platforms/openmv-n6.toml: links.lte.rtt"},
        {"name": "b", "value": 5, "unit": "Mbit/s", "provenance": "assumed", "range": [1, 9],
         "sets": "platforms/openmv-n6.toml: links.wifi.rtt"},
        {"name": "c", "value": 512, "unit": "B", "provenance": "assumed", "range": [256, 1024],
         "sets": "reports/other.toml: chunk"},
        {"name": "d", "value": 0.2, "unit": "ms", "provenance": "assumed", "range": [0.1, 1],
         "sets": "platforms/openmv-n6.toml: links.ethernet.rtt"},
        {"name": "e", "value": 1.0, "provenance": "assumed", "range": [0.5, 2],
         "sets": "platforms/openmv-n6.toml: cpu.ipc"},
        {"name": "f", "value": 5, "unit": "ms", "provenance": "report", "source": "s"},
    ]}
    _, host = plan_inputs(report, "r", TimeChoice("host"), ["c"])
    _, device = plan_inputs(report, "r", DEVICE, [])
    reasons = {n["name"]: n["why"] for n in host}
    assert reasons["a"] == "platform openmv-n6 has no link preset 'lte'"
    assert reasons["b"].startswith("a link RTT in Mbit/s is not converted")
    assert reasons["c"] == "it sets reports/other.toml, not this report's reports/r.toml"
    assert reasons["d"] == "no case of the report runs with it"
    assert reasons["e"].startswith("the runs are in host time")
    assert "f" not in reasons  # a report input is the report's, not assumed
    assert {n["name"]: n["why"] for n in device}["e"] == "none of the cases that run with it was run this time (c)"
    _, given = plan_inputs(report, "r", TimeChoice("device", mips=100), ["c"])
    assert {n["name"]: n["why"] for n in given}["e"] == "--mips 100 fixes the modelled rate: the IPC is not used"


# ------------------------------------------------------------------ units


def test_link_rates_and_rtts_are_converted_to_the_presets_units():
    rate, rtt = Target("link", "p", "rate", "wifi"), Target("link", "p", "rtt", "wifi")
    assert setting(rate, 43, "Mbit/s") == "43mbit" and parse_rate(setting(rate, 43, "Mbit/s")) == 43_000_000
    assert parse_rate(setting(rate, 72.5, "Mbit/s")) == 72_500_000
    assert parse_rate(setting(rate, 1, "Gbit/s")) == 1_000_000_000
    assert parse_rate(setting(rate, 64, "kbit/s")) == 64_000
    assert parse_rate(setting(rate, 1234567.125, "Mbit/s")) == 1_234_567_125_000  # no digits lost to %g
    assert setting(rtt, 5.5, "ms") == "5.5ms" and parse_time(setting(rtt, 5.5, "ms")) == pytest.approx(0.0055)
    assert parse_time(setting(rtt, 0.05, "ms")) == pytest.approx(50e-6)
    assert parse_time(setting(rtt, 300, "us")) == pytest.approx(300e-6)
    for target, unit in [(rate, "MB/s"), (rate, None), (rtt, "s2"), (rtt, None)]:
        with pytest.raises(Unvaried, match="is not converted"):
            setting(target, 1, unit)


def test_frames_bytes_and_ipc():
    frames, chunk, ipc = Target("nic", "x", "rx_burst_frames"), Target("chunk", "r", "chunk"), Target("cpu", "x", "ipc")
    assert setting(frames, 8, "frames") == 8 and isinstance(setting(frames, 8.0, "frames"), int)
    assert setting(chunk, 4096, "B") == 4096 and setting(chunk, 512, None) == 512
    assert setting(ipc, 2, None) == 2.0
    with pytest.raises(Unvaried, match="not a whole number of frames"):
        setting(frames, 2.5, "frames")
    with pytest.raises(Unvaried, match="counted in B, not KiB"):
        setting(chunk, 4, "KiB")
    with pytest.raises(Unvaried, match="an IPC has no unit"):
        setting(ipc, 1, "IPC")


# ------------------------------------------------------------------ overrides of one run


def _setup(report: str, case: str, time: TimeChoice = DEVICE) -> Setup:
    loaded = load_report(report)
    return case_setup(loaded, next(c for c in loaded["cases"] if c["case"] == case), None, time)


def test_a_link_input_changes_that_preset_only():
    setup = _setup("openmv-rt1060", "ethernet rx before")
    changed = apply(setup, Target("link", "openmv-rt1060", "rate", "ethernet"), setting(
        Target("link", "openmv-rt1060", "rate", "ethernet"), 25, "Mbit/s"))
    spec = changed.link_spec()
    assert spec.to_device.rate_bps == spec.to_peer.rate_bps == 25_000_000
    assert spec.rtt_s == pytest.approx(setup.link_spec().rtt_s) == pytest.approx(0.0002)
    assert changed.platform.links["wifi"] == setup.platform.links["wifi"]
    assert setup.link_spec().to_device.rate_bps == 100_000_000  # the original is untouched
    rtt = apply(setup, Target("link", "openmv-rt1060", "rtt", "ethernet"), "1ms")
    assert rtt.link_spec().rtt_s == pytest.approx(0.001) and rtt.link_spec().to_device.delay_s == pytest.approx(5e-4)
    assert len({changed.key(), setup.key(), rtt.key()}) == 3


def test_an_air_input_finds_the_phy_rate_again_so_the_udp_figure_holds():
    setup = _setup("openmv-n6", "wifi rx after")
    air = setup.link_spec()
    udp = udp_goodput_bps(air, FRAME, UDP_PAYLOAD)
    assert udp == pytest.approx(43e6, rel=0.01)  # the preset as calibrate-medium left it
    for key, value in (("agg_frames", 8), ("cwmin", 31), ("cwmin", 7)):
        changed = apply(setup, Target("air", "openmv-n6", key, "wifi"), value).link_spec()
        assert getattr(changed, key) == value and changed.phy_rate_bps != air.phy_rate_bps
        assert udp_goodput_bps(changed, FRAME, UDP_PAYLOAD) == pytest.approx(udp, rel=1e-4)
        assert changed.rtt_s == air.rtt_s and changed.medium == "shared"
    # fewer frames a turn or a longer backoff: the same UDP figure needs a faster PHY, and the reverse
    assert apply(setup, Target("air", "openmv-n6", "agg_frames", "wifi"), 8).link_spec().phy_rate_bps > air.phy_rate_bps
    assert apply(setup, Target("air", "openmv-n6", "cwmin", "wifi"), 7).link_spec().phy_rate_bps < air.phy_rate_bps
    target = Target("air", "openmv-rt1060", "phy_rate", "wifi")
    slower = apply(_setup("openmv-rt1060", "wifi rx before"), target, setting(target, 25, "Mbit/s")).link_spec()
    # a turn holds whole frames, so the goodput steps up where one more fits: it lands within calibrate-medium's 1 %
    assert 25e6 <= udp_goodput_bps(slower, FRAME, UDP_PAYLOAD) <= 25e6 * 1.01
    with pytest.raises(Unvaried, match="is a wire: agg_frames applies on the shared medium"):
        plan_input({"name": "a", "value": 64, "unit": "frames", "provenance": "assumed", "range": [8, 64],
                    "sets": "platforms/openmv-n6.toml: links.wifi-wire.agg_frames"},
                   {"platform": "openmv-n6", "cases": [{"case": "c", "workload": "sock-rx", "link": "wifi-wire"}]},
                   "r", DEVICE, ["c"])


def test_a_nic_input_changes_that_key_and_holds_the_other_at_its_value():
    setup = _setup("xbox", "pktdrv rx")
    as_run = Session.link_as_run(setup.link_spec(), setup.platform).to_device
    assert (as_run.pace_burst_frames, as_run.sock_frames) == (4, 4)
    burst = apply(setup, Target("nic", "xbox", "rx_burst_frames"), 1)
    to_device = Session.link_as_run(burst.link_spec(), burst.platform).to_device
    # rx_overflow_frames defaults to max(2, rx_burst_frames): held at 4, not dropped to 2 with the burst
    assert (to_device.pace_burst_frames, to_device.sock_frames) == (1, 4)
    held = apply(setup, Target("nic", "xbox", "rx_overflow_frames"), 11)
    to_device = Session.link_as_run(held.link_spec(), held.platform).to_device
    assert (to_device.pace_burst_frames, to_device.sock_frames) == (4, 11)
    hold = _setup("xbox", "nvnetdrv duplex rx, hold")
    assert apply(hold, Target("nic", "xbox", "rx_burst_frames"), 8).platform.nic.rx_overflow == "hold"


def test_the_ipc_sets_the_modelled_rate_in_device_time():
    setup = _setup("xbox", "nvnetdrv rx", TimeChoice("device", host_mips=250))
    slow = apply(setup, Target("cpu", "xbox", "ipc"), 0.5)
    assert slow.time == TimeChoice("device", mips=733 * 0.5, host_mips=250)
    assert slow.platform.time(slow.time).model_mips == pytest.approx(366.5)
    assert setup.platform.time(setup.time).model_mips == pytest.approx(733)
    assert slow.platform.time(slow.time).dilation == pytest.approx(setup.platform.time(setup.time).dilation / 2)


def test_the_chunk_goes_to_the_workload():
    setup = _setup("openmv-n6", "wifi tx before")
    assert setup.workload.chunk == 512 and setup.workload.seconds == load_report("openmv-n6")["seconds"]
    assert apply(setup, Target("chunk", "openmv-n6", "chunk"), 4096).workload.chunk == 4096


def test_the_setup_is_the_run_reproduce_makes(tmp_path, monkeypatch):
    """The same board, link, workload and time as reproduce's RunPlan for every case (guards against drift)."""
    plans = []

    def start(plan, run_dir, analyser, progress=None):
        plans.append(plan)
        return _result(plan.link, plan.workload, 10.0)

    monkeypatch.setattr(reproduce_module, "lwip_tree", lambda path: tmp_path)
    monkeypatch.setattr(build_module, "lwip_tree", lambda path: tmp_path)
    monkeypatch.setattr(run_module, "build_firmware", lambda config, *_: SimpleNamespace(profile=config.profile))
    monkeypatch.setattr(run_module.RunPlan, "start", start)
    for name in ("openmv-n6", "ethernut2"):
        plans.clear()
        reproduce(name, out=tmp_path / name, repeats=1, time=DEVICE)
        report = load_report(name)
        for spec, plan in zip(report["cases"], plans, strict=True):
            setup = case_setup(report, spec, None, DEVICE)
            assert (setup.platform.nic, setup.link_spec(), setup.workload) == (plan.platform.nic, plan.link,
                                                                               plan.workload)
            assert (setup.profile, setup.platform.time(setup.time)) == (plan.firmware.profile.name, plan.time)


# ------------------------------------------------------------------ which cases


def test_the_cases_that_run_with_an_input():
    n6 = load_report("openmv-n6")
    picked = {kind: [c["case"] for c in n6["cases"] if depends(target, n6, c)] for kind, target in [
        ("ethernet", Target("link", "openmv-n6", "rate", "ethernet")),
        ("wifi", Target("link", "openmv-n6", "rtt", "wifi")), ("cpu", Target("cpu", "openmv-n6", "ipc")),
        ("chunk", Target("chunk", "openmv-n6", "chunk")), ("other board", Target("cpu", "xbox", "ipc"))]}
    assert picked["ethernet"] == ["ethernet rx before", "ethernet rx after"]
    assert picked["wifi"] == ["wifi rx before", "wifi rx after", "wifi tx before", "wifi tx after"]
    assert picked["cpu"] == picked["chunk"] == [c["case"] for c in n6["cases"]]
    assert picked["other board"] == []
    chunk = Target("chunk", "r", "chunk")
    report = {"platform": "xbox"}
    assert not depends(chunk, report, {"workload": "rr", "link": "ethernet"})         # iperf writes no chunks
    assert not depends(chunk, report, {"workload": "discard", "chunk": 536})          # its own chunk stands
    assert depends(chunk, report, {"workload": "discard"})
    elsewhere = {"workload": "rx", "link": "ethernet", "platform": "openmv-n6"}
    assert not depends(Target("nic", "xbox", "rx_burst_frames"), report, elsewhere)   # the case's own board
    assert depends(Target("nic", "openmv-n6", "rx_burst_frames"), report, elsewhere)


# ------------------------------------------------------------------ arithmetic and the "hangs on" line


def test_delta_is_signed_percent_of_the_baseline():
    assert delta_pct(36.6, 30.0) == 22.0 and delta_pct(24.9, 30.0) == -17.0
    assert delta_pct(30.0, 30.0) == 0.0
    assert delta_pct(None, 30.0) is None and delta_pct(30.0, None) is None and delta_pct(1.0, 0.0) is None


def _entry(low: float | None, high: float | None, baseline: float | None = 30.0) -> dict[str, Any]:
    def end(median):
        return {"median_mbps": median, "delta_pct": delta_pct(median, baseline), "is_baseline": False}
    return {"baseline_mbps": baseline, "low": end(low), "high": end(high)}


def test_an_input_moves_a_case_only_beyond_the_band():
    assert moved(_entry(30.0, 34.5), 0.15) is None                 # +15.0 %: on the band, not beyond it
    assert moved(_entry(30.0, 34.53), 0.15) == "+15.1 %"
    assert moved(_entry(24.9, 33.0), 0.15) == "-17.0 %"           # the larger end speaks
    assert moved(_entry(24.9, 33.0), 0.20) is None                # the report's band, not a fixed one
    assert moved(_entry(None, 30.0), 0.15) == "no figure at the low end"
    assert moved(_entry(None, 40.0), 0.15) == "+33.3 %, no figure at the low end"
    assert moved(_entry(None, None), 0.15) == "no figure at the low and high ends"
    assert moved(_entry(10.0, 50.0, baseline=None), 0.15) is None  # no baseline, nothing to move from


# ------------------------------------------------------------------ a whole study with a fake run


def _result(link: LinkSpec, workload: Any, figure: float | None, verdict: str = "window-limited") -> RunResult:
    return RunResult(platform="p", profile="q", lwip_version="2.1.3", link=link, workload=workload.describe(),
                     run_dir="/x", capture="/nonexistent/capture.pcap", console_log="/x/l", device="10.0.0.2",
                     throughput_mbps=figure, analysis=AnalysisSummary(verdict=verdict))


def _n6_document(run_dir: Path) -> dict[str, Any]:
    cases = [{"case": c["case"], "median_mbps": 30.0, "min_mbps": 29.0, "max_mbps": 31.0, "verdict": "window-limited",
              "run_dirs": [f"/base/{c['case']}"]} for c in load_report("openmv-n6")["cases"]]
    return {"report": "openmv-n6", "run_dir": str(run_dir), "time": "device", "repeats": 3, "band": 0.15,
            "cases": cases}


def fake_n6(setup: Setup, run_dir: Path) -> RunResult:
    """wifi rx moves with the chunk (+22 % at 4096 B); the wifi cases with the aggregation limit (-10 % at 8
    frames); every case with the IPC (-17 %, cpu-limited, at 0.5); the
    ethernet cases with the RTT (-5 % at 1 ms); the 1 ms RTT fails for ethernet rx after."""
    figure, verdict = 30.0, "window-limited"
    ethernet_rtt = setup.link_spec().rtt_s if setup.link == "ethernet" else 0.0
    if setup.workload.chunk == 4096 and setup.case.startswith("wifi rx"):
        figure = 36.6
    if setup.time.mips == 400:
        figure, verdict = 24.9, "cpu-limited"
    if setup.link == "wifi" and setup.link_spec().agg_frames == 8:
        figure = 27.0
    if ethernet_rtt == pytest.approx(0.001):
        if setup.case == "ethernet rx after":
            raise NetreproError("boot timed out")
        figure = 28.5
    return _result(setup.link_spec(), setup.workload, figure, verdict)


@pytest.fixture
def n6_study(tmp_path) -> dict[str, Any]:
    return sensitivity("openmv-n6", _n6_document(tmp_path), time=DEVICE, execute=fake_n6)


def test_a_study_runs_each_end_and_compares_with_the_baseline(n6_study, tmp_path):
    inputs = {i["name"]: i for i in n6_study["inputs"]}
    assert list(inputs) == ["wifi chip's host bus rate (SDIO)", "wifi chip's host bus cost a transfer",
                            "wifi aggregation limit (A-MPDU frames)", "wifi contention window (CWmin, slots)",
                            "ethernet rate", "ethernet RTT", "socket write/read size",
                            "instructions per cycle (device time only)"]
    aggregation = {c["case"]: c for c in inputs["wifi aggregation limit (A-MPDU frames)"]["cases"]}
    assert list(aggregation) == ["wifi rx before", "wifi rx after", "wifi tx before", "wifi tx after"]
    assert aggregation["wifi rx after"]["low"]["delta_pct"] == -10.0 and aggregation["wifi rx after"]["high"][
        "is_baseline"]  # 64 frames is the value
    chunk = {c["case"]: c for c in inputs["socket write/read size"]["cases"]}
    assert chunk["wifi rx before"]["high"]["median_mbps"] == 36.6 and chunk["wifi rx before"]["high"]["delta_pct"] == 22
    assert chunk["wifi tx before"]["high"]["delta_pct"] == 0.0
    assert chunk["wifi rx before"]["low"]["is_baseline"] and chunk["wifi rx before"]["low"]["run_dirs"] == [
        "/base/wifi rx before"]  # 512 B is the value: the baseline's own runs, none made again
    ipc = {c["case"]: c for c in inputs["instructions per cycle (device time only)"]["cases"]}
    assert ipc["wifi tx after"]["low"] == {**ipc["wifi tx after"]["low"], "value": 0.5, "median_mbps": 24.9,
                                           "delta_pct": -17.0, "verdict": "cpu-limited"}
    rate = {c["case"]: c for c in inputs["ethernet rate"]["cases"]}
    assert list(rate) == ["ethernet rx before", "ethernet rx after"] and rate["ethernet rx before"]["high"][
        "is_baseline"]  # 1000 Mbit/s is the value
    rtt = {c["case"]: c for c in inputs["ethernet RTT"]["cases"]}
    failed = rtt["ethernet rx after"]["high"]
    assert (failed["median_mbps"], failed["runs_failed"], failed["error"]) == (None, 1, "boot timed out")
    run_dir = Path(failed["run_dirs"][0])
    assert run_dir.parent == tmp_path / "sensitivity" / "6-ethernet-RTT-high" and run_dir.name == "ethernet-rx-after-1"
    assert n6_study["not_varied"] == []
    assert json.loads((tmp_path / "sensitivity.json").read_text()) == n6_study
    assert (tmp_path / "sensitivity.txt").read_text() == format_sensitivity(n6_study) + "\n"


def test_what_each_case_hangs_on(n6_study):
    lines = format_sensitivity(n6_study).splitlines()
    closing = lines[lines.index("what each case hangs on (an input whose range moved its median by more than the "
                                "band, 15 %):") + 1:]
    assert closing == [
        "  wifi rx before hangs on: socket write/read size (+22.0 %), instructions per cycle (device time only) "
        "(-17.0 %)",
        "  wifi rx after hangs on: socket write/read size (+22.0 %), instructions per cycle (device time only) "
        "(-17.0 %)",
        "  wifi tx before hangs on: instructions per cycle (device time only) (-17.0 %)",
        "  wifi tx after hangs on: instructions per cycle (device time only) (-17.0 %)",
        "  ethernet rx before hangs on: instructions per cycle (device time only) (-17.0 %)",
        "  ethernet rx after hangs on: ethernet RTT (no figure at the high end), instructions per cycle "
        "(device time only) (-17.0 %)",
    ]


def test_the_table(n6_study):
    text = format_sensitivity(n6_study)
    lines = text.splitlines()
    assert lines[0].startswith("sensitivity of openmv-n6: the cases that run with an assumed input, rerun with it "
                               "at each end of its range and every other input at its value (1 run an end, device "
                               "time; figures in Mbit/s; delta % against the reproduction's median of 3 runs")
    at = lines.index("ethernet RTT = 0.2 ms, range 0.05-1 ms  [platforms/openmv-n6.toml: links.ethernet.rtt: "
                     "0.05ms / 1ms]")
    header, before, after = lines[at + 1:at + 4]
    assert header.split() == ["case", "baseline", "(min-max)", "low", "0.05", "ms", "high", "1", "ms", "verdict"]
    assert before.split() == ["ethernet", "rx", "before", "30.0", "(29.0-31.0)", "30.0", "(+0.0", "%)", "28.5",
                              "(-5.0", "%)", "window-limited"]
    assert after.split() == ["ethernet", "rx", "after", "30.0", "(29.0-31.0)", "30.0", "(+0.0", "%)", "failed",
                             "(1", "of", "1", "run)", "window-limited"]
    ipc = lines.index("instructions per cycle (device time only) = 1, range 0.5-2  [platforms/openmv-n6.toml: "
                      "cpu.ipc: mips 400 / mips 1600]")
    assert lines[ipc + 2].split() == ["wifi", "rx", "before", "30.0", "(29.0-31.0)", "24.9", "(-17.0", "%)", "30.0",
                                      "(+0.0", "%)", "window-limited;", "low:", "cpu-limited"]
    assert "= baseline" in lines[lines.index(next(x for x in lines if x.startswith("socket write/read size"))) + 2]
    assert "not varied:" not in text


def test_inputs_not_varied_are_listed_in_the_text(tmp_path):
    report = load_report("ethernut2")
    cases = [{"case": c["case"], "median_mbps": 2.2, "min_mbps": 2.2, "max_mbps": 2.2, "verdict": "sender-limited"}
             for c in report["cases"]]
    document = {"report": "ethernut2", "run_dir": str(tmp_path), "time": "device", "repeats": 3, "cases": cases}
    found = sensitivity("ethernut2", document, time=DEVICE,
                        execute=lambda setup, run_dir: _result(setup.link_spec(), setup.workload, 2.2))
    text = format_sensitivity(found)
    assert ("  bytes in a K of KB/s (reports/ethernut2.toml: unit_bytes): it changes no run, only the report's "
            "figures converted to Mbit/s (1000 B moves them -2.3 %)") in text.splitlines()
    assert "  default 536: no assumed input moved it by more than 15 %" in text.splitlines()
    document["cases"][1]["median_mbps"] = None
    found = sensitivity("ethernut2", document, time=DEVICE,
                        execute=lambda setup, run_dir: _result(setup.link_spec(), setup.workload, 2.2))
    assert "  tuned 1460: the reproduction gave no figure to compare with" in format_sensitivity(found).splitlines()


def test_two_way_cases_share_their_runs(tmp_path):
    report = load_report("xbox")
    cases = [{"case": c["case"], "median_mbps": 90.0, "min_mbps": 90.0, "max_mbps": 90.0, "verdict": None}
             for c in report["cases"][:2]]  # pktdrv rx and tx: one iperf -r run
    document = {"report": "xbox", "run_dir": str(tmp_path), "time": "device", "repeats": 3, "cases": cases}
    calls = []

    def execute(setup: Setup, run_dir: Path) -> RunResult:
        calls.append(setup.case)
        result = _result(setup.link_spec(), setup.workload, None)
        result.throughput_mbps = {"rx": 45.0, "tx": 0.02}
        return result

    found = sensitivity("xbox", document, repeats=2, time=DEVICE, execute=execute)
    # RTT, two NIC keys and the IPC, two ends each (no end is a value), two repeats: 16 runs, not 32
    assert calls == ["pktdrv rx"] * 16
    rtt = found["inputs"][0]["cases"]
    assert [c["low"]["median_mbps"] for c in rtt] == [45.0, 0.02]
    assert [c["low"]["delta_pct"] for c in rtt] == [-50.0, -100.0]


def test_the_runs_a_study_plans():
    report = load_report("openmv-n6")
    varied, _ = plan_inputs(report, "openmv-n6", DEVICE, [c["case"] for c in report["cases"]])
    # the bus's rate: one end (192 is the top of its range) x 4 wifi cases; its cost 2 x 4; aggregation: one end
    # (64 is the value) x 4; CWmin 2 x 4; ethernet rate: one end (1000 is the value) x 2 cases; RTT 2 x 2; chunk
    # one end (512) x 6; IPC 2 x 6
    assert planned_runs(varied, report, [c["case"] for c in report["cases"]]) == 4 + 8 + 4 + 8 + 2 + 4 + 6 + 12
    assert planned_runs(varied, report, ["wifi rx before"]) == 1 + 2 + 1 + 2 + 1 + 2


def test_a_study_refuses_what_would_not_compare(tmp_path):
    document = _n6_document(tmp_path)
    with pytest.raises(NetreproError, match="not a positive number of runs"):
        sensitivity("openmv-n6", document, repeats=0, execute=fake_n6)
    with pytest.raises(NetreproError, match="the reproduction ran in device time, not host"):
        sensitivity("openmv-n6", document, time=TimeChoice("host"), execute=fake_n6)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ the command line


def test_the_command_line_prints_the_table_after_the_reproduction(tmp_path, monkeypatch, capsys):
    document = {**_n6_document(tmp_path), "title": "N6", "inputs": []}
    given = {}

    def study(name, doc, **kwargs):
        given.update(kwargs, name=name)
        return sensitivity(name, doc, time=DEVICE, execute=fake_n6)

    monkeypatch.setattr(cli, "reproduce", lambda *args, **kwargs: document)
    monkeypatch.setattr(cli, "format_report", lambda doc: "THE REPORT TABLE")
    monkeypatch.setattr(cli, "sensitivity", study)
    cli.main(["reproduce", "openmv-n6", "--sensitivity", "--sensitivity-repeats", "2", "--quiet"])
    out = capsys.readouterr().out
    assert out.startswith("THE REPORT TABLE\n\nsensitivity of openmv-n6:")
    assert given["name"] == "openmv-n6" and given["repeats"] == 2
    cli.main(["reproduce", "openmv-n6", "--sensitivity", "--json"])
    printed = json.loads(capsys.readouterr().out)
    assert printed["sensitivity"]["inputs"][0]["name"] == "wifi chip's host bus rate (SDIO)"
    assert given["repeats"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sensitivity", "sensitivity-2", "sensitivity.json",
                                                          "sensitivity.txt"]  # a second study keeps the first's runs
    document.pop("sensitivity")
    cli.main(["reproduce", "openmv-n6", "--json"])
    assert "sensitivity" not in json.loads(capsys.readouterr().out)


def test_dataclass_setups_are_not_shared_across_changes():
    """Applying an input never changes the setup it came from (frozen platform tables are copied)."""
    setup = _setup("xbox", "pktdrv rx")
    before = dataclasses.replace(setup)
    apply(setup, Target("link", "xbox", "rate", "ethernet"), "10mbit")
    apply(setup, Target("nic", "xbox", "rx_burst_frames"), 1)
    assert setup.platform.links == before.platform.links and setup.platform.nic == load_platform("xbox").nic


def test_a_study_may_vary_only_some_inputs(tmp_path):
    calls = []

    def execute(setup: Setup, run_dir: Path) -> RunResult:
        calls.append((setup.case, setup.link_spec().agg_frames))
        return fake_n6(setup, run_dir)

    found = sensitivity("openmv-n6", _n6_document(tmp_path), time=DEVICE, execute=execute,
                        inputs=["wifi aggregation limit (A-MPDU frames)"])
    assert [i["name"] for i in found["inputs"]] == ["wifi aggregation limit (A-MPDU frames)"]
    assert calls == [(case, 8) for case in ("wifi rx before", "wifi rx after", "wifi tx before", "wifi tx after")]
    with pytest.raises(NetreproError, match="'wifi rate' is not an assumed input of openmv-n6 that netrepro varies"):
        sensitivity("openmv-n6", _n6_document(tmp_path), time=DEVICE, execute=execute, inputs=["wifi rate"])
