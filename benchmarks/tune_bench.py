"""Benchmark of `netrepro tune`: openmv-rt1060 over wifi-wire, sock-rx, within mp-rt1060-after's lwIP RAM.

Run: python benchmarks/tune_bench.py [--trials N] [--seconds S] [--jobs J]

Runs the command as a user would (the report's 512-byte reads, device time, a local Ray
instance), times it, and keeps its table, JSON, frontier plot and lwipopts.h as
benchmarks/results/tune-openmv-rt1060.{txt,json,png,h}, with a Markdown summary
(tune-openmv-rt1060.md): the trials run and pruned, the wall time, the best configuration
against mp-rt1060-after and mp-rt1060-before.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
STEM = "tune-openmv-rt1060"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "tune-bench")
    args = parser.parse_args()
    command = ["tune", "openmv-rt1060", "--link", "wifi-wire", "--workload", "sock-rx", "--chunk", "512",
               "--ram-budget", "mp-rt1060-after", "--trials", str(args.trials), "--seconds", f"{args.seconds:g}",
               "--jobs", str(args.jobs), "--out", str(args.out), "--json"]
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness.cli", *command], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    wall = round(time.monotonic() - started, 1)
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
        return proc.returncode
    doc = json.loads(proc.stdout)
    folder = Path(doc["folder"])
    RESULTS.mkdir(exist_ok=True)
    shutil.copy(folder / "tune.txt", RESULTS / f"{STEM}.txt")
    shutil.copy(folder / "tune.json", RESULTS / f"{STEM}.json")
    shutil.copy(folder / "frontier.png", RESULTS / f"{STEM}.png")
    if doc["lwipopts"]:
        shutil.copy(doc["lwipopts"], RESULTS / f"{STEM}-lwipopts.h")
    (RESULTS / f"{STEM}.md").write_text(markdown(doc, "netrepro " + " ".join(command[:-3]), wall, args.jobs))
    print((RESULTS / f"{STEM}.md").read_text())
    return 0


def markdown(doc: dict, command: str, wall: float, jobs: int) -> str:
    trials = {t["number"]: t for t in doc["trials"]}
    ran = [t for t in doc["trials"] if t["state"] != "pruned"]
    best = trials.get(doc["best"]) if doc["best"] is not None else None
    marks = {m["label"]: m for m in doc["compared"]}
    after = marks.get("mp-rt1060-after", {})
    lines = [f"# tune: openmv-rt1060 over wifi-wire, sock-rx, within mp-rt1060-after's lwIP RAM "
             f"({doc['budget']} B)", "",
             f"`{command}`, {jobs} run{'s' if jobs != 1 else ''} at once on a local Ray instance (this shared "
             "2-core machine), device time.", "",
             f"- trials: {len(ran)} run, {len(doc['trials']) - len(ran)} pruned (do not compile, or over the budget); "
             f"wall time {wall} s ({wall / 60:.1f} min)",
             *(f"- {label}: {m['throughput_mbps']} Mbit/s with {m['ram']} B of lwIP RAM ({m['verdict']})"
               for label, m in marks.items())]
    if best:
        faster = (best["throughput_mbps"] >= after.get("throughput_mbps", float("inf")))
        lines += [f"- best within the budget: trial {best['number']}, {best['throughput_mbps']} Mbit/s with "
                  f"{best['lwip_ram']} B ({best['verdict']}); at least as fast as mp-rt1060-after: "
                  f"{'yes' if faster else 'NO'}",
                  "  " + ", ".join(f"{k}={v}" for k, v in best.get("effective_options", {}).items()
                                   if k in doc["options"])]
    lines += ["", "The frontier as the command printed it:", "", "```", (RESULTS / f"{STEM}.txt").read_text().rstrip(),
              "```", "", f"![frontier]({STEM}.png)", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
