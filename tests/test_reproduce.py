"""The report machinery without runs: case keys, units, two-way cases, the inputs and their provenance, the
document's agreement and bookkeeping, and the table (the claims themselves: tests/test_claims.py)."""

from __future__ import annotations

import dataclasses
import json
import threading
import tomllib
from pathlib import Path
from typing import Any

import pytest

import harness.runs.analyse as run_module
from harness.analysis import AnalysisSummary
from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link.settings import LINK_SETTINGS
from harness.link.units import parse_rate, parse_time
from harness.rig.devicetime import DeviceTime
from harness.rig.workload import DISCARD_BYTES
from harness.runs.analyse import Analyser, MeasuredRun
from harness.runs.disturbed import measure_trusted
from harness.runs.result import RunResult
from harness.studies.cases import CaseResult, judge_d_check, replaced_runs, summarise_runs
from harness.studies.claims import judge
from harness.studies.report_check import check_input
from harness.studies.report_file import load_report, report_names
from harness.studies.reproduce import (
    case_direction,
    chosen_cases,
    fitted_cases,
    format_report,
    judged_document,
    repeat_runs,
    report_band,
    report_figure_mbps,
    reproduce,
)

ROOT = Path(__file__).resolve().parent.parent


def case(name: str, median: float | None, report: Any = None, **claim) -> CaseResult:
    return CaseResult(case=name, platform="p", profile="q", link="l", workload="discard", report_mbps=report,
                      median_mbps=median, min_mbps=median, max_mbps=median, claim=claim,
                      runs_mbps=[median] * 3 if median is not None else [])


def test_every_report_loads_and_names_the_direction_of_its_two_way_cases():
    for name in ("openmv-n6", "openmv-rt1060", "ethernut2", "xbox"):
        for spec in load_report(name)["cases"]:
            case_direction(spec)  # raises for an rr/duplex case without rx/tx


def test_a_two_way_case_must_say_which_direction_it_is():
    with pytest.raises(NetreproError, match=r"runs rr .* does not say which one"):
        case_direction({"case": "c", "workload": "rr"})
    with pytest.raises(NetreproError, match="only to the rr and duplex"):
        case_direction({"case": "c", "workload": "rx", "direction": "rx"})
    assert case_direction({"case": "c", "workload": "duplex", "direction": "tx"}) == "tx"


def test_report_figures_in_kb_per_second_are_converted_with_the_stated_k():
    report = {"report": "r", "unit": "KB/s", "unit_bytes": 1024}
    assert report_figure_mbps(report, {"case": "c", "report_value": 269.4}) == pytest.approx(2.2069, abs=1e-4)
    assert report_figure_mbps({**report, "unit_bytes": 1000}, {"case": "c", "report_value": 269.4}) == \
        pytest.approx(2.1552)
    with pytest.raises(NetreproError, match="no unit_bytes"):
        report_figure_mbps({"report": "r"}, {"case": "c", "report_value": 1.0})


def test_ratio_and_distance_from_the_report_are_judged_against_the_report_own_figures():
    default = case("default", 2.00, 2.2069)
    tuned = case("tuned", 2.67, 2.8164, within_of_report=0.30, ratio_to={"case": "default", "within": 0.15})
    others = {"default": default, "tuned": tuned}
    judge(tuned, others)
    assert tuned.claim_holds, tuned.claim_notes
    assert "1.335x default vs the report's 1.276x (+5%" in tuned.claim_notes[1]
    far = dataclasses.replace(tuned, median_mbps=3.4, claim_holds=None, claim_notes=[])
    judge(far, others)
    assert far.claim_holds is False and sum(n.startswith("fails") for n in far.claim_notes) == 1  # ratio 1.7x


def test_slower_than_holds_only_at_or_below_the_factor():
    fast = case("nvnetdrv tx", 94.0)
    slow = case("pktdrv tx", 47.0, slower_than={"case": "nvnetdrv tx", "factor": 0.5})
    judge(slow, {"nvnetdrv tx": fast})
    assert slow.claim_holds
    not_slow = case("pktdrv rx", 76.6, slower_than={"case": "nvnetdrv tx", "factor": 0.5})
    judge(not_slow, {"nvnetdrv tx": fast})
    assert not not_slow.claim_holds and "0.81x nvnetdrv tx (claim <= 0.5x)" in not_slow.claim_notes[0]


def test_the_table_shows_the_report_unit_the_stand_in_and_the_note():
    row = dataclasses.asdict(case("default 536", 2.0, 2.2069))
    row.update(report_value=269.4, median_in_unit=244.1)
    text = format_report({"title": "T", "repeats": 3, "run_dir": "/x", "unit": "KB/s", "unit_bytes": 1024,
                          "note": "Nut/OS is not available here", "stand_in": {"cpu": "simavr", "nic": "model"},
                          "cases": [row]})
    assert "report figures in KB/s, 1 K = 1024 B" in text
    assert "stand-in: simavr; NIC: model" in text and "note: Nut/OS is not available here" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("default 536"))
    assert "269.4" in line and "244.1" in line and "2.21" in line


