"""Device time: is a figure the board's and not the host's? Repeatability, host independence, the model as a knob.

    python benchmarks/device_time_repeat_bench.py [--part repeat|wire|busy|knob|heap|dilation|all] [--seconds 5]
    python benchmarks/device_time_repeat_bench.py --rewrite   (the .md again from the stored .json)

Every case is a report's own (reports/*.toml: its profile, link, workload and write or read size),
run for --seconds of the board's time.

repeat  5 runs of openmv-n6 "ethernet rx after" (mp-n6-after, sock-rx): (max - min) / median; 10 runs
        of openmv-rt1060 "wifi tx before" (mp-rt1060-before, sock-tx with 512 B writes over the
        shared medium: the heap-exhaustion case), with how often each state occurs and what the
        board's heap looked like when it ran out.
wire    the same 10 RT1060 runs over wifi-wire, the WiFi as a 40 Mbit/s wire (what `wifi` was when
        the case was first measured).
busy    the N6 case again with two busy processes beside it (one per core) and without real-time
        priority (--no-realtime, as a non-root user runs it): its median against the quiet median.
knob    a spin loop of a known instruction count takes its modelled device time; halving --mips
        lowers a CPU-bound case (RT1060 "ethernet rx before", MSS 800) and leaves a window-bound one
        (N6 "wifi rx before") where it was.
heap    10 runs of openmv-rt1060 "ethernet tx before" (MSS 800, 8000 B heap, the report's "line
        rate"): how often the heap runs out (the board's count of ERR_MEM waits, 50 ms each), what
        each wait costs and whether the heap was full or in holes.
dilation  the same cases at twice the dilation (--host-mips 125): Linux's own TCP timers (delayed
        ACK, minimum RTO) are not stretched, so they look D times shorter to the board; if they
        set any pace, the figures would move with D.
heapd   6 runs of repeat's RT1060 case at twice the dilation: the heap's states, and each figure
        against the D its run kept.

Writes benchmarks/results/device-time-repeat.json and .md (each part kept when another is rerun).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.link import LinkSpec  # noqa: E402
from harness.rig.build import lwip_tree  # noqa: E402
from harness.rig.devicetime import TimeChoice  # noqa: E402
from harness.rig.platform import load_platform  # noqa: E402
from harness.rig.session import Session  # noqa: E402
from harness.runs.plan import Configuration, RunPlan  # noqa: E402
from harness.studies.report_file import load_report  # noqa: E402
from harness.studies.reproduce import Setup, case_direction, case_setup  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


# a report's case: (report, case, another of the board's link presets or None for the case's own)
Case = tuple[str, str, str | None]


def _case_spec(case: Case) -> tuple[dict, dict]:
    report_name, name, _ = case
    report = load_report(report_name)
    spec = next((c for c in report["cases"] if c["case"] == name), None)
    if spec is None:
        raise SystemExit(f"device_time_repeat_bench: report {report_name} has no case '{name}'")
    return report, spec


def case_run(case: Case, seconds: float) -> tuple[Setup, str | None]:
    """The case's run as `reproduce` makes it, for `seconds` of the board's time (and on another link), and
    the direction it reads of a two-way workload (None: a one-way one)."""
    report, spec = _case_spec(case)
    setup = case_setup(report, spec, seconds, TimeChoice("device"))
    return (replace(setup, link=case[2]) if case[2] else setup), case_direction(spec)


def case_label(case: Case) -> str:
    setup, _ = case_run(case, 1.0)
    size = "reads" if setup.workload.name.endswith("rx") else "writes"
    return (f"{case[0]} \"{case[1]}\" ({setup.profile}, {setup.workload.name}, {setup.workload.chunk} B {size}, "
            f"over {setup.link})")


def one_run(case: Case, seconds: float, choice: TimeChoice) -> dict:
    setup, direction = case_run(case, seconds)
    firmware = setup.firmware.build(setup.platform, lwip_tree())
    plan = RunPlan(setup.platform, firmware, setup.link_spec(), setup.workload, time=setup.platform.time(choice))
    with tempfile.TemporaryDirectory(prefix="nr-bench-") as tmp:
        start = time.monotonic()
        try:
            result = plan.execute(Path(tmp))
        except Exception as exc:  # a failed run is a state too (heap exhaustion ends the benchmark)
            return {"failed": str(exc)[:200], "wall_s": round(time.monotonic() - start, 1)}
        wall_s = time.monotonic() - start
    a, mbps = result.analysis, result.throughput_mbps
    if isinstance(mbps, dict):  # a two-way workload (rr, duplex): the case's own direction
        mbps = mbps.get(direction or "", 0.0)
    return {"mbps": round(float(mbps or 0.0), 2),
            "capture_goodput_mbps": a.goodput_mbps, "verdict": a.verdict,
            "retransmissions": a.retransmissions, "device_cpu": result.device_cpu.get("busy_percent"),
            "effective_dilation": result.time.get("effective_dilation"), "max_lag_ms": result.time.get("max_lag_ms"),
            "realtime_priority": result.time.get("realtime_priority"), "wall_s": round(wall_s, 1),
            "err_mem_waits": (result.board_counts or {}).get("err_mem_waits"),
            "board_counts": result.board_counts or {}}


def spread(runs: list[dict]) -> dict:
    values = [r["mbps"] for r in runs if "mbps" in r]
    if not values:
        return {"median": None, "spread_pct": None, "failed": len(runs)}
    med = statistics.median(values)
    return {"median": round(med, 2), "min": min(values), "max": max(values),
            "spread_pct": round((max(values) - min(values)) / med * 100, 2) if med else None,
            "failed": len(runs) - len(values)}


def _busy() -> None:
    while True:
        pass


@contextlib.contextmanager
def busy_cores(n: int = 2) -> Iterator[None]:
    procs = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
            p.join()


N6_CASE: Case = ("openmv-n6", "ethernet rx after", None)
RT_CASE: Case = ("openmv-rt1060", "wifi tx before", None)


def part_repeat(seconds: float) -> dict:
    n6 = [one_run(N6_CASE, seconds, TimeChoice("device")) for _ in range(5)]
    rt = [one_run(RT_CASE, seconds, TimeChoice("device")) for _ in range(10)]
    return {"n6_ethernet_sock_rx": {"runs": n6, **spread(n6)},
            "rt1060_wifi_sock_tx_before": {"runs": rt, **spread(rt), "states": states(rt)}}


def states(runs: list[dict]) -> dict[str, int]:
    """How often each state came up: the verdict and how many times the 8000 B heap ran out (ERR_MEM waits)."""
    out: dict[str, int] = {}
    for r in runs:
        key = "failed: " + r["failed"][:60] if "failed" in r else f"{r['verdict']}, {r['err_mem_waits']} ERR_MEM waits"
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def _by_heap(runs: list[dict]) -> list[tuple[str, list[dict]]]:
    """The finished runs by the 8000 B heap's state: held (no ERR_MEM wait) or ran out (one or more 50 ms waits)."""
    finished = [r for r in runs if "mbps" in r]
    return [("held", [r for r in finished if not r["err_mem_waits"]]),
            ("ran out", [r for r in finished if r["err_mem_waits"]])]


