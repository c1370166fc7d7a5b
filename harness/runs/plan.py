"""One run: build, rig up, run the workload, write the result into the run folder.

Whatever happens, the run folder keeps what there is: console log, capture, link counters and
result.json (with `status` and, on failure, `error`).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from harness.analysis.follow import CaptureFollower
from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import SETTINGS, LinkSpec, capture_side
from harness.link.counters import LinkCounters
from harness.rig.build import Firmware, FirmwareConfig, build_firmware, resolve_firmware
from harness.rig.devicetime import DeviceTime
from harness.rig.leaks import LeakCheck
from harness.rig.platform import Platform
from harness.rig.profile import Profile
from harness.rig.session import Session
from harness.rig.transfer import Transfer
from harness.rig.workload import Workload, run_workload, start_board_services
from harness.runs.analyse import Analyser, MeasuredRun
from harness.runs.disturbed import measure_trusted
from harness.runs.result import RunResult, device_cpu, thread_cpu

LAG_FLOOR_MS = 20.0   # the board's clock may trail wall time / D by this much (one console round trip) ...
LAG_SHARE = 0.01      # ... or by 1 % of the interval, before the host counts as having fallen behind


@dataclass(frozen=True)
class Configuration:
    """A firmware as the command line gives it: --lwip NAME_OR_PATH, -I DIR, --set NAME=VALUE, and for a
    port's own lwipopts.h --source FILE.c and --stub-header NAME."""

    lwip: str | None = None
    include: tuple[str, ...] = ()
    set: tuple[str, ...] = ()
    source: tuple[str, ...] = ()
    stub_header: tuple[str, ...] = ()

    def resolve(self, platform: Platform, tree: str | Path | None) -> FirmwareConfig:
        """The firmware to build for this board from this lwIP tree (None: the default tree)."""
        return resolve_firmware(platform, self.lwip, list(self.include), list(self.set), tree, list(self.source),
                                list(self.stub_header))

    def profile(self, platform: Platform, tree: str | Path | None) -> Profile:
        return self.resolve(platform, tree).profile

    def build(self, platform: Platform, tree: str | Path | None, progress: Progress | None = None) -> Firmware:
        """The firmware (built now, or reused from the cache); a profile that does not compile is a one-line error."""
        return build_firmware(self.resolve(platform, tree), (progress or Progress(quiet=True)).step)


@dataclass(frozen=True)
class RunPlan:
    """One run, prepared: the board, its firmware, the link as the user gave it, the workload.

    Every entry point (`run`, `compare`, `reproduce`, `bisect`, the pytest plugin) makes one and
    calls `execute` for each run folder.
    """

    platform: Platform
    firmware: Firmware
    link: LinkSpec
    workload: Workload
    boot_timeout: float = 60.0
    time: DeviceTime = field(default_factory=lambda: DeviceTime("host"))
    check_alive: bool = False  # a soak: at the end, does the board still answer its console and a ping?
    capture_at: str = "device"  # the side of the link the capture is taken at: "device" or "peer"
    peer_quickack: bool = False  # the peer ACKs every segment (harness.rig.peer_timers)
    follow_capture: bool = True  # analyse the capture as the link writes it, where the plan allows (follows_capture)

    def __post_init__(self) -> None:
        capture_side(self.capture_at)  # a bad side fails before anything is built or booted

    def execute(self, run_dir: Path, progress: Progress | None = None) -> RunResult:
        """Run the workload on a freshly booted board, repeated when the host disturbed it (DisturbedPolicy), and
        analyse the capture of the run that stands; the result is saved even when the run fails."""
        return measure_trusted(self, run_dir, progress).analysed()

    def start(self, run_dir: Path, analyser: Analyser, progress: Progress | None = None) -> Future[RunResult]:
        """execute, its analysis handed to `analyser` (beside the next run when the plan allows)."""
        return analyser.submit(measure_trusted(self, run_dir, progress), self.analysis_may_overlap())

    def analysis_may_overlap(self) -> bool:
        """Whether another run's capture may be analysed while this one runs: only when the link follows
        the board's own clock, so the host's other work slows the board and the link together and no figure
        moves (in host time, or on a board that sends no clock, the analysis would take the host from it)."""
        return self.platform.sends_clock(self.time)

    def follows_capture(self) -> bool:
        """Whether the capture is analysed while the run goes on (harness.analysis.follow), so that its figures
        are ready when the run ends: only where another run's analysis could overlap this one (the same host
        taken from the same board), else after the run as before."""
        return self.follow_capture and self.analysis_may_overlap()

    def measure(self, run_dir: Path, progress: Progress | None = None) -> MeasuredRun:
        """One run of the workload on a freshly booted board, whether or not the host disturbed it (execute and
        start apply the policy for that); the result is saved (unanalysed) even when the run fails."""
        progress = progress or Progress(quiet=True)
        following = self.follows_capture()
        rig = Session(self.platform, self.firmware, run_dir, self.link, progress=progress,
                      boot_timeout=self.boot_timeout, time=self.time, capture_at=self.capture_at,
                      peer_quickack=self.peer_quickack, live_capture=following)
        result = RunResult(platform=self.platform.name, profile=self.firmware.profile.name,
                           lwip_version=self.firmware.lwip_version, link=rig.link_run,
                           workload=self.workload.describe(), run_dir=str(run_dir),
                           capture=str(run_dir / "capture.pcap"), console_log=str(run_dir / "console.log"),
                           device=rig.addresses.device, captured_at=self.capture_at,
                           stand_ins=list(self.firmware.stand_ins),
                           build_warnings=list(self.firmware.warnings), apps=list(self.firmware.apps),
                           lwip_ram=self.firmware.lwip_ram.summary() if self.firmware.lwip_ram else {})
        (run_dir / "link.json").write_text(json.dumps(result.link.as_dict(), indent=2) + "\n")
        transfers: list[Transfer] = []
        follower: CaptureFollower | None = None
        try:
            with rig:
                if following:  # the capture is complete once the session has stopped the link
                    follower = CaptureFollower.start(result.capture, closed=lambda: rig.link is None)
                result.peer_timers = rig.peer_timers
                result.boot_seconds = round(rig.console.boot_seconds or 0.0, 3)
                result.options = rig.console.opts()
                progress.step(f"running {self.workload.name} ({self.workload.kind.amount(self.workload)}) over link "
                              f"{_link_text(result.link)}")
                start_board_services(rig, self.workload)
                leak_check = LeakCheck.start(rig.console, rig.time.wall_s)
                clock = BoardClock.read(rig)
                threads_before = rig.console.threads()
                rig.console.cpu_load(reset=True)
                transfers = run_workload(rig, self.workload)
                workload_wall = (clock.wall_s, time.monotonic())
                result.record(transfers, two_way=self.workload.kind.two_way)
                result.device_cpu = device_cpu(rig.console.cpu_load())
                judged = clock.judge(rig, self.time)
                result.time = judged.as_dict()
                result.device_stats = rig.console.stats()
                if threads_before is not None:
                    after = rig.console.threads()
                    result.threads = {"before": threads_before, "after": after,
                                      "cpu": thread_cpu(threads_before, after)}
                progress.step("leak check: waiting for the connections to close")
                result.leaks = leak_check.finish()
                if self.check_alive:
                    result.alive = rig.alive()
            if rig.link_counters is not None:  # known once the link has stopped
                result.time = _link_judged(judged, rig.link_counters, workload_wall).as_dict()
            result.status = "passed"
        except NetreproError as exc:
            result.status, result.error = "failed", str(exc)
            raise
        except KeyboardInterrupt:
            result.status, result.error = "interrupted", "interrupted by the user"
            raise
        finally:
            if rig.link_counters is not None:
                result.link_counters = asdict(rig.link_counters)
            result.engine_clock = rig.engine_clock
            _warn_if_lagging(result.engine_clock, progress)
            result.save()
            if follower is not None and result.status != "passed":  # no tshark nor thread outlives a failed run
                follower.cancel()
        return MeasuredRun(result, transfers, progress, follower, workload_wall[1])


