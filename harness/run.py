"""A whole run: build, rig up, run the workload, write the result into the run folder.

Whatever happens, the run folder keeps what there is: console log, capture, link counters and
result.json (with `status` and, on failure, `error`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.build import Firmware
from harness.errors import NetreproError
from harness.link import LinkSpec
from harness.platform import Platform
from harness.progress import Progress
from harness.session import Session, device_paced
from harness.workload import Transfer, Workload, run_workload


@dataclass
class RunResult:
    """What one run measured; `result.json` in the run folder is this, as JSON."""

    platform: str
    profile: str
    lwip_version: str
    link: dict[str, Any]
    workload: dict[str, Any]
    run_dir: str
    capture: str
    console_log: str
    status: str = "running"
    error: str | None = None
    options: dict[str, int] = field(default_factory=dict)
    throughput_mbps: float | dict[str, float] | None = None
    per_second_mbps: list[float] | dict[str, list[float]] = field(default_factory=list)
    bytes: int | dict[str, int] | None = None
    seconds: float | dict[str, float] | None = None
    link_counters: dict[str, Any] = field(default_factory=dict)
    device_stats: dict[str, int] = field(default_factory=dict)
    boot_seconds: float | None = None
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))

    def record(self, transfers: list[Transfer]) -> None:
        """Throughput, bytes and seconds: plain numbers for one direction, {rx, tx} for two."""
        if len(transfers) == 1:
            t = transfers[0]
            self.throughput_mbps, self.per_second_mbps = round(t.mbps, 3), [round(x, 3) for x in t.per_second_mbps]
            self.bytes, self.seconds = t.bytes, round(t.seconds, 3)
            return
        self.throughput_mbps = {t.direction: round(t.mbps, 3) for t in transfers}
        self.per_second_mbps = {t.direction: [round(x, 3) for x in t.per_second_mbps] for t in transfers}
        self.bytes = {t.direction: t.bytes for t in transfers}
        self.seconds = {t.direction: round(t.seconds, 3) for t in transfers}

    def save(self) -> Path:
        path = Path(self.run_dir) / "result.json"
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")
        return path


def execute(platform: Platform, firmware: Firmware, link: LinkSpec, workload: Workload, run_dir: Path,
            progress: Progress | None = None, boot_timeout: float = 60.0) -> RunResult:
    """Run one workload on a freshly booted board; the result is saved even when the run fails."""
    progress = progress or Progress(quiet=True)
    result = RunResult(platform=platform.name, profile=firmware.profile.name, lwip_version=firmware.lwip_version,
                       link=device_paced(link, platform).as_dict(), workload=workload.describe(), run_dir=str(run_dir),
                       capture=str(run_dir / "capture.pcap"), console_log=str(run_dir / "console.log"))
    (run_dir / "link.json").write_text(json.dumps(result.link, indent=2) + "\n")
    rig = Session(platform, firmware, run_dir, link, progress=progress, boot_timeout=boot_timeout)
    try:
        with rig:
            result.boot_seconds = round(rig.console.boot_seconds or 0.0, 3)
            result.options = rig.console.opts()
            progress.step(f"running {workload.name} ({_amount(workload)}) over link {_link_text(result.link)}")
            result.record(run_workload(rig, workload))
            result.device_stats = rig.console.stats()
        result.status = "passed"
    except NetreproError as exc:
        result.status, result.error = "failed", str(exc)
        raise
    except KeyboardInterrupt:
        result.status, result.error = "interrupted", "interrupted by the user"
        raise
    finally:
        if rig.link_counters is not None:
            result.link_counters = asdict(rig.link_counters)
        result.save()
    return result


def _amount(workload: Workload) -> str:
    return f"{workload.bytes} bytes" if workload.bytes else f"{workload.seconds:g} s"


def _link_text(link: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in link.items() if not isinstance(v, dict)) or "default"