def _heap_state_rows(runs: list[dict]) -> list[str]:
    finished = [r for r in runs if "mbps" in r]
    rows = ["| heap | runs | median | min-max | (max-min)/median | ERR_MEM waits | of them with the heap in holes | "
            "D kept |", "|---|---|---|---|---|---|---|---|"]
    for state, members in _by_heap(runs):
        if members:
            part = spread(members)
            waits = sorted({r["err_mem_waits"] for r in members})
            rows.append(f"| {state} | {len(members)} of {len(finished)} | {part['median']} | "
                        f"{part['min']}-{part['max']} | {part['spread_pct']} % | {', '.join(map(str, waits))} | "
                        f"{_holes(members)} | {_dks(members)} |")
    return [*rows, ""]


def _holes(runs: list[dict]) -> str:
    """Of the runs' ERR_MEM waits, how many met lwIP's heap with room for a full segment in all but not in
    one block (the board's own judgement, firmware/apps/sockbench.c), and the heap at a first wait."""
    waits = sum(r["err_mem_waits"] or 0 for r in runs)
    counts = [r.get("board_counts", {}) for r in runs if r.get("board_counts", {}).get("segment_heap_request")]
    if not waits or not counts:
        return "-"
    holes = sum(c["err_mem_fragmented"] for c in counts)
    first = counts[0]
    return (f"{holes} of {waits} (a first: {first['heap_free']} B free, largest block {first['heap_largest_free']} B, "
            f"a segment's pbuf {first['segment_heap_request']} B)")


def _states_line(case: str, runs: list[dict]) -> str:
    return f"{case}, states over its runs: " + ", ".join(f"{k}: {v}" for k, v in states(runs).items())


