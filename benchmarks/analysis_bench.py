"""Benchmark of the capture analysis: load_capture + format_table on a 10 s, 50 Mbit/s TCP transfer.

Run: python benchmarks/analysis_bench.py [--source linux|synthetic|both] [--repeat N] [--keep DIR]

Captures (written to a temporary folder, removed afterwards unless --keep):

- linux: a real 10 s iperf2 transfer between two private network namespaces through a third
  (router) whose tbf qdisc limits the rate to 50 Mbit/s, captured by dumpcap at the receiving
  ("device") side with full frames. Needs root, ip, tc, iperf and dumpcap.
- synthetic: the same shape from the TCP model of tests/captures_gen.py (real frames, valid
  checksums), for machines where namespaces are not available.

Each capture is analysed once cold (first call in the process: pyshark import, tshark start)
and then --repeat times warm; the figure that counts is the slowest run, against the 15 s
budget. For reference it also times tshark alone writing the same fields to /dev/null, the
analysis called from inside a running asyncio loop, and the plots.

Writes benchmarks/results/analysis.json and benchmarks/results/analysis.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from captures_gen import Scenario, linux_capture, linux_capture_possible, write_scenario  # noqa: E402

from harness.analysis import TSHARK_FIELDS, TSHARK_PREFS, format_table, load_capture  # noqa: E402
from harness.analysis.plots import plot_capture  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
BUDGET_S = 15.0
RATE_BPS = 50e6
SECONDS = 10.0


def make_capture(source: str, folder: Path) -> Path:
    path = folder / f"{source}-50mbit-10s.pcap"
    if source == "linux":
        return linux_capture(path, seconds=SECONDS, rate="50mbit", queue_bytes=64000, snaplen=262144)
    sc = Scenario(duration=SECONDS, rate_bps=RATE_BPS, rtt=0.005, rcv_buf=131072, device_wscale=2, peer_wscale=7,
                  sack=True, timestamps=True)
    return write_scenario(path, sc)


def tshark_alone(path: Path) -> float:
    cmd = ["tshark", "-n", "-r", str(path), "-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"]
    for name in TSHARK_FIELDS:
        cmd += ["-e", name]
    for key, value in TSHARK_PREFS.items():
        cmd += ["-o", f"{key}:{value}"]
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def timed_analysis(path: Path) -> tuple[float, Any, str]:
    start = time.perf_counter()
    analysis = load_capture(path, device_ip="10.77.0.2", link_rate_bps=RATE_BPS)
    table = format_table(analysis)
    return time.perf_counter() - start, analysis, table


def bench(source: str, folder: Path, repeat: int) -> dict[str, Any]:
    print(f"[{source}] making the capture ...", flush=True)
    t0 = time.perf_counter()
    path = make_capture(source, folder)
    made_s = time.perf_counter() - t0
    cold_s, analysis, table = timed_analysis(path)
    warm = [timed_analysis(path)[0] for _ in range(repeat)]

    async def in_loop() -> float:
        start = time.perf_counter()
        load_capture(path, device_ip="10.77.0.2", link_rate_bps=RATE_BPS)
        return time.perf_counter() - start

    loop_s = asyncio.run(in_loop())
    tshark_s = tshark_alone(path)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as plots:
        files = plot_capture(analysis, Path(plots), f"{source} capture, 50 Mbit/s")
    plot_s = time.perf_counter() - start
    worst = max([cold_s, *warm, loop_s])
    s = analysis.summary()
    result = {
        "source": source,
        "capture_bytes": path.stat().st_size,
        "frames": analysis.frames,
        "tcp_frames": analysis.tcp_frames,
        "capture_seconds": round(analysis.duration_s or 0.0, 3),
        "make_capture_s": round(made_s, 2),
        "cold_s": round(cold_s, 3),
        "warm_s": [round(x, 3) for x in warm],
        "warm_median_s": round(statistics.median(warm), 3) if warm else None,
        "inside_asyncio_loop_s": round(loop_s, 3),
        "worst_s": round(worst, 3),
        "budget_s": BUDGET_S,
        "within_budget": worst < BUDGET_S,
        "frames_per_s": round(analysis.frames / worst),
        "tshark_alone_s": round(tshark_s, 3),
        "plots_s": round(plot_s, 3),
        "plot_files": len(files),
        "analysis": {k: s[k] for k in ("device_mss", "peer_mss", "window_scale", "device_window", "rtt_ms",
                                       "retransmissions", "goodput_mbps", "bound_mbps", "verdict",
                                       "verdict_reason")},
        "table": table,
    }
    print(f"[{source}] {analysis.frames} frames: cold {cold_s:.2f} s, warm {result['warm_median_s']} s, "
          f"in a loop {loop_s:.2f} s, tshark alone {tshark_s:.2f} s, plots {plot_s:.2f} s", flush=True)
    return result


def machine() -> dict[str, Any]:
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    tshark = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout.splitlines()[0].rstrip(".")
    import pyshark

    return {"cpu": cpu, "cpus": os.cpu_count(), "python": platform.python_version(), "tshark": tshark,
            "pyshark": getattr(pyshark, "__version__", "0.6"), "load_average": os.getloadavg()}


def write_results(runs: list[dict[str, Any]]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    info = machine()
    (RESULTS / "analysis.json").write_text(json.dumps({"machine": info, "runs": runs}, indent=2) + "\n")
    lines = [
        "# Capture analysis benchmark",
        "",
        "`python benchmarks/analysis_bench.py`: `load_capture` + `format_table` on a 10 s TCP transfer at",
        "50 Mbit/s (budget: under 15 s). Cold = first call in the process; warm = later calls;",
        "worst = slowest of all, including one made from inside a running asyncio loop.",
        "",
        f"Machine: {info['cpu']}, {info['cpus']} CPUs, load average {info['load_average'][0]:.2f} at the end; "
        f"Python {info['python']}; {info['tshark']}; pyshark {info['pyshark']}.",
        "",
        "| capture | frames | MB | cold s | warm s (median) | in asyncio loop s | worst s | tshark alone s | plots s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(f"| {r['source']} | {r['frames']} | {r['capture_bytes'] / 1e6:.1f} | {r['cold_s']:.2f} | "
                     f"{r['warm_median_s']:.2f} | {r['inside_asyncio_loop_s']:.2f} | {r['worst_s']:.2f} | "
                     f"{r['tshark_alone_s']:.2f} | {r['plots_s']:.2f} |")
    for r in runs:
        a = r["analysis"]
        lines += ["", f"## {r['source']}: {a['verdict']}", "", f"{a['verdict_reason']}", "", "```", r["table"], "```"]
    (RESULTS / "analysis.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", choices=("linux", "synthetic", "both"), default="both")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="keep the captures in this folder")
    args = parser.parse_args()
    sources = ["linux", "synthetic"] if args.source == "both" else [args.source]
    why = linux_capture_possible()
    if "linux" in sources and why is not None:
        print(f"linux capture not possible here ({why}); synthetic only", flush=True)
        sources = [s for s in sources if s != "linux"] or ["synthetic"]
    folder = args.keep or Path(tempfile.mkdtemp(prefix="nr-analysis-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        runs = [bench(source, folder, args.repeat) for source in sources]
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    write_results(runs)
    ok = all(r["within_budget"] for r in runs)
    print(f"worst {max(r['worst_s'] for r in runs):.2f} s of {BUDGET_S:g} s: {'ok' if ok else 'OVER BUDGET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
