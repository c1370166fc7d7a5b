"""The command line's firmware options (--lwip, -I, --set, --lwip-tree, --source, --stub-header), shared by
boot, run, fuzz and replay, and the Configuration they make."""

from __future__ import annotations

import argparse

from harness.rig.build import LWIP_TREE_ENV
from harness.runs.plan import Configuration


def add_firmware_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lwip", metavar="PROFILE_OR_PATH",
                        help="lwIP options: a profile name or the path of your lwipopts.h")
    parser.add_argument("-I", "--include", action="append", default=[], metavar="DIR",
                        help="include directory your lwipopts.h needs (repeatable)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override one lwIP option after the profile (repeatable)")
    parser.add_argument("--lwip-tree", metavar="DIR",
                        help=f"lwIP source tree to build (default: ${LWIP_TREE_ENV}, else Debian's 2.1.3)")
    parser.add_argument("--source", action="append", default=[], metavar="FILE.c",
                        help="a C file of your port to build into the firmware, e.g. the function your "
                             "LWIP_RAND() calls (repeatable)")
    parser.add_argument("--stub-header", action="append", default=[], metavar="NAME",
                        help="stand an empty header in for one your lwipopts.h includes but the build "
                             "cannot find, named as the #include writes it, e.g. py/mpconfig.h (repeatable)")


def firmware_configuration(args: argparse.Namespace) -> Configuration:
    """The firmware the options give."""
    return Configuration(args.lwip, tuple(args.include), tuple(args.set), tuple(args.source),
                         tuple(args.stub_header))
