"""bisect --jobs N: each round runs the step one at a time would take and, beside it, the steps it would take
next; a stand-in repository (a straight history), build and Ray here, so the search itself is what is tested."""

from __future__ import annotations

import contextlib
from pathlib import Path
from types import SimpleNamespace

import pytest
from fake_ray import FakeRay

import harness.studies.bisect as bisect_module
from harness.core.errors import NetreproError
from harness.link import LinkSpec
from harness.rig.platform import load_platform
from harness.rig.workload import Workload
from harness.runs.plan import RunPlan
from harness.runs.result import RunResult
from harness.studies.bisect import Bisection, Criterion
from harness.studies.plan_pool import PlanPool

COMMITS = [f"{i:040x}" for i in range(1, 18)]   # c0 good ... c16 bad: 15 open revisions
FIRST_BAD = 11


class _Repo:
    """A straight history: rev-list --bisect-all's order (the best split first) over what is open."""

    path = Path("/nowhere")

    def bisect_all(self, bad: str, goods: list[str]) -> list[str]:
        low = max(COMMITS.index(g) for g in goods)
        open_ = COMMITS[low + 1: COMMITS.index(bad) + 1]
        return sorted(open_, key=lambda c: -min(open_.index(c) + 1, len(open_) - open_.index(c) - 1))

    def is_ancestor(self, older: str, newer: str) -> bool:
        return COMMITS.index(older) <= COMMITS.index(newer)

    def subjects(self, good: str, bad: str) -> dict[str, str]:
        return {c: f"commit {COMMITS.index(c)}" for c in COMMITS[COMMITS.index(good) + 1: COMMITS.index(bad) + 1]}

    def subject(self, commit: str) -> str:
        return f"commit {COMMITS.index(commit)}"


def _figure(commit: str) -> float:
    return 10.0 if COMMITS.index(commit) >= FIRST_BAD else 30.0


def _result(commit: str, run_dir: str) -> RunResult:
    return RunResult(platform="p", profile=commit, lwip_version="2.1.3", link=LinkSpec(),
                     workload={"name": "rx"}, run_dir=run_dir, capture="/x/c", console_log="/x/l", device="10.0.0.2",
                     throughput_mbps=_figure(commit), status="passed")


class _Ray(FakeRay):
    """Ray's remote/wait/get: a task's run is the figure of the commit its firmware was built from."""

    def name(self, task) -> str:
        return task.plan.firmware.key

    def get(self, ref, timeout):
        run = _result(ref.task.plan.firmware.key, ref.task.run_dir)
        return {"result": {"status": "passed"}, "error": None, "host": "h", "tarball": None, "run": run}


@pytest.fixture
def stand_ins(monkeypatch) -> SimpleNamespace:
    """Builds give a firmware named by its commit (TWIN builds what FIRST_BAD does); Ray and run stand-ins;
    `rounds` counts the pool's runs."""
    ray, rounds = _Ray(), []

    def build(config, _step):
        name = config.profile.name
        return SimpleNamespace(profile=SimpleNamespace(name=name), lwip_version="2.1.3", stand_ins=(), warnings=(),
                               apps=(), lwip_ram=None, key=name, rebuilt=True)
    monkeypatch.setattr(bisect_module, "build_firmware", build)
    monkeypatch.setattr(RunPlan, "execute", lambda plan, run_dir, progress=None: _result(plan.firmware.key,
                                                                                        str(run_dir)))

    @contextlib.contextmanager
    def session(pool):
        pool._ray = ray
        yield pool
    monkeypatch.setattr(PlanPool, "session", session)
    run = PlanPool.run
    monkeypatch.setattr(PlanPool, "run", lambda pool, _ray=None: (rounds.append(len(pool._queued)), run(pool))[1])
    return SimpleNamespace(ray=ray, rounds=rounds)


def _bisection(tmp_path: Path, jobs: int, broken: tuple[str, ...] = ()) -> Bisection:
    @contextlib.contextmanager
    def prepare(repo, commit, platform):
        if commit in broken:
            raise NetreproError("profile default does not compile: x (tcp.c:1)")
        yield tmp_path, SimpleNamespace(name=commit)

    folder = tmp_path / f"jobs{jobs}"
    folder.mkdir()
    return Bisection(repo=_Repo(), good=COMMITS[0], bad=COMMITS[-1], platform=load_platform("openmv-n6"),
                     source=SimpleNamespace(prepare=prepare, describe=lambda: {}, check=lambda *_: None),
                     link=LinkSpec(), workload=Workload("rx", seconds=1), criterion=Criterion(min_mbps=20.0),
                     folder=folder, jobs=jobs)


@pytest.mark.parametrize("jobs", [2, 3])
def test_runs_at_once_find_the_commit_one_at_a_time_finds_in_fewer_rounds(tmp_path, stand_ins, jobs):
    alone = _bisection(tmp_path, 1).run()
    shared = _bisection(tmp_path, jobs).run()
    assert alone.first_bad == shared.first_bad == {"commit": COMMITS[FIRST_BAD], "subject": f"commit {FIRST_BAD}"}
    assert (alone.jobs, alone.schedule) == (1, None) and shared.jobs == jobs
    assert len(alone.steps) == 4 and set(s.commit for s in alone.steps) <= set(s.commit for s in shared.steps)
    assert len(stand_ins.rounds) < len(alone.steps) and max(stand_ins.rounds) == jobs  # fewer rounds, jobs at once
    assert stand_ins.ray.started == [s.commit for s in shared.steps]  # every step ran once, in the steps' order
    assert [row["run"] for row in shared.schedule] == [Path(s.run_dir).name for s in shared.steps]
    assert all(Path(s.run_dir).name == f"step{i + 1:02d}-{s.commit[:10]}" for i, s in enumerate(shared.steps))


def test_the_first_step_is_one_at_a_times_and_a_revision_that_does_not_build_is_skipped(tmp_path, stand_ins):
    middle = _Repo().bisect_all(COMMITS[-1], [COMMITS[0]])[0]
    shared = _bisection(tmp_path, 2, broken=(middle,)).run()
    assert shared.steps[0].commit == middle and shared.steps[0].verdict == "skipped"
    assert "does not compile" in (shared.steps[0].reason or "")
    assert shared.first_bad == {"commit": COMMITS[FIRST_BAD], "subject": f"commit {FIRST_BAD}"}
    assert middle not in stand_ins.ray.started
