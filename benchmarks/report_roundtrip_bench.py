"""A capture's round trip as a benchmark: a run over a link no preset uses, its capture read back by
`report from-capture`, and the written report reproduced (3 runs), each variant as the round-trip test runs it,
and a link that loses 0.5 % each way, whose lost ACKs no capture shows.

    python benchmarks/report_roundtrip_bench.py [--repeats 3] [--seconds 4] [--originals 1] [--variants NAME,...]
                                                [--label TEXT]

--originals N makes N captures a variant, each read back and reproduced (how often a capture's run meets what its
reproduction does not: a retransmission timeout); --variants keeps those whose name starts with one given;
--label writes report-roundtrip-TEXT.json and .md instead.

Writes benchmarks/results/report-roundtrip.json and .md: per variant and capture (at the device's side, at
the peer's, over a link losing data toward the device, over one losing 0.5 % each way) what the capture reads
back against what the link was set to (RTT, rate, loss, and the drop list that replays the capture's losses
where they were with the frames each reproduction dropped by it), the capture's throughput against the
reproduction's median, the retransmission timeouts of the capture and of each reproduction, and the comparison
reproduce prints.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.analysis.against import CaptureComparison, format_comparison  # noqa: E402
from harness.link import parse_drop_list, parse_rate, parse_time  # noqa: E402
from harness.studies.report_file import load_report  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
RTT_MS, RATE_MBPS, LOSS_PCT = 13.0, 17.0, 0.5
VARIANTS = {"device side": [], "peer side": ["--capture-at", "peer"],
            "lossy toward the device (0.5 %)": ["--loss-to-device", "0.5%"],
            "lossy each way (0.5 %)": ["--loss", "0.5%"]}


def netrepro(*args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, env=None, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"netrepro {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def variant(name: str, extra: list[str], folder: Path, repeats: int, seconds: float) -> dict:
    run = json.loads(netrepro("run", "openmv-n6", "--lwip", "mp-n6-after", "--link", "wifi-wire", "--rtt",
                              f"{RTT_MS:g}ms", "--rate", f"{RATE_MBPS:g}mbit", "--workload", "rx", "--seconds",
                              f"{seconds:g}", "--out", str(folder / "runs"), "--json", "--quiet", *extra))
    out = folder / "report" / "board.toml"
    out.parent.mkdir(parents=True)
    netrepro("report", "from-capture", run["capture"], "--platform", "openmv-n6", "-o", str(out))
    report = load_report(str(out))
    link, (case,) = report["links"]["capture"], report["cases"]
    loss = next(i["value"] for i in report["inputs"] if i["name"] == "loss of the data")
    document = json.loads(netrepro("reproduce", str(out), "--json", "--quiet", "--repeats", str(repeats),
                                   "--out", str(folder / "again")))
    (again,) = document["cases"]
    results = [json.loads((Path(d) / "result.json").read_text()) for d in again["run_dirs"]]
    replayed = [r["link_counters"]["to_device"]["dropped"]["droplist"] for r in results]
    return {"drop_entries": len(parse_drop_list(link.get("to_device", {}).get("drop"))), "replayed_drops": replayed,
            "variant": name, "run_throughput_mbps": run["throughput_mbps"], "run_verdict": run["analysis"]["verdict"],
            "read_rtt_ms": round(parse_time(link["rtt"]) * 1e3, 3), "read_rate_mbps": parse_rate(link["rate"]) / 1e6,
            "read_loss_pct": loss, "capture_mbps": case["report_mbps"], "claim": case["claim"],
            "reproduced_median_mbps": again["median_mbps"], "reproduced_runs_mbps": again["runs_mbps"],
            "reproduced_verdict": again["verdict"], "claim_result": again["claim_result"],
            "delta_pct": again["delta_pct"], "comparison": again["against"]["comparison"],
            "run_timeouts": run["analysis"]["rto_retransmissions"],
            "reproduced_timeouts": [r["analysis"]["rto_retransmissions"] for r in results]}


def markdown(rows: list[dict], stamp: str, minutes: float, repeats: int) -> str:
    lines = [f"# The round trip of a capture ({stamp}, {minutes:.1f} min on this machine)", "",
             f"openmv-n6 / mp-n6-after, `rx`, over `--link wifi-wire --rtt {RTT_MS:g}ms --rate {RATE_MBPS:g}mbit`; its "
             f"capture read by `report from-capture`, the report reproduced ({repeats} runs).", "",
             "| variant | RTT read (set 13 ms) | rate read (set 17 Mbit/s) | loss read | drop entries (frames the "
             "runs dropped) | capture Mbit/s | reproduced median (runs) | delta % | timeouts (capture / runs) | "
             "verdict (capture / reproduced) | claims |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        runs = ", ".join(map(str, r["reproduced_runs_mbps"]))
        lines.append(f"| {r['variant']} | {r['read_rtt_ms']:g} ms ({_pct(r['read_rtt_ms'], RTT_MS)}) | "
                     f"{r['read_rate_mbps']:g} ({_pct(r['read_rate_mbps'], RATE_MBPS)}) | {r['read_loss_pct']:g} % | "
                     f"{r['drop_entries']} ({', '.join(map(str, r['replayed_drops']))}) | "
                     f"{r['capture_mbps']:g} | {r['reproduced_median_mbps']:g} ({runs}) | "
                     f"{r['delta_pct']:+.1f} | {r['run_timeouts']} / {', '.join(map(str, r['reproduced_timeouts']))} | "
                     f"{r['run_verdict']} / {r['reproduced_verdict']} | {r['claim_result']} |")
    for r in rows:
        lines += ["", f"## {r['variant']}: the capture beside the reproduction's median run", "", "```",
                  format_comparison(CaptureComparison.from_dict(r["comparison"])), "```"]
    return "\n".join(lines) + "\n"


def _pct(value: float, of: float) -> str:
    return f"{(value / of - 1) * 100:+.1f} %"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--originals", type=int, default=1)
    parser.add_argument("--variants", default="", help="comma-separated beginnings of the variants' names")
    parser.add_argument("--label", default="", help="write report-roundtrip-LABEL.json and .md")
    args = parser.parse_args()
    wanted = [w.strip() for w in args.variants.split(",") if w.strip()]
    chosen = {n: e for n, e in VARIANTS.items() if not wanted or any(n.startswith(w) for w in wanted)}
    if not chosen:
        raise SystemExit(f"no variant starts with {args.variants!r}: they are {', '.join(VARIANTS)}")
    if args.originals < 1:
        raise SystemExit(f"bad --originals {args.originals}: give 1 or more")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="netrepro-roundtrip-") as tmp:
        rows = []
        for i, (name, extra) in enumerate((n, e) for n, e in chosen.items() for _ in range(args.originals)):
            print(f"{name}: run, from-capture, reproduce", file=sys.stderr)
            rows.append(variant(name, extra, Path(tmp) / str(i), args.repeats, args.seconds))
    minutes = (time.monotonic() - started) / 60
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %z")
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = "report-roundtrip" + (f"-{args.label}" if args.label else "")
    (RESULTS / f"{stem}.json").write_text(json.dumps({"date": stamp, "minutes": round(minutes, 1),
                                                      "variants": rows}, indent=2) + "\n")
    path = RESULTS / f"{stem}.md"
    path.write_text(markdown(rows, stamp, minutes, args.repeats))
    print(path.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
