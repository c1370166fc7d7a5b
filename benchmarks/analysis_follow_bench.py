"""Benchmark of the capture analysed while the run goes on (harness.analysis.follow): how long after the workload's end
a run's analysis is ready, analysed after the run (before) and as the link writes the capture (after).

Run: python benchmarks/analysis_follow_bench.py [--platform openmv-n6] [--seconds 10] [--link ethernet]

Two runs of the same plan (iperf rx, device time, the platform's link preset: openmv-n6's LAN9118 carries it at
100 Mbit/s), one with RunPlan.follow_capture off and one with it on; each records `analysis_ready_s` (wall seconds from
the workload's end to the analysis, the plots aside) and, when followed, `capture_closed_s` (to the link closing the
capture). The load average is read before and after each run: the host is shared and the figures move with it.

Writes benchmarks/results/analysis-follow.json and benchmarks/results/analysis-follow.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.link import LinkSpec  # noqa: E402
from harness.rig.build import lwip_tree  # noqa: E402
from harness.rig.devicetime import TimeChoice  # noqa: E402
from harness.rig.platform import load_platform  # noqa: E402
from harness.rig.workload import Workload  # noqa: E402
from harness.runs.plan import Configuration, RunPlan  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def one_run(plan: RunPlan, follow: bool) -> dict[str, Any]:
    plan = dataclasses.replace(plan, follow_capture=follow)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="nr-follow-bench-") as tmp:
        began = time.monotonic()
        result = plan.execute(Path(tmp))
        wall_s = time.monotonic() - began
    a = result.analysis
    assert a is not None and result.status == "passed", result.error
    return {"followed": follow, "analysis_ready_s": result.analysis_ready_s,
            "capture_closed_s": result.capture_closed_s,
            "frames": a.frames, "goodput_mbps": a.goodput_mbps, "verdict": a.verdict, "wall_s": round(wall_s, 1),
            "dilation": result.time.get("dilation"), "effective_dilation": result.time.get("effective_dilation"),
            "repeats": len(result.repeats), "load_before": round(load_before, 2),
            "load_after": round(os.getloadavg()[0], 2)}


def markdown(runs: list[dict[str, Any]], args: argparse.Namespace) -> str:
    lines = [
        "# The capture analysed while the run goes on",
        "",
        f"`python benchmarks/analysis_follow_bench.py --platform {args.platform} --seconds {args.seconds:g} "
        f"--link {args.link}`: iperf rx for {args.seconds:g} s of the board's time in device time, at the "
        "NIC's 100 Mbit/s, analysed after the run (before) and as the link writes the capture (after, "
        "harness.analysis.follow). Seconds are wall seconds from the workload's end; the host has 2 cores "
        "shared with other work, whose load average (1 min) is given.",
        "",
        "| analysis | ready after the workload's end | capture closed | frames | goodput | run's wall time | D "
        "(effective) | load before / after |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in runs:
        closed = f"{r['capture_closed_s']:.2f} s" if r["capture_closed_s"] is not None else "-"
        lines.append(f"| {'followed (after)' if r['followed'] else 'after the run (before)'} | "
                     f"{r['analysis_ready_s']:.2f} s | {closed} | {r['frames']:,} | {r['goodput_mbps']:.1f} Mbit/s | "
                     f"{r['wall_s']:.0f} s | {r['dilation']:g} ({r['effective_dilation']}) | "
                     f"{r['load_before']:.1f} / {r['load_after']:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="openmv-n6")
    parser.add_argument("--profile", default="mp-n6-before")
    parser.add_argument("--link", default="ethernet")
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    platform = load_platform(args.platform)
    firmware = Configuration(args.profile).build(platform, lwip_tree())
    plan = RunPlan(platform, firmware, LinkSpec.from_preset(platform.link_preset(args.link)),
                   Workload("rx", seconds=args.seconds), time=platform.time(TimeChoice("device")))
    runs = []
    for follow in (False, True):
        runs.append(one_run(plan, follow))
        print(json.dumps(runs[-1]), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "analysis-follow.json").write_text(json.dumps({"runs": runs}, indent=2) + "\n")
    (RESULTS / "analysis-follow.md").write_text(markdown(runs, args))
    print(markdown(runs, args))


if __name__ == "__main__":
    main()
