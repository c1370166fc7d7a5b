"""netrepro sweep: the grid, its table/CSV/JSON, lwIP's rejections, the Ray runner's retries, and real sweeps
on a local Ray instance (two points; a lost worker; Ctrl-C and --resume)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.core.errors import NetreproError
from harness.link.units import parse_time
from harness.rig.workload import Workload
from harness.runs.disturbed import REPEAT_SUFFIX
from harness.runs.plan import Configuration
from harness.studies.parallel import ATTEMPTS, WORKER_PID_FILE, RayRunner, RunTask, TaskOutcome
from harness.studies.sweep import Axis, LinkPoint, SweepSpec, format_sweep, point_figures, points_csv, run_sweep
from harness.studies.sweep_plots import plot_sweep
from tests.conftest import (
    assert_one_line_error,
    descendants,
    interrupt_run,
    leftover_processes,
    netrepro_cli,
    socket_dirs,
    stop_descendants,
)

_ENV = {**os.environ, "CI": "true"}
# Ray's token authentication with a token of the test's own (a user keeps one in ~/.ray/auth_token, which a
# fresh machine does not have)
_CLUSTER_ENV = {**_ENV, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
_RAY_MARKS = ("raylet", "gcs_server", "ray::", "default_worker.py")


def ray_processes() -> set[tuple[int, str]]:
    """Ray's processes (raylet, GCS, workers) among this test process's descendants."""
    return {(pid, command[:80]) for pid, command in leftover_processes(_RAY_MARKS)}


def _gone_soon(check, seconds: float = 15.0) -> set:
    """What `check` still finds after up to `seconds` (Ray's processes take a moment to exit)."""
    deadline = time.monotonic() + seconds
    while (left := check()) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


# ------------------------------------------------------------------ the grid


def test_a_sweep_setting_is_an_option_and_its_values():
    assert Axis.parse("TCP_WND=4*TCP_MSS, 8*TCP_MSS") == Axis("TCP_WND", ("4*TCP_MSS", "8*TCP_MSS"))
    for bad in ("TCP_WND", "TCP_WND=", "=4", "TCP_WND=4,,8"):
        with pytest.raises(NetreproError, match="NAME=V1,V2"):
            Axis.parse(bad)


def test_the_grid_is_every_combination_the_first_option_slowest_times_every_link():
    spec = SweepSpec("openmv-n6", (Axis("TCP_WND", ("a", "b")), Axis("TCP_MSS", ("536", "1460"))),
                     links=("wifi",), rtts=("5ms", "10ms"))
    assert spec.configurations() == [{"TCP_WND": "a", "TCP_MSS": "536"}, {"TCP_WND": "a", "TCP_MSS": "1460"},
                                     {"TCP_WND": "b", "TCP_MSS": "536"}, {"TCP_WND": "b", "TCP_MSS": "1460"}]
    assert [p.label for p in spec.link_points()] == ["wifi rtt=5ms", "wifi rtt=10ms"]
    assert spec.configuration({"TCP_WND": "a"}).set == ("TCP_WND=a",)
    assert SweepSpec.from_dict(json.loads(json.dumps(spec.as_dict()))) == spec


def test_a_link_point_is_the_preset_with_its_rtt_and_rate(n6):
    link = LinkPoint("wifi-wire", rtt="10ms", rate="20mbit").spec(n6)
    assert link.as_dict()["rtt_s"] == pytest.approx(0.010)
    # without an rtt of its own, the preset's (the N6 wifi's calibrated delay)
    assert LinkPoint("wifi").spec(n6).as_dict()["rtt_s"] == pytest.approx(parse_time(n6.links["wifi"]["rtt"]))


@pytest.mark.parametrize(("spec", "words"), [
    (SweepSpec("openmv-n6", ()), "nothing to sweep"),
    (SweepSpec("openmv-n6", (Axis("TCP_WND", ("1",)), Axis("TCP_WND", ("2",)))), "swept twice"),
    (SweepSpec("openmv-n6", (Axis("TCP_WND", ("1",)),), workload=Workload("duplex")), "two directions"),
])
def test_a_grid_that_cannot_run_is_one_clear_error(spec, words):
    with pytest.raises(NetreproError, match=words):
        spec.validate()


def _document(points, rejected=(), interrupted=False):
    spec = SweepSpec("openmv-n6", (Axis("TCP_WND", ("4*TCP_MSS", "8*TCP_MSS")),), links=("wifi",))
    return {"platform": "openmv-n6", "folder": "/runs/s", "spec": spec.as_dict(), "interrupted": interrupted,
            "points": points, "rejected": list(rejected)}


def _point(wnd, mbps, status="passed", effective=None):
    return {"key": f"c-{wnd}", "options": {"TCP_WND": f"{wnd}*TCP_MSS"}, "link": "wifi", "status": status,
            "throughput_mbps": mbps, "lwip_ram": {"total": 118600, "heap": 65563, "pools": {}, "other": 790},
            "effective_options": {"TCP_WND": effective or wnd * 1460},
            "analysis": {"verdict": "window-limited", "rtt_ms": 5.8, "bound_mbps": wnd * 1460 * 8 / 5.8e3},
            "run_dir": f"/runs/s/c-{wnd}", "error": None if status == "passed" else "boom",
            "attempts": ["/runs/s/c-x-attempt1", f"/runs/s/c-{wnd}"] if status != "passed" else [f"/runs/s/c-{wnd}"]}


def test_the_table_csv_and_rejections_show_every_point(tmp_path):
    doc = _document([_point(4, 8.03), _point(8, None, status="failed")],
                    [{"options": {"TCP_WND": "40*TCP_MSS"}, "error": "TCP_WND is larger than space provided"}],
                    interrupted=True)
    table = format_sweep(doc)
    assert "4*TCP_MSS  wifi     8.03    8.06" in table
    assert "configurations lwIP rejects (not run):\n  TCP_WND=40*TCP_MSS: TCP_WND is larger" in table
    assert "c-8: boom (attempts: /runs/s/c-x-attempt1, /runs/s/c-8)" in table
    assert "resume with --resume /runs/s" in table
    rows = points_csv(doc["points"], ["TCP_WND"]).splitlines()
    assert rows[0].startswith("TCP_WND,link,status,throughput_mbps,lwip_ram_bytes,verdict")
    assert rows[1].startswith("4*TCP_MSS,wifi,passed,8.03,118600,window-limited,5.8")
    plots = plot_sweep(_document([_point(4, 8.0), _point(8, 15.5), _point(16, 30.1)]), tmp_path)
    assert [p.name for p in plots] == ["throughput-TCP_WND.png", "throughput-TCP_WND.svg"]
    assert all(p.stat().st_size > 5000 for p in plots)


def test_two_options_get_a_heatmap_per_link(tmp_path):
    doc = _document([])
    doc["spec"]["axes"].append({"name": "TCP_MSS", "values": ["536", "1460"]})
    for wnd in (4, 8):
        for mss in (536, 1460):
            point = _point(wnd, wnd * mss / 1000)
            point["options"]["TCP_MSS"] = str(mss)
            point["effective_options"]["TCP_MSS"] = mss
            doc["points"].append(point)
    names = sorted(p.name for p in plot_sweep(doc, tmp_path))
    assert names == ["heatmap-wifi.png", "heatmap-wifi.svg", "throughput-TCP_MSS.png", "throughput-TCP_MSS.svg",
                     "throughput-TCP_WND.png", "throughput-TCP_WND.svg"]


def test_a_configuration_lwip_rejects_is_listed_with_its_message_and_not_run(tmp_path):
    """A real build: 40 segments of window over mp-n6-after's 32 pool pbufs fails lwIP's sanity #error."""
    spec = SweepSpec("openmv-n6", (Axis("TCP_WND", ("4*TCP_MSS", "40*TCP_MSS")),), links=("wifi",),
                     lwip="mp-n6-after", workload=Workload("rx", seconds=2))
    given: list[RunTask] = []
    sweep = run_sweep(spec, tmp_path, lambda tasks, done: given.extend(tasks))
    assert [t.configuration.set for t in given] == [("TCP_WND=4*TCP_MSS",)]
    (rejected,) = sweep.rejected
    assert rejected["options"] == {"TCP_WND": "40*TCP_MSS"}
    assert "TCP_WND is larger than space provided by PBUF_POOL_SIZE" in rejected["error"]
    stored = json.loads((tmp_path / "sweep.json").read_text())
    assert stored["rejected"] == sweep.rejected and [p["status"] for p in stored["points"]] == ["pending"]
    assert stored["points"][0]["lwip_ram"]["total"] > 0


# ------------------------------------------------------------------ the runner, on a stand-in for Ray


class _Ref:
    def __init__(self, task: RunTask, attempt: int) -> None:
        self.task, self.attempt = task, attempt


class _FakeRay:
    """Ray's remote/wait/get: each task's attempts fail or pass as `plan` says ("lost" raises as a lost worker)."""

    def __init__(self, plan: dict[str, list[str]]) -> None:
        self.plan, self.started = plan, []

    def remote(self, **_options):
        def wrap(fn):
            outer = self

            class Remote:
                @staticmethod
                def remote(task):
                    outer.started.append(task.key)
                    return _Ref(task, outer.started.count(task.key))
            return Remote
        return wrap

    def wait(self, refs, num_returns, timeout):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref, timeout):
        what = self.plan[ref.task.key][ref.attempt - 1]
        if what == "lost":
            raise type("WorkerCrashedError", (Exception,), {})("the worker died")
        ok = what == "pass"
        return {"result": {"status": "passed" if ok else "failed", "throughput_mbps": 1.0}, "host": "h",
                "error": None if ok else "the run failed", "tarball": None}

    def cancel(self, ref, force):
        pass


