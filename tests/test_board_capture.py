"""read_board_capture: a real board's capture read into the facts a report needs.

Synthetic captures (tests/captures_gen.py) carry their answers in the scenario's parameters: the
link's rate, the MSS and windows, which segments were dropped. The real chain runs the firmware
over an emulated link set to a known RTT and rate, and reads them back from the capture alone.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from captures_gen import (
    ACK,
    DEVICE_IP,
    LINKTYPE_LINUX_SLL,
    PEER_IP,
    Scenario,
    linux_cooked,
    simulate,
    tcp_frame,
    udp_frame,
    write_pcap,
    write_scenario,
)
from conftest import assert_one_line_error, netrepro_cli

from harness.analysis import CaptureReading, read_board_capture
from harness.analysis.board_capture import LostData, densest_cluster
from harness.core.errors import NetreproError
from harness.link import LinkSpec
from harness.studies.report_file import load_report

RATE = 23.3e6  # not a round figure: the estimate cannot land on it by rounding

# the board's side (window 46720 B, no scaling: mp-n6-after) and a PC's (its window scaled to ~1 MB)
BOARD_RECEIVES = dict(sender="peer", client="peer", rcv_buf=46720, peer_wscale=7)
BOARD_SENDS = dict(sender="device", client="device", rcv_buf=1_000_000, device_wscale=2, peer_wscale=7)


def _scenario(**kw) -> Scenario:
    base = dict(rate_bps=RATE, rtt=0.013, duration=0.6)
    return Scenario(**{**base, **kw})


def _payload(frame: bytes) -> int:
    """TCP payload of an Ethernet/IPv4 frame without IP options: IP's total length less the IP and TCP headers."""
    return struct.unpack("!H", frame[16:18])[0] - 20 - (frame[46] >> 4) * 4


def _data_frames(records: list[tuple[float, bytes]], src: str) -> int:
    """Frames from src carrying payload."""
    src_bytes = bytes(int(x) for x in src.split("."))
    return sum(1 for _, f in records if f[26:30] == src_bytes and _payload(f) > 0)


def _lost(records: list[tuple[float, bytes]], src: str, *runs: tuple[int, int]) -> tuple[LostData, ...]:
    """The bytes of src's segments number lo to hi (from 0) of each run: its segments are all of one size."""
    src_bytes = bytes(int(x) for x in src.split("."))
    size = max(_payload(f) for _, f in records if f[26:30] == src_bytes)
    return tuple(LostData(lo * size + 1, (hi + 1) * size, hi - lo + 1) for lo, hi in runs)


def _error(path: Path, **kw) -> str:
    with pytest.raises(NetreproError) as caught:
        read_board_capture(path, **kw)
    text = str(caught.value)
    assert "\n" not in text and caught.value.fix, text
    return text


# ------------------------------------------------------------------ who, which way, where


@pytest.mark.parametrize("sides, capture_at, direction, rate_from", [
    (BOARD_RECEIVES, "device", "rx", "data spacing"),
    (BOARD_RECEIVES, "peer", "rx", "ack spacing"),
    (BOARD_SENDS, "device", "tx", "ack spacing"),
    (BOARD_SENDS, "peer", "tx", "data spacing"),
], ids=["rx-at-board", "rx-at-pc", "tx-at-board", "tx-at-pc"])
def test_direction_capture_side_and_rate(tmp_path, sides, capture_at, direction, rate_from):
    path = write_scenario(tmp_path / "c.pcap", _scenario(**sides, capture_at=capture_at))
    r = read_board_capture(path)
    assert (r.device, r.peer, r.direction, r.captured_at) == (DEVICE_IP, PEER_IP, direction, capture_at)
    assert "smaller window" in r.device_identified_by
    assert r.rate_from == rate_from
    assert r.rate_bps == pytest.approx(RATE, rel=0.01)
    assert r.idle_rtt_ms == pytest.approx(13.2, abs=0.05)   # the RTT plus the two ends' 0.1 ms turn-arounds
    assert r.loss == 0 and r.retransmissions == 0 and r.lost_data == ()
    assert r.verdict == "link-limited", r.verdict_reason


