"""What the kernel's primitives cost on the Cortex-M boards and the Xbox (firmware/kernel, docs/kernel.md).

    python benchmarks/kernel_bench.py [--runs 3] [--boards openmv-n6,openmv-rt1060,xbox]

Boots openmv-n6 (Cortex-M55, QEMU mps3-an547), openmv-rt1060 (Cortex-M7, QEMU mps2-an500) and xbox (Pentium III,
QEMU pc, i386) in device time with the test-only kernel firmware (`--set NR_TEST_KERNEL=1`) and runs the shell's
`ktest` --runs times on each.
ktest measures, over 1000 rounds each, in board time (board_time_ns()):
  - switch: a context switch, two threads of one priority yielding to each other (the elapsed time over the
    kernel's count of switches, so the yield call and the loop are in it);
  - sem_round_trip: a thread gives a semaphore a more urgent one waits on and takes a second one it gives back
    (two switches, two gives, two takes);
  - queue_round_trip: the same with two queues of 4-byte items (two sends, two receives, two switches);
  - clock_read: one board_time_ns(), which every switch calls once for the threads' run-time counters.
Each is the median of 5 batches (a board clock reading can be a subtick high: docs/kernel.md).
In device time QEMU counts instructions (-icount) and the board's ns are the modelled core's (its MHz x IPC
instructions a µs), so a figure is the modelled core's and repeats run for run; cycles are board ns times the
instruction rate ktest measures with the board's known loop (`spin`), i.e. instructions, the modelled core's
cycles at the platform's IPC (1.0 on all three). On the Xbox the clock is the board's own too: the PIT's count
(board_time_ns(), the tick stretched by the dilation), not rdtsc, which under QEMU's -icount counts QEMU's virtual
nanoseconds (2^shift a guest instruction), not the modelled 733 MHz core's cycles. Writes
benchmarks/results/kernel.json and kernel.md.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.rig.build import FirmwareConfig, build_firmware, lwip_tree  # noqa: E402
from harness.rig.devicetime import TimeChoice  # noqa: E402
from harness.rig.engine import QemuEngine  # noqa: E402
from harness.rig.platform import load_platform  # noqa: E402
from harness.rig.profile import resolve_profile  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
BOARDS = ("openmv-n6", "openmv-rt1060", "xbox")
COSTS = ("switch", "sem_round_trip", "queue_round_trip", "clock_read")
LABELS = {"switch": "context switch (yield)", "sem_round_trip": "semaphore give+take round trip",
          "queue_round_trip": "queue send+receive round trip",
          "clock_read": "one board_time_ns() (each switch makes one)"}


def parse(text: str) -> dict[str, Any]:
    """One ktest run: the tests' verdicts, the KCOST figures, the summary."""
    summary = re.search(r"^ktest: (\d+) passed, (\d+) failed$", text, re.M)
    cost = re.search(r"^KCOST (.*)$", text, re.M)
    if not summary or not cost:
        raise RuntimeError(f"ktest printed no summary or costs: {text[-500:]}")
    return {"passed": int(summary.group(1)), "failed": int(summary.group(2)),
            "failures": re.findall(r"^KTEST (\S+) FAIL (.*)$", text, re.M),
            "costs": {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", cost.group(1))}}


def board(name: str, runs: int) -> dict[str, Any]:
    platform = load_platform(name)
    tree = lwip_tree()
    firmware = build_firmware(FirmwareConfig(platform, resolve_profile(platform, None, overrides=["NR_TEST_KERNEL=1"],
                                                        lwip_tree=tree), tree))
    device = platform.time(TimeChoice("device"))
    cpu = platform.cpu
    assert cpu is not None
    results = []
    with tempfile.TemporaryDirectory(prefix="nr-kbench-") as tmp:
        engine = QemuEngine(platform, firmware.elf, Path(tmp), Path(tmp), time=device)
        with engine:
            console = engine.start(timeout=60)
            for _ in range(runs):
                start = time.monotonic()
                run = parse(console.command("ktest", timeout=300))
                run["wall_s"] = round(time.monotonic() - start, 2)
                results.append(run)
    median = {key: statistics.median(r["costs"][key] for r in results) for key in results[0]["costs"]}
    return {"platform": name, "core": platform.engine.cpu, "machine": platform.engine.machine,
            "real_cpu": platform.real.cpu, "clock_mhz": cpu.clock_mhz, "ipc": cpu.ipc, "model_mips": cpu.model_mips,
            "host_mips": device.host_mips, "icount_shift": device.icount_shift, "dilation": round(device.dilation, 3),
            "firmware": firmware.key, "runs": results, "median": median,
            "tests_passed": min(r["passed"] for r in results), "tests_failed": max(r["failed"] for r in results)}


def markdown(rows: list[dict[str, Any]], runs: int, stamp: str) -> str:
    lines = [f"# The kernel's costs on the Cortex-M boards and the Xbox ({stamp})", "",
             f"`python benchmarks/kernel_bench.py --runs {runs}`: ktest {runs} times on each board in device time; "
             "each figure of a run is the median of 5 batches of 1000 rounds, and the table gives the median of the "
             "runs (they repeat to the nanosecond: QEMU counts the instructions). ns are the board's, cycles the "
             "modelled core's: instructions, at the platform's IPC 1.0, from the rate ktest measured with the "
             "board's known loop (on the Xbox too: board time is the PIT's count, not rdtsc, which under -icount "
             "counts QEMU's virtual ns). A switch is measured as two threads of one priority yielding to each other "
             "(on the Xbox a yield raises the switch's software interrupt); a "
             "round trip is two switches and a give and a take (a send and a receive) each way. Docs: "
             "docs/kernel.md.", "",
             "| board | core (QEMU) | modelled | " + " | ".join(LABELS[c] for c in COSTS) + " | ktest |",
             "|---|---|---|" + "---|" * len(COSTS) + "---|"]
    for r in rows:
        m = r["median"]
        cells = [f"{m[c + '_ns']:g} ns = {m[c + '_cycles']:g} cycles" for c in COSTS]
        lines.append(f"| {r['platform']} | {r['core']} ({r['machine']}) | {r['real_cpu']}, "
                     f"{m['core_mhz']:g} MIPS measured, D = {r['dilation']:g} | " + " | ".join(cells) +
                     f" | {r['tests_passed']} passed, {r['tests_failed']} failed |")
    lines += ["", "Every run:", "", "| board | run | " + " | ".join(f"{c} ns" for c in COSTS) + " | wall s |",
              "|---|---|" + "---|" * len(COSTS) + "---|"]
    for r in rows:
        for i, run in enumerate(r["runs"], 1):
            lines.append(f"| {r['platform']} | {i} | " + " | ".join(f"{run['costs'][c + '_ns']:g}" for c in COSTS) +
                         f" | {run['wall_s']} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--boards", default=",".join(BOARDS), help="comma-separated, of " + ", ".join(BOARDS))
    args = parser.parse_args()
    rows = [board(name, args.runs) for name in args.boards.split(",")]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %z")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "kernel.json").write_text(json.dumps({"date": stamp, "runs": args.runs, "boards": rows}, indent=2)
                                         + "\n")
    text = markdown(rows, args.runs, stamp)
    (RESULTS / "kernel.md").write_text(text)
    print(text)
    return 0 if all(r["tests_failed"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