def _task(tmp_path, key):
    return RunTask(key, "openmv-n6", Configuration(), None, Workload("rx"), None, str(tmp_path / key))


def test_a_failed_or_lost_run_is_retried_once_then_reported(tmp_path):
    ray = _FakeRay({"a": ["pass"], "b": ["lost", "pass"], "c": ["fail", "lost"]})
    done: list[TaskOutcome] = []
    RayRunner(ray, jobs=2).run([_task(tmp_path, k) for k in "abc"], done.append)
    by = {o.task.key: o for o in done}
    assert sorted(by) == ["a", "b", "c"] and ray.started.count("c") == ATTEMPTS == 2
    assert by["a"].passed and by["a"].attempts == [str(tmp_path / "a")]
    assert by["b"].passed and by["b"].attempts == [str(tmp_path / "b-attempt1"), str(tmp_path / "b")]
    assert not by["c"].passed and "the worker running it was lost (WorkerCrashedError)" in by["c"].error
    assert (tmp_path / "c-attempt1").is_dir() and (tmp_path / "c").is_dir()


# ------------------------------------------------------------------ the command line


def test_bad_sweep_input_is_one_line():
    assert_one_line_error(netrepro_cli("sweep", "--set", "TCP_WND=1"), "sweep needs a platform")
    assert_one_line_error(netrepro_cli("sweep", "openmv-n6", "--set", "TCP_WND"), "bad sweep setting")
    assert_one_line_error(netrepro_cli("sweep", "openmv-n6", "--set", "TCP_WNDD=1,2"), "unknown lwIP option TCP_WNDD")
    assert_one_line_error(netrepro_cli("sweep", "openmv-n6", "--set", "TCP_WND=1", "--link", "moon"), "moon")
    assert_one_line_error(netrepro_cli("sweep", "--resume", "/nonexistent"), "not a sweep's folder")
    assert_one_line_error(netrepro_cli("sweep", "openmv-n6", "--resume", "/nonexistent"), "--resume takes the sweep")


