"""The report's document and its table without runs: agreement with the report, the summary line, the
inputs shown, and runs that fail or whose analysis runs beside the next run."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from reproduce_helpers import _run, case

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.runs.analyse import Analyser
from harness.runs.result import RunResult
from harness.studies.cases import CaseResult, summarise_runs
from harness.studies.claims import judge
from harness.studies.report_file import load_report
from harness.studies.reproduce import format_report, judged_document, repeat_runs, reproduce

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
