"""A case's runs summarised as one figure and the median run's capture facts (reproduce and compare)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from harness.analysis import AnalysisSummary, load_capture
from harness.core.errors import NetreproError
from harness.runs.analyse import data_rate
from harness.runs.disturbed import still_disturbed
from harness.runs.result import RunResult, device_busy, threads_text


@dataclass
class CaseResult:
    """One case of a report: the report's figure beside netrepro's runs of it."""

    case: str
    platform: str
    profile: str
    link: str
    workload: str
    report_mbps: float | list[float] | None
    direction: str | None = None              # rr / duplex: which direction's figure this case is
    rx_overflow: str = "hold"                 # what the link did with frames the NIC could not take
    medium: str = "wire"                      # the link preset's medium: "wire" or "shared" (one radio channel)
    report_value: float | None = None         # the report's figure in its own unit (the document's "unit")
    median_in_unit: float | None = None       # netrepro's median in that unit
    runs_mbps: list[float] = field(default_factory=list)
    median_mbps: float | None = None
    min_mbps: float | None = None
    max_mbps: float | None = None
    bound_mbps: float | None = None
    link_mbps: float | None = None
    verdict: str | None = None
    verdict_reason: str | None = None
    device_mss: int | None = None
    device_window: float | None = None       # median of the device's ACKs
    device_window_max: int | None = None     # the window lwIP offers with nothing unread: TCP_WND
    window_scaling: bool | None = None
    rtt_ms: float | None = None
    device_cpu_percent: float | None = None  # the board's core busy over the workload (its own measure), median
    us_per_segment: float | None = None      # its busy time per full data segment, median
    lwip_ram_total: int | None = None        # lwIP's static RAM in the firmware (heap, pools, other), bytes
    leaks: str | None = None                 # the runs' leak checks in one phrase (case_leaks); None: no run
    runs_at_risk: int = 0                    # runs the host disturbed even after a repeat (figures_at_risk)
    threads: str | None = None               # NO_SYS 0: where the median run's board time went (threads_text)
    claim: dict[str, Any] = field(default_factory=dict)
    claim_holds: bool | None = None
    claim_notes: list[str] = field(default_factory=list)
    by_construction: bool = False            # the claim holds, and every part of it by construction (claims.py)
    run_dirs: list[str] = field(default_factory=list)
    median_run_dir: str | None = None        # the run that speaks for the case (its figure is the median)
    against: dict[str, Any] | None = None    # the user's capture beside the median run's (a case with a capture)
    error: str | None = None                 # the first failure's message
    runs_failed: int = 0                     # runs that raised or gave no figure for this case's direction
    runs_replaced: list[dict[str, Any]] = field(default_factory=list)  # runs the host disturbed, repeated at
                                                                       # twice D (replaced_runs)
    # the D check (reproduce --d-check): the figure of one more run at twice D and that D (None: not run), and
    # whether the figure moved by more than half the report's band, so that it is the host's as much as the board's
    dilation: float | None = None             # the D its runs were planned at (device time; a repeat ran at twice it)
    d_check: float | None = None
    d_check_dilation: float | None = None
    d_check_run_dir: str | None = None
    host_dependent: bool = False
    host_dependent_why: str | None = None


def run_figure(run: RunResult, direction: str | None) -> float | None:
    return direction_figure(run.throughput_mbps, direction)


def direction_figure(value: Any, direction: str | None) -> float | None:
    """A run's throughput (a number, or {rx, tx} for a two-way run) as the figure of one direction."""
    if direction is not None:
        value = value.get(direction) if isinstance(value, dict) else None
    return float(value) if isinstance(value, float | int) and not isinstance(value, bool) else None


def replaced_runs(runs: list[RunResult], direction: str | None) -> list[dict[str, Any]]:
    """The runs the host disturbed that a repeat at twice D replaced (RunResult.replaced), each with the repeat
    that stands for it (`by`), in this case's direction: a table lists them rather than hide them."""
    found = []
    for run in runs:
        replaced = getattr(run, "replaced", None)  # a result.json older than `replaced` has none
        if not replaced:
            continue
        dilation = run.time.get("dilation") if run.time else None
        found.append({**replaced, "figure": direction_figure(replaced.get("figure"), direction),
                      "by": {"run_dir": run.run_dir, "figure": run_figure(run, direction), "dilation": dilation}})
    return found


