"""A whole run: build, rig up, run the workload, write the result into the run folder.

Whatever happens, the run folder keeps what there is: console log, capture, link counters and
result.json (with `status` and, on failure, `error`).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.analysis import AnalysisSummary, CaptureAnalysis, load_capture
from harness.analysis.plots import plot_capture
from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import SETTINGS, LinkSpec, capture_side
from harness.link.air import tcp_capacity_bps
from harness.link.counters import LinkCounters
from harness.rig.build import Firmware, build_firmware
from harness.rig.devicetime import BOARD_STALL_MS, LINK_LATE_MS, DeviceTime
from harness.rig.leaks import LeakCheck, LeakReport
from harness.rig.platform import Platform
from harness.rig.profile import Profile, resolve_profile
from harness.rig.session import Session
from harness.rig.workload import (
    DEVICE_SENDS,
    DISCARD_BYTES,
    TWO_WAY,
    Transfer,
    Workload,
    run_workload,
    start_board_services,
)

LAG_FLOOR_MS = 20.0   # the board's clock may trail wall time / D by this much (one console round trip) ...
LAG_SHARE = 0.01      # ... or by 1 % of the interval, before the host counts as having fallen behind


@dataclass
class RunResult:
    """What one run measured; `result.json` in the run folder is this, as JSON."""

    platform: str
    profile: str
    lwip_version: str
    link: dict[str, Any]
    workload: dict[str, Any]
    run_dir: str
    capture: str
    console_log: str
    device: str                     # the board's address in the run's subnet
    status: str = "running"
    error: str | None = None
    options: dict[str, int] = field(default_factory=dict)
    stand_ins: list[str] = field(default_factory=list)       # what netrepro stood in for the port's own hooks
    build_warnings: list[str] = field(default_factory=list)  # e.g. options this lwIP does not know
    apps: list[str] = field(default_factory=list)            # the apps the firmware was built with
    lwip_ram: dict[str, Any] = field(default_factory=dict)   # lwIP's static RAM: total, heap, pools, other (bytes)
    throughput_mbps: float | dict[str, float] | None = None
    per_second_mbps: list[float] | dict[str, list[float]] = field(default_factory=list)
    bytes: int | dict[str, int] | None = None
    seconds: float | dict[str, float] | None = None
    datagrams: dict[str, int] | None = None  # udp-*: sent, received, lost, out of order (harness.rig.workload)
    board_counts: dict[str, int] | None = None  # sock-*: the board's own counts (err_mem_waits: lwIP's ERR_MEM
                                                # answered by a 50 ms sleep; sndbuf_waits)
    link_counters: dict[str, Any] = field(default_factory=dict)
    time: dict[str, Any] = field(default_factory=dict)  # device time: dilation, rates, whether the host lagged
    device_cpu: dict[str, float] | None = None  # the board's core over the workload: busy %, busy and total ms
    engine_clock: dict[str, float] | None = None  # simavr: how closely simulated time tracked the wall clock
    device_stats: dict[str, int] = field(default_factory=dict)
    # NO_SYS 0: the kernel's threads and the port's mailbox counters before and after the workload
    # (Console.threads(): {"before": ..., "after": ...}); None for a NO_SYS 1 firmware.
    threads: dict[str, Any] | None = None
    leaks: LeakReport | None = None  # what the workload's connections did not give back (harness.rig.leaks)
    alive: dict[str, bool] | None = None  # a soak's end: the board answered its console, a ping (None: not asked)
    boot_seconds: float | None = None
    analysis: AnalysisSummary | None = None       # the capture's analysis, once the run finished
    plots: list[str] = field(default_factory=list)
    captured_at: str = "device"  # the side of the link `capture` was taken at (a result.json without it: device)
    # a repeat at twice D (measure_trusted): the run the host disturbed, which this one replaces (run_dir, figure,
    # dilation, why), kept so that a table can say so; None for a run that replaced nothing
    replaced: dict[str, Any] | None = None
    # the peer's TCP timers in the board's time: which were scaled by D, how, and what the board saw of the
    # others (harness.rig.peer_timers)
    peer_timers: dict[str, Any] | None = None
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))

    def record(self, transfers: list[Transfer], two_way: bool = False) -> None:
        """Throughput, bytes and seconds: plain numbers for one direction, {rx, tx} for a two-way
        workload (even when iperf reported only one of them: the other is then missing)."""
        if len(transfers) == 1 and not two_way:
            t = transfers[0]
            self.throughput_mbps, self.per_second_mbps = round(t.mbps, 3), [round(x, 3) for x in t.per_second_mbps]
            self.bytes, self.seconds = t.bytes, round(t.seconds, 3)
            self.datagrams = t.datagrams or None
            self.board_counts = t.board_counts or None
            return
        self.throughput_mbps = {t.direction: round(t.mbps, 3) for t in transfers}
        self.per_second_mbps = {t.direction: [round(x, 3) for x in t.per_second_mbps] for t in transfers}
        self.bytes = {t.direction: t.bytes for t in transfers}
        self.seconds = {t.direction: round(t.seconds, 3) for t in transfers}

    def expect_no_leaks(self) -> None:
        """pytest: fail, naming each pool and count, when the board did not get back what the run took."""
        if self.leaks is None:
            raise AssertionError(f"run {self.run_dir} did not get to its leak check ({self.status})")
        self.leaks.expect_no_leaks()

    def as_dict(self) -> dict[str, Any]:
        """result.json's object: the analysis in its own JSON form ({} before there is one)."""
        data = asdict(replace(self, analysis=None))
        data["analysis"] = self.analysis.as_dict() if self.analysis else {}
        return data

    def save(self) -> Path:
        path = Path(self.run_dir) / "result.json"
        path.write_text(json.dumps(self.as_dict(), indent=2) + "\n")
        return path


