"""A finished run's capture analysed: the analysis and plots added to its result, the peer's figures retimed,
the link's rate in the direction the data went."""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from harness.analysis import CaptureAnalysis, load_capture
from harness.analysis.follow import CaptureFollower
from harness.analysis.plots import plot_capture, run_plots_wanted
from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link.air import tcp_capacity_bps
from harness.rig.transfer import Transfer
from harness.rig.workload import workload_kind
from harness.runs.result import RunResult, device_busy


@dataclass
class MeasuredRun:
    """A run whose workload finished and whose result is saved, its capture not yet analysed (or analysed as the
    link wrote it, by `follower`); `workload_end` is the time.monotonic() at which its workload ended."""

    result: RunResult
    transfers: list[Transfer]
    progress: Progress
    follower: CaptureFollower | None = None
    workload_end: float | None = None
    _analysis: CaptureAnalysis | None = field(default=None, init=False, repr=False)

    def capture_analysis(self) -> CaptureAnalysis:
        """The capture's analysis, added to the result once: the policy for a disturbed run may need it before
        the run is analysed (harness.runs.disturbed), and the plots can wait."""
        if self._analysis is None:
            self.progress.step(f"analysing the capture of {Path(self.result.run_dir).name}")
            self._analysis = analyse_run(self.result, self.follower, self.workload_end)
        return self._analysis

    def analysed(self) -> RunResult:
        """The capture's analysis and plots added, the peer's figures retimed by it, the result saved again."""
        analysis = self.capture_analysis()
        plot_run(self.result, analysis)
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



def _cost_per_segment(result: RunResult) -> None:
    """The board's busy time per full data segment carried (its own measure, in its time): what one
    segment costs this stack and driver on this core."""
    a, cpu = result.analysis, result.device_cpu
    if not cpu or a is None or not a.payload_bytes or not a.device_mss:
        return
    segments = a.payload_bytes / a.device_mss
    cpu["us_per_segment"] = round(cpu["busy_ms"] * 1000 / segments, 2)



def retime_peer_figures(result: RunResult, transfers: list[Transfer], analysis: CaptureAnalysis) -> None:
    """Device time: the figures the peer timed on the wall clock, over the seconds their connections' data
    took in the capture (the board's time), in place of the D estimated from clock samples."""
    retimed = [t.retimed(analysis.connections, result.device) for t in transfers]
    if retimed != transfers:
        result.record(retimed, two_way=workload_kind(result.workload["name"]).two_way)
    if result.time:
        result.time["peer_figures_timed_by"] = {t.direction: t.timed_by for t in retimed if t.timed_by}


def analyse_run(result: RunResult, follower: CaptureFollower | None = None,
                workload_end: float | None = None) -> CaptureAnalysis:
    """Add the capture's analysis to the result of a finished run: the follower's, which read the capture while the
    link wrote it, else the finished file's (the same analysis either way)."""
    rate, stage = data_rate(result)
    arguments = {"device_ip": result.device, "link_rate_bps": rate, "captured_at": result.captured_at,
                 "device_busy": device_busy(result), "link_stage": stage}
    analysis = follower.analysis(**arguments) if follower else load_capture(result.capture, **arguments)
    _record_ready(result, follower, workload_end)
    result.analysis = analysis.to_summary()
    _cost_per_segment(result)
    return analysis


def plot_run(result: RunResult, analysis: CaptureAnalysis) -> None:
    """Add the plots of a run's analysed capture to its result (none when $NETREPRO_PLOTS is off)."""
    if not run_plots_wanted():
        return
    title = (f"{result.platform} / {result.profile} / {result.workload['name']} / "
             f"rtt {result.link.rtt_s * 1e3:g} ms, {_rate_text(data_rate_bps(result))}")
    result.plots = [str(p) for p in plot_capture(analysis, Path(result.run_dir) / "plots", title)]


def _record_ready(result: RunResult, follower: CaptureFollower | None, workload_end: float | None) -> None:
    """When the analysis was ready (the plots aside) and, when followed, when the link closed the capture: wall
    seconds after the workload's end."""
    if workload_end is None:
        return
    result.analysis_ready_s = round(time.monotonic() - workload_end, 3)
    if follower is not None and follower.closed_at is not None:
        result.capture_closed_s = round(follower.closed_at - workload_end, 3)


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
        sends = workload_kind(result.workload["name"]).device_sends
    side = result.link.to_peer if sends else result.link.to_device
    # on the shared medium the wire's rate does not apply: the air's capacity one way, every turn full, does, or
    # the host bus's with the ACKs crossing it too, when a bus is the slower stage
    rate, stage = side.rate_bps, "link"
    if result.link.medium != "wire":
        rate, found = tcp_capacity_bps(result.link)
        stage = "bus" if found == "bus" else "link"
    rates = [(r, s) for r, s in ((rate, stage), (side.pace_bps, "link")) if r]
    if not rates:
        return None, "link"
    lowest, by = min(rates, key=lambda rs: rs[0])
    return float(lowest), by


def _rate_text(bps: float | None) -> str:
    return f"{bps / 1e6:g} Mbit/s" if bps else "no rate limit"
