"""netrepro tune: the search space, the budget, the Pareto frontier, its table, and one real tune on Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli.exit_codes import ExitCode
from harness.core.errors import NetreproError
from harness.rig.build import FirmwareConfig, build_firmware
from harness.rig.platform import load_platform
from harness.rig.profile import resolve_profile
from harness.rig.workload import Workload
from harness.studies.parallel import TaskOutcome
from harness.studies.tune import (
    SAMPLER,
    TUNABLE,
    Tuning,
    format_tune,
    load_tune,
    make_sampler,
    pareto_front,
    parse_budget,
    tune,
)

_ENV = {**os.environ, "CI": "true"}


class _Trial:
    """Optuna's suggest_* as a trial answers them: the low end, or the first choice."""

    def suggest_int(self, name, low, high):
        return low

    def suggest_categorical(self, name, choices):
        return choices[0]


def test_each_option_is_searched_as_an_lwip_expression():
    values = {name: knob.suggest(_Trial(), name) for name, knob in TUNABLE.items()}
    assert values == {"TCP_MSS": "536", "TCP_WND": "2*TCP_MSS", "TCP_SND_BUF": "2*TCP_MSS", "MEM_SIZE": "2*1024",
                      "PBUF_POOL_SIZE": "(TCP_WND/TCP_MSS+0)", "TCP_SND_QUEUELEN": "(2*TCP_SND_BUF/TCP_MSS)",
                      "MEMP_NUM_TCP_SEG": "(TCP_SND_QUEUELEN+0)"}


def test_the_budget_is_a_size_or_a_profiles_lwip_ram(tree):
    assert parse_budget("26.7KB", "openmv-rt1060") == round(26.7 * 1024)
    assert parse_budget("27388", "openmv-rt1060") == 27388
    platform = load_platform("openmv-rt1060")
    firmware = build_firmware(FirmwareConfig(platform, resolve_profile(platform, "mp-rt1060-after"), tree))
    assert parse_budget("mp-rt1060-after", "openmv-rt1060") == firmware.lwip_ram.total
    with pytest.raises(NetreproError, match="not a size nor a profile of openmv-rt1060"):
        parse_budget("mp-n6-after", "openmv-rt1060")


@pytest.mark.parametrize(("changes", "words"), [
    ({"options": ("TCP_WND", "LWIP_DHCP")}, "cannot search LWIP_DHCP"),
    ({"trials": 0}, "bad --trials"),
    ({"budget": 0}, "bad RAM budget"),
    ({"workload": Workload("duplex")}, "two directions"),
])
def test_a_tune_that_cannot_run_is_one_clear_error(changes, words):
    with pytest.raises(NetreproError, match=words):
        Tuning(**{"platform": "openmv-rt1060", "budget": 27388, **changes}).validate()


def _trial(number, ram, mbps, state="complete"):
    return {"number": number, "key": f"trial-{number:03d}", "options": {"TCP_WND": f"{number}*TCP_MSS"},
            "effective_options": {"TCP_WND": number * 1460} if mbps else {}, "state": state, "lwip_ram": ram,
            "throughput_mbps": mbps, "verdict": "window-limited" if mbps else None, "reason": None, "run_dir": None}


def test_the_frontier_is_the_trials_nothing_beats_on_both_throughput_and_ram():
    trials = [_trial(1, 20000, 10.0), _trial(2, 22000, 9.0), _trial(3, 24000, 20.0), _trial(4, 24000, 18.0),
              _trial(5, 26000, 20.0), _trial(6, 18000, None, "pruned"), _trial(7, 27000, 30.0)]
    assert [t["number"] for t in pareto_front(trials)] == [1, 3, 7]
    assert pareto_front([]) == []


