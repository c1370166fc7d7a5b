"""Every claim kind holding, failing and (where it can) unknown, and a case's figure against the report's.

Built from CaseResult objects directly: no emulator runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.studies.cases import CaseResult
from harness.studies.claims import (
    CHECKS,
    CONSTRUCTION_MARK,
    agreement,
    claim_result,
    combine,
    construction_reason,
    judge,
)


def case(name: str = "c", median: float | None = 10.0, report: Any = None, claim: dict | None = None,
         **facts: Any) -> CaseResult:
    runs = [median] if median is not None else []
    return CaseResult(case=name, platform="p", profile="q", link="l", workload="sock-rx", report_mbps=report,
                      median_mbps=median, min_mbps=median, max_mbps=median, runs_mbps=runs, claim=claim or {},
                      **facts)


def others(*cases: CaseResult) -> dict[str, CaseResult]:
    return {c.case: c for c in cases}


BEFORE = case("before", 10.0)
FAST = case("fast", 94.0)
DEFAULT = case("default", 2.0, report=2.2069)
# (claim kind, the claim's value, the case's facts, the other cases, the answer: True holds, False fails, None unknown)
EXAMPLES: list[tuple[str, Any, dict[str, Any], dict[str, CaseResult], bool | None]] = [
    ("verdict", "window-limited", {"verdict": "window-limited"}, {}, True),
    ("verdict", "window-limited", {"verdict": "link-limited"}, {}, False),
    ("verdict", "window-limited", {"verdict": None}, {}, None),
    ("window", 23360, {"device_window_max": 23360, "device_window": 21900.0}, {}, True),
    ("window", 23360, {"device_window_max": 46720}, {}, False),
    ("window", 23360, {"device_window_max": None}, {}, None),
    ("mss", 1460, {"device_mss": 1460}, {}, True),
    ("mss", 1460, {"device_mss": 536}, {}, False),
    ("mss", 1460, {"device_mss": None}, {}, None),
    ("window_scaling", False, {"window_scaling": False}, {}, True),
    ("window_scaling", False, {"window_scaling": True}, {}, False),
    ("window_scaling", False, {"window_scaling": None}, {}, None),   # no SYN captured: not "off"
    ("window_scaling", True, {"window_scaling": None}, {}, None),
    ("faster_than", {"case": "before", "factor": 1.1}, {"median_mbps": 11.5}, others(BEFORE), True),
    ("faster_than", {"case": "before", "factor": 1.1}, {"median_mbps": 10.5}, others(BEFORE), False),
    ("faster_than", {"case": "before", "factor": 1.1}, {"median_mbps": 11.5}, {}, None),  # not run (--case)
    ("faster_than", {"case": "before", "factor": 1.1}, {"median_mbps": 11.5}, others(case("before", 0.0)), None),
    ("faster_than", {"case": "before", "factor": 1.1}, {"median_mbps": 11.5}, others(case("before", None)), None),
    ("slower_than", {"case": "fast", "factor": 0.5}, {"median_mbps": 47.0}, others(FAST), True),
    ("slower_than", {"case": "fast", "factor": 0.5}, {"median_mbps": 76.6}, others(FAST), False),
    ("slower_than", {"case": "fast", "factor": 0.5}, {"median_mbps": 47.0}, others(case("fast", 0.0)), None),
    ("close_to", {"case": "before", "within": 0.15}, {"median_mbps": 11.0}, others(BEFORE), True),
    ("close_to", {"case": "before", "within": 0.15}, {"median_mbps": 12.0}, others(BEFORE), False),
    ("close_to", {"case": "before", "within": 0.15}, {"median_mbps": 11.0}, others(case("before", None)), None),
    ("close_to", {"case": "before", "within": 0.15}, {"median_mbps": 11.0}, others(case("before", 0.0)), None),
    ("at_least_mbps", 85, {"median_mbps": 91.8}, {}, True),
    ("at_least_mbps", 85, {"median_mbps": 71.5}, {}, False),
    ("link_limited_or_within", 0.15, {"verdict": "link-limited", "median_mbps": 20.0, "link_mbps": 43.0}, {}, True),
    ("link_limited_or_within", 0.15, {"verdict": "window-limited", "median_mbps": 37.0, "link_mbps": 43.0}, {}, True),
    ("link_limited_or_within", 0.15, {"verdict": "window-limited", "median_mbps": 27.2, "link_mbps": 43.0}, {},
     False),
    ("link_limited_or_within", 0.15, {"verdict": "window-limited", "median_mbps": 27.2, "link_mbps": None}, {}, None),
    ("link_limited_or_within", 0.15, {"verdict": None, "median_mbps": 27.2, "link_mbps": 43.0}, {}, None),
    ("within_of_report", 0.30, {"median_mbps": 2.0, "report_mbps": 2.2069}, {}, True),
    ("within_of_report", 0.30, {"median_mbps": 3.4, "report_mbps": 2.2069}, {}, False),
    ("within_of_report", 0.30, {"median_mbps": 37.0, "report_mbps": [35, 39]}, {}, None),
    ("within_of_report", 0.30, {"median_mbps": 2.0, "report_mbps": None}, {}, None),
    ("ratio_to", {"case": "default", "within": 0.15}, {"median_mbps": 2.67, "report_mbps": 2.8164}, others(DEFAULT),
     True),
    ("ratio_to", {"case": "default", "within": 0.15}, {"median_mbps": 3.4, "report_mbps": 2.8164}, others(DEFAULT),
     False),
    ("ratio_to", {"case": "default", "within": 0.15}, {"median_mbps": 2.67, "report_mbps": 2.8164},
     others(case("default", 2.0, report=None)), None),
    ("ratio_to", {"case": "default", "within": 0.15}, {"median_mbps": 2.67, "report_mbps": 2.8164},
     others(case("default", None, report=2.2069)), None),
]
PREFIX = {True: "holds: ", False: "fails: ", None: "unknown: "}


def test_every_claim_kind_has_examples_that_hold_and_fail():
    answers: dict[str, set[bool | None]] = {}
    for kind, _, _, _, answer in EXAMPLES:
        answers.setdefault(kind, set()).add(answer)
    assert set(answers) == set(CHECKS), "a claim kind without examples here is untested"
    assert all({True, False} <= found for found in answers.values()), answers


@pytest.mark.parametrize(("kind", "want", "facts", "other", "answer"), EXAMPLES,
                         ids=[f"{e[0]}-{PREFIX[e[4]].rstrip(': ')}-{i}" for i, e in enumerate(EXAMPLES)])
def test_a_claim_holds_fails_or_is_unknown(kind, want, facts, other, answer):
    facts = dict(facts)
    result = case(median=facts.pop("median_mbps", 10.0), report=facts.pop("report_mbps", None), claim={kind: want},
                  **facts)
    judge(result, {**other, result.case: result})
    assert result.claim_holds is answer, result.claim_notes
    assert len(result.claim_notes) == 1 and result.claim_notes[0].startswith(PREFIX[answer]), result.claim_notes


def test_a_check_without_a_median_is_unknown_not_zero():
    assert CHECKS["at_least_mbps"](case(median=None), 85, {})[0] is None
    assert CHECKS["faster_than"](case(median=None), {"case": "before", "factor": 1.1}, others(BEFORE))[0] is None


def test_the_notes_say_what_was_measured_against_what_was_claimed():
    result = case(median=76.6, claim={"slower_than": {"case": "fast", "factor": 0.5}})
    judge(result, others(FAST))
    assert result.claim_notes == ["fails: 0.81x fast (claim <= 0.5x)"]
    mss = case(claim={"mss": 1460})
    judge(mss, {})
    assert "no SYN" in mss.claim_notes[0]


def test_unknown_parts_leave_the_claim_unknown_unless_another_part_fails():
    assert combine([True, True]) is True
    assert combine([True, None]) is None
    assert combine([None, False, True]) is False
    unknown = case(claim={"mss": 1460, "window_scaling": False}, device_mss=1460, window_scaling=None)
    judge(unknown, {})
    assert unknown.claim_holds is None
    assert [n.split(":")[0] for n in unknown.claim_notes] == ["holds", "unknown"]
    failing = case(claim={"mss": 1460, "window_scaling": False}, device_mss=536, window_scaling=None)
    judge(failing, {})
    assert failing.claim_holds is False


def test_a_case_with_a_failed_run_does_not_hold_even_when_its_other_runs_do():
    result = case(median=91.8, claim={"at_least_mbps": 85}, runs_failed=1, error="QEMU exited with status 1")
    result.runs_mbps = [91.5, 91.8]
    judge(result, {})
    assert result.claim_holds is False
    assert result.claim_notes[0] == "fails: 1 of 3 runs failed: QEMU exited with status 1"
    assert result.claim_notes[1].startswith("holds: ")  # what the surviving runs showed is still said
    nothing = case(median=None, claim={"at_least_mbps": 85}, runs_failed=3, error="boot timed out")
    judge(nothing, {})
    assert nothing.claim_holds is False and "3 of 3 runs failed: boot timed out" in nothing.claim_notes[0]


def test_a_case_without_a_claim_is_not_judged():
    result = case(runs_failed=1, error="x")
    judge(result, {})
    assert result.claim_holds is None and result.claim_notes == []


@pytest.mark.parametrize(("report", "median", "band", "delta", "agrees"), [
    (31, 27.2, 0.15, -12.3, True),
    (31, 25.0, 0.15, -19.4, False),
    (100, 115.0, 0.15, 15.0, True),              # the band's edge agrees
    (0.0201, 88.9, 0.15, 442188.6, False),
    ([35, 39], 37.0, 0.15, 0.0, True),           # inside a range: no distance
    ([35, 39], 40.8, 0.15, 4.6, True),           # from the nearer end, as % of that end
    ([35, 39], 30.0, 0.15, -14.3, True),
    ([35, 39], 29.0, 0.15, -17.1, False),
    ([35, 39], 44.0, 0.10, 12.8, False),         # the report's own band
])
def test_a_figure_against_the_report(report, median, band, delta, agrees):
    found = agreement(case(median=median, report=report), band)
    assert found.delta_pct == pytest.approx(delta, abs=0.05)
    assert found.agrees is agrees


def test_no_figure_is_no_answer_but_a_failed_run_is_a_no():
    assert agreement(case(report=None)).agrees is None and agreement(case(report=None)).delta_pct is None
    assert agreement(case(median=None, report=31)).agrees is None
    assert agreement(case(median=None, report=31, runs_failed=3)).agrees is False
    within = case(median=30.0, report=31, runs_failed=1)
    assert agreement(within).agrees is False and agreement(within).delta_pct == pytest.approx(-3.2)
    assert agreement(case(median=37.0, report=[35, 39], runs_failed=1)).agrees is False


# --- claims that hold by construction: shown, not counted -------------------------------------------------------

def test_a_claim_of_what_the_profile_sets_holds_by_construction():
    result = case(claim={"window": 23360, "mss": 1460, "window_scaling": False}, device_window_max=23360,
                  device_mss=1460, window_scaling=False)
    judge(result, {})
    assert result.claim_holds is True and result.by_construction is True
    assert claim_result(vars(result)) == "by-construction"
    assert all(n.startswith("holds: ") and n.endswith(CONSTRUCTION_MARK) for n in result.claim_notes)
    assert construction_reason(vars(result)) == ("window, mss, window_scaling: the capture against what the case's "
                                                 "own profile sets")


def test_a_by_construction_part_that_fails_fails_the_claim():
    """The build did not honour an option: a real failure, counted as one."""
    result = case(claim={"window": 23360}, device_window_max=46720)
    judge(result, {})
    assert result.claim_holds is False and result.by_construction is False
    assert claim_result(vars(result)) == "fails"
    assert result.claim_notes == [f"fails: device window 46720 (median None; claim 23360){CONSTRUCTION_MARK}"]


def test_a_by_construction_part_left_unknown_leaves_the_claim_unknown():
    result = case(claim={"mss": 1460}, device_mss=None)
    judge(result, {})
    assert result.claim_holds is None and not result.by_construction and claim_result(vars(result)) == "unknown"


def test_a_mechanism_beside_the_by_construction_parts_is_what_the_claim_answers():
    mixed = case(claim={"window": 23360, "verdict": "window-limited"}, device_window_max=23360,
                 verdict="window-limited")
    judge(mixed, {})
    assert (mixed.claim_holds, mixed.by_construction, claim_result(vars(mixed))) == (True, False, "holds")
    assert mixed.claim_notes[0].endswith(CONSTRUCTION_MARK) and not mixed.claim_notes[1].endswith(CONSTRUCTION_MARK)
    failing = case(claim={"window": 23360, "verdict": "window-limited"}, device_window_max=23360,
                   verdict="link-limited")
    judge(failing, {})
    assert claim_result(vars(failing)) == "fails"


def test_a_claim_declared_by_construction_holds_by_construction_with_its_reason():
    why = "the two profiles differ only in TCP_WND, which a send-buffer-limited TX does not use"
    result = case("tx after", 24.4, claim={"close_to": {"case": "before", "within": 0.15}, "by_construction": why})
    judge(result, others(case("before", 23.9)))
    assert (result.claim_holds, result.by_construction, claim_result(vars(result))) == (True, True, "by-construction")
    assert result.claim_notes == [f"holds: 2% from before (claim within 15%){CONSTRUCTION_MARK}"]
    assert construction_reason(vars(result)) == why
    apart = case("tx after", 30.0, claim={"close_to": {"case": "before", "within": 0.15}, "by_construction": why})
    judge(apart, others(case("before", 23.9)))
    assert (apart.claim_holds, claim_result(vars(apart))) == (False, "fails")  # then it was not by construction


def test_a_failed_run_fails_a_by_construction_claim():
    result = case(median=91.8, claim={"mss": 1460}, device_mss=1460, runs_failed=1, error="boot timed out")
    judge(result, {})
    assert (result.claim_holds, result.by_construction) == (False, False)
    assert result.claim_notes[0] == "fails: 1 of 2 runs failed: boot timed out"
