"""reproduce --jobs N: how many runs go at once, and the pool that runs prepared plans side by side
(on a stand-in for Ray here; the real chain is at the end)."""

from __future__ import annotations

import json
import pickle
import threading
import time
from types import SimpleNamespace

import pytest
from fake_ray import FakeRay
from reproduce_helpers import _document, _run, case

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.rig.devicetime import DeviceTime
from harness.rig.platform import load_platform
from harness.rig.transfer import Transfer
from harness.rig.workload import Workload
from harness.runs.analyse import MeasuredRun
from harness.runs.plan import RunPlan
from harness.studies import parallel as parallel_module
from harness.studies.parallel import RunTask
from harness.studies.plan_pool import PlanPool, planned_jobs
from harness.studies.reproduce import format_report, reproduce


def test_the_default_is_what_the_machine_holds_and_never_more_than_the_runs():
    assert planned_jobs(None, runs=12, cpus=2, ray=True) == 2
    assert planned_jobs(None, runs=12, cpus=1, ray=True) == 1
    assert planned_jobs(None, runs=12, cpus=8, ray=False) == 1   # without Ray: one at a time
    assert planned_jobs(None, runs=1, cpus=8, ray=True) == 1     # one run: today's path
    assert planned_jobs(3, runs=2, cpus=2, ray=True) == 2
    assert planned_jobs(1, runs=12, cpus=8, ray=True) == 1
    assert planned_jobs(4, runs=12, cpus=2, ray=True) == 4       # asked for: even beyond the cores
    with pytest.raises(NetreproError, match="bad --jobs 0"):
        planned_jobs(0, runs=3)


class _Ray(FakeRay):
    """Ray's remote/wait/get for plan tasks: each run returns a RunResult, or fails as `failing` says; a task
    that asks for no analysis (RunTask.analyse False) comes back unanalysed, with its transfers."""

    def __init__(self, failing: set[str]) -> None:
        super().__init__()
        self.failing, self.analysed_here = failing, []


    def get(self, ref, timeout):
        if ref.task.key in self.failing:
            return {"result": {"status": "failed"}, "error": "the board did not boot", "host": "h", "tarball": None}
        run = _run(float(len(self.started)))
        run.run_dir = ref.task.run_dir
        if ref.task.analyse:
            self.analysed_here.append(ref.task.key)
        return {"result": {"status": "passed"}, "error": None, "host": "h", "tarball": None, "run": run,
                "transfers": None if ref.task.analyse else [Transfer("rx", 1000, 1.0)]}


def _plan(overlap: bool = True) -> SimpleNamespace:
    return SimpleNamespace(platform=SimpleNamespace(name="openmv-n6"), firmware=SimpleNamespace(
        profile=SimpleNamespace(name="mp-n6-before")), link=LinkSpec.from_preset({}), workload=Workload("sock-rx"),
        time=DeviceTime("device", 3.0), boot_timeout=60.0, analysis_may_overlap=lambda: overlap)


@pytest.fixture
def analysed_by_the_caller(monkeypatch):
    """MeasuredRun.analysed stood in for: slow, as tshark is, and recording which run and in which thread;
    case-bad's capture does not analyse, case-odd's fails outside netrepro's errors."""
    seen: list[tuple[str, str]] = []

    def analysed(self):
        time.sleep(0.05)
        if self.result.run_dir.endswith("case-bad"):
            raise NetreproError("tshark could not read the capture")
        if self.result.run_dir.endswith("case-odd"):
            raise ValueError("an odd capture")
        seen.append((self.result.run_dir.rsplit("/", 1)[-1], threading.current_thread().name))
        self.result.plots = ["analysed.png"]
        return self.result
    monkeypatch.setattr(MeasuredRun, "analysed", analysed)
    return seen


def test_the_pool_settles_each_run_and_records_which_runs_shared_the_machine(tmp_path, analysed_by_the_caller):
    pool = PlanPool(jobs=2)
    futures = [pool.submit(_plan(), tmp_path / f"case-{i}") for i in (1, 2, 3)]
    ray = _Ray(failing={"case-2"})
    pool.run(ray)
    assert ray.started == ["case-1", "case-2", "case-3"]   # tried once each, as one at a time
    assert futures[0].result().run_dir == str(tmp_path / "case-1") and futures[2].done()
    with pytest.raises(NetreproError, match="did not boot"):
        futures[1].result()
    schedule = pool.schedule()
    assert [row["run"] for row in schedule] == ["case-1", "case-2", "case-3"]
    assert [row["slot"] for row in schedule] == [0, 1, 0]   # case-3 took the place case-1 left
    assert schedule[1]["error"] == "the board did not boot"
    assert all(row["start_s"] is not None and row["end_s"] is not None for row in schedule)
    json.dumps(schedule)  # it goes into reproduce.json as it is


