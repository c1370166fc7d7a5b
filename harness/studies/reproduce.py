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
import statistics
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.analysis import load_capture
from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.rig.build import build_firmware, lwip_tree
from harness.rig.peer import Addresses
from harness.rig.platform import PROJECT_ROOT, load_platform
from harness.rig.profile import resolve_profile
from harness.rig.session import make_run_dir
from harness.rig.workload import TWO_WAY, Workload
from harness.studies.run import RunResult, data_rate_bps, execute

REPORTS_DIR = PROJECT_ROOT / "reports"
_CASE_KEYS = {"case", "profile", "link", "workload", "report_mbps", "report_value", "claim", "seconds", "platform",
              "note", "chunk", "bytes", "direction", "warmup", "rx_overflow"}
_CLAIM_KEYS = {"verdict", "window", "mss", "window_scaling", "faster_than", "close_to", "at_least_mbps",
               "link_limited_or_within", "within_of_report", "ratio_to", "slower_than"}


@dataclass
class CaseResult:
    """One case of a report: the report's figure beside netrepro's runs of it."""

    case: str
    platform: str
    profile: str
    link: str
    workload: str
    report_mbps: float | list[float] | None
    direction: str | None = None              # rr / duplex: which direction's figure this case is
    rx_overflow: str = "hold"                 # what the link did with frames the NIC could not take
    report_value: float | None = None         # the report's figure in its own unit (the document's "unit")
    median_in_unit: float | None = None       # netrepro's median in that unit
    runs_mbps: list[float] = field(default_factory=list)
    median_mbps: float | None = None
    min_mbps: float | None = None
    max_mbps: float | None = None
    bound_mbps: float | None = None
    link_mbps: float | None = None
    verdict: str | None = None
    verdict_reason: str | None = None
    device_mss: int | None = None
    device_window: float | None = None       # median of the device's ACKs
    device_window_max: int | None = None     # the window lwIP offers with nothing unread: TCP_WND
    window_scaling: bool | None = None
    rtt_ms: float | None = None
    claim: dict[str, Any] = field(default_factory=dict)
    claim_holds: bool | None = None
    claim_notes: list[str] = field(default_factory=list)
    run_dirs: list[str] = field(default_factory=list)
    error: str | None = None


def report_names() -> list[str]:
    return sorted(p.stem for p in REPORTS_DIR.glob("*.toml"))


def load_report(name: str) -> dict[str, Any]:
    path = REPORTS_DIR / f"{name}.toml"
    if not path.is_file():
        raise NetreproError(f"unknown report '{name}'", f"use one of: {', '.join(report_names())}")
    report = tomllib.loads(path.read_text())
    for case in report.get("cases", []):
        unknown = set(case) - _CASE_KEYS or set(case.get("claim", {})) - _CLAIM_KEYS
        if unknown:
            raise NetreproError(f"{path}: case '{case.get('case')}' has unknown key {sorted(unknown)[0]}",
                                f"allowed: {', '.join(sorted(_CASE_KEYS | _CLAIM_KEYS))}")
    return report


def reproduce(name: str, out: Path | None = None, repeats: int | None = None, seconds: float | None = None,
              only: list[str] | None = None, progress: Progress | None = None,
              lwip_tree_path: str | None = None) -> dict[str, Any]:
    """Run every case of the report; returns {"report", "title", "cases": [...]} and writes it as JSON."""
    progress = progress or Progress(quiet=True)
    report = load_report(name)
    repeats = repeats or int(report.get("repeats", 3))
    tree = lwip_tree(lwip_tree_path)
    root = make_run_dir(out, f"reproduce-{name}", "all")
    cases = [c for c in report["cases"] if not only or c["case"] in only]
    results: dict[str, CaseResult] = {}
    shared: dict[tuple, tuple[list[RunResult], list[str], str | None]] = {}
    for spec in cases:
        results[spec["case"]] = _run_case(report, spec, root, tree, repeats,
                                          seconds or float(spec.get("seconds", report.get("seconds", 10))),
                                          progress, shared)
    for result in results.values():
        _judge(result, results)
    platform = load_platform(report["platform"])
    document = {"report": name, "title": report.get("title", name), "source": report.get("source"),
                "note": report.get("note"), "stand_in": platform.stand_in,
                "unit": report.get("unit", "Mbit/s"), "unit_bytes": report.get("unit_bytes"),
                "repeats": repeats, "run_dir": str(root), "cases": [asdict(r) for r in results.values()]}
    (root / "reproduce.json").write_text(json.dumps(document, indent=2) + "\n")
    (root / "reproduce.txt").write_text(format_report(document) + "\n")
    return document


