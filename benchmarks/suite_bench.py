"""The test suite as CI runs it: a fresh clone of this checkout's HEAD, `bash .ci/run`, timed, optionally with
busy loops beside it (the issue's "a busy machine": each loop keeps one core's worth of work waiting).

    python benchmarks/suite_bench.py [--busy N] [--label TEXT] [--workers N]

Writes benchmarks/results/test-suite-<label>.md: the commit, the busy loops, the wall time, pytest's summary line
and its slowest 25, the firmware builds the run made (folders new in the build cache: a fresh clone reuses the
machine's builds of the same sources), the load average before and after, and where the time went: every board run
the suite left a result.json for (its basetemp is kept until the end), with its wall time and the D its board kept,
and how many were repeats of runs the host disturbed, so the floor that the boards' own time puts under the suite
is read from the runs, not assumed. The clone, its virtualenv and the busy loops are removed at the end, whatever
happened.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from xml.etree import ElementTree

from harness.runs.disturbed import REPEAT_SUFFIX
from harness.runs.result import STARTED_FORMAT

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
LIMIT_S = 90 * 60  # CI's own limit
BUILDS = Path(os.environ.get("NETREPRO_CACHE") or Path.home() / ".cache" / "netrepro") / "builds"


def head_commit() -> str:
    """This checkout's HEAD, short: the code a benchmark's figures were measured with."""
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def with_workers(test: Path, workers: int) -> None:
    """The clone's test command with N workers as its default (what `.ci/run` calls it with stays the same)."""
    text, default = test.read_text(), re.compile(r"^workers=\(-n \d+\)$", re.M)
    if not default.search(text):
        raise SystemExit(f"{test} has no `workers=(-n N)` line to change; update suite_bench.with_workers")
    test.write_text(default.sub(f"workers=(-n {workers})", text))


def busy_loops(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(count)]


def stop(loops: list[subprocess.Popen]) -> None:
    for loop in loops:
        os.killpg(loop.pid, signal.SIGKILL)
        loop.wait()


def builds() -> set[str]:
    return {p.name for p in BUILDS.iterdir() if p.is_dir()} if BUILDS.is_dir() else set()


def slowest(output: str) -> str:
    block = output.split("slowest 25 durations", 1)[-1].split("short test summary", 1)[0]
    return "\n".join(line for line in block.splitlines() if re.match(r"\s*\d+\.\d+s ", line))


def _started(data: dict) -> float | None:
    """When the run started (result.json's `started`, to the second), as a timestamp."""
    try:
        return datetime.strptime(data["started"], STARTED_FORMAT).timestamp()
    except (KeyError, TypeError, ValueError):
        return None


def _run_wall_s(result: Path, data: dict) -> float | None:
    """From the run's start to its result's last write."""
    started = _started(data)
    return None if started is None else result.stat().st_mtime - started


def _board_seconds(seconds: object) -> float:
    """A run's measured seconds: a number, or per direction of a two-way run ({"rx": s, "tx": s}: the longer)."""
    if isinstance(seconds, dict):
        return max((_board_seconds(s) for s in seconds.values()), default=0.0)
    return float(seconds) if isinstance(seconds, int | float) else 0.0


