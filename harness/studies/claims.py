"""The claims a report's case can make, each a check of the case's summary against the report or other cases."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.studies.cases import CaseResult


def judge(result: CaseResult, others: dict[str, CaseResult]) -> None:
    """Check the case's claim; claim_holds stays None when the case makes none."""
    if not result.claim:
        return
    if result.median_mbps is None:
        result.claim_holds, result.claim_notes = False, [f"no successful run ({result.error})"]
        return
    notes, holds = [], True
    for key, value in result.claim.items():
        ok, note = CHECKS[key](result, value, others)
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


CHECKS: dict[str, Callable[[CaseResult, Any, dict], tuple[bool, str]]] = {
    "verdict": _check_verdict, "window": _check_window, "mss": _check_mss, "window_scaling": _check_scaling,
    "faster_than": _check_faster, "slower_than": _check_slower, "close_to": _check_close,
    "at_least_mbps": _check_at_least,
    "link_limited_or_within": _check_link, "within_of_report": _check_within_report, "ratio_to": _check_ratio,
}
