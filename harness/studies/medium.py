"""Calibrate the shared medium from a report's UDP figure: find the PHY rate that carries it.

A report that measured "~43 Mbit/s of UDP on the same air" gives the air's capacity for one-way
traffic, not its PHY rate: the turns' access, preambles, block acks and MPDU headers take their
share. The PHY rate is the medium's unknown (the contention and aggregation settings keep their
802.11n values, harness.link.settings); this finds the rate at which a UDP flood through the link
alone (harness.link.saturate) delivers the report's goodput, by the secant method over runs, and
optionally confirms it through the board with the udp-rx workload. The TCP figures run over the
calibrated medium are then predictions: nothing was fitted to them.

A preset with the WiFi chip's host bus (bus_rate, bus_cost: assumed values, harness.link.air) is
calibrated as a pair: the bus as the preset gives it, the PHY rate found so that the end-to-end goodput
through both stages (the flood's figure over the slower stage's busy time, harness.link.saturate) is the
report's. A bus that alone carries less than the target is refused before any flood: no PHY rate helps.
With a bus the search starts from the arithmetic's PHY rate (harness.link.air.phy_rate_for) instead of
65 Mbit/s, so that it does not start where the bus, not the air, sets the goodput.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.link.air import bus_udp_goodput_bps, phy_rate_for
from harness.link.saturate import FRAME, UDP_PAYLOAD, udp_saturation
from harness.rig.devicetime import TimeChoice
from harness.rig.platform import Platform
from harness.rig.workload import Workload
from harness.runs.plan import Configuration, RunPlan
from harness.studies.toml_edit import entry_toml, plain_number, record_entry, record_value

TOLERANCE = 0.002   # a calibration stops within this share of the target
MAX_RUNS = 8
START_BPS = 65_000_000  # HT MCS 7: the search's first guess (harness.link.settings' default)
_STEP_BPS = 1000        # PHY rates are kept to whole kbit/s


@dataclass(frozen=True)
class MediumCalibration:
    """What a calibration found: the PHY rate, what it carried, and every run it took."""

    target_bps: float
    phy_rate_bps: int
    goodput_bps: float
    runs: list[tuple[int, float]] = field(default_factory=list)  # (phy_rate_bps, goodput_bps) in order
    platform: str = ""
    preset: str = ""
    settings: dict[str, Any] = field(default_factory=dict)  # the medium's other settings, as used
    confirmed_bps: float | None = None  # udp-rx through the board over the calibrated medium

    @property
    def error(self) -> float:
        """The calibrated goodput's distance to the target, as a share of it."""
        return self.goodput_bps / self.target_bps - 1

    def as_dict(self) -> dict[str, Any]:
        return {"platform": self.platform, "preset": self.preset, "target_bps": self.target_bps,
                "phy_rate_bps": self.phy_rate_bps, "goodput_bps": round(self.goodput_bps),
                "error": round(self.error, 5), "runs": [[p, round(g)] for p, g in self.runs],
                "settings": self.settings, "confirmed_bps": self.confirmed_bps}

    def input_toml(self, source: str) -> str:
        """The report file's [[inputs]] entry: the UDP figure (provenance report) and what it produced."""
        produced: dict[str, Any] = {"phy_rate": f"{self.phy_rate_bps / 1e6:.3f}mbit",
                                    "udp_goodput_mbps": round(self.goodput_bps / 1e6, 3), "runs": len(self.runs)}
        if self.settings.get("bus_rate_bps"):  # the host bus it was calibrated with (the preset's, assumed)
            produced["with_bus_rate"] = f"{self.settings['bus_rate_bps'] / 1e6:g}mbit"
            produced["with_bus_cost"] = f"{self.settings.get('bus_cost_s', 0.0) * 1e6:g}us"
        if self.confirmed_bps is not None:
            produced["through_board_mbps"] = round(self.confirmed_bps / 1e6, 3)
        return entry_toml("inputs", {
            "name": f"{self.preset} UDP goodput (calibrates the shared medium)",
            "value": plain_number(self.target_bps / 1e6), "unit": "Mbit/s", "provenance": "report", "source": source,
            "sets": f"platforms/{self.platform}.toml: links.{self.preset}.phy_rate", "calibrated": produced})


