"""A report file: found by name among the shipped ones or read from any path, checked, and its paths resolved.

A report names its board (`platform`), and may model the user's own part on it (`[cpu]`, the part's clock
and IPC or its MIPS: device time runs the platform's core at that speed, as `run --mips` does) and add
link presets of its own (`[links.NAME]`, as a platform file's). A case's `profile` is a shipped profile or
the path of a lwipopts.h, built as `run --lwip FILE` builds it with the report's or the case's `include`,
`stub_headers`, `sources` and `lwip_tree`. Every relative path resolves against the report file's folder,
so a report and its files can live anywhere.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.rig.devicetime import CpuModel
from harness.rig.platform import PROJECT_ROOT, Platform, load_platform
from harness.runs.plan import Configuration
from harness.studies.report_check import (
    case_firmware,
    check_report,
    errors_of,
    report_mips,
    resolve_path,
)

REPORTS_DIR = PROJECT_ROOT / "reports"
FILE_KEY = "file"  # the loaded report's own path, added on load (a report file does not write it)


def report_names() -> list[str]:
    return sorted(p.stem for p in REPORTS_DIR.glob("*.toml"))


def is_report_path(text: str) -> bool:
    """A report is named by its path when the text has a folder or ends in .toml; otherwise it is a shipped name."""
    return text.endswith(".toml") or "/" in text


def find_report(name_or_path: str) -> Path:
    """The report file: a shipped report's name (reports/NAME.toml), or the path of any report file."""
    if is_report_path(name_or_path):
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise NetreproError(f"report file {name_or_path} does not exist",
                                f"check the path, or name a shipped report: {', '.join(report_names())}")
        return path.resolve()
    path = REPORTS_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        raise NetreproError(f"unknown report '{name_or_path}'",
                            f"use one of: {', '.join(report_names())}, or the path of a report file (PATH.toml)")
    return path


def load_report(name_or_path: str) -> dict[str, Any]:
    """The report, checked (its first error is the one-line error; `netrepro report check` lists them all),
    its name defaulted to the file's, its paths made absolute and its own path under FILE_KEY."""
    path = find_report(name_or_path)
    errors = list(errors_of(check_report(path)))
    if errors:
        more = f" (and {len(errors) - 1} more: netrepro report check {path})" if len(errors) > 1 else ""
        first = errors[0]
        where = f"{first.file}:{first.line}" if first.line else first.file
        raise NetreproError(f"{where}: {first.message}{more}", first.fix)
    return resolved(tomllib.loads(path.read_text()), path)


def resolved(report: dict[str, Any], path: Path) -> dict[str, Any]:
    """The report with every path it gives made absolute, each case carrying its firmware keys."""
    folder = path.parent
    report = {**report, FILE_KEY: str(path)}
    report.setdefault("report", path.stem)
    if str(report["platform"]).endswith(".toml"):
        report["platform"] = str(resolve_path(report["platform"], folder))
    cases = []
    for case in report["cases"]:
        case = {**case, **case_firmware(report, case, folder)}
        if str(case.get("platform", "")).endswith(".toml"):
            case["platform"] = str(resolve_path(case["platform"], folder))
        if "capture" in case:
            case["capture"] = {**case["capture"], "file": str(resolve_path(case["capture"]["file"], folder))}
        cases.append(case)
    report["cases"] = cases
    return report


def report_platform(report: dict[str, Any], case: dict[str, Any]) -> Platform:
    """The case's board as the report models it: the report's link presets added, the part's speed ([cpu]) given
    to its core, the case's rx_overflow."""
    platform = load_platform(case.get("platform", report["platform"]))
    if report.get("links"):
        platform = dataclasses.replace(platform, links={**platform.links, **report["links"]})
    cpu = report.get("cpu")
    if cpu and platform.cpu is not None:
        clock, ipc = (float(cpu["clock_mhz"]), float(cpu["ipc"])) if "mips" not in cpu else (report_mips(cpu), 1.0)
        platform = dataclasses.replace(platform, cpu=CpuModel(clock, ipc, platform.cpu.host_mips,
                                                              cpu_source(cpu)))
    if "rx_overflow" in case:
        platform = platform.with_nic(rx_overflow=case["rx_overflow"])
    return platform


def cpu_source(cpu: dict[str, Any]) -> str:
    """Where the report's part speed comes from, in one phrase."""
    detail = cpu.get("source") or cpu.get("why") or cpu.get("capture") or ""
    return f"{cpu['part']} ({cpu['provenance']}{': ' + detail if detail else ''})"


def case_configuration(case: dict[str, Any]) -> Configuration:
    """The case's firmware as `run --lwip PROFILE_OR_PATH -I ... --source ... --stub-header ...` gives it
    (the case as load_report resolved it)."""
    return Configuration(case["profile"], tuple(case.get("include") or ()), (), tuple(case.get("sources") or ()),
                         tuple(case.get("stub_headers") or ()))


def report_inputs(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's [[inputs]], and its [cpu] as one more: the part's instruction rate, with its provenance."""
    inputs = [dict(item) for item in report.get("inputs", [])]
    cpu = report.get("cpu")
    if cpu:
        speed = f"{cpu['clock_mhz']:g} MHz x IPC {cpu['ipc']:g}" if "mips" not in cpu else "its MIPS"
        item = {"name": f"the part's core ({cpu['part']}; {speed})", "value": report_mips(cpu), "unit": "MIPS",
                "provenance": cpu["provenance"], "sets": "report: cpu"}
        item.update({k: cpu[k] for k in ("source", "why", "range", "capture", "sha256", "frames") if k in cpu})
        inputs.append(item)
    return inputs