def test_a_case_may_run_the_nic_with_another_overflow_policy():
    from harness.rig.platform import load_platform

    xbox = load_platform("xbox")
    held = xbox.with_nic(rx_overflow="hold")
    assert (xbox.nic["rx_overflow"], held.nic["rx_overflow"]) == ("drop", "hold")
    assert held.nic["wire_rate"] == xbox.nic["wire_rate"] and held.name == "xbox"
    with pytest.raises(NetreproError, match="is not hold or drop"):
        xbox.with_nic(rx_overflow="maybe")
    assert any(c.get("rx_overflow") == "hold" for c in load_report("xbox")["cases"])


# --- the inputs: what the model is given, apart from the figures it predicts ---------------------------------

def _setting(where: str) -> Any:
    """The value a file gives at 'path: dotted.key' (the NIC's rx_overflow_frames: its default when absent)."""
    path, key = where.split(": ")
    table = tomllib.loads((ROOT / path).read_text())
    *parents, leaf = key.split(".")
    for part in parents:
        table = table[part]
    if leaf == "rx_overflow_frames" and leaf not in table:  # the rig's default (harness/rig/session.py)
        return max(2, int(table.get("rx_burst_frames", 0)))
    if parents[:1] == ["links"] and leaf not in table:  # a medium's timing the preset leaves at the standard's
        return next(s.default for s in LINK_SETTINGS if s.name == leaf)
    return table[leaf]


def _in_input_unit(written: Any, unit: str | None) -> float:
    if unit == "Mbit/s":
        return parse_rate(written) / 1e6
    if unit == "ms":
        return parse_time(written) * 1e3
    if unit == "us":
        return parse_time(written) * 1e6
    return float(written)


def test_every_report_declares_its_band_and_inputs_with_their_provenance():
    for name in report_names():
        report = load_report(name)  # raises for an input without what its provenance needs
        assert 0 < report_band(report) < 1 and "band" in report, name
        kinds = {i["provenance"] for i in report["inputs"]}
        assert "assumed" in kinds, f"{name}: every report here rests on some assumption; say which"


def test_every_input_is_the_value_the_file_that_uses_it_gives():
    checked = 0
    for name in report_names():
        for item in load_report(name)["inputs"]:
            if "sets" in item and "calibrated" in item:
                # a calibration's input (the report's UDP figure, its RTT) sets what it produced: the file holds that
                written, leaf = _setting(item["sets"]), item["sets"].rsplit(".", 1)[1]
                if leaf == "rtt":  # calibrate-rtt: the base delay under which an idle ping reads the report's RTT
                    assert parse_time(written) * 1e3 == pytest.approx(item["calibrated"]["base_delay_ms"])
                else:
                    assert parse_rate(written) == parse_rate(item["calibrated"][leaf]), (name, item["name"])
                checked += 1
            elif "sets" in item:
                written = _setting(item["sets"])
                assert _in_input_unit(written, item.get("unit")) == pytest.approx(item["value"]), (name, item["name"])
                checked += 1
    assert checked >= 15
    bytes_sent = next(i for i in load_report("ethernut2")["inputs"] if i["name"] == "bytes sent")
    assert bytes_sent["value"] == DISCARD_BYTES


def test_the_rt1060_wifi_rtt_is_fitted_to_its_rx_figures_and_nothing_else_is_fitted():
    rt1060 = load_report("openmv-rt1060")
    assert fitted_cases(rt1060) == {"wifi rx before", "wifi rx after"}
    fitted = [i for i in rt1060["inputs"] if i["provenance"] == "fitted"]
    assert [i["sets"] for i in fitted] == ["platforms/openmv-rt1060.toml: links.wifi.rtt"]
    for name in ("openmv-n6", "ethernut2", "xbox"):
        assert fitted_cases(load_report(name)) == set(), name
    xbox = {i["name"]: i for i in load_report("xbox")["inputs"]}
    burst = next(i for n, i in xbox.items() if "rx_burst_frames" in n)
    overflow = next(i for n, i in xbox.items() if "rx_overflow_frames" in n)
    assert burst["provenance"] == "assumed"
    # set between figures to give the report's 33 Mbit/s: the pktdrv RX figure hangs on it
    assert (overflow["provenance"], overflow["cases"]) == ("chosen", ["pktdrv rx"])


def test_the_inputs_chosen_to_produce_a_mechanism_name_the_cases_that_hang_on_them():
    assert chosen_cases(load_report("xbox")["inputs"]) == {"pktdrv rx": [
        "frames held in front of the RX ring (rx_overflow_frames)"]}
    assert chosen_cases(load_report("openmv-rt1060")["inputs"]) == {"wifi tx before": ["socket write/read size"]}
    for name in ("openmv-n6", "ethernut2"):
        assert chosen_cases(load_report(name)["inputs"]) == {}, name


GOOD = {"name": "wifi rate", "value": 40, "unit": "Mbit/s", "provenance": "assumed", "why": "not published",
        "range": [25, 72]}


