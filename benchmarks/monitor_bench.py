"""What QEMU's QMP monitor costs a device-time run: report cases run with the human monitor the engine uses, and
with a QMP socket added beside it (as the engine had before), alternated.

    python benchmarks/monitor_bench.py [--repeats 5] [--seconds 2]

QEMU serves a QMP socket from an I/O thread of its own, and under `-icount` every expiry of a timer on the board's
clock notifies that thread too (harness/rig/monitor.py). The QMP variant adds only `-qmp unix:...` to the platform's
engine arguments: nothing connects to it, so what it costs is that thread. Each run's wall and CPU time (this
process's children: the emulator, the link, the peer), the D its board kept and its figure are recorded. Writes
benchmarks/results/monitor.md and .json.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from planned_d_bench import alternated, case_plan, median, write_results  # noqa: E402
from suite_bench import head_commit  # noqa: E402

from harness.runs.plan import RunPlan  # noqa: E402

CASES = [("openmv-n6", "wifi rx before"), ("openmv-n6", "ethernet rx before"), ("xbox", "nvnetdrv rx")]
MONITORS = ("human monitor", "and a QMP socket")


def with_qmp(plan: RunPlan, folder: Path) -> RunPlan:
    """The same plan, its QEMU also serving QMP on a socket in `folder` (nobody connects to it)."""
    engine = plan.platform.engine
    extra = (*engine.extra_args, "-qmp", f"unix:{folder / 'qmp.sock'},server=on,wait=off")
    platform = dataclasses.replace(plan.platform, engine=dataclasses.replace(engine, extra_args=extra))
    return dataclasses.replace(plan, platform=platform)


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per case and monitor: the medians; and the QMP variant's against the human monitor's."""
    out = []
    for report, case in dict.fromkeys((r["report"], r["case"]) for r in rows):
        at = {}
        for monitor in MONITORS:
            runs = [r for r in rows if (r["report"], r["case"], r["monitor"]) == (report, case, monitor)]
            at[monitor] = {key: median(runs, key) for key in ("kept_d", "wall_s", "cpu_s")}
            # a run the disturbed-run policy repeated stood at twice D: its cost counts, its figure is another D's
            at[monitor]["figure_mbps"] = median([r for r in runs if not r["repeated"]], "figure_mbps")
            at[monitor]["runs"], at[monitor]["repeated"] = len(runs), sum(1 for r in runs if r["repeated"])
        human, qmp = at[MONITORS[0]], at[MONITORS[1]]
        saved = {key: round(100 * (1 - human[key] / qmp[key]), 1) if human[key] and qmp[key] else None
                 for key in ("kept_d", "wall_s", "cpu_s")}
        out.append({"report": report, "case": case, "at": at, "saved_pct": saved})
    return out


def markdown(summarised: list[dict[str, Any]], command: str, commit: str, seconds: float, repeats: int) -> str:
    lines = ["# What QEMU's QMP monitor costs a device-time run", "",
             f"`{command}` at {commit} ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}): each case {repeats} "
             f"times with each monitor, alternated, {seconds:g} s a run. Medians; CPU is the run's children (emulator, "
             "link, peer).", "",
             "| case | monitor | D kept | wall s | CPU s | figure Mbit/s | repeated |", "|---|---|---|---|---|---|---|"]
    for entry in summarised:
        for monitor, at in entry["at"].items():
            lines.append(f"| {entry['report']} {entry['case']} | {monitor} | {at['kept_d']} | {at['wall_s']} | "
                         f"{at['cpu_s']} | {at['figure_mbps']} | {at['repeated']} of {at['runs']} |")
    lines += ["", "Without the QMP socket, less by:", "", "| case | D kept | wall | CPU |", "|---|---|---|---|"]
    for entry in summarised:
        saved = entry["saved_pct"]
        lines.append(f"| {entry['report']} {entry['case']} | {saved['kept_d']} % | {saved['wall_s']} % | "
                     f"{saved['cpu_s']} % |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="nr-qmp-") as sockets:
        for report, case in CASES:
            plan = case_plan(report, case, 1, args.seconds)
            plans = {MONITORS[0]: plan, MONITORS[1]: with_qmp(plan, Path(sockets))}
            rows += alternated(report, case, "monitor", plans, args.repeats)
    summarised = summary(rows)
    command = " ".join(["python benchmarks/monitor_bench.py", *sys.argv[1:]])
    write_results("monitor", rows, summarised, markdown(summarised, command, head_commit(), args.seconds,
                                                        args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
