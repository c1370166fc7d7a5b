"""What a smaller planned D would buy and cost: report cases at the platform's host rate and at twice it.

    python benchmarks/planned_d_bench.py [--repeats 3] [--seconds 3]

A QEMU board asleep in WFI / HLT lets its virtual clock run at wall speed (`-icount sleep=on`), so an idle
board's second lasts the planned D in wall seconds whatever the host could do; the boards of the reports are
mostly idle, so the planned D sets most of a run's wall time and the test suite's. Each case runs at the
platform's host rate and at twice it (half the D), the two alternating; each run's wall and CPU time (this
process's children: the emulator, the link, the peer), the D the board kept, its figure and the capture's
handshake RTT are recorded. Writes benchmarks/results/planned-d.md and .json.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from suite_bench import head_commit  # noqa: E402

from harness.core.progress import Progress  # noqa: E402
from harness.rig.devicetime import TimeChoice  # noqa: E402
from harness.runs.plan import RunPlan  # noqa: E402
from harness.studies.report_file import load_report  # noqa: E402
from harness.studies.reproduce import case_setup  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CASES = [  # (report, case): a wire at the link's rate, a window over the air, a window over a short RTT, a NIC driver
    ("openmv-n6", "ethernet rx before"),
    ("openmv-n6", "wifi rx before"),
    ("openmv-rt1060", "ethernet rx before"),
    ("xbox", "nvnetdrv rx"),
]
SPEEDUPS = (1, 2)  # the host rate asked for, as a multiple of the platform's


def case_plan(report_name: str, case: str, speedup: int, seconds: float) -> RunPlan:
    report = load_report(report_name)
    spec = next(s for s in report["cases"] if s["case"] == case)
    platform_rate = case_setup(report, spec, seconds, TimeChoice()).platform.cpu.host_mips
    setup = case_setup(report, spec, seconds, TimeChoice(host_mips=platform_rate * speedup))
    return setup.plan(None, Progress(quiet=True))


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(plan: RunPlan, direction: str) -> dict[str, Any]:
    """One run of the plan (under the disturbed-run policy, as every command runs it): what it cost and read."""
    with tempfile.TemporaryDirectory(prefix="nr-planned-d-") as tmp:
        cpu, start = children_cpu_s(), time.monotonic()
        result = plan.execute(Path(tmp))
        wall_s, cpu_s = time.monotonic() - start, children_cpu_s() - cpu
    analysis = result.analysis
    figure = result.throughput_mbps
    if isinstance(figure, dict):
        figure = figure.get(direction)
    return {"planned_d": plan.time.dilation, "kept_d": result.time.get("effective_dilation"),
            "stood_at_d": result.time.get("dilation"), "repeated": len(result.repeats or []),
            "wall_s": round(wall_s, 2), "cpu_s": round(cpu_s, 2), "figure_mbps": figure,
            "rtt_ms": analysis.rtt_ms if analysis else None}


def median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(values), 3) if values else None


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per case, the medians at each planned D and how the smaller D compares (wall, CPU and figure)."""
    out = []
    for report, case in dict.fromkeys((r["report"], r["case"]) for r in rows):
        mine = [r for r in rows if (r["report"], r["case"]) == (report, case)]
        by_d = {}
        for d in sorted({r["planned_d"] for r in mine}, reverse=True):
            at = [r for r in mine if r["planned_d"] == d]
            by_d[d] = {key: median(at, key) for key in ("kept_d", "wall_s", "cpu_s", "figure_mbps", "rtt_ms")}
            by_d[d]["runs"], by_d[d]["repeated"] = len(at), sum(r["repeated"] for r in at)
        entry: dict[str, Any] = {"report": report, "case": case, "at": by_d}
        if len(by_d) == 2:
            big, small = (by_d[d] for d in by_d)
            entry["wall_ratio"] = _ratio(small["wall_s"], big["wall_s"])
            entry["cpu_ratio"] = _ratio(small["cpu_s"], big["cpu_s"])
            figure = _ratio(small["figure_mbps"], big["figure_mbps"])
            entry["figure_diff_pct"] = None if figure is None else round(100 * (figure - 1), 2)
        out.append(entry)
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def markdown(summarised: list[dict[str, Any]], command: str, commit: str, seconds: float, repeats: int) -> str:
    lines = ["# What a smaller planned D would buy and cost", "",
             f"`{command}` at {commit} ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}): each case "
             f"{repeats} times at the platform's host rate and at twice it, {seconds:g} s, alternating. Medians; "
             "CPU is the run's children (emulator, link, peer).", "",
             "| case | planned D | D kept | wall s | CPU s | figure Mbit/s | capture RTT ms | repeated |",
             "|---|---|---|---|---|---|---|---|"]
    for entry in summarised:
        for d, at in entry["at"].items():
            lines.append(f"| {entry['report']} {entry['case']} | {d:g} | {at['kept_d']} | {at['wall_s']} | "
                         f"{at['cpu_s']} | {at['figure_mbps']} | {at['rtt_ms']} | {at['repeated']} of {at['runs']} |")
    lines += ["", "| case | wall at half D | CPU at half D | figure at half D |", "|---|---|---|---|"]
    for entry in summarised:
        if "wall_ratio" in entry:
            lines.append(f"| {entry['report']} {entry['case']} | x{entry['wall_ratio']} | x{entry['cpu_ratio']} | "
                         f"{entry['figure_diff_pct']:+} % |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    rows = []
    for report, case in CASES:
        plans = {speedup: case_plan(report, case, speedup, args.seconds) for speedup in SPEEDUPS}
        direction = "tx" if " tx" in case else "rx"
        for i in range(args.repeats):
            for plan in plans.values():
                row = {"report": report, "case": case, **one_run(plan, direction)}
                print(f"{report} {case} run {i + 1} at D {row['planned_d']:g}: {row}", flush=True)
                rows.append(row)
    summarised = summary(rows)
    command = " ".join(["python benchmarks/planned_d_bench.py", *sys.argv[1:]])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "planned-d.json").write_text(json.dumps({"rows": rows, "summary": summarised}, indent=2,
                                                        default=str) + "\n")
    text = markdown(summarised, command, head_commit(), args.seconds, args.repeats)
    (RESULTS / "planned-d.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