def test_the_handshake_options_read_exactly(tmp_path):
    unscaled = read_board_capture(write_scenario(tmp_path / "a.pcap", _scenario(**BOARD_RECEIVES, device_mss=1400)))
    assert (unscaled.mss, unscaled.window_max, unscaled.window_scaling, unscaled.window_scale) == (
        1400, 46720, False, None)
    scaled = read_board_capture(write_scenario(tmp_path / "b.pcap", _scenario(**BOARD_SENDS)))
    # the device's window: its 262144 B buffer sent as 65535 << 2
    assert (scaled.mss, scaled.window_max, scaled.window_scaling, scaled.window_scale) == (1460, 65535 << 2, True, 2)


def test_the_reading_describes_its_file(tmp_path):
    records = simulate(_scenario(**BOARD_RECEIVES))
    path = write_pcap(tmp_path / "board.pcap", records)
    r = read_board_capture(str(path))
    assert (r.file, r.name, r.frames, r.stream) == (str(path), "board.pcap", len(records), 0)
    assert r.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert r.frames_used == (1, len(records))
    assert r.throughput_mbps == r.analysis.goodput_mbps and r.loaded_rtt_ms == r.analysis.rtt_ms
    assert r.analysis.device_identified_by == r.device_identified_by
    out = json.loads(json.dumps(r.as_dict()))
    assert out["frames_used"] == [1, len(records)] and out["analysis"]["device_window"]["max"] == 46720
    assert set(out) == {f for f in CaptureReading.__dataclass_fields__}


def test_a_given_device_overrides_the_window_rule(tmp_path):
    # a PC whose receive buffer (200 kB) is smaller than the board's window (262 kB): the rule picks the PC
    path = write_scenario(tmp_path / "c.pcap", _scenario(**{**BOARD_SENDS, "rcv_buf": 200_000}))
    guessed = read_board_capture(path)
    assert guessed.device == PEER_IP and guessed.direction == "rx" and "give --device" in guessed.device_identified_by
    given = read_board_capture(path, device=DEVICE_IP)
    assert (given.device, given.direction, given.window_max) == (DEVICE_IP, "tx", 65535 << 2)
    assert given.device_identified_by == f"given (--device {DEVICE_IP})"


def test_without_the_handshake_the_device_is_told_by_timing(tmp_path):
    r = read_board_capture(write_scenario(tmp_path / "c.pcap", _scenario(**BOARD_RECEIVES, handshake=False)))
    assert r.device == DEVICE_IP and r.direction == "rx"
    assert r.device_identified_by.startswith("windows not comparable (SYN not captured")
    assert "next to the capture point" in r.device_identified_by
    assert (r.mss, r.window_scaling, r.idle_rtt_ms) == (None, None, None)
    assert r.rate_bps == pytest.approx(RATE, rel=0.01)


# ------------------------------------------------------------------ the rate


def test_a_window_limited_transfer_still_shows_the_link_rate(tmp_path):
    """Eight segments of window on a 50 Mbit/s, 10 ms path: the sender idles most of each round trip."""
    sc = _scenario(sender="peer", rcv_buf=8 * 1460, rate_bps=50e6, rtt=0.010, duration=1.0)
    r = read_board_capture(write_scenario(tmp_path / "c.pcap", sc))
    assert r.verdict == "window-limited", r.verdict_reason
    assert r.analysis.idle.gaps > 50 and r.throughput_mbps < 10
    assert r.rate_from == "data spacing" and r.rate_bps == pytest.approx(50e6, rel=0.01)


def test_the_rate_counts_the_wire_as_the_link_does(tmp_path):
    """Small segments: padding, preamble, gap and FCS are a large share; payload/time would read far low."""
    sc = _scenario(**BOARD_RECEIVES, device_mss=300)
    r = read_board_capture(write_scenario(tmp_path / "c.pcap", sc))
    assert r.rate_bps == pytest.approx(RATE, rel=0.01)
    assert r.throughput_mbps < 0.8 * RATE / 1e6


