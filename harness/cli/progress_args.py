"""--quiet, and the progress a command shows: on stderr, with --json too (stdout then holds only the JSON)."""

from __future__ import annotations

import argparse

from harness.core.progress import Progress

QUIET_HELP = "no progress lines on stderr (CI=true also silences them)"


def add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help=QUIET_HELP)


def command_progress(args: argparse.Namespace) -> Progress:
    """--json does not silence it: a long run stays visible on stderr while stdout keeps the JSON alone."""
    return Progress(quiet=args.quiet)
