"""A run the host disturbed (it could not keep up with the board): one policy, judged and applied in one place,
for every command (`run`, `compare`, `bisect`, `reproduce`, `sensitivity`, `sweep`, the pytest plugin: they
all run a plan through RunPlan.execute or RunPlan.start, which come here).

The policy: a run whose figures the host put at risk (DeviceTime.figures_at_risk: the board's clock fell
behind while the link ran on wall / D, the link handed frames over late, or the host held the board longer
than the peer's shortest retransmission timeout) is repeated at twice D, in RUN_DIR-slower, up to
`DisturbedPolicy.tries` runs in all; the last run stands, still marked if the host disturbed it too. The
result that stands records the policy and every run it repeated (result.json `disturbed_policy`, `repeats`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from harness.core.progress import Progress
from harness.rig.devicetime import BOARD_STALL_MS, LINK_LATE_MS, DeviceTime
from harness.runs.analyse import MeasuredRun

REPEAT_SUFFIX = "-slower"  # a repeat's folder: its run's folder with this added, once per repeat


class Measurable(Protocol):
    """What the policy needs of a plan: its time, and one run of it (RunPlan.measure)."""

    time: DeviceTime

    def measure(self, run_dir: Path, progress: Progress | None = None) -> MeasuredRun: ...


@dataclass(frozen=True)
class DisturbedPolicy:
    """How many runs a disturbed run may take in all (the first one included), each at twice the last's D."""

    tries: int = 2

    def as_dict(self) -> dict[str, Any]:
        return {"repeat_when": "figures_at_risk", "repeat_at": "twice D", "tries": self.tries}

    def measure(self, plan: Measurable, run_dir: Path, progress: Progress | None = None) -> MeasuredRun:
        """The plan's runs under this policy, the one that stands not yet analysed; it records the runs it
        repeated (RunResult.repeats) and the last of them (RunResult.replaced, which reproduce's table lists)."""
        progress = progress or Progress(quiet=True)
        repeats: list[dict[str, Any]] = []
        measured = plan.measure(run_dir, progress)
        while figures_at_risk(measured.result.time) and len(repeats) + 1 < self.tries:
            why, slower = risk_text(measured.result.time), plan.time.slower()
            progress.warn(f"{why} at D = {plan.time.dilation:g}; repeating at D = {slower.dilation:g}")
            disturbed = measured.analysed()  # the disturbed run's folder keeps its analysis too
            repeats.append({"run_dir": disturbed.run_dir, "figure": disturbed.throughput_mbps,
                            "dilation": plan.time.dilation, "why": why})
            plan, run_dir = replace(plan, time=slower), run_dir.with_name(run_dir.name + REPEAT_SUFFIX)
            run_dir.mkdir()
            measured = plan.measure(run_dir, progress)
        # the run that stands says what it stands in for, so that no table replaces a figure silently
        measured.result.disturbed_policy, measured.result.repeats = self.as_dict(), repeats
        measured.result.replaced = repeats[-1] if repeats else None
        measured.result.save()
        return measured


def measure_trusted(plan: Measurable, run_dir: Path, progress: Progress | None = None) -> MeasuredRun:
    """The plan's runs under the one policy (DisturbedPolicy), the one that stands not yet analysed."""
    return DisturbedPolicy().measure(plan, run_dir, progress)


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
