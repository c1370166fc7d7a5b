"""Runs on Ray: many `RunPlan`s at once, on this machine or on a cluster.

A `RunTask` says what to run (the platform's name, the configuration, the link, the workload, the
time) and where its run folder is; a Ray worker builds the firmware (from the shared build cache
when there is one) and executes the plan as `run` does. A worker that shares the caller's
filesystem writes the run folder in place; one that does not (a cluster node) runs in a folder of
its own and ships it back as a tarball, which the caller unpacks into the run folder.

By default Ray is a local instance sized to this machine's cores, started here and shut down when
the runs end; `address` joins a running cluster instead (its workers need netrepro installed).
Each run reserves RUN_CPUS CPUs: one emulator thread, the link and the peer's stack.

A run that fails, or whose worker is lost, is retried once, the failed attempt's folder kept
beside it (FOLDER-attempt1); a second failure is reported, never dropped. Ctrl-C cancels the runs
under way (each tears its rig down) and then Ray is shut down.
"""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import socket
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, redirect_stdout, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.machine import machine_cpus
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.rig.build import lwip_tree
from harness.rig.devicetime import TimeChoice
from harness.rig.platform import load_platform
from harness.rig.transfer import Transfer
from harness.rig.workload import Workload
from harness.runs.disturbed import measure_trusted
from harness.runs.plan import Configuration, RunPlan
from harness.runs.result import RunResult

RUN_CPUS = 1                 # what one emulation needs: QEMU's one TCG thread; link and peer mostly wait
ATTEMPTS = 2                 # a run is tried at most twice
CANCEL_GRACE_S = 30.0        # after Ctrl-C, how long cancelled runs get to tear their rigs down
RAY_START_ATTEMPTS = 2       # a local Ray instance whose node times out starting is tried once more
WORKER_PID_FILE = "worker.pid"   # the Ray worker running the attempt (tests kill it to lose a worker)


@dataclass(frozen=True)
class RunTask:
    """One run as a worker needs it; `run_dir` is the caller's folder for it (absolute)."""

    key: str
    platform: str
    configuration: Configuration
    link: LinkSpec
    workload: Workload
    time: TimeChoice
    run_dir: str
    lwip_tree: str | None = None
    boot_timeout: float = 60.0
    # a plan the caller prepared (reproduce's: the report's board model, its firmware built), run as is; its
    # firmware is in the caller's build cache, so such a task needs a worker on the caller's filesystem
    plan: RunPlan | None = None
    # False: the worker ends once the workload and teardown end and hands the measured run back unanalysed, so
    # that its place goes to the next run while the caller analyses the capture (plan_pool; only for a plan whose
    # analysis may overlap other runs, RunPlan.analysis_may_overlap)
    analyse: bool = True

    @classmethod
    def of_plan(cls, key: str, plan: RunPlan, run_dir: Path, analyse: bool = True) -> RunTask:
        return cls(key, plan.platform.name, Configuration(plan.firmware.profile.name), plan.link, plan.workload,
                   TimeChoice(plan.time.mode), str(run_dir), boot_timeout=plan.boot_timeout, plan=plan,
                   analyse=analyse)

    def timeout_s(self) -> float:
        """The whole attempt's limit, build and boot included: generous, since the dilation stretches the run."""
        return 300.0 + self.boot_timeout + 60.0 * (self.workload.seconds + self.workload.warmup_s)


@dataclass
class TaskOutcome:
    """What became of a task: its result.json (None when no attempt got that far), the error of a
    failure, and the attempts made (their folders: the last one is `run_dir`)."""

    task: RunTask
    result: dict[str, Any] | None = None
    error: str | None = None
    attempts: list[str] = field(default_factory=list)
    host: str | None = None
    node: str | None = None      # the Ray node of the last attempt
    run: Any = None              # a plan task's RunResult as the worker returned it (analysed unless `transfers`)
    transfers: list[Transfer] | None = None  # an unanalysed run's transfers (RunTask.analyse False): MeasuredRun's
    workload_end: float | None = None        # and its workload's end (time.monotonic() on this host)
    slot: int | None = None      # which of the `jobs` places it ran in (0-based)
    start_s: float | None = None  # its last attempt's start and end, seconds after the runner began
    end_s: float | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and self.result is not None and self.result.get("status") == "passed"

    @property
    def standing_run_dir(self) -> str:
        """The folder of the run that stands: the planned one, or beside it the repeat of a run the host disturbed
        (harness.runs.disturbed), as its result.json says."""
        return (self.result or {}).get("run_dir") or self.task.run_dir