@dataclass(frozen=True)
class Configuration:
    """A firmware as the command line gives it: --lwip NAME_OR_PATH, -I DIR, --set NAME=VALUE, and for a
    port's own lwipopts.h --source FILE.c and --stub-header NAME."""

    lwip: str | None = None
    include: tuple[str, ...] = ()
    set: tuple[str, ...] = ()
    source: tuple[str, ...] = ()
    stub_header: tuple[str, ...] = ()

    def profile(self, platform: Platform, tree: Path) -> Profile:
        return resolve_profile(platform, self.lwip, list(self.include), list(self.set), tree, list(self.source),
                               list(self.stub_header))

    def build(self, platform: Platform, tree: Path, progress: Progress | None = None) -> Firmware:
        """The firmware (built now, or reused from the cache); a profile that does not compile is a one-line error."""
        return build_firmware(platform, self.profile(platform, tree), tree, (progress or Progress(quiet=True)).step)


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

    def __post_init__(self) -> None:
        capture_side(self.capture_at)  # a bad side fails before anything is built or booted

    def execute(self, run_dir: Path, progress: Progress | None = None) -> RunResult:
        """Run the workload on a freshly booted board and analyse its capture; the result is saved even when
        the run fails."""
        return self.measure(run_dir, progress).analysed()

    def analysis_may_overlap(self) -> bool:
        """Whether another run's capture may be analysed while this one runs: only when the link follows
        the board's own clock, so the host's other work slows the board and the link together and no figure
        moves (in host time, or on a board that sends no clock, the analysis would take the host from it)."""
        return self.platform.sends_clock(self.time)

    def measure(self, run_dir: Path, progress: Progress | None = None) -> MeasuredRun:
        """Run the workload on a freshly booted board; the result is saved (unanalysed) even when the run fails."""
        progress = progress or Progress(quiet=True)
        rig = Session(self.platform, self.firmware, run_dir, self.link, progress=progress,
                      boot_timeout=self.boot_timeout, time=self.time, capture_at=self.capture_at,
                      peer_quickack=self.peer_quickack)
        result = RunResult(platform=self.platform.name, profile=self.firmware.profile.name,
                           lwip_version=self.firmware.lwip_version, link=rig.link_run.as_dict(),
                           workload=self.workload.describe(), run_dir=str(run_dir),
                           capture=str(run_dir / "capture.pcap"), console_log=str(run_dir / "console.log"),
                           device=rig.addresses.device, captured_at=self.capture_at,
                           stand_ins=list(self.firmware.stand_ins),
                           build_warnings=list(self.firmware.warnings), apps=list(self.firmware.apps),
                           lwip_ram=self.firmware.lwip_ram.summary() if self.firmware.lwip_ram else {})
        (run_dir / "link.json").write_text(json.dumps(result.link, indent=2) + "\n")
        transfers: list[Transfer] = []
        try:
            with rig:
                result.peer_timers = rig.peer_timers
                result.boot_seconds = round(rig.console.boot_seconds or 0.0, 3)
                result.options = rig.console.opts()
                progress.step(f"running {self.workload.name} ({_amount(self.workload)}) over link "
                              f"{_link_text(result.link)}")
                start_board_services(rig, self.workload)
                leak_check = LeakCheck.start(rig.console, rig.time.wall_s)
                clock = BoardClock.read(rig)
                threads_before = rig.console.threads()
                rig.console.cpu_load(reset=True)
                transfers = run_workload(rig, self.workload)
                workload_wall = (clock.wall_s, time.monotonic())
                result.record(transfers, two_way=self.workload.name in TWO_WAY)
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
        return MeasuredRun(result, transfers, progress)


