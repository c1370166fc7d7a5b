"""The report machinery without runs: case keys, units, two-way cases, the inputs and their provenance (the
document and its table: tests/test_reproduce_table.py; its bookkeeping: tests/test_reproduce_bookkeeping.py and
tests/test_reproduce_d_check.py; the claims themselves: tests/test_claims.py)."""

from __future__ import annotations

import dataclasses
import tomllib
from typing import Any

import pytest
from reproduce_helpers import ROOT, case

from harness.core.errors import NetreproError
from harness.link.settings import LINK_SETTINGS
from harness.link.units import parse_rate, parse_time
from harness.rig.workload import DISCARD_BYTES
from harness.studies.claims import judge
from harness.studies.report_check import check_input
from harness.studies.report_file import load_report, report_names
from harness.studies.reproduce import (
    case_direction,
    chosen_cases,
    fitted_cases,
    format_report,
    report_band,
    report_figure_mbps,
)


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
    assert (xbox.nic.rx_overflow, held.nic.rx_overflow) == ("drop", "hold")
    assert held.nic.wire_rate == xbox.nic.wire_rate and held.name == "xbox"
    with pytest.raises(NetreproError, match="is not hold or drop"):
        xbox.with_nic(rx_overflow="maybe")
    assert any(c.get("rx_overflow") == "hold" for c in load_report("xbox")["cases"])


# --- the inputs: what the model is given, apart from the figures it predicts ---------------------------------

def _setting(where: str) -> Any:
    """The value a file gives at 'path: dotted.key' (the NIC's rx_overflow_frames: its default when absent)."""
    path, key = where.split(": ")
    table = tomllib.loads((ROOT / path).read_text())
    *parents, leaf = key.split(".")
    for part in parents:
        table = table[part]
    if leaf == "rx_overflow_frames" and leaf not in table:  # the rig's default (harness/rig/session.py)
        return max(2, int(table.get("rx_burst_frames", 0)))
    if parents[:1] == ["links"] and leaf not in table:  # a medium's timing the preset leaves at the standard's
        return next(s.default for s in LINK_SETTINGS if s.name == leaf)
    return table[leaf]


def _in_input_unit(written: Any, unit: str | None) -> float:
    if unit == "Mbit/s":
        return parse_rate(written) / 1e6
    if unit == "ms":
        return parse_time(written) * 1e3
    if unit == "us":
        return parse_time(written) * 1e6
    return float(written)


def test_every_report_declares_its_band_and_inputs_with_their_provenance():
    for name in report_names():
        report = load_report(name)  # raises for an input without what its provenance needs
        assert 0 < report_band(report) < 1 and "band" in report, name
        kinds = {i["provenance"] for i in report["inputs"]}
        assert "assumed" in kinds, f"{name}: every report here rests on some assumption; say which"


def test_every_input_is_the_value_the_file_that_uses_it_gives():
    checked = 0
    for name in report_names():
        for item in load_report(name)["inputs"]:
            if "sets" in item and "calibrated" in item:
                # a calibration's input (the report's UDP figure, its RTT) sets what it produced: the file holds that
                written, leaf = _setting(item["sets"]), item["sets"].rsplit(".", 1)[1]
                if leaf == "rtt":  # calibrate-rtt: the base delay under which an idle ping reads the report's RTT
                    assert parse_time(written) * 1e3 == pytest.approx(item["calibrated"]["base_delay_ms"])
                else:
                    assert parse_rate(written) == parse_rate(item["calibrated"][leaf]), (name, item["name"])
                checked += 1
            elif "sets" in item:
                written = _setting(item["sets"])
                assert _in_input_unit(written, item.get("unit")) == pytest.approx(item["value"]), (name, item["name"])
                checked += 1
    assert checked >= 15
    bytes_sent = next(i for i in load_report("ethernut2")["inputs"] if i["name"] == "bytes sent")
    assert bytes_sent["value"] == DISCARD_BYTES