@pytest.mark.parametrize(("change", "message"), [
    ({"provenance": "guessed"}, "has provenance 'guessed'"),
    ({"why": None}, r"\(assumed\) has no why"),
    ({"range": [72, 25]}, "has range"),
    ({"range": [25]}, "has range"),
    ({"value": 80}, "lies outside its range"),
    ({"source": "PR"}, "has unknown key source"),
    ({"provenance": "report", "source": "PR", "why": None, "range": None}, None),
    ({"provenance": "report"}, r"\(report\) has no source"),
    ({"provenance": "fitted", "from": "RX figures", "cases": ["wifi rx"], "why": None, "range": None}, None),
    ({"provenance": "fitted", "from": "RX figures", "cases": ["wifi rx!"], "why": None, "range": None},
     "fitted to unknown case 'wifi rx!'"),
    ({"provenance": "fitted", "from": "RX figures", "cases": [], "why": None, "range": None}, "fitted to no case"),
    ({"provenance": "chosen", "cases": ["wifi rx"]}, None),
    ({"provenance": "chosen", "cases": ["wifi rx"], "range": None}, None),  # a chosen value's range is optional
    ({"provenance": "chosen", "cases": ["wifi rx!"]}, "is chosen for unknown case 'wifi rx!'"),
    ({"provenance": "chosen", "cases": []}, r"\(chosen\) names no case"),
    ({"provenance": "chosen"}, r"\(chosen\) has no cases"),
    ({"provenance": "chosen", "cases": ["wifi rx"], "why": None}, r"\(chosen\) has no why"),
    ({"provenance": "chosen", "cases": ["wifi rx"], "value": 80}, "lies outside its range"),
    ({"provenance": "chosen", "cases": ["wifi rx"], "from": "RX figures"}, "has unknown key from"),
])
def test_an_input_must_say_where_it_came_from(change, message):
    item = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    if message is None:
        check_input(item, {"wifi rx"}, "r.toml")
        return
    with pytest.raises(NetreproError, match=message) as raised:
        check_input(item, {"wifi rx"}, "r.toml")
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("bad", ["0", "1.5", '"15 %"', "true"])
def test_the_band_is_one_fraction_per_report_with_a_default(tmp_path, bad):
    assert report_band({}) == 0.15 and report_band({"band": 0.3}) == 0.3
    text = (ROOT / "reports" / "openmv-n6.toml").read_text().replace("band = 0.15", f"band = {bad}")
    (tmp_path / "r.toml").write_text(text)
    with pytest.raises(NetreproError, match=r"r.toml:\d+: the report has band") as raised:
        load_report(str(tmp_path / "r.toml"))
    assert "\n" not in str(raised.value)


# --- the document and the table ------------------------------------------------------------------------------

REPORT = {"band": 0.15, "cases": [],
          "inputs": [{"name": "wifi RTT", "value": 2.7, "unit": "ms", "provenance": "fitted",
                      "from": "the RX figures", "cases": ["rx before"]},
                     {"name": "wifi rate", "value": 40, "unit": "Mbit/s", "provenance": "assumed",
                      "why": "not published", "range": [25, 72]},
                     {"name": "ethernet rate", "value": 100, "unit": "Mbit/s", "provenance": "report",
                      "source": "PR: 100M line rate"}]}


def _judged_cases() -> list[CaseResult]:
    """One case of each kind the summary counts: fitted, agreeing, not agreeing, a failed run, unknown, no figure."""
    before = case("rx before", 14.0, 15.9, mss=800, at_least_mbps=10)
    after = case("rx after", 20.2, [22, 26], faster_than={"case": "rx before", "factor": 1.3})
    tx = case("tx after", 21.6, 22.2, at_least_mbps=20)
    tx.runs_failed, tx.error, tx.runs_mbps = 1, "QEMU exited with status 1", [21.4, 21.6]
    eth = case("ethernet tx", None, 91, at_least_mbps=85)
    eth.runs_failed, eth.error = 3, "boot timed out"
    other = case("ethernet rx", 88.0, None, window_scaling=False)
    for c in (before, after):
        c.device_mss = 800
    results = [before, after, tx, eth, other]
    for c in results:
        judge(c, {r.case: r for r in results})
    return results


def test_the_document_judges_every_figure_against_the_report_and_keeps_fitted_figures_apart():
    document = judged_document(REPORT, _judged_cases())
    rows = {c["case"]: c for c in document["cases"]}
    assert document["band"] == 0.15 and [i["name"] for i in document["inputs"]] == ["wifi RTT", "wifi rate",
                                                                                     "ethernet rate"]
    assert (rows["rx before"]["fitted"], rows["rx before"]["agrees"]) == (True, True)  # -11.9 %, but fitted
    assert (rows["rx after"]["delta_pct"], rows["rx after"]["agrees"]) == (-8.2, True)  # from the range's 22
    assert (rows["tx after"]["agrees"], rows["tx after"]["claim_result"]) == (False, "fails")  # a failed run
    assert (rows["ethernet tx"]["agrees"], rows["ethernet tx"]["runs_failed"]) == (False, 3)
    assert (rows["ethernet rx"]["agrees"], rows["ethernet rx"]["claim_result"]) == (None, "unknown")
    assert rows["rx after"]["claim_result"] == "holds" and rows["rx before"]["claim_result"] == "holds"
    # figures: rx after, tx after, ethernet tx (rx before is fitted); claims: all five; failing: tx after, eth tx
    assert document["summary"] == {"figures": 3, "agree": 1, "repeated": 0, "split": 0, "fitted": 1, "chosen": 0,
                                   "mechanisms": 5, "hold": 2, "unknown": 1, "by_construction": 0, "fail": 2,
                                   "replaced": 0, "host_dependent": 0, "d_checked": 0}
    assert not any(c["chosen"] or c["by_construction"] or c["runs_replaced"] or c["figure_of"] for c in rows.values())