def _link_judged(judged: DeviceTime, counters: LinkCounters, workload_wall: tuple[float, float]) -> DeviceTime:
    """The run's time with what its link saw judged: how late it handed frames over, and the longest the
    board sent no tick during the workload (`workload_wall`: its time.monotonic() interval)."""
    judged = judged.with_link_lateness(counters.late_ms_max)
    if counters.board_clock is None:
        return judged
    return judged.with_board_stall(counters.board_clock.longest_stall_ms(*workload_wall))


@dataclass
class MeasuredRun:
    """A run whose workload finished and whose result is saved, its capture not yet analysed."""

    result: RunResult
    transfers: list[Transfer]
    progress: Progress

    def analysed(self) -> RunResult:
        """The capture's analysis (and plots) added, the peer's figures retimed by it, the result saved again."""
        self.progress.step(f"analysing the capture of {Path(self.result.run_dir).name}")
        analysis = analyse_run(self.result)
        retime_peer_figures(self.result, self.transfers, analysis)
        self.result.save()
        return self.result


class Analyser:
    """Where finished runs are analysed: in one worker thread while the next run goes on when the plan allows
    (RunPlan.analysis_may_overlap), else at once. tshark and the plots take ~9 s of a 4 s ethernet run at
    95 Mbit/s, a fifth of a reproduction's wall time. Use it as a context manager: leaving it waits for
    the analysis under way and drops the ones not started (after an interrupt or an error)."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="netrepro-analysis")

    def submit(self, measured: MeasuredRun, overlap: bool) -> Future[RunResult]:
        if overlap:
            return self._pool.submit(measured.analysed)
        done: Future[RunResult] = Future()
        try:
            done.set_result(measured.analysed())
        except NetreproError as exc:
            done.set_exception(exc)
        return done

    def __enter__(self) -> Analyser:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=kind is not None)


@dataclass
class Repeats:
    """One configuration's runs, shared by the cases that run it (the two directions of one iperf -r)
    or by one side of a comparison."""

    runs: list[RunResult]     # the runs that finished
    run_dirs: list[str]       # every run's folder, finished or not
    error: str | None = None  # the first failure's message
    pending: list[Future[RunResult]] = field(default_factory=list)  # runs whose capture is being analysed

    def settled(self) -> Repeats:
        """These runs once every analysis under way has finished (one that failed counts as a failed run)."""
        for future in self.pending:
            try:
                self.runs.append(future.result())
            except NetreproError as exc:
                self.error = self.error or str(exc)
        self.pending.clear()
        return self


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


def _cost_per_segment(result: RunResult) -> None:
    """The board's busy time per full data segment carried (its own measure, in its time): what one
    segment costs this stack and driver on this core."""
    a, cpu = result.analysis, result.device_cpu
    if not cpu or a is None or not a.payload_bytes or not a.device_mss:
        return
    segments = a.payload_bytes / a.device_mss
    cpu["us_per_segment"] = round(cpu["busy_ms"] * 1000 / segments, 2)


def device_busy(result: RunResult) -> float | None:
    """The board's core's busy share (0-1) over the workload, by its own measure (None: not measured)."""
    busy = result.device_cpu.get("busy_percent") if result.device_cpu else None
    return busy / 100 if busy is not None else None


def device_cpu(load: dict[str, int]) -> dict[str, float]:
    """The board's own measure of its core over the workload (its time, not the host's)."""
    busy_us = load["total_us"] - load["idle_us"]
    return {"busy_percent": round(load["busy_ppm"] / 1e4, 2), "busy_ms": round(busy_us / 1e3, 3),
            "total_ms": round(load["total_us"] / 1e3, 3)}


def thread_cpu(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Each thread's share of the board's time over the workload, busiest first, by the kernel's own
    counters (firmware/apps/threads.c): run time and switches between the two `threads` readings. The
    threads' run times together are the whole interval (an interrupt counts to the thread it
    interrupted), so their sum, not a host clock, is the denominator."""
    earlier = {t["name"]: t for t in before["threads"]}
    rows = []
    for t in after["threads"]:
        was = earlier.get(t["name"], {})
        rows.append({"name": t["name"], "run_ms": (t["run_us"] - was.get("run_us", 0)) / 1e3,
                     "switches": t["switches"] - was.get("switches", 0)})
    total_ms = sum(r["run_ms"] for r in rows)
    for r in rows:
        r["percent"] = round(100 * r["run_ms"] / total_ms, 2) if total_ms > 0 else 0.0
        r["run_ms"] = round(r["run_ms"], 3)
    rows.sort(key=lambda r: r["run_ms"], reverse=True)
    idle = next((r["percent"] for r in rows if r["name"] == "idle"), None)
    totals = {k: after["totals"].get(k, 0) - before["totals"].get(k, 0)
              for k in ("switches", "mbox_full", "mbox_full_tcpip", "mbox_fail")}
    return {"total_ms": round(total_ms, 3), "idle_percent": idle, **totals, "threads": rows}


