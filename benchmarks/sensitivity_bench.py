"""Sensitivity of a report's figures to netrepro's assumed inputs, against the stored reproduction.

    python benchmarks/sensitivity_bench.py openmv-rt1060 [--repeats 1] [--plan]
    python benchmarks/sensitivity_bench.py xbox --seconds 4 [--baseline-repeats 1]
    python benchmarks/sensitivity_bench.py openmv-n6 --input "wifi aggregation limit (A-MPDU frames)" [--input ...]

The baseline is benchmarks/results/reproduce-<report>.json (the last reproduction on this machine,
the one the README's table shows): each case that depends on an assumed input runs again with that
input at the low end of its plausible range, then at the high end, exactly as
`./netrepro reproduce REPORT --sensitivity` does after its own reproduction (which it would repeat).
With --seconds the runs are that long instead of the report's, and the baseline is a reproduction of
the same length made first (the stored one's runs are longer), so every figure compares like with like.
Writes benchmarks/results/sensitivity-<report>.json and .txt (with --input: sensitivity-<report>-some, or
--name); `--plan` only prints what would run.
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

from harness.core.progress import Progress  # noqa: E402
from harness.rig.devicetime import TimeChoice  # noqa: E402
from harness.studies.report_file import load_report  # noqa: E402
from harness.studies.reproduce import reproduce  # noqa: E402
from harness.studies.sensitivity import format_sensitivity, plan_inputs, planned_runs, sensitivity  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--repeats", type=int, default=1, help="runs per case at each end (default 1)")
    parser.add_argument("--plan", action="store_true", help="print the inputs and the number of runs, run nothing")
    parser.add_argument("--seconds", type=float, default=None,
                        help="board seconds a run (default: the report's), with a baseline reproduction of that length")
    parser.add_argument("--baseline-repeats", type=int, default=1, help="runs a case of that baseline (default 1)")
    parser.add_argument("--input", action="append", default=None,
                        help="vary only this assumed input (repeatable; default: every one)")
    parser.add_argument("--name", default=None,
                        help="results file name (default sensitivity-REPORT, with --input sensitivity-REPORT-some)")
    args = parser.parse_args()
    stored = json.loads((RESULTS / f"reproduce-{args.report}.json").read_text())
    choice = TimeChoice(stored.get("time") or "device")
    cases = [c["case"] for c in stored["cases"]]
    if args.plan:
        varied, not_varied = plan_inputs(load_report(args.report), args.report, choice, cases)
        for item in varied:
            print(f"{item.name}: {item.low} .. {item.high} (value {item.value})")
        print(f"{planned_runs(varied, load_report(args.report), cases) * args.repeats} runs; not varied: "
              f"{[n['input'] if isinstance(n, dict) else n for n in not_varied]}")
        return
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="nr-sensitivity-") as tmp:
        if args.seconds is None:
            baseline, source = {**stored, "run_dir": tmp}, f"the stored reproduction of {stored['date']}"
        else:
            baseline = reproduce(args.report, out=Path(tmp), repeats=args.baseline_repeats, seconds=args.seconds,
                                 progress=Progress(), time=choice)
            source = (f"a reproduction made first at {args.seconds:g} board seconds a run, "
                      f"{args.baseline_repeats} run{'s' if args.baseline_repeats != 1 else ''} a case")
        found = sensitivity(args.report, baseline, repeats=args.repeats, seconds=args.seconds,
                            progress=Progress(), time=choice, inputs=args.input)
    wall = time.monotonic() - start
    length = f"{args.seconds:g}" if args.seconds is not None else "the report's"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %z")
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = args.name or f"sensitivity-{args.report}" + ("-some" if args.input else "")
    (RESULTS / f"{name}.json").write_text(json.dumps(
        {"date": stamp, "wall_seconds": round(wall, 1), "seconds": args.seconds, "baseline": source, **found},
        indent=2) + "\n")
    (RESULTS / f"{name}.txt").write_text(
        f"netrepro sensitivity {args.report} ({stamp}, {wall / 60:.1f} min on this machine; runs of "
        f"{length} board seconds; baseline: {source}"
        f"{'; inputs varied: ' + ', '.join(args.input) if args.input else ''})\n\n"
        f"{format_sensitivity(found)}\n")
    print(format_sensitivity(found))


if __name__ == "__main__":
    main()
