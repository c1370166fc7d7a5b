"""Reproduce a report end to end and keep its table and timing as a benchmark result.

    python benchmarks/reproduce_bench.py openmv-n6 [--repeats 3]

Writes benchmarks/results/reproduce-<report>.json, .md and .html (the page to share): netrepro's
medians beside the report's figures, and how long the whole reproduction took on this machine.
The README's report tables are these files' tables (tools/readme_tables.py checks and rewrites them).
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

from harness.rig.devicetime import TIME_MODES, TimeChoice  # noqa: E402
from harness.studies.report_page import write_report_page  # noqa: E402
from harness.studies.reproduce import format_report, reproduce  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def write_results(document: dict, seconds: float, command: str) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %z")
    name = document["report"]
    (RESULTS / f"reproduce-{name}.json").write_text(
        json.dumps({"date": stamp, "wall_seconds": round(seconds, 1), **document}, indent=2) + "\n")
    rows = [f"| {c['case']} | {c['report_mbps'] if c['report_mbps'] is not None else '-'} | "
            f"{c['median_mbps']} | {c['runs_mbps']} | {c['rtt_ms']} | {c['verdict']} | "
            f"{_claim(c)} |"
            for c in document["cases"]]
    text = "\n".join([
        f"# netrepro reproduce {name} ({stamp}, {seconds / 60:.1f} min wall time on this machine)", "",
        "```", format_report(document), "```", "",
        "| case | report Mbit/s | median | runs | capture RTT ms | verdict | claim |",
        "|---|---|---|---|---|---|---|", *rows, ""])
    path = RESULTS / f"reproduce-{name}.md"
    path.write_text(text)
    write_report_page(document, RESULTS / f"reproduce-{name}.html", command=command)
    return path


def _claim(case: dict) -> str:
    result = case.get("claim_result")
    return {"holds": "holds", "fails": "FAILS", "unknown": "unknown"}.get(result, "-")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("report")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--time", choices=TIME_MODES, default="device")
    args = parser.parse_args()
    command = f"python benchmarks/reproduce_bench.py {args.report}" + (" --time host" if args.time == "host" else "")
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nr-reproduce-") as tmp:
        document = reproduce(args.report, out=Path(tmp), repeats=args.repeats, time=TimeChoice(args.time),
                             command=command, d_check=args.time == "device")
        print(write_results(document, time.monotonic() - start, command).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