def _table() -> str:
    document = {"title": "T", "repeats": 3, "run_dir": "/x", "stand_in": {"cpu": "M7", "nic": "LAN9118"},
                **judged_document(REPORT, _judged_cases())}
    return format_report(document)


def test_the_table_shows_inputs_agreement_mechanisms_failed_runs_and_the_summary():
    lines = _table().splitlines()
    header = next(ln for ln in lines if ln.startswith("case"))
    for column in ("report", "netrepro median (min-max, n runs)", "delta %", "within 15 %", "bound", "MSS",
                   "window", "cpu %", "us/seg", "verdict", "mechanisms"):
        assert column in header
    assert any("within 15 % of it" in ln for ln in lines[:lines.index(header)])
    inputs = lines.index("inputs (what the model was given, apart from the figures it predicts):")
    assert inputs < lines.index(header)
    assert lines[inputs + 1] == "  wifi RTT = 2.7 ms [fitted from the RX figures; fitted to the figures of rx before]"
    assert lines[inputs + 2] == "  wifi rate = 40 Mbit/s [assumed: not published; range 25-72 Mbit/s]"
    assert lines[inputs + 3] == "  ethernet rate = 100 Mbit/s [report: PR: 100M line rate]"
    row = {ln.split("  ")[0]: ln.split() for ln in lines[lines.index(header) + 2:] if ln[:1].isalpha()}
    assert row["rx before"][-2:] == ["-", "holds"] and "fitted" in row["rx before"]
    assert "20.2 (20.2-20.2, 3 runs)" in " ".join(row["rx after"]) and "-8.2" in row["rx after"]
    assert "yes" in row["rx after"] and "no" in row["tx after"] and row["tx after"][-1] == "FAILS"
    assert "failed (0 of 3 runs)" in " ".join(row["ethernet tx"])
    assert row["ethernet rx"][-1] == "unknown"
    summary = lines.index("1 of 3 report figures agree within 15 %; mechanisms 2 of 5 hold; 2 cases fail")
    assert set(lines[summary - 1]) == {"-"} and summary > lines.index(header)
    assert "  tx after: 1 of 3 runs failed: QEMU exited with status 1" in lines[summary:]
    assert "  ethernet tx: 3 of 3 runs failed: boot timed out" in lines[summary:]
    assert any(ln.startswith("  ethernet rx: unknown: window scaling not seen") for ln in lines[summary:])


def test_the_summary_line_counts_what_the_cases_say():
    results = _judged_cases()
    results[2].runs_failed, results[2].runs_mbps, results[2].error = 0, [21.6] * 3, None  # tx after: no failure
    judge(results[2], {r.case: r for r in results})
    text = format_report({"title": "T", "repeats": 3, "run_dir": "/x", **judged_document({**REPORT, "band": 0.02},
                                                                                         results)})
    assert "0 of 3 report figures agree within 2 %; mechanisms 3 of 5 hold; 1 case fails" in text.splitlines()
    assert "within 2 %" in next(ln for ln in text.splitlines() if ln.startswith("case"))


def test_an_unknown_case_is_a_one_line_error_naming_the_cases_before_anything_is_made(tmp_path):
    with pytest.raises(NetreproError) as raised:
        reproduce("openmv-n6", out=tmp_path, only=["wifi rx before", "wifi rx"])
    message = str(raised.value)
    assert "\n" not in message and "has no case 'wifi rx'" in message
    assert all(c["case"] in message for c in load_report("openmv-n6")["cases"])
    assert list(tmp_path.iterdir()) == []


def _run(figure: float | None) -> RunResult:
    rate = {"rate_bps": 43e6}
    return RunResult(platform="p", profile="q", lwip_version="2.1.3", link={"to_peer": rate, "to_device": rate},
                     workload={"name": "sock-rx"}, run_dir="/x", capture="/x/c", console_log="/x/l",
                     device="10.0.0.2", throughput_mbps=figure, analysis=AnalysisSummary(verdict="link-limited"))


class _Measured:
    """A MeasuredRun stand-in: its analysis records the thread it ran in, waits for `gate`, or fails."""

    def __init__(self, figure: float | None, gate: threading.Event | None = None, fails: bool = False) -> None:
        self.figure, self.gate, self.fails, self.thread = figure, gate, fails, None

    def analysed(self) -> RunResult:
        self.thread = threading.current_thread().name
        if self.gate is not None:
            assert self.gate.wait(10), "the next run never started"
        if self.fails:
            raise NetreproError("tshark could not read capture.pcap")
        return _run(self.figure)


def test_an_analysis_may_run_beside_the_next_run_and_a_failed_one_counts_as_a_failed_run(tmp_path):
    next_run_started = threading.Event()
    first, second = _Measured(30.0, gate=next_run_started), _Measured(None, fails=True)
    with Analyser() as analyser:
        def execute(run_dir: Path):
            if run_dir.name.endswith("-2"):
                next_run_started.set()  # the first run's analysis is still waiting for this
                return analyser.submit(second, overlap=True)
            return analyser.submit(first, overlap=True)

        found = repeat_runs(execute, "eth rx", tmp_path, 2, Progress(quiet=True))
        assert len(found.pending) == 2 and found.runs == []
        found.settled()
    assert first.thread.startswith("netrepro-analysis") and second.thread.startswith("netrepro-analysis")
    assert [r.throughput_mbps for r in found.runs] == [30.0] and found.error == "tshark could not read capture.pcap"
    assert found.pending == [] and len(found.run_dirs) == 2


