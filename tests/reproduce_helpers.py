"""What the report machinery's tests share (tests/test_reproduce*.py): made-up cases, runs and
documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.analysis import AnalysisSummary
from harness.link import LinkSpec
from harness.runs.result import RunResult
from harness.studies.cases import CaseResult
from harness.studies.claims import judge
from harness.studies.reproduce import judged_document

ROOT = Path(__file__).resolve().parent.parent


def case(name: str, median: float | None, report: Any = None, **claim) -> CaseResult:
    return CaseResult(case=name, platform="p", profile="q", link="l", workload="discard", report_mbps=report,
                      median_mbps=median, min_mbps=median, max_mbps=median, claim=claim,
                      runs_mbps=[median] * 3 if median is not None else [])


def _run(figure: float | None) -> RunResult:
    return RunResult(platform="p", profile="q", lwip_version="2.1.3", link=LinkSpec.from_preset({"rate": "43mbit"}),
                     workload={"name": "sock-rx"}, run_dir="/x", capture="/x/c", console_log="/x/l",
                     device="10.0.0.2", throughput_mbps=figure, analysis=AnalysisSummary(verdict="link-limited"))


def _document(report: dict[str, Any], results: list[CaseResult]) -> dict[str, Any]:
    for c in results:
        judge(c, {r.case: r for r in results})
    return {"title": "T", "repeats": 3, "run_dir": "/x", **judged_document(report, results)}


def _replaced_run(figure: float, dilation: float, replaced: dict[str, Any] | None) -> RunResult:
    run = _run(figure)
    run.time, run.replaced, run.run_dir = {"mode": "device", "dilation": dilation}, replaced, f"/x/{figure}"
    return run