def test_a_run_frees_its_place_when_measured_and_the_caller_analyses_it(tmp_path, analysed_by_the_caller):
    pool = PlanPool(jobs=2)
    futures = [pool.submit(_plan(), tmp_path / f"case-{i}") for i in (1, 2, 3)]
    bad, odd = pool.submit(_plan(), tmp_path / "case-bad"), pool.submit(_plan(), tmp_path / "case-odd")
    ray = _Ray(failing=set())
    pool.run(ray)
    assert ray.analysed_here == []                          # no worker analysed a capture
    assert all(f.done() for f in futures) and [f.result().plots for f in futures] == [["analysed.png"]] * 3
    assert {name for name, _ in analysed_by_the_caller} == {"case-1", "case-2", "case-3"}
    assert all(thread.startswith("netrepro-analysis") for _, thread in analysed_by_the_caller)  # beside the runs
    with pytest.raises(NetreproError, match="tshark could not read"):
        bad.result()
    with pytest.raises(NetreproError, match="ValueError: an odd capture"):  # counted as a failed run, as before
        odd.result()
    rows = {row["run"]: row for row in pool.schedule()}
    assert all(rows[r]["analysed_s"] >= rows[r]["end_s"] for r in ("case-1", "case-2", "case-3"))
    assert rows["case-bad"]["error"] == "tshark could not read the capture"
    json.dumps(pool.schedule())


def test_a_plan_in_host_time_is_analysed_in_its_place(tmp_path, analysed_by_the_caller):
    pool = PlanPool(jobs=2)
    futures = [pool.submit(_plan(overlap=False), tmp_path / f"case-{i}") for i in (1, 2)]
    ray = _Ray(failing=set())
    pool.run(ray)
    assert ray.analysed_here == ["case-1", "case-2"] and analysed_by_the_caller == []
    assert [f.result().run_dir for f in futures] == [str(tmp_path / "case-1"), str(tmp_path / "case-2")]
    assert all(row["analysed_s"] == row["end_s"] for row in pool.schedule())


def test_a_worker_hands_back_a_measured_run_as_plain_data_its_capture_not_followed(tmp_path, monkeypatch):
    """What crosses back pickles (Ray uses cloudpickle): the result, its transfers and its workload's end, no
    Progress nor a follower's tshark (the worker measures without following the capture; the caller analyses)."""
    measured_with = []

    def measure(plan, run_dir, progress=None):
        measured_with.append(plan.follow_capture)
        run = _run(1.0)
        run.run_dir = str(run_dir)
        return MeasuredRun(run, [Transfer("rx", 1000, 1.0)], Progress(), None, 123.0)
    monkeypatch.setattr(parallel_module, "measure_trusted", measure)
    plan = RunPlan(load_platform("openmv-n6"), SimpleNamespace(profile=SimpleNamespace(name="p")), LinkSpec(),
                   Workload("sock-rx"), time=DeviceTime("device", 3.0))
    out = parallel_module.execute_task(RunTask.of_plan("r-1", plan, tmp_path / "r-1", analyse=False))
    assert measured_with == [False] and out["error"] is None
    back = pickle.loads(pickle.dumps(out))
    assert back["run"] == out["run"] and back["transfers"] == [Transfer("rx", 1000, 1.0)]
    assert back["workload_end"] == 123.0


def test_one_job_or_nothing_queued_needs_no_ray(tmp_path):
    pool = PlanPool(jobs=2)
    pool.run(ray=object())  # nothing queued: Ray is not touched
    assert pool.schedule() == []


def test_the_table_says_when_runs_shared_the_machine():
    document = _document({"band": 0.15, "cases": [], "inputs": []}, [case("a", 10.0, 10.0)])
    assert not any(ln.startswith("runs: ") for ln in format_report(document).splitlines())  # as --jobs 1 always was
    document["jobs"] = 2
    assert "runs: 2 at once (device time; which shared the machine: reproduce.json)" in format_report(
        document).splitlines()


@pytest.mark.real
def test_two_runs_at_once_give_the_figures_of_one_at_a_time_through_the_real_chain(tmp_path):
    """Device time: two boards sharing the machine measure what one alone does (the exact facts equal, the
    link-limited figure within 1 %); the document says which runs shared it, and the D check still runs. Three
    repeats: a median of three stands when the host disturbs one 1 s run unseen (test_sensitivity_jobs says how)."""
    only = ["ethernet rx before"]
    alone = reproduce("openmv-n6", out=tmp_path, repeats=3, seconds=1, only=only, jobs=1)
    shared = reproduce("openmv-n6", out=tmp_path, repeats=3, seconds=1, only=only, jobs=2, d_check=True)
    assert (alone["jobs"], alone["schedule"]) == (1, None) and shared["jobs"] == 2
    runs = {row["run"]: row for row in shared["schedule"]}
    assert set(runs) == {"ethernet-rx-before-1", "ethernet-rx-before-2", "ethernet-rx-before-3",
                         "ethernet-rx-before-d-check"}
    assert runs["ethernet-rx-before-1"]["alongside"] and {row["slot"] for row in runs.values()} == {0, 1}
    a, b = alone["cases"][0], shared["cases"][0]
    assert (b["device_mss"], b["device_window_max"], b["verdict"]) == (a["device_mss"], a["device_window_max"],
                                                                       a["verdict"]), (a, b)
    assert len(b["runs_mbps"]) == 3 and abs(b["median_mbps"] / a["median_mbps"] - 1) <= 0.01, (a, b)
    assert b["d_check"] is not None and b["d_check_dilation"] == pytest.approx(2 * b["dilation"]), b
