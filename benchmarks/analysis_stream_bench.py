"""Benchmark of the streamed capture analysis: memory and wall time of `load_capture` on long bulk captures.

Run: python benchmarks/analysis_stream_bench.py [--frames 450002 5000000] [--old /work/main] [--folder /tmp/x]

Each capture is written by tests/bulk_capture.py (a bulk transfer, frames cut after the TCP header) into
a temporary folder. For each: tshark alone writing the same fields to /dev/null (wall, peak RSS), then
`load_capture` in a fresh Python process (wall, peak RSS of Python and of tshark, its child). With --old
(a checkout of the code before the streamed reader) the same analysis runs there too on captures of at
most 1,000,000 frames, and the summaries (every figure a run records) are compared.

Writes benchmarks/results/analysis-stream.json (this run) and adds this run to benchmarks/results/analysis-stream.md
as a new section at its top (the sections already there are kept).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from bulk_capture import write_bulk  # noqa: E402
from suite_bench import head_commit  # noqa: E402

from harness.analysis import TSHARK_FIELDS, TSHARK_PREFS  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CHILD = """
import json, resource, sys, time
from harness.analysis import load_capture
start = time.perf_counter()
a = load_capture(sys.argv[1], device_ip="10.77.0.2")
wall = time.perf_counter() - start
usage = resource.getrusage
print(json.dumps({"wall_s": wall, "python_rss_mb": usage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "tshark_rss_mb": usage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, "summary": a.summary()},
                 default=str))