def test_a_linux_cooked_capture_reads_the_same_rate(tmp_path):
    """tcpdump -i any: a 16-byte header in place of Ethernet's 14, which the wire never carried (two bytes in a
    590-byte frame: 0.3 %, which the exact timestamps of a synthetic capture show)."""
    records = simulate(_scenario(**BOARD_RECEIVES, device_mss=536))
    path = write_pcap(tmp_path / "any.pcap", [(t, linux_cooked(f)) for t, f in records], linktype=LINKTYPE_LINUX_SLL)
    r = read_board_capture(path)
    assert (r.device, r.direction, r.rate_from) == (DEVICE_IP, "rx", "data spacing")
    assert r.rate_bps == pytest.approx(RATE, rel=0.001)


def _offloaded(records: list[tuple[float, bytes]], src: str) -> list[tuple[float, bytes]]:
    """The sender's data frames merged in pairs, as a PC's segmentation offload shows them to its capture."""
    src_bytes = bytes(int(x) for x in src.split("."))
    out, held = [], None
    for t, f in records:
        if f[26:30] != src_bytes or _payload(f) == 0:
            out.append((t, f))
            continue
        if held is None:
            held = (t, f)
            continue
        first = held[1]
        sport, dport, seq, ack, _, flags, window = struct.unpack("!HHIIBBH", first[34:50])
        out.append((held[0], tcp_frame(src, DEVICE_IP if src == PEER_IP else PEER_IP, sport, dport, seq, ack, flags,
                                       window, payload=_payload(first) + _payload(f))))
        held = None
    if held is not None:
        out.append(held)
    return sorted(out, key=lambda r: r[0])


def test_a_sending_pcs_offloaded_frames_read_by_the_acks(tmp_path):
    """Every data frame is two segments but the last, a 700-byte push: the one frame that went as it is does
    not tell a segment's size, the receiver's MSS does."""
    sc = _scenario(**BOARD_RECEIVES, capture_at="peer", total_bytes=1000 * 1460 + 700)
    records = _offloaded(simulate(sc), PEER_IP)
    assert sum(len(f) > 1514 for _, f in records) == 500
    assert [_payload(f) for _, f in records if len(f) <= 1514 and _payload(f)] == [700]
    r = read_board_capture(write_pcap(tmp_path / "tso.pcap", records))
    assert (r.direction, r.captured_at, r.rate_from) == ("rx", "peer", "ack spacing")
    assert r.rate_bps == pytest.approx(RATE, rel=0.01)


def test_the_densest_cluster_is_the_back_to_back_one():
    back_to_back = [17e6 * (1 + d) for d in (-0.004, -0.002, 0, 0, 0.001, 0.003)] * 5
    paused = [17e6 * f for f in (0.2, 0.35, 0.5, 0.61, 0.7, 0.8, 0.9)] * 3
    batched = [17e6 * 4, 17e6 * 9]
    assert sorted(densest_cluster(back_to_back + paused + batched)) == sorted(back_to_back)
    assert densest_cluster([1.0, 1.05, 2.0, 2.1]) == [2.0, 2.1]   # as dense: the faster


# ------------------------------------------------------------------ loss


def test_loss_at_the_receiver_counts_the_holes_filled(tmp_path):
    records = simulate(_scenario(**BOARD_RECEIVES, drop=frozenset({20, 300, 700})))
    r = read_board_capture(write_pcap(tmp_path / "c.pcap", records))
    seen = _data_frames(records, PEER_IP)
    assert r.retransmissions == 3
    assert r.loss == pytest.approx(3 / (seen + 3), abs=1e-6)
    assert r.lost_data == _lost(records, PEER_IP, (20, 20), (300, 300), (700, 700))


def test_loss_at_the_sender_counts_each_resent_segment_once(tmp_path):
    """Segment 20 is resent twice: a fast retransmit repairs it, then the timeout (250 ms, shorter than the
    RTT the ~1 MB window queues up) resends it again. tshark counts both; one segment was lost."""
    records = simulate(_scenario(**BOARD_SENDS, drop=frozenset({20, 300, 700})))
    r = read_board_capture(write_pcap(tmp_path / "c.pcap", records))
    sent = _data_frames(records, DEVICE_IP)
    assert r.direction == "tx" and r.retransmissions == 4 and r.analysis.spurious_retransmissions == 0
    assert r.loss == pytest.approx(3 / sent, abs=1e-6)
    assert r.lost_data == _lost(records, DEVICE_IP, (20, 20), (300, 300), (700, 700))
    assert r.rate_bps == pytest.approx(RATE, rel=0.01)