# ------------------------------------------------------------------ real sweeps on a local Ray instance


@pytest.fixture
def local_ray():
    """A local Ray instance this test starts (two CPUs, quiet) and stops."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield ray
    finally:
        ray.shutdown()
    assert _gone_soon(ray_processes) == set()


@pytest.mark.real
def test_a_two_point_sweep_on_a_local_ray_instance(tmp_path, local_ray, no_leftovers):
    spec = SweepSpec("openmv-n6", (Axis("TCP_WND", ("4*TCP_MSS", "8*TCP_MSS")),), links=("wifi",),
                     lwip="mp-n6-after", workload=Workload("rx", seconds=2))
    sweep = run_sweep(spec, tmp_path, RayRunner(local_ray, jobs=2).run)
    small, large = sweep.points
    for point, wnd in ((small, 4 * 1460), (large, 8 * 1460)):
        assert point["status"] == "passed", point
        assert point["effective_options"]["TCP_WND"] == wnd
        run_dir = Path(point["run_dir"])
        assert run_dir.parent == tmp_path and run_dir.name.startswith("c0")
        result = json.loads((run_dir / "result.json").read_text())
        assert result["status"] == "passed" and result["throughput_mbps"] == point["throughput_mbps"]
        assert (run_dir / "capture.pcap").stat().st_size > 100_000
        assert result["analysis"]["device_window"]["max"] == wnd
        # The capture's goodput cannot beat window / RTT (its own RTT). How close it comes is the
        # benchmark's (sweep_bench.py): two runs at once on this shared 2-core machine can fall behind the board.
        assert 0 < point["analysis"]["goodput_mbps"] <= 1.05 * wnd * 8 / point["analysis"]["rtt_ms"] / 1e3
    assert large["analysis"]["goodput_mbps"] > 1.3 * small["analysis"]["goodput_mbps"]
    rows = (tmp_path / "points.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[1].startswith("4*TCP_MSS,wifi,passed,")


@pytest.mark.real
def test_a_worker_killed_mid_run_is_retried(tmp_path, no_leftovers):
    before = ray_processes()
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "sweep", "openmv-n6", "--lwip", "mp-n6-after",
                             "--set", "TCP_WND=8*TCP_MSS", "--link", "wifi", "--seconds", "2", "--jobs", "1",
                             "--out", str(tmp_path), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=_ENV)
    try:
        pid_file = _wait_for(lambda: next(tmp_path.glob(f"*/c01-*/{WORKER_PID_FILE}"), None), 180)
        _wait_for(lambda: "netrepro firmware" in (pid_file.parent / "console.log").read_text(errors="replace")
                  if (pid_file.parent / "console.log").is_file() else None, 120)
        killed = int(pid_file.read_text())
        os.kill(killed, signal.SIGKILL)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-2000:]
    (point,) = json.loads(out)["points"]
    assert point["status"] == "passed" and len(point["attempts"]) == 2, point
    first = Path(point["attempts"][0])
    assert first.name.endswith("-attempt1") and (first / "console.log").is_file()
    assert "lost" in err and "trying once more" in err
    assert _gone_soon(lambda: ray_processes() - before) == set()
    assert socket_dirs(owner=killed) == set()  # the killed worker's, removed by the session that ran the retry


def _wait_for(probe, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.2)
    pytest.fail(f"nothing after {seconds} s")


@pytest.mark.real
def test_ctrl_c_keeps_the_finished_points_and_resume_runs_the_rest(tmp_path, no_leftovers):
    before = ray_processes()
    args = ["sweep", "openmv-n6", "--lwip", "mp-n6-after", "--set", "TCP_WND=4*TCP_MSS,8*TCP_MSS", "--link", "wifi",
            "--seconds", "2", "--jobs", "1", "--out", str(tmp_path)]
    stopped = interrupt_run(args, "c02-l01-TCP_WND=8xTCP_MSS_wifi: attempt 1 started", settle_s=6, to_group=True)
    assert stopped.code == 130, stopped
    assert "resume with netrepro sweep --resume" in stopped.err
    assert _gone_soon(lambda: ray_processes() - before) == set()
    assert leftover_processes() == set()
    (folder,) = list(tmp_path.iterdir())
    stored = json.loads((folder / "sweep.json").read_text())
    assert stored["interrupted"] is True
    assert [p["status"] for p in stored["points"]] == ["passed", "pending"]
    resumed = netrepro_cli("sweep", "--resume", str(folder), "--jobs", "1", "--json", timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    points = json.loads(resumed.stdout)["points"]
    assert [p["status"] for p in points] == ["passed", "passed"]
    assert points[0] == stored["points"][0]                       # the finished point was kept, not rerun
    # the interrupted attempt kept beside the point's folder; a busy host may have repeated the resumed run at twice
    # D, whose folder that stands is then the point's with REPEAT_SUFFIX once per repeat
    point = Path(points[1]["run_dir"]).name
    while point.endswith(REPEAT_SUFFIX):
        point = point.removesuffix(REPEAT_SUFFIX)
    assert (folder / (point + "-earlier1") / "console.log").is_file()
    assert _gone_soon(lambda: ray_processes() - before) == set()


def test_a_run_folder_shipped_from_another_machine_lands_in_the_callers_folder(tmp_path):
    """A worker without the caller's filesystem packs its folder; the caller unpacks it and moves the paths."""
    from harness.studies.parallel import pack, relocate, unpack

    theirs = tmp_path / "worker" / "netrepro-ray-x"
    (theirs / "plots").mkdir(parents=True)
    (theirs / "capture.pcap").write_bytes(b"\xd4\xc3\xb2\xa1" + bytes(100))
    (theirs / "plots" / "goodput.png").write_bytes(b"png")
    result = {"run_dir": str(theirs), "capture": str(theirs / "capture.pcap"),
              "plots": [str(theirs / "plots/goodput.png")]}
    ours = tmp_path / "sweep" / "c01-l01-x"
    unpack(pack(theirs), ours)
    assert (ours / "capture.pcap").read_bytes() == (theirs / "capture.pcap").read_bytes()
    assert (ours / "plots" / "goodput.png").read_bytes() == b"png"
    moved = relocate(result, str(theirs), str(ours))
    assert moved == {"run_dir": str(ours), "capture": str(ours / "capture.pcap"),
                     "plots": [str(ours / "plots/goodput.png")]}


