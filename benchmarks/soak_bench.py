"""Soak benchmark: `netrepro run --minutes M` per QEMU platform over a lossy, jittery, reordering link.

Run: python benchmarks/soak_bench.py [--minutes M] [--platforms P ...] [--time device|host]

Each platform's default profile runs the rx workload (iperf2 from the peer) for M minutes of the board's time
over its `wifi-wire` preset (the WiFi as a wire; a board without WiFi, the Xbox, over its `ethernet`) at
--rate with 1 % loss each way, 2 ms of jitter and reordering on, the capture
keeping 128 bytes of each frame (so a long soak's capture stays small; the byte accounting reads lengths
from the IP headers). The run's own end checks are the verdict: the board answers its console and a ping,
the peer's, the capture's and the board's byte counts agree, and the leak check is clean.

Writes benchmarks/results/soak.json and soak.md after each platform.
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

from harness.rig.platform import Platform, load_platform  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
QEMU_PLATFORMS = ["openmv-n6", "openmv-rt1060", "xbox"]
LOSSY = ["--loss", "1%", "--jitter", "2ms", "--reorder", "1", "--snaplen", "128"]


def soak_link(board: Platform) -> str:
    """The WiFi as a wire where the board has WiFi, else its Ethernet (the rate is the bench's own either way)."""
    return "wifi-wire" if "wifi-wire" in board.links else "ethernet"


def soak(platform: str, minutes: float, rate: str, time_mode: str, out: Path) -> dict[str, Any]:
    board = load_platform(platform)
    profile, link = board.default_profile, soak_link(board)
    argv = [sys.executable, "-m", "harness.cli", "run", platform, "--lwip", profile, "--link", link, *LOSSY,
            "--rate", rate,
            "--workload", "rx", "--minutes", f"{minutes:g}", "--time", time_mode, "--out", str(out), "--json",
            "--quiet"]
    began = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=minutes * 60 * 8 + 600, cwd=ROOT)
    row: dict[str, Any] = {"platform": platform, "profile": profile, "link": link, "minutes": minutes, "rate": rate,
                           "time": time_mode, "exit": proc.returncode, "wall_s": round(time.monotonic() - began, 1)}
    try:
        document = json.loads(proc.stdout)
    except json.JSONDecodeError:
        row["error"] = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return row
    dropped = {way: document["link_counters"][way]["dropped"]["loss"] for way in ("to_device", "to_peer")}
    row.update({"soak": document["soak"], "throughput_mbps": document["throughput_mbps"],
                "board_seconds": document["seconds"], "dilation_kept": document["time"].get("effective_dilation"),
                "dropped_by_loss": dropped, "retransmissions": document["analysis"].get("retransmissions"),
                "run_dir": document["run_dir"]})
    return row


def write(document: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "soak.json").write_text(json.dumps(document, indent=2) + "\n")
    lines = ["# netrepro soak: minutes of iperf over 1 % loss, 2 ms jitter and reordering", "",
             f"Host: {document['host']}; {document['started']}. Command: `{document['command']}`", "",
             "| platform | profile | link | board minutes asked | covered | time (D kept) | verdict | board alive | "
             "peer bytes | capture bytes | board bytes | lost frames (to board, to peer) | retransmissions | leaks | "
             "wall s |",
             "|---|---|---|---:|---:|---|---|---|---:|---:|---:|---|---:|---|---:|"]
    for r in document["runs"]:
        if "error" in r:
            lines.append(f"| {r['platform']} | {r['profile']} | {r['link']} | {r['minutes']} | | "
                         f"{r['time']} | error: {r['error']} | | | | | | | | |")
            continue
        s, b = r["soak"], r["soak"]["bytes"]
        alive = ", ".join(k for k, v in s["alive"].items() if v)
        seconds = r.get("board_seconds") or b["peer"] * 8 / (r["throughput_mbps"] * 1e6)  # older rows: bytes / rate
        covered = f"{seconds / 60:.2f}"
        kept = f" ({r['dilation_kept']:g})" if r.get("dilation_kept") else ""
        lines.append(f"| {r['platform']} | {r['profile']} | {r['link']} | {r['minutes']} | {covered} | "
                     f"{r['time']}{kept} | {'passed' if s['ok'] else 'FAILED'} | {alive} | {b['peer']} | "
                     f"{b['capture']} | {b['board']} | "
                     f"{r['dropped_by_loss']['to_device']}, {r['dropped_by_loss']['to_peer']} | "
                     f"{r['retransmissions']} | {s['leaks']} | {r['wall_s']} |")
    lines += ["", "The board's byte count is the capture's less what lwiperf leaves uncounted of its first "
                  "segment (harness/studies/soak.py)."]
    lines += ["", *document.get("notes", [])] if document.get("notes") else []
    (RESULTS / "soak.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="board minutes per platform (default 10)")
    parser.add_argument("--rate", default="10mbit", help="the link's rate each way (default 10mbit)")
    parser.add_argument("--time", choices=("device", "host"), default="host")
    parser.add_argument("--platforms", nargs="*", default=QEMU_PLATFORMS)
    parser.add_argument("--out", type=Path, default=Path("/tmp/netrepro-soak-bench"))
    parser.add_argument("--append", action="store_true",
                        help="keep the stored runs of other platforms or time modes (one platform at a time on a "
                             "shared machine)")
    args = parser.parse_args()
    document: dict[str, Any] = {"host": f"{host.node()} ({host.machine()}, {host.python_version()})",
                                "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                "command": "python benchmarks/soak_bench.py " + " ".join(sys.argv[1:]), "runs": []}
    stored = RESULTS / "soak.json"
    if args.append and stored.is_file():
        earlier = json.loads(stored.read_text())
        document["runs"] = [r for r in earlier["runs"]
                            if r["platform"] not in args.platforms or r["time"] != args.time]
        document["command"] = f"{earlier['command']}; then {document['command']}"
    for name in args.platforms:
        document["runs"].append(soak(name, args.minutes, args.rate, args.time, args.out))
        write(document)
    return 0 if all(r.get("soak", {}).get("ok") for r in document["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())