def find_phy_rate(target_bps: float, measure: Callable[[int], float], start_bps: int = START_BPS,
                  tolerance: float = TOLERANCE, max_runs: int = MAX_RUNS,
                  on_run: Callable[[int, float], None] | None = None) -> tuple[int, float, list[tuple[int, float]]]:
    """The PHY rate whose measured UDP goodput is within `tolerance` of the target (secant method; the
    first step scales by target / goodput); (rate, its goodput, every run). Goodput rises with the rate."""
    if target_bps <= 0:
        raise NetreproError("the UDP target must be positive", "give the report's figure, e.g. --udp 43mbit")
    runs: list[tuple[int, float]] = []
    rate = int(start_bps)
    while True:
        got = measure(rate)
        runs.append((rate, got))
        if on_run:
            on_run(rate, got)
        if abs(got / target_bps - 1) <= tolerance or len(runs) >= max_runs:
            break
        rate = _next_rate(runs, target_bps)
        if any(rate == r for r, _g in runs):
            break
    best = min(runs, key=lambda run: abs(run[1] - target_bps))
    if abs(best[1] / target_bps - 1) > max(tolerance, 0.01):
        raise NetreproError(f"no PHY rate gave {target_bps / 1e6:g} Mbit/s of UDP in {len(runs)} runs "
                            f"(closest: {best[1] / 1e6:.2f} Mbit/s at {best[0] / 1e6:g} Mbit/s)",
                            "check the medium's settings: a goodput out of its reach (aggregation, agg_time)?")
    return best[0], best[1], runs


def _next_rate(runs: list[tuple[int, float]], target_bps: float) -> int:
    """The secant through the last two runs; from one run, the rate scaled by target / goodput."""
    (r1, g1) = runs[-1]
    if len(runs) == 1 or runs[-2][1] == g1 or g1 <= 0:
        guess = r1 * target_bps / g1 if g1 > 0 else 2 * r1
    else:
        r0, g0 = runs[-2]
        guess = r1 + (target_bps - g1) * (r1 - r0) / (g1 - g0)
    guess = min(max(guess, r1 / 4), r1 * 4)  # a wild secant step stays within a factor of 4
    return max(_STEP_BPS, round(guess / _STEP_BPS) * _STEP_BPS)


def shared_spec(platform: Platform, preset: str) -> LinkSpec:
    """The platform's link preset on the shared medium (a wire preset moves onto it, its RTT kept)."""
    table = platform.link_preset(preset)
    return LinkSpec.from_preset({k: v for k, v in table.items() if k not in ("rate", "burst")} | {"medium": "shared"})


def calibrate_medium(platform: Platform, preset: str, target_bps: float, seconds: float = 2.0,
                     progress: Progress | None = None) -> MediumCalibration:
    """Find the preset's PHY rate from the UDP target by floods through the link alone."""
    progress = progress or Progress(quiet=True)
    spec = shared_spec(platform, preset)
    start = START_BPS
    if spec.bus_rate_bps:
        check_bus(spec, preset, target_bps)
        with contextlib.suppress(ValueError):  # out of the air's reach: the floods say so with their closest run
            start = phy_rate_for(spec, target_bps, FRAME, UDP_PAYLOAD)
    progress.step(f"calibrating {platform.name}'s {preset} on the shared medium to {target_bps / 1e6:g} Mbit/s "
                  f"of UDP ({seconds:g} s floods through the link alone)")

    def measure(rate: int) -> float:
        return udp_saturation(spec.override(phy_rate=rate), seconds).goodput_bps

    def said(rate: int, got: float) -> None:
        progress.step(f"phy_rate {rate / 1e6:.3f} Mbit/s: UDP {got / 1e6:.3f} Mbit/s")

    rate, got, runs = find_phy_rate(target_bps, measure, start_bps=start, on_run=said)
    settings = {k: v for k, v in spec.as_dict().items() if k not in ("to_device", "to_peer")}
    return MediumCalibration(target_bps, rate, got, runs, platform.name, preset, settings)