_LIST_NODES = ("import json, sys, ray; ray.init(address=sys.argv[1], logging_level='ERROR'); "
               "print(json.dumps({n['NodeID']: n['Resources'].get('CPU', 0) for n in ray.nodes() if n['Alive']}))")


@pytest.fixture
def ray_cluster(tmp_path_factory):
    """A Ray cluster of two nodes on this one machine, started as a user starts one (`ray start --head`, then
    `ray start --address` for a worker node; with Ray's token authentication, which a driver joins with
    RAY_AUTH_MODE=token and the cluster's token), stopped after. The head offers no CPU, so every run
    goes to the worker node: (the address, {node ID: CPUs})."""
    ray_cli = str(Path(sys.executable).with_name("ray"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Ray's socket paths must stay short: its own temp folder, not pytest's long one
    temp = Path(tempfile.mkdtemp(prefix="nr-ray-"))
    address = f"127.0.0.1:{port}"
    starts = [[ray_cli, "start", "--head", f"--port={port}", "--num-cpus=0", "--include-dashboard=false",
               "--disable-usage-stats", f"--temp-dir={temp}"],
              [ray_cli, "start", f"--address={address}", "--num-cpus=1", "--disable-usage-stats"]]
    before = descendants()
    try:
        for argv in starts:
            started = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=_CLUSTER_ENV)
            assert started.returncode == 0, started.stdout[-2000:] + started.stderr[-2000:]
        nodes = subprocess.run([sys.executable, "-c", _LIST_NODES, address], capture_output=True, text=True,
                               timeout=120, env=_CLUSTER_ENV, check=True)
        yield address, json.loads(nodes.stdout.strip().splitlines()[-1])
    finally:
        stop_descendants(before)  # this cluster's daemons (adopted here), not the other workers' Ray instances
        shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.real
def test_a_sweep_runs_on_a_cluster_given_by_its_address(tmp_path, ray_cluster, no_leftovers):
    address, nodes = ray_cluster
    assert sorted(nodes.values()) == [0, 1], nodes   # the head (no CPU) and the worker node
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "sweep", "openmv-n6", "--lwip", "mp-n6-after", "--set",
                           "TCP_WND=8*TCP_MSS", "--link", "wifi", "--seconds", "2", "--ray-address", address,
                           "--out", str(tmp_path), "--json"], capture_output=True, text=True, timeout=400,
                          env=_CLUSTER_ENV, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (point,) = json.loads(proc.stdout)["points"]
    assert point["status"] == "passed" and len(point["attempts"]) == 1, point
    assert nodes[point["node"]] == 1, (point["node"], nodes)  # it ran on the worker node, not the caller's head
    run_dir = Path(point["run_dir"])
    assert run_dir.parent.parent == tmp_path            # the caller's sweep folder, whichever node ran it
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "passed" and result["analysis"]["device_window"]["max"] == 8 * 1460
    assert result["throughput_mbps"] == point["throughput_mbps"] > 0