def test_a_report_from_a_lossy_capture_drops_what_the_capture_lost(tmp_path):
    """The report's link replays the capture's losses where they were (seq:N-M: the bytes the sender's first
    transmissions lost), and the link the report describes reads them back."""
    records = simulate(_scenario(**BOARD_RECEIVES, drop=frozenset({20, 300, 301, 450})))  # 300 and 301 together
    capture = write_pcap(tmp_path / "lossy.pcap", records)
    out = tmp_path / "board.toml"
    written = netrepro_cli("report", "from-capture", str(capture), "--platform", "openmv-n6", "-o", str(out))
    assert written.returncode == 0, written.stderr
    link = load_report(str(out))["links"]["capture"]
    lost = _lost(records, PEER_IP, (20, 20), (300, 301), (450, 450))
    entries = tuple(f"seq:{g.first}-{g.last}" for g in lost)
    assert link["to_device"] == {"drop": ",".join(entries)} and "to_peer" not in link
    spec = LinkSpec.from_preset({k: v for k, v in link.items() if k != "note"})
    assert spec.to_device.drop == entries and spec.to_device.loss == 0
    inputs = {i["name"]: i for i in load_report(str(out))["inputs"]}
    assert inputs["loss of the data"]["sets"] == "report: links.capture.to_device.drop"


# ------------------------------------------------------------------ which connection


def _two_transfers(tmp_path: Path) -> Path:
    first = simulate(_scenario(**BOARD_RECEIVES))
    second = simulate(_scenario(**BOARD_RECEIVES, rate_bps=11e6, peer_port=40001, start=1.2))
    return write_pcap(tmp_path / "two.pcap", sorted(first + second, key=lambda r: r[0]))


def test_two_transfers_need_a_stream(tmp_path):
    path = _two_transfers(tmp_path)
    text = _error(path)
    assert "2 transfers" in text and "give --stream N" in text
    for stream, port in ((0, 40000), (1, 40001)):
        assert f"stream {stream}: {PEER_IP}:{port} -> {DEVICE_IP}:5001" in text, text
    assert " MB" in text or " kB" in text
    second = read_board_capture(path, stream=1)
    assert second.stream == 1 and second.rate_bps == pytest.approx(11e6, rel=0.01)
    assert second.frames_used[0] > 1


def test_a_small_second_connection_is_not_a_transfer(tmp_path):
    """An iperf-style control connection beside the transfer: a few hundred bytes, not a transfer of its own."""
    records = simulate(_scenario(**BOARD_RECEIVES))
    control = [(1.0005 + i * 1e-3, tcp_frame(PEER_IP, DEVICE_IP, 40009, 5002, 1 + 100 * i, 1, ACK, 1000, payload=100))
               for i in range(3)]
    r = read_board_capture(write_pcap(tmp_path / "c.pcap", sorted(records + control, key=lambda x: x[0])))
    assert r.stream == 0 and r.analysis.connections == 2 and r.rate_bps == pytest.approx(RATE, rel=0.01)


# ------------------------------------------------------------------ bad input: one line each


def test_no_tcp_is_one_line(tmp_path):
    path = write_pcap(tmp_path / "udp.pcap", [(1 + i * 1e-3, udp_frame(PEER_IP, DEVICE_IP, 5000, 5001, bytes(100)))
                                              for i in range(5)])
    text = _error(path)
    assert "udp.pcap holds no TCP connection" in text and "UDP x5" in text


def test_a_truncated_capture_is_one_line(tmp_path):
    path = write_scenario(tmp_path / "cut.pcap", _scenario(**BOARD_RECEIVES))
    path.write_bytes(path.read_bytes()[:-700])   # the last record loses its end
    text = _error(path)
    assert "cut.pcap is truncated" in text and "editcap" in text


def test_an_unknown_stream_is_one_line(tmp_path):
    text = _error(write_scenario(tmp_path / "c.pcap", _scenario(**BOARD_RECEIVES)), stream=7)
    assert "stream 7 is not in c.pcap" in text and "stream 0:" in text and "--stream" in text


