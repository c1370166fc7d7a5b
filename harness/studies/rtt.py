"""Calibrate a link's RTT from a report's: the delay that makes an idle ping through the link read it.

A report's "RTT ~5-6 ms" is what ping measured over its link, idle: the air's turns are in it. A
preset's `rtt` is the delay the link adds on top of what carrying the frames costs (harness.link,
"rtt"), so on the shared medium a preset that took the report's RTT as its delay answered a ping
~0.4 ms late, and every window-limited figure over it paid that twice. This finds the base delay
from the link's own arithmetic (harness.link.ping.base_delay_for), then confirms it by pings
through the link alone as the run's board would see it (Session.link_as_run: its NIC's wire
included): the report file's input records both under `calibrated` (base_delay_ms, idle_ping_ms),
and the preset's rtt line becomes the base delay.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.link.ping import BATCHES, Ping, base_delay_for, idle_ping_s, pings_on_time
from harness.rig.platform import Platform
from harness.rig.session import Session
from harness.studies.medium import preset_line
from harness.studies.toml_edit import entry_toml, plain_number, record_value

TOLERANCE = 0.02  # the measured idle ping must read the report's RTT within this share


@dataclass(frozen=True)
class RttCalibration:
    """What a calibration found: the base delay, the idle ping it gives (arithmetic and measured), every ping."""

    platform: str
    preset: str
    target_s: float
    base_delay_s: float
    arithmetic_s: float          # the idle ping the link's arithmetic gives at the base delay
    pings: list[Ping] = field(default_factory=list)  # measured through the link alone, as run

    @property
    def pings_s(self) -> list[float]:
        return [p.read_s for p in self.pings]

    @property
    def idle_ping_s(self) -> float:
        """The median ping: what a user's ping would show on this host."""
        return statistics.median(self.pings_s)

    @property
    def least_ping_s(self) -> float | None:
        """The shortest ping the link handed over on time (Ping.on_time): its schedule, which a busy host only
        ever makes later (None: the host made every ping late)."""
        return min((p.read_s for p in self.pings if p.on_time), default=None)

    @property
    def error(self) -> float:
        """The measured idle ping's (the median's) distance to the target, as a share of it."""
        return self.idle_ping_s / self.target_s - 1

    def as_dict(self) -> dict[str, Any]:
        return {"platform": self.platform, "preset": self.preset, "target_ms": round(self.target_s * 1e3, 4),
                "base_delay_ms": round(self.base_delay_s * 1e3, 4), "idle_ping_ms": round(self.idle_ping_s * 1e3, 4),
                "least_ping_ms": round(self.least_ping_s * 1e3, 4) if self.least_ping_s is not None else None,
                "arithmetic_ms": round(self.arithmetic_s * 1e3, 4), "error": round(self.error, 5),
                "pings_ms": [round(p * 1e3, 4) for p in self.pings_s],
                "link_late_us": [round(p.late_s * 1e6, 1) for p in self.pings]}

    def calibrated(self) -> dict[str, Any]:
        """The [[inputs]] entry's `calibrated`: what the calibration produced from the report's RTT."""
        return {"base_delay_ms": round(self.base_delay_s * 1e3, 3), "idle_ping_ms": round(self.idle_ping_s * 1e3, 3),
                "pings": len(self.pings_s)}

    def input_toml(self, name: str, source: str) -> str:
        """The report file's [[inputs]] entry: the report's RTT (provenance report) and what it produced."""
        return entry_toml("inputs", {
            "name": name, "value": plain_number(round(self.target_s * 1e3, 6)), "unit": "ms",
            "provenance": "report", "source": source,
            "sets": f"platforms/{self.platform}.toml: links.{self.preset}.rtt", "calibrated": self.calibrated()})


def calibrate_rtt(platform: Platform, preset: str, target_s: float, count: int = 20,
                  progress: Progress | None = None) -> RttCalibration:
    """The preset's base delay for an idle ping of `target_s`, confirmed by `count` pings through the link alone."""
    if target_s <= 0:
        raise NetreproError("the RTT to calibrate to must be positive", "give the report's RTT, e.g. --rtt 5.5ms")
    progress = progress or Progress(quiet=True)
    spec = LinkSpec.from_preset(platform.link_preset(preset))
    base = base_delay_for(spec, target_s)
    calibrated = spec.override(rtt=f"{base * 1e6:.3f}us")
    progress.step(f"{platform.name} {preset}: a base delay of {base * 1e3:.3f} ms makes the link's arithmetic read "
                  f"{target_s * 1e3:g} ms; confirming with {count} pings through the link alone")
    measured = pings_on_time(Session.link_as_run(calibrated, platform), count, progress.warn)
    found = RttCalibration(platform.name, preset, target_s, base, idle_ping_s(calibrated), measured)
    if found.least_ping_s is None:
        raise NetreproError(f"the host woke the link late for every ping of {BATCHES} batches of {count} (by "
                            f"{min(p.late_s for p in measured) * 1e6:.0f} us at the least)",
                            "rerun on a quieter machine: the link's schedule cannot be confirmed on this one")
    # The link's schedule is deterministic on an idle link (the air's mean backoff): a ping it handed over on time
    # reads it, and it must read the target; the median (recorded) is what a user's ping would show on this host.
    if abs(found.least_ping_s / target_s - 1) > TOLERANCE:
        raise NetreproError(f"pings the link handed over on time read {found.least_ping_s * 1e3:.3f} ms at the least "
                            f"at a base delay of {base * 1e3:.3f} ms, not {target_s * 1e3:g} ms within "
                            f"{TOLERANCE:.0%}", "the link's schedule and its arithmetic disagree: report it as a bug")
    return found


def rtt_line(platform: Platform, preset: str) -> tuple[list[str], int]:
    """The preset's `rtt = ...` line (harness.studies.medium.preset_line); a preset without exactly one is refused."""
    found = preset_line(platform, preset, "rtt")
    if found is None:
        raise NetreproError(f"{platform.path}: [links.{preset}] has no single rtt line to write the calibration into",
                            f"add rtt = \"5ms\" to [links.{preset}], or leave out --record")
    return found


def record_base_delay(platform: Platform, calibration: RttCalibration) -> None:
    """Write the base delay into the preset's rtt line (the rest of the file as it is)."""
    rtt_line(platform, calibration.preset)
    record_value(platform.path, ("links", calibration.preset, "rtt"), f"{calibration.base_delay_s * 1e3:.3f}ms",
                 f"netrepro calibrate-rtt: an idle ping reads {calibration.target_s * 1e3:g} ms")
