"""The report machinery without runs: case keys, units, two-way cases, the inputs and their provenance, the
document's agreement and bookkeeping, and the table (the claims themselves: tests/test_claims.py)."""

from __future__ import annotations

import dataclasses
import threading
import tomllib
from pathlib import Path
from typing import Any

import pytest

from harness.analysis import AnalysisSummary
from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link.settings import LINK_SETTINGS
from harness.link.units import parse_rate, parse_time
from harness.rig.workload import DISCARD_BYTES
from harness.studies.cases import CaseResult, summarise_runs
from harness.studies.claims import judge
from harness.studies.report_check import check_input
from harness.studies.report_file import load_report, report_names
from harness.studies.reproduce import (
    case_direction,
    fitted_cases,
    format_report,
    judged_document,
    repeat_runs,
    report_band,
    report_figure_mbps,
    reproduce,
)
from harness.studies.run import Analyser, RunResult

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
                # a calibration's input (the report's UDP figure) sets what it produced: the file holds that
                written, leaf = _setting(item["sets"]), item["sets"].rsplit(".", 1)[1]
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
    assert {i["provenance"] for n, i in xbox.items() if "rx_overflow_frames" in n or "rx_burst_frames" in n} == \
        {"assumed"}


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
    before = case("rx before", 14.0, 15.9, mss=800)
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
    assert document["summary"] == {"figures": 3, "agree": 1, "fitted": 1, "mechanisms": 5, "hold": 2,
                                   "unknown": 1, "fail": 2}


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
    assert "0 of 3 report figures agree within 2 %; mechanisms 3 of 5 hold; 1 cases fail" in text.splitlines()
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