def busiest_threads(cpu: dict[str, Any]) -> list[dict[str, Any]]:
    """The threads that ran over the workload, longest first, the idle thread aside."""
    return [r for r in cpu["threads"] if r["name"] != "idle" and r["run_ms"] > 0]


def threads_text(cpu: dict[str, Any], top: int = 3) -> str:
    """The busiest threads over the workload with their switches in, the idle share, and what the kernel
    and the port counted: which thread the board's time went to, and whether lwIP's mailboxes overflowed."""
    shares = ", ".join(f"{r['name']} {r['percent']:g} % ({r['switches']} switches in)"
                       for r in busiest_threads(cpu)[:top]) or "no thread ran"
    idle = f"; idle {cpu['idle_percent']:g} %" if cpu.get("idle_percent") is not None else ""
    full = f"; {cpu['mbox_full']} posts met a full mailbox" if cpu.get("mbox_full") else ""
    return f"{shares}{idle}; {cpu['switches']} context switches{full}"


def execute_trusted(plan: RunPlan, run_dir: Path, progress: Progress | None = None) -> RunResult:
    """Execute the plan; a device-time run whose host fell behind is repeated once at twice the dilation
    (in RUN_DIR-slower), and the repeat's result stands, still marked if that host lagged too."""
    return measure_trusted(plan, run_dir, progress).analysed()


def start_trusted(plan: RunPlan, run_dir: Path, analyser: Analyser,
                  progress: Progress | None = None) -> Future[RunResult]:
    """execute_trusted, its analysis handed to `analyser` (beside the next run when the plan allows)."""
    return analyser.submit(measure_trusted(plan, run_dir, progress), plan.analysis_may_overlap())


def measure_trusted(plan: RunPlan, run_dir: Path, progress: Progress | None = None) -> MeasuredRun:
    """execute_trusted's runs, the one that stands not yet analysed; a repeat records the run it replaced
    (RunResult.replaced), which reproduce's table lists."""
    measured = plan.measure(run_dir, progress)
    time = measured.result.time
    if not figures_at_risk(time):
        return measured
    slower = plan.time.slower()
    (progress or Progress(quiet=True)).warn(f"{risk_text(time)} at D = {plan.time.dilation:g}; "
                                            f"repeating at D = {slower.dilation:g}")
    disturbed = measured.analysed()  # the lagged run's folder keeps its analysis too
    retry_dir = run_dir.with_name(run_dir.name + "-slower")
    retry_dir.mkdir()
    repeat = replace(plan, time=slower).measure(retry_dir, progress)
    # the repeat stands in for the disturbed run: say so in its result, so that no table replaces it silently
    repeat.result.replaced = {"run_dir": disturbed.run_dir, "figure": disturbed.throughput_mbps,
                              "dilation": plan.time.dilation, "why": risk_text(time)}
    repeat.result.save()
    return repeat


def figures_at_risk(time: dict[str, Any]) -> bool:
    """DeviceTime.figures_at_risk of a result's `time` object (empty: the run never got that far)."""
    return bool(time) and DeviceTime.from_dict(time).figures_at_risk


def risk_text(time: dict[str, Any]) -> str:
    """What put a run's figures at risk (figures_at_risk), in the user's words."""
    if time.get("link_late"):
        return (f"the host stalled the link: a frame reached the other side {time['link_late_ms']:g} ms of the "
                f"board's time late (more than {LINK_LATE_MS:g} ms)")
    if time.get("board_stalled"):
        return (f"the host held the board {time['board_stall_ms']:g} ms of wall time during its workload (longer "
                f"than the peer's shortest retransmission timeout, {BOARD_STALL_MS:g} ms)")
    return f"the host fell behind the board by {time['max_lag_ms']:g} ms"