"""


def tshark_alone(path: Path, session_reset: int = 0) -> dict[str, float]:
    """tshark writing the analysis' fields to /dev/null; with `session_reset`, tshark's -M (its session, the TCP
    analysis's state included, dropped every that many frames)."""
    cmd = ["tshark", "-n", "-r", str(path), "-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"]
    if session_reset:
        cmd += ["-M", str(session_reset)]
    for name in TSHARK_FIELDS:
        cmd += ["-e", name]
    for key, value in TSHARK_PREFS.items():
        cmd += ["-o", f"{key}:{value}"]
    timed = ["/usr/bin/time", "-f", "%M", *cmd]
    start = time.perf_counter()
    done = subprocess.run(timed, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    return {"wall_s": time.perf_counter() - start, "rss_mb": int(done.stderr.strip().splitlines()[-1]) / 1024}


def analyse(path: Path, tree: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, env=env,
                          check=True, cwd="/tmp")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench(frames: int, folder: Path, old: Path | None, session_reset: int, keep: bool) -> dict[str, Any]:
    path = folder / f"bulk-{frames}.pcap"
    if not path.exists():
        write_bulk(path, frames)
    print(f"[{frames}] capture {path.stat().st_size / 1e6:.0f} MB", flush=True)
    alone = tshark_alone(path)
    print(f"[{frames}] tshark alone {alone['wall_s']:.1f} s, {alone['rss_mb']:.0f} MB", flush=True)
    new = analyse(path, ROOT)
    print(f"[{frames}] streamed {new['wall_s']:.1f} s, python {new['python_rss_mb']:.0f} MB", flush=True)
    out = {"frames": frames, "capture_mb": round(path.stat().st_size / 1e6, 1),
           "tshark_alone_s": round(alone["wall_s"], 2), "tshark_alone_rss_mb": round(alone["rss_mb"]),
           "wall_s": round(new["wall_s"], 2), "python_rss_mb": round(new["python_rss_mb"]),
           "tshark_rss_mb": round(new["tshark_rss_mb"]), "wall_over_tshark": round(new["wall_s"] / alone["wall_s"], 2),
           "verdict": new["summary"]["verdict"], "goodput_mbps": new["summary"]["goodput_mbps"],
           "rtt_ms": new["summary"]["rtt_ms"], "load_average": round(os.getloadavg()[0], 2)}
    if session_reset and frames > session_reset:
        reset = tshark_alone(path, session_reset)
        out.update(tshark_reset_s=round(reset["wall_s"], 2), tshark_reset_rss_mb=round(reset["rss_mb"]))
        print(f"[{frames}] tshark -M {session_reset} {reset['wall_s']:.1f} s, {reset['rss_mb']:.0f} MB", flush=True)
    if old is not None and frames <= 1_000_000:
        before = analyse(path, old)
        differ = sorted(k for k in new["summary"] if new["summary"][k] != before["summary"].get(k))
        out.update(old_wall_s=round(before["wall_s"], 2), old_python_rss_mb=round(before["python_rss_mb"]),
                   summary_equal=not differ, summary_differs_in=differ)
        print(f"[{frames}] old {before['wall_s']:.1f} s, {before['python_rss_mb']:.0f} MB; equal: {not differ}",
              flush=True)
    if not keep:
        path.unlink()
    return out


TITLE = "# Streamed capture analysis"


def write_results(runs: list[dict[str, Any]], command: str, history: str) -> None:
    """The JSON is this run's; the Markdown is `history` (the file as this run found it: the measurement history, and
    what was written by hand about it) with this run as a new dated section under its title."""
    load = os.getloadavg()
    (RESULTS / "analysis-stream.json").write_text(json.dumps({"load_average": load, "runs": runs}, indent=2) + "\n")
    lines = [f"## {time.strftime('%Y-%m-%d %H:%M %Z')}, the code of {head_commit()}", "",
             f"`{command}`: `load_capture` of synthetic bulk captures "
             "(tests/bulk_capture.py), in a fresh process; peak RSS from getrusage (Python itself, tshark its child); "
             "tshark alone = the same fields to /dev/null. Old = the code before the streamed reader, same capture.",
             f"Load average at the end: {load[0]:.2f} (2 CPUs shared with other work).", "",
             "| frames | MB | tshark alone s | tshark alone MB | analysis s | x tshark | Python MB | tshark MB "
             "| old s | old Python MB | summary equal | load | tshark -M s | tshark -M MB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['frames']} | {r['capture_mb']} | {r['tshark_alone_s']} | {r['tshark_alone_rss_mb']} | "
                     f"{r['wall_s']} | {r['wall_over_tshark']} | {r['python_rss_mb']} | {r['tshark_rss_mb']} | "
                     f"{r.get('old_wall_s', '-')} | {r.get('old_python_rss_mb', '-')} | "
                     f"{r.get('summary_equal', '-')} | {r.get('load_average', '-')} | {r.get('tshark_reset_s', '-')} | "
                     f"{r.get('tshark_reset_rss_mb', '-')} |")
    (RESULTS / "analysis-stream.md").write_text(with_section(history, "\n".join(lines)))


def with_section(markdown: str, section: str) -> str:
    """`markdown` with `section` first under its title (the title made when there is none)."""
    body = markdown.split("\n", 1)[1].lstrip("\n") if markdown.startswith(TITLE) else markdown
    return f"{TITLE}\n\n{section}\n" + (f"\n{body}" if body.strip() else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, nargs="+", default=[450_002, 5_000_000])
    parser.add_argument("--old", type=Path, default=None, help="a checkout of the code before the streamed reader")
    parser.add_argument("--folder", type=Path, default=None, help="where the captures are (kept when given)")
    parser.add_argument("--session-reset", type=int, default=1_000_000,
                        help="also time tshark alone with -M N on captures longer than N frames (0: not)")
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="nr-stream-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    markdown = RESULTS / "analysis-stream.md"
    history = markdown.read_text() if markdown.is_file() else ""
    command = " ".join(["python benchmarks/analysis_stream_bench.py", *sys.argv[1:]])
    runs = []
    for frames in args.frames:
        runs.append(bench(frames, folder, args.old, args.session_reset, keep=args.folder is not None))
        write_results(runs, command, history)  # after each capture: a long one may not finish
    return 0


if __name__ == "__main__":
    sys.exit(main())
