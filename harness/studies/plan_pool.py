"""Several independent runs at once (`reproduce --jobs N`): prepared plans handed to the Ray pool `sweep` uses.

The runs are in device time (the link follows the board's emulated clock), so boards that share the machine
give the figures one board alone gives, only later in wall time. A caller first submits every run (each
gets a Future, as RunPlan.start gives one), then `run` executes them at most `jobs` at once and settles each
Future as its run ends; judging then goes on from the RunResults exactly as one run at a time. Each run keeps
the disturbed-run policy (RunPlan.execute: a disturbed run repeated at twice D), and is tried once, as one
at a time: a failed run is counted, not retried. `schedule()` says which runs shared the machine.
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.runs.plan import RunPlan
from harness.runs.result import RunResult
from harness.studies.parallel import RUN_CPUS, RayRunner, RunTask, TaskOutcome, machine_jobs, ray_session


def ray_installed() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def planned_jobs(asked: int | None, runs: int, cpus: int | None = None, ray: bool | None = None) -> int:
    """Runs at once: --jobs when given (1 or more), else what the machine holds (its cores / RUN_CPUS; 1 without
    Ray); never more than there are runs, so one run (or --jobs 1) takes today's one-at-a-time path."""
    if asked is not None and asked < 1:
        raise NetreproError(f"bad --jobs {asked}", "give 1 or more")
    if asked is None:
        asked = machine_jobs(cpus) if (ray_installed() if ray is None else ray) else 1
    return max(1, min(asked, runs))


@dataclass
class PlanPool:
    """Runs collected with `submit`, then executed by `run` at most `jobs` at once."""

    jobs: int
    progress: Progress = field(default_factory=lambda: Progress(quiet=True))
    _queued: list[tuple[RunTask, Future[RunResult]]] = field(default_factory=list)
    _outcomes: list[TaskOutcome] = field(default_factory=list)
    _futures: dict[str, Future[RunResult]] = field(default_factory=dict)

    def submit(self, plan: RunPlan, run_dir: Path) -> Future[RunResult]:
        """The run of `plan` in `run_dir`, queued; its Future is settled by `run`."""
        future: Future[RunResult] = Future()
        self._queued.append((RunTask.of_plan(Path(run_dir).name, plan, Path(run_dir).resolve()), future))
        return future

    def run(self, ray: Any = None) -> None:
        """Every queued run, `jobs` at once on a local Ray instance big enough for them (or on `ray`)."""
        tasks, self._futures = [t for t, _ in self._queued], {t.run_dir: f for t, f in self._queued}
        self._queued = []
        if not tasks:
            return
        if ray is not None:
            RayRunner(ray, self.jobs, self.progress, attempts=1).run(tasks, self._settle)
            return
        cpus = max(self.jobs * RUN_CPUS, os.cpu_count() or 1)  # every job truly at once, even beyond the cores
        with ray_session(None, cpus) as local:
            RayRunner(local, self.jobs, self.progress, attempts=1).run(tasks, self._settle)

    def _settle(self, outcome: TaskOutcome) -> None:
        """A run's Future, once it ended: its RunResult, or its error as a failed run."""
        self._outcomes.append(outcome)
        future = self._futures[outcome.task.run_dir]
        if outcome.run is not None and outcome.error is None:
            future.set_result(outcome.run)
        else:
            future.set_exception(NetreproError(outcome.error or "the run returned no result"))
        if outcome.run is not None and outcome.run.replaced:
            self.progress.warn(f"{outcome.task.key}: {outcome.run.replaced['why']}; repeated at twice D")

    def schedule(self) -> list[dict[str, Any]]:
        """Which runs shared the machine: each run's folder, place (0..jobs-1), start and end (wall seconds after
        the first began; they show the order, no figure depends on them) and the runs it overlapped."""
        order = list(self._futures)  # the order the runs were submitted, which is the order they started
        rows = sorted(self._outcomes, key=lambda o: (o.start_s or 0.0, order.index(o.task.run_dir)))
        return [{"run": Path(o.task.run_dir).name, "slot": o.slot, "start_s": o.start_s, "end_s": o.end_s,
                 "alongside": [Path(p.task.run_dir).name for p in rows if p is not o and _overlap(o, p)],
                 "error": o.error}
                for o in rows]


def _overlap(a: TaskOutcome, b: TaskOutcome) -> bool:
    if None in (a.start_s, a.end_s, b.start_s, b.end_s):
        return False
    return bool(a.start_s < b.end_s and b.start_s < a.end_s)  # type: ignore[operator]
