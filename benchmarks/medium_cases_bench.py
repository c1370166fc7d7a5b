"""The N6 report's WiFi cases on both media: the calibrated air, as predictions, beside the wire.

    python benchmarks/medium_cases_bench.py [--repeats 2] [--seconds 5]

Each of the report's wifi cases (its profile, workload and chunk, as reproduce makes them,
harness.studies.reproduce.case_setup) runs over the `wifi` preset of platforms/openmv-n6.toml (the
shared medium, its PHY rate calibrated from the report's UDP figure by `netrepro calibrate-medium`,
recorded in the report's inputs; what `reproduce` runs) and over `wifi-wire` (the same RTT, a
43 Mbit/s wire each way). Nothing was fitted to the TCP figures: the table gives each one's
distance to the report's.

Writes benchmarks/results/medium-n6-cases.json and .md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.rig.build import FirmwareConfig, build_firmware, lwip_tree  # noqa: E402
from harness.rig.devicetime import TimeChoice  # noqa: E402
from harness.rig.profile import resolve_profile  # noqa: E402
from harness.runs.plan import RunPlan  # noqa: E402
from harness.studies.report_file import load_report  # noqa: E402
from harness.studies.reproduce import case_setup  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
NAME = "medium-n6-cases"
REPORT = "openmv-n6"
AIR, WIRE = "wifi", "wifi-wire"


def distance(median: float, figure: float | list[float] | None) -> str:
    """How far the median lies from the report's figure or range, in % of it ("-" without one)."""
    if figure is None:
        return "-"
    low, high = (figure, figure) if not isinstance(figure, list) else figure
    if low <= median <= high:
        return "inside"
    edge = low if median < low else high
    return f"{(median / edge - 1) * 100:+.1f} % from {edge:g}"


def run_case(setup, preset: str, tree: Path, repeats: int) -> dict:
    links = {**setup.platform.links, setup.link: setup.platform.links[preset]}  # the case's wifi, on this medium
    platform = dataclasses.replace(setup.platform, links=links)
    setup = dataclasses.replace(setup, platform=platform)
    firmware = build_firmware(FirmwareConfig(platform, resolve_profile(platform, setup.profile), tree))
    plan = RunPlan(platform, firmware, setup.link_spec(), setup.workload, time=platform.time(setup.time))
    runs = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="nr-medium-case-") as tmp:
            result = plan.execute(Path(tmp))
            a = result.analysis
            runs.append({"mbps": result.throughput_mbps, "verdict": a.verdict if a else None,
                         "rtt_ms": a.rtt_ms if a else None,
                         "window_max": a.device_window.max if a and a.device_window else None})
    return {"runs_mbps": [r["mbps"] for r in runs], "median_mbps": statistics.median(r["mbps"] for r in runs),
            "verdicts": [r["verdict"] for r in runs], "rtt_ms": [r["rtt_ms"] for r in runs],
            "window_max": runs[0]["window_max"]}


def markdown(doc: dict) -> str:
    lines = [f"# The N6 report's WiFi cases over the calibrated air ({AIR}: phy_rate {doc['phy_rate']}, "
             "from the report's 43 Mbit/s of UDP)", "",
             f"`python benchmarks/medium_cases_bench.py --repeats {doc['repeats']} --seconds {doc['seconds']:g}`, "
             f"{doc['date']}; device time. The wire is `{WIRE}` (43 Mbit/s each way, the same RTT).", "",
             "| case | report | on the wire: median (runs) | on the air: median (runs) | air: from the report "
             "| air: verdict | air: RTT ms |",
             "|---|---:|---:|---:|---|---|---:|"]
    for row in doc["rows"]:
        figure = row["report_mbps"]
        figures = [] if figure is None else figure if isinstance(figure, list) else [figure]
        shown = "-".join(f"{x:g}" for x in figures) or "-"
        runs = ", ".join(f"{x:.2f}" for x in row["air"]["runs_mbps"])
        wire = ", ".join(f"{x:.2f}" for x in row["wire"]["runs_mbps"])
        rtt = statistics.median(x for x in row["air"]["rtt_ms"] if x is not None)
        verdicts = ", ".join(sorted(set(row["air"]["verdicts"])))
        lines.append(f"| {row['case']} | {shown} | {row['wire']['median_mbps']:.2f} ({wire}) | "
                     f"{row['air']['median_mbps']:.2f} ({runs}) | "
                     f"{distance(row['air']['median_mbps'], figure)} | {verdicts} | {rtt:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    report = load_report(REPORT)
    tree = lwip_tree()
    specs = [c for c in report["cases"] if c["link"] == "wifi"]
    rows = []
    for spec in specs:
        setup = case_setup(report, spec, args.seconds, TimeChoice("device"))
        row = {"case": spec["case"], "report_mbps": spec.get("report_mbps"),
               "wire": run_case(setup, WIRE, tree, args.repeats), "air": run_case(setup, AIR, tree, args.repeats)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    doc = {"report": REPORT, "phy_rate": case_setup(report, specs[0], None, TimeChoice("device")).platform.links[AIR][
               "phy_rate"], "repeats": args.repeats,
           "seconds": args.seconds, "date": time.strftime("%Y-%m-%d"), "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{NAME}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (RESULTS / f"{NAME}.md").write_text(markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
