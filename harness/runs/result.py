"""What one run measured (RunResult, result.json) and the board's own CPU figures in it."""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.analysis import AnalysisSummary
from harness.link import LinkSpec
from harness.rig.leaks import LeakReport
from harness.rig.transfer import Transfer

STARTED_FORMAT = "%Y-%m-%dT%H:%M:%S%z"  # a run's `started`: local time, to the second, with its UTC offset


@dataclass
class RunResult:
    """What one run measured; `result.json` in the run folder is this, as JSON."""

    platform: str
    profile: str
    lwip_version: str
    link: LinkSpec                  # as the run used it; result.json has its as_dict() (plain units)
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
    # wall seconds from the workload's end to its analysis (plots aside), and, when the capture was analysed as the
    # link wrote it (harness.analysis.follow), to the link closing it
    analysis_ready_s: float | None = None
    capture_closed_s: float | None = None
    plots: list[str] = field(default_factory=list)
    captured_at: str = "device"  # the side of the link `capture` was taken at (a result.json without it: device)
    # a repeat at twice D (DisturbedPolicy): the run the host disturbed, which this one replaces (run_dir, figure,
    # dilation, why), kept so that a table can say so; None for a run that replaced nothing
    replaced: dict[str, Any] | None = None
    # what is done with a run the host disturbed (harness.runs.disturbed.DisturbedPolicy), and every run of this
    # one's that it repeated, oldest first, each as `replaced` has it (so tries = len(repeats) + 1)
    disturbed_policy: dict[str, Any] = field(default_factory=dict)
    # why the host disturbed this run, when it did even after the policy's repeats (harness.runs.disturbed)
    disturbed: str | None = None
    repeats: list[dict[str, Any]] = field(default_factory=list)
    # the peer's TCP timers in the board's time: which were scaled by D, how, and what the board saw of the
    # others (harness.rig.peer_timers)
    peer_timers: dict[str, Any] | None = None
    started: str = field(default_factory=lambda: time.strftime(STARTED_FORMAT))

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
        data["link"] = self.link.as_dict()
        data["analysis"] = self.analysis.as_dict() if self.analysis else {}
        return data

    def save(self) -> Path:
        path = Path(self.run_dir) / "result.json"
        path.write_text(json.dumps(self.as_dict(), indent=2) + "\n")
        return path


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
