"""Command-line pieces shared by the subcommands that run a link (run, compare, bisect).

The link options come from the link's settings table (harness.link.settings): ``--rate``,
``--rate-to-device``, ... are its settings' names, and their values go to LinkSpec.override
as written, so the command line takes exactly what presets and overrides take.
"""

from __future__ import annotations

import argparse

from harness.core.errors import NetreproError
from harness.link import LinkSpec, parse_rate, parse_size, parse_time
from harness.link.settings import cli_options
from harness.rig.platform import Platform

LINK_OPTIONS = {option.key: option.help for option in cli_options()}


def add_link_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("link overrides (netem/tc units; the effective values go into the result)")
    for option in cli_options():
        group.add_argument(f"--{option.key.replace('_', '-')}", dest=f"link_{option.key}", type=option.type,
                           help=option.help.replace("%", "%%"),  # argparse formats help with %
                           metavar=option.key.split("_")[0].upper())


def link_spec(args: argparse.Namespace, platform: Platform) -> LinkSpec:
    """The --link preset with the command line's overrides."""
    preset = platform.link_preset(args.link) if args.link else {}
    overrides = {key: getattr(args, f"link_{key}", None) for key in LINK_OPTIONS}
    return LinkSpec.from_preset(preset).override(**overrides)  # None: not given


def rate_arg(text: str) -> int:
    try:
        return parse_rate(text)
    except NetreproError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def time_arg(text: str) -> float:
    """A time as written (5.5ms, 200us), in seconds."""
    try:
        return parse_time(text)
    except NetreproError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def size_arg(text: str) -> int:
    try:
        return parse_size(text)
    except NetreproError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
