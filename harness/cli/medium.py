"""`netrepro calibrate-medium` on the command line: the shared medium's PHY rate from a report's UDP figure."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from harness.cli.link_args import rate_arg
from harness.cli.progress_args import add_quiet, command_progress
from harness.core.errors import NetreproError
from harness.rig.build import lwip_tree
from harness.rig.platform import load_platform
from harness.rig.session import make_run_dir
from harness.studies.medium import (
    MediumCalibration,
    calibrate_medium,
    confirm_through_board,
    phy_rate_line,
    record_input,
    record_phy_rate,
)
from harness.studies.report_file import find_report, load_report


def add_medium_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `calibrate-medium` to the `netrepro` subcommands (argparse's add_subparsers() object)."""
    parser = subparsers.add_parser(
        "calibrate-medium", help="find the shared medium's PHY rate that carries a report's UDP figure",
        description="Move a link preset onto the shared medium (802.11n turns, aggregation, block acks) and find "
                    "the PHY rate at which a UDP flood through the link alone delivers the given goodput "
                    "(secant method, a few runs); --confirm then runs udp-rx through the board over it.")
    parser.add_argument("platform")
    parser.add_argument("--link", required=True, metavar="PRESET", help="the platform's link preset, e.g. wifi")
    parser.add_argument("--udp", required=True, type=rate_arg, metavar="RATE",
                        help="the report's UDP goodput on that air, e.g. 43mbit")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each flood (default 2)")
    parser.add_argument("--confirm", action="store_true", help="then udp-rx through the board over the result")
    parser.add_argument("--board-seconds", type=float, default=3.0, help="board seconds of the confirming run")
    parser.add_argument("--source", default="the report's UDP figure",
                        help="where in the report the UDP figure is (the [[inputs]] entry's source)")
    parser.add_argument("--record", metavar="REPORT",
                        help="write the [[inputs]] entry into reports/REPORT.toml (replacing an earlier one) and "
                             "the PHY rate into the preset's phy_rate line (a preset on the shared medium)")
    parser.add_argument("--lwip-tree", metavar="DIR", help="lwIP source tree to build (with --confirm)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR", help="run folders go here (default ./runs)")
    parser.add_argument("--json", action="store_true", help="print the calibration as JSON")
    add_quiet(parser)
    parser.set_defaults(func=cmd_calibrate_medium)
    return parser


def cmd_calibrate_medium(args: argparse.Namespace) -> int:
    if args.seconds <= 0 or args.board_seconds <= 0:
        raise NetreproError("--seconds and --board-seconds must be positive", "give e.g. --seconds 2")
    platform = load_platform(args.platform)
    if args.record:
        load_report(args.record)  # an unknown report, or a preset it cannot write into: one line now, not after
        phy_rate_line(platform, args.link)
    progress = command_progress(args)
    calibration = calibrate_medium(platform, args.link, args.udp, seconds=args.seconds, progress=progress)
    if args.confirm:
        run_dir = make_run_dir(args.out, platform.name, "calibrate-medium")
        calibration = confirm_through_board(calibration, platform, lwip_tree(args.lwip_tree), run_dir,
                                            seconds=args.board_seconds, progress=progress)
    entry = calibration.input_toml(args.source)
    if args.record:
        record_input(find_report(args.record), entry)
        record_phy_rate(platform, args.link, calibration.phy_rate_bps)
        load_report(args.record)  # what it wrote reads back
        load_platform(args.platform)
    print(json.dumps(calibration.as_dict(), indent=2) if args.json else format_medium(calibration, entry))
    return 0


def format_medium(calibration: MediumCalibration, entry: str) -> str:
    runs = [f"  phy_rate {rate / 1e6:8.3f} Mbit/s -> UDP {got / 1e6:7.3f} Mbit/s" for rate, got in calibration.runs]
    lines = [f"{calibration.platform} {calibration.preset} on the shared medium: phy_rate "
             f"{calibration.phy_rate_bps / 1e6:.3f} Mbit/s carries {calibration.goodput_bps / 1e6:.3f} Mbit/s of UDP "
             f"(target {calibration.target_bps / 1e6:g}, {calibration.error * 100:+.2f} %)", *runs]
    bus = calibration.settings.get("bus_rate_bps")
    if bus:
        cost = calibration.settings.get("bus_cost_s", 0.0) * 1e6
        lines.insert(1, f"  with its host bus as the preset gives it (assumed): bus_rate {bus / 1e6:g} Mbit/s, "
                        f"bus_cost {cost:g} us a transfer")
    if calibration.confirmed_bps is not None:
        lines.append(f"through the board (udp-rx): {calibration.confirmed_bps / 1e6:.3f} Mbit/s")
    return "\n".join([*lines, "", "the report's [[inputs]] entry:", entry])
