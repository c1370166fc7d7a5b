"""The WiFi chip's host bus (bus_rate, bus_cost) as a stage of its own on the shared medium.

Every frame crosses the bus once, on the board's side of the air (before the air toward the peer, after it
toward the device), taking bus_cost + its bytes * 8 / bus_rate, one transfer at a time for both directions
(harness/link/c/bus.h, "the WiFi chip's host bus"). Checked here: the arithmetic in harness/link/air.py, the link
against it (exactly through its bus time counters, within 3 % on a flood), that bus_rate 0 changes nothing,
that a bus on a wire is refused, the calibration and the sensitivity study with a bus, the verdict
`bus-limited`, and one real-chain run judged so.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.core.errors import NetreproError
from harness.core.ethernet import MAX_FRAME, wire_bytes
from harness.link import LinkSpec, link_binary
from harness.link.air import (
    ACK_FRAME,
    ACKS_PER_SEGMENT,
    bus_rate_bps,
    bus_s,
    bus_udp_goodput_bps,
    capacity_bps,
    phy_rate_for,
    saturated_rate_bps,
    tcp_capacity_bps,
    udp_goodput_bps,
)
from harness.link.saturate import FRAME, UDP_PAYLOAD, udp_saturation
from harness.rig.devicetime import TimeChoice
from harness.rig.platform import load_platform
from harness.rig.workload import Workload
from harness.runs.analyse import data_rate
from harness.runs.plan import Configuration, RunPlan
from harness.studies.medium import calibrate_medium, check_bus
from harness.studies.sensitivity import Target, apply, case_setup, plan_inputs, planned_runs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from captures_gen import DEVICE_IP, Scenario, write_scenario
from linkbench import DEV_MAC, MS, PEER_MAC, Bench, frame_number, raw_frame

US = 1e-6
DEVICE = TimeChoice("device")


def shared(**settings) -> LinkSpec:
    return LinkSpec.from_preset({"medium": "shared", **settings})


@pytest.fixture
def root():
    path = Path(tempfile.mkdtemp(prefix="nrb-", dir="/tmp"))  # unix socket paths are short
    yield path
    shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------ (a) the arithmetic


def test_a_transfer_is_its_cost_and_its_bytes_at_the_bus_rate():
    bus = shared(bus_rate="30mbit", bus_cost="50us")
    assert bus.bus_rate_bps == 30_000_000 and bus.bus_cost_s == pytest.approx(50 * US)
    assert bus_s(bus, 1512) == pytest.approx(50 * US + 1512 * 8 / 30e6)
    assert bus_rate_bps(bus, 1512) == pytest.approx(wire_bytes(1512) * 8 / bus_s(bus, 1512))
    # TCP: the ACKs (one per two segments) cross the same bus the other way
    both = bus_s(bus, MAX_FRAME) + ACKS_PER_SEGMENT * bus_s(bus, ACK_FRAME)
    assert bus_rate_bps(bus, acks=ACKS_PER_SEGMENT) == pytest.approx(wire_bytes(MAX_FRAME) * 8 / both)
    assert bus_s(shared(), 1512) == 0 and bus_rate_bps(shared()) == float("inf")


def test_a_bus_slower_than_the_air_limits_the_udp_goodput():
    air = shared(phy_rate="80mbit")
    bus = air.override(bus_rate="30mbit", bus_cost="50us")
    assert udp_goodput_bps(bus, FRAME, UDP_PAYLOAD) == pytest.approx(UDP_PAYLOAD * 8 / (50 * US + FRAME * 8 / 30e6))
    assert udp_goodput_bps(bus, FRAME, UDP_PAYLOAD) < 0.4 * udp_goodput_bps(air, FRAME, UDP_PAYLOAD)
    assert capacity_bps(bus, FRAME)[1] == "bus" and capacity_bps(air, FRAME)[1] == "air"
    # a bus faster than the air leaves the air's figure as it was
    fast = air.override(bus_rate="400mbit", bus_cost="20us")
    assert udp_goodput_bps(fast, FRAME, UDP_PAYLOAD) == udp_goodput_bps(air, FRAME, UDP_PAYLOAD)
    # for TCP the ACKs' transfers count too: a bus that carries the UDP flood may not carry TCP's data and ACKs
    close = shared(phy_rate="46mbit", bus_rate="56mbit", bus_cost="40us")
    assert capacity_bps(close, MAX_FRAME)[1] == "air" and tcp_capacity_bps(close)[1] == "bus"


def test_bus_rate_0_changes_no_number():
    for spec in (shared(phy_rate="46.683mbit"), shared(agg_frames=8, cwmin=31)):
        none = spec.override(bus_rate=0, bus_cost="100us")  # a cost without a rate: no bus either
        assert udp_goodput_bps(none, FRAME, UDP_PAYLOAD) == udp_goodput_bps(spec, FRAME, UDP_PAYLOAD)
        assert tcp_capacity_bps(none) == (saturated_rate_bps(spec), "air")
        assert phy_rate_for(none, 40e6, FRAME, UDP_PAYLOAD) == phy_rate_for(spec, 40e6, FRAME, UDP_PAYLOAD)


def test_phy_rate_for_accounts_for_the_bus_and_refuses_one_too_slow():
    air = shared()
    bus = air.override(bus_rate="200mbit", bus_cost="40us")  # carries ~117 Mbit/s of UDP: the air decides
    assert phy_rate_for(bus, 43e6, FRAME, UDP_PAYLOAD) == phy_rate_for(air, 43e6, FRAME, UDP_PAYLOAD)
    slow = air.override(bus_rate="40mbit", bus_cost="40us")
    carried = bus_udp_goodput_bps(slow, FRAME, UDP_PAYLOAD)
    assert carried == pytest.approx(UDP_PAYLOAD * 8 / (40 * US + FRAME * 8 / 40e6))
    with pytest.raises(ValueError, match=rf"the bus carries at most {carried / 1e6:.3f} Mbit/s of UDP"):
        phy_rate_for(slow, 43e6, FRAME, UDP_PAYLOAD)
    found = phy_rate_for(slow, 0.99 * carried, FRAME, UDP_PAYLOAD)  # just under the bus: the air must keep up
    assert udp_goodput_bps(slow.override(phy_rate=found), FRAME, UDP_PAYLOAD) >= 0.99 * carried


# ------------------------------------------------------------------ (c) the settings


def test_a_bus_on_a_wire_is_one_clear_error():
    for build in (lambda: LinkSpec.from_preset({"rate": "43mbit", "bus_rate": "30mbit"}),
                  lambda: LinkSpec().override(bus_rate="30mbit"),
                  lambda: shared(bus_rate="30mbit").override(medium="wire")):
        with pytest.raises(NetreproError, match=r"bus_rate 30 Mbit/s needs medium = \"shared\".*set medium") as err:
            build()
        assert "\n" not in str(err.value)
    assert LinkSpec().override(bus_cost="40us").bus_cost_s == pytest.approx(40 * US)  # no rate: no bus, allowed


def test_the_c_link_refuses_a_bus_on_a_wire_too(tmp_path):
    base = [str(link_binary()), "--device-sock", str(tmp_path / "a"), "--device-remote", str(tmp_path / "b"),
            "--peer-sock", str(tmp_path / "c"), "--peer-remote", str(tmp_path / "d")]
    proc = subprocess.run([*base, "--medium", "wire", "--bus_rate", "30000000"], capture_output=True, text=True,
                          timeout=5)
    assert proc.returncode == 2 and "needs medium=shared" in proc.stderr and proc.stderr.count("\n") == 1


# ------------------------------------------------------------------ (b) the link against the arithmetic


def test_each_frame_crosses_the_bus_once_on_the_boards_side(root):
    """One frame at a time each way: the board's frame takes the bus, then a turn; the peer's a turn, then the
    bus; the bus time counters are exactly the transfers' times. Passages read from the link's own capture."""
    spec = shared(phy_rate="300mbit", bus_rate="10mbit", bus_cost="200us", rtt="2ms")
    transfer = bus_s(spec, 1514)
    assert transfer == pytest.approx(200 * US + 1514 * 8 / 10e6)
    with Bench(spec, root, capture_at="both") as b:
        for i in range(4):
            b.from_device(raw_frame(i))
            (_, frame), *_ = b.at_peer(1)
            assert frame_number(frame) == i
            b.from_peer(raw_frame(i, 1514, PEER_MAC, DEV_MAC))
            (_, frame), *_ = b.at_device(1)
            assert frame_number(frame) == i
        counters = b.link.stop()
    late = [out - into - (transfer + 1e-3) * 1e9 for into, out in b.passages().values()]
    for c in (counters.to_peer, counters.to_device):
        assert c.bus_transfers == 4 and c.bus_s == pytest.approx(4 * transfer, abs=1e-8) and c.txops == 4
    # each took the bus's transfer, a turn (~0.2 ms at 300 Mbit/s) and the one-way delay
    assert min(late) >= -50_000 and sorted(late)[len(late) // 2] < 1 * MS, f"{[x // 1000 for x in late]} us"


def test_the_bus_runs_in_the_boards_time(root):
    """Device time: with dilation D a transfer takes D times as long on the link's clock, and bus_s reads in the
    board's time, as airtime_s does. Each passage is read from the link's own capture at both its sides (stamped in
    the board's time: link nanoseconds / D), so neither this process's clock nor its sends count."""
    spec = shared(phy_rate="300mbit", bus_rate="5mbit", bus_cost="300us")
    transfer, dilation = bus_s(spec, 1514), 3.0
    bench = Bench(spec, root, capture_at="both")
    bench.link.dilation = dilation
    with bench as b:
        for i in range(3):
            b.from_device(raw_frame(i))
            assert len(b.at_peer(1)) == 1
        counters = b.link.stop()
    passages = b.passages()
    late = [(out - into) * 1e-9 - transfer for into, out in (passages["to_peer", i] for i in range(3))]
    host = counters.to_peer.late_us_max * US  # the link's own measure of how late a busy host made it
    assert counters.to_peer.bus_s == pytest.approx(3 * transfer, abs=1e-8)
    # a bus kept in wall time would read transfer / D here, below 0; a turn of the air is ~0.2 ms
    shown = f"{[round(x / US) for x in late]} us, host {host / US:.0f}"
    assert min(late) >= 0 and sorted(late)[1] < 0.5e-3 + host, shown


def test_both_directions_share_one_bus(root):
    """40 frames each way at once over a slow bus and a fast air: the bus serves one transfer at a time for both
    directions, so the two finish together after the sum of their transfers, not after half of it."""
    spec = shared(phy_rate="600mbit", bus_rate="20mbit", bus_cost="50us")
    count, transfer = 40, bus_s(spec, 1514)
    with Bench(spec, root, capture_at="both") as b:
        with b.frozen():
            b.from_device(raw_frame(0))
            b.from_peer(raw_frame(0, 1514, PEER_MAC, DEV_MAC))
            for i in range(1, count):
                b.from_device(raw_frame(i))
                b.from_peer(raw_frame(i, 1514, PEER_MAC, DEV_MAC))
        at_peer = b.at_peer(count, timeout=5)
        at_device = b.at_device(count, timeout=5)
        counters = b.link.stop()
    assert [frame_number(f) for _, f in at_peer] == [frame_number(f) for _, f in at_device] == list(range(count))
    for c in (counters.to_peer, counters.to_device):
        assert c.bus_transfers == count and c.bus_s == pytest.approx(count * transfer, abs=1e-8)
    busy = 2 * count * transfer * 1e9
    passages = b.passages().values()  # the link's own stamps: the first arrival, the last handover
    start, end = min(into for into, _ in passages), max(out for _, out in passages)
    assert 0.95 * busy < end - start < busy + 15 * MS, f"{(end - start) / 1e6:.1f} ms for {busy / 1e6:.1f} ms of bus"
    assert counters.total_dropped == 0


def test_a_flood_through_a_slow_bus_carries_what_the_bus_arithmetic_says():
    spec = shared(phy_rate="80mbit", rtt="5.5ms", bus_rate="30mbit", bus_cost="50us")
    expected = udp_goodput_bps(spec, FRAME, UDP_PAYLOAD)  # the bus's: the air would carry ~74 Mbit/s
    assert expected == pytest.approx(bus_udp_goodput_bps(spec, FRAME, UDP_PAYLOAD))
    sat = udp_saturation(spec, seconds=1.5)
    assert sat.goodput_bps == pytest.approx(expected, rel=0.03)
    assert sat.wall_bps == pytest.approx(expected, rel=0.03)  # the receiver's own figure, on the wall clock
    c = sat.to_device
    assert c is not None and c.bus_transfers > 0 and c.bus_s == pytest.approx(c.bus_transfers * bus_s(spec, FRAME))
    assert c.bus_s >= c.airtime_s * 0.95  # the bus was busy for as long as the air: the slower stage never idled
    assert c.bus_queue_hwm_pkts == spec.to_device.limit_packets  # the chip's buffer toward the board filled
    assert c.dropped["queue"] > 0


def test_a_flood_without_a_bus_is_what_it_was():
    spec = shared(phy_rate="46mbit", agg_frames=2)
    none = udp_saturation(spec.override(bus_rate=0, bus_cost="40us"), seconds=1.5)
    # two full frames a turn, as tests/test_medium_calibration.py has it
    turn = (10 + 2 * 9 + 7.5 * 9 + 36 + 6 + 10 + 32 + 6) * US + 2 * (FRAME + 28) * 8 / 46e6
    assert none.goodput_bps == pytest.approx(2 * UDP_PAYLOAD * 8 / turn, rel=0.005)
    assert none.to_device is not None and none.to_device.bus_s == 0 and none.to_device.bus_transfers == 0
    fast = udp_saturation(spec.override(bus_rate="1gbit", bus_cost="1us"), seconds=1.5)  # a bus that never binds
    assert fast.goodput_bps == pytest.approx(none.goodput_bps, rel=0.005)


# ------------------------------------------------------------------ calibration with a bus


def test_the_calibration_finds_the_phy_rate_with_the_presets_bus(n6):
    preset = LinkSpec.from_preset(n6.link_preset("wifi"))  # its bus: assumed values (reports/openmv-n6.toml)
    calibration = calibrate_medium(n6, "wifi", 43e6, seconds=1.5)
    assert abs(calibration.error) <= 0.01 and calibration.settings["bus_rate_bps"] == preset.bus_rate_bps
    entry = calibration.input_toml("s")
    assert f'with_bus_rate = "{preset.bus_rate_bps / 1e6:g}mbit"' in entry and 'with_bus_cost = "40us"' in entry
    # the bus alone carries far more UDP than 43 Mbit/s: the air decides, at the PHY rate the preset records
    assert bus_udp_goodput_bps(preset, FRAME, UDP_PAYLOAD) > 2.5 * 43e6
    assert calibration.phy_rate_bps == pytest.approx(preset.phy_rate_bps, rel=0.01)


def test_a_bus_that_cannot_carry_the_target_is_refused_before_any_flood(n6):
    preset = LinkSpec.from_preset(n6.link_preset("wifi"))
    slow = preset.override(bus_rate="40mbit")
    with pytest.raises(NetreproError, match=r"host bus carries at most 34\.\d+ Mbit/s of UDP .* less than the 43 "
                                            r"Mbit/s target: no PHY rate carries it; give \[links.wifi\]") as err:
        check_bus(slow, "wifi", 43e6)
    assert "\n" not in str(err.value)
    most = bus_udp_goodput_bps(preset, FRAME, UDP_PAYLOAD) / 1e6
    with pytest.raises(NetreproError, match=f"host bus carries at most {most:.3f}"):
        calibrate_medium(n6, "wifi", 120e6)


# ------------------------------------------------------------------ sensitivity: a bus input


def _bus_report(sets: str, value: float, unit: str, low: float, high: float) -> dict:
    return {"platform": "openmv-n6",
            "cases": [{"case": "bus rx", "workload": "sock-rx", "link": "wifi", "profile": "mp-n6-after"},
                      {"case": "bus tx", "workload": "sock-tx", "link": "wifi", "profile": "mp-n6-after"},
                      {"case": "air rx", "workload": "sock-rx", "link": "wifi", "profile": "mp-n6-after"}],
            "inputs": [{"name": "bus", "value": value, "unit": unit, "provenance": "assumed", "range": [low, high],
                        "sets": f"platforms/openmv-n6.toml: links.wifi.{sets}"}]}


def test_the_study_plans_a_bus_input_like_the_airs_settings():
    ran = ["bus rx", "bus tx", "air rx"]
    report = _bus_report("bus_rate", 192, "Mbit/s", 60, 400)  # 192: the preset's
    (rate,), not_varied = plan_inputs(report, "r", DEVICE, ran)
    assert not not_varied and rate.target == Target("air", "openmv-n6", "bus_rate", "wifi") and rate.note is None
    assert rate.settings == {"value": "192mbit", "low": "60mbit", "high": "400mbit"}
    assert rate.shown["low"].startswith("bus_rate 60mbit, phy_rate ")
    assert planned_runs([rate], report, ran) == 2 * 3  # both ends, the three cases over wifi (its bus)
    setup = case_setup(report, report["cases"][0], None, DEVICE)
    for value, plain in (("60mbit", 60_000_000), ("400mbit", 400_000_000)):
        spec = apply(setup, rate.target, value).link_spec()
        assert spec.bus_rate_bps == plain and spec.bus_cost_s == pytest.approx(40 * US) and spec.medium == "shared"
        # the pair still carries the preset's UDP figure: the PHY rate found again
        assert udp_goodput_bps(spec, FRAME, UDP_PAYLOAD) == pytest.approx(
            udp_goodput_bps(setup.link_spec(), FRAME, UDP_PAYLOAD), rel=1e-4)
    (cost,), _ = plan_inputs(_bus_report("bus_cost", 40, "us", 20, 150), "r", DEVICE, ran)
    assert cost.settings == {"value": "40us", "low": "20us", "high": "150us"}
    assert apply(setup, cost.target, "150us").link_spec().bus_cost_s == pytest.approx(150 * US)


def test_a_bus_end_the_udp_figure_rules_out_is_not_varied_and_says_why():
    _, (why,) = plan_inputs(_bus_report("bus_cost", 40, "us", 20, 300), "r", DEVICE, ["bus rx"])
    at_300 = LinkSpec.from_preset(load_platform("openmv-n6").link_preset("wifi")).override(bus_cost="300us")
    most = bus_udp_goodput_bps(at_300, FRAME, UDP_PAYLOAD) / 1e6
    assert why["why"].startswith(f"at bus_cost 300us, the bus carries at most {most:.3f}"), why
    assert "the report's UDP figure rules that end out" in why["why"]
    _, (why,) = plan_inputs(_bus_report("bus_rate", 192, "MB/s", 60, 400), "r", DEVICE, ["bus rx"])
    assert why["why"].startswith("a link rate in MB/s is not converted")


# ------------------------------------------------------------------ (d) the verdict


def _run(spec: LinkSpec, workload: str = "sock-rx") -> SimpleNamespace:
    """What data_rate reads of a run: its link, its workload, no analysis yet."""
    return SimpleNamespace(link=spec, workload={"name": workload}, analysis=None)


def test_the_analysis_learns_the_bus_bound_when_it_is_the_lower():
    air = shared(phy_rate="46.683mbit")
    assert data_rate(_run(air)) == (pytest.approx(saturated_rate_bps(air)), "link")
    slow = air.override(bus_rate="20mbit", bus_cost="40us")
    rate, stage = data_rate(_run(slow))
    assert stage == "bus" and rate == pytest.approx(bus_rate_bps(slow, acks=ACKS_PER_SEGMENT))
    assert data_rate(_run(air.override(bus_rate="200mbit", bus_cost="40us")))[1] == "link"
    paced = slow.paced_to_device(10_000_000, 1)  # the NIC's wire slower still: it is the bound, not the bus
    assert data_rate(_run(paced)) == (10e6, "link")


@pytest.fixture(scope="module")
def at_rate(tmp_path_factory):
    """A capture whose goodput (13.4 Mbit/s) reaches a 15 Mbit/s bound (tests/test_analysis_verdict.py's)."""
    return write_scenario(tmp_path_factory.mktemp("bus") / "at-rate.pcap",
                          Scenario(duration=0.4, sender="device", client="device", rcv_buf=262144, device_wscale=0,
                                   peer_wscale=7, rate_bps=20e6, rtt=0.005))


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_goodput_at_the_buses_bound_is_bus_limited(at_rate):
    from harness.analysis import load_capture
    from harness.analysis.table import format_table

    bus = load_capture(at_rate, device_ip=DEVICE_IP, link_rate_bps=15e6, link_stage="bus")
    assert bus.verdict == "bus-limited", bus.verdict_reason
    assert "of payload the WiFi chip's host bus carries" in bus.verdict_reason
    assert any(line.startswith("bound") and "min(bus 15" in line for line in format_table(bus).splitlines())
    link = load_capture(at_rate, device_ip=DEVICE_IP, link_rate_bps=15e6)
    assert link.verdict == "link-limited" and link.bound_mbps == bus.bound_mbps
    far = load_capture(at_rate, device_ip=DEVICE_IP, link_rate_bps=40e6, link_stage="bus")
    assert far.verdict != "bus-limited"  # a bus bound the goodput does not reach is not the limit


@pytest.mark.real
def test_the_n6_over_a_slow_bus_is_bus_limited(n6, tree, tmp_path, no_leftovers):
    """sock-rx on the N6 over its wifi preset with a 20 Mbit/s bus: the bus (~18 Mbit/s as a link, its ACKs
    included) is below the air (~45), and the board's TCP receive runs at it."""
    spec = LinkSpec.from_preset(n6.link_preset("wifi")).override(bus_rate="20mbit", bus_cost="40us")
    bound, stage = tcp_capacity_bps(spec)
    assert stage == "bus" and bound < 0.5 * saturated_rate_bps(spec)
    plan = RunPlan(n6, Configuration(lwip="mp-n6-after").build(n6, tree), spec, Workload("sock-rx", seconds=3),
                   time=n6.time(TimeChoice("device")))
    result = plan.execute(tmp_path)
    analysis = result.analysis
    assert analysis is not None and analysis.verdict == "bus-limited", analysis.verdict_reason
    payload = bound * 1460 / wire_bytes(MAX_FRAME) / 1e6
    assert result.throughput_mbps == pytest.approx(payload, rel=0.10), (result.throughput_mbps, payload)
    counters = result.link_counters
    assert counters["to_device"]["bus_s"] > 0 and counters["to_peer"]["bus_s"] > 0  # data one way, ACKs the other
