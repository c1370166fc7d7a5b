"""Shared fixtures: the lwIP tree, the platform, and a check that runs leave nothing behind."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.analysis.plots import PLOTS_ENV
from harness.cli.exit_codes import ExitCode
from harness.core.machine import CPUS_ENV
from harness.rig.build import lwip_tree
from harness.rig.platform import load_platform
from harness.rig.session import SOCKET_DIR_PREFIX, SOCKET_ROOT

_LEFTOVER_MARKS = ("qemu-system", "netrepro-link", "netrepro-ethernut", "sleep infinity", "iperf")
_PR_SET_CHILD_SUBREAPER = 36

# The suite's device-time runs use the platforms' own host rates, never a calibration this host
# keeps for its user (tests that calibrate write here).
_TMP = Path(os.environ.get("TMPDIR", "/tmp"))
os.environ["NETREPRO_CALIBRATION"] = str(_TMP / f"netrepro-test-calibration-{os.getpid()}")
# pytest-xdist's workers share the machine, each running boards of its own: each plans runs side by side
# (--jobs' default) on its share of the cores, as a user sharing a machine would say with NETREPRO_CPUS
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
os.environ.setdefault(CPUS_ENV, str(max(1, (os.cpu_count() or 1) // _WORKERS)))
# A run's plots cost about 2 CPU-s, and only the tests that read them ask for them ($NETREPRO_PLOTS=on):
# drawn for every one of the suite's ~125 board runs, they took some 4 of its CPU-minutes on two cores
os.environ[PLOTS_ENV] = "off"
# the files a run's plots are, as a test expects them: three plots, each as PNG and SVG
RUN_PLOT_FILES = sorted(f"{name}.{ext}" for name in ("timeseq", "goodput", "window") for ext in ("png", "svg"))

# Orphans of the processes tests start (e.g. a CLI run interrupted) are re-parented to this
# process instead of init, so a leak still shows up among its descendants.
ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _process_table() -> dict[int, tuple[int, str]]:
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        table[int(entry.name)] = (ppid, cmdline)
    return table


def _descendants(table: dict[int, tuple[int, str]]) -> set[int]:
    ours, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, (ppid, _) in table.items() if ppid in frontier} - ours
        ours |= frontier
    return ours


def descendants() -> set[int]:
    """This test process's descendants, the orphans it adopted (a subreaper) included."""
    return _descendants(_process_table())


def leftover_processes(marks: tuple[str, ...] = _LEFTOVER_MARKS) -> set[tuple[int, str]]:
    """This test process's descendants whose command line holds one of `marks`: by default the kinds a run
    starts (QEMU, link, namespace, iperf)."""
    table = _process_table()
    return {(pid, table[pid][1]) for pid in _descendants(table) if any(mark in table[pid][1] for mark in marks)}


def stop_descendants(before: set[int], grace_s: float = 10.0) -> None:
    """Stop and reap what this process started since `before` (descendants() then), e.g. the daemons a
    `ray start` left, adopted here: a narrower end than `ray stop`, which ends every Ray of the user."""
    started = descendants() - before
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while (started := started & _alive()) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not started:
            return


def _alive() -> set[int]:
    """The live ones of this process's descendants; each that has ended and is a child here is reaped."""
    alive = set()
    table = _process_table()
    for pid in _descendants(table):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
        elif table[pid][0] == os.getpid():
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
    return alive


def children_named(name: str) -> set[int]:
    """This process's children (every thread's; zombies included) whose command name is `name`."""
    pids = []
    for children in Path("/proc/self/task").glob("*/children"):
        # a thread that ended since the listing has no file to read, and no children left to count
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            pids += [int(pid) for pid in children.read_text().split()]
    found = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() == name:
                found.add(pid)
    return found


def socket_dirs(owner: int | None = None) -> set[Path]:
    """The short-lived socket folders runs create (/tmp/nr-PID-*): every one, or those of the process `owner`
    (other tests may run beside this one)."""
    return set(SOCKET_ROOT.glob(f"{SOCKET_DIR_PREFIX}{owner}-*" if owner else f"{SOCKET_DIR_PREFIX}*"))


