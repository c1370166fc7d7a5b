"""Calibrate device time on this host: the rate at which it can run a board's core, free and under load.

Two measurements, saved per platform in the cache (``netrepro calibrate PLATFORM``):

- free-running: the firmware's known instruction loop (``spin``) in host time, so its
  instructions per second of wall time are the host's raw rate for this core;
- under load: a device-time socket benchmark over the platform's fastest link. QEMU's NIC emulation
  costs the host time that instruction counting does not charge to the guest, so under network
  load the board keeps a larger D than planned (the link follows its clock, so no figure moves);
  the D it kept gives the rate the host sustains, model MIPS / D kept.

The host rate chosen is the fastest QEMU can count at (1000 / 2^S MIPS) not above the sustained rate;
device-time runs of the platform use it unless --host-mips or $NETREPRO_HOST_MIPS says otherwise.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec, parse_rate
from harness.rig.devicetime import TimeChoice, calibration_path, icount_shift
from harness.rig.platform import Platform
from harness.rig.session import Session
from harness.rig.workload import Workload
from harness.runs.plan import Configuration, RunPlan

SPIN_TARGET_S = 1.0  # the free-running loop is sized to take about this long


@dataclass(frozen=True)
class Calibration:
    """What one calibration measured on this host (saved as JSON beside the build cache)."""

    platform: str
    model_mips: float
    free_mips: float            # the spin loop, free-running: instructions per wall second
    planned_dilation: float     # the D the loaded run asked for
    kept_dilation: float        # the D the board kept under the load
    sustained_mips: float       # model_mips / kept_dilation
    host_mips: float            # chosen: the fastest 1000 / 2^S not above the sustained rate
    icount_shift: int
    load: str                   # what the loaded run was
    qemu: str
    measured_at: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def calibrate(platform: Platform, tree: Path, seconds: float = 3.0, progress: Progress | None = None,
              run_dir: Path | None = None) -> Calibration:
    """Measure, save and return this host's calibration of the platform."""
    progress = progress or Progress(quiet=True)
    if platform.engine.kind != "qemu" or platform.cpu is None:
        raise NetreproError(f"{platform.name} runs on its own board host, which paces its clock itself",
                            "calibrate a QEMU platform (openmv-n6, openmv-rt1060, xbox)")
    firmware = Configuration(platform.default_profile).build(platform, tree)
    folder = run_dir or Path(datetime.datetime.now().strftime("/tmp/nr-calibrate-%Y%m%d-%H%M%S"))
    folder.mkdir(parents=True, exist_ok=True)
    progress.step(f"free-running: the spin loop on {platform.name}")
    free = _free_mips(platform, firmware, folder / "free")
    link_name = _fastest_link(platform)
    planned = platform.time(TimeChoice("device"))
    progress.step(f"under load: sock-rx over {link_name} for {seconds:g} s of the board's time at D = "
                  f"{planned.dilation:g}")
    plan = RunPlan(platform, firmware, LinkSpec.from_preset(platform.link_preset(link_name)),
                   Workload("sock-rx", seconds=seconds), time=planned)
    (folder / "load").mkdir(exist_ok=True)
    result = plan.execute(folder / "load", progress)
    kept = float(result.time.get("effective_dilation") or planned.dilation)
    sustained = platform.cpu.model_mips / max(kept, planned.dilation)
    shift = icount_shift(min(sustained, free))
    calibration = Calibration(
        platform=platform.name, model_mips=platform.cpu.model_mips, free_mips=round(free, 1),
        planned_dilation=planned.dilation, kept_dilation=round(kept, 3), sustained_mips=round(sustained, 1),
        host_mips=1000.0 / 2**shift, icount_shift=shift, load=f"sock-rx over {link_name}, {seconds:g} s",
        qemu=_qemu_version(platform), measured_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"))
    path = calibration_path(platform.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(calibration.as_dict(), indent=2) + "\n")
    return calibration


def _free_mips(platform: Platform, firmware, folder: Path) -> float:
    """Instructions per wall second of the spin loop in host time (the board's ms is then the wall's)."""
    folder.mkdir(parents=True, exist_ok=True)
    with Session(platform, firmware, folder, LinkSpec(), time=platform.time(TimeChoice("host"))) as rig:
        iterations = 10_000_000
        while True:
            fields = _spin(rig, iterations)
            ms = int(fields["ms"])
            if ms >= SPIN_TARGET_S * 1000 or iterations >= 2_000_000_000:
                break
            iterations = min(2_000_000_000, int(iterations * SPIN_TARGET_S * 1000 / max(ms, 10) * 1.1))
    per = int(fields["instructions_per_iteration"])
    if not per:
        raise NetreproError("the firmware's spin loop reported no instruction count", "rebuild the firmware")
    if not ms:
        raise NetreproError("the board's clock did not advance during the spin loop",
                            "check the board's timer interrupt (boot the platform and run `spin 1000000`)")
    return iterations * per / (ms / 1000) / 1e6


def _spin(rig: Session, iterations: int) -> dict[str, str]:
    # interrupts stay on: the board's ms is counted by its timer interrupt (8 a ms costs well under 1 %)
    out = rig.console.command(f"spin {iterations}", timeout=300)
    return dict(part.split("=", 1) for part in out.split() if "=" in part)


def _fastest_link(platform: Platform) -> str:
    rated = {name: parse_rate(p["rate"]) for name, p in platform.links.items() if p.get("rate")}
    if not rated:
        raise NetreproError(f"{platform.name} has no link preset with a rate", "add one to its description")
    return max(rated, key=lambda name: rated[name])


def _qemu_version(platform: Platform) -> str:
    try:
        out = subprocess.run([platform.engine.binary, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.splitlines()[0] if out.stdout else "unknown"


def format_calibration(c: Calibration) -> str:
    return "\n".join([
        f"{c.platform} on this host ({c.qemu}):",
        f"  free-running   {c.free_mips:g} MIPS (the spin loop, host time)",
        f"  under load     the board kept D = {c.kept_dilation:g} where {c.planned_dilation:g} was planned "
        f"({c.load}): {c.sustained_mips:g} MIPS sustained",
        f"  host rate      {c.host_mips:g} MIPS (-icount shift={c.icount_shift}, D = {c.model_mips / c.host_mips:g} "
        f"for {c.model_mips:g} modelled MIPS)",
        f"  saved to       {calibration_path(c.platform)} (device-time runs of {c.platform} use it unless "
        "--host-mips or $NETREPRO_HOST_MIPS is given)",
    ])