def test_an_analysis_that_may_not_overlap_runs_at_once_in_the_callers_thread():
    inline = _Measured(25.0)
    with Analyser() as analyser:
        future = analyser.submit(inline, overlap=False)
        assert future.done() and inline.thread == threading.current_thread().name
    assert future.result().throughput_mbps == 25.0
    failing = Analyser().submit(_Measured(None, fails=True), overlap=False)
    with pytest.raises(NetreproError, match="tshark could not read"):
        failing.result()


def test_failed_runs_are_counted_per_case_whether_they_raised_or_gave_no_figure():
    result = CaseResult(case="c", platform="p", profile="q", link="l", workload="sock-rx", report_mbps=31)
    summarise_runs(result, [_run(30.0), _run(None), _run(32.0)], raised=1)
    assert (result.runs_failed, result.runs_mbps, result.median_mbps) == (2, [30.0, 32.0], 31.0)
    assert result.error.startswith("no figure in 1 of the 3 finished runs")
    clean = CaseResult(case="c", platform="p", profile="q", link="l", workload="sock-rx", report_mbps=31)
    summarise_runs(clean, [_run(30.0), _run(32.0)])
    assert clean.runs_failed == 0 and clean.error is None


def test_a_failed_run_is_counted_and_its_first_error_kept(tmp_path):
    outcomes = iter([NetreproError("QEMU exited with status 1"), _run(30.0), NetreproError("boot timed out")])

    def execute(run_dir: Path) -> RunResult:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    found = repeat_runs(execute, "wifi rx before", tmp_path, 3, Progress(quiet=True))
    assert len(found.runs) == 1 and found.error == "QEMU exited with status 1"
    assert [Path(d).name for d in found.run_dirs] == [f"wifi-rx-before-{i}" for i in (1, 2, 3)]
    result = CaseResult(case="c", platform="p", profile="q", link="l", workload="sock-rx", report_mbps=31,
                        error=found.error, claim={"at_least_mbps": 25})
    summarise_runs(result, found.runs, raised=len(found.run_dirs) - len(found.runs))
    judge(result, {})
    assert result.runs_failed == 2 and result.claim_holds is False
    assert result.claim_notes[0] == "fails: 2 of 3 runs failed: QEMU exited with status 1"


# --- honest bookkeeping: chosen inputs, claims by construction, a figure counted once, replaced runs -----------

def _document(report: dict[str, Any], results: list[CaseResult]) -> dict[str, Any]:
    for c in results:
        judge(c, {r.case: r for r in results})
    return {"title": "T", "repeats": 3, "run_dir": "/x", **judged_document(report, results)}


CHOSEN = {"name": "socket write size", "value": 512, "unit": "B", "provenance": "chosen",
          "why": "512 B writes run the 8000 B heap out, as the report's TX figure implies", "cases": ["tx before"],
          "range": [512, 4096]}


def test_a_figure_that_hangs_on_a_chosen_input_is_marked_and_not_counted():
    report = {"band": 0.15, "cases": [], "inputs": [CHOSEN]}
    document = _document(report, [case("tx before", 6.3, 6.4), case("tx after", 30.0, 22.2)])
    rows = {c["case"]: c for c in document["cases"]}
    assert (rows["tx before"]["chosen"], rows["tx before"]["agrees"]) == (True, True)  # agrees, but chosen to
    assert rows["tx after"]["chosen"] is False
    assert document["summary"]["figures"] == 1 and document["summary"]["agree"] == 0
    assert document["summary"]["chosen"] == 1
    lines = format_report(document).splitlines()
    assert ("  socket write size = 512 B [chosen: 512 B writes run the 8000 B heap out, as the report's TX figure "
            "implies; the figures of tx before hang on it; range 512-4096 B]") in lines
    assert "chosen" in next(ln for ln in lines if ln.startswith("tx before")).split()
    notes = lines.index("figures that hang on a chosen input (not counted):")
    assert lines[notes + 1] == "  tx before: socket write size"
    assert "0 of 1 report figures agree within 15 %; mechanisms 0 of 0 hold; 0 cases fail" in lines
    assert any("marked chosen" in ln for ln in lines[:lines.index(lines[notes])])  # said above the table too


def test_a_claim_by_construction_is_shown_and_not_counted_but_its_failure_counts():
    window = case("rx before", 23.7, None, window=23360, mss=1460)
    window.device_window_max, window.device_mss = 23360, 1460
    declared = case("tx after", 24.4, None, close_to={"case": "rx before", "within": 0.15},
                    by_construction="the profiles differ only in TCP_WND")
    mechanism = case("rx after", 34.1, None, faster_than={"case": "rx before", "factor": 1.1})
    document = _document({"band": 0.15, "cases": [], "inputs": []}, [window, declared, mechanism])
    rows = {c["case"]: c for c in document["cases"]}
    assert [rows[n]["claim_result"] for n in ("rx before", "tx after", "rx after")] == \
        ["by-construction", "by-construction", "holds"]
    assert rows["rx before"]["by_construction"] is True and rows["rx after"]["by_construction"] is False
    assert all(n.endswith(" [by construction]") for n in rows["rx before"]["claim_notes"])
    counts = document["summary"]
    assert (counts["mechanisms"], counts["hold"], counts["by_construction"]) == (1, 1, 2)
    lines = format_report(document).splitlines()
    assert ("0 of 0 report figures agree within 15 %; mechanisms 1 of 1 hold (2 more by construction, not counted); "
            "0 cases fail") in lines
    assert next(ln for ln in lines if ln.startswith("tx after")).endswith("by-construction")
    notes = lines.index("claims that hold by construction (shown, not counted):")
    assert lines[notes + 1:notes + 3] == [
        "  rx before: window, mss: the capture against what the case's own profile sets",
        "  tx after: the profiles differ only in TCP_WND"]
    window.device_window_max = 46720  # the build did not honour TCP_WND: a real failure
    document = _document({"band": 0.15, "cases": [], "inputs": []}, [window, declared, mechanism])
    assert {k: document["summary"][k] for k in ("mechanisms", "hold", "by_construction", "fail")} == \
        {"mechanisms": 2, "hold": 1, "by_construction": 1, "fail": 1}
    assert "  rx before: fails: device window 46720 (median None; claim 23360) [by construction]" in \
        format_report(document).splitlines()


