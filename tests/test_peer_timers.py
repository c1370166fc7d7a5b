"""The peer's TCP timers in the board's time (harness.rig.peer_timers): what Linux lets a namespace scale
by D is scaled, and result.json says which timers were and which were not."""

from __future__ import annotations

import re

import pytest

from harness.link import LinkSpec
from harness.rig.devicetime import TimeChoice
from harness.rig.peer import Addresses
from harness.rig.peer_timers import PeerTimers, _network
from harness.rig.session import Session


def test_the_minimum_rto_and_sack_compression_scale_with_d():
    timers = PeerTimers(4.0)
    assert timers.route_options() == ["rto_min", "800ms"]
    assert timers.sysctls() == {"net/ipv4/tcp_rto_min_us": 800_000, "net/ipv4/tcp_comp_sack_delay_ns": 4_000_000,
                                "net/ipv4/tcp_comp_sack_slack_ns": 400_000}
    record = timers.record({key: True for key in timers.sysctls()})
    assert record["rto_min"] == {"scaled": True, "linux_ms": 200.0, "board_ms": 200.0,
                                 "how": "route rto_min 800 ms; net.ipv4.tcp_rto_min_us 800000"}
    assert record["comp_sack_delay"]["scaled"] is True and record["comp_sack_delay"]["board_ms"] == 1.0
    # what cannot be scaled says so, with what the board sees of it: D times shorter
    assert record["delayed_ack"]["scaled"] is False and record["delayed_ack"]["board_ms"] == 10.0
    assert record["initial_rto"]["scaled"] is False and record["initial_rto"]["board_ms"] == 250.0
    assert "BPF" in record["initial_rto"]["how"]


def test_a_kernel_without_the_namespace_setting_is_named():
    timers = PeerTimers(2.0)
    record = timers.record({"net/ipv4/tcp_rto_min_us": False, "net/ipv4/tcp_comp_sack_delay_ns": False})
    assert record["rto_min"]["scaled"] is True  # the route's rto_min still holds
    assert "tcp_rto_min_us not in this kernel" in record["rto_min"]["how"]
    assert record["comp_sack_delay"] == {"scaled": False, "linux_ms": 1.0, "board_ms": 0.5,
                                         "how": "not scaled: this kernel refused net.ipv4.tcp_comp_sack_delay_ns"}


def test_at_d_1_nothing_is_set_but_quickack():
    assert PeerTimers(1.0).route_options() == [] and PeerTimers(1.0).sysctls() == {}
    assert PeerTimers(1.0, quickack=True).route_options() == ["quickack", "1"]
    record = PeerTimers(1.0).record()
    assert all(entry["scaled"] is False and entry["how"].startswith("D = 1") for key, entry in record.items()
               if key != "dilation")
    assert PeerTimers(3.0, quickack=True).record()["delayed_ack"]["quickack"] is True


def test_the_route_is_the_subnets():
    assert _network(Addresses()) == "10.77.0.0"
    assert _network(Addresses(peer="192.168.7.130", device="192.168.7.131", prefix=25)) == "192.168.7.128"


@pytest.mark.real
def test_the_peers_connection_to_the_board_has_its_rto_floor_in_the_boards_time(n6, tree, no_leftovers, tmp_path):
    """A real connection from the peer to the board's iperf server in device time: Linux's RTO for it (ss)
    sits at 200 ms of the board's time, D x 200 ms of the wall's, and the route and the namespace say so."""
    from harness.rig.build import FirmwareConfig, build_firmware
    from harness.rig.profile import resolve_profile

    firmware = build_firmware(FirmwareConfig(n6, resolve_profile(n6, "mp-n6-after"), tree))
    time = n6.time(TimeChoice("device"))
    assert time.dilation > 1.0, time
    with Session(n6, firmware, tmp_path, LinkSpec.from_preset(n6.link_preset("ethernet")), time=time) as rig:
        rig.console.command("iperf server")
        assert rig.ping()
        route = rig.namespace.run(["ip", "route", "show", "10.77.0.0/24"]).stdout
        assert f"rto_min {round(200 * time.dilation)}ms" in route.replace("rto_min lock", "rto_min"), route
        sysctl = rig.namespace.run(["cat", "/proc/sys/net/ipv4/tcp_rto_min_us"]).stdout
        assert int(sysctl) == round(200_000 * time.dilation)
        hold = ("import socket, subprocess, sys\n"
                "s = socket.create_connection((sys.argv[1], 5001), timeout=30)\n"
                "import time; time.sleep(0.5)\n"
                "print(subprocess.run(['ss', '-tin', 'dst', sys.argv[1]], capture_output=True, text=True).stdout)\n")
        out = rig.namespace.run(["python3", "-c", hold, rig.addresses.device], timeout=60).stdout
        rto_ms = float(re.search(r"\brto:([\d.]+)", out).group(1))
        # Linux's RTO after the handshake: srtt + its variance, the variance floored at rto_min; the srtt is
        # the board's sub-millisecond RTT times D. (No data: one segment would wait for lwIP's delayed ACK, up
        # to 250 ms of the board's time, and the peer's RTO at 200 ms of it would fire first, as on the bench.)
        assert "retrans" not in out or "retrans:0/0" in out, out
        assert 200 * time.dilation <= rto_ms <= 200 * time.dilation + 20 * time.dilation, (out, time.dilation)
        assert rig.peer_timers["rto_min"]["scaled"] is True


@pytest.mark.real
def test_a_peer_that_acks_every_segment_has_quickack_on_its_route(n6, tree, no_leftovers, tmp_path):
    from harness.rig.build import FirmwareConfig, build_firmware
    from harness.rig.profile import resolve_profile

    firmware = build_firmware(FirmwareConfig(n6, resolve_profile(n6, "mp-n6-after"), tree))
    with Session(n6, firmware, tmp_path, LinkSpec(), peer_quickack=True) as rig:
        route = rig.namespace.run(["ip", "route", "show", "10.77.0.0/24"]).stdout
        assert "quickack 1" in route, route
        assert rig.peer_timers["delayed_ack"]["quickack"] is True


def test_a_report_or_case_says_its_peer_acked_every_segment():
    from harness.studies.reproduce import case_setup

    case = {"case": "c", "profile": "mp-n6-after", "link": "wifi", "workload": "sock-rx"}
    report = {"report": "r", "platform": "openmv-n6", "cases": [case]}
    time = TimeChoice("device")
    assert case_setup(report, case, 2.0, time).peer_quickack is False
    assert case_setup({**report, "peer_quickack": True}, case, 2.0, time).peer_quickack is True
    assert case_setup({**report, "peer_quickack": True}, {**case, "peer_quickack": False}, 2.0, time).peer_quickack \
        is False


@pytest.mark.real
def test_duplexs_return_leg_is_timed_by_the_capture_in_the_boards_time(netrepro):
    """iperf -d: the peer measures both legs on the wall clock; each figure is retimed by its connection's data
    in the capture (the board's time), and the run records the peer's timers it ran with."""
    result = netrepro.run("openmv-n6", "mp-n6-after", link="ethernet", workload="duplex", seconds=2)
    timed = result.time["peer_figures_timed_by"]
    assert set(timed) == {"rx", "tx"} and all("in the capture" in how for how in timed.values()), timed
    assert set(result.throughput_mbps) == {"rx", "tx"} and min(result.throughput_mbps.values()) > 1
    assert result.peer_timers["rto_min"]["scaled"] is (result.time["dilation"] != 1.0)