def execute_task(task: RunTask) -> dict[str, Any]:
    """Run one task here (what a Ray worker executes): {"result", "error", "host", "node", "tarball", "run",
    "transfers", "workload_end"}; the last two are None unless the run comes back unanalysed (RunTask.analyse
    False)."""
    shared = Path(task.run_dir).parent.is_dir()
    run_dir = Path(task.run_dir) if shared else Path(tempfile.mkdtemp(prefix="netrepro-ray-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / WORKER_PID_FILE).write_text(f"{os.getpid()}\n")
    error = None
    run, transfers, workload_end = None, None, None
    try:
        if task.plan is not None and not shared:
            raise NetreproError(f"{task.key}: its firmware is on the caller's machine", "run it on a local Ray")
        run, transfers, workload_end = _execute(task, run_dir)
        result = run.as_dict()
    except NetreproError as exc:
        error, result = str(exc), _saved_result(run_dir)
    # what crosses back to the caller is plain data (the result and its transfers), never the run's Progress
    out = {"result": result, "error": error, "host": socket.gethostname(), "node": _ray_node(), "tarball": None,
           "run": run if task.plan is not None else None, "transfers": transfers if task.plan is not None else None,
           "workload_end": workload_end}
    if not shared:
        out["tarball"] = pack(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
    return out


def _execute(task: RunTask, run_dir: Path) -> tuple[RunResult, list[Transfer] | None, float | None]:
    """The task's run under the disturbed-run policy, analysed here, or (RunTask.analyse False) measured only:
    then its capture is not followed here (a follower's tshark and threads cannot cross to the caller, which
    analyses the finished file: the same analysis), and its workload's end (time.monotonic(), the host's) is
    handed back for the result's analysis_ready_s."""
    plan = task.plan or _task_plan(task)
    if task.analyse:
        return plan.execute(run_dir), None, None
    measured = measure_trusted(replace(plan, follow_capture=False), run_dir)
    return measured.result, measured.transfers, measured.workload_end


def _task_plan(task: RunTask) -> RunPlan:
    """The task's plan, its firmware built here (or taken from the shared build cache)."""
    platform = load_platform(task.platform)
    return RunPlan(platform, task.configuration.build(platform, lwip_tree(task.lwip_tree)), task.link,
                   task.workload, boot_timeout=task.boot_timeout, time=platform.time(task.time))


def machine_jobs(cpus: int | None = None) -> int:
    """Runs this machine holds at once: its cores / RUN_CPUS, at least 1."""
    return max(1, int((cpus if cpus is not None else machine_cpus()) // RUN_CPUS))


def _ray_node() -> str | None:
    """The Ray node this runs on (several may share one host), None outside a Ray worker."""
    try:
        import ray
        return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
    except Exception:  # no Ray, or no runtime context here
        return None


def _saved_result(run_dir: Path) -> dict[str, Any] | None:
    """The result.json a failed run left (it saves one whatever happens once it started)."""
    path = run_dir / "result.json"
    return json.loads(path.read_text()) if path.is_file() else None


def pack(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(folder, arcname=".")
    return buffer.getvalue()


def unpack(tarball: bytes, folder: Path) -> None:
    """A worker's shipped run folder into the caller's (plain files and folders only)."""
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
        tar.extractall(folder, filter="data")


def relocate(result: dict[str, Any] | None, old: str, new: str) -> dict[str, Any] | None:
    """A shipped result's paths (run folder, capture, plots), moved from the worker's folder to the caller's."""
    if result is None or old == new:
        return result
    return json.loads(json.dumps(result).replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1]))


# ------------------------------------------------------------------ Ray


@contextmanager
def ray_session(address: str | None = None, cpus: int | None = None) -> Iterator[Any]:
    """Ray, quiet: joined at `address`, else a local instance of `cpus` CPUs (default: the machine's);
    one already running in this process (a test's) is used and left running."""
    try:
        import ray
    except ImportError:
        raise NetreproError("Ray is not installed", "pip install -e '.[sweep]'") from None
    if ray.is_initialized():
        yield ray
        return
    logging.getLogger("ray").setLevel(logging.ERROR)   # quiet: e.g. its token-authentication notice
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR",
                               "configure_logging": False}
    _start_ray(ray, address, cpus, options)
    try:
        # Ray prints what its raylet reports (a worker that died, ...) on stdout, where --json's document goes
        with redirect_stdout(sys.stderr):
            yield ray
    finally:
        ray.shutdown()


def _start_ray(ray: Any, address: str | None, cpus: int | None, options: dict[str, Any]) -> None:
    """ray.init, tried a second time when a local instance's node does not come up within Ray's own 30 s
    (a busy machine); a one-line error when it still fails."""
    tries = 1 if address else RAY_START_ATTEMPTS
    for _ in range(tries):
        try:
            if address:
                ray.init(address=address, **options)
            else:  # "local": never the cluster a `ray start` on this machine left running (Ray's default)
                ray.init(address="local", num_cpus=cpus or machine_cpus(), **options)
            return
        except Exception as exc:  # Ray raises plain Exception too, e.g. when its node times out starting
            ray.shutdown()        # whatever part of a local instance did start
            error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    where = f"the Ray cluster at {address}" if address else f"a local Ray instance ({tries} tries)"
    fix = ("check the address (ray start --head prints it) and that the head is running" if address
           else "the machine may be too busy for Ray to start in time: try again, or give --ray-address")
    raise NetreproError(f"could not start {where}: {error}", fix)


@dataclass
class RayRunner:
    """Executes tasks on Ray at most `jobs` at a time, retrying each once, reporting each as it ends."""

    ray: Any
    jobs: int
    progress: Progress = field(default_factory=lambda: Progress(quiet=True))
    attempts: int = ATTEMPTS     # reproduce's runs are tried once: a failed run is counted, as one at a time
    _remote: Any = None
    began: float = field(default_factory=time.monotonic)  # what start_s and end_s count from

    def elapsed_s(self) -> float:
        """Seconds since the runner began, as the outcomes' start_s and end_s count them."""
        return round(time.monotonic() - self.began, 1)

    def run(self, tasks: Sequence[RunTask], on_done: Callable[[TaskOutcome], None]) -> list[TaskOutcome]:
        remote = self.ray.remote(num_cpus=RUN_CPUS, max_retries=0)(execute_task)
        waiting = list(tasks)
        running: dict[Any, tuple[TaskOutcome, float]] = {}
        done: list[TaskOutcome] = []
        try:
            while waiting or running:
                changed = False
                while waiting and len(running) < self.jobs:
                    outcome = TaskOutcome(waiting.pop(0), slot=_free_slot(running))
                    running[self._submit(remote, outcome)] = (outcome, time.monotonic())
                    changed = True
                if changed and self.jobs > 1:
                    self.progress.in_flight([o.task.key for o, _ in running.values()], self.jobs)
                ready, _ = self.ray.wait(list(running), num_returns=1, timeout=1.0)
                for ref in ready or self._overdue(running):
                    outcome, _started = running.pop(ref)
                    outcome.end_s = self.elapsed_s()
                    if self._finish(ref, outcome):
                        done.append(outcome)
                        on_done(outcome)
                    else:
                        running[self._submit(remote, outcome)] = (outcome, time.monotonic())
        except KeyboardInterrupt:
            self._cancel(list(running))
            raise
        return done

    def _submit(self, remote: Any, outcome: TaskOutcome) -> Any:
        """Start the next attempt; an earlier attempt's folder moves aside as FOLDER-attemptN."""
        folder = Path(outcome.task.run_dir)
        if outcome.attempts and folder.exists():
            aside = folder.with_name(f"{folder.name}-attempt{len(outcome.attempts)}")
            folder.rename(aside)
            outcome.attempts[-1] = str(aside)
        folder.mkdir(parents=True, exist_ok=True)
        outcome.attempts.append(str(folder))
        outcome.start_s, outcome.end_s = self.elapsed_s(), None
        self.progress.step(f"{outcome.task.key}: attempt {len(outcome.attempts)} started")
        return remote.remote(outcome.task)

    def _overdue(self, running: dict[Any, tuple[TaskOutcome, float]]) -> list[Any]:
        now = time.monotonic()
        late = [ref for ref, (o, started) in running.items() if now - started > o.task.timeout_s()]
        for ref in late:
            self.ray.cancel(ref, force=True)
        return late

    def _finish(self, ref: Any, outcome: TaskOutcome) -> bool:
        """Record an attempt's end; False when the task should be tried again."""
        try:
            out = self.ray.get(ref, timeout=60)
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a lost worker, a cancelled overdue run, an error outside the run
            out = {"result": _saved_result(Path(outcome.task.run_dir)), "error": _lost(exc, outcome.task),
                   "host": None, "node": None, "tarball": None}
        if out["tarball"] is not None:
            unpack(out["tarball"], Path(outcome.task.run_dir))
            old = (out["result"] or {}).get("run_dir", outcome.task.run_dir)
            out["result"] = relocate(out["result"], old, outcome.task.run_dir)
        outcome.result, outcome.error = out["result"], out["error"]
        outcome.host, outcome.node, outcome.run = out["host"], out.get("node"), out.get("run")
        outcome.transfers, outcome.workload_end = out.get("transfers"), out.get("workload_end")
        if outcome.error is None and outcome.result is None:
            outcome.error = "the run returned no result"
        if outcome.passed or len(outcome.attempts) >= self.attempts:
            return True
        self.progress.warn(f"{outcome.task.key}: attempt {len(outcome.attempts)} failed ({outcome.error}); "
                           "trying once more")
        return False

    def _cancel(self, refs: list[Any]) -> None:
        """Ctrl-C: ask each run under way to stop (it tears its rig down), then wait a little for them."""
        for ref in refs:
            with suppress(Exception):
                self.ray.cancel(ref, force=False)
        with suppress(Exception):
            self.ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE_S)


def _free_slot(running: dict[Any, tuple[TaskOutcome, float]]) -> int:
    """The lowest place no run under way holds."""
    taken = {o.slot for o, _ in running.values()}
    return next(i for i in range(len(taken) + 1) if i not in taken)


def _lost(exc: Exception, task: RunTask) -> str:
    kind = type(exc).__name__
    first = (str(exc).strip().splitlines() or [""])[0][:200]
    if "WorkerCrashed" in kind or "NodeDied" in kind or "ActorDied" in kind:
        return f"the worker running it was lost ({kind})"
    if "Cancel" in kind or "GetTimeout" in kind:
        return f"no result within {task.timeout_s():g} s"
    return f"{kind}: {first}"
