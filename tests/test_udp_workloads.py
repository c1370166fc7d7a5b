"""udp-rx and udp-tx: iperf2 -u on the peer against the firmware's UDP sink and source (firmware/apps/udp.c).

The real chain over a wire of known rate: the goodput is the rate's payload share, and every datagram
is accounted for by the counters (sent = received + dropped by the link + lost between link and NIC).
"""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import pytest

from harness.core.errors import NetreproError
from harness.core.ethernet import wire_bytes
from harness.link import LinkSpec, read_drops, read_pcap
from harness.rig.build import FirmwareConfig, build_firmware
from harness.rig.devicetime import TimeChoice
from harness.rig.profile import resolve_profile
from harness.rig.transfer import parse_iperf_csv
from harness.rig.workload import UDP_LEN, Workload
from harness.runs.plan import RunPlan

RATE = 20_000_000
FRAME = UDP_LEN + 8 + 20 + 14  # UDP, IPv4 and Ethernet headers


def payload_mbps(rate_bps: float) -> float:
    """What a saturated wire of this rate carries as UDP payload."""
    return rate_bps * UDP_LEN / wire_bytes(FRAME) / 1e6


# ------------------------------------------------------------------ without a board

SERVER_CSV = """\
20261130142511,10.77.0.1,5003,10.77.0.2,43140,1,0.0-0.5,627690,10043040,0.004,0,427,0.000,0
20261130142511,10.77.0.1,5003,10.77.0.2,43140,1,0.0-1.0,1253910,10002552,0.004,12,865,1.387,3
"""
CLIENT_CSV = "20261130142511,10.77.0.1,44418,10.77.0.2,5003,1,0.0-3.0,37505580,100009146,0.000,0,-1,-0.000,0\n"


def test_an_iperf_udp_server_report_gives_the_datagram_counts():
    (t,) = parse_iperf_csv(SERVER_CSV, device_ip="10.77.0.2")
    assert (t.direction, t.bytes, t.seconds) == ("rx", 1253910, 1.0)
    assert t.datagrams == {"lost": 12, "total": 865, "out_of_order": 3}


def test_an_iperf_udp_client_line_has_no_counts_and_a_tcp_line_none_either():
    (t,) = parse_iperf_csv(CLIENT_CSV, device_ip="10.77.0.2")
    assert t.bytes == 37505580 and t.datagrams == {}
    (tcp,) = parse_iperf_csv("20261130,10.77.0.1,5001,10.77.0.2,4000,3,0.0-2.0,1000,4000\n", "10.77.0.2")
    assert tcp.datagrams == {}


def test_udp_workloads_run_for_a_time_at_a_positive_rate():
    assert Workload("udp-rx", rate_bps=43_000_000).describe()["rate_bps"] == 43_000_000
    assert "rate_bps" not in Workload("rx").describe()
    with pytest.raises(NetreproError, match="time, not a byte count"):
        Workload("udp-tx", bytes=1000)
    with pytest.raises(NetreproError, match="rate must be positive"):
        Workload("udp-rx", rate_bps=0)


# ------------------------------------------------------------------ the real chain


def dropped_numbers(run_dir: Path, toward_ip: str) -> set[int]:
    """The link's numbers of the frames it dropped on the way to that address (any reason)."""
    way = "to_device" if toward_ip == "10.77.0.2" else "to_peer"
    return {d["frame"] for d in read_drops(run_dir / "drops.jsonl") if d["dir"] == way}


def iperf_ids(run_dir: Path, toward_ip: str) -> list[tuple[int, int | None]]:
    """Each frame the link delivered toward `toward_ip`, in order, as (the link's number for it, iperf's
    datagram id or None): the link numbers frames as they arrive (1, 2, ...) and logs each one it drops
    with its number, so the k-th delivered frame has the k-th number not in the drops log."""
    frames = [f for _t, f in read_pcap(run_dir / "capture.pcap")]
    device_mac = next(f[6:12] for f in frames if f[12:14] == b"\x08\x00" and f[26:30] == bytes([10, 77, 0, 2]))
    # every frame the link carried that way (IPv6 neighbour traffic and ARP too: the link numbers them all)
    frames = [f for f in frames if (f[6:12] != device_mac) == (toward_ip == "10.77.0.2")]
    dropped = dropped_numbers(run_dir, toward_ip)
    numbers = (n for n in range(1, len(frames) + len(dropped) + 1) if n not in dropped)
    out = []
    for frame, number in zip(frames, numbers, strict=False):
        udp = frame[12:14] == b"\x08\x00" and frame[23] == 17
        ihl = (frame[14] & 0x0F) * 4
        out.append((number, struct.unpack("!i", frame[14 + ihl + 8:14 + ihl + 12])[0] if udp else None))
    return out


def link_dropped_data(run_dir: Path, toward_ip: str, sent: int) -> int:
    """The data datagrams the link dropped, checked gap by gap: between two delivered data datagrams
    with ids a < b the link logged exactly b - a - 1 drops; after the last delivered one (id m) the
    sent - 1 - m datagrams still missing were dropped before the end datagrams (negative ids) got through."""
    dropped = sorted(dropped_numbers(run_dir, toward_ip))
    data = [(n, i) for n, i in iperf_ids(run_dir, toward_ip) if i is not None and i >= 0]
    ids = [i for _n, i in data]
    assert ids == sorted(set(ids)), "the link delivered the datagrams once each, in order"
    for (n0, a), (n1, b) in itertools.pairwise(data):
        assert sum(1 for n in dropped if n0 < n < n1) == b - a - 1, f"the drops between ids {a} and {b}"
    tail = sent - 1 - ids[-1]
    assert sum(1 for n in dropped if n > data[-1][0]) >= tail
    return ids[0] + sum(b - a - 1 for a, b in itertools.pairwise(ids)) + tail


@pytest.fixture(scope="module")
def after(n6, tree):
    return build_firmware(FirmwareConfig(n6, resolve_profile(n6, "mp-n6-after"), tree))


@pytest.mark.real
@pytest.mark.parametrize("direction", ["rx", "tx"])
def test_udp_saturates_a_wire_and_every_datagram_is_accounted_for(n6, after, tmp_path, no_leftovers, direction):
    link = LinkSpec().override(rtt="2ms", rate="20mbit")
    plan = RunPlan(n6, after, link, Workload(f"udp-{direction}", seconds=3), time=n6.time(TimeChoice("device")))
    result = plan.execute(tmp_path)
    assert result.status == "passed"
    # the sender offers 100 Mbit/s: the wire's 20 sets the goodput, measured on the receiving side
    assert result.throughput_mbps == pytest.approx(payload_mbps(RATE), rel=0.03)
    counts, counters = result.datagrams, result.link_counters
    side = counters["to_device" if direction == "rx" else "to_peer"]
    assert side["dropped"]["queue"] > counts["received"]  # 100 offered into 20: most wait and are dropped
    receiver = result.device if direction == "rx" else "10.77.0.1"
    assert counts["sent"] == counts["received"] + link_dropped_data(tmp_path, receiver, counts["sent"])
    assert counts["lost"] == counts["sent"] - counts["received"]
    if direction == "tx":
        assert result.device_stats["nic.tx_frames"] >= counts["sent"]  # all lwIP took left through the NIC
    analysis = result.analysis
    assert analysis is not None and analysis.verdict == "unknown" and "none of them TCP" in analysis.verdict_reason
