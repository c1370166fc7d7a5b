"""reproduce --sensitivity --jobs N: every input's runs queued on reproduce's pool and run N at once (on a
stand-in for Ray here, the runs fake_n6's; the real chain is at the end)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fake_ray import FakeRay
from test_sensitivity import DEVICE, _n6_document, fake_n6

import harness.studies.sensitivity as sensitivity_module
from harness.core.errors import NetreproError
from harness.studies.plan_pool import PlanPool
from harness.studies.reproduce import Setup, reproduce
from harness.studies.sensitivity import format_sensitivity, sensitivity


class _Ray(FakeRay):
    """Ray's remote/wait/get: each task's run is fake_n6 of the setup its plan was made from, analysed (the
    plan's analysis may not overlap, so the worker analyses it in its place)."""

    def name(self, task) -> str:
        return task.run_dir

    def get(self, ref, timeout):
        try:
            run = fake_n6(ref.task.plan.setup, Path(ref.task.run_dir))
        except NetreproError as exc:
            return {"result": {"status": "failed"}, "error": str(exc), "host": "h", "tarball": None}
        run.run_dir = ref.task.run_dir
        return {"result": {"status": "passed"}, "error": None, "host": "h", "tarball": None, "run": run}


def _fake_plan(setup: Setup) -> SimpleNamespace:
    return SimpleNamespace(platform=setup.platform, firmware=SimpleNamespace(profile=SimpleNamespace(
        name=setup.profile)), link=setup.link_spec(), workload=setup.workload, time=setup.time, boot_timeout=60.0,
        analysis_may_overlap=lambda: False, setup=setup)


@pytest.fixture
def pooled(monkeypatch) -> _Ray:
    """RealRun's plans stood in for (no firmware is built), and the pool run on the stand-in for Ray."""
    ray = _Ray()
    monkeypatch.setattr(sensitivity_module.RealRun, "plan", lambda self, setup: _fake_plan(setup))
    run = PlanPool.run
    monkeypatch.setattr(PlanPool, "run", lambda self, _ray=None: run(self, ray))
    return ray


def _without_jobs(found: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in found.items() if k not in ("jobs", "schedule")}


def test_two_at_once_give_the_study_of_one_at_a_time_and_say_which_runs_shared_the_machine(tmp_path, pooled):
    alone = sensitivity("openmv-n6", _n6_document(tmp_path / "alone"), time=DEVICE, execute=fake_n6)
    shared = sensitivity("openmv-n6", _n6_document(tmp_path / "shared"), time=DEVICE, jobs=2)
    assert (alone["jobs"], alone["schedule"]) == (1, None) and shared["jobs"] == 2

    def relative(found: dict[str, Any], root: Path) -> dict[str, Any]:
        return json.loads(json.dumps(_without_jobs(found)).replace(str(root), "ROOT"))
    assert relative(shared, tmp_path / "shared") == relative(alone, tmp_path / "alone")
    made = {d for i in alone["inputs"] for c in i["cases"] for end in ("low", "high") if not c[end]["is_baseline"]
            for d in c[end]["run_dirs"]}
    schedule = shared["schedule"]
    assert len(schedule) == len(pooled.started) == len(made) > 2  # every run the study makes, through the pool
    assert {row["slot"] for row in schedule} == {0, 1}  # (a stand-in run takes no time: none overlaps)
    assert [row["error"] for row in schedule if row["error"]] == ["boot timed out"]  # ethernet rx after at 1 ms
    assert "runs: 2 at once (device time; which shared the machine: sensitivity.json)" in format_sensitivity(
        shared).splitlines()
    assert not any(ln.startswith("runs: ") for ln in format_sensitivity(alone).splitlines())


@pytest.mark.real
def test_two_runs_at_once_vary_an_input_as_one_at_a_time_through_the_real_chain(tmp_path):
    """Device time: the ethernet rate's low end (its high end is the value: the baseline), three times, the runs
    side by side measure what they measure one at a time (the exact facts equal, the link-limited figure within
    1 %); sensitivity.json says which runs shared the machine and when each capture's analysis ended.

    Three runs, not two: a 1 s run the host disturbed without the disturbed-run policy seeing it (QEMU's NIC lost
    3 frames silently while the link was 1.3 ms late; the figure fell 4 %) moved a median of two by 2 %; a median
    of three stands on the other two."""
    document = reproduce("openmv-n6", out=tmp_path, repeats=1, seconds=1, only=["ethernet rx before"], jobs=1)
    study = {"seconds": 1, "time": DEVICE, "inputs": ["ethernet rate"], "repeats": 3}
    alone = sensitivity("openmv-n6", document, jobs=1, **study)
    shared = sensitivity("openmv-n6", document, jobs=2, **study)
    assert (alone["jobs"], alone["schedule"]) == (1, None) and shared["jobs"] == 2
    rows = shared["schedule"]
    # the third run takes the first place that frees; the first two ran side by side
    assert len(rows) == 3 and {row["slot"] for row in rows} == {0, 1}, rows
    assert sum(bool(row["alongside"]) for row in rows) >= 2, rows
    assert all(row["analysed_s"] is not None and row["analysed_s"] >= row["end_s"] for row in rows), rows
    a, b = alone["inputs"][0]["cases"][0]["low"], shared["inputs"][0]["cases"][0]["low"]
    assert (b["verdict"], b["runs_failed"], len(b["run_dirs"])) == (a["verdict"], a["runs_failed"], 3), (a, b)
    assert abs(b["median_mbps"] / a["median_mbps"] - 1) <= 0.01, (a, b)
    assert shared["inputs"][0]["cases"][0]["high"]["is_baseline"]