def test_the_rt1060_wifi_rtt_is_fitted_to_its_rx_figures_and_nothing_else_is_fitted():
    rt1060 = load_report("openmv-rt1060")
    assert fitted_cases(rt1060) == {"wifi rx before", "wifi rx after"}
    fitted = [i for i in rt1060["inputs"] if i["provenance"] == "fitted"]
    assert [i["sets"] for i in fitted] == ["platforms/openmv-rt1060.toml: links.wifi.rtt"]
    for name in ("openmv-n6", "ethernut2", "xbox"):
        assert fitted_cases(load_report(name)) == set(), name
    xbox = {i["name"]: i for i in load_report("xbox")["inputs"]}
    burst = next(i for n, i in xbox.items() if "rx_burst_frames" in n)
    overflow = next(i for n, i in xbox.items() if "rx_overflow_frames" in n)
    assert burst["provenance"] == "assumed"
    # set between figures to give the report's 33 Mbit/s: the pktdrv RX figure hangs on it
    assert (overflow["provenance"], overflow["cases"]) == ("chosen", ["pktdrv rx"])


def test_the_inputs_chosen_to_produce_a_mechanism_name_the_cases_that_hang_on_them():
    assert chosen_cases(load_report("xbox")["inputs"]) == {"pktdrv rx": [
        "frames held in front of the RX ring (rx_overflow_frames)"]}
    assert chosen_cases(load_report("openmv-rt1060")["inputs"]) == {"wifi tx before": ["socket write/read size"]}
    for name in ("openmv-n6", "ethernut2"):
        assert chosen_cases(load_report(name)["inputs"]) == {}, name


GOOD = {"name": "wifi rate", "value": 40, "unit": "Mbit/s", "provenance": "assumed", "why": "not published",
        "range": [25, 72]}


@pytest.mark.parametrize(("change", "message"), [
    ({"provenance": "guessed"}, "has provenance 'guessed'"),
    ({"why": None}, r"\(assumed\) has no why"),
    ({"range": [72, 25]}, "has range"),
    ({"range": [25]}, "has range"),
    ({"value": 80}, "lies outside its range"),
    ({"source": "PR"}, "has unknown key source"),
    ({"provenance": "report", "source": "PR", "why": None, "range": None}, None),
    ({"provenance": "report"}, r"\(report\) has no source"),
    ({"provenance": "fitted", "from": "RX figures", "cases": ["wifi rx"], "why": None, "range": None}, None),
    ({"provenance": "fitted", "from": "RX figures", "cases": ["wifi rx!"], "why": None, "range": None},
     "fitted to unknown case 'wifi rx!'"),
    ({"provenance": "fitted", "from": "RX figures", "cases": [], "why": None, "range": None}, "fitted to no case"),
    ({"provenance": "chosen", "cases": ["wifi rx"]}, None),
    ({"provenance": "chosen", "cases": ["wifi rx"], "range": None}, None),  # a chosen value's range is optional
    ({"provenance": "chosen", "cases": ["wifi rx!"]}, "is chosen for unknown case 'wifi rx!'"),
    ({"provenance": "chosen", "cases": []}, r"\(chosen\) names no case"),
    ({"provenance": "chosen"}, r"\(chosen\) has no cases"),
    ({"provenance": "chosen", "cases": ["wifi rx"], "why": None}, r"\(chosen\) has no why"),
    ({"provenance": "chosen", "cases": ["wifi rx"], "value": 80}, "lies outside its range"),
    ({"provenance": "chosen", "cases": ["wifi rx"], "from": "RX figures"}, "has unknown key from"),
])
def test_an_input_must_say_where_it_came_from(change, message):
    item = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    if message is None:
        check_input(item, {"wifi rx"}, "r.toml")
        return
    with pytest.raises(NetreproError, match=message) as raised:
        check_input(item, {"wifi rx"}, "r.toml")
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("bad", ["0", "1.5", '"15 %"', "true"])
def test_the_band_is_one_fraction_per_report_with_a_default(tmp_path, bad):
    assert report_band({}) == 0.15 and report_band({"band": 0.3}) == 0.3
    text = (ROOT / "reports" / "openmv-n6.toml").read_text().replace("band = 0.15", f"band = {bad}")
    (tmp_path / "r.toml").write_text(text)
    with pytest.raises(NetreproError, match=r"r.toml:\d+: the report has band") as raised:
        load_report(str(tmp_path / "r.toml"))
    assert "\n" not in str(raised.value)
