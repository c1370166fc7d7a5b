"""The report machinery without runs: case keys, units, two-way cases and the claims' arithmetic."""

from __future__ import annotations

import dataclasses

import pytest

from harness.core.errors import NetreproError
from harness.studies.cases import CaseResult
from harness.studies.claims import judge
from harness.studies.reproduce import case_direction, format_report, load_report, report_figure_mbps


def case(name: str, median: float | None, report: float | None = None, **claim) -> CaseResult:
    return CaseResult(case=name, platform="p", profile="q", link="l", workload="discard", report_mbps=report,
                      median_mbps=median, min_mbps=median, max_mbps=median, claim=claim)


def test_every_report_loads_and_names_the_direction_of_its_two_way_cases():
    for name in ("openmv-n6", "openmv-rt1060", "ethernut2", "xbox"):
        for spec in load_report(name)["cases"]:
            case_direction(spec)  # raises for an rr/duplex case without rx/tx


def test_a_two_way_case_must_say_which_direction_it_is():
    with pytest.raises(NetreproError, match=r"runs rr .* does not say which one"):
        case_direction({"case": "c", "workload": "rr"})
    with pytest.raises(NetreproError, match="only to the rr and duplex"):
        case_direction({"case": "c", "workload": "rx", "direction": "rx"})
    assert case_direction({"case": "c", "workload": "duplex", "direction": "tx"}) == "tx"


def test_report_figures_in_kb_per_second_are_converted_with_the_stated_k():
    report = {"report": "r", "unit": "KB/s", "unit_bytes": 1024}
    assert report_figure_mbps(report, {"case": "c", "report_value": 269.4}) == pytest.approx(2.2069, abs=1e-4)
    assert report_figure_mbps({**report, "unit_bytes": 1000}, {"case": "c", "report_value": 269.4}) == \
        pytest.approx(2.1552)
    with pytest.raises(NetreproError, match="no unit_bytes"):
        report_figure_mbps({"report": "r"}, {"case": "c", "report_value": 1.0})


def test_ratio_and_distance_from_the_report_are_judged_against_the_report_own_figures():
    default = case("default", 2.00, 2.2069)
    tuned = case("tuned", 2.67, 2.8164, within_of_report=0.30, ratio_to={"case": "default", "within": 0.15})
    others = {"default": default, "tuned": tuned}
    judge(tuned, others)
    assert tuned.claim_holds, tuned.claim_notes
    assert "1.335x default vs the report's 1.276x (+5%" in tuned.claim_notes[1]
    far = dataclasses.replace(tuned, median_mbps=3.4, claim_holds=None, claim_notes=[])
    judge(far, others)
    assert far.claim_holds is False and sum(n.startswith("fails") for n in far.claim_notes) == 1  # ratio 1.7x


def test_slower_than_holds_only_at_or_below_the_factor():
    fast = case("nvnetdrv tx", 94.0)
    slow = case("pktdrv tx", 47.0, slower_than={"case": "nvnetdrv tx", "factor": 0.5})
    judge(slow, {"nvnetdrv tx": fast})
    assert slow.claim_holds
    not_slow = case("pktdrv rx", 76.6, slower_than={"case": "nvnetdrv tx", "factor": 0.5})
    judge(not_slow, {"nvnetdrv tx": fast})
    assert not not_slow.claim_holds and "0.81x nvnetdrv tx (claim <= 0.5x)" in not_slow.claim_notes[0]


def test_the_table_shows_the_report_unit_the_stand_in_and_the_note():
    row = dataclasses.asdict(case("default 536", 2.0, 2.2069))
    row.update(report_value=269.4, median_in_unit=244.1)
    text = format_report({"title": "T", "repeats": 3, "run_dir": "/x", "unit": "KB/s", "unit_bytes": 1024,
                          "note": "Nut/OS is not available here", "stand_in": {"cpu": "simavr", "nic": "model"},
                          "cases": [row]})
    assert "report figures in KB/s, 1 K = 1024 B" in text
    assert "stand-in: simavr; NIC: model" in text and "note: Nut/OS is not available here" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("default 536"))
    assert "269.4" in line and "244.1" in line and "2.21" in line


def test_a_case_may_run_the_nic_with_another_overflow_policy():
    from harness.rig.platform import load_platform

    xbox = load_platform("xbox")
    held = xbox.with_nic(rx_overflow="hold")
    assert (xbox.nic["rx_overflow"], held.nic["rx_overflow"]) == ("drop", "hold")
    assert held.nic["wire_rate"] == xbox.nic["wire_rate"] and held.name == "xbox"
    with pytest.raises(NetreproError, match="is not hold or drop"):
        xbox.with_nic(rx_overflow="maybe")
    assert any(c.get("rx_overflow") == "hold" for c in load_report("xbox")["cases"])
