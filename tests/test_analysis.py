"""Capture analysis on captures with known answers.

The captures are written by the tests themselves: real Ethernet/IPv4/TCP frames (valid
checksums) from a small TCP model (tests/captures_gen.py) whose parameters are the answers
(MSS, windows, scale, RTT, dropped segments, zero-window pause, send buffer). tshark itself,
run directly, is the oracle for frame and retransmission counts. Counts on real Linux transfers,
bad captures, event loops and the outputs: tests/test_analysis_reading.py.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from analysis_captures import _load, _one_line_error, tshark_count

# the module fixtures: pytest finds them in this module by their name= (capdir, fast, r1, sndbuf)
from analysis_captures import capdir_fixture as capdir_fixture
from analysis_captures import fast_fixture as fast_fixture
from analysis_captures import r1_fixture as r1_fixture
from analysis_captures import sndbuf_fixture as sndbuf_fixture
from captures_gen import DEVICE_IP, PEER_IP, Scenario, write_scenario

from harness.analysis import CaptureAnalysis, load_capture
from harness.core.errors import NetreproError

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

SCALED = Scenario(duration=0.5, device_wscale=2, peer_wscale=7, rcv_buf=131072, sack=True, timestamps=True,
                  rate_bps=50e6)
TIMEOUTS = Scenario(duration=1.0, rcv_buf=2 * 1460, drop=frozenset({40, 120}), fast_retransmit=False, rto=0.2)
ZERO_WINDOW = Scenario(duration=1.0, app_pause=(0.3, 0.2))
LINK = Scenario(duration=1.0, sender="device", client="device", rcv_buf=262144, device_wscale=0, peer_wscale=7,
                rate_bps=20e6, rtt=0.005)
# openmv-n6 "wifi tx": lwIP sends with TCP_SND_BUF 16*MSS = 23360 to a Linux peer (port 5002) that advertises 65535
# (no window scaling: lwIP does not offer it), ACKing every segment; 43 Mbit/s, 2.75 ms each way. The device needs
# 0.33 ms per segment, which spreads its segments over the round trip as the emulated board's do: it refills the
# buffer on each ACK and never pauses for long. Its CPU alone would allow 35 Mbit/s, the link 40.8 Mbit/s of
# payload; the buffer allows 23360 B per round trip, ~32 Mbit/s.
TX_SNDBUF = Scenario(duration=1.0, sender="device", client="device", peer_port=5002, snd_buf=23360, rcv_buf=65535,
                     peer_wscale=7, rtt=0.0055, rate_bps=43e6, ack_every=1, send_cost=0.00033)


@pytest.fixture(scope="module")
def scaled(capdir):
    return _load(capdir, "scaled", SCALED, device_ip=DEVICE_IP, link_rate_bps=50e6)


# ------------------------------------------------------------------ facts and verdicts


def test_window_limited_receive(r1):
    _, a = r1
    assert a.device_identified_by.startswith("given")
    assert (str(a.device), str(a.peer)) == (f"{DEVICE_IP}:5001", f"{PEER_IP}:40000")
    assert a.data_direction == "peer->device" and a.capture_near == "device"
    assert (a.device_mss, a.peer_mss) == (1460, 1460)
    assert a.window_scale == {"device": None, "peer": None} and a.window_scaling == "not negotiated"
    assert a.sack_permitted == {"device": False, "peer": False}
    assert a.device_window.min == a.device_window.max == 23360
    assert a.device_window.count == len(a.device_windows) > 1000
    assert a.device_window.unknown_scale is False
    assert a.verdict == "window-limited", a.verdict_reason
    assert "23360" in a.verdict_reason
    # RTT: 6 ms path + the model's 0.1 ms handshake turn-around and per-ACK delay
    assert a.rtt_ms == pytest.approx(6.15, abs=0.2)
    assert a.initial_rtt_ms == pytest.approx(6.2, abs=0.01)
    assert a.goodput_mbps == pytest.approx(23360 * 8 / (a.rtt_ms / 1e3) / 1e6, rel=0.05)
    assert a.window_bound_mbps == pytest.approx(a.goodput_mbps, rel=0.05)
    assert a.bound_mbps is None  # no link rate given
    assert a.in_flight_stats["max"] == 23360 and a.in_flight_stats["p95"] == 23360
    assert a.segments_per_ack["device"] == pytest.approx(2.0, abs=0.05)
    assert a.retransmissions == 0 and a.zero_windows == {"device": 0, "peer": 0}
    assert len(a.idle_gaps) > 100  # one pause per window: the sender waits for the window to open
    assert a.truncated is False and not a.warnings
    a.expect_mss(device=1460, peer=1460)
    a.expect_no_window_scaling()
    a.expect_device_window(23360)
    a.expect_verdict("window-limited")
    a.expect_retransmissions(at_most=0)


def test_a_known_capture_point_overrides_the_timing_guess(capdir, r1):
    path, guessed = r1
    told = load_capture(path, device_ip=DEVICE_IP, captured_at="peer")
    assert guessed.capture_near == "device" and told.capture_near == "peer"
    assert told.in_flight_source != guessed.in_flight_source
    with pytest.raises(NetreproError, match="captured_at 'switch' is not a side"):
        load_capture(path, captured_at="switch")


def test_assertion_messages_show_what_was_observed(r1):
    _, a = r1
    n = a.device_window.count
    with pytest.raises(AssertionError, match=rf"^device advertised 23360 in {n} of {n} ACKs, expected 46720"):
        a.expect_device_window(46720)
    with pytest.raises(AssertionError, match="device MSS option 1460, expected 800"):
        a.expect_mss(device=800)
    with pytest.raises(AssertionError, match=r"verdict window-limited, expected link-limited: in flight sat at"):
        a.expect_verdict("link-limited")
    with pytest.raises(AssertionError, match="window scale absent, expected 7"):
        a.expect_window_scale(peer=7)
    with pytest.raises(AssertionError, match=r"goodput \d+\.\d+ Mbit/s, expected >= 35"):
        a.expect_goodput(at_least=35)
    with pytest.raises(ValueError):
        a.expect_verdict("slow")
    a.expect_device_window(23360, min_share=1.0)


def test_window_expectation_tolerates_a_few_updates(r1):
    _, a = r1
    stats = a.device_window
    saved = stats.values.copy()
    try:  # two ACKs of another size, as a closing application's window update would give
        stats.values[23360] -= 2
        stats.values[21900] += 2
        a.expect_device_window(23360)
        with pytest.raises(AssertionError, match=rf"advertised 23360 in {stats.count - 2} of {stats.count} ACKs, "
                                                 r"expected 23360 in all of them; other values: 21900 x2"):
            a.expect_device_window(23360, min_share=1.0)
    finally:
        stats.values = saved


def test_missing_tshark_is_one_line(r1, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    _one_line_error(r1[0], "tshark not found")


def test_scaled_window_and_options(scaled):
    _, a = scaled
    assert a.window_scale == {"device": 2, "peer": 7} and a.window_scaling == "negotiated"
    assert a.sack_permitted == {"device": True, "peer": True}
    assert a.timestamps == {"device": True, "peer": True}
    # 131072 bytes go out as 32768 << 2: tshark scales it back
    a.expect_device_window(131072)
    a.expect_window_scale(device=2, peer=7)
    with pytest.raises(AssertionError, match="window scaling negotiated: device shift 2, peer shift 7"):
        a.expect_no_window_scaling()
    assert a.verdict == "link-limited", a.verdict_reason
    assert a.bound_mbps == pytest.approx(min(50.0, a.window_bound_mbps))
    assert "timestamp echo" in a.rtt_source  # capture at the receiver, timestamps on


def test_missing_syn_leaves_the_scale_unknown(capdir):
    sc = Scenario(duration=0.5, device_wscale=2, peer_wscale=7, rcv_buf=131072, handshake=False, rate_bps=50e6)
    _, a = _load(capdir, "nosyn", sc, device_ip=DEVICE_IP)
    assert a.syn_seen is False and a.window_scaling.startswith("unknown")
    assert a.device_window.unknown_scale is True
    assert a.device_window.max == 32768  # as sent: the shift is not in the capture
    assert a.device_mss is None
    assert any("SYN/SYN-ACK were not captured" in w for w in a.warnings)
    with pytest.raises(AssertionError, match=r"device MSS unknown \(SYN not captured\), expected 1460"):
        a.expect_mss(device=1460)
    with pytest.raises(AssertionError, match="window scaling unknown"):
        a.expect_no_window_scaling()
    with pytest.raises(AssertionError, match="scale unknown"):
        a.expect_device_window(131072)


def test_fast_retransmission(fast):
    path, a = fast
    assert a.retransmissions == 1 and a.fast_retransmissions == 1 and a.rto_retransmissions == 0
    assert a.dup_acks["device"] >= 3 and a.dup_acks["peer"] == 0
    assert a.retransmissions == tshark_count(path, "tcp.analysis.retransmission")
    assert a.dup_acks["device"] == tshark_count(path, "tcp.analysis.duplicate_ack && ip.src==" + DEVICE_IP)
    assert a.payload_bytes + a.retransmitted_bytes == sum(e - s for _, s, e, _ in a.data_segments)
    assert a.retransmitted_bytes == 1460
    a.expect_retransmissions(at_least=1, at_most=1)


def test_timeouts_make_it_loss_limited(capdir):
    path, a = _load(capdir, "rto", TIMEOUTS, device_ip=DEVICE_IP)
    assert a.retransmissions == 2 == tshark_count(path, "tcp.analysis.retransmission")
    assert a.rto_retransmissions == 2 and a.fast_retransmissions == 0
    assert a.rto_stall_s == pytest.approx(0.4, abs=0.02)  # two 0.2 s timeouts
    assert a.verdict == "loss-limited", a.verdict_reason
    assert "timeouts" in a.verdict_reason


def test_zero_window_is_receiver_limited(capdir):
    path, a = _load(capdir, "zero", ZERO_WINDOW, device_ip=DEVICE_IP)
    assert a.zero_windows["device"] >= 1 and a.device_window.min == 0
    assert a.zero_windows["device"] == tshark_count(path, "tcp.analysis.zero_window")
    assert a.evidence["zero_window_s"] == pytest.approx(0.19, abs=0.03)  # the app paused 0.2 s
    assert a.verdict == "receiver-limited", a.verdict_reason
    a.expect_verdict("receiver-limited")


def test_send_buffer_limited_transmit(sndbuf):
    _, a = sndbuf
    assert a.data_direction == "device->peer" and a.capture_near == "device"
    assert (a.device_mss, a.peer_mss) == (1432, 1460) and a.mss_used == 1432
    assert a.window_scale == {"device": None, "peer": 7} and a.window_scaling == "not negotiated"
    a.expect_peer_window(64240)
    assert a.in_flight_stats["max"] == 2864  # TCP_SND_BUF 2*MSS, from tshark's bytes_in_flight
    assert "tshark bytes_in_flight" in a.in_flight_source
    assert a.rtt_ms == pytest.approx(2.0, abs=0.3)
    assert a.verdict == "send-buffer-limited", a.verdict_reason
    assert "2864" in a.verdict_reason
    assert a.goodput_mbps == pytest.approx(2864 * 8 / (a.rtt_ms / 1e3) / 1e6, rel=0.1)


def _expect_tx_sndbuf(a: CaptureAnalysis, rate_mbps: float | None) -> None:
    """What the openmv-n6 "wifi tx" shape must show: send-buffer-limited at a flat 23360 B."""
    assert a.data_direction == "device->peer" and a.capture_near == "device"
    assert a.window_scaling == "not negotiated"
    a.expect_peer_window(65535)
    assert a.in_flight_stats["p95"] == a.in_flight_stats["max"] == 23360
    assert a.evidence["in_flight_ceiling"] == 23360 and a.evidence["in_flight_flat"] is True
    assert a.verdict == "send-buffer-limited", a.verdict_reason
    assert "plateaued at 23360 B" in a.verdict_reason and "window 65535 B" in a.verdict_reason
    assert "\n" not in a.verdict_reason
    assert a.goodput_mbps == pytest.approx(23360 * 8 / (a.rtt_ms / 1e3) / 1e6, rel=0.1)
    if rate_mbps:
        assert "below what the link carries" in a.verdict_reason
        assert a.goodput_mbps < 0.85 * a.link_payload_mbps
    else:
        assert "no standing queue" in a.verdict_reason


@pytest.mark.parametrize("rate", [43e6, None], ids=["link-rate", "no-link-rate"])
def test_send_buffer_refilled_at_once_hardly_pauses(capdir, rate):
    """The sender never idles for long, yet in flight sits flat at TCP_SND_BUF: still the send buffer."""
    _, a = _load(capdir, "tx-sndbuf", TX_SNDBUF, device_ip=DEVICE_IP, link_rate_bps=rate)
    _expect_tx_sndbuf(a, rate)
    assert a.pause_shares["busy"] > 0.9 and a.pause_shares["ack_wait"] < 0.2  # short gaps only
    assert a.evidence["goodput_per_ceiling_rtt"] == pytest.approx(1.0, abs=0.05)
    assert a.evidence["base_rtt_ms"] >= 5.5


@pytest.mark.parametrize("rate", [100e6, None], ids=["link-rate", "no-link-rate"])
def test_send_buffer_drained_then_idle(capdir, rate):
    """The same buffer over a faster link: it empties in a burst and the sender idles until ACKs return."""
    sc = dataclasses.replace(TX_SNDBUF, rate_bps=100e6, send_cost=0.0)
    _, a = _load(capdir, "tx-sndbuf-long", sc, device_ip=DEVICE_IP, link_rate_bps=rate)
    _expect_tx_sndbuf(a, rate)
    assert a.pause_shares["ack_wait"] > 0.5 and len(a.idle_gaps) > 100  # long gaps, one per round trip
    assert "waited for ACKs" in a.verdict_reason


def test_capture_stall_does_not_fake_a_standing_queue(capdir):
    """openmv-n6 "wifi tx after": a data segment stamped 3 ms late by a stalled capture gave one ACK RTT of 2.9 ms
    on a 5.5 ms path; as the base RTT that made the normal 5.9 ms look like a queue (link-limited)."""
    sc = dataclasses.replace(TX_SNDBUF, device_stall=(0.5, 0.003))
    _, a = _load(capdir, "tx-sndbuf-stall", sc, device_ip=DEVICE_IP, link_rate_bps=43e6)
    assert min(v for _, v in a.rtt_samples) < 3e-3  # the late-stamped segment's sample is there
    assert a.evidence["base_rtt_ms"] >= 5.5  # but it does not set the base RTT
    assert "queue" not in a.verdict_reason
    _expect_tx_sndbuf(a, 43e6)


def test_growing_congestion_window_is_not_a_send_buffer(capdir):
    """A sender held by a congestion window growing a segment per RTT waits for ACKs too, but in flight grows."""
    sc = Scenario(duration=0.5, sender="device", client="device", cwnd=20 * 1460, rcv_buf=1 << 20, device_wscale=7,
                  peer_wscale=7, rtt=0.0055, rate_bps=1e9)
    _, a = _load(capdir, "cwnd", sc, device_ip=DEVICE_IP, link_rate_bps=1e9)
    assert a.pause_shares["ack_wait"] > 0.5
    peaks = a.evidence["in_flight_slice_peaks"]
    assert peaks == sorted(peaks) and peaks[-1] > 3 * peaks[0]
    assert a.evidence["in_flight_flat"] is False
    assert a.verdict == "unknown", a.verdict_reason
    assert "no fixed ceiling" in a.verdict_reason and "congestion window" in a.verdict_reason


# The openmv-n6 "wifi tx" runs (sock-tx; TCP_SND_BUF 16*MSS in both profiles; link wifi: 43 Mbit/s, 2.75 ms each
# way), as the synthetic twins above; the "after" run's capture stalled once, stamping a data segment 3 ms late.
N6_TX_RUNS = {"before": TX_SNDBUF, "after": dataclasses.replace(TX_SNDBUF, device_stall=(0.5, 0.003))}


def _n6_tx_run(folder: Path, case: str) -> Path:
    """A run folder as netrepro writes one (capture.pcap, result.json, link.json) for an openmv-n6 wifi tx case."""
    sc = N6_TX_RUNS[case]
    run = folder / f"wifi-tx-{case}-1"
    run.mkdir()
    write_scenario(run / "capture.pcap", sc)
    (run / "result.json").write_text(json.dumps({"options": {"TCP_MSS": sc.device_mss, "TCP_SND_BUF": sc.snd_buf}}))
    (run / "link.json").write_text(json.dumps({"to_peer": {"rate_bps": sc.rate_bps, "delay_s": sc.rtt / 2},
                                               "to_device": {"rate_bps": sc.rate_bps, "delay_s": sc.rtt / 2}}))
    return run


@pytest.mark.parametrize("case", ["before", "after"])
def test_lwip_transmit_runs_are_send_buffer_limited(tmp_path, case):
    """An openmv-n6 wifi tx run folder, read as a user reads one: the verdict names the send buffer of result.json."""
    run = _n6_tx_run(tmp_path, case)
    result = json.loads((run / "result.json").read_text())
    link = json.loads((run / "link.json").read_text())
    snd_buf = result["options"]["TCP_SND_BUF"]
    a = load_capture(run / "capture.pcap", device_ip=DEVICE_IP, link_rate_bps=link["to_peer"]["rate_bps"])
    assert a.verdict == "send-buffer-limited", a.verdict_reason
    assert a.evidence["in_flight_ceiling"] == snd_buf and f"plateaued at {snd_buf} B" in a.verdict_reason
    assert "window 65535 B" in a.verdict_reason
    path_rtt = link["to_peer"]["delay_s"] + link["to_device"]["delay_s"]
    assert a.evidence["base_rtt_ms"] >= path_rtt * 1e3  # capture at the sender: no RTT below the path's
    assert a.goodput_mbps == pytest.approx(snd_buf * 8 / (a.rtt_ms / 1e3) / 1e6, rel=0.1)


def test_cpu_bound_sender_is_not_blamed_on_window_or_buffer(capdir):
    """R3: an 8-bit sender needing 2 ms per 536-byte segment on a 10 Mbit/s switch."""
    sc = Scenario(duration=1.0, sender="device", client="device", device_mss=536, snd_buf=4 * 536, rcv_buf=64240,
                  peer_wscale=7, rtt=0.0004, rate_bps=10e6, send_cost=0.002)
    _, a = _load(capdir, "cpu", sc, device_ip=DEVICE_IP, link_rate_bps=10e6)
    a.expect_mss(device=536, peer=1460)
    assert a.mss_used == 536
    assert a.goodput_mbps == pytest.approx(536 * 8 / 0.002 / 1e6, rel=0.05)
    assert a.verdict == "sender-limited", a.verdict_reason
    assert "its CPU, application or memory set the pace" in a.verdict_reason
    assert a.pause_shares["sender_paced"] > 0.9


def test_link_limited_with_and_without_the_rate(capdir):
    _, a = _load(capdir, "link", LINK, device_ip=DEVICE_IP, link_rate_bps=20e6)
    assert a.verdict == "link-limited", a.verdict_reason
    assert a.bound_mbps == pytest.approx(min(20.0, a.window_bound_mbps))
    assert a.link_payload_mbps == pytest.approx(20 * 1460 / (1514 + 24), rel=0.01)
    # receiving over a link of unknown rate: data arrives back to back
    sc = Scenario(duration=1.0, rcv_buf=262144, device_wscale=3, peer_wscale=7, rate_bps=20e6, rtt=0.005)
    _, b = _load(capdir, "link-rx", sc, device_ip=DEVICE_IP)
    assert b.verdict == "link-limited" and "back to back" in b.verdict_reason, b.verdict_reason
    assert b.bound_mbps is None


def test_device_guessed_without_its_address(capdir, r1, sndbuf):
    for path in (r1[0], sndbuf[0]):
        a = load_capture(path)
        assert a.device is not None and a.device.ip == DEVICE_IP, a.device_identified_by
        assert a.device_identified_by.startswith("guessed")
    with pytest.raises(NetreproError, match=r"10\.9\.9\.9 is not an endpoint"):
        load_capture(r1[0], device_ip="10.9.9.9")


def test_goodput_intervals(r1):
    path, _ = r1
    a = load_capture(path, device_ip=DEVICE_IP, interval_s=0.25)
    assert a.interval_s == 0.25 and len(a.goodput) == 4
    assert all(v == pytest.approx(a.goodput_mbps, rel=0.1) for _, v in a.goodput)
    with pytest.raises(NetreproError):
        load_capture(path, interval_s=0)