def run_account(basetemp: Path, workers: int | None = None, junit: Path | None = None,
                since: float | None = None) -> str:
    """The board runs under `basetemp`: how many, their wall time together, the board seconds they measured and the
    D each platform's boards kept (median), and the floor that puts under the suite on `workers` workers (default:
    as many as pytest-xdist made folders for under `basetemp`, popen-gw0, popen-gw1, ...). A run is named by its
    test's folder, or where the netrepro fixture made it (one folder a worker) by the test `junit` says made it.
    With `since` (the suite's start), a run that started before it is not the suite's (the account's own tests
    write runs dated in the past)."""
    workers = workers or len(list(basetemp.glob("popen-gw*"))) or 1
    owners = fixture_runs(junit) if junit else {}
    walls: dict[str, list[float]] = {}
    board_s: dict[str, float] = {}
    kept_d: dict[str, list[float]] = {}
    inputs: dict[str, list[tuple[float, str]]] = {}  # runs of the same inputs: what sharing a run would save
    repeats: list[float] = []  # the disturbed-run policy's repeats (harness.runs.disturbed): their wall times
    for result, data, wall in board_runs(basetemp, since):
        platform = data["platform"]
        if result.parent.name.endswith(REPEAT_SUFFIX):
            repeats.append(wall)
        walls.setdefault(platform, []).append(wall)
        inputs.setdefault(_inputs(data), []).append((wall, _test_of(result, basetemp, owners)))
        board_s[platform] = board_s.get(platform, 0.0) + _board_seconds(data.get("seconds"))
        effective = (data.get("time") or {}).get("effective_dilation")
        if effective:
            kept_d.setdefault(platform, []).append(effective)
    if not walls:
        return "- board runs: none found under the basetemp\n"
    sets = sorted((runs for runs in inputs.values() if len(runs) > 1), key=lambda runs: -sum(w for w, _ in runs))
    beyond = [sorted((w for w, _ in runs), reverse=True)[1:] for runs in sets]  # the longest kept: no more claimed
    same = (f"- runs with the inputs of another run (platform, profile, options, apps, link, workload): "
            f"{sum(map(len, beyond))} in {len(sets)} sets, {sum(map(sum, beyond)) / 60:.1f} min of wall time beyond "
            f"one run a set; the largest sets' tests:\n")
    same += "".join(f"  - {len(runs)} runs: {', '.join(sorted({t for _, t in runs}))}\n" for runs in sets[:10])
    total = sum(sum(w) for w in walls.values())
    lines = [f"- board runs: {sum(len(w) for w in walls.values())}, {total / 60:.1f} min of wall time together: "
             f"on {workers} workers, the board runs alone (boot to result) take "
             f"{total / workers / 60:.1f} min of the suite"]
    for platform, wall in sorted(walls.items(), key=lambda kv: -sum(kv[1])):
        d = f", D kept (median) {statistics.median(kept_d[platform]):.2f}" if kept_d.get(platform) else ""
        lines.append(f"  - {platform}: {len(wall)} runs, {sum(wall) / 60:.1f} min, {board_s[platform]:.0f} board s "
                     f"measured{d}")
    lines.append(f"- repeats of runs the host disturbed (each at twice D): {len(repeats)}, "
                 f"{sum(repeats) / 60:.1f} min of wall time")
    return "\n".join(lines) + "\n" + same


def board_runs(basetemp: Path, since: float | None = None) -> Iterator[tuple[Path, dict, float]]:
    """Every board's run under `basetemp` (its result.json, what it holds, its wall time); with `since` (the suite's
    start), not those that started before it (the account's own tests write runs dated in the past)."""
    for result in basetemp.rglob("result.json"):
        try:
            data = json.loads(result.read_text())
        except (OSError, ValueError):
            continue
        platform, wall = data.get("platform"), _run_wall_s(result, data)
        console = data.get("console_log")
        if not isinstance(platform, str) or not data.get("lwip_version") or wall is None or not 0 <= wall < LIMIT_S \
                or not (isinstance(console, str) and Path(console).is_file()):
            continue  # a test's hand-made result, not a board's run (a board's names its lwIP and leaves its log)
        if since is not None and (_started(data) or 0.0) < since - 1:  # `started` is to the second
            continue
        yield result, data, wall


