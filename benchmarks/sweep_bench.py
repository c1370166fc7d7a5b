"""Benchmark of `netrepro sweep`: TCP_WND 4..32 x MSS on openmv-n6 over wifi-wire, at 1 and at 2 runs at once.

The link is the WiFi as a 43 Mbit/s wire (`wifi-wire`), on which min(rate, TCP_WND / RTT) is the bound.

Run: python benchmarks/sweep_bench.py [--seconds S] [--windows 4,8,...] [--workload rx]

Each sweep runs as the command does (mp-n6-after's options with TCP_WND swept, the wifi-wire preset,
device time) on a local Ray instance started for it. For each point it records the goodput the
capture shows (its timestamps are the link's, which follows the board's clock), iperf's own
figure beside it, the bound min(the link's payload rate, TCP_WND / RTT) with the RTT the capture
measured, and how far the goodput is from that bound (the issue asks for 10 %); then how far each
point at 2 runs at once is from the same point at 1 (3 %), the dilation each run actually ran at
(larger than planned: the host fell behind the board), and each sweep's wall time.

Writes benchmarks/results/sweep-tcp-wnd.json, .md and .png (the plot docs/measurements.md shows).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from matplotlib.figure import Figure  # noqa: E402

from harness.core.progress import Progress  # noqa: E402
from harness.rig.build import FirmwareConfig, build_firmware  # noqa: E402
from harness.rig.workload import Workload  # noqa: E402
from harness.studies.parallel import RayRunner, ray_session  # noqa: E402
from harness.studies.sweep import Axis, SweepSpec, check_sweep, run_sweep  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
BOUND_BAND = 0.10      # each point within 10 % of min(rate, W/RTT)
PARALLEL_BAND = 0.03   # each point at 2 runs at once within 3 % of the same point at 1


def bound_mbps(point: dict[str, Any]) -> float | None:
    """min(link payload rate, TCP_WND / RTT): the window the options set, the RTT the capture measured."""
    window = point["effective_options"].get("TCP_WND")
    analysis = point["analysis"]
    if not window or not analysis.get("rtt_ms"):
        return None
    by_window = window * 8 / analysis["rtt_ms"] / 1e3
    link = analysis.get("link_payload_mbps")
    return round(min(by_window, link) if link else by_window, 3)


def prebuild(spec: SweepSpec) -> None:
    """Every configuration's firmware into the build cache first, so neither sweep's wall time counts builds."""
    platform, tree = check_sweep(spec)
    for options in spec.configurations():
        build_firmware(FirmwareConfig(platform, spec.configuration(options).profile(platform, tree), tree))


def one_sweep(spec: SweepSpec, jobs: int, out: Path) -> tuple[list[dict[str, Any]], float]:
    folder = out / f"jobs-{jobs}"
    folder.mkdir(parents=True)
    started = time.monotonic()
    with ray_session(cpus=os.cpu_count() or 1) as ray:
        sweep = run_sweep(spec, folder, RayRunner(ray, jobs, Progress()).run, Progress())
    return sweep.points, round(time.monotonic() - started, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--windows", default="4,8,12,16,24,32", help="TCP_WND in MSS")
    parser.add_argument("--workload", default="rx")
    parser.add_argument("--out", type=Path, default=Path("runs/sweep-bench"))
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",")]
    spec = SweepSpec("openmv-n6", (Axis("TCP_WND", tuple(f"{w}*TCP_MSS" for w in windows)),), links=("wifi-wire",),
                     lwip="mp-n6-after", workload=Workload(args.workload, seconds=args.seconds))
    out = args.out.resolve() / time.strftime("%Y%m%d-%H%M%S")
    prebuild(spec)
    runs = {jobs: one_sweep(spec, jobs, out) for jobs in (1, 2)}
    rows = []
    for (p1, p2) in zip(runs[1][0], runs[2][0], strict=True):
        bound = bound_mbps(p1)
        t1, t2 = p1["analysis"].get("goodput_mbps"), p2["analysis"].get("goodput_mbps")
        i1, i2 = p1["throughput_mbps"], p2["throughput_mbps"]
        rows.append({"tcp_wnd": p1["effective_options"].get("TCP_WND"), "option": p1["options"]["TCP_WND"],
                     "rtt_ms": p1["analysis"].get("rtt_ms"), "bound_mbps": bound, "mbps_1": t1, "mbps_2": t2,
                     "iperf_1": i1, "iperf_2": i2,
                     "off_bound": round(t1 / bound - 1, 4) if t1 and bound else None,
                     "off_parallel": round(t2 / t1 - 1, 4) if t1 and t2 else None,
                     "off_parallel_iperf": round(i2 / i1 - 1, 4) if i1 and i2 else None,
                     "verdict": p1["analysis"].get("verdict"),
                     "effective_d": [_effective_d(p1), _effective_d(p2)]})
    document = {"platform": "openmv-n6", "profile": "mp-n6-after", "link": "wifi-wire", "workload": args.workload,
                "seconds": args.seconds, "cpus": os.cpu_count(), "wall_s": {"1": runs[1][1], "2": runs[2][1]},
                "points": rows, "folder": str(out), "planned_d": _planned_d(runs[1][0][0]),
                "within_bound": all(r["off_bound"] is not None and abs(r["off_bound"]) <= BOUND_BAND for r in rows),
                "within_parallel": all(r["off_parallel"] is not None and abs(r["off_parallel"]) <= PARALLEL_BAND
                                       for r in rows)}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sweep-tcp-wnd.json").write_text(json.dumps(document, indent=2) + "\n")
    (RESULTS / "sweep-tcp-wnd.md").write_text(markdown(document))
    plot(document, RESULTS / "sweep-tcp-wnd.png")
    print(markdown(document))
    return 0


def _planned_d(point: dict[str, Any]) -> float | None:
    return point["time"].get("dilation")


def _effective_d(point: dict[str, Any]) -> float | None:
    """The dilation the board actually ran at (the planned one when the host kept up)."""
    result = json.loads((Path(point["run_dir"]) / "result.json").read_text())
    time_ = result.get("time", {})
    return time_.get("effective_dilation") if time_.get("host_lagged") else time_.get("dilation")


def markdown(doc: dict[str, Any]) -> str:
    lines = [f"# Sweep: TCP_WND on {doc['platform']} over {doc['link']} ({doc['workload']}, {doc['seconds']:g} board s "
             "a run, device time)", "",
             f"`python benchmarks/sweep_bench.py`: the same sweep at 1 and at 2 runs at once on a local Ray instance "
             f"on this {doc['cpus']}-core machine. Profile {doc['profile']} "
             "with TCP_WND swept. Bound = min(the link's payload rate, TCP_WND / RTT), the RTT the capture measured. "
             "Goodput: the capture's (device time: the link follows the board's clock); iperf: the run's "
             "`throughput_mbps`, timed by the peer. D: the dilation each run actually ran at (planned "
             f"{doc['planned_d']}; larger: the host fell behind the board).",
             "", "| TCP_WND | bytes | RTT ms | bound Mbit/s | goodput, 1 at once | off bound | goodput, 2 at once "
             "| 2 vs 1 | iperf 1 / 2 | iperf 2 vs 1 | D 1 / 2 | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["points"]:
        lines.append(f"| {r['option']} | {r['tcp_wnd']} | {r['rtt_ms']} | {r['bound_mbps']} | {r['mbps_1']} | "
                     f"{_pct(r['off_bound'])} | {r['mbps_2']} | {_pct(r['off_parallel'])} | {r['iperf_1']} / "
                     f"{r['iperf_2']} | {_pct(r['off_parallel_iperf'])} | {r['effective_d'][0]} / "
                     f"{r['effective_d'][1]} | {r['verdict']} |")
    lines += ["", f"Wall time: {doc['wall_s']['1']} s at 1 run at once, {doc['wall_s']['2']} s at 2 "
              "(Ray's start and the runs; the firmwares were built before either).",
              f"Every point within 10 % of the bound: {'yes' if doc['within_bound'] else 'NO'}; "
              f"every point at 2 at once within 3 % of 1: {'yes' if doc['within_parallel'] else 'NO'} (goodput; "
              f"iperf's own figure: up to {_pct(_worst(doc['points']))}).", ""]
    return "\n".join(lines)


def _worst(rows: list[dict[str, Any]]) -> float | None:
    offs = [r["off_parallel_iperf"] for r in rows if r["off_parallel_iperf"] is not None]
    return max(offs, key=abs) if offs else None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:+.1f} %"


def plot(doc: dict[str, Any], path: Path) -> None:
    fig = Figure(figsize=(8, 5), dpi=110, layout="constrained")
    ax = fig.add_subplot()
    xs = [r["tcp_wnd"] / 1024 for r in doc["points"]]
    ax.plot(xs, [r["bound_mbps"] for r in doc["points"]], linestyle="--", color="#555555",
            label="min(rate, TCP_WND / RTT)")
    ax.plot(xs, [r["mbps_1"] for r in doc["points"]], marker="o",
            label=f"goodput, 1 run at once ({doc['wall_s']['1']} s)")
    ax.plot(xs, [r["mbps_2"] for r in doc["points"]], marker="x", linestyle=":",
            label=f"goodput, 2 runs at once ({doc['wall_s']['2']} s)")
    ax.set_xlabel("TCP_WND (KiB)")
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.suptitle(f"netrepro sweep: TCP_WND on {doc['platform']} over {doc['link']} ({doc['workload']}, device time)",
                 fontsize=10.5)
    fig.savefig(path)


if __name__ == "__main__":
    raise SystemExit(main())