def _run_case(report: dict[str, Any], spec: dict[str, Any], root: Path, tree: Path, repeats: int,
              seconds: float, progress: Progress,
              shared: dict[tuple, tuple[list[RunResult], list[str], str | None]]) -> CaseResult:
    platform = load_platform(spec.get("platform", report["platform"]))
    if "rx_overflow" in spec:
        platform = platform.with_nic(rx_overflow=spec["rx_overflow"])
    profile = resolve_profile(platform, spec["profile"])
    workload = Workload(spec["workload"], seconds=seconds, bytes=spec.get("bytes"),
                        chunk=int(spec.get("chunk", report.get("chunk", 1460))),
                        warmup_s=float(spec.get("warmup", report.get("warmup", 0.0))))
    direction = _direction(spec)
    result = CaseResult(case=spec["case"], platform=platform.name, profile=profile.name, link=spec["link"],
                        workload=spec["workload"], report_mbps=_report_mbps(report, spec), direction=direction,
                        rx_overflow=platform.nic.get("rx_overflow", "hold"),
                        report_value=spec.get("report_value"), claim=spec.get("claim", {}))
    key = (platform.name, profile.name, spec["link"], repr(workload), spec.get("rx_overflow"))
    if key not in shared:
        firmware = build_firmware(platform, profile, tree, progress.step)
        link = LinkSpec.from_preset(platform.link_preset(spec["link"]))
        runs, run_dirs, error = [], [], None
        for i in range(repeats):
            run_dir = root / f"{spec['case'].replace(' ', '-')}-{i + 1}"
            run_dir.mkdir()
            progress.step(f"{spec['case']}: run {i + 1} of {repeats}")
            try:
                runs.append(execute(platform, firmware, link, workload, run_dir))
            except NetreproError as exc:
                error = str(exc)
            run_dirs.append(str(run_dir))
        shared[key] = (runs, run_dirs, error)
    runs, result.run_dirs, result.error = shared[key][0], list(shared[key][1]), shared[key][2]
    _summarise(result, runs)
    if result.median_mbps is not None and report.get("unit_bytes"):
        result.median_in_unit = round(result.median_mbps * 1e6 / 8 / int(report["unit_bytes"]), 1)
    return result


def _direction(spec: dict[str, Any]) -> str | None:
    two_way = spec["workload"] in TWO_WAY
    direction = spec.get("direction")
    if two_way and direction not in ("rx", "tx"):
        raise NetreproError(f"case '{spec['case']}' runs {spec['workload']} (both directions) but does not say "
                            "which one it is", 'add direction = "rx" (peer -> device) or "tx" (device -> peer)')
    if not two_way and direction is not None:
        raise NetreproError(f"case '{spec['case']}': direction applies only to the rr and duplex workloads",
                            "remove it")
    return direction


def _report_mbps(report: dict[str, Any], spec: dict[str, Any]) -> float | list[float] | None:
    """The report's figure in Mbit/s: given as such, or converted from report_value in the report's unit."""
    if "report_value" not in spec:
        return spec.get("report_mbps")
    if not report.get("unit_bytes"):
        raise NetreproError(f"report {report.get('report')}: case '{spec['case']}' gives report_value "
                            "but the report has no unit_bytes", "add unit and unit_bytes (e.g. KB/s, 1024)")
    return round(float(spec["report_value"]) * int(report["unit_bytes"]) * 8 / 1e6, 4)


def _figure(run: RunResult, direction: str | None) -> float | None:
    value = run.throughput_mbps
    if direction is not None:
        value = value.get(direction) if isinstance(value, dict) else None
    return float(value) if isinstance(value, float | int) else None