def outside_account(basetemp: Path, junit: Path, since: float | None = None, shown: int = 15) -> str:
    """The tests' time outside their board runs (pytest's time for a test, less its runs' wall time), the most
    first: what the suite spends besides boards (installs, Ray, builds, analyses, commands). A test is known by
    its temporary folder's name (pytest's: the name's first 30 characters, made safe) or, for the netrepro
    fixture's runs, by the name the JUnit XML gives; tests sharing a folder name are counted together. Runs made
    outside pytest's basetemp (the doc examples' own folders, the rootless test's user's home) are not found, so
    their tests' whole time counts as outside."""
    if not junit.is_file():
        return "- time outside board runs: no JUnit XML\n"
    owners = fixture_runs(junit)
    test_s: dict[str, float] = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        key = _folder_prefix(case.get("name", "?"))
        test_s[key] = test_s.get(key, 0.0) + float(case.get("time") or 0.0)
    runs_s: dict[str, float] = {}
    for result, _data, wall in board_runs(basetemp, since):
        test = _test_of(result, basetemp, owners)
        key = _folder_prefix(test) if test in owners.values() else re.sub(r"\d+$", "", test)
        runs_s[key] = runs_s.get(key, 0.0) + wall
    outside = sorted(((s - runs_s.get(k, 0.0), s, k) for k, s in test_s.items()), reverse=True)[:shown]
    total = sum(test_s.values()) - sum(runs_s.values())
    return (f"- time outside board runs: {total / 60:.1f} of the tests' {sum(test_s.values()) / 60:.1f} "
            f"worker-minutes (runs outside the basetemp not found: their tests' time all counts); the "
            f"{len(outside)} tests (by folder name) with the most (s, outside / in all):\n"
            + "".join(f"  - {name}: {rest:.0f} / {whole:.0f}\n" for rest, whole, name in outside))


def _folder_prefix(test: str) -> str:
    """The start of the temporary folder pytest names after a test: its name made safe, cut to 30 characters."""
    return re.sub(r"\W", "_", test)[:30]


def fixture_runs(junit: Path) -> dict[Path, str]:
    """The run folders each test made through the netrepro fixture, from the JUnit properties it records
    ("PROFILE.run_dir" for a run, "reproduce.run_dir" for a report's runs), the repeats' suffix taken off."""
    if not junit.is_file():
        return {}
    return {_first_run(Path(prop.get("value", ""))): case.get("name", "?")
            for case in ElementTree.parse(junit).iter("testcase") for prop in case.iter("property")
            if prop.get("name", "").endswith(".run_dir")}


def _first_run(folder: Path) -> Path:
    """A repeat's folder (RUN_DIR-slower...) as its run's."""
    name = folder.name
    while name.endswith(REPEAT_SUFFIX):
        name = name[: -len(REPEAT_SUFFIX)]
    return folder.with_name(name)


def _test_of(result: Path, basetemp: Path, owners: dict[Path, str]) -> str:
    """The test that made a run: the fixture's record of a folder the run lies in, else the test's own folder."""
    for folder in result.parents:
        if folder == basetemp:
            break
        if _first_run(folder) in owners:
            return owners[_first_run(folder)]
    parts = result.relative_to(basetemp).parts  # popen-gwN/<test's folder>/...
    return _first_run(Path(parts[1])).name if len(parts) > 2 else "?"  # a test's folder can be its run's


def _inputs(data: dict) -> str:
    """What a run was asked to do, as a key: two runs with the same key differ only by the host's timing."""
    return json.dumps({k: data.get(k) for k in ("platform", "profile", "options", "apps", "link", "workload")},
                      sort_keys=True)


