"""`netrepro run` below the command line: one run of a plan (repeated when the host disturbed it), then what the
user asked of it: a check against a stored baseline, a baseline saved, the leak check, a soak's verdict.

The command line parses its arguments into a RunRequest and prints the RunOutcome; the exit code is its own
(it reads the outcome's failed checks)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.rig.build import build_firmware
from harness.rig.devicetime import TimeChoice
from harness.rig.platform import Platform
from harness.rig.session import Session, make_run_dir
from harness.rig.workload import Workload
from harness.runs.plan import Configuration, RunPlan
from harness.runs.result import RunResult
from harness.studies.baseline import MAX_DROP, compare_to_baseline, load_baseline, save_baseline, setup_differences
from harness.studies.soak import judge_soak


@dataclass(frozen=True)
class RunRequest:
    """One run as the user asked for it, and the checks to make of it."""

    platform: Platform
    configuration: Configuration
    link: LinkSpec
    workload: Workload
    time: TimeChoice = field(default_factory=TimeChoice)
    lwip_tree: str | None = None
    out: str | None = None               # the folder run folders go under (None: ./runs)
    boot_timeout: float = 60.0
    capture_at: str = "device"
    peer_quickack: bool = False
    soak: bool = False                   # a soak (run --minutes): is the board alive at the end, every byte there?
    check_leaks: bool = False
    against: str | None = None           # a stored baseline to compare with
    max_drop: float | None = None        # ... the throughput drop it allows (None: MAX_DROP)
    baseline_dir: str | None = None
    save_baseline: str | None = None     # store this run as a baseline of that name
    link_name: str = "direct"            # the link as the user named it (a saved baseline records it)


@dataclass
class RunOutcome:
    """What the run and its checks found: the result, the document `--json` prints, the checks' lines."""

    result: RunResult
    document: dict[str, Any]
    lines: list[str] = field(default_factory=list)
    baseline_failed: bool = False
    leaks_failed: bool = False
    soak_failed: bool = False


def run_one(request: RunRequest, progress: Progress | None = None) -> RunOutcome:
    """Build, run (RunPlan.execute: the disturbed-run policy applies) and check; a failed run names its folder."""
    progress = progress or Progress(quiet=True)
    platform = request.platform
    config = request.configuration.resolve(platform, request.lwip_tree)
    profile = config.profile
    baseline = _comparable_baseline(request)
    plan = RunPlan(platform, build_firmware(config, progress.step), request.link, request.workload,
                   boot_timeout=request.boot_timeout, time=platform.time(request.time), check_alive=request.soak,
                   capture_at=request.capture_at, peer_quickack=request.peer_quickack)
    run_dir = make_run_dir(request.out, platform.name, profile.name)
    try:
        result = plan.execute(run_dir, progress)
    except NetreproError as exc:
        raise NetreproError(f"{exc.problem} (run folder kept: {run_dir})", exc.fix) from None
    outcome = RunOutcome(result, result.as_dict())
    run_dir = Path(result.run_dir)  # the run that counts: a disturbed run's repeat has a folder of its own
    if baseline is not None:
        _check_baseline(outcome, request, baseline, run_dir)
    if request.save_baseline:
        path = save_baseline(result, request.save_baseline, request.baseline_dir, link_name=request.link_name)
        outcome.document["baseline_saved"] = str(path)
        outcome.lines = [f"baseline {request.save_baseline} saved: {path}"]
    if request.check_leaks and not (result.leaks and result.leaks.ok):
        outcome.leaks_failed = True
        outcome.lines.append(f"leak check FAILED: {result.leaks.short() if result.leaks else 'not run'}; run folder "
                             f"{run_dir}")
    if request.soak:
        _judge_soak(outcome, run_dir)
    return outcome


def _comparable_baseline(request: RunRequest) -> dict[str, Any] | None:
    """The baseline to check against (None: none asked for); one that ran otherwise is a one-line error, before
    anything is built."""
    if not request.against:
        return None
    baseline = load_baseline(request.against, request.baseline_dir)
    differences = setup_differences(baseline, request.platform.name, request.workload.describe(),
                                    Session.link_as_run(request.link, request.platform).as_dict())
    if differences:
        more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
        raise NetreproError(f"this run is not comparable with baseline '{request.against}': {differences[0]}{more}",
                            f"run it as the baseline was: platform {baseline.get('platform')}, link "
                            f"{baseline.get('link_name') or 'direct'}, workload {baseline['workload']['name']}")
    return baseline


def _check_baseline(outcome: RunOutcome, request: RunRequest, baseline: dict[str, Any], run_dir: Path) -> None:
    """The run against the baseline, in baseline-check.json and the document."""
    max_drop = MAX_DROP if request.max_drop is None else request.max_drop
    failures = compare_to_baseline(outcome.result, baseline, max_drop)
    check = {"name": request.against, "path": baseline["path"], "max_drop": max_drop, "matches": not failures,
             "failures": failures}
    (run_dir / "baseline-check.json").write_text(json.dumps(check, indent=2) + "\n")
    outcome.document["baseline_check"] = check
    if failures:
        outcome.baseline_failed = True
        outcome.lines = [f"baseline {request.against}: {len(failures)} difference{'s' if len(failures) > 1 else ''} "
                         f"({baseline['path']}); run folder {run_dir}", *(f"  FAIL {f}" for f in failures)]
    else:
        outcome.lines = [f"baseline {request.against}: matches (throughput within {max_drop:.0%}, MSS, window and "
                         f"options the same; {baseline['path']})"]


def _judge_soak(outcome: RunOutcome, run_dir: Path) -> None:
    """A soak's verdict, in soak.json and the document."""
    soak = judge_soak(outcome.result)
    outcome.document["soak"] = soak.as_dict()
    (run_dir / "soak.json").write_text(json.dumps(outcome.document["soak"], indent=2) + "\n")
    outcome.lines += soak.lines()
    outcome.soak_failed = not soak.ok
