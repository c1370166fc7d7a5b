"""Benchmark of `netrepro fuzz`: frames per second per platform, and a longer fuzz per report profile.

Run: python benchmarks/fuzz_bench.py [--rate-frames N] [--minutes M] [--frames N] [--keep-going]
                                     [--platforms P ...] [--profiles P ...] [--skip-rate] [--append]

1. Rate: each platform's default profile fuzzed for --rate-frames frames (seed 1) in device time (the
   default) and in host time; frames/s counts the fuzzing itself (frames sent and probes), not the boot,
   the leak check or minimising.
2. Long: every report profile (reports/*.toml's platforms' profiles) fuzzed for --minutes minutes of the wall
   clock in host time (more frames an hour than device time; the board's timers run on its own clock
   either way), seed = the profile's position. What was found, with the reproducer's path, is written.
   --append keeps the stored runs and adds these (a longer fuzz of one profile beside the shorter ones).
   --frames N adds a frame budget (whichever comes first); --keep-going goes on past a finding on a fresh
   board (the issue's "100k frames (or 30 min) per report profile": --frames 100000 --minutes 30 --keep-going).

Every run is a real chain (QEMU or simavr, the firmware, the link, the namespace). Writes
benchmarks/results/fuzz.json and fuzz.md after each run, so an interrupted benchmark keeps what it did.
"""

from __future__ import annotations

import argparse
import json
import platform as host
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.rig.platform import load_platform, platform_names  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
REPORT_PROFILES = {
    "openmv-n6": ["mp-n6-before", "mp-n6-after"],
    "openmv-rt1060": ["mp-rt1060-before", "mp-rt1060-after"],
    "xbox": ["nxdk-pktdrv", "nxdk-nvnetdrv", "nxdk-nvnetdrv-sndbuf-default"],
    "ethernut2": ["nutos-default", "nutos-tuned"],
}


def fuzz(platform: str, profile: str, seed: int, out: Path, *budget: str, time_mode: str = "host") -> dict[str, Any]:
    argv = [sys.executable, "-m", "harness.cli", "fuzz", platform, "--lwip", profile, "--seed", str(seed),
            "--time", time_mode, "--out", str(out), "--json", "--quiet", *budget]
    began = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=3600, cwd=ROOT)
    row: dict[str, Any] = {"platform": platform, "profile": profile, "seed": seed, "time": time_mode,
                           "budget": " ".join(budget), "exit": proc.returncode,
                           "wall_s": round(time.monotonic() - began, 1)}
    if proc.returncode in (0, 1) and proc.stdout.strip():
        summary = json.loads(proc.stdout)
        row.update({k: summary[k] for k in ("frames_sent", "fuzz_seconds", "frames_per_s", "probes",
                                            "probes_answered", "leaks", "run_dir", "boots")})
        row["findings"] = [{k: f[k] for k in ("kind", "detail", "frames", "reproducer", "minimised",
                                              "minimised_frames", "reproduced", "frames_what", "at_frame", "seen")}
                           for f in summary["findings"]]
    else:
        row["error"] = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return row


def write(document: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "fuzz.json").write_text(json.dumps(document, indent=2) + "\n")
    lines = ["# netrepro fuzz: frames per second and what a longer fuzz found", "",
             f"Host: {document['host']}; {document['started']}. Command: `{document['command']}`", "",
             "## Frames per second (the fuzzing itself: frames sent and a probe every 25)", "",
             "| platform | profile | time | budget | frames | seconds | frames/s | probes answered | found |",
             "|---|---|---|---|---:|---:|---:|---:|---|"]
    for r in document["rate"]:
        lines.append(_row(r))
    lines += ["", "## Longer fuzz per report profile", "",
              "| platform | profile | time | budget | frames | seconds | frames/s | probes answered | found |",
              "|---|---|---|---|---:|---:|---:|---:|---|"]
    for r in document["long"]:
        lines.append(_row(r))
    total = sum(r.get("frames_sent", 0) for r in document["long"])
    found = [f for r in document["rate"] + document["long"] for f in r.get("findings", [])]
    lines += ["", f"Frames fuzzed across the report profiles: {total}. Findings: {len(found)}."]
    for f in found:
        lines.append(f"- {f['kind']}: {f['detail']} (reproducer {f['minimised'] or f['reproducer']})")
    lines += ["", "Run folders (and the reproducers in them) are under --out, a temporary folder, and are not kept; "
                  "a reproducer worth keeping is copied to captures/fuzz/."]
    if document.get("notes"):  # what a person found reading the runs, kept when runs are appended
        lines += ["", document["notes"]]
    (RESULTS / "fuzz.md").write_text("\n".join(lines) + "\n")


def _row(r: dict[str, Any]) -> str:
    if "error" in r:
        return (f"| {r['platform']} | {r['profile']} | {r['time']} | {r['budget'].replace('--', '')} | - | - | - | - | "
                f"error: {r['error']} |")
    found = "; ".join(f"{f['kind']}{_when(f)}: {f['detail'][:80]}" for f in r["findings"]) or "nothing"
    return (f"| {r['platform']} | {r['profile']} | {r['time']} | {r['budget'].replace('--', '')} | "
            f"{r['frames_sent']} | {r['fuzz_seconds']} | "
            f"{r['frames_per_s']} | {r['probes_answered']}/{r['probes']} | {found} |")


def _when(finding: dict[str, Any]) -> str:
    """When a finding was first made and how often it happened (stored runs before --keep-going lack both)."""
    if not finding.get("at_frame"):
        return ""
    again = f", {finding['seen']} times" if finding.get("seen", 1) > 1 else ""
    return f" (frame {finding['at_frame']}{again})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate-frames", type=int, default=300)
    parser.add_argument("--minutes", type=float, default=1.5)
    parser.add_argument("--platforms", nargs="*", default=platform_names())
    parser.add_argument("--profiles", nargs="*", default=None, help="only these report profiles in part 2")
    parser.add_argument("--frames", type=int, default=None, help="part 2: a frame budget too (whichever first)")
    parser.add_argument("--keep-going", action="store_true", help="part 2: go on past a finding on a fresh board")
    parser.add_argument("--skip-rate", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("/tmp/netrepro-fuzz-bench"))
    parser.add_argument("--append", action="store_true", help="keep the stored runs and add these")
    args = parser.parse_args()
    document: dict[str, Any] = {"host": f"{host.node()} ({host.machine()}, {host.python_version()})",
                                "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                "command": "python benchmarks/fuzz_bench.py " + " ".join(sys.argv[1:]),
                                "rate": [], "long": []}
    stored = RESULTS / "fuzz.json"
    if args.append and stored.is_file():
        earlier = json.loads(stored.read_text())
        document.update(rate=earlier["rate"], long=earlier["long"], host=earlier["host"], notes=earlier.get("notes"),
                        command=f"{earlier['command']}; then {document['command']}")
    for name in [] if args.skip_rate else args.platforms:
        default = load_platform(name).default_profile
        for mode in ("device", "host"):
            document["rate"].append(fuzz(name, default, 1, args.out, "--frames", str(args.rate_frames),
                                         time_mode=mode))
            write(document)
    seed = 100
    for name in args.platforms:
        for profile in REPORT_PROFILES.get(name, []):
            seed += 1
            if args.profiles is None or profile in args.profiles:
                budget = ["--minutes", f"{args.minutes:g}"] + (["--frames", str(args.frames)] if args.frames else [])
                budget += ["--keep-going"] if args.keep_going else []
                document["long"].append(fuzz(name, profile, seed, args.out, *budget))
                write(document)
    return 0


if __name__ == "__main__":
    sys.exit(main())
