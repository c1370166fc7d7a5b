"""A sensitivity study's inputs on the shared medium (harness.studies.sensitivity): the air's settings and the
WiFi chip's host bus, each varied so that the preset still carries its UDP figure.

An input whose `sets` names links.PRESET.KEY, KEY one of AIR_KEYS, is varied on that shared-medium preset.
For phy_rate the input is the UDP goodput the air carries; for the other keys the preset's UDP goodput stays
what it is (the report's UDP figure). Either way the PHY rate is found again from the airtime arithmetic
(harness.link.air.phy_rate_for), with a host bus the pair's (the slower stage's figure); an end at which no
PHY rate carries it (a bus too slow for the UDP figure) contradicts the report and is not varied.
"""

from __future__ import annotations

from typing import Any

from harness.link import LinkSpec, parse_rate
from harness.link.air import phy_rate_for, udp_goodput_bps
from harness.link.saturate import FRAME, UDP_PAYLOAD
from harness.link.settings import SETTING
from harness.rig.platform import Platform

AIR_KEYS = ("phy_rate", "agg_frames", "cwmin", "aifsn", "bus_rate", "bus_cost")  # UDP goodput, aggregation,
# contention, the WiFi chip's host bus
AIR_UNITS = {"phy_rate": "rate", "bus_rate": "rate", "bus_cost": "time"}  # the keys a file writes in tc's units


class Unvaried(Exception):
    """Why an assumed input cannot be varied (one line, shown as "not varied: <why>")."""


def air_in_use(platform: Platform, preset: str, key: str) -> tuple[float, str]:
    """What the reproduction ran with, in plain units and in words: the UDP goodput for phy_rate, else the key."""
    spec = LinkSpec.from_preset(platform.link_preset(preset))
    if key == "phy_rate":
        carried = udp_goodput_bps(spec, FRAME, UDP_PAYLOAD)
        return carried, f"{carried / 1e6:.2f}mbit of UDP at phy_rate {spec.phy_rate_bps / 1e6:.3f}mbit"
    field = SETTING[key].field
    return float(getattr(spec, field)), f"{platform.links[preset].get(key, getattr(spec, field))}"


def air_preset(platform: Platform, preset: str, key: str, value: str | int | float) -> dict[str, Any]:
    """A shared-medium preset with one input changed and its PHY rate found again: for phy_rate the input is
    the UDP goodput the air carries; for the others, the goodput stays the preset's (the report's UDP figure)."""
    spec = LinkSpec.from_preset(platform.link_preset(preset))
    if key == "phy_rate":
        goodput, changed = float(parse_rate(value)), {}
    else:
        goodput, changed = udp_goodput_bps(spec, FRAME, UDP_PAYLOAD), {key: value}
    try:
        phy = phy_rate_for(spec.override(**changed), goodput, FRAME, UDP_PAYLOAD)
    except ValueError as exc:  # a bus too slow for the UDP figure: that end contradicts the report
        raise Unvaried(f"at {key} {value}, {str(exc).split('; ')[0]}: the report's UDP figure rules that end out; "
                       "narrow the input's range") from None
    return {**platform.links[preset], **changed, "phy_rate": f"{phy / 1e6:.3f}mbit"}


def air_shown(platform: Platform, preset: str, key: str, settings: dict[str, Any], ends: tuple[str, ...]
              ) -> dict[str, str]:
    """The ends as the runs get them: the input and the PHY rate found for it."""
    return {end: f"{key if key != 'phy_rate' else 'UDP'} {settings[end]}, phy_rate "
                 f"{air_preset(platform, preset, key, settings[end])['phy_rate']}" for end in ends}


def check_air_preset(platform: Platform, owner: str, preset: str, key: str) -> None:
    """The preset is on the shared medium, and has a host bus when the key is its cost."""
    if platform.links[preset].get("medium") != "shared":
        raise Unvaried(f"link preset '{preset}' of {owner} is a wire: {key} applies on the shared medium")
    if key == "bus_cost" and not LinkSpec.from_preset(platform.link_preset(preset)).bus_rate_bps:
        raise Unvaried(f"link preset '{preset}' of {owner} has no host bus (bus_rate 0): its bus_cost changes nothing")
