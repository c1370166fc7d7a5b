"""How close openmv-n6 rx comes to min(rate, window/RTT), and how fast the emulated core can receive.

    python benchmarks/rx_bound_bench.py [--repeats 3] [--seconds 8]

Writes benchmarks/results/rx_bound.json and rx_bound.md. The RTT is the one the capture's
analysis measured (harness.analysis: the sender's RTT, the device's own turnaround included).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.link import LinkSpec  # noqa: E402
from harness.rig.build import FirmwareConfig, build_firmware, lwip_tree  # noqa: E402
from harness.rig.platform import load_platform  # noqa: E402
from harness.rig.profile import resolve_profile  # noqa: E402
from harness.rig.workload import Workload  # noqa: E402
from harness.runs.plan import RunPlan  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def one_run(platform, firmware, link: LinkSpec, seconds: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="nr-bench-") as tmp:
        result = RunPlan(platform, firmware, link, Workload("rx", seconds=seconds)).execute(Path(tmp))
        lost = result.link_counters["to_device"]["frames_out"] - result.device_stats.get("nic.rx_frames", 0)
        return {"mbps": result.throughput_mbps, "rtt_ms": result.analysis.rtt_ms,
                "window": result.options["TCP_WND"], "lost_in_nic": lost, "verdict": result.analysis.verdict}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    platform = load_platform("openmv-n6")
    tree = lwip_tree()
    rows = []
    cases = [("window", p, "5.5ms", "100mbit") for p in ("mp-n6-before", "mp-n6-after")]
    cases += [("capacity", "mp-n6-after", "0.2ms", rate) for rate in ("50mbit", "70mbit", "100mbit")]
    for kind, profile, rtt, rate in cases:
        firmware = build_firmware(FirmwareConfig(platform, resolve_profile(platform, profile), tree))
        link = LinkSpec().override(rtt=rtt, rate=rate)
        runs = [one_run(platform, firmware, link, args.seconds) for _ in range(args.repeats)]
        mbps = [r["mbps"] for r in runs]
        rtt_ms = statistics.median(r["rtt_ms"] for r in runs)
        bound = min(link.to_device.rate_bps / 1e6, runs[0]["window"] * 8 / (rtt_ms / 1e3) / 1e6)
        row = {"kind": kind, "profile": profile, "rtt": rtt, "rate": rate, "window": runs[0]["window"],
               "median_mbps": statistics.median(mbps), "min_mbps": min(mbps), "max_mbps": max(mbps),
               "capture_rtt_ms": rtt_ms, "bound_mbps": bound, "share_of_bound": statistics.median(mbps) / bound,
               "lost_in_nic": [r["lost_in_nic"] for r in runs], "verdicts": [r["verdict"] for r in runs]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %z")
    (RESULTS / "rx_bound.json").write_text(json.dumps({"date": stamp, "repeats": args.repeats,
                                                        "seconds": args.seconds, "rows": rows}, indent=2) + "\n")
    lines = [f"# openmv-n6 rx against its bound ({stamp}; {args.repeats} runs of {args.seconds:g} s each)", "",
             "| case | profile | link | TCP_WND | median (min-max) Mbit/s | capture RTT | bound | share | "
             "frames lost in QEMU's NIC | verdicts |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['kind']} | {r['profile']} | {r['rtt']} / {r['rate']} | {r['window']} | "
                     f"{r['median_mbps']:.1f} ({r['min_mbps']:.1f}-{r['max_mbps']:.1f}) | {r['capture_rtt_ms']:.2f} ms"
                     f" | {r['bound_mbps']:.1f} | {r['share_of_bound']:.2f} | {r['lost_in_nic']} | "
                     f"{', '.join(r['verdicts'])} |")
    (RESULTS / "rx_bound.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
