"""Reproduce a report: every case it measured, repeated, beside the report's figures and claims.

A report is described in reports/<name>.toml: the platform, and per case the profile, link
preset, workload, the report's figure and the claim to check. Claims are small and exact:

    verdict = "window-limited"            the capture's bottleneck verdict (median run)
    window = 23360, mss = 1460            what the device advertised (exact; the window with nothing unread)
    window_scaling = false                no window-scale option
    faster_than = {case, factor}          median >= factor x that case's median
    slower_than = {case, factor}          median <= factor x that case's median
    close_to = {case, within}             |median - other| <= within x other
    at_least_mbps = 85                    median >= 85
    link_limited_or_within = 0.15         verdict link-limited, or median within 15% of the link rate
    within_of_report = 0.30               |median - report| <= 30% of the report's figure
    ratio_to = {case, within}             median/that case's median within 15% of the report's own ratio

A case of a two-way workload (`rr`: iperf -r, `duplex`: iperf -d) names its `direction`
("rx": peer -> device, "tx": device -> peer); cases that share profile, link and workload share
their runs, and each is judged on its own direction's figure and connection.

A report that gives figures in another unit (the Ethernut's KB/s) says so with `unit` and
`unit_bytes` (what a K is taken to be) and gives each case's `report_value` in that unit; every
figure is still compared and written in Mbit/s, and the table shows both.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import asdict
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.rig.build import build_firmware, lwip_tree
from harness.rig.devicetime import TimeChoice
from harness.rig.platform import PROJECT_ROOT, load_platform
from harness.rig.profile import resolve_profile
from harness.rig.session import make_run_dir
from harness.rig.workload import TWO_WAY, Workload
from harness.studies.cases import CaseResult, format_number, summarise_runs
from harness.studies.claims import CHECKS, judge
from harness.studies.run import RunPlan, RunResult, execute_trusted

REPORTS_DIR = PROJECT_ROOT / "reports"
_CASE_KEYS = {"case", "profile", "link", "workload", "report_mbps", "report_value", "claim", "seconds", "platform",
              "note", "chunk", "bytes", "direction", "warmup", "rx_overflow"}


def report_names() -> list[str]:
    return sorted(p.stem for p in REPORTS_DIR.glob("*.toml"))


def load_report(name: str) -> dict[str, Any]:
    path = REPORTS_DIR / f"{name}.toml"
    if not path.is_file():
        raise NetreproError(f"unknown report '{name}'", f"use one of: {', '.join(report_names())}")
    report = tomllib.loads(path.read_text())
    for case in report.get("cases", []):
        unknown = set(case) - _CASE_KEYS or set(case.get("claim", {})) - set(CHECKS)
        if unknown:
            raise NetreproError(f"{path}: case '{case.get('case')}' has unknown key {sorted(unknown)[0]}",
                                f"allowed: {', '.join(sorted(_CASE_KEYS | set(CHECKS)))}")
    return report


def reproduce(name: str, out: Path | None = None, repeats: int | None = None, seconds: float | None = None,
              only: list[str] | None = None, progress: Progress | None = None,
              lwip_tree_path: str | None = None, time: TimeChoice | None = None) -> dict[str, Any]:
    """Run every case of the report; returns {"report", "title", "cases": [...]} and writes it as JSON."""
    progress = progress or Progress(quiet=True)
    report = load_report(name)
    repeats = repeats or int(report.get("repeats", 3))
    tree = lwip_tree(lwip_tree_path)
    root = make_run_dir(out, f"reproduce-{name}", "all")
    names = [c["case"] for c in report["cases"]]
    unknown = [n for n in only or [] if n not in names]
    if unknown:
        raise NetreproError(f"report {name} has no case '{unknown[0]}'", f"use one of: {', '.join(names)}")
    cases = [c for c in report["cases"] if not only or c["case"] in only]
    time = time or TimeChoice()
    results: dict[str, CaseResult] = {}
    shared: dict[tuple, tuple[list[RunResult], list[str], str | None]] = {}
    for spec in cases:
        results[spec["case"]] = _run_case(report, spec, root, tree, repeats,
                                          seconds or float(spec.get("seconds", report.get("seconds", 10))),
                                          progress, shared, time)
    for result in results.values():
        judge(result, results)
    platform = load_platform(report["platform"])
    document = {"report": name, "title": report.get("title", name), "source": report.get("source"),
                "note": report.get("note"), "stand_in": platform.stand_in,
                "unit": report.get("unit", "Mbit/s"), "unit_bytes": report.get("unit_bytes"),
                "repeats": repeats, "time": time.mode, "run_dir": str(root),
                "cases": [asdict(r) for r in results.values()]}
    (root / "reproduce.json").write_text(json.dumps(document, indent=2) + "\n")
    (root / "reproduce.txt").write_text(format_report(document) + "\n")
    return document


def _run_case(report: dict[str, Any], spec: dict[str, Any], root: Path, tree: Path, repeats: int,
              seconds: float, progress: Progress,
              shared: dict[tuple, tuple[list[RunResult], list[str], str | None]],
              time: TimeChoice) -> CaseResult:
    platform = load_platform(spec.get("platform", report["platform"]))
    if "rx_overflow" in spec:
        platform = platform.with_nic(rx_overflow=spec["rx_overflow"])
    profile = resolve_profile(platform, spec["profile"])
    workload = Workload(spec["workload"], seconds=seconds, bytes=spec.get("bytes"),
                        chunk=int(spec.get("chunk", report.get("chunk", 1460))),
                        warmup_s=float(spec.get("warmup", report.get("warmup", 0.0))))
    direction = case_direction(spec)
    result = CaseResult(case=spec["case"], platform=platform.name, profile=profile.name, link=spec["link"],
                        workload=spec["workload"], report_mbps=report_figure_mbps(report, spec), direction=direction,
                        rx_overflow=platform.nic.get("rx_overflow", "hold"),
                        report_value=spec.get("report_value"), claim=spec.get("claim", {}))
    key = (platform.name, profile.name, spec["link"], repr(workload), spec.get("rx_overflow"))
    if key not in shared:
        plan = RunPlan(platform, build_firmware(platform, profile, tree, progress.step),
                       LinkSpec.from_preset(platform.link_preset(spec["link"])), workload, time=platform.time(time))
        runs, run_dirs, error = [], [], None
        for i in range(repeats):
            run_dir = root / f"{spec['case'].replace(' ', '-')}-{i + 1}"
            run_dir.mkdir()
            progress.step(f"{spec['case']}: run {i + 1} of {repeats}")
            try:
                runs.append(execute_trusted(plan, run_dir))
            except NetreproError as exc:
                error = str(exc)
            run_dirs.append(str(run_dir))
        shared[key] = (runs, run_dirs, error)
    runs, result.run_dirs, result.error = shared[key][0], list(shared[key][1]), shared[key][2]
    summarise_runs(result, runs)
    if result.median_mbps is not None and report.get("unit_bytes"):
        result.median_in_unit = round(result.median_mbps * 1e6 / 8 / int(report["unit_bytes"]), 1)
    return result


def case_direction(spec: dict[str, Any]) -> str | None:
    two_way = spec["workload"] in TWO_WAY
    direction = spec.get("direction")
    if two_way and direction not in ("rx", "tx"):
        raise NetreproError(f"case '{spec['case']}' runs {spec['workload']} (both directions) but does not say "
                            "which one it is", 'add direction = "rx" (peer -> device) or "tx" (device -> peer)')
    if not two_way and direction is not None:
        raise NetreproError(f"case '{spec['case']}': direction applies only to the rr and duplex workloads",
                            "remove it")
    return direction


def report_figure_mbps(report: dict[str, Any], spec: dict[str, Any]) -> float | list[float] | None:
    """The report's figure in Mbit/s: given as such, or converted from report_value in the report's unit."""
    if "report_value" not in spec:
        return spec.get("report_mbps")
    if not report.get("unit_bytes"):
        raise NetreproError(f"report {report.get('report')}: case '{spec['case']}' gives report_value "
                            "but the report has no unit_bytes", "add unit and unit_bytes (e.g. KB/s, 1024)")
    return round(float(spec["report_value"]) * int(report["unit_bytes"]) * 8 / 1e6, 4)


def _time_line(mode: str | None) -> str:
    if mode == "host":
        return ("time: host (each core ran as fast as this host allows): the figures depend on the host, not only "
                "on the board; cpu % and us/seg are the board's own measure of its core")
    return ("time: device (each core at its modelled speed; the link follows the board's clock); cpu % and us/seg "
            "are the board's own measure of its core, in its time")


def format_report(document: dict[str, Any]) -> str:
    """The report's table: its figures beside netrepro's, with the verdict and the claim."""
    unit, unit_bytes = document.get("unit", "Mbit/s"), document.get("unit_bytes")
    in_unit = unit != "Mbit/s" and unit_bytes
    scale = f"; report figures in {unit}, 1 K = {unit_bytes} B, converted to Mbit/s" if in_unit else ""
    lines = [document["title"], f"({document['repeats']} runs a case; figures in Mbit/s{scale}; run folders in "
                                f"{document['run_dir']})", _time_line(document.get("time"))]
    stand_in = document.get("stand_in") or {}
    if stand_in:
        lines.append(f"stand-in: {stand_in.get('cpu')}; NIC: {stand_in.get('nic')}")
    if document.get("note"):
        lines.append(f"note: {document['note']}")
    lines.append("")
    unit_head = f" {'report ' + unit:>13} {'netrepro ' + unit:>15}" if in_unit else ""
    header = f"{'case':<22}{unit_head} {'report':>9} {'netrepro median (min-max)':>27} {'bound':>7} {'MSS':>5} " \
             f"{'window':>7} {'cpu %':>6} {'us/seg':>7}  {'verdict':<20} claim"
    lines += [header, "-" * len(header)]
    for c in document["cases"]:
        report = c["report_mbps"]
        report_text = "-" if report is None else f"{report[0]:g}-{report[1]:g}" if isinstance(report, list) \
            else f"{report:.3g}" if report < 10 else f"{report:g}"
        figure = "failed" if c["median_mbps"] is None else \
            f"{c['median_mbps']:.2f} ({c['min_mbps']:.2f}-{c['max_mbps']:.2f})" if c["median_mbps"] < 10 else \
            f"{c['median_mbps']:.1f} ({c['min_mbps']:.1f}-{c['max_mbps']:.1f})"
        claim = "-" if c["claim_holds"] is None else "holds" if c["claim_holds"] else "FAILS"
        window = "-" if c["device_window_max"] is None else f"{c['device_window_max']:g}"
        units = (f" {format_number(c.get('report_value')):>13} {format_number(c.get('median_in_unit')):>15}"
                 if in_unit else "")
        lines.append(f"{c['case']:<22}{units} {report_text:>9} {figure:>27} {format_number(c['bound_mbps']):>7} "
                     f"{format_number(c['device_mss']):>5} {window:>7} {format_number(c.get('device_cpu_percent')):>6} "
                     f"{format_number(c.get('us_per_segment')):>7}  {c['verdict'] or '-':<20} {claim}")
    notes = [f"  {c['case']}: {n}" for c in document["cases"] for n in c["claim_notes"] if n.startswith("fails")]
    if notes:
        lines += ["", "claims that do not hold:", *notes]
    return "\n".join(lines)


