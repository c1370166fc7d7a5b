"""The workloads end to end: firmware, link at RTT 5.5 ms and 100 Mbit/s, the Linux peer, the capture."""

from __future__ import annotations

import struct
import subprocess

import pytest

from harness.analysis import load_capture
from harness.link import LinkSpec, read_pcap
from harness.rig.build import FirmwareConfig, build_firmware
from harness.rig.devicetime import TimeChoice
from harness.rig.profile import resolve_profile
from harness.rig.workload import Workload
from harness.runs.plan import RunPlan

pytestmark = pytest.mark.real

LINK = LinkSpec().override(rtt="5.5ms", rate="100mbit")


@pytest.fixture(scope="module")
def after(n6, tree):
    return build_firmware(FirmwareConfig(n6, resolve_profile(n6, "mp-n6-after"), tree))


def tcp_segments(pcap):
    """(time, src, dst, sport, dport, flags, seq, payload length) of every IPv4/TCP frame."""
    out = []
    for t, frame in read_pcap(pcap):
        if frame[12:14] != b"\x08\x00" or frame[23] != 6:
            continue
        ihl = (frame[14] & 0x0F) * 4
        total = struct.unpack("!H", frame[16:18])[0]
        tcp = frame[14 + ihl:]
        offset = (tcp[12] >> 4) * 4
        src, dst = ".".join(map(str, frame[26:30])), ".".join(map(str, frame[30:34]))
        sport, dport, seq = struct.unpack("!HHI", tcp[:8])
        out.append((t, src, dst, sport, dport, tcp[13], seq, total - ihl - offset))
    return out


SYN, FIN, ACK = 0x02, 0x01, 0x10


def conversation(segments, port):
    return [s for s in segments if port in (s[3], s[4])]


def handshake_rtt(conv):
    """At the device side: from the device's SYN or SYN-ACK to the peer's answer."""
    syn = next(s for s in conv if s[5] & SYN and not s[5] & ACK)
    synack = next(s for s in conv if s[5] & SYN and s[5] & ACK)
    if syn[1] == "10.77.0.2":
        return synack[0] - syn[0]
    ack = next(s for s in conv if s[0] > synack[0] and s[5] & ACK and not s[5] & SYN)
    return ack[0] - synack[0]


def assert_whole_conversation(conv, data_from):
    flags = [s[5] for s in conv]
    assert flags[0] & SYN and not flags[0] & ACK, "the capture starts with the SYN"
    assert any(f & SYN and f & ACK for f in flags), "SYN-ACK captured"
    fins = {s[1] for s in conv if s[5] & FIN}
    assert len(fins) == 2, f"FIN from both sides, got FINs from {fins}"
    assert sum(s[7] for s in conv if s[1] == data_from) > 0


@pytest.mark.parametrize("direction", ["rx", "tx"])
def test_iperf_over_the_link(n6, after, tmp_path, no_leftovers, direction):
    result = RunPlan(n6, after, LINK, Workload(direction, seconds=4)).execute(tmp_path)
    assert result.status == "passed" and result.throughput_mbps > 1
    assert result.link.rtt_s == pytest.approx(0.0055) and result.link.to_peer.rate_bps == 100_000_000
    frames = read_pcap(tmp_path / "capture.pcap")
    counters = result.link_counters
    assert counters["to_device"]["frames_out"] + counters["to_peer"]["frames_out"] == len(frames)
    segments = tcp_segments(tmp_path / "capture.pcap")
    conv = conversation(segments, 5001)
    sender = "10.77.0.1" if direction == "rx" else "10.77.0.2"
    assert_whole_conversation(conv, sender)
    payload = sum(s[7] for s in conv if s[1] == sender)
    assert payload >= result.bytes, "every byte iperf counted crossed the link"
    assert 0.0055 <= handshake_rtt(conv) < 0.0055 + 0.005


def test_duplex_moves_data_both_ways(n6, after, tmp_path, no_leftovers):
    result = RunPlan(n6, after, LINK, Workload("duplex", seconds=3)).execute(tmp_path)
    assert set(result.throughput_mbps) == {"rx", "tx"}
    assert all(v > 0.5 for v in result.throughput_mbps.values()), result.throughput_mbps


