"""Device time on this host: how far the board's clock falls behind wall time / D under network load.

    python benchmarks/device_time_bench.py [--seconds 3]

For each case (platform, link, host rate) one run in device time; the board's own clock (its
uptime) is compared with wall time / D over the workload. The lag share (lag / expected board
time) is then compared with a simple model: QEMU's NIC emulation costs real time that
-icount does not charge to the guest, c wall seconds per frame, so with R frames per second of
the board's time the board loses R * c / D of every second. Writes benchmarks/results/device-time.json
and device-time.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.link import LinkSpec  # noqa: E402
from harness.rig.build import lwip_tree  # noqa: E402
from harness.rig.devicetime import TimeChoice  # noqa: E402
from harness.rig.platform import load_platform  # noqa: E402
from harness.rig.workload import Workload  # noqa: E402
from harness.runs.plan import Configuration, RunPlan  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CASES = [  # platform, profile, link preset, workload, host MIPS
    ("openmv-n6", "mp-n6-after", "wifi", "sock-rx", 250),
    ("openmv-n6", "mp-n6-after", "wifi", "sock-rx", 125),
    ("openmv-n6", "mp-n6-after", "ethernet", "sock-rx", 250),
    ("openmv-n6", "mp-n6-after", "ethernet", "sock-rx", 125),
    ("xbox", "nxdk-nvnetdrv", "ethernet", "rx", 250),
]


def one_case(platform_name: str, profile: str, link: str, workload: str, host_mips: float, seconds: float) -> dict:
    platform = load_platform(platform_name)
    firmware = Configuration(profile).build(platform, lwip_tree())
    time_plan = platform.time(TimeChoice("device", host_mips=host_mips))
    plan = RunPlan(platform, firmware, LinkSpec.from_preset(platform.link_preset(link)),
                   Workload(workload, seconds=seconds, warmup_s=2.0 if platform_name == "xbox" else 0.0),
                   time=time_plan)
    with tempfile.TemporaryDirectory(prefix="nr-bench-") as tmp:
        start = time.monotonic()
        result = plan.execute(Path(tmp))
        wall_s = time.monotonic() - start
    frames = sum(d["frames_out"] for d in result.link_counters.values() if isinstance(d, dict) and "frames_out" in d)
    board_s = result.link_counters["elapsed_s"]           # the link's clock: wall / D
    expected_ms = seconds * 1000
    lag_share = result.time["max_lag_ms"] / (result.time["max_lag_ms"] + result.device_cpu["total_ms"])
    frames_per_board_s = frames / board_s
    return {"platform": platform_name, "profile": profile, "link": link, "workload": workload,
            "host_mips": host_mips, "dilation": time_plan.dilation, "wall_s": round(wall_s, 1),
            "capture_goodput_mbps": result.analysis.goodput_mbps, "verdict": result.analysis.verdict,
            "board_figure_mbps": result.throughput_mbps, "board_busy_percent": result.device_cpu["busy_percent"],
            "lag_ms": result.time["max_lag_ms"], "host_lagged": result.time["host_lagged"],
            "lag_share": round(lag_share, 3), "frames_per_board_s": round(frames_per_board_s),
            "cost_per_frame_ms": round(lag_share * time_plan.dilation / frames_per_board_s * 1e3, 3),
            "expected_ms": expected_ms}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    rows = [one_case(*case, seconds=args.seconds) for case in CASES]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "device-time.json").write_text(json.dumps({"seconds": args.seconds, "rows": rows}, indent=2) + "\n")
    lines = ["# Device time on this host: the board's clock against wall time / D", "",
             f"`python benchmarks/device_time_bench.py --seconds {args.seconds:g}`; one run a case.", "",
             "| platform | link | workload | host MIPS | D | capture goodput | board's own figure | board busy | "
             "lag (board ms) | lag share | frames / board s | implied NIC cost per frame (wall ms) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['platform']} | {r['link']} | {r['workload']} | {r['host_mips']:g} | {r['dilation']:g} | "
                     f"{r['capture_goodput_mbps']} ({r['verdict']}) | {r['board_figure_mbps']} | "
                     f"{r['board_busy_percent']} % | {r['lag_ms']:g} | {r['lag_share']:.0%} | "
                     f"{r['frames_per_board_s']} | {r['cost_per_frame_ms']} |")
    (RESULTS / "device-time.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
