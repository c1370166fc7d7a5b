"""The report's honest bookkeeping without runs: chosen inputs, claims by construction, a figure counted once,
replaced runs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from reproduce_helpers import _document, _replaced_run, _run, case

import harness.runs.analyse as run_module
from harness.core.progress import Progress
from harness.rig.devicetime import DeviceTime
from harness.runs.analyse import MeasuredRun
from harness.runs.disturbed import measure_trusted
from harness.studies.cases import CaseResult, replaced_runs, summarise_runs
from harness.studies.reproduce import format_report

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
    monkeypatch.setattr(run_module, "analyse_run", lambda result, *_: dataclasses.make_dataclass("A", [])())
    monkeypatch.setattr(run_module, "plot_run", lambda *_: None)
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


def test_a_case_whose_median_run_is_a_repeat_keeps_the_d_it_was_planned_at():
    """The D check runs at twice the case's D: the case's D is the one planned, not its repeat's twice that."""
    disturbed = {"run_dir": "/x/rx-2", "figure": 18.5, "dilation": 4.0, "why": "the host fell behind"}
    repeat = _replaced_run(22.1, 8.0, disturbed)
    repeat.repeats = [disturbed]
    result = CaseResult(case="rx after", platform="p", profile="q", link="l", workload="sock-rx", report_mbps=22.2)
    summarise_runs(result, [_replaced_run(22.0, 4.0, None), repeat, _replaced_run(22.4, 4.0, None)])
    assert result.median_run_dir == "/x/22.1" and result.dilation == 4.0