def _duplex(hold_rx: float) -> tuple[dict[str, Any], list[CaseResult]]:
    """The Xbox's duplex figures, measured again with the NIC holding frames (figure_of the first two)."""
    report = {"band": 0.15, "inputs": [], "cases": [
        {"case": "duplex rx"}, {"case": "duplex tx"},
        {"case": "duplex rx, hold", "figure_of": "duplex rx"}, {"case": "duplex tx, hold", "figure_of": "duplex tx"}]}
    return report, [case("duplex rx", 64.6, 90.3), case("duplex tx", 92.9, 88.9),
                    case("duplex rx, hold", hold_rx, 90.3), case("duplex tx, hold", 92.9, 88.9)]


def test_a_report_figure_two_cases_measure_is_counted_once():
    document = _document(*_duplex(64.1))
    rows = {c["case"]: c for c in document["cases"]}
    assert rows["duplex rx, hold"]["figure_of"] == "duplex rx" and rows["duplex rx"]["figure_of"] is None
    counts = document["summary"]
    assert (counts["figures"], counts["agree"], counts["repeated"], counts["split"]) == (2, 1, 2, 0)
    lines = format_report(document).splitlines()
    assert ("1 of 2 distinct report figures agree within 15 % (2 measured by more than one case, each counted once); "
            "mechanisms 0 of 0 hold; 0 cases fail") in lines
    notes = lines.index("report figures measured by more than one case (counted once):")
    assert lines[notes + 1:notes + 3] == ["  duplex rx: duplex rx no, duplex rx, hold no: counts as no",
                                          "  duplex tx: duplex tx yes, duplex tx, hold yes: counts as yes"]


def test_a_report_figure_whose_cases_disagree_is_split_and_does_not_agree():
    document = _document(*_duplex(88.0))  # the held run agrees with 90.3, the dropping one does not
    counts = document["summary"]
    assert (counts["figures"], counts["agree"], counts["split"]) == (2, 1, 1)
    lines = format_report(document).splitlines()
    first = ("1 of 2 distinct report figures agree within 15 % (2 measured by more than one case, each counted once; "
             "1 split: its cases disagree, not counted as agreeing)")
    assert any(ln.startswith(first) for ln in lines)
    assert "  duplex rx: duplex rx no, duplex rx, hold yes: counts as split (not counted as agreeing)" in lines


def test_a_figure_the_first_case_agrees_with_and_a_repeat_cannot_judge_is_the_first_cases():
    report, results = _duplex(64.1)
    results[2] = case("duplex rx, hold", 90.0, 90.3)
    results[0].median_mbps = None  # no figure: no answer, not a disagreement
    results[0].runs_mbps = []
    counts = _document(report, results)["summary"]
    assert (counts["figures"], counts["agree"], counts["split"]) == (2, 1, 0)


def _replaced_run(figure: float, dilation: float, replaced: dict[str, Any] | None) -> RunResult:
    run = _run(figure)
    run.time, run.replaced, run.run_dir = {"mode": "device", "dilation": dilation}, replaced, f"/x/{figure}"
    return run


def test_a_run_a_repeat_replaced_is_listed_and_counted():
    disturbed = {"run_dir": "/x/tx-2", "figure": 18.5, "dilation": 4.0,
                 "why": "the host fell behind the board by 41 ms"}
    result = CaseResult(case="tx after", platform="p", profile="q", link="l", workload="sock-tx", report_mbps=22.2)
    summarise_runs(result, [_replaced_run(22.0, 4.0, None), _replaced_run(22.4, 8.0, disturbed),
                            _replaced_run(22.1, 4.0, None)])
    assert result.runs_replaced == [{**disturbed, "by": {"run_dir": "/x/22.4", "figure": 22.4, "dilation": 8.0}}]
    clean = case("rx after", 30.0, 31)
    document = _document({"band": 0.15, "cases": [], "inputs": []}, [result, clean])
    assert document["summary"]["replaced"] == 1 and document["summary"]["fail"] == 0
    lines = format_report(document).splitlines()
    assert ("2 of 2 report figures agree within 15 %; mechanisms 0 of 0 hold; 0 cases fail; 1 case had a run the "
            "host disturbed replaced at twice D (listed below)") in lines
    notes = lines.index("runs the host disturbed, repeated at twice D (the repeat's figure counts):")
    assert lines[notes + 1] == ("  tx after: figure 18.5 Mbit/s at D=4, replaced by 22.4 Mbit/s at D=8: the host fell "
                                "behind the board by 41 ms")