def _summarise(result: CaseResult, runs: list[RunResult]) -> None:
    measured = [(f, r) for r in runs if (f := _figure(r, result.direction)) is not None]
    if len(measured) < len(runs) and result.error is None:
        result.error = (f"{len(runs) - len(measured)} of {len(runs)} runs reported no {result.direction} figure "
                        "(see the run folders' iperf logs)")
    if not measured:
        return
    figures = [f for f, _ in measured]
    result.runs_mbps = [round(f, 2) for f in figures]
    result.median_mbps = round(statistics.median(figures), 2)
    result.min_mbps, result.max_mbps = round(min(figures), 2), round(max(figures), 2)
    middle = sorted(measured, key=lambda fr: fr[0])[len(measured) // 2][1]  # the median run speaks for the case
    rate = data_rate_bps(middle, result.direction)
    analysis = middle.analysis if result.direction is None else _direction_analysis(middle, result.direction, rate)
    result.verdict, result.verdict_reason = analysis.get("verdict"), analysis.get("verdict_reason")
    result.link_mbps = round(rate / 1e6, 2) if rate else None
    result.bound_mbps = analysis.get("bound_mbps") or result.link_mbps
    result.device_mss = analysis.get("device_mss")
    window = analysis.get("device_window") or {}
    result.device_window, result.device_window_max = window.get("median"), window.get("max")
    scaling = analysis.get("window_scaling") or ""
    # negotiated only when both SYNs carry the option; unknown without the SYN
    result.window_scaling = None if scaling.startswith("unknown") or not scaling else scaling == "negotiated"
    result.rtt_ms = analysis.get("rtt_ms")


def _direction_analysis(run: RunResult, direction: str, rate: float | None) -> dict[str, Any]:
    """The analysis of the one connection of a two-way run that carried this direction's data."""
    try:
        return load_capture(run.capture, device_ip=Addresses().device, link_rate_bps=rate, captured_at="device",
                            sender="device" if direction == "tx" else "peer").summary()
    except NetreproError as exc:
        return {"verdict": None, "verdict_reason": str(exc)}


def _judge(result: CaseResult, others: dict[str, CaseResult]) -> None:
    """Check the case's claim; claim_holds stays None when the case makes none."""
    if not result.claim:
        return
    if result.median_mbps is None:
        result.claim_holds, result.claim_notes = False, [f"no successful run ({result.error})"]
        return
    notes, holds = [], True
    for key, value in result.claim.items():
        ok, note = _CHECKS[key](result, value, others)
        holds &= ok
        notes.append(("holds: " if ok else "fails: ") + note)
    result.claim_holds, result.claim_notes = holds, notes


def _check_verdict(r: CaseResult, want: str, _: dict) -> tuple[bool, str]:
    return r.verdict == want, f"verdict {r.verdict} (claim {want})"


def _check_window(r: CaseResult, want: int, _: dict) -> tuple[bool, str]:
    """The window the device offers with nothing unread; the median is lower while the
    application has data queued (MicroPython calls tcp_recved only as it reads)."""
    return r.device_window_max == want, f"device window {r.device_window_max} (median {r.device_window}; claim {want})"


def _check_mss(r: CaseResult, want: int, _: dict) -> tuple[bool, str]:
    return r.device_mss == want, f"device MSS {r.device_mss} (claim {want})"


def _check_scaling(r: CaseResult, want: bool, _: dict) -> tuple[bool, str]:
    return bool(r.window_scaling) == want, f"window scaling {'on' if r.window_scaling else 'off'}"


def _check_faster(r: CaseResult, want: dict, others: dict[str, CaseResult]) -> tuple[bool, str]:
    other = others.get(want["case"])
    if other is None or other.median_mbps is None or r.median_mbps is None:
        return False, f"no figure for {want['case']}"
    ratio = r.median_mbps / other.median_mbps if other.median_mbps else float("inf")
    return ratio >= want["factor"], f"{ratio:.2f}x {want['case']} (claim >= {want['factor']}x)"


def _check_slower(r: CaseResult, want: dict, others: dict[str, CaseResult]) -> tuple[bool, str]:
    other = others.get(want["case"])
    if other is None or not other.median_mbps or r.median_mbps is None:
        return False, f"no figure for {want['case']}"
    ratio = r.median_mbps / other.median_mbps
    return ratio <= want["factor"], f"{ratio:.2f}x {want['case']} (claim <= {want['factor']}x)"


def _check_close(r: CaseResult, want: dict, others: dict[str, CaseResult]) -> tuple[bool, str]:
    other = others.get(want["case"])
    if other is None or not other.median_mbps or r.median_mbps is None:
        return False, f"no figure for {want['case']}"
    diff = abs(r.median_mbps - other.median_mbps) / other.median_mbps
    return diff <= want["within"], f"{diff:.0%} from {want['case']} (claim within {want['within']:.0%})"


def _check_at_least(r: CaseResult, want: float, _: dict) -> tuple[bool, str]:
    return (r.median_mbps or 0) >= want, f"{r.median_mbps} Mbit/s (claim >= {want})"


def _check_within_report(r: CaseResult, within: float, _: dict) -> tuple[bool, str]:
    if not isinstance(r.report_mbps, float | int) or r.median_mbps is None:
        return False, "no single report figure to compare with"
    diff = (r.median_mbps - r.report_mbps) / r.report_mbps
    return abs(diff) <= within, f"{diff:+.0%} from the report's {r.report_mbps:g} Mbit/s (claim within {within:.0%})"


def _check_ratio(r: CaseResult, want: dict, others: dict[str, CaseResult]) -> tuple[bool, str]:
    other = others.get(want["case"])
    if other is None or not other.median_mbps or r.median_mbps is None:
        return False, f"no figure for {want['case']}"
    if not isinstance(r.report_mbps, float | int) or not isinstance(other.report_mbps, float | int):
        return False, "the report gives no single figure for both cases"
    ratio, report_ratio = r.median_mbps / other.median_mbps, r.report_mbps / other.report_mbps
    diff = ratio / report_ratio - 1
    return abs(diff) <= want["within"], (f"{ratio:.3f}x {want['case']} vs the report's {report_ratio:.3f}x "
                                         f"({diff:+.0%}; claim within {want['within']:.0%})")


def _check_link(r: CaseResult, within: float, _: dict) -> tuple[bool, str]:
    rate = r.link_mbps
    if r.verdict == "link-limited":
        return True, "link-limited"
    if rate and r.median_mbps is not None and r.median_mbps >= (1 - within) * rate:
        return True, f"{r.median_mbps} Mbit/s within {within:.0%} of the link's {rate}"
    return False, (f"verdict {r.verdict}, {r.median_mbps} Mbit/s vs the link's {rate} "
                   f"(claim link-limited or within {within:.0%})")


_CHECKS: dict[str, Callable[[CaseResult, Any, dict], tuple[bool, str]]] = {
    "verdict": _check_verdict, "window": _check_window, "mss": _check_mss, "window_scaling": _check_scaling,
    "faster_than": _check_faster, "slower_than": _check_slower, "close_to": _check_close,
    "at_least_mbps": _check_at_least,
    "link_limited_or_within": _check_link, "within_of_report": _check_within_report, "ratio_to": _check_ratio,
}


def format_report(document: dict[str, Any]) -> str:
    """The report's table: its figures beside netrepro's, with the verdict and the claim."""
    unit, unit_bytes = document.get("unit", "Mbit/s"), document.get("unit_bytes")
    in_unit = unit != "Mbit/s" and unit_bytes
    scale = f"; report figures in {unit}, 1 K = {unit_bytes} B, converted to Mbit/s" if in_unit else ""
    lines = [document["title"], f"({document['repeats']} runs a case; figures in Mbit/s{scale}; run folders in "
                                f"{document['run_dir']})"]
    stand_in = document.get("stand_in") or {}
    if stand_in:
        lines.append(f"stand-in: {stand_in.get('cpu')}; NIC: {stand_in.get('nic')}")
    if document.get("note"):
        lines.append(f"note: {document['note']}")
    lines.append("")
    unit_head = f" {'report ' + unit:>13} {'netrepro ' + unit:>15}" if in_unit else ""
    header = f"{'case':<22}{unit_head} {'report':>9} {'netrepro median (min-max)':>27} {'bound':>7} {'MSS':>5} " \
             f"{'window':>7}  {'verdict':<20} claim"
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
        units = f" {_num(c.get('report_value')):>13} {_num(c.get('median_in_unit')):>15}" if in_unit else ""
        lines.append(f"{c['case']:<22}{units} {report_text:>9} {figure:>27} {_num(c['bound_mbps']):>7} "
                     f"{_num(c['device_mss']):>5} {window:>7}  {c['verdict'] or '-':<20} {claim}")
    notes = [f"  {c['case']}: {n}" for c in document["cases"] for n in c["claim_notes"] if n.startswith("fails")]
    if notes:
        lines += ["", "claims that do not hold:", *notes]
    return "\n".join(lines)


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:g}"
