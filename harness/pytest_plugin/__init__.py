"""pytest plugin (entry point `pytest11`): the `netrepro` fixture, in the style of pytest-embedded's `dut`.

    def test_window(netrepro):
        result = netrepro.run("openmv-n6", lwip="mp-n6-after", link="wifi", workload="sock-rx", seconds=5)
        capture = netrepro.capture(result)
        capture.expect_largest_device_window(46720)   # TCP_WND: the largest window the device advertised
        assert result.throughput_mbps > 30
        result.expect_no_leaks()   # the board got back what the run's connections took (pools, heap, NIC)

    def test_my_traffic(netrepro):
        with netrepro.board("openmv-n6", "mp-n6-after", link="wifi") as rig, netrepro.leak_check(rig) as leaks:
            ...                    # drive the board yourself (rig.console, the peer namespace)
        leaks.expect_no_leaks()    # checked once the block's connections closed

    @pytest.mark.parametrize("profile", ["mp-n6-before", "mp-n6-after"])
    def test_both(netrepro, profile): ...

Install with `pip install "netrepro[pytest]"` (the extra brings pytest).
Options: --netrepro-lwip-tree DIR (your lwIP), --netrepro-runs DIR (where run folders go),
--netrepro-keep (keep run folders of passing tests too), --netrepro-time device|host (default
device: each core at its modelled speed; `run(..., time="host")` for one run). A failing test keeps its run folders
and names them once in its report; throughput and windows go into the JUnit XML as properties.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.analysis import AnalysisSummary, CaptureAnalysis, load_capture
from harness.link import LinkSpec
from harness.rig.build import Firmware, lwip_tree
from harness.rig.devicetime import DEFAULT_MODE, TIME_MODES, DeviceTime, TimeChoice
from harness.rig.leaks import LeakCheck, LeakReport
from harness.rig.platform import load_platform
from harness.rig.session import Session, make_run_dir
from harness.rig.workload import Workload
from harness.runs.analyse import data_rate
from harness.runs.disturbed import REPEAT_SUFFIX
from harness.runs.plan import Configuration, RunPlan
from harness.runs.result import RunResult, device_busy
from harness.studies.reproduce import reproduce

_RUN_DIRS = pytest.StashKey[list[Path]]()
RUN_FOLDERS_KEPT = "netrepro run folders kept (capture, console log, plots)"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netrepro", "netrepro: emulated boards running lwIP")
    group.addoption("--netrepro-lwip-tree", metavar="DIR", default=None,
                    help="lwIP source tree to build (default: $NETREPRO_LWIP_TREE, else Debian's 2.1.3)")
    group.addoption("--netrepro-runs", metavar="DIR", default=None,
                    help="where run folders go (default: pytest's temporary directory)")
    group.addoption("--netrepro-keep", action="store_true", default=False,
                    help="keep the run folders of passing tests too")
    group.addoption("--netrepro-time", choices=TIME_MODES, default=DEFAULT_MODE,
                    help=f"device (each core at its modelled speed) or host time (default {DEFAULT_MODE})")


@dataclass
class LeakWatch:
    """What `netrepro.leak_check(rig)` found: its report once the block ended (None inside it)."""

    report: LeakReport | None = None

    def expect_no_leaks(self) -> None:
        if self.report is None:
            raise AssertionError("the leak check has not finished: call expect_no_leaks() after its `with` block")
        self.report.expect_no_leaks()


class Netrepro:
    """Boards, links and workloads for one test; every run folder is recorded for the report."""

    def __init__(self, request: pytest.FixtureRequest, runs_root: Path) -> None:
        self.request = request
        self.runs_root = runs_root
        self.tree = lwip_tree(request.config.getoption("--netrepro-lwip-tree"))
        self.run_dirs: list[Path] = request.node.stash.setdefault(_RUN_DIRS, [])
        self.time_mode: str = request.config.getoption("--netrepro-time")

    def time(self, platform: str, mode: str | None = None) -> DeviceTime:
        """How a run of the platform relates to the wall clock (`mode`: device or host; default the option's)."""
        return load_platform(platform).time(TimeChoice(mode or self.time_mode))

    def firmware(self, platform: str, lwip: str | None = None, include: list[str] | None = None,
                 options: dict[str, Any] | None = None) -> Firmware:
        """Build (or reuse) a board's firmware: a profile name or a lwipopts.h path, plus overrides."""
        overrides = tuple(f"{k}={v}" for k, v in (options or {}).items())
        return Configuration(lwip, tuple(include or ()), overrides).build(load_platform(platform), self.tree)

    def link(self, platform: str, link: str | None = None, **overrides: Any) -> LinkSpec:
        """A link from the platform's preset (None: unshaped) with netem-style overrides (rtt="5.5ms", ...)."""
        preset = load_platform(platform).link_preset(link) if link else {}
        return LinkSpec.from_preset(preset).override(**overrides)

    def run(self, platform: str, lwip: str | None = None, *, link: str | None = None, workload: str = "rx",
            seconds: float = 10.0, bytes: int | None = None, chunk: int = 1460, warmup: float = 0.0,
            include: list[str] | None = None, options: dict[str, Any] | None = None, time: str | None = None,
            **link_overrides: Any) -> RunResult:
        """Build, boot, run one workload over the link and analyse the capture (seconds: of the board's time)."""
        plan = RunPlan(load_platform(platform), self.firmware(platform, lwip, include, options),
                       self.link(platform, link, **link_overrides), Workload(workload, seconds, bytes, chunk, warmup),
                       time=self.time(platform, time))
        result = plan.execute(self._run_dir(plan.platform.name, plan.firmware.profile.name))
        self._record(result)
        return result

    @contextlib.contextmanager
    def board(self, platform: str, lwip: str | None = None, *, link: str | None = None,
              include: list[str] | None = None, options: dict[str, Any] | None = None, time: str | None = None,
              **link_overrides: Any) -> Iterator[Session]:
        """A booted board behind its link, for tests that drive the console themselves (`.console`)."""
        board = load_platform(platform)
        firmware = self.firmware(platform, lwip, include, options)
        run_dir = self._run_dir(board.name, firmware.profile.name)
        with Session(board, firmware, run_dir, self.link(platform, link, **link_overrides),
                     time=self.time(platform, time)) as rig:
            yield rig

    @contextlib.contextmanager
    def leak_check(self, rig: Session) -> Iterator[LeakWatch]:
        """The leak check a run makes, around traffic a test drives itself on a `board()` session: the
        board's heap, pools and NIC buffers read at the start of the block, accounted at its end once
        the connections have closed (TIME_WAIT reaped as in a run). Not accounted if the block raises."""
        watch = LeakWatch()
        check = LeakCheck.start(rig.console, rig.time.wall_s)
        yield watch
        watch.report = check.finish()

    def capture(self, result: RunResult) -> CaptureAnalysis:
        """The run's capture, analysed, with the expect_* assertion helpers."""
        rate, stage = data_rate(result)
        return load_capture(result.capture, device_ip=result.device, captured_at=result.captured_at,
                            link_rate_bps=rate, device_busy=device_busy(result), link_stage=stage)

    def reproduce(self, report: str, cases: list[str] | None = None, repeats: int | None = None,
                  seconds: float | None = None, time: str | None = None, d_check: bool = False
                  ) -> dict[str, dict[str, Any]]:
        """Cases of a report (a shipped report's name, or the path of any report file), by case name; `d_check`:
        each case once more at twice D (reproduce --d-check)."""
        document = reproduce(report, out=self.runs_root, repeats=repeats, seconds=seconds, only=cases,
                             lwip_tree_path=str(self.tree), time=TimeChoice(time or self.time_mode), d_check=d_check)
        self.run_dirs.append(Path(document["run_dir"]))
        self.request.node.user_properties.append(("reproduce.run_dir", document["run_dir"]))
        for case in document["cases"]:
            for key in ("median_mbps", "device_window_max", "verdict"):
                self.request.node.user_properties.append((f"{case['case']}.{key}", case[key]))
        return {case["case"]: case for case in document["cases"]}

    def _run_dir(self, platform: str, profile: str) -> Path:
        run_dir = make_run_dir(self.runs_root, platform, profile)
        self.run_dirs.append(run_dir)
        return run_dir

    def _record(self, result: RunResult) -> None:
        analysis = result.analysis or AnalysisSummary()
        for key, value in (("throughput_mbps", result.throughput_mbps),
                           ("device_window", analysis.device_window.median),
                           ("device_window_max", analysis.device_window.max), ("device_mss", analysis.device_mss),
                           ("verdict", analysis.verdict), ("run_dir", result.run_dir),
                           ("leaks", _leak_property(result))):
            self.request.node.user_properties.append((f"{result.profile}.{key}", value))


def _leak_property(result: RunResult) -> str:
    """The JUnit property of a run's leak check: "none", its leaks ("PBUF_POOL 3 elements, ..."), or why not."""
    return result.leaks.short() if result.leaks else "not checked"


@pytest.fixture(scope="session")
def netrepro_runs_root(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    chosen = request.config.getoption("--netrepro-runs")
    return Path(chosen).resolve() if chosen else tmp_path_factory.mktemp("netrepro-runs")


@pytest.fixture
def netrepro(request: pytest.FixtureRequest, netrepro_runs_root: Path) -> Netrepro:
    """Build, boot, link and run emulated boards; run folders are kept when the test fails."""
    return Netrepro(request, netrepro_runs_root)


def _with_repeats(run_dir: Path) -> list[Path]:
    """A run's folder and those of its repeats at a slower D (harness.runs.disturbed)."""
    return [run_dir, *sorted(run_dir.parent.glob(f"{run_dir.name}{REPEAT_SUFFIX}*"))]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    run_dirs = [d for planned in item.stash.get(_RUN_DIRS, []) for d in _with_repeats(planned)]
    if report.when != "call" or not run_dirs:
        return
    if report.failed:
        # Named once: in the failure itself (also the JUnit XML's failure text) when it has
        # sections, else as a report section of its own.
        title, listing = RUN_FOLDERS_KEPT, "\n".join(f"  {d}" for d in run_dirs)
        if hasattr(report.longrepr, "addsection"):
            report.longrepr.addsection(title, listing)
        else:
            report.sections.append((title, listing))
    elif not item.config.getoption("--netrepro-keep"):
        for run_dir in run_dirs:
            shutil.rmtree(run_dir, ignore_errors=True)
