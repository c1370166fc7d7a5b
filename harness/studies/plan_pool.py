"""Several independent runs at once (`reproduce --jobs N`): prepared plans handed to the Ray pool `sweep` uses.

The runs are in device time (the link follows the board's emulated clock), so boards that share the machine
give the figures one board alone gives, only later in wall time. A caller first submits every run (each
gets a Future, as RunPlan.start gives one), then `run` executes them at most `jobs` at once and settles each
Future as its run ends; judging then goes on from the RunResults exactly as one run at a time. Each run keeps
the disturbed-run policy (RunPlan.execute: a disturbed run repeated at twice D), and is tried once, as one
at a time: a failed run is counted, not retried. `schedule()` says which runs shared the machine.

A run's place is freed when its workload and teardown end: the worker hands back the measured run (its result
and transfers, plain data) and the caller analyses the capture (tshark, plots: seconds) in an Analyser thread
while the next run takes the place. Only for a plan whose analysis may overlap other runs
(RunPlan.analysis_may_overlap: the link follows the board's clock); any other is analysed in its place, as
before. The disturbed-run policy stays in the worker (a disturbed run's own analysis too). Such a run's capture
is not followed as the link writes it (harness.analysis.follow: its tshark and threads live in the worker):
the caller analyses the finished file, the same analysis.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.machine import machine_cpus
from harness.core.progress import Progress
from harness.runs.analyse import Analyser, MeasuredRun
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
    _analysed: dict[str, tuple[float, str | None]] = field(default_factory=dict)  # run_dir: (when, analysis error)
    _runner: RayRunner | None = None
    _analyser: Analyser | None = None
    _ray: Any = None                  # Ray held open across several `run`s (session)
    _began: float | None = None       # when the first `run` began: every schedule time counts from it

    @contextmanager
    def session(self) -> Iterator[PlanPool]:
        """One local Ray instance for several `run`s (bisect's rounds), started once; the schedule spans them."""
        with ray_session(None, self._cpus()) as ray:
            self._ray = ray
            try:
                yield self
            finally:
                self._ray = None

    def _cpus(self) -> int:
        return max(self.jobs * RUN_CPUS, machine_cpus())  # every job truly at once, even beyond the cores

    def submit(self, plan: RunPlan, run_dir: Path) -> Future[RunResult]:
        """The run of `plan` in `run_dir`, queued; its Future is settled by `run` once the run is analysed."""
        future: Future[RunResult] = Future()
        task = RunTask.of_plan(Path(run_dir).name, plan, Path(run_dir).resolve(),
                               analyse=not plan.analysis_may_overlap())
        self._queued.append((task, future))
        return future

    def run(self, ray: Any = None) -> None:
        """Every queued run, `jobs` at once on a local Ray instance big enough for them (or on `ray`); it returns
        once every run is analysed."""
        tasks = [t for t, _ in self._queued]
        self._futures.update({t.run_dir: f for t, f in self._queued})  # kept across runs, in submission order
        self._queued = []
        if not tasks:
            return
        with Analyser() as self._analyser:  # leaving it waits for the analyses still under way
            if (ray := ray or self._ray) is not None:
                self._execute(ray, tasks)
                return
            with ray_session(None, self._cpus()) as local:
                self._execute(local, tasks)

    def _execute(self, ray: Any, tasks: list[RunTask]) -> None:
        self._began = self._began if self._began is not None else time.monotonic()
        self._runner = RayRunner(ray, self.jobs, self.progress, attempts=1, began=self._began)
        self._runner.run(tasks, self._settle)

    def _settle(self, outcome: TaskOutcome) -> None:
        """A run, once its place is free: its capture analysed (beside the next runs when it came back
        unanalysed), then its Future settled with its RunResult, or its error as a failed run."""
        self._outcomes.append(outcome)
        future = self._futures[outcome.task.run_dir]
        if outcome.run is not None and outcome.run.replaced:
            self.progress.warn(f"{outcome.task.key}: {outcome.run.replaced['why']}; repeated at twice D")
        if outcome.run is None or outcome.error is not None:
            future.set_exception(NetreproError(outcome.error or "the run returned no result"))
            return
        if outcome.transfers is None:  # analysed in its place
            self._analysed[outcome.task.run_dir] = (outcome.end_s or 0.0, None)
            future.set_result(outcome.run)
            return
        assert self._analyser is not None
        measured = MeasuredRun(outcome.run, outcome.transfers, self.progress, workload_end=outcome.workload_end)
        analysis = self._analyser.submit(measured, overlap=True)
        analysis.add_done_callback(lambda done: self._analysis_ended(outcome.task.run_dir, done, future))

    def _analysis_ended(self, run_dir: str, analysis: Future[RunResult], future: Future[RunResult]) -> None:
        """Called in the Analyser's thread (or at once when it was dropped after an interrupt)."""
        error = None
        if analysis.cancelled():
            error = "interrupted before its capture was analysed"
            future.set_exception(NetreproError(error))
        elif (exc := analysis.exception()) is not None:  # a failed run, counted as one in the worker was
            error = str(exc) if isinstance(exc, NetreproError) else f"{type(exc).__name__}: {exc}".splitlines()[0]
            future.set_exception(exc if isinstance(exc, NetreproError) else NetreproError(error))
        else:
            future.set_result(analysis.result())
        self._analysed[run_dir] = (self._runner.elapsed_s() if self._runner else 0.0, error)

    def schedule(self) -> list[dict[str, Any]]:
        """Which runs shared the machine: each run's folder, place (0..jobs-1), start and end of its place (wall
        seconds after the first began; they show the order, no figure depends on them), when its capture's
        analysis ended (`analysed_s`: after `end_s` when it was analysed beside the next runs, `end_s` when in
        its place; None when it failed before), the runs it overlapped, and its error (the run's or its analysis')."""
        order = list(self._futures)  # the order the runs were submitted, which is the order they started
        rows = sorted(self._outcomes, key=lambda o: (o.start_s or 0.0, order.index(o.task.run_dir)))
        analysed = {o.task.run_dir: self._analysed.get(o.task.run_dir, (None, None)) for o in rows}
        return [{"run": Path(o.task.run_dir).name, "slot": o.slot, "start_s": o.start_s, "end_s": o.end_s,
                 "analysed_s": analysed[o.task.run_dir][0],
                 "alongside": [Path(p.task.run_dir).name for p in rows if p is not o and _overlap(o, p)],
                 "error": o.error or analysed[o.task.run_dir][1]}
                for o in rows]


def _overlap(a: TaskOutcome, b: TaskOutcome) -> bool:
    if None in (a.start_s, a.end_s, b.start_s, b.end_s):
        return False
    return bool(a.start_s < b.end_s and b.start_s < a.end_s)  # type: ignore[operator]