# what netrepro's wheel is built from (pyproject.toml's package and its data)
PACKAGE_SOURCES = ("pyproject.toml", "harness", "platforms", "reports", "firmware")


def copy_checkout(to: Path, *paths: str) -> None:
    """The working tree as git lists it (tracked and untracked, not ignored; only `paths` if given): what a clone of
    it would hold, symlinks (harness/files/*) kept as links. Tests install from such a copy, so that pip's build
    leaves no build/ or egg-info in the checkout (nor races another worker's install there)."""
    root = Path(__file__).resolve().parent.parent
    names = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard", *paths], cwd=root,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        source = root / name
        if source.is_symlink() or source.is_file():  # not deleted in the working tree
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name, follow_symlinks=False)


def netrepro_cli(*args: str, timeout: float = 120, env: dict[str, str] | None = None
                 ) -> subprocess.CompletedProcess[str]:
    """`netrepro ARGS` as a user runs it (quiet progress, as in CI), its exit code and output."""
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env=env or {**os.environ, "CI": "true"}, check=False)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *words: str) -> str:
    """netrepro could not do it, as bad input must fail: exit 3 (ExitCode.COULD_NOT), one `netrepro: error:`
    line naming each of WORDS."""
    assert proc.returncode == ExitCode.COULD_NOT, proc.stdout + proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("netrepro: error: "), proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr
    return proc.stderr


def interrupt_run(args: list[str], started: str, settle_s: float, to_group: bool) -> Interrupted:
    """Run `netrepro ARGS`, send SIGINT once its progress shows `started` (after settle_s more),
    to netrepro alone or, as a terminal's Ctrl-C does, to its whole process group; its exit code and
    what it printed. Its output is read to the end, so a full pipe can never hold it up."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", *args], stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "CI": ""},
                            start_new_session=to_group)
    seen = []
    try:
        deadline = time.monotonic() + 120
        for line in proc.stderr:
            seen.append(line)
            if started in line or time.monotonic() > deadline:
                break
        time.sleep(settle_s)
        sent = time.monotonic()
        if to_group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"netrepro still running 30 s after SIGINT; it printed: {''.join(seen)[-800:]}")
        return Interrupted(proc.returncode, out, "".join(seen) + err, round(time.monotonic() - sent, 1), proc.pid)
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL) if to_group else proc.kill()
            proc.wait()


@dataclass
class Interrupted:
    """What an interrupted netrepro did: exit code, stdout, stderr (progress included), seconds it took to stop."""

    code: int
    out: str
    err: str
    stop_s: float
    pid: int  # netrepro's own

    def __str__(self) -> str:
        return f"exit {self.code} {self.stop_s} s after SIGINT; stderr ends: {self.err[-600:]}"


@pytest.fixture(scope="session")
def tree() -> Path:
    return lwip_tree()


@pytest.fixture(scope="session")
def n6():
    return load_platform("openmv-n6")


@pytest.fixture
def root():
    """A short directory (unix socket paths are limited to 107 bytes), for the link's tests (tests/linkbench.py)."""
    path = Path(tempfile.mkdtemp(prefix="nrl-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def no_leftovers():
    """Fails the test if it leaves a QEMU, link, namespace holder or iperf process behind."""
    before = leftover_processes()
    yield
    left = {p for p in leftover_processes() - before if p[0] != os.getpid()}
    assert not left, f"processes left behind: {sorted(left)}"


# The longest modules start first, so no worker is left with one of them at the end.
_LONGEST_FIRST = ("test_reports", "test_xbox", "test_fuzz", "test_sweep", "test_tune", "test_readme_examples")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.module.__name__.rsplit(".", 1)[-1] not in _LONGEST_FIRST)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Parallel workers (`./test` runs two): the tests of a module with a module fixture stay on one worker;
    every other test goes wherever a worker is free (a local Ray instance is each run's own, and the cluster
    test stops only the daemons it started)."""
    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None  # a distribution the caller chose
    from xdist.scheduler import LoadScopeScheduling

    class Groups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if _shares_a_module_fixture(config.rootpath / path) else nodeid

    return Groups(config, log)


@functools.cache
def _shares_a_module_fixture(module: Path) -> bool:
    return 'scope="module"' in module.read_text()