def file_account(junit: Path, shown: int = 12) -> str:
    """pytest's time per test file (its JUnit XML), the costliest first: where the rest of the suite's time went."""
    if not junit.is_file():
        return "- time per test file: no JUnit XML\n"
    per_file: dict[str, float] = {}
    for case in ElementTree.parse(junit).iter("testcase"):
        parts = case.get("classname", "?").split(".")  # tests.test_x or tests.test_x.TestClass
        name = next((part for part in parts if part.startswith("test_")), parts[-1])
        per_file[name] = per_file.get(name, 0.0) + float(case.get("time") or 0.0)
    total = sum(per_file.values())
    costliest = sorted(per_file.items(), key=lambda kv: -kv[1])[:shown]
    listed = ", ".join(f"{name} {seconds:.0f}" for name, seconds in costliest)
    return (f"- time per test file: {total / 60:.1f} min of tests together in {len(per_file)} files; the "
            f"{len(costliest)} costliest (s): {listed}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=0, help="busy loops beside the suite")
    parser.add_argument("--label", default=None, help="the result file's name: test-suite-LABEL.md")
    parser.add_argument("--workers", type=int, default=None,
                        help="the clone's ./test on N pytest workers instead of its own default (a trial of N)")
    parser.add_argument("--keep-junit", type=Path, default=None, metavar="FILE",
                        help="also keep pytest's JUnit XML (every test's time) as FILE")
    args = parser.parse_args()
    label = args.label or ("busy" if args.busy else "quiet")
    commit = head_commit()
    clone = Path(tempfile.mkdtemp(prefix="netrepro-suite-")) / "netrepro"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    trial = f", ./test's workers set to {args.workers}" if args.workers else ""
    if args.workers:
        with_workers(clone / "test", args.workers)
    before, load_before = builds(), os.getloadavg()
    basetemp = Path(tempfile.mkdtemp(prefix="nr-bt-"))  # no longer than pytest's own: unix sockets live below it
    junit = basetemp.parent / f"{basetemp.name}.xml"
    # every run folder kept, the passing tests' too, and every test's time: the accounts
    options = f"--basetemp={basetemp} --netrepro-keep --junitxml={junit}"
    loops = busy_loops(args.busy)
    start, began = time.monotonic(), time.time()
    try:
        done = subprocess.run(["bash", ".ci/run"], cwd=clone, capture_output=True, text=True, timeout=LIMIT_S,
                              env={**os.environ, "CI": "true", "PYTEST_ADDOPTS": options})
        output, code = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        output, code = f"{exc.stdout or ''}{exc.stderr or ''}\n(timed out after {LIMIT_S} s)", -1
    finally:
        wall = time.monotonic() - start
        stop(loops)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"test-suite-{label}.log").write_text(output[-200_000:])  # first: nothing below may lose it
    try:
        if args.keep_junit and junit.exists():
            shutil.copyfile(junit, args.keep_junit)  # before the accounts, like the log
        account = (run_account(basetemp, junit=junit, since=began) + file_account(junit)
                   + outside_account(basetemp, junit, since=began))
    finally:
        shutil.rmtree(clone.parent, ignore_errors=True)
        shutil.rmtree(basetemp, ignore_errors=True)
        junit.unlink(missing_ok=True)
    made = len(builds() - before)
    summary = next((line for line in reversed(output.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "?")
    command = f"--busy {args.busy}" + (f" --workers {args.workers}" if args.workers else "")
    text = (f"# The test suite, {label}\n\n`python benchmarks/suite_bench.py {command}` at {commit} "
            f"({time.strftime('%Y-%m-%d %H:%M %Z')}): a fresh clone, `bash .ci/run`, {args.busy} busy loop(s) "
            f"beside it on {os.cpu_count()} cores{trial}.\n\n"
            f"- exit code {code}, wall {wall / 60:.1f} min ({wall:.0f} s)\n- pytest: `{summary.strip('= ')}`\n"
            f"- firmware builds made: {made} (the rest were in the machine's build cache)\n"
            f"- load average before {[round(x, 2) for x in load_before]}, after "
            f"{[round(x, 2) for x in os.getloadavg()]}\n{account}\n```\n{slowest(output)}\n```\n")
    failures = [line for line in output.splitlines() if line.startswith("FAILED")]
    if failures:
        text += "\nFailures:\n\n```\n" + "\n".join(failures) + "\n```\n"
    (RESULTS / f"test-suite-{label}.md").write_text(text)
    print(text)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
