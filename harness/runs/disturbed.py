"""A run the host disturbed (it could not keep up with the board): judged, and repeated, in one place."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

from harness.core.progress import Progress
from harness.rig.devicetime import BOARD_STALL_MS, LINK_LATE_MS, DeviceTime
from harness.runs.analyse import Analyser, MeasuredRun
from harness.runs.plan import RunPlan
from harness.runs.result import RunResult


def execute_trusted(plan: RunPlan, run_dir: Path, progress: Progress | None = None) -> RunResult:
    """Execute the plan; a device-time run whose host fell behind is repeated once at twice the dilation
    (in RUN_DIR-slower), and the repeat's result stands, still marked if that host lagged too."""
    return measure_trusted(plan, run_dir, progress).analysed()


def start_trusted(plan: RunPlan, run_dir: Path, analyser: Analyser,
                  progress: Progress | None = None) -> Future[RunResult]:
    """execute_trusted, its analysis handed to `analyser` (beside the next run when the plan allows)."""
    return analyser.submit(measure_trusted(plan, run_dir, progress), plan.analysis_may_overlap())


def measure_trusted(plan: RunPlan, run_dir: Path, progress: Progress | None = None) -> MeasuredRun:
    """execute_trusted's runs, the one that stands not yet analysed; a repeat records the run it replaced
    (RunResult.replaced), which reproduce's table lists."""
    measured = plan.measure(run_dir, progress)
    time = measured.result.time
    if not figures_at_risk(time):
        return measured
    slower = plan.time.slower()
    (progress or Progress(quiet=True)).warn(f"{risk_text(time)} at D = {plan.time.dilation:g}; "
                                            f"repeating at D = {slower.dilation:g}")
    disturbed = measured.analysed()  # the lagged run's folder keeps its analysis too
    retry_dir = run_dir.with_name(run_dir.name + "-slower")
    retry_dir.mkdir()
    repeat = replace(plan, time=slower).measure(retry_dir, progress)
    # the repeat stands in for the disturbed run: say so in its result, so that no table replaces it silently
    repeat.result.replaced = {"run_dir": disturbed.run_dir, "figure": disturbed.throughput_mbps,
                              "dilation": plan.time.dilation, "why": risk_text(time)}
    repeat.result.save()
    return repeat


def figures_at_risk(time: dict[str, Any]) -> bool:
    """DeviceTime.figures_at_risk of a result's `time` object (empty: the run never got that far)."""
    return bool(time) and DeviceTime.from_dict(time).figures_at_risk


def risk_text(time: dict[str, Any]) -> str:
    """What put a run's figures at risk (figures_at_risk), in the user's words."""
    if time.get("link_late"):
        return (f"the host stalled the link: a frame reached the other side {time['link_late_ms']:g} ms of the "
                f"board's time late (more than {LINK_LATE_MS:g} ms)")
    if time.get("board_stalled"):
        return (f"the host held the board {time['board_stall_ms']:g} ms of wall time during its workload (longer "
                f"than the peer's shortest retransmission timeout, {BOARD_STALL_MS:g} ms)")
    return f"the host fell behind the board by {time['max_lag_ms']:g} ms"
