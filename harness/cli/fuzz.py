"""`netrepro fuzz` and `netrepro replay` on the command line: their options, checked into a FuzzPlan."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness.cli.exit_codes import ExitCode
from harness.cli.firmware_args import add_firmware_args, firmware_configuration
from harness.cli.progress_args import add_quiet, command_progress
from harness.cli.time_args import add_time_args, time_choice
from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.rig.build import build_firmware
from harness.rig.platform import load_platform
from harness.rig.session import make_run_dir
from harness.studies.fuzz import FuzzPlan, format_fuzz, fuzz, load_reproducer, replay_frames
from harness.studies.fuzz_frames import reproducer_times

FOUND_EXIT = ExitCode.FAILED  # fuzz: something was found; replay: the reproducer did it again


def add_fuzz_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `fuzz` to the `netrepro` subcommands."""
    parser = subparsers.add_parser(
        "fuzz", help="send the board malformed frames through its NIC; find faults, hangs and leaks",
        description="Structure-aware malformed Ethernet, ARP, IPv4, ICMP, UDP and TCP frames toward the board "
                    "(its listening echo service and a connection held open to it), a liveness probe (console, "
                    "ping, echo) every --batch frames, the leak check at the end. A fault or hang keeps the "
                    "frames since the last good probe as crash.pcap and minimises them to crash-min.pcap. "
                    f"Exit {FOUND_EXIT:d} when something was found, 0 when not.")
    parser.add_argument("platform")
    _board_args(parser)
    parser.add_argument("--seed", type=int, default=0, help="the same seed sends the same frames (default 0)")
    parser.add_argument("--frames", type=_positive_int, default=None, metavar="N",
                        help="stop after N frames (default 1000 when --minutes is not given; with both, whichever "
                             "comes first)")
    parser.add_argument("--minutes", type=_positive_float, default=None, metavar="M",
                        help="stop after M minutes of the wall clock")
    parser.add_argument("--batch", type=_positive_int, default=25, metavar="N", help="frames between two probes (25)")
    parser.add_argument("--probe-timeout", type=_positive_float, default=2.0, metavar="SECONDS",
                        help="wall seconds each probe waits for its answer (default 2)")
    parser.add_argument("--keep-going", action="store_true",
                        help="after a fault or hang, boot a fresh board and spend the rest of the budget "
                             "(a finding made again is counted, not kept twice)")
    parser.add_argument("--max-trials", type=_positive_int, default=40, metavar="N",
                        help="at most N delta-debugging trials (a fresh board each) to minimise a finding (40)")
    parser.set_defaults(func=cmd_fuzz)
    return parser


def add_replay_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `replay` to the `netrepro` subcommands."""
    parser = subparsers.add_parser(
        "replay", help="send a fuzz reproducer (crash.pcap) to a freshly booted board and probe it",
        description="Boot the board, open a connection to its echo service when the reproducer's frames aimed "
                    "at one (crash.json beside the pcap), send the frames moved onto it, then probe. "
                    f"Exit {FOUND_EXIT:d} when the board faulted or hung, 0 when it stayed alive.")
    parser.add_argument("platform")
    _board_args(parser)
    parser.add_argument("pcap", type=Path, help="the reproducer: crash.pcap or crash-min.pcap of a fuzz run")
    parser.add_argument("--probe-timeout", type=_positive_float, default=2.0, metavar="SECONDS",
                        help="wall seconds the probe waits for its answer (default 2)")
    parser.set_defaults(func=cmd_replay)
    return parser


def _board_args(parser: argparse.ArgumentParser) -> None:
    add_firmware_args(parser)
    add_time_args(parser)
    parser.add_argument("--out", type=Path, default=None, metavar="DIR", help="run folders go here (default ./runs)")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON document")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the boot banner")
    add_quiet(parser)


def _plan(args: argparse.Namespace, progress: Progress, **budget: Any) -> FuzzPlan:
    platform = load_platform(args.platform)
    config = firmware_configuration(args).resolve(platform, args.lwip_tree)
    return FuzzPlan(platform, build_firmware(config, progress.step), boot_timeout=args.timeout,
                    time=platform.time(time_choice(args)), probe_timeout=args.probe_timeout, **budget)


def cmd_fuzz(args: argparse.Namespace) -> int:
    progress = command_progress(args)
    frames = args.frames if args.frames is not None or args.minutes is not None else 1000
    plan = _plan(args, progress, seed=args.seed, frames=frames, minutes=args.minutes, batch=args.batch,
                 max_trials=args.max_trials, keep_going=args.keep_going)
    run_dir = make_run_dir(args.out, plan.platform.name, f"fuzz-{plan.firmware.profile.name}")
    try:
        result = fuzz(plan, run_dir, progress)
    except NetreproError as exc:
        raise NetreproError(f"{exc.problem} (run folder kept: {run_dir})", exc.fix) from None
    print(json.dumps(result.as_dict(), indent=2) if args.json else format_fuzz(result))
    return FOUND_EXIT if result.findings else 0


def cmd_replay(args: argparse.Namespace) -> int:
    progress = command_progress(args)
    frames, connection, meta = load_reproducer(args.pcap)
    plan = _plan(args, progress)
    run_dir = make_run_dir(args.out, plan.platform.name, f"replay-{plan.firmware.profile.name}")
    progress.step(f"replaying {len(frames)} frames from {args.pcap}")
    try:
        outcome = replay_frames(plan, frames, connection, run_dir, progress, board_mac=meta.get("board_mac", ""),
                                times=reproducer_times(meta))
    except NetreproError as exc:
        raise NetreproError(f"{exc.problem} (run folder kept: {run_dir})", exc.fix) from None
    document = {"pcap": str(args.pcap), "frames": len(frames), "reproduced": not outcome.alive,
                "kind": outcome.kind, "detail": outcome.detail, "expected": meta.get("finding"),
                "run_dir": str(run_dir)}
    (run_dir / "replay.json").write_text(json.dumps(document, indent=2) + "\n")
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        state = f"{outcome.kind}: {outcome.detail}" if outcome.kind else "the board stayed alive"
        print(f"replay of {len(frames)} frames ({args.pcap}): {state}\n  folder   {run_dir}")
    if outcome.alive and meta.get("finding"):
        print(f"netrepro: the reproducer's {meta['finding']['kind']} did not happen again", file=sys.stderr)
    return FOUND_EXIT if not outcome.alive else 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number of at least 1")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number above 0")
    return value
