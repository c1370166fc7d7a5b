"""A report reproduced one run at a time and two at once (reproduce --jobs): wall time and figures side by side.

    python benchmarks/reproduce_jobs_bench.py [openmv-n6] [--repeats N] [--jobs 2]

The firmware is built first (warm), then the report is reproduced with --jobs 1 and with --jobs N. Writes
benchmarks/results/reproduce-jobs-<report>.md and .json: both tables, both wall times, each case's median
under each and how far apart (%), and the machine's load average around each (other work on the machine
slows the wall time, not the device-time figures). The target: --jobs N's wall time at most 60 % of --jobs
1's, every median within 1 %.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.core.progress import Progress  # noqa: E402
from harness.rig.devicetime import TimeChoice  # noqa: E402
from harness.studies.report_file import load_report  # noqa: E402
from harness.studies.reproduce import case_setup, format_report, reproduce  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
WALL_TARGET = 0.60
MEDIAN_TARGET = 0.01


def warm(name: str) -> None:
    """Every case's firmware built (or found in the cache), so that neither timing includes a build."""
    report = load_report(name)
    for spec in report["cases"]:
        case_setup(report, spec, None, TimeChoice()).plan(None, Progress(quiet=True))


def timed(name: str, jobs: int, repeats: int | None, out: Path) -> dict[str, Any]:
    load_before = os.getloadavg()
    start = time.monotonic()
    document = reproduce(name, out=out, repeats=repeats, jobs=jobs, progress=Progress(),
                         command=f"python benchmarks/reproduce_jobs_bench.py {name} (--jobs {jobs})")
    return {"jobs": jobs, "wall_seconds": round(time.monotonic() - start, 1),
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
            "document": document}


def compared(one: dict[str, Any], many: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for a, b in zip(one["document"]["cases"], many["document"]["cases"], strict=True):
        diff = (round(100 * (b["median_mbps"] / a["median_mbps"] - 1), 2)
                if a["median_mbps"] and b["median_mbps"] is not None else None)
        within = diff is not None and abs(diff) <= 100 * MEDIAN_TARGET
        rows.append({"case": a["case"], "median_jobs_1": a["median_mbps"],
                     f"median_jobs_{many['jobs']}": b["median_mbps"], "diff_pct": diff, "within": within})
    return rows


def write(name: str, one: dict[str, Any], many: dict[str, Any], rows: list[dict[str, Any]]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp, n = time.strftime("%Y-%m-%d %H:%M:%S %z"), many["jobs"]
    share = many["wall_seconds"] / one["wall_seconds"]
    within = all(r["within"] for r in rows)
    summary = {"wall_share": round(share, 3), "wall_target": WALL_TARGET, "wall_met": share <= WALL_TARGET,
               "medians_within_1pct": within, "cpus": os.cpu_count()}
    (RESULTS / f"reproduce-jobs-{name}.json").write_text(json.dumps(
        {"date": stamp, "report": name, **summary, "cases": rows,
         "runs": [{k: v for k, v in r.items() if k != "document"} | {"schedule": r["document"]["schedule"]}
                  for r in (one, many)]}, indent=2) + "\n")
    lines = [f"# netrepro reproduce {name}: --jobs 1 against --jobs {n} ({stamp})", "",
             f"{os.cpu_count()} cores. Wall time: --jobs 1 {one['wall_seconds'] / 60:.1f} min, --jobs {n} "
             f"{many['wall_seconds'] / 60:.1f} min ({share:.0%} of it; target at most {WALL_TARGET:.0%}: "
             f"{'met' if share <= WALL_TARGET else 'MISSED'}). Medians within {MEDIAN_TARGET:.0%}: "
             f"{'yes' if within else 'NO'}.", "",
             "Load average (1, 5, 15 min) before and after each: other work on the machine (other helpers' runs) "
             "slows the wall time, not the device-time figures.", "",
             *(f"- --jobs {r['jobs']}: {r['load_before']} -> {r['load_after']}" for r in (one, many)), "",
             f"| case | median --jobs 1 | median --jobs {n} | difference % |", "|---|---|---|---|",
             *(f"| {r['case']} | {r['median_jobs_1']} | {r[f'median_jobs_{n}']} | {r['diff_pct']} |" for r in rows),
             ""]
    for r in (one, many):
        lines += [f"## --jobs {r['jobs']} ({r['wall_seconds'] / 60:.1f} min)", "", "```",
                  format_report(r["document"]), "```", ""]
    path = RESULTS / f"reproduce-jobs-{name}.md"
    path.write_text("\n".join(lines))
    return path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("report", nargs="?", default="openmv-n6")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    warm(args.report)
    with tempfile.TemporaryDirectory(prefix="nr-reproduce-jobs-") as tmp:
        one = timed(args.report, 1, args.repeats, Path(tmp))
        many = timed(args.report, args.jobs, args.repeats, Path(tmp))
        print(write(args.report, one, many, compared(one, many)).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