def check_bus(spec: LinkSpec, preset: str, target_bps: float) -> None:
    """A preset's host bus must carry the UDP target by itself: the end-to-end goodput is never above the bus's."""
    if target_bps <= 0:
        return  # find_phy_rate says so
    carried = bus_udp_goodput_bps(spec, FRAME, UDP_PAYLOAD)
    if carried < target_bps:
        raise NetreproError(f"the {preset} preset's host bus carries at most {carried / 1e6:.3f} Mbit/s of UDP "
                            f"(bus_rate {spec.bus_rate_bps / 1e6:g} Mbit/s, bus_cost {spec.bus_cost_s * 1e6:g} us), "
                            f"less than the {target_bps / 1e6:g} Mbit/s target: no PHY rate carries it",
                            f"give [links.{preset}] a faster bus_rate or a smaller bus_cost, or check the UDP figure")


def confirm_through_board(calibration: MediumCalibration, platform: Platform, tree: Path, run_dir: Path,
                          seconds: float = 3.0, progress: Progress | None = None) -> MediumCalibration:
    """udp-rx through the board over the calibrated medium (device time): the goodput the board measures."""
    spec = shared_spec(platform, calibration.preset).override(phy_rate=calibration.phy_rate_bps)
    firmware = Configuration().build(platform, tree, progress)
    plan = RunPlan(platform, firmware, spec, Workload("udp-rx", seconds=seconds),
                   time=platform.time(TimeChoice("device")))
    result = plan.execute(run_dir, progress)
    return replace(calibration, confirmed_bps=float(result.throughput_mbps) * 1e6)


def preset_line(platform: Platform, preset: str, key: str) -> tuple[list[str], int] | None:
    """The platform file's lines and the index of the preset's one `key = ...` line, which a calibration
    overwrites (None: the preset has no such line, or more than one)."""
    lines = platform.path.read_text().splitlines(keepends=True)
    starts = [i for i, ln in enumerate(lines) if ln.strip() == f"[links.{preset}]"]
    if not starts:
        return None
    end = next((i for i in range(starts[0] + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    found = [i for i in range(starts[0] + 1, end) if lines[i].split("=")[0].strip() == key]
    return (lines, found[0]) if len(found) == 1 else None


def phy_rate_line(platform: Platform, preset: str) -> tuple[list[str], int]:
    """The preset's `phy_rate = ...` line (preset_line); a preset not on the shared medium, or without exactly
    one such line, is refused."""
    found = preset_line(platform, preset, "phy_rate")
    if platform.links.get(preset, {}).get("medium") != "shared" or found is None:
        raise NetreproError(f"{platform.path}: [links.{preset}] has no medium = \"shared\" and one phy_rate line "
                            "to write the calibration into",
                            f"add medium = \"shared\" and phy_rate = \"65mbit\" to [links.{preset}], "
                            "or leave out --record")
    return found


def record_phy_rate(platform: Platform, preset: str, rate_bps: int) -> None:
    """Write the calibrated rate into the preset's phy_rate line (the rest of the file as it is)."""
    phy_rate_line(platform, preset)
    record_value(platform.path, ("links", preset, "phy_rate"), f"{rate_bps / 1e6:.3f}mbit", "netrepro calibrate-medium")


def record_input(report_path: Path, entry: str) -> None:
    """Put the calibration's [[inputs]] entry (input_toml's text) in the report file: in place of the entry of
    the same name, else at the file's end. The rest of the file, comments included, is left as it is."""
    record_entry(report_path, "inputs", entry)