def test_the_table_lists_the_frontier_effective_values_the_profiles_and_the_header():
    trials = [_trial(4, 20000, 10.0), _trial(8, 26000, 30.0), _trial(9, None, None, "pruned")]
    doc = {"platform": "openmv-rt1060", "folder": "/runs/t", "budget": 27388, "options": ["TCP_WND"], "link": "wifi",
           "workload": {"name": "sock-rx"}, "time": "device", "trials": trials, "frontier": [4, 8], "best": 8,
           "compared": [{"label": "mp-rt1060-after", "ram": 27388, "throughput_mbps": 22.4, "verdict": "window-limited",
                         "run_dir": "/runs/t/profile-mp-rt1060-after", "error": None},
                        {"label": "mp-rt1060-before", "ram": 30000, "throughput_mbps": None, "verdict": None,
                         "run_dir": "/runs/t/profile-mp-rt1060-before", "error": "the run returned no result"}],
           "lwipopts": "/runs/t/lwipopts.h"}
    text = format_tune(doc)
    assert "2 trials run, 1 pruned" in text and "budget 27388 B (26.7 KiB)" in text
    assert "11680      26000   30.00  window-limited  <- best" in text
    assert "mp-rt1060-after      RAM 27388 B, 22.40 Mbit/s, window-limited\n" in text
    assert "mp-rt1060-before     RAM 30000 B, failed, - (the run returned no result)" in text
    assert "best within the budget: /runs/t/lwipopts.h (use it with --lwip)" in text


def test_bad_tune_input_is_one_line():
    for args, words in ((["--ram-budget", "lots"], "not a size nor a profile"),
                        (["--ram-budget", "27388", "--options", "TCP_WND,NOPE"], "cannot search NOPE"),
                        (["--ram-budget", "27388", "--link", "moon"], "moon")):
        proc = subprocess.run([sys.executable, "-m", "harness.cli", "tune", "openmv-rt1060", *args],
                              capture_output=True, text=True, timeout=120, env=_ENV, check=False)
        assert proc.returncode == ExitCode.COULD_NOT and proc.stderr.count("\n") == 1, proc.stderr
        assert words in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


@pytest.mark.real
def test_a_real_tune_runs_trials_prunes_what_lwip_rejects_and_writes_a_lwipopts_that_builds(tmp_path, tree,
                                                                                             no_leftovers):
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "tune", "openmv-rt1060", "--link", "wifi",
                           "--workload", "sock-rx", "--chunk", "512", "--ram-budget", "mp-rt1060-after",
                           "--options", "TCP_WND,PBUF_POOL_SIZE,MEM_SIZE", "--trials", "1", "--seconds", "2",
                           "--jobs", "1", "--compare", "mp-rt1060-after", "--out", str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=900, env=_ENV, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout)
    ran = [t for t in doc["trials"] if t["state"] != "pruned"]
    assert len(ran) == 1 and ran[0]["throughput_mbps"] > 0 and ran[0]["lwip_ram"] <= doc["budget"]
    assert all(t["reason"] for t in doc["trials"] if t["state"] == "pruned")
    (after,) = doc["compared"]
    assert after["error"] is None, after
    assert after["label"] == "mp-rt1060-after" and after["ram"] == doc["budget"] and after["throughput_mbps"] > 10
    assert doc["best"] == ran[0]["number"] and doc["frontier"] == [ran[0]["number"]]
    header = Path(doc["lwipopts"])
    assert header.parent == Path(doc["folder"]) and Path(doc["plots"][0]).stat().st_size > 5000
    platform = load_platform("openmv-rt1060")
    rebuilt = build_firmware(FirmwareConfig(platform, resolve_profile(platform, str(header)), tree))
    assert rebuilt.lwip_ram.total == ran[0]["lwip_ram"]      # the header is the configuration that ran
    result = json.loads((Path(ran[0]["run_dir"]) / "result.json").read_text())
    assert result["status"] == "passed" and result["throughput_mbps"] == ran[0]["throughput_mbps"]


def test_help_names_the_sampler_the_tune_runs():
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "tune", "--help"], capture_output=True, text=True,
                          timeout=60, env=_ENV, check=False)
    sampler = make_sampler(Tuning(platform="openmv-rt1060", budget=27388), 0)
    assert type(sampler).__name__ == "TPESampler" and "TPE sampler" in SAMPLER
    assert SAMPLER in " ".join(proc.stdout.split()) and "NSGA" not in proc.stdout, proc.stdout