def retime_peer_figures(result: RunResult, transfers: list[Transfer], analysis: CaptureAnalysis) -> None:
    """Device time: the figures the peer timed on the wall clock, over the seconds their connections' data
    took in the capture (the board's time), in place of the D estimated from clock samples."""
    retimed = [t.retimed(analysis.connections, result.device) for t in transfers]
    if retimed != transfers:
        result.record(retimed, two_way=result.workload["name"] in TWO_WAY)
    if result.time:
        result.time["peer_figures_timed_by"] = {t.direction: t.timed_by for t in retimed if t.timed_by}


def analyse_run(result: RunResult) -> CaptureAnalysis:
    """Add the capture's analysis and plots to the result of a finished run."""
    rate, stage = data_rate(result)
    analysis = load_capture(result.capture, device_ip=result.device, link_rate_bps=rate,
                            captured_at=result.captured_at, device_busy=device_busy(result), link_stage=stage)
    result.analysis = analysis.to_summary()
    _cost_per_segment(result)
    title = (f"{result.platform} / {result.profile} / {result.workload['name']} / "
             f"rtt {result.link['rtt_s'] * 1e3:g} ms, {_rate_text(data_rate_bps(result))}")
    result.plots = [str(p) for p in plot_capture(analysis, Path(result.run_dir) / "plots", title)]
    return analysis


def _warn_if_lagging(clock: dict[str, float] | None, progress: Progress) -> None:
    """A simulated board whose host fell behind the wall clock saw time in bursts: say so."""
    if clock and (clock["max_lag_ms"] > 20 or clock["late_slices"] > 0.01 * clock["slices"]):
        progress.warn(f"the board host fell behind the wall clock (max lag {clock['max_lag_ms']:g} ms, "
                      f"{clock['late_slices']:.0f} of {clock['slices']:.0f} slices over 1 ms late): "
                      "timing figures of this run are less trustworthy; run with fewer jobs beside it")


def data_rate_bps(result: RunResult, direction: str | None = None) -> float | None:
    """The link's rate (pacing into the device included) in the direction the data went: `direction`
    ("rx"/"tx") of a two-way run when given, else the direction the capture saw, else the workload's."""
    return data_rate(result, direction)[0]


def data_rate(result: RunResult, direction: str | None = None) -> tuple[float | None, str]:
    """data_rate_bps's rate, and the stage of the link that sets it: "bus" when it is the WiFi chip's host
    bus's bound (the ACKs crossing it too, harness.link.air.tcp_capacity_bps), lower than the air's and
    the NIC's pacing; else "link"."""
    seen = result.analysis.data_direction if result.analysis else None
    if direction is not None:
        sends = direction == "tx"
    elif seen in ("device->peer", "peer->device"):
        sends = seen == "device->peer"
    else:
        sends = result.workload["name"] in DEVICE_SENDS
    side = result.link["to_peer" if sends else "to_device"]
    # on the shared medium the wire's rate does not apply: the air's capacity one way, every turn full, does, or
    # the host bus's with the ACKs crossing it too, when a bus is the slower stage
    rate, stage = side.get("rate_bps"), "link"
    if result.link.get("medium", "wire") != "wire":
        rate, found = tcp_capacity_bps(LinkSpec.from_dict(result.link))
        stage = "bus" if found == "bus" else "link"
    rates = [(r, s) for r, s in ((rate, stage), (side.get("pace_bps"), "link")) if r]
    if not rates:
        return None, "link"
    lowest, by = min(rates, key=lambda rs: rs[0])
    return float(lowest), by


def _rate_text(bps: float | None) -> str:
    return f"{bps / 1e6:g} Mbit/s" if bps else "no rate limit"


def _amount(workload: Workload) -> str:
    if workload.name == "discard":
        return f"{workload.bytes or DISCARD_BYTES} bytes in chunks of {workload.chunk}"
    return f"{workload.bytes} bytes" if workload.bytes else f"{workload.seconds:g} s"


def _link_text(link: dict[str, Any]) -> str:
    """The link-wide settings a run changed from their defaults (a wire's run does not list the radio's)."""
    default = {s.field: s.check.to_json(s.default) for s in SETTINGS if s.scope == "link"}
    shown = {k: v for k, v in link.items() if not isinstance(v, dict) and (k not in default or v != default[k])}
    return ", ".join(f"{k}={v}" for k, v in shown.items()) or "default"