def test_a_replaced_two_way_run_is_listed_in_each_directions_figure():
    both = {"run_dir": "/x/d-1", "figure": {"rx": 60.0, "tx": 90.0}, "dilation": 2.0, "why": "late"}
    run = _replaced_run(0.0, 4.0, both)
    run.throughput_mbps = {"rx": 64.0, "tx": 92.0}
    found = replaced_runs([run], "tx")
    assert (found[0]["figure"], found[0]["by"]["figure"]) == (90.0, 92.0)


@dataclasses.dataclass(frozen=True)
class _Plan:
    """A RunPlan stand-in whose first run the host disturbs (at D = 2) and whose repeat (at D = 4) it does not."""

    time: DeviceTime
    folder: Path

    def measure(self, run_dir: Path, progress: Progress | None = None) -> MeasuredRun:
        run = _run(20.0 if self.time.dilation == 2.0 else 22.0)
        run.run_dir = str(run_dir)
        run.time = dataclasses.replace(self.time, host_lagged=self.time.dilation == 2.0, max_lag_ms=41.0).as_dict()
        return MeasuredRun(run, [], Progress(quiet=True))


def test_the_run_that_replaces_a_disturbed_one_records_it(tmp_path, monkeypatch):
    monkeypatch.setattr(run_module, "analyse_run", lambda result: dataclasses.make_dataclass("A", [])())
    (tmp_path / "c-1").mkdir()
    plan = _Plan(DeviceTime("device", dilation=2.0, model_mips=600.0, host_mips=300.0), tmp_path)
    repeat = measure_trusted(plan, tmp_path / "c-1").result
    assert repeat.run_dir == str(tmp_path / "c-1-slower") and repeat.throughput_mbps == 22.0
    assert repeat.replaced == {"run_dir": str(tmp_path / "c-1"), "figure": 20.0, "dilation": 2.0,
                               "why": "the host fell behind the board by 41 ms"}
    saved = json.loads((tmp_path / "c-1-slower" / "result.json").read_text())
    assert saved["replaced"] == repeat.replaced  # result.json says so too
    undisturbed = _Plan(DeviceTime("device", dilation=4.0, model_mips=600.0, host_mips=150.0), tmp_path)
    (tmp_path / "d-1").mkdir()
    assert measure_trusted(undisturbed, tmp_path / "d-1").result.replaced is None


# --- the D check: a figure that moves with the host's D is the host's ------------------------------------------

def _d_checked(name: str, runs: list[float], at_2d: float | dict[str, float], report: float | None,
               direction: str | None = None, **claim: Any) -> CaseResult:
    result = CaseResult(case=name, platform="p", profile="q", link="l", workload="rx", report_mbps=report,
                        direction=direction, claim=claim)
    summarise_runs(result, [_replaced_run(f, 3.0, None) for f in runs])
    check = _replaced_run(0.0, 6.0, None)
    check.throughput_mbps, check.run_dir = at_2d, "/x/d-check"
    judge_d_check(result, check, band=0.15)
    return result


def test_a_figure_that_moves_more_than_half_the_band_at_twice_d_is_host_dependent_and_not_counted():
    moved = _d_checked("pktdrv rx", [35.3, 36.2, 30.8], 31.0, 33.0, at_least_mbps=30)  # -12.2 %
    steady = _d_checked("nvnetdrv rx", [94.8, 94.5, 94.8], 94.7, 94.2)                 # -0.1 %
    edge = _d_checked("edge", [10.0], 10.7, 10.0)                                      # +7.0 %: within 7.5 %
    assert (moved.d_check, moved.d_check_dilation, moved.d_check_run_dir) == (31.0, 6.0, "/x/d-check")
    assert moved.host_dependent and not steady.host_dependent and not edge.host_dependent
    assert moved.host_dependent_why == ("35.3 Mbit/s at D=3, 31 at D=6 (-12.2%; more than half the band, 7.5%)")
    document = _document({"band": 0.15, "cases": [], "inputs": []}, [moved, steady, edge])
    rows = {c["case"]: c for c in document["cases"]}
    assert rows["pktdrv rx"]["host_dependent"] is True and rows["pktdrv rx"]["d_check"] == 31.0
    s = document["summary"]
    # its figure agrees (+7 % of 33) and its claim holds, and neither is counted
    assert (s["figures"], s["agree"], s["mechanisms"], s["host_dependent"], s["d_checked"]) == (2, 2, 0, 1, 3)
    lines = format_report(document).splitlines()
    row = next(ln for ln in lines if ln.startswith("pktdrv rx"))
    assert " host " in row and row.endswith("holds (host)")
    assert ("2 of 2 report figures agree within 15 % (1 host-dependent by the D check, not counted); "
            "mechanisms 0 of 0 hold; 0 cases fail") in lines
    notes = next(i for i, ln in enumerate(lines) if ln.startswith("host-dependent: at twice D"))
    assert lines[notes + 1] == f"  pktdrv rx: {moved.host_dependent_why}"