class _FakeRunner:
    """Ray's place: every task passes at once with a throughput of its trial's number; the call `stop_at`
    is interrupted (Ctrl-C) before any of its tasks ends."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.stop_at, self.calls = stop_at, []

    def __call__(self, tasks, told):
        self.calls.append([t.key for t in tasks])
        if len(self.calls) == self.stop_at:
            raise KeyboardInterrupt
        for task in tasks:
            mbps = 10.0 + int(task.key.split("-")[1])
            told(TaskOutcome(task, {"status": "passed", "throughput_mbps": mbps, "options": {},
                                    "analysis": {"verdict": "window-limited"}}))


def test_an_interrupted_tune_resumes_from_its_folder_without_running_a_finished_trial_again(tmp_path):
    tuning = Tuning(platform="openmv-rt1060", budget=10**6, options=("TCP_WND",), trials=3, compare=())
    first = _FakeRunner(stop_at=2)
    with pytest.raises(KeyboardInterrupt):
        tune(tuning, tmp_path, first, jobs=1)
    (done,), (cut,) = first.calls  # one trial ran to its end, the next was cut short
    stored, ended = load_tune(tmp_path)
    assert stored == tuning and [t["key"] for t in ended if t["state"] == "complete"] == [done]
    again = _FakeRunner()
    document = tune(stored, tmp_path, again, jobs=1, resume=True)
    resumed = [key for call in again.calls for key in call]
    assert done not in resumed and cut not in resumed and len(resumed) == 2, again.calls
    ran = [t for t in document["trials"] if t["state"] == "complete"]
    assert [t["key"] for t in ran] == [done, *resumed] and ran[0]["throughput_mbps"] == 10.0 + int(done[-3:])
    assert len({json.dumps(t["options"]) for t in ran}) == 3, "the resumed sampler proposed a finished trial again"


def _interrupt_after_first_trial(args: list[str]) -> tuple[int, str]:
    """Run `netrepro ARGS`, Ctrl-C it (its process group, as a terminal does) once its first trial has ended and
    the next one started; its exit code and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "CI": ""}, start_new_session=True)
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 900
        for line in proc.stderr:
            seen.append(line)
            ended = any("Mbit/s, lwIP RAM" in s for s in seen[:-1])
            if (ended and "attempt 1 started" in line) or time.monotonic() > deadline:
                break
        time.sleep(3)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        return proc.returncode, "".join(seen) + err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.real
def test_a_tune_interrupted_after_its_first_trial_resumes_without_running_it_again(tmp_path, no_leftovers):
    code, err = _interrupt_after_first_trial([
        "tune", "openmv-rt1060", "--link", "wifi", "--workload", "sock-rx", "--chunk", "512", "--ram-budget",
        "mp-rt1060-after", "--options", "TCP_WND,PBUF_POOL_SIZE,MEM_SIZE", "--trials", "2", "--seconds", "2",
        "--jobs", "1", "--compare", "mp-rt1060-after", "--out", str(tmp_path)])
    assert code == ExitCode.INTERRUPTED, err[-3000:]
    (folder,) = tmp_path.iterdir()
    assert f"resume with netrepro tune --resume {folder}" in err and (folder / "study.db").is_file()
    (first,) = [t for t in json.loads((folder / "tune.json").read_text())["trials"] if t["state"] == "complete"]
    result = Path(first["run_dir"]) / "result.json"
    written = result.stat().st_mtime_ns
    resumed = subprocess.run([sys.executable, "-m", "harness.cli", "tune", "--resume", str(folder), "--jobs", "1",
                              "--json"], capture_output=True, text=True, timeout=900, env=_ENV, check=False)
    assert resumed.returncode == ExitCode.OK, resumed.stderr[-3000:]
    doc = json.loads(resumed.stdout)
    ran = [t for t in doc["trials"] if t["state"] == "complete"]
    assert len(ran) == 2 and ran[0] == first, ran   # the budget: 2 trials in all, the first as it ended
    assert result.stat().st_mtime_ns == written and ran[1]["run_dir"] != first["run_dir"]
    assert ran[1]["options"] != first["options"] and doc["compared"][0]["throughput_mbps"] > 10
