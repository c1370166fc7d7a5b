"""What a smaller planned D would buy and cost: report cases at the platform's host rate, twice it and half it.

    python benchmarks/planned_d_bench.py [--repeats 3] [--seconds 3]

A QEMU board asleep in WFI / HLT lets its virtual clock run at wall speed (`-icount sleep=on`), so an idle
board's second lasts the planned D in wall seconds whatever the host could do; the boards of the reports are
mostly idle, so the planned D sets most of a run's wall time and the test suite's. Each case runs at the
platform's host rate, at twice it (half the D) and at half it (twice the D), in turn; each run's wall and CPU
time (this process's children: the emulator, the link, the peer), the D the board kept, its figure and the
capture's handshake RTT are recorded. What the host's wake-ups add passes on the board's clock at 1/D, so the
figure and the RTT are fitted as a + b / D over the three: `a` is where they go as D grows without bound, and
the fit's residual says whether the law holds. Writes benchmarks/results/planned-d.md and .json.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
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
SPEEDUPS = (1, 2, 0.5)  # the host rate asked for, as a multiple of the platform's (D divided alike)


def case_plan(report_name: str, case: str, speedup: float, seconds: float) -> RunPlan:
    report = load_report(report_name)
    setup = case_setup(report, next(s for s in report["cases"] if s["case"] == case), seconds, TimeChoice())
    faster = replace(setup, time=TimeChoice(host_mips=setup.platform.cpu.host_mips * speedup))
    return faster.plan(None, Progress(quiet=True))


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
    """Per case: the medians at each planned D (the largest first; a figure or RTT only from runs that stood at
    their planned D, not repeated at a larger one), each other D against the platform's, and where the figure and
    the RTT go as D grows without bound (`fit`)."""
    out = []
    for report, case in dict.fromkeys((r["report"], r["case"]) for r in rows):
        mine = [r for r in rows if (r["report"], r["case"]) == (report, case)]
        at = {}
        for d in sorted({r["planned_d"] for r in mine}, reverse=True):
            runs = [r for r in mine if r["planned_d"] == d]
            stood = [r for r in runs if r["stood_at_d"] == d]
            at[d] = {"kept_d": median(runs, "kept_d"), "wall_s": median(runs, "wall_s"), "cpu_s": median(runs, "cpu_s"),
                     "figure_mbps": median(stood, "figure_mbps"), "rtt_ms": median(stood, "rtt_ms"),
                     "runs": len(runs), "repeated": sum(r["repeated"] for r in runs)}
        entry: dict[str, Any] = {"report": report, "case": case, "at": at}
        platform_d = next((r["planned_d"] for r in mine if r.get("speedup") == 1), None)
        if platform_d is not None:
            base = at[platform_d]
            entry["platform_d"] = platform_d
            entry["against_platform"] = {
                d: {"wall_ratio": _ratio(a["wall_s"], base["wall_s"]), "cpu_ratio": _ratio(a["cpu_s"], base["cpu_s"]),
                    "figure_diff_pct": _pct(a["figure_mbps"], base["figure_mbps"])}
                for d, a in at.items() if d != platform_d}
            entry["fit"] = fit(at, platform_d)
        out.append(entry)
    return out


def fit(at: dict[float, dict[str, Any]], platform_d: float) -> dict[str, Any] | None:
    """The figure and the RTT as a + b / D (least squares over the medians): what the host adds passes on the
    board's clock at 1/D of a board ms a wall ms. Needs three D or more, so that the law can miss (`residual_pct`:
    the largest distance of a median from the line)."""
    points = {d: a for d, a in at.items() if a["figure_mbps"] is not None and a["rtt_ms"] is not None}
    if len(points) < 3 or platform_d not in points:
        return None
    xs = [1 / d for d in points]
    found: dict[str, Any] = {}
    for key in ("figure_mbps", "rtt_ms"):
        ys = [a[key] for a in points.values()]
        slope, intercept = statistics.linear_regression(xs, ys)
        residual = max(abs(y - (intercept + slope * x)) / y for x, y in zip(xs, ys, strict=True))
        found[key] = {"at_unbounded_d": round(intercept, 3), "residual_pct": round(100 * residual, 2),
                      "platform_d_off_pct": _pct(points[platform_d][key], intercept)}
    return found


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def _pct(a: float | None, b: float | None) -> float | None:
    ratio = a / b if a is not None and b else None
    return None if ratio is None else round(100 * (ratio - 1), 2)


def markdown(summarised: list[dict[str, Any]], command: str, commit: str, seconds: float, repeats: int) -> str:
    speeds = " and ".join(f"{s:g}" for s in SPEEDUPS)
    lines = ["# What a smaller planned D would buy and cost", "",
             f"`{command}` at {commit} ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}): each case "
             f"{repeats} times at {speeds} times the platform's host rate (D divided alike), {seconds:g} s, in turn. "
             "Medians; CPU is the run's children (emulator, link, peer).", "",
             "| case | planned D | D kept | wall s | CPU s | figure Mbit/s | capture RTT ms | repeated |",
             "|---|---|---|---|---|---|---|---|"]
    for entry in summarised:
        for d, at in entry["at"].items():
            lines.append(f"| {entry['report']} {entry['case']} | {d:g} | {at['kept_d']} | {at['wall_s']} | "
                         f"{at['cpu_s']} | {at['figure_mbps']} | {at['rtt_ms']} | {at['repeated']} of {at['runs']} |")
    lines += ["", "Against the platform's D:", "", "| case | planned D | wall, as a share | CPU, as a share | figure |",
              "|---|---|---|---|---|"]
    for entry in summarised:
        for d, against in entry.get("against_platform", {}).items():
            lines.append(f"| {entry['report']} {entry['case']} | {d:g} (platform {entry['platform_d']:g}) | "
                         f"{against['wall_ratio']} | {against['cpu_ratio']} | "
                         f"{_signed(against['figure_diff_pct'])} % |")
    fitted = [e for e in summarised if e.get("fit")]
    if fitted:
        lines += ["", "Figure and RTT as a + b / D (least squares over the medians; residual: the largest distance of "
                  "a median from the line):", "",
                  "| case | figure at unbounded D | the platform's D off by | residual | RTT at unbounded D | "
                  "the platform's D off by | residual |", "|---|---|---|---|---|---|---|"]
        for e in fitted:
            f, r = e["fit"]["figure_mbps"], e["fit"]["rtt_ms"]
            lines.append(f"| {e['report']} {e['case']} | {f['at_unbounded_d']} | "
                         f"{_signed(f['platform_d_off_pct'])} % | {f['residual_pct']} % | {r['at_unbounded_d']} | "
                         f"{_signed(r['platform_d_off_pct'])} % | {r['residual_pct']} % |")
    return "\n".join(lines) + "\n"


def _signed(value: float | None) -> str:
    return "?" if value is None else f"{value:+}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    rows = []
    for report, case in CASES:
        plans = {speedup: case_plan(report, case, speedup, args.seconds) for speedup in SPEEDUPS}
        rows += alternated(report, case, "speedup", plans, args.repeats)
    summarised = summary(rows)
    command = " ".join(["python benchmarks/planned_d_bench.py", *sys.argv[1:]])
    write_results("planned-d", rows, summarised, markdown(summarised, command, head_commit(), args.seconds,
                                                          args.repeats))
    return 0


def alternated(report: str, case: str, key: str, plans: dict[Any, RunPlan], repeats: int) -> list[dict[str, Any]]:
    """Each plan of the case run `repeats` times, in turn (plan 1, plan 2, ..., plan 1, ...), so that what the host
    does meanwhile falls on all of them alike; each row names its plan under `key`."""
    direction = "tx" if " tx" in case else "rx"
    rows = []
    for i in range(repeats):
        for name, plan in plans.items():
            row = {"report": report, "case": case, key: name, **one_run(plan, direction)}
            print(f"{report} {case} run {i + 1}, {key} {name}: {row}", flush=True)
            rows.append(row)
    return rows


def write_results(stem: str, rows: list[dict[str, Any]], summarised: list[dict[str, Any]], text: str) -> None:
    """benchmarks/results/STEM.json (every run and the summary) and STEM.md (text), and the text printed."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps({"rows": rows, "summary": summarised}, indent=2,
                                                     default=str) + "\n")
    (RESULTS / f"{stem}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