def judge_d_check(result: CaseResult, check: RunResult | None, band: float) -> None:
    """The case's D check: its figure at twice D against the median, and whether it moved by more than half
    the band (then the figure is host-dependent: the host's timers, not only the board, set it)."""
    if check is None:
        return
    result.d_check_run_dir = check.run_dir
    result.d_check = figure = run_figure(check, result.direction)
    result.d_check_dilation = check.time.get("dilation") if check.time else None
    median = result.median_mbps
    if figure is None or not median:
        return
    moved = figure / median - 1
    result.host_dependent = abs(moved) > band / 2
    if result.host_dependent:
        result.host_dependent_why = (f"{median:g} Mbit/s at D={_dilation_text(result.dilation)}, {figure:g} at "
                                     f"D={_dilation_text(result.d_check_dilation)} ({moved:+.1%}; more than half "
                                     f"the band, {band / 2:.1%})")


def planned_dilation(run: RunResult) -> float | None:
    """The D a run was planned at: its first try's, when the policy for a disturbed run repeated it at twice D."""
    repeats = getattr(run, "repeats", None)
    if repeats:
        return repeats[0]["dilation"]
    return run.time.get("dilation") if run.time else None


def summarise_runs(result: CaseResult, runs: list[RunResult], raised: int = 0) -> None:
    """The runs' figures and the median run's facts; `raised` counts the runs that never returned."""
    measured = [(f, r) for r in runs if (f := run_figure(r, result.direction)) is not None]
    result.runs_failed = raised + len(runs) - len(measured)
    result.lwip_ram_total = next((r.lwip_ram["total"] for r in runs if r.lwip_ram), None)
    result.leaks = case_leaks(runs)
    result.runs_at_risk = sum(still_disturbed(r) for r in runs)
    result.runs_replaced = replaced_runs(runs, result.direction)
    if len(measured) < len(runs) and result.error is None:
        which = f"{result.direction} " if result.direction else ""
        result.error = (f"no {which}figure in {len(runs) - len(measured)} of the {len(runs)} finished runs "
                        "(see the run folders' iperf logs)")
    if not measured:
        return
    figures = [f for f, _ in measured]
    result.runs_mbps = [round(f, 2) for f in figures]
    result.median_mbps = round(statistics.median(figures), 2)
    result.min_mbps, result.max_mbps = round(min(figures), 2), round(max(figures), 2)
    middle = sorted(measured, key=lambda fr: fr[0])[len(measured) // 2][1]  # the median run speaks for the case
    result.median_run_dir = middle.run_dir
    result.dilation = planned_dilation(middle)
    result.threads = threads_text(middle.threads["cpu"]) if middle.threads and "cpu" in middle.threads else None
    rate, stage = data_rate(middle, result.direction)
    analysis = (middle.analysis if result.direction is None else
                _direction_analysis(middle, result.direction, rate, stage))
    analysis = analysis or AnalysisSummary(verdict=None)
    result.verdict, result.verdict_reason = analysis.verdict, analysis.verdict_reason
    result.link_mbps = round(rate / 1e6, 2) if rate else None
    result.bound_mbps = analysis.bound_mbps or result.link_mbps
    result.device_mss = analysis.device_mss
    result.device_window, result.device_window_max = analysis.device_window.median, analysis.device_window.max
    scaling = analysis.window_scaling or ""
    # negotiated only when both SYNs carry the option; unknown without the SYN
    result.window_scaling = None if scaling.startswith("unknown") or not scaling else scaling == "negotiated"
    result.rtt_ms = analysis.rtt_ms
    result.device_cpu_percent = _median_of([(r.device_cpu or {}).get("busy_percent") for _, r in measured])
    result.us_per_segment = _median_of([(r.device_cpu or {}).get("us_per_segment") for _, r in measured])


def case_leaks(runs: list[RunResult]) -> str | None:
    """The runs' leak checks as one phrase: "none" when every run got everything back, else each leaking
    run's leaks ("PBUF_POOL 3 elements in 2 of 3 runs") or how many runs could not check."""
    if not runs:
        return None
    checked = [r.leaks for r in runs if r.leaks is not None and r.leaks.checked]
    leaking = [report.short() for report in checked if report.leaks]
    parts = [f"{text} in {leaking.count(text)} of {len(runs)} runs" for text in dict.fromkeys(leaking)]
    if len(checked) < len(runs):
        parts.append(f"not checked in {len(runs) - len(checked)} of {len(runs)} runs")
    return "; ".join(parts) or "none"


def leak_notes(rows: list[dict[str, Any]], key: str) -> list[str]:
    """Below a table: the rows (named by `key`) whose runs did not give back what they took or went
    unchecked, or one line saying that every run did."""
    unclean = [f"  {row[key]}: {row['leaks']}" for row in rows if row.get("leaks") not in (None, "none")]
    if unclean:
        return ["", "leak check (what the board had not got back once the workload's connections closed):", *unclean]
    if any(row.get("leaks") == "none" for row in rows):
        return ["", "leak check: none; every run got back what it took"]
    return []


def thread_notes(rows: list[dict[str, Any]], key: str) -> list[str]:
    """Below a table: for the rows (named by `key`) whose firmware runs lwIP's threads (NO_SYS 0), which
    threads the median run's board time went to, by the kernel's own counters."""
    busy = [f"  {row[key]}: {row['threads']}" for row in rows if row.get("threads")]
    if not busy:
        return []
    return ["", "threads (NO_SYS 0; the median run's board time by thread, busiest first, from the kernel's "
            "counters):", *busy]


def risk_notes(rows: list[dict[str, Any]], key: str) -> list[str]:
    """Below a table: the rows (named by `key`) with runs the host disturbed even after their repeat at a
    larger D (the host fell behind the board, or stalled the link): their figures are not the board's."""
    risky = [f"  {row[key]}: {row['runs_at_risk']} of {len(row.get('run_dirs') or [])} runs"
             for row in rows if row.get("runs_at_risk")]
    if not risky:
        return []
    return ["", "figures at risk (the host disturbed these runs even after a repeat at a larger D; their "
            "result.json says how): run with fewer jobs beside it", *risky]


def replaced_notes(rows: list[dict[str, Any]], key: str) -> list[str]:
    """Below a table: every run the host disturbed that a repeat at twice D replaced, with both figures, so
    that no figure is replaced silently."""
    lines = [f"  {row[key]}: {replaced_text(entry)}" for row in rows for entry in row.get("runs_replaced") or []]
    if not lines:
        return []
    return ["", "runs the host disturbed, repeated at twice D (the repeat's figure counts):", *lines]


def replaced_text(entry: dict[str, Any]) -> str:
    """'figure 20.1 Mbit/s at D=4, replaced by 22.3 Mbit/s at D=8: why' (a run that gave no figure: 'none')."""
    by = entry.get("by") or {}
    return (f"figure {_figure_or_none(entry.get('figure'))} at D={_dilation_text(entry.get('dilation'))}, replaced "
            f"by {_figure_or_none(by.get('figure'))} at D={_dilation_text(by.get('dilation'))}: {entry.get('why')}")


def _figure_or_none(value: Any) -> str:
    return "none" if value is None else f"{value:g} Mbit/s"


def _dilation_text(value: Any) -> str:
    return "?" if value is None else f"{value:.3g}"


def _median_of(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(statistics.median(known), 2) if known else None


def _direction_analysis(run: RunResult, direction: str, rate: float | None, stage: str = "link") -> AnalysisSummary:
    """The analysis of the one connection of a two-way run that carried this direction's data (`stage`: what
    sets `rate`, "link" or the WiFi chip's host "bus")."""
    try:
        return load_capture(run.capture, device_ip=run.device, link_rate_bps=rate, captured_at=run.captured_at,
                            sender="device" if direction == "tx" else "peer", device_busy=device_busy(run),
                            link_stage=stage).to_summary()
    except NetreproError as exc:
        return AnalysisSummary(verdict=None, verdict_reason=str(exc))


def format_number(value: Any) -> str:
    """A figure for a table: '-' when there is none."""
    return "-" if value is None else f"{value:g}"


def time_line(mode: str | None) -> str:
    """What a table's figures are in: the board's time, or the host's."""
    if mode == "host":
        return ("time: host (each core ran as fast as this host allows): the figures depend on the host, not only "
                "on the board; cpu % and us/seg are the board's own measure of its core")
    return ("time: device (each core at its modelled speed; the link follows the board's clock); cpu % and us/seg "
            "are the board's own measure of its core, in its time")