_LOCAL_NODES = ("import json\nfrom harness.studies.parallel import ray_session\n"
                "with ray_session(cpus=1) as ray:\n    nodes = [n['NodeID'] for n in ray.nodes()]\n"
                "print(json.dumps(nodes))")


@pytest.mark.real
def test_a_local_ray_never_joins_a_cluster_started_on_this_machine(ray_cluster):
    """Ray's own ray.init() joins the cluster RAY_ADDRESS names (or the last one a `ray start` left on the
    machine); netrepro's local instance (no --ray-address) is always its own, sized as asked."""
    address, cluster = ray_cluster
    proc = subprocess.run([sys.executable, "-c", _LOCAL_NODES], capture_output=True, text=True, timeout=180,
                          env={**_CLUSTER_ENV, "RAY_ADDRESS": address}, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    local = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(local) == 1 and not set(local) & set(cluster), (local, cluster)


def test_a_point_names_the_folder_of_the_run_that_stands():
    """A run the host disturbed stands repeated at twice D in a folder beside the planned one: the point's figure
    and its folder are that run's (the 2026-12-07 CI rehearsal read a first try's result.json beside the repeat's
    figure); a task that left no result keeps the planned folder."""
    task = RunTask("p0", "openmv-n6", Configuration("mp-n6-after"), None, Workload("sock-rx", 2.0), None, "/runs/p0")
    repeated = point_figures(TaskOutcome(task, {"status": "passed", "throughput_mbps": 13.593,
                                                "run_dir": "/runs/p0-slower", "time": {"dilation": 6.4}}))
    assert (repeated["run_dir"], repeated["throughput_mbps"], repeated["time"]["dilation"]) == \
        ("/runs/p0-slower", 13.593, 6.4)
    assert point_figures(TaskOutcome(task, None, error="lost"))["run_dir"] == "/runs/p0"