def test_a_host_dependent_claim_that_fails_is_not_counted_as_failing():
    moved = _d_checked("tx before", [2.0, 1.9, 2.6], 1.2, 6.4, at_least_mbps=6)
    assert moved.host_dependent and moved.claim_holds is None  # not judged until _document
    document = _document({"band": 0.15, "cases": [], "inputs": []}, [moved])
    assert document["cases"][0]["claim_result"] == "fails"
    assert document["summary"]["fail"] == 0 and document["summary"]["mechanisms"] == 0


def test_each_direction_of_a_two_way_run_has_its_own_d_check():
    run = _replaced_run(0.0, 3.0, None)
    run.throughput_mbps = {"rx": 66.0, "tx": 92.8}
    check = _replaced_run(0.0, 6.0, None)
    check.throughput_mbps = {"rx": 50.0, "tx": 92.0}
    found = {}
    for direction in ("rx", "tx"):
        result = CaseResult(case=f"duplex {direction}", platform="p", profile="q", link="l", workload="duplex",
                            report_mbps=90.0, direction=direction)
        summarise_runs(result, [run])
        judge_d_check(result, check, 0.15)
        found[direction] = result
    assert (found["rx"].d_check, found["rx"].host_dependent) == (50.0, True)    # -24 %
    assert (found["tx"].d_check, found["tx"].host_dependent) == (92.0, False)   # -0.9 %


def test_no_d_check_leaves_the_case_uncounted_by_it():
    result = CaseResult(case="c", platform="p", profile="q", link="l", workload="rx", report_mbps=10.0)
    summarise_runs(result, [_replaced_run(10.0, 3.0, None)])
    judge_d_check(result, None, 0.15)
    assert (result.d_check, result.host_dependent, result.host_dependent_why) == (None, False, None)


def test_every_d_check_is_listed_under_the_table_with_both_figures():
    steady = _d_checked("nvnetdrv rx", [94.8, 94.5, 94.8], 94.7, 94.2)
    lines = format_report(_document({"band": 0.15, "cases": [], "inputs": []}, [steady])).splitlines()
    notes = next(i for i, ln in enumerate(lines) if ln.startswith("the D check (one more run at twice D"))
    assert lines[notes + 1] == "  nvnetdrv rx: 94.8 Mbit/s at D=3.0, 94.7 at D=6.0 (-0.1%)"


def test_the_stored_xbox_reproduction_repeats_or_says_which_figures_are_the_hosts():
    """benchmarks/results/reproduce-xbox.json, the evidence the README quotes: every case's runs lie within 3 % of
    their median, or its D check marked it host-dependent with the reason; and every case had a D check."""
    stored = json.loads((ROOT / "benchmarks" / "results" / "reproduce-xbox.json").read_text())
    for case in stored["cases"]:
        assert case["d_check"] is not None and isinstance(case["runs_replaced"], list), case["case"]
        spread = max(abs(run / case["median_mbps"] - 1) for run in case["runs_mbps"])
        assert spread <= 0.03 or (case["host_dependent"] and case["host_dependent_why"]), (case["case"], spread)
    assert stored["summary"]["host_dependent"] == sum(c["host_dependent"] for c in stored["cases"])


def test_the_stored_n6_reproduction_says_how_its_rtt_was_calibrated_and_checked_each_case_at_twice_d():
    stored = json.loads((ROOT / "benchmarks" / "results" / "reproduce-openmv-n6.json").read_text())
    rtt = next(i for i in stored["inputs"] if i["name"] == "wifi RTT")
    assert rtt["calibrated"]["idle_ping_ms"] == pytest.approx(rtt["value"], rel=0.02) and rtt["calibrated"][
        "base_delay_ms"] < rtt["value"]
    for case in stored["cases"]:
        assert isinstance(case["host_dependent"], bool) and case["d_check"] is not None, case["case"]
        assert case["runs_replaced"] == [] or all("why" in r for r in case["runs_replaced"])
        assert isinstance(case["by_construction"], bool)
    assert {"figures", "repeated", "split", "host_dependent", "d_checked"} <= set(stored["summary"])


def test_two_fresh_xbox_reproductions_agree_where_the_host_does_not_decide():
    """The stored reproduction and a second fresh one: every case that neither D check marked host-dependent has
    medians within 3 % of each other."""
    results = ROOT / "benchmarks" / "results"
    first, again = (json.loads((results / name).read_text())["cases"]
                    for name in ("reproduce-xbox.json", "reproduce-xbox-again.json"))
    steady = [(a, b) for a, b in zip(first, again, strict=True) if not (a["host_dependent"] or b["host_dependent"])]
    assert len(steady) >= 5
    for a, b in steady:
        assert a["case"] == b["case"] and abs(b["median_mbps"] / a["median_mbps"] - 1) <= 0.03, (a["case"], a, b)


@pytest.mark.real
def test_the_d_check_runs_a_case_once_more_at_twice_d_through_the_real_chain(netrepro):
    found = netrepro.reproduce("openmv-n6", ["ethernet rx after"], repeats=1, seconds=2, d_check=True)
    case = found["ethernet rx after"]
    assert case["d_check"] is not None and case["d_check_dilation"] == pytest.approx(2 * case["dilation"]), case
    assert Path(case["d_check_run_dir"]).name == "ethernet-rx-after-d-check"
    # a link-limited ethernet figure is the board's and the wire's: twice D moves it by well under the band's half
    assert case["host_dependent"] is False and abs(case["d_check"] / case["median_mbps"] - 1) < 0.075, case
