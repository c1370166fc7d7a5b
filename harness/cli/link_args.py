"""Command-line pieces shared by the subcommands that run a link (run, compare, bisect)."""

from __future__ import annotations

import argparse

from harness.core.errors import NetreproError
from harness.link import LinkSpec, parse_size
from harness.rig.platform import Platform

LINK_OPTIONS = {
    "rtt": "round-trip time the link adds, split evenly (e.g. 5.5ms)",
    "rate": "bit rate each way, tc units (e.g. 43mbit)",
    "loss": "random loss each way (e.g. 0.1%%)",
    "jitter": "delay jitter each way (e.g. 200us)",
    "limit": "queue limit in packets each way",
    "limit_bytes": "queue limit in bytes each way",
    "burst": "bytes the rate may pass back to back",
    "delay_to_device": "one-way delay peer -> device",
    "delay_to_peer": "one-way delay device -> peer",
    "rate_to_device": "rate peer -> device",
    "rate_to_peer": "rate device -> peer",
    "loss_to_device": "loss peer -> device",
    "loss_to_peer": "loss device -> peer",
    "drop_to_device": "drop list peer -> device (e.g. data:3,syn:1)",
    "drop_to_peer": "drop list device -> peer",
    "gemodel": "Gilbert-Elliott loss: p,r[,1-h[,1-k]] (netem's gemodel)",
    "seed": "seed of the loss models",
    "snaplen": "bytes of each frame kept in the capture",
}


def add_link_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("link overrides (netem/tc units; the effective values go into the result)")
    for name, help_text in LINK_OPTIONS.items():
        kind = int if name == "seed" else str
        group.add_argument(f"--{name.replace('_', '-')}", dest=f"link_{name}", type=kind, help=help_text,
                           metavar=name.split("_")[0].upper())


def link_spec(args: argparse.Namespace, platform: Platform) -> LinkSpec:
    """The --link preset with the command line's overrides."""
    preset = platform.link_preset(args.link) if args.link else {}
    overrides = {name: getattr(args, f"link_{name}", None) for name in LINK_OPTIONS}
    return LinkSpec.from_preset(preset).override(**{k: v for k, v in overrides.items() if v is not None})


def size_arg(text: str) -> int:
    try:
        return parse_size(text)
    except NetreproError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