RT_WIRE_CASE: Case = ("openmv-rt1060", "wifi tx before", "wifi-wire")


def part_wire(seconds: float) -> dict:
    """The RT1060 case over the WiFi as a wire (what `wifi` was before it became the shared medium)."""
    rt = [one_run(RT_WIRE_CASE, seconds, TimeChoice("device")) for _ in range(10)]
    return {"rt1060_wifi_wire_sock_tx_before": {"runs": rt, **spread(rt), "states": states(rt)}}


RT_ETHERNET_CASE: Case = ("openmv-rt1060", "ethernet tx before", None)


def part_heap(seconds: float) -> dict:
    runs = [one_run(RT_ETHERNET_CASE, seconds, TimeChoice("device")) for _ in range(10)]
    return {"rt1060_ethernet_sock_tx_before": {"runs": runs, **spread(runs), "seconds": seconds}}


def part_busy(seconds: float) -> dict:
    with busy_cores(2):
        busy = [one_run(N6_CASE, seconds, TimeChoice("device", realtime=False)) for _ in range(5)]
    return {"n6_ethernet_sock_rx_busy_no_realtime": {"runs": busy, **spread(busy)}}


def spin_check(platform_name: str, iterations: int) -> dict:
    """The firmware's known loop: its device time against iterations x instructions / modelled MIPS."""
    platform = load_platform(platform_name)
    firmware = Configuration(platform.default_profile).build(platform, lwip_tree())
    plan_time = platform.time(TimeChoice("device"))
    with tempfile.TemporaryDirectory(prefix="nr-bench-") as tmp, \
            Session(platform, firmware, Path(tmp), LinkSpec(), time=plan_time) as rig:
        out = rig.console.command(f"spin {iterations}", timeout=600)
        fields = dict(part.split("=", 1) for part in out.split() if "=" in part)
    per = int(fields["instructions_per_iteration"])
    expected_ms = iterations * per / (plan_time.model_mips * 1e3)
    return {"platform": platform_name, "iterations": iterations, "instructions_per_iteration": per,
            "device_ms": int(fields["ms"]), "expected_ms": round(expected_ms, 1),
            "error_pct": round((int(fields["ms"]) - expected_ms) / expected_ms * 100, 2)}


def part_knob(seconds: float) -> dict:
    spins = [spin_check(name, 400_000_000) for name in ("openmv-n6", "openmv-rt1060")]
    out = {"spin": spins}
    for label, case, model in [("cpu_bound_rt1060_ethernet_rx_mss800", ("openmv-rt1060", "ethernet rx before", None),
                                 600.0),
                               ("window_bound_n6_wifi_rx_before", ("openmv-n6", "wifi rx before", None), 800.0)]:
        full = [one_run(case, seconds, TimeChoice("device", mips=model)) for _ in range(3)]
        half = [one_run(case, seconds, TimeChoice("device", mips=model / 2)) for _ in range(3)]
        # a tenth: where the modelled core itself becomes the limit (at 600 MIPS the RT1060 is ~12 % busy)
        tenth = [one_run(case, seconds, TimeChoice("device", mips=model / 10)) for _ in range(2)]
        f, h, t = spread(full), spread(half), spread(tenth)
        out[label] = {"full_mips": model, "full": {"runs": full, **f}, "half": {"runs": half, **h},
                      "tenth": {"runs": tenth, **t},
                      "half_over_full": round(h["median"] / f["median"], 3) if f["median"] and h["median"] else None,
                      "tenth_over_full": round(t["median"] / f["median"], 3) if f["median"] and t["median"] else None}
    return out


DILATION_CASES: dict[str, Case] = {"n6_wifi_sock_rx_after": ("openmv-n6", "wifi rx after", None),
                                   "n6_ethernet_sock_rx_after": N6_CASE,
                                   "xbox_ethernet_rx_nvnetdrv": ("xbox", "nvnetdrv rx", None)}


def part_dilation(seconds: float) -> dict:
    out = {}
    for label, case in DILATION_CASES.items():
        runs = {str(h): [one_run(case, seconds, TimeChoice("device", host_mips=h)) for _ in range(2)]
                for h in (250, 125)}
        a, b = spread(runs["250"]), spread(runs["125"])
        out[label] = {"host_250": {"runs": runs["250"], **a}, "host_125": {"runs": runs["125"], **b},
                      "ratio": round(b["median"] / a["median"], 3) if a["median"] and b["median"] else None}
    return out


