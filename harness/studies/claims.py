"""The claims a report's case can make, each a check of the case's summary against the report or other cases,
and how far a case's figure is from the report's.

A check answers True (holds), False (fails) or None (unknown: the evidence it needs is missing, e.g. no SYN
was captured, or the case it compares with has no figure). Unknown is its own answer: a claim with an unknown
part and no failing part is unknown, never quietly counted as holding or failing.

Some parts hold by construction: `window`, `mss` and `window_scaling` compare the capture with what the case's
own profile sets, and a case may declare its whole claim so (`by_construction = "why"`, e.g. two profiles that
differ only in an option the workload does not use). Such a part is shown, its note marked, but it tests
nothing the report says: a claim made only of them that holds answers `by-construction` and is not counted
among the mechanisms. One that fails still fails (the build did not honour an option: a real failure).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.studies.cases import CaseResult

Outcome = tuple[bool | None, str]
_PREFIX = {True: "holds: ", False: "fails: ", None: "unknown: "}
DEFAULT_BAND = 0.15
# the checks that compare the capture with what the case's own profile sets: they hold by construction
BY_CONSTRUCTION = ("window", "mss", "window_scaling")
DECLARED = "by_construction"  # a claim's key: the whole claim holds by construction, and why (not a check)
CONSTRUCTION_MARK = " [by construction]"


@dataclass(frozen=True)
class Agreement:
    """A case's median against the report's figure."""

    delta_pct: float | None   # signed; a range: 0 inside it, else from its nearer end, as % of that end
    agrees: bool | None       # within the band; None: no report figure or no measurement


def judge(result: CaseResult, others: dict[str, CaseResult]) -> None:
    """Check the case's claim; claim_holds stays None when the case makes none, and is None for unknown."""
    if not result.claim:
        return
    if result.median_mbps is None:
        result.claim_holds = False
        result.claim_notes = [f"fails: no successful run ({failed_runs_text(result)})"]
        return
    parts = checked_parts(result.claim)
    outcomes = [CHECKS[key](result, value, others) for key, value in parts.items()]
    built = [part_by_construction(result.claim, key) for key in parts]
    marks = [CONSTRUCTION_MARK if made else "" for made in built]
    notes = [_PREFIX[ok] + note + mark for (ok, note), mark in zip(outcomes, marks, strict=True)]
    if result.runs_failed:  # a figure from the runs that happened to succeed is not the case's figure
        outcomes.insert(0, (False, failed_runs_text(result)))
        notes.insert(0, "fails: " + failed_runs_text(result))
    result.claim_holds = combine([ok for ok, _ in outcomes])
    result.claim_notes = notes
    # answered by construction only when it holds: a failing part is a real failure, an unknown one unknown
    result.by_construction = result.claim_holds is True and all(built)


def checked_parts(claim: dict[str, Any]) -> dict[str, Any]:
    """The claim's checks (its `by_construction` reason is no check)."""
    return {key: value for key, value in claim.items() if key != DECLARED}


def part_by_construction(claim: dict[str, Any], key: str) -> bool:
    """Whether this part of the claim holds by construction: declared for the whole claim, or a check of what
    the case's own profile sets."""
    return DECLARED in claim or key in BY_CONSTRUCTION


def construction_reason(case: dict[str, Any]) -> str:
    """Why a case's claim holds by construction: the reason it declares, else which of its checks compare the
    capture with the case's own profile."""
    claim = case.get("claim") or {}
    if DECLARED in claim:
        return str(claim[DECLARED])
    keys = ", ".join(key for key in checked_parts(claim) if key in BY_CONSTRUCTION)
    return f"{keys}: the capture against what the case's own profile sets"


def combine(parts: list[bool | None]) -> bool | None:
    """Any failing part fails the claim; otherwise any unknown part leaves it unknown."""
    if any(p is False for p in parts):
        return False
    return None if any(p is None for p in parts) else True


def claim_result(result: dict[str, Any]) -> str | None:
    """The claim's answer by name for a case of the document: holds, fails, unknown, or None without a claim."""
    if not result.get("claim"):
        return None
    if result.get("by_construction") and result.get("claim_holds") is True:
        return "by-construction"
    return {True: "holds", False: "fails", None: "unknown"}[result.get("claim_holds")]


