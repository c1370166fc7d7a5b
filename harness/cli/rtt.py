"""`netrepro calibrate-rtt` on the command line: a link preset's base delay from a report's RTT."""

from __future__ import annotations

import argparse
import json
from typing import Any

from harness.cli.link_args import time_arg
from harness.cli.progress_args import add_quiet, command_progress
from harness.rig.platform import load_platform
from harness.studies.medium import record_input
from harness.studies.report_file import find_report, load_report
from harness.studies.rtt import RttCalibration, calibrate_rtt, record_base_delay, rtt_line


def add_rtt_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `calibrate-rtt` to the `netrepro` subcommands (argparse's add_subparsers() object)."""
    parser = subparsers.add_parser(
        "calibrate-rtt", help="find the delay that makes an idle ping through a link preset read a report's RTT",
        description="A report's RTT is what ping measured, idle, over its link: the air's turns (or the wire's "
                    "frame times) are in it. This finds the delay the preset must add on top of them, from the "
                    "link's arithmetic, and confirms it by pings through the link alone.")
    parser.add_argument("platform")
    parser.add_argument("--link", required=True, metavar="PRESET", help="the platform's link preset, e.g. wifi")
    parser.add_argument("--rtt", required=True, type=time_arg, metavar="TIME",
                        help="the report's RTT as ping measured it, e.g. 5.5ms")
    parser.add_argument("--pings", type=int, default=20, help="pings through the link alone (default 20)")
    parser.add_argument("--record", metavar="REPORT",
                        help="write the [[inputs]] entry into the report file (replacing the one of --input's name) "
                             "and the base delay into the preset's rtt line")
    parser.add_argument("--input", metavar="NAME", help="the [[inputs]] entry's name (default: PRESET RTT)")
    parser.add_argument("--source", help="where in the report the RTT is (default: the recorded entry's source)")
    parser.add_argument("--json", action="store_true", help="print the calibration as JSON")
    add_quiet(parser)
    parser.set_defaults(func=cmd_calibrate_rtt)
    return parser


def cmd_calibrate_rtt(args: argparse.Namespace) -> int:
    platform = load_platform(args.platform)
    name = args.input or f"{args.link} RTT"
    source = args.source or "the report's RTT"
    if args.record:  # an unknown report, or a preset it cannot write into: one line now, not after the pings
        earlier = next((i for i in load_report(args.record)["inputs"] if i["name"] == name), {})
        source = args.source or earlier.get("source") or source
        rtt_line(platform, args.link)
    calibration = calibrate_rtt(platform, args.link, args.rtt, count=args.pings,
                                progress=command_progress(args))
    entry = calibration.input_toml(name, source)
    if args.record:
        record_input(find_report(args.record), entry)
        record_base_delay(platform, calibration)
        load_report(args.record)  # what it wrote reads back
        load_platform(args.platform)
    print(json.dumps(calibration.as_dict(), indent=2) if args.json else format_rtt(calibration, entry))
    return 0


def format_rtt(calibration: RttCalibration, entry: str) -> str:
    c = calibration
    return "\n".join([
        f"{c.platform} {c.preset}: a base delay of {c.base_delay_s * 1e3:.3f} ms gives an idle ping of "
        f"{c.arithmetic_s * 1e3:.3f} ms by the link's arithmetic; {len(c.pings_s)} pings through the link alone read "
        f"{c.idle_ping_s * 1e3:.3f} ms (median; {min(c.pings_s) * 1e3:.3f}-{max(c.pings_s) * 1e3:.3f}), "
        f"{c.error * 100:+.2f} % of the target {c.target_s * 1e3:g} ms; the least the link handed over on time "
        f"read {c.least_ping_s * 1e3:.3f} ms", "", "the report's [[inputs]] entry:", entry])