def part_heapd(seconds: float) -> dict:
    """The RT1060 heap case (repeat's) at half the host rate, so twice the D: Linux's ACKs come on its wall
    clock, and in the out-of-heap state how much the board sends between its 50 ms sleeps hangs on when they come."""
    runs = [one_run(RT_CASE, seconds, TimeChoice("device", host_mips=125)) for _ in range(6)]
    return {"rt1060_wifi_sock_tx_before_host_125": {"runs": runs, **spread(runs), "states": states(runs)}}


def write(results: dict) -> None:
    path = RESULTS / "device-time-repeat.json"
    stored = json.loads(path.read_text()) if path.is_file() else {}
    stored.update(results)
    path.write_text(json.dumps(stored, indent=2) + "\n")
    (RESULTS / "device-time-repeat.md").write_text(markdown(stored))


def markdown(r: dict) -> str:
    lines = ["# Device time: repeatability, host independence, the model as a knob", "",
             "`python benchmarks/device_time_repeat_bench.py` on this 2-core machine; every run in device time, "
             "the link following the board's clock. Figures are the run's throughput in the board's time (Mbit/s).", ""]
    if "repeat" in r:
        n6, rt = r["repeat"]["n6_ethernet_sock_rx"], r["repeat"]["rt1060_wifi_sock_tx_before"]
        lines += ["## Repeatable", "", "| case | runs | median | min | max | (max-min)/median |",
                  "|---|---|---|---|---|---|", _row(case_label(N6_CASE), n6),
                  _row(case_label(RT_CASE) + " (the shared medium)", rt)]
        wire = r.get("wire", {}).get("rt1060_wifi_wire_sock_tx_before")
        if wire:
            lines.append(_row(case_label(RT_WIRE_CASE) + " (the WiFi as a wire)", wire))
        lines += ["", _states_line("RT1060 wifi tx before", rt["runs"]), "", *_heap_state_rows(rt["runs"])]
        if wire:
            lines += [_states_line("RT1060 wifi-wire tx before", wire["runs"]), "", *_heap_state_rows(wire["runs"])]
        eff = [x["effective_dilation"] for x in n6["runs"] if x.get("effective_dilation")]
        if eff:
            lines += [f"The D the N6 board really kept: {min(eff):g}-{max(eff):g} (planned 3.2).", ""]
    if "busy" in r and "repeat" in r:
        b, q = r["busy"]["n6_ethernet_sock_rx_busy_no_realtime"], r["repeat"]["n6_ethernet_sock_rx"]
        diff = (b["median"] - q["median"]) / q["median"] * 100 if b["median"] and q["median"] else None
        lines += ["## Host-independent", "", f"| {case_label(N6_CASE)} | runs | median | spread | D kept |",
                  "|---|---|---|---|---|",
                  f"| quiet, real-time priority | {len(q['runs'])} | {q['median']} | {q['spread_pct']} % | "
                  f"{_dks(q['runs'])} |",
                  f"| two busy processes, no real-time priority | {len(b['runs'])} | {b['median']} | "
                  f"{b['spread_pct']} % | {_dks(b['runs'])} |", "",
                  f"Busy median against quiet median: {diff:+.2f} %." if diff is not None else "", ""]
    if "knob" in r:
        k = r["knob"]
        lines += ["## The model is the knob", "", "| spin loop | iterations | device ms | expected ms | error |",
                  "|---|---|---|---|---|"]
        lines += [f"| {s['platform']} | {s['iterations']} | {s['device_ms']} | {s['expected_ms']} | "
                  f"{s['error_pct']} % |" for s in k["spin"]]
        lines += ["", "| case | MIPS: median, verdict, cpu % | MIPS / 2 | ratio | MIPS / 10 | ratio |",
                  "|---|---|---|---|---|---|"]
        for label in ("cpu_bound_rt1060_ethernet_rx_mss800", "window_bound_n6_wifi_rx_before"):
            c = k[label]
            lines.append(f"| {label} | {c['full_mips']:g}: {_fig(c['full'])} | {_fig(c['half'])} | "
                         f"{c['half_over_full']} | {_fig(c.get('tenth', {}))} | {c.get('tenth_over_full')} |")
        lines.append("")
    if "heap" in r:
        lines += _heap_lines(r["heap"]["rt1060_ethernet_sock_tx_before"])
    if "dilation" in r:
        lines += ["## Linux's timers are not stretched: does D move a figure?", "",
                  "| case | host 250 MIPS: median (D kept) | host 125 MIPS: median (D kept) | ratio |",
                  "|---|---|---|---|"]
        for label, c in r["dilation"].items():
            lines.append(f"| {label} | {c['host_250']['median']} ({_dks(c['host_250']['runs'])}) | "
                         f"{c['host_125']['median']} ({_dks(c['host_125']['runs'])}) | {c['ratio']} |")
        lines.append("")
    if "heapd" in r and "repeat" in r:
        lines += _heapd_lines(r["repeat"]["rt1060_wifi_sock_tx_before"]["runs"],
                              r["heapd"]["rt1060_wifi_sock_tx_before_host_125"]["runs"])
    return "\n".join(lines)