def failed_runs_text(result: CaseResult | dict[str, Any]) -> str:
    """'1 of 3 runs failed: <the first error>', for a case or a case of the document."""
    row = result if isinstance(result, dict) else vars(result)
    failed = row.get("runs_failed") or 0
    return f"{failed} of {len(row['runs_mbps']) + failed} runs failed: {row.get('error') or 'no message'}"


def agreement(result: CaseResult, band: float = DEFAULT_BAND) -> Agreement:
    """How far the median is from the report's figure, and whether that is within the report's band."""
    report, median = result.report_mbps, result.median_mbps
    if report is None or median is None:
        return Agreement(None, False if report is not None and result.runs_failed else None)
    low, high = (report[0], report[1]) if isinstance(report, list) else (report, report)
    end = low if median < low else high if median > high else None
    if end is None:
        return Agreement(0.0, not result.runs_failed)
    if end == 0:  # no scale to state a distance in
        return Agreement(None, None)
    delta = (median - end) / end
    # a case with a failed run does not agree, whatever its surviving runs measured
    return Agreement(round(delta * 100, 1), abs(delta) <= band + 1e-12 and not result.runs_failed)


def _check_verdict(r: CaseResult, want: str, _: dict) -> Outcome:
    if r.verdict is None:
        return None, f"no verdict from the capture ({r.verdict_reason or 'no analysis'}; claim {want})"
    return r.verdict == want, f"verdict {r.verdict} (claim {want})"


def _check_window(r: CaseResult, want: int, _: dict) -> Outcome:
    """The window the device offers with nothing unread; the median is lower while the
    application has data queued (MicroPython calls tcp_recved only as it reads)."""
    if r.device_window_max is None:
        return None, f"no device window seen in the capture (claim {want})"
    return r.device_window_max == want, f"device window {r.device_window_max} (median {r.device_window}; claim {want})"


def _check_mss(r: CaseResult, want: int, _: dict) -> Outcome:
    if r.device_mss is None:
        return None, f"no device MSS seen: the capture has no SYN of the device (claim {want})"
    return r.device_mss == want, f"device MSS {r.device_mss} (claim {want})"


def _check_scaling(r: CaseResult, want: bool, _: dict) -> Outcome:
    if r.window_scaling is None:  # negotiated or not is decided in the SYNs
        return None, f"window scaling not seen: no SYN in the capture (claim {'on' if want else 'off'})"
    return r.window_scaling == want, f"window scaling {'on' if r.window_scaling else 'off'}"


def _other_median(r: CaseResult, name: str, others: dict[str, CaseResult]) -> float | None:
    """The other case's median, when both have a figure to divide by; None leaves the check unknown."""
    other = others.get(name)
    if other is None or not other.median_mbps or r.median_mbps is None:
        return None
    return other.median_mbps


def _check_faster(r: CaseResult, want: dict, others: dict[str, CaseResult]) -> Outcome:
    other = _other_median(r, want["case"], others)
    if other is None:
        return None, f"no figure for {want['case']} (claim >= {want['factor']}x)"
    ratio = r.median_mbps / other
    return ratio >= want["factor"], f"{ratio:.2f}x {want['case']} (claim >= {want['factor']}x)"


def _check_slower(r: CaseResult, want: dict, others: dict[str, CaseResult]) -> Outcome:
    other = _other_median(r, want["case"], others)
    if other is None:
        return None, f"no figure for {want['case']} (claim <= {want['factor']}x)"
    ratio = r.median_mbps / other
    return ratio <= want["factor"], f"{ratio:.2f}x {want['case']} (claim <= {want['factor']}x)"


def _check_close(r: CaseResult, want: dict, others: dict[str, CaseResult]) -> Outcome:
    other = _other_median(r, want["case"], others)
    if other is None:
        return None, f"no figure for {want['case']} (claim within {want['within']:.0%})"
    diff = abs(r.median_mbps - other) / other
    return diff <= want["within"], f"{diff:.0%} from {want['case']} (claim within {want['within']:.0%})"


def _check_at_least(r: CaseResult, want: float, _: dict) -> Outcome:
    if r.median_mbps is None:
        return None, f"no figure (claim >= {want})"
    return r.median_mbps >= want, f"{r.median_mbps} Mbit/s (claim >= {want})"


def _check_within_report(r: CaseResult, within: float, _: dict) -> Outcome:
    if not isinstance(r.report_mbps, float | int) or not r.report_mbps or r.median_mbps is None:
        return None, "no single report figure to compare with"
    diff = (r.median_mbps - r.report_mbps) / r.report_mbps
    return abs(diff) <= within, f"{diff:+.0%} from the report's {r.report_mbps:g} Mbit/s (claim within {within:.0%})"


