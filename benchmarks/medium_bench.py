"""TCP against UDP on the shared medium, for 1-16 aggregated frames a turn: what the ACKs cost.

    python benchmarks/medium_bench.py [--seconds 3] [--agg 1,2,4,8,16,64]

The N6's `wifi` preset (its WiFi on the shared medium, the PHY rate calibrated from the report's
43 Mbit/s of UDP by `netrepro calibrate-medium`), then for each aggregation limit (agg_frames): UDP
through the link alone,
udp-rx through the board, and TCP rx (iperf2 into the board's lwiperf, mp-n6-after: its window is
not the limit at this RTT) through the board, all in device time. On a wire the board's ACKs ride
a line of their own; on the air each one takes a turn (access, preamble, block ack) from the data.

Writes benchmarks/results/medium-aggregation.json, .md and .png.
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

from matplotlib.figure import Figure  # noqa: E402

from harness.link import LinkSpec  # noqa: E402
from harness.link.saturate import udp_saturation  # noqa: E402
from harness.rig.build import FirmwareConfig, build_firmware, lwip_tree  # noqa: E402
from harness.rig.devicetime import TimeChoice  # noqa: E402
from harness.rig.platform import load_platform  # noqa: E402
from harness.rig.profile import resolve_profile  # noqa: E402
from harness.rig.workload import Workload  # noqa: E402
from harness.runs.plan import RunPlan  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
NAME = "medium-aggregation"
TARGET_BPS = 43e6  # the N6 report's UDP on the same air


def board_run(platform, firmware, spec, workload: str, seconds: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="nr-medium-") as tmp:
        result = RunPlan(platform, firmware, spec, Workload(workload, seconds=seconds),
                         time=platform.time(TimeChoice("device"))).execute(Path(tmp))
        side = result.link_counters["to_device"], result.link_counters["to_peer"]
        return {"mbps": result.throughput_mbps, "verdict": result.analysis.verdict if result.analysis else None,
                "rtt_ms": result.analysis.rtt_ms if result.analysis else None,
                "txops_to_device": side[0]["txops"], "txops_to_peer": side[1]["txops"],
                "airtime_to_device_s": side[0]["airtime_s"], "airtime_to_peer_s": side[1]["airtime_s"],
                "effective_dilation": result.time.get("effective_dilation")}


def markdown(doc: dict) -> str:
    lines = [f"# TCP against UDP on the shared medium ({doc['platform']} wifi, phy_rate "
             f"{doc['phy_rate_bps'] / 1e6:.3f} Mbit/s calibrated to {TARGET_BPS / 1e6:g} Mbit/s of UDP)", "",
             f"`python benchmarks/medium_bench.py --seconds {doc['seconds']:g}`, {doc['date']}; "
             f"{doc['seconds']:g} board seconds a run, device time, profile {doc['profile']}.", "",
             "| frames a turn | UDP, link alone | UDP through the board | TCP rx through the board | TCP / UDP | "
             "the board's turns (its ACKs) per data turn |", "|---:|---:|---:|---:|---:|---:|"]
    for row in doc["rows"]:
        tcp = row["tcp"]
        ratio = tcp["mbps"] / row["udp_board"]["mbps"]
        acks = tcp["txops_to_peer"] / tcp["txops_to_device"] if tcp["txops_to_device"] else float("nan")
        lines.append(f"| {row['agg_frames']} | {row['udp_link_mbps']:.2f} | {row['udp_board']['mbps']:.2f} | "
                     f"{tcp['mbps']:.2f} | {ratio:.2f} | {acks:.2f} |")
    lines += ["", "Mbit/s of payload in the board's time. UDP: one direction only, every turn full. TCP: each "
              "turn of data is answered by a turn of the board's ACKs (delayed ACKs: one per two segments), which "
              "takes the air from the data; on a wire the ACKs ride a line of their own."]
    return "\n".join(lines) + "\n"


def plot(doc: dict, path: Path) -> None:
    fig = Figure(figsize=(6.4, 4.0))
    ax = fig.add_subplot()
    aggs = [r["agg_frames"] for r in doc["rows"]]
    ax.plot(aggs, [r["udp_link_mbps"] for r in doc["rows"]], "o--", label="UDP, link alone")
    ax.plot(aggs, [r["udp_board"]["mbps"] for r in doc["rows"]], "s-", label="UDP through the board (udp-rx)")
    ax.plot(aggs, [r["tcp"]["mbps"] for r in doc["rows"]], "^-", label="TCP through the board (rx)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(aggs, [str(a) for a in aggs])
    ax.set_xlabel("most frames aggregated in a turn (agg_frames)")
    ax.set_ylabel("goodput, Mbit/s (board time)")
    ax.set_title(f"{doc['platform']} wifi on the shared medium, phy_rate {doc['phy_rate_bps'] / 1e6:.2f} Mbit/s")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--agg", default="1,2,4,8,16,64")
    args = parser.parse_args()
    platform = load_platform("openmv-n6")
    profile = "mp-n6-after"
    firmware = build_firmware(FirmwareConfig(platform, resolve_profile(platform, profile), lwip_tree()))
    base = LinkSpec.from_preset(platform.link_preset("wifi"))
    rows = []
    for agg in (int(a) for a in args.agg.split(",")):
        spec = base.override(agg_frames=agg)
        row = {"agg_frames": agg, "udp_link_mbps": udp_saturation(spec, 2.0).goodput_bps / 1e6,
               "udp_board": board_run(platform, firmware, spec, "udp-rx", args.seconds),
               "tcp": board_run(platform, firmware, spec, "rx", args.seconds)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    doc = {"platform": platform.name, "profile": profile, "phy_rate_bps": base.phy_rate_bps,
           "seconds": args.seconds, "date": time.strftime("%Y-%m-%d"), "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{NAME}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (RESULTS / f"{NAME}.md").write_text(markdown(doc))
    plot(doc, RESULTS / f"{NAME}.png")
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