def _heapd_lines(at_250: list[dict], at_125: list[dict]) -> list[str]:
    lines = ["## The RT1060 heap case against D", "",
             f"{case_label(RT_CASE)} at the platform's host rate (250 MIPS) and at 125 MIPS (D twice), each run's "
             "figure beside the D it kept, by the heap's state.", "",
             "| host MIPS | heap | runs: Mbit/s at D kept |", "|---|---|---|"]
    for host, runs in (("250", at_250), ("125", at_125)):
        for state, members in _by_heap(runs):
            text = ", ".join(f"{r['mbps']} at {r['effective_dilation']}"
                             for r in sorted(members, key=lambda r: r["effective_dilation"] or 0))
            lines.append(f"| {host} | {state} ({len(members)} of {len(runs)}) | {text or '-'} |")
    return [*lines, ""]


def _heap_lines(c: dict) -> list[str]:
    runs = [x for x in c["runs"] if "mbps" in x]
    (_, held), (_, out) = _by_heap(runs)
    lines = ["## RT1060 ethernet TX before: does the 8000 B heap run out?", "",
             f"{len(runs)} runs of {case_label(RT_ETHERNET_CASE)}, {c['seconds']:g} s each "
             "(the report: line rate, 91 Mbit/s; its claim at least 85).", "",
             "| run | Mbit/s | ERR_MEM waits (50 ms) | with the heap in holes | board idle share | "
             "Mbit/s over the rest | verdict | D kept |",
             "|---|---|---|---|---|---|---|---|"]
    for i, x in enumerate(runs, 1):
        idle = min(x["err_mem_waits"] * 0.050 / c["seconds"], 0.999)
        holes = x.get("board_counts", {}).get("err_mem_fragmented", "-" if x["err_mem_waits"] else 0)
        lines.append(f"| {i} | {x['mbps']} | {x['err_mem_waits']} | {holes} | {idle * 100:.1f} % | "
                     f"{x['mbps'] / (1 - idle):.2f} | {x['verdict']} | {x['effective_dilation']} |")
    lines += ["", f"The heap held in {len(held)} of {len(runs)} runs "
              f"({_span(held)}) and ran out in {len(out)} ({_span(out)}).", "", *_heap_state_rows(runs)]
    return lines


def _span(runs: list[dict]) -> str:
    return f"{min(x['mbps'] for x in runs)}-{max(x['mbps'] for x in runs)} Mbit/s" if runs else "none"


def _fig(part: dict) -> str:
    runs = [r for r in part.get("runs", []) if "mbps" in r]
    if not runs:
        return "-"
    mid = sorted(runs, key=lambda r: r["mbps"])[len(runs) // 2]
    return f"{part['median']} ({mid['verdict']}, {mid['device_cpu']} %)"


def _row(label: str, case: dict) -> str:
    return (f"| {label} | {len(case['runs'])} | {case['median']} | {case.get('min')} | {case.get('max')} | "
            f"{case['spread_pct']} % |")


def _dks(runs: list[dict]) -> str:
    eff = [x["effective_dilation"] for x in runs if x.get("effective_dilation")]
    return f"{min(eff):g}-{max(eff):g}" if eff else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("repeat", "wire", "busy", "knob", "heap", "dilation", "heapd", "all"),
                        default="all")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rewrite", action="store_true", help="only rewrite the .md from the stored .json")
    args = parser.parse_args()
    if args.rewrite:
        write({})
        print((RESULTS / "device-time-repeat.md").read_text())
        return
    parts = {"repeat": part_repeat, "wire": part_wire, "busy": part_busy, "knob": part_knob, "heap": part_heap,
             "dilation": part_dilation, "heapd": part_heapd}
    for name, fn in parts.items():
        if args.part in (name, "all"):
            write({name: fn(args.seconds)})
            print(f"{name}: written", flush=True)
    print((RESULTS / "device-time-repeat.md").read_text())


if __name__ == "__main__":
    main()