def _link_judged(judged: DeviceTime, counters: LinkCounters, workload_wall: tuple[float, float]) -> DeviceTime:
    """The run's time with what its link saw judged: how late it handed frames over, and the longest the
    board sent no tick during the workload (`workload_wall`: its time.monotonic() interval)."""
    judged = judged.with_link_lateness(counters.late_ms_max)
    if counters.board_clock is None:
        return judged
    return judged.with_board_stall(counters.board_clock.longest_stall_ms(*workload_wall))


@dataclass(frozen=True)
class BoardClock:
    """The board's uptime and the wall clock at the start of the measured interval."""

    board_ms: int
    wall_s: float

    @classmethod
    def read(cls, rig: Session) -> BoardClock:
        return cls(rig.console.uptime_ms(), time.monotonic())

    def judge(self, rig: Session, planned: DeviceTime) -> DeviceTime:
        """The run's device time with the lag found: the board's clock behind wall time / D at the end.

        A host that could not execute the board at its planned rate leaves the board's clock behind
        (QEMU's -icount align, the simavr host's pacing): its timing, and so every figure, is wrong.
        """
        board_s = (rig.console.uptime_ms() - self.board_ms) / 1000
        wall_s = time.monotonic() - self.wall_s
        expected_s = wall_s / planned.dilation
        lag_ms = max(0.0, (expected_s - board_s) * 1000)
        lagged = planned.device and lag_ms > max(LAG_FLOOR_MS, LAG_SHARE * expected_s * 1000)
        effective = round(wall_s / board_s, 3) if planned.device and board_s > 0 else None
        return replace(planned, host_lagged=lagged, max_lag_ms=round(lag_ms, 1),
                       realtime_priority=rig.realtime_priority(),
                       link_follows_board=rig.platform.sends_clock(planned), effective_dilation=effective)


def _warn_if_lagging(clock: dict[str, float] | None, progress: Progress) -> None:
    """A simulated board whose host fell behind the wall clock saw time in bursts: say so."""
    if clock and (clock["max_lag_ms"] > 20 or clock["late_slices"] > 0.01 * clock["slices"]):
        progress.warn(f"the board host fell behind the wall clock (max lag {clock['max_lag_ms']:g} ms, "
                      f"{clock['late_slices']:.0f} of {clock['slices']:.0f} slices over 1 ms late): "
                      "timing figures of this run are less trustworthy; run with fewer jobs beside it")


def _link_text(spec: LinkSpec) -> str:
    """The link-wide settings a run changed from their defaults (a wire's run does not list the radio's)."""
    default = {s.field: s.check.to_json(s.default) for s in SETTINGS if s.scope == "link"}
    link = spec.as_dict()
    shown = {k: v for k, v in link.items() if not isinstance(v, dict) and (k not in default or v != default[k])}
    return ", ".join(f"{k}={v}" for k, v in shown.items()) or "default"
