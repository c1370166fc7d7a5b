"""The `netrepro` command line."""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from harness import __version__
from harness.analysis import format_table, load_capture
from harness.analysis.against import compare_summaries, load_against
from harness.analysis.against import format_comparison as format_capture_comparison
from harness.analysis.plots import plot_capture, plot_overlay, run_plots_wanted
from harness.cli.bisect import add_bisect_parser
from harness.cli.crash import report_crash
from harness.cli.exit_codes import ExitCode, verdict
from harness.cli.firmware_args import add_firmware_args, firmware_configuration
from harness.cli.fuzz import add_fuzz_parser, add_replay_parser
from harness.cli.link_args import LINK_OPTIONS, add_link_args, link_spec, rate_arg, size_arg
from harness.cli.medium import add_medium_parser
from harness.cli.progress_args import add_quiet, command_progress
from harness.cli.report import add_report_parser
from harness.cli.rtt import add_rtt_parser
from harness.cli.sweep import add_sweep_parser, add_tune_parser
from harness.cli.time_args import add_time_args, time_choice
from harness.core.errors import NetreproError
from harness.link import parse_rate
from harness.link.air import ACKS_PER_SEGMENT, bus_rate_bps, frames_per_turn, saturated_rate_bps
from harness.rig.build import LWIP_TREE_ENV, build_firmware, lwip_tree, resolve_firmware
from harness.rig.engine import make_engine
from harness.rig.lwip_ram import ram_line
from harness.rig.platform import load_platform, platform_names
from harness.rig.session import make_run_dir
from harness.rig.workload import ONE_WAY, WORKLOADS, Workload
from harness.runs.disturbed import risk_text
from harness.runs.plan import Configuration
from harness.runs.result import RunResult, threads_text
from harness.studies.baseline import (
    MAX_DROP,
    parse_fraction,
)
from harness.studies.calibrate import calibrate, format_calibration
from harness.studies.compare import compare, format_comparison
from harness.studies.one_run import RunRequest, run_one
from harness.studies.parallel import RUN_CPUS
from harness.studies.report_file import report_names
from harness.studies.report_page import write_report_page
from harness.studies.reproduce import format_report, reproduce
from harness.studies.sensitivity import format_sensitivity, positive_count, sensitivity


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so every context manager tears its part down. SIGINT is set too: a
    # shell that starts a job in the background (`cmd &` in a script) leaves it ignored, and Python then
    # keeps it ignored, so a Ctrl-C or kill -INT would leave a run going.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    try:
        run_plots_wanted()  # a bad $NETREPRO_PLOTS is found before a run, not after it
        return int(args.func(args) or ExitCode.OK)
    except NetreproError as exc:
        print(f"netrepro: error: {exc}", file=sys.stderr)
        return ExitCode.COULD_NOT
    except KeyboardInterrupt:
        print("netrepro: interrupted; everything the run started has been stopped", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # a traceback is for a developer: the user gets one line and the log's path
        report_crash(exc, sys.argv[1:] if argv is None else argv)
        return ExitCode.UNEXPECTED


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="netrepro", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    platforms = sub.add_parser("platforms", help="list platforms and their lwIP profiles")
    platforms.add_argument("--json", action="store_true")
    platforms.set_defaults(func=cmd_platforms)

    boot = sub.add_parser("boot", help="build, boot, print the banner and the effective lwIP options")
    boot.add_argument("platform")
    add_firmware_args(boot)
    boot.add_argument("--json", action="store_true", help="print one JSON object")
    boot.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the boot banner")
    add_quiet(boot)
    boot.set_defaults(func=cmd_boot)

    run = sub.add_parser("run", help="run a workload over an emulated link and keep everything in a run folder")
    run.add_argument("platform")
    add_firmware_args(run)
    run.add_argument("--link", default=None, metavar="PRESET", help="the platform's link preset (default: direct)")
    add_link_args(run)
    add_time_args(run)
    run.add_argument("--rx-overflow", choices=("hold", "drop"),
                     help="a frame the NIC cannot take when due: the link holds it or drops it "
                          "(default: the platform's [nic] rx_overflow)")
    run.add_argument("--capture-at", choices=("device", "peer"), default="device",
                     help="where the capture is taken: the device's side of the link, or the peer's (the PC's), "
                          "where frames the link drops toward the device still show (default device)")
    run.add_argument("--peer-quickack", action="store_true",
                     help="the peer ACKs every segment (its route's quickack), as a report's peer may have; default: "
                          "Linux's delayed ACKs, whose timer is not in the board's time (docs/device-time.md)")
    run.add_argument("--workload", default="rx", choices=WORKLOADS)
    run.add_argument("--seconds", type=float, default=10.0, help="duration of a timed workload")
    run.add_argument("--minutes", type=float, default=None, metavar="M",
                     help=f"a soak: M minutes of the board's time instead of --seconds, then check the board still "
                          f"answers, every byte is accounted for and nothing leaked "
                          f"(exit {ExitCode.SOAK_FAILED:d} if not)")
    run.add_argument("--bytes", type=size_arg, default=None, help="byte-count variant (discard: default 8 MiB)")
    run.add_argument("--chunk", type=size_arg, default=1460, help="discard: bytes per write")
    run.add_argument("--udp-rate", type=rate_arg, default=None, help="udp-*: offered rate (default 100mbit)")
    run.add_argument("--warmup", type=float, default=0.0, metavar="SECONDS", help="unmeasured transfer first")
    run.add_argument("--out", type=Path, default=None, metavar="DIR", help="run folders go here (default ./runs)")
    run.add_argument("--json", action="store_true", help="print the result JSON")
    run.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the boot banner")
    add_quiet(run)
    run.add_argument("--check-leaks", action="store_true",
                     help=f"exit {ExitCode.LEAKS:d} when the board did not get back what the workload's "
                          "connections took (heap, a memp pool, the NIC's buffers) or could not be checked")
    base = run.add_argument_group("baselines (store: ./.netrepro/baselines, $NETREPRO_BASELINES or --baseline-dir)")
    keep = base.add_mutually_exclusive_group()
    keep.add_argument("--save-baseline", metavar="NAME", help="keep this run's figures and options as baseline NAME")
    keep.add_argument("--against", metavar="NAME",
                      help=f"check this run against baseline NAME: exit {ExitCode.FAILED:d} if throughput drops "
                           "by more than --max-drop or the MSS, max window or an option changes")
    base.add_argument("--max-drop", type=_fraction, default=None, metavar="FRACTION",
                      help=f"largest throughput drop --against allows (default {MAX_DROP:g}; 0.15 or 15%%)")
    base.add_argument("--baseline-dir", type=Path, default=None, metavar="DIR", help="the baseline store")
    run.set_defaults(func=cmd_run)

    comp = sub.add_parser("compare", help="two lwIP configurations side by side: options that differ, figures, "
                                          "verdicts and what to change")
    comp.add_argument("platform")
    comp.add_argument("--lwip", action=_ConfigurationAction, metavar="PROFILE_OR_PATH",
                      help="a configuration: a profile name or the path of a lwipopts.h; give it twice (A, B)")
    comp.add_argument("-I", "--include", action=_ConfigurationAction, metavar="DIR",
                      help="include directory for the configuration before it (before the first --lwip: both)")
    comp.add_argument("--set", action=_ConfigurationAction, metavar="NAME=VALUE",
                      help="override one option of the configuration before it (before the first --lwip: both)")
    comp.add_argument("--source", action=_ConfigurationAction, metavar="FILE.c",
                      help="a C file for the configuration before it (a port's own hooks; before the first: both)")
    comp.add_argument("--stub-header", action=_ConfigurationAction, metavar="NAME",
                      help="stand an empty header in for NAME in the configuration before it (before the first: both)")
    comp.add_argument("--lwip-tree", metavar="DIR",
                      help=f"lwIP source tree to build (default: ${LWIP_TREE_ENV}, else Debian's 2.1.3)")
    comp.add_argument("--link", default=None, metavar="PRESET", help="the platform's link preset (default: direct)")
    add_link_args(comp)
    add_time_args(comp)
    comp.add_argument("--workload", default="rx", choices=ONE_WAY)
    comp.add_argument("--seconds", type=float, default=10.0, help="duration of each run")
    comp.add_argument("--chunk", type=size_arg, default=1460, help="discard and sock-*: bytes per write or read")
    comp.add_argument("--repeats", type=int, default=3, help="runs per configuration (default 3)")
    comp.add_argument("--jobs", type=int, default=None, metavar="N",
                      help=f"runs at once on a local Ray pool (default: this machine's cores / {RUN_CPUS}); 1: one "
                           "at a time")
    comp.add_argument("--out", type=Path, default=None, metavar="DIR", help="run folders go here (default ./runs)")
    comp.add_argument("--json", action="store_true", help="print the whole comparison as one JSON document")
    comp.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the boot banner")
    add_quiet(comp)
    comp.set_defaults(func=cmd_compare, configurations=None, shared=None)

    repro = sub.add_parser("reproduce", help="reproduce a report end to end and print its table")
    repro.add_argument("report", nargs="?", default="openmv-n6", metavar="NAME_OR_PATH",
                       help=f"a shipped report's name ({', '.join(report_names())}; default openmv-n6) or the path "
                            "of your report file (PATH.toml; netrepro report new / from-capture write one)")
    repro.add_argument("--repeats", type=int, default=None, help="runs per case (default: the report's)")
    repro.add_argument("--seconds", type=float, default=None, help="seconds per run (default: the report's)")
    repro.add_argument("--case", action="append", default=None, help="run only this case (repeatable)")
    repro.add_argument("--lwip-tree", metavar="DIR", help="lwIP source tree to build")
    add_time_args(repro)
    repro.add_argument("--out", type=Path, default=None, metavar="DIR", help="run folders go here (default ./runs)")
    repro.add_argument("--json", action="store_true", help="print the whole result as one JSON document")
    repro.add_argument("--html", type=Path, default=None, metavar="PATH",
                       help="also write one self-contained HTML page of the result (table, inputs, plots) here")
    add_quiet(repro)
    repro.add_argument("--d-check", action="store_true",
                       help="then run each case once more at twice D (device time) and mark a figure that moves by "
                            "more than half the report's band host-dependent (not counted)")
    repro.add_argument("--jobs", type=int, default=None, metavar="N",
                       help=f"runs at once on a local Ray pool (default: this machine's cores / {RUN_CPUS}), "
                            "--sensitivity's too; device time keeps the figures those of one at a time; "
                            "1: one at a time")
    repro.add_argument("--sensitivity", action="store_true",
                       help="then rerun each case that depends on an assumed input at both ends of its range, "
                            "one input at a time, and say how far each figure moves (sensitivity.txt/.json)")
    repro.add_argument("--sensitivity-repeats", type=positive_count, default=1, metavar="N",
                       help="runs per case at each end of a range (default 1)")
    repro.set_defaults(func=cmd_reproduce)

    add_report_parser(sub)
    add_bisect_parser(sub)
    add_medium_parser(sub)
    add_rtt_parser(sub)
    add_sweep_parser(sub)
    add_tune_parser(sub)
    add_fuzz_parser(sub)
    add_replay_parser(sub)

    calib = sub.add_parser("calibrate", help="measure how fast this host runs a board's core, for device time",
                           description="Run the board's spin loop free, then a socket benchmark under device time, "
                                       "and save the host rate device-time runs of the platform then use.")
    calib.add_argument("platform")
    calib.add_argument("--seconds", type=float, default=3.0, help="board seconds of the loaded run (default 3)")
    calib.add_argument("--lwip-tree", metavar="DIR", help="lwIP source tree to build")
    calib.add_argument("--out", type=Path, default=None, metavar="DIR", help="run folders go here (default ./runs)")
    calib.add_argument("--json", action="store_true", help="print the calibration as JSON")
    add_quiet(calib)
    calib.set_defaults(func=cmd_calibrate)

    inspect = sub.add_parser("inspect", help="what a capture shows: MSS, windows, RTT, goodput, the bottleneck")
    inspect.add_argument("capture", type=Path)
    inspect.add_argument("--conn", type=int, default=None, help="TCP stream number (default: the largest)")
    inspect.add_argument("--device", default=None, metavar="IP", help="the device's address (default: guessed)")
    inspect.add_argument("--rate", default=None, help="the link rate of the data direction, e.g. 43mbit")
    inspect.add_argument("--captured-at", choices=("device", "peer"), default=None,
                         help="where the capture was taken (default: judged from the timing)")
    inspect.add_argument("--json", action="store_true")
    inspect.add_argument("--plot", type=Path, default=None, metavar="DIR", help="write PNG and SVG plots here")
    inspect.add_argument("--against", type=Path, default=None, metavar="RUN_OR_CAPTURE",
                         help="compare with a netrepro run folder (or another capture): the two side by side in "
                              "place of the table; with --plot also the two overlaid")
    inspect.set_defaults(func=cmd_inspect)
    return parser


def cmd_calibrate(args: argparse.Namespace) -> int:
    platform = load_platform(args.platform)
    progress = command_progress(args)
    result = calibrate(platform, lwip_tree(args.lwip_tree), seconds=args.seconds, progress=progress,
                       run_dir=make_run_dir(args.out, platform.name, "calibrate"))
    print(json.dumps(result.as_dict(), indent=2) if args.json else format_calibration(result))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    progress = command_progress(args)
    document = reproduce(args.report, out=args.out, repeats=args.repeats, seconds=args.seconds, only=args.case,
                         progress=progress, lwip_tree_path=args.lwip_tree, time=time_choice(args),
                         command="netrepro " + " ".join(sys.argv[1:]), d_check=args.d_check, jobs=args.jobs)
    if args.sensitivity:
        document["sensitivity"] = sensitivity(args.report, document, repeats=args.sensitivity_repeats,
                                              seconds=args.seconds, progress=progress,
                                              lwip_tree_path=args.lwip_tree, time=time_choice(args),
                                              jobs=args.jobs)
    print(json.dumps(document, indent=2) if args.json else format_report(document))
    if args.sensitivity and not args.json:
        print("\n" + format_sensitivity(document["sensitivity"]))
    if args.html:
        page = write_report_page(document, args.html, command=" ".join(sys.argv))
        print(f"report page: {page}", file=sys.stderr if args.json else sys.stdout)
    return verdict(all(c["median_mbps"] is not None for c in document["cases"]))


def cmd_compare(args: argparse.Namespace) -> int:
    configs = args.configurations or []
    if len(configs) != 2:
        raise NetreproError(f"compare needs two configurations, got {len(configs)}",
                            "give --lwip twice, e.g. --lwip mp-n6-before --lwip mp-n6-after")
    shared = args.shared or {key: [] for key in _PER_CONFIGURATION}
    configurations = [Configuration(c["lwip"], *(tuple(shared[key] + c[key]) for key in _PER_CONFIGURATION))
                      for c in configs]
    progress = command_progress(args)
    platform = load_platform(args.platform)
    link = link_spec(args, platform)
    workload = Workload(args.workload, seconds=args.seconds, chunk=args.chunk)
    document = compare(platform.name, configurations, link, workload, link_name=_link_name(args),
                       repeats=args.repeats, out=args.out, progress=progress, lwip_tree_path=args.lwip_tree,
                       boot_timeout=args.timeout, time=time_choice(args), jobs=args.jobs)
    print(json.dumps(document, indent=2) if args.json else format_comparison(document))
    return verdict(all(c["median_mbps"] is not None for c in document["configurations"]))


_PER_CONFIGURATION = ("include", "set", "source", "stub_header")  # what follows a --lwip belongs to it


class _ConfigurationAction(argparse.Action):
    """--lwip starts a configuration; -I and --set belong to the --lwip before them (before the first: to both)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        configs = list(namespace.configurations or [])
        if self.dest == "lwip":
            configs.append({"lwip": values, **{key: [] for key in _PER_CONFIGURATION}})
        else:
            if not configs and namespace.shared is None:
                namespace.shared = {key: [] for key in _PER_CONFIGURATION}
            (configs[-1] if configs else namespace.shared)[self.dest].append(values)
        namespace.configurations = configs


def cmd_inspect(args: argparse.Namespace) -> int:
    rate = parse_rate(args.rate) if args.rate else None
    analysis = load_capture(args.capture, device_ip=args.device, conn=args.conn, link_rate_bps=rate,
                            captured_at=args.captured_at)
    overlays: list[Path] = []
    if args.against is not None:  # the comparison is what was asked for: it takes the one-capture table's place
        other = load_against(args.against, sender=analysis.sender)
        comparison = compare_summaries(analysis.to_summary(), other.summary,
                                       ours_label="netrepro" if other.run_dir else "other capture")
        print(json.dumps(comparison.as_dict(), indent=2) if args.json else format_capture_comparison(comparison))
        if args.plot:
            overlays = plot_overlay(analysis, other.analysis(), args.plot, f"{args.capture.name} vs "
                                    f"{args.against.name}", comparison.theirs.label, comparison.ours.label)
    elif args.json:
        print(json.dumps(analysis.summary(), indent=2))
    else:
        print(format_table(analysis))
    if args.plot:
        for path in plot_capture(analysis, args.plot, title=args.capture.name) + overlays:
            print(f"plot: {path}", file=sys.stderr)
    return 0


def _fraction(text: str) -> float:
    try:
        return parse_fraction(text)
    except NetreproError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _link_name(args: argparse.Namespace) -> str:
    """The preset's name and the overrides given, e.g. "wifi, rtt=10ms"."""
    given = [f"{name}={getattr(args, f'link_{name}')}" for name in LINK_OPTIONS
             if getattr(args, f"link_{name}") is not None]
    return ", ".join([args.link or "direct", *given])


def cmd_platforms(args: argparse.Namespace) -> int:
    platforms = [load_platform(name) for name in platform_names()]
    if args.json:
        print(json.dumps([{"name": p.name, "description": p.description, "engine": p.engine.kind,
                           "machine": p.engine.machine, "profiles": p.profiles,
                           "default_profile": p.default_profile, "links": sorted(p.links)}
                          for p in platforms], indent=2))
        return 0
    for p in platforms:
        print(f"{p.name}: {p.description}")
        print(f"  engine:   {p.engine.kind} {p.engine.machine} ({p.engine.cpu or '?'})")
        print(f"  profiles: {', '.join(p.profiles)} (default {p.default_profile})")
        print(f"  links:    {', '.join(sorted(p.links))}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    if args.minutes is not None and not args.minutes > 0:
        raise NetreproError(f"--minutes {args.minutes:g} is not a duration",
                            "give the board minutes, e.g. --minutes 10")
    if args.max_drop is not None and not args.against:
        raise NetreproError("--max-drop applies to --against", "give --against NAME too, or leave --max-drop out")
    platform = load_platform(args.platform)
    if args.rx_overflow:
        platform = platform.with_nic(rx_overflow=args.rx_overflow)
    seconds = args.seconds if args.minutes is None else args.minutes * 60
    request = RunRequest(platform, firmware_configuration(args), link_spec(args, platform),
                         Workload(args.workload, seconds=seconds, bytes=args.bytes, chunk=args.chunk,
                                  warmup_s=args.warmup, rate_bps=args.udp_rate),
                         time=time_choice(args), lwip_tree=args.lwip_tree, out=args.out, boot_timeout=args.timeout,
                         capture_at=args.capture_at, peer_quickack=args.peer_quickack, soak=args.minutes is not None,
                         check_leaks=args.check_leaks, against=args.against, max_drop=args.max_drop,
                         baseline_dir=args.baseline_dir, save_baseline=args.save_baseline, link_name=_link_name(args))
    outcome = run_one(request, command_progress(args))
    if args.json:
        print(json.dumps(outcome.document, indent=2))
    else:
        print(format_result(outcome.result))
    for line in outcome.lines:
        print(line, file=sys.stderr if args.json else sys.stdout)
    return (ExitCode.FAILED if outcome.baseline_failed else ExitCode.LEAKS if outcome.leaks_failed
            else ExitCode.SOAK_FAILED if outcome.soak_failed else ExitCode.OK)


def _link_line(result: RunResult) -> str:
    """The link as a user set it: a wire's rate each way, or the shared medium's PHY rate and what it carries."""
    spec, rtt = result.link, f"rtt {result.link.rtt_s * 1e3:g} ms"
    if spec.medium == "wire":
        return f"{rtt}, rate to device {_rate(spec.to_device.rate_bps)}, to peer {_rate(spec.to_peer.rate_bps)}"
    turns = result.link_counters.get("txops_per_s")
    bus = (f"; host bus {spec.bus_rate_bps / 1e6:g} Mbit/s, {spec.bus_cost_s * 1e6:g} us a transfer: "
           f"{bus_rate_bps(spec) / 1e6:.1f} Mbit/s one way, "
           f"{bus_rate_bps(spec, acks=ACKS_PER_SEGMENT) / 1e6:.1f} with TCP's ACKs"
           if spec.bus_rate_bps else "")
    return (f"{rtt}, shared medium (802.11): PHY {spec.phy_rate_bps / 1e6:g} Mbit/s, {frames_per_turn(spec)} full "
            f"frames a turn, {saturated_rate_bps(spec) / 1e6:.1f} Mbit/s one way" + bus
            + (f"; {turns:.0f} turns/s" if turns else ""))


def format_result(result: RunResult) -> str:
    """A short human summary of a run."""
    lines = [f"{result.platform} / {result.profile} / {result.workload['name']}: "
             f"throughput {_mbps(result.throughput_mbps)}"]
    if isinstance(result.bytes, dict):
        lines.append("  bytes    " + ", ".join(f"{k} {v}" for k, v in result.bytes.items()))
    else:
        lines.append(f"  bytes    {result.bytes} in {result.seconds} s")
    if result.datagrams:
        lines.append("  datagrams " + ", ".join(f"{k} {v}" for k, v in result.datagrams.items()))
    lines.append(f"  link     {_link_line(result)}")
    if result.board_counts:
        lines.append(f"  board    {_board_line(result.board_counts)}")
    for name, counters in result.link_counters.items():
        if isinstance(counters, dict) and "frames_out" in counters:
            dropped = {k: v for k, v in counters.get("dropped", {}).items() if v}
            lines.append(f"  {name:<10}{counters['frames_out']} frames forwarded, dropped {dropped or 'none'}")
    analysis = result.analysis
    if analysis and analysis.verdict:
        window = analysis.device_window
        side = " (at the peer's side)" if result.captured_at == "peer" else ""
        lines.append(f"  capture{side}  device MSS {analysis.device_mss}, window {window.median} "
                     f"(min {window.min}, max {window.max}), RTT {analysis.rtt_ms} ms, "
                     f"bound {analysis.bound_mbps} Mbit/s")
        lines.append(f"  verdict  {analysis.verdict}: {analysis.verdict_reason}")
    lines += _time_lines(result)
    if result.leaks is not None:
        lines.append(f"  {'LEAKS' if result.leaks.leaks else 'leaks':<9}{result.leaks.summary()}")
    lines.append(f"  folder   {result.run_dir}")
    return "\n".join(lines)


def _board_line(counts: dict[str, int]) -> str:
    """The socket benchmark's own counts: its waits, and what lwIP's heap looked like when it ran out
    (firmware/apps/sockbench.c)."""
    line = f"{counts.get('err_mem_waits', 0)} ERR_MEM waits of 50 ms, {counts.get('sndbuf_waits', 0)} send-buffer waits"
    if "segment_heap_request" in counts:
        line += (f"; the heap in holes at {counts['err_mem_fragmented']} of them, full at "
                 f"{counts['err_mem_heap_full']} (at the first: {counts['heap_free']} B free, largest block "
                 f"{counts['heap_largest_free']} B, a full segment's pbuf {counts['segment_heap_request']} B)")
    return line


def _time_lines(result: RunResult) -> list[str]:
    """How the run's time relates to the board's, and the board's own measure of its core."""
    time, lines = result.time, []
    if time.get("mode") == "device":
        lines.append(f"  time     device: D = {time['dilation']:g} ({time['model_mips']:g} MIPS modelled, host "
                     f"{time['host_mips']:g} MIPS)")
        if time.get("link_late"):
            lines.append(f"  WARNING  {risk_text(time)}: the board saw a gap no real link has, so these figures are "
                         "not the board's; run with fewer jobs beside it or a larger D (--host-mips)")
        elif time.get("board_stalled"):
            lines.append(f"  WARNING  {risk_text(time)}: the peer may have resent what the board had not yet "
                         "acknowledged, so these figures may not be the board's; run with fewer jobs beside it")
        elif time.get("host_lagged") and time.get("link_follows_board"):
            lines.append(f"  note     the host could not keep D = {time['dilation']:g}: the board ran at D = "
                         f"{time['effective_dilation']:g} ({time['max_lag_ms']:g} ms behind); the link followed its "
                         "clock, so the figures stay in the board's time")
        elif time.get("host_lagged"):
            lines.append(f"  WARNING  the host fell behind the board by {time['max_lag_ms']:g} ms: its timing, and "
                         "so these figures, are not the board's; run with a larger D (--host-mips)")
    elif time.get("mode") == "host":
        lines.append("  time     host: the core ran as fast as this host allows, so timing figures depend on the host")
    if result.device_cpu:
        cost = result.device_cpu.get("us_per_segment")
        per = f", {cost:g} us of its time per full data segment" if cost is not None else ""
        busy = result.device_cpu["busy_percent"]
        lines.append(f"  cpu      the board's core was busy {busy:g} % of the workload{per}")
    if result.threads and "cpu" in result.threads:
        lines.append(f"  threads  busiest first: {threads_text(result.threads['cpu'])}")
    return lines


def _mbps(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v:.2f} Mbit/s" for k, v in value.items())
    return f"{value:.2f} Mbit/s" if isinstance(value, float | int) else "n/a"


def _rate(bps: object) -> str:
    return f"{bps / 1e6:g} Mbit/s" if isinstance(bps, int | float) and bps else "unlimited"


def cmd_boot(args: argparse.Namespace) -> int:
    progress = command_progress(args)
    platform = load_platform(args.platform)
    config = resolve_firmware(platform, args.lwip, args.include, args.set, args.lwip_tree, args.source,
                              args.stub_header)
    profile = config.profile
    firmware = build_firmware(config, progress.step)
    run_dir = Path(tempfile.mkdtemp(prefix=f"netrepro-boot-{platform.name}-"))
    ok = False
    try:
        progress.step(f"booting {platform.name} on {platform.engine.kind} {platform.engine.machine}")
        with make_engine(platform, firmware.elf, run_dir, run_dir) as engine:
            console = engine.start(timeout=args.timeout)
            options = console.opts()
            forced = console.forced_options()
            threads = console.threads()
            banner_line = (f"netrepro firmware board={console.banner.board} nic={console.banner.nic} "
                           f"lwip={console.banner.lwip} profile={console.banner.profile}")
        result = {"platform": platform.name, "profile": profile.name, "lwip_version": firmware.lwip_version,
                  "firmware": str(firmware.elf), "rebuilt": firmware.rebuilt,
                  "boot_seconds": round(console.boot_seconds or 0.0, 3), "banner": banner_line,
                  "options": options, "forced": forced, "stand_ins": list(firmware.stand_ins),
                  "warnings": list(firmware.warnings), "apps": list(firmware.apps),
                  "lwip_ram": firmware.lwip_ram.summary() if firmware.lwip_ram else None,
                  "threads": threads}
        ok = True
    finally:
        if ok:
            shutil.rmtree(run_dir, ignore_errors=True)
        else:
            print(f"netrepro: the boot's console log and command line are kept in {run_dir}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(banner_line)
        print(f"booted in {result['boot_seconds']} s; firmware {firmware.elf}")
        for name, value in options.items():
            print(f"  {name:<26} {value}")
        # Only iperf brings one of lwIP's own apps (lwiperf). Options for the others (mDNS, ...) build
        # and size their pools, but nothing runs them; PPP and SNMP are forced off (FORCED below).
        lwip_apps = "lwiperf" if "iperf" in firmware.apps else "none"
        print(f"apps: {', '.join(firmware.apps)} (of lwIP's own apps: {lwip_apps})")
        if firmware.lwip_ram:
            print(ram_line(firmware.lwip_ram.summary()))
        if forced:
            print(f"forced by the firmware's port (firmware/port/lwipopts.h): {', '.join(forced)}")
        if threads:
            for t in threads["threads"]:
                print(f"  thread {t.get('name')}: prio {t.get('prio')}, "
                      f"stack {t.get('stack_used')}/{t.get('stack')} B, "
                      f"{t.get('switches')} switches, {t.get('run_us')} us run")
            print("  " + " ".join(f"{k}={v}" for k, v in threads["totals"].items()))
    if "NO_SYS" in forced:
        # Only boards with netrepro's kernel (firmware/kernel, arch/<arch>/kernel_port.c) run NO_SYS 0.
        why = platform.firmware.no_sys_1_only or "the board has no port of netrepro's kernel"
        print(f"netrepro: {platform.name} runs NO_SYS 1 only ({why}): the options file's NO_SYS 0 runs as "
              "NO_SYS 1", file=sys.stderr)
        for line in [*(f"stand-in: {s}" for s in firmware.stand_ins), *(f"warning: {w}" for w in firmware.warnings)]:
            print(line, file=sys.stderr if args.json else sys.stdout)  # stdout holds only the JSON
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