def test_a_device_that_is_not_an_endpoint_is_one_line(tmp_path):
    path = write_scenario(tmp_path / "c.pcap", _scenario(**BOARD_RECEIVES))
    assert "device 10.9.9.9 is not an endpoint" in _error(path, device="10.9.9.9")
    assert "device 10.9.9.9 is not an endpoint of stream 0" in _error(path, device="10.9.9.9", stream=0)


def test_a_missing_or_foreign_file_is_one_line(tmp_path):
    assert "not found" in _error(tmp_path / "nothing.pcap")
    (tmp_path / "notes.txt").write_text("not a capture\n" * 10)
    assert "not a capture file" in _error(tmp_path / "notes.txt")


# ------------------------------------------------------------------ pcapng, as tshark writes it


def _same_facts(a: CaptureReading, b: CaptureReading) -> None:
    left, right = a.as_dict(), b.as_dict()
    for d in (left, right):
        for key in ("file", "name", "sha256"):
            d.pop(key)
        d["analysis"].pop("capture")
    assert left == right


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_a_pcapng_written_by_tshark_reads_the_same(tmp_path):
    pcap = write_scenario(tmp_path / "c.pcap", _scenario(**BOARD_SENDS))
    pcapng = tmp_path / "c.pcapng"
    subprocess.run(["tshark", "-r", str(pcap), "-w", str(pcapng)], check=True, capture_output=True)
    assert pcapng.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"   # a section header block: tshark's default is pcapng
    _same_facts(read_board_capture(pcap), read_board_capture(pcapng))


# ------------------------------------------------------------------ a real run's capture

# A capture of the real chain kept in the repository (captures/README.md): openmv-n6 with mp-n6-after receiving
# over a 13 ms, 17 Mbit/s wire, taken at the peer's side; the run's own analysis said link-limited, 15.837 Mbit/s.
# The round trip through `report from-capture` and `reproduce` runs the real chain every time
# (tests/test_report_roundtrip.py: at the device's side, at the peer's, over a lossy link).
EXAMPLE = Path(__file__).resolve().parent.parent / "captures" / "report" / "example-board-rx.pcap"


def test_a_real_runs_capture_reads_back_its_link():
    r = read_board_capture(EXAMPLE)
    assert (r.device, r.direction, r.captured_at) == ("10.77.0.2", "rx", "peer")
    assert r.idle_rtt_ms == pytest.approx(13, rel=0.05)
    assert r.rate_from == "ack spacing" and r.rate_bps == pytest.approx(17e6, rel=0.05)
    assert r.mss == 1460 and r.window_max == 32 * 1460 and r.window_scaling is False
    assert r.verdict == "link-limited" and r.throughput_mbps == pytest.approx(15.837, rel=1e-3)
    assert r.loss == 0 and r.retransmissions == 0


def test_a_real_runs_capture_as_tshark_pcapng_reads_the_same(tmp_path):
    pcapng = tmp_path / "capture.pcapng"
    subprocess.run(["tshark", "-r", str(EXAMPLE), "-w", str(pcapng)], check=True, capture_output=True)
    assert pcapng.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a"
    _same_facts(read_board_capture(EXAMPLE), read_board_capture(pcapng))


@pytest.mark.parametrize(("make", "words"), [
    (lambda d: _two_transfers(d), ["holds 2 transfers", "--stream N"]),
    (lambda d: write_pcap(d / "udp.pcap", [(1.0, udp_frame("10.0.0.1", "10.0.0.2", 1, 2, bytes(10)))]),
     ["holds no TCP connection"]),
    (lambda d: _cut(EXAMPLE, d / "cut.pcap"), ["cut.pcap is truncated", "editcap"]),
])
def test_report_from_capture_bad_input_is_one_line(tmp_path, make, words):
    proc = netrepro_cli("report", "from-capture", str(make(tmp_path)), "--platform", "openmv-n6", "-o",
                        str(tmp_path / "r.toml"))
    assert_one_line_error(proc, *words)
    assert not (tmp_path / "r.toml").exists()


def _cut(source: Path, path: Path) -> Path:
    path.write_bytes(source.read_bytes()[:-50])  # the last record loses its end
    return path
