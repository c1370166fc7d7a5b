"""Calibrating the shared medium from a report's UDP figure (harness.studies.medium).

Without a board: the search lands within 1 % of a target for goodput curves of the medium's shape;
through the link alone, the calibrated PHY rate carries the target (checked by a separate flood); and
through the board (real chain), udp-rx over the N6's calibrated medium within 3 % of 43 Mbit/s.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from dataclasses import replace

import pytest

from harness.core.errors import NetreproError
from harness.core.paths import PROJECT_ROOT as ROOT
from harness.link import LinkSpec
from harness.link.saturate import FRAME, UDP_PAYLOAD, goodput, udp_saturation
from harness.rig.devicetime import TimeChoice
from harness.rig.platform import load_platform
from harness.rig.workload import Workload
from harness.runs.plan import Configuration, RunPlan
from harness.studies.medium import (
    MediumCalibration,
    calibrate_medium,
    find_phy_rate,
    record_input,
    record_phy_rate,
    shared_spec,
)
from harness.studies.report_check import check_input
from tests.conftest import netrepro_cli


def turn_goodput(phy_bps: float, frames: int = 28, overhead_s: float = 185.5e-6) -> float:
    """A turn's UDP goodput: `frames` datagrams of air bytes at the PHY rate plus a fixed overhead."""
    air = frames * -(-(FRAME + 28) // 4) * 4 * 8 / phy_bps
    return frames * UDP_PAYLOAD * 8 / (air + overhead_s)


CURVES = {"turn": turn_goodput, "proportional": lambda r: 0.62 * r,
          "saturating": lambda r: 50e6 * r / (r + 30e6)}  # the last tops out at 50 Mbit/s


@pytest.mark.parametrize(("curve", "target"), [(c, t) for c in CURVES for t in (5e6, 20e6, 43e6, 80e6)
                                               if t < 50e6 or c != "saturating"])
def test_the_search_lands_within_1_percent_of_the_target(curve, target):
    calls = []
    rate, got, runs = find_phy_rate(target, lambda r: calls.append(r) or CURVES[curve](r))
    assert got == pytest.approx(target, rel=0.01) and CURVES[curve](rate) == got
    assert (rate, got) in runs and len(runs) == len(calls) <= 8


def test_a_target_out_of_reach_is_one_clear_error():
    with pytest.raises(NetreproError, match="no PHY rate gave 90 Mbit/s"):
        find_phy_rate(90e6, lambda r: 50e6 * r / (r + 30e6))
    with pytest.raises(NetreproError, match="must be positive"):
        find_phy_rate(0, turn_goodput)


def test_goodput_counts_the_bytes_after_the_first_datagram_over_the_time_between():
    got = [(0.0, 1000), (0.5, 1470), (1.0, 1470), (2.0, 1470)]
    assert goodput(got, since=0.5) == (2 * 1470 * 8 / 1.5, 3, 1.5)
    assert goodput(got, since=3.0) == (0.0, 0, 0.0)


def test_the_preset_moves_onto_the_shared_medium_keeping_its_rtt(n6):
    spec = shared_spec(n6, "wifi-wire")
    assert spec.medium == "shared" and spec.rtt_s == pytest.approx(0.0055)
    assert spec.to_device.rate_bps == 0  # the wire's rate does not apply on the air


def test_a_flood_through_a_wire_carries_its_payload_share():
    sat = udp_saturation(LinkSpec.from_preset({"rate": "43mbit"}), seconds=1.5)
    # on a wire the figure is the wall clock's: the first and last stamps may each be as late as the link measured
    # itself (a busy host), which widens the bound by exactly that share of the measured stretch
    host = 2 * sat.to_device.late_us_max / 1e6 / sat.seconds
    assert sat.goodput_bps == sat.wall_bps == pytest.approx(43e6 * UDP_PAYLOAD / (FRAME + 24), rel=0.01 + host)
    assert sat.received < sat.sent


def test_on_the_air_the_goodput_over_the_air_time_is_what_the_receiver_sees():
    spec = LinkSpec.from_preset({"medium": "shared", "phy_rate": "46mbit", "agg_frames": 2})
    sat = udp_saturation(spec, seconds=1.5)
    # two full frames a turn: access + preamble + 2 subframes at 46 Mbit/s + signal ext + SIFS + block ack + ext
    turn = (10 + 2 * 9 + 7.5 * 9 + 36 + 6 + 10 + 32 + 6) * 1e-6 + 2 * (FRAME + 28) * 8 / 46e6
    assert sat.goodput_bps == pytest.approx(2 * UDP_PAYLOAD * 8 / turn, rel=0.005)
    host = 2 * sat.to_device.late_us_max / 1e6 / sat.seconds  # the link's own measure of a busy host's lateness
    assert sat.wall_bps == pytest.approx(sat.goodput_bps, rel=0.03 + host)  # the wall clock, on a shared host


def test_the_calibrated_medium_carries_the_target_through_the_link(n6):
    calibration = calibrate_medium(n6, "wifi", 43e6, seconds=1.5)
    assert abs(calibration.error) <= 0.01 and 20e6 < calibration.phy_rate_bps < 65e6
    again = udp_saturation(shared_spec(n6, "wifi").override(phy_rate=calibration.phy_rate_bps), seconds=1.5)
    assert again.goodput_bps == pytest.approx(43e6, rel=0.01)
    entry = calibration.input_toml("the report's UDP figure")
    assert 'provenance = "report"' in entry and f"{calibration.phy_rate_bps / 1e6:.3f}mbit" in entry


@pytest.mark.real
def test_udp_through_the_board_over_the_calibrated_n6_medium_is_43_mbit(n6, tree, tmp_path, no_leftovers):
    """The preset as calibrate-medium recorded it (platforms/openmv-n6.toml, links.wifi)."""
    spec = LinkSpec.from_preset(n6.link_preset("wifi"))
    assert spec.medium == "shared" and spec.phy_rate_bps != LinkSpec().phy_rate_bps  # calibrated, not the default
    plan = RunPlan(n6, Configuration().build(n6, tree), spec, Workload("udp-rx", seconds=3),
                   time=n6.time(TimeChoice("device")))
    result = plan.execute(tmp_path)
    assert result.throughput_mbps == pytest.approx(43, rel=0.03)
    assert result.link_counters["to_device"]["txops"] > 0 and result.datagrams["received"] > 0

def test_recording_writes_the_rate_into_the_preset_and_the_entry_into_the_report(n6, tmp_path):
    platform = dataclasses.replace(n6, path=tmp_path / "openmv-n6.toml")
    platform.path.write_text(n6.path.read_text())
    record_phy_rate(platform, "wifi", 46_620_000)
    again = load_platform(str(platform.path))
    assert again.links["wifi"]["phy_rate"] == "46.620mbit" and again.links["wifi-wire"] == n6.links["wifi-wire"]
    assert LinkSpec.from_preset(again.link_preset("wifi")).phy_rate_bps == 46_620_000
    with pytest.raises(NetreproError, match=r"\[links.wifi-wire\] has no medium = \"shared\""):
        record_phy_rate(platform, "wifi-wire", 46_620_000)  # a wire preset has nothing to calibrate
    calibration = MediumCalibration(43e6, 46_620_000, 42.99e6, [(65_000_000, 59.95e6), (46_620_000, 42.99e6)],
                                    "openmv-n6", "wifi")
    report = tmp_path / "r.toml"
    report.write_text('report = "r"\n\n[[inputs]]\nname = "other"\nvalue = 1\nprovenance = "report"\nsource = "s"\n')
    record_input(report, calibration.input_toml("PR: 43 of UDP"))
    record_input(report, replace(calibration, phy_rate_bps=46_000_000).input_toml("PR: 43 of UDP"))  # replaces
    inputs = tomllib.loads(report.read_text())["inputs"]
    assert [i["name"] for i in inputs] == ["other", "wifi UDP goodput (calibrates the shared medium)"]
    check_input(inputs[1], set())
    assert inputs[1]["calibrated"]["phy_rate"] == "46.000mbit" and inputs[1]["value"] == 43
    assert inputs[1]["sets"] == "platforms/openmv-n6.toml: links.wifi.phy_rate"


@pytest.mark.parametrize(("args", "message"), [
    (["--link", "ethernet", "--udp", "43mbit", "--record", "openmv-n6"], r"\[links.ethernet\] has no medium"),
    (["--link", "lte", "--udp", "43mbit"], "no link preset 'lte'"),
    (["--link", "wifi", "--udp", "0"], "the UDP target must be positive"),
    (["--link", "wifi", "--udp", "43mbit", "--record", "nope"], "unknown report 'nope'"),
    (["--link", "wifi", "--udp", "43mbit", "--seconds", "0"], "must be positive"),
])
def test_bad_input_is_one_line_and_changes_no_file(args, message):
    before = [p.read_text() for p in (ROOT / "platforms" / "openmv-n6.toml", ROOT / "reports" / "openmv-n6.toml")]
    done = netrepro_cli("calibrate-medium", "openmv-n6", *args)
    error = done.stderr.strip().splitlines()[-1]
    assert done.returncode != 0 and re.search(message, error) and "Traceback" not in done.stderr, done.stderr
    after = [p.read_text() for p in (ROOT / "platforms" / "openmv-n6.toml", ROOT / "reports" / "openmv-n6.toml")]
    assert after == before
