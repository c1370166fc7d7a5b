"""The command line's device-time options, shared by run, compare, reproduce and bisect."""

from __future__ import annotations

import argparse

from harness.rig.devicetime import DEFAULT_MODE, HOST_MIPS_ENV, TIME_MODES, TimeChoice


def add_time_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("time (device: the board runs at its modelled speed; host: as fast as it can)")
    group.add_argument("--time", choices=TIME_MODES, default=DEFAULT_MODE,
                       help=f"device or host time (default {DEFAULT_MODE}); host-time figures depend on the host")
    group.add_argument("--mips", type=float, default=None,
                       help="the board's modelled instruction rate (default: the platform's [cpu])")
    group.add_argument("--host-mips", type=float, default=None,
                       help=f"the rate this host runs the core at (default: ${HOST_MIPS_ENV}, else the platform's)")
    group.add_argument("--no-realtime", dest="realtime", action="store_false",
                       help="run the emulator and the link at normal priority, as a non-root user does "
                            "(default: real-time priority where permitted)")


def time_choice(args: argparse.Namespace) -> TimeChoice:
    return TimeChoice(args.time, args.mips, args.host_mips, realtime=args.realtime)