def test_discard_sends_exactly_the_bytes_asked(n6, after, tmp_path, no_leftovers):
    nbytes = 1_000_000
    result = RunPlan(n6, after, LINK, Workload("discard", bytes=nbytes, chunk=1460)).execute(tmp_path)
    assert result.bytes == nbytes and result.throughput_mbps > 1
    conv = conversation(tcp_segments(tmp_path / "capture.pcap"), 9)
    assert_whole_conversation(conv, "10.77.0.2")
    first = min(s[6] for s in conv if s[1] == "10.77.0.2" and s[7] > 0)
    last = max(s[6] + s[7] for s in conv if s[1] == "10.77.0.2" and s[7] > 0)
    assert last - first == nbytes, "the capture holds exactly the bytes sent"


def test_rx_grows_with_the_window_toward_its_bound(n6, tree, after, tmp_path, no_leftovers):
    """16*MSS against 32*MSS at RTT 5.5 ms and 100 Mbit/s, in device time: the capture shows what each
    advertised, and rx reaches most of min(rate, window / RTT) with the RTT the capture measured."""
    before = build_firmware(FirmwareConfig(n6, resolve_profile(n6, "mp-n6-before"), tree))
    seen = {}
    for name, firmware, window in (("before", before, 23360), ("after", after, 46720)):
        run_dir = tmp_path / name
        run_dir.mkdir()
        result = RunPlan(n6, firmware, LINK, Workload("rx", seconds=4), time=n6.time(TimeChoice("device"))).execute(
            run_dir)
        capture = load_capture(result.capture, device_ip="10.77.0.2", link_rate_bps=100e6)
        capture.expect_mss(device=1460)
        capture.expect_no_window_scaling()
        capture.expect_device_window(window)
        assert result.analysis.device_window.median == window
        assert result.analysis.verdict == capture.verdict
        assert capture.bound_mbps == pytest.approx(min(100.0, window * 8 / (capture.rtt_ms / 1e3) / 1e6), rel=0.01)
        seen[name] = (result.throughput_mbps, capture.bound_mbps, capture)
    (small, small_bound, small_capture), (large, large_bound, _) = seen["before"], seen["after"]
    # In host time how close each run came to its bound depended on the host (0.92-0.96 in
    # benchmarks/results/rx_bound.md, 0.74 for 16*MSS on a slower day); in device time the figure is the
    # modelled board's, and each run reaches most of its bound.
    small_capture.expect_verdict("window-limited")
    print(f"16*MSS {small:.1f} of {small_bound:.1f}, 32*MSS {large:.1f} of {large_bound:.1f} Mbit/s")
    assert 0.8 * small_bound <= small <= 1.05 * small_bound, f"16*MSS: {small:.1f} Mbit/s, bound {small_bound:.1f}"
    assert 0.8 * large_bound <= large <= 1.05 * large_bound, f"32*MSS: {large:.1f} Mbit/s, bound {large_bound:.1f}"
    assert large >= 1.25 * small, f"doubling the window: {small:.1f} -> {large:.1f} Mbit/s"


def test_the_analysis_agrees_with_tshark_on_a_netrepro_capture(n6, after, tmp_path):
    result = RunPlan(n6, after, LINK, Workload("tx", seconds=2)).execute(tmp_path)
    capture = load_capture(result.capture, device_ip="10.77.0.2")

    def tshark_count(display_filter: str) -> int:
        out = subprocess.run(["tshark", "-r", result.capture, "-Y", display_filter, "-T", "fields", "-e",
                              "frame.number"], capture_output=True, text=True, check=True, timeout=120).stdout
        return len(out.split())

    assert capture.frames == tshark_count("frame") == len(read_pcap(tmp_path / "capture.pcap"))
    assert capture.retransmissions == tshark_count(f"tcp.stream == {capture.conn} && tcp.analysis.retransmission")