def _check_ratio(r: CaseResult, want: dict, others: dict[str, CaseResult]) -> Outcome:
    other = _other_median(r, want["case"], others)
    if other is None:
        return None, f"no figure for {want['case']}"
    theirs = others[want["case"]].report_mbps
    if not isinstance(r.report_mbps, float | int) or not isinstance(theirs, float | int) or not theirs:
        return None, "the report gives no single figure for both cases"
    ratio, report_ratio = r.median_mbps / other, r.report_mbps / theirs
    diff = ratio / report_ratio - 1
    return abs(diff) <= want["within"], (f"{ratio:.3f}x {want['case']} vs the report's {report_ratio:.3f}x "
                                         f"({diff:+.0%}; claim within {want['within']:.0%})")


def _check_link(r: CaseResult, within: float, _: dict) -> Outcome:
    rate = r.link_mbps
    if r.verdict in ("link-limited", "bus-limited"):  # the bus is the WiFi link's own stage
        return True, r.verdict
    if rate and r.median_mbps is not None and r.median_mbps >= (1 - within) * rate:
        return True, f"{r.median_mbps} Mbit/s within {within:.0%} of the link's {rate}"
    if not rate or r.verdict is None:  # neither the verdict nor the figure can say
        return None, f"verdict {r.verdict}, no link rate to compare {r.median_mbps} Mbit/s with"
    return False, (f"verdict {r.verdict}, {r.median_mbps} Mbit/s vs the link's {rate} "
                   f"(claim link-limited or within {within:.0%})")


CHECKS: dict[str, Callable[[CaseResult, Any, dict], Outcome]] = {
    "verdict": _check_verdict, "window": _check_window, "mss": _check_mss, "window_scaling": _check_scaling,
    "faster_than": _check_faster, "slower_than": _check_slower, "close_to": _check_close,
    "at_least_mbps": _check_at_least,
    "link_limited_or_within": _check_link, "within_of_report": _check_within_report, "ratio_to": _check_ratio,
}


def percent(band: float) -> str:
    return f"{band * 100:g} %"


def agrees_text(c: dict[str, Any]) -> str:
    """A case's agreement with the report's figure in a word: yes / no, or why it is not counted (host: the D
    check moved it; fitted; chosen)."""
    if c.get("host_dependent") and c.get("report_mbps") is not None:
        return "host"
    if c.get("fitted") and c.get("report_mbps") is not None:
        return "fitted"
    if c.get("chosen") and c.get("report_mbps") is not None:
        return "chosen"
    return {True: "yes", False: "no", None: "-"}[c.get("agrees")]


def summary_line(counts: dict[str, int], band: float) -> str:
    """The line that closes a report's table: agreement with the report, mechanisms, failures. Each clause says
    what it left out only when something was (documents written before a count existed lack its key)."""
    return f"{_figures_clause(counts, band)}; {_mechanisms_clause(counts)}; {_failures_clause(counts)}"


def _figures_clause(counts: dict[str, int], band: float) -> str:
    repeated, split, host = counts.get("repeated", 0), counts.get("split", 0), counts.get("host_dependent", 0)
    notes = [f"{repeated} measured by more than one case, each counted once"] if repeated else []
    notes += [f"{split} split: its cases disagree, not counted as agreeing"] if split else []
    notes += [f"{host} host-dependent by the D check, not counted"] if host else []
    distinct = " distinct" if repeated else ""
    head = f"{counts['agree']} of {counts['figures']}{distinct} report figures agree within {percent(band)}"
    return f"{head} ({'; '.join(notes)})" if notes else head


def _mechanisms_clause(counts: dict[str, int]) -> str:
    built = counts.get("by_construction", 0)
    more = f" ({built} more by construction, not counted)" if built else ""
    return f"mechanisms {counts['hold']} of {counts['mechanisms']} hold{more}"


def _failures_clause(counts: dict[str, int]) -> str:
    replaced = counts.get("replaced", 0)
    cases = "1 case" if replaced == 1 else f"{replaced} cases"
    more = f"; {cases} had a run the host disturbed replaced at twice D (listed below)" if replaced else ""
    return f"{counts['fail']} {'case fails' if counts['fail'] == 1 else 'cases fail'}{more}"
