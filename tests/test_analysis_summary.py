"""AnalysisSummary, the typed record of a capture's analysis: as_dict() is summary(), from_dict() reads it back.

On synthetic captures (tests/captures_gen.py) and on the stored reference captures, whose
summaries and tables in captures/ were written by earlier versions of netrepro.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from captures_gen import DEVICE_IP, PEER_IP, Scenario, simulate, udp_frame, write_pcap, write_scenario

from harness.analysis import AnalysisSummary, format_table, load_capture
from harness.analysis.summary import Evidence, PauseSharesSummary, WindowSummary

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

CAPTURES = Path(__file__).resolve().parent.parent / "captures"
REFERENCES = sorted(CAPTURES.glob("*.pcap"))


def _round_trip(summary: dict) -> None:
    """from_dict(summary).as_dict() is summary, down to the JSON text (key order, ints and floats)."""
    typed = AnalysisSummary.from_dict(summary)
    assert typed.as_dict() == summary
    assert json.dumps(typed.as_dict()) == json.dumps(summary)
    assert AnalysisSummary.from_dict(json.loads(json.dumps(summary))) == typed


@pytest.fixture(scope="module")
def send_buffer(tmp_path_factory):
    """A transmit held by a 2-segment send buffer: plateau evidence, pause shares, link rate."""
    sc = Scenario(duration=0.5, sender="device", client="peer", device_mss=1432, snd_buf=2864, rcv_buf=64240,
                  rtt=0.002, peer_wscale=7, rate_bps=100e6)
    path = write_scenario(tmp_path_factory.mktemp("summary") / "sndbuf.pcap", sc)
    return load_capture(path, device_ip=DEVICE_IP, link_rate_bps=100e6)


def test_summary_is_the_typed_summary_as_a_dict(send_buffer):
    a = send_buffer
    typed = a.to_summary()
    assert a.summary() == typed.as_dict()
    assert typed.verdict == a.verdict == "send-buffer-limited"
    assert typed.device_mss == 1432 and typed.window_scale.peer == 7 and typed.window_scale["device"] is None
    assert typed.peer_window == WindowSummary(64240, 64240, 64240, a.peer_window.count, False)
    assert typed.in_flight.max == 2864 and "bytes_in_flight" in typed.in_flight.source
    assert isinstance(typed.evidence, Evidence) and typed.evidence.in_flight_ceiling == 2864
    assert typed.evidence.in_flight_slice_peaks == tuple(a.evidence["in_flight_slice_peaks"])
    assert isinstance(typed.pause_shares, PauseSharesSummary)
    assert typed.connection is not None and typed.connection.syn_seen is True
    assert typed.link_rate_mbps == 100.0 and typed.rtt_samples == len(a.rtt_samples)
    with pytest.raises(dataclasses.FrozenInstanceError):
        typed.verdict = "link-limited"  # type: ignore[misc]


def test_round_trip_on_a_synthetic_capture(send_buffer):
    _round_trip(send_buffer.summary())


def test_round_trip_without_a_data_direction(tmp_path):
    """No TCP at all, and a connection without payload: the JSON's empty objects and missing keys survive."""
    udp = [(1.0 + i / 10, udp_frame(PEER_IP, DEVICE_IP, 1234, 5001, b"x" * 100)) for i in range(5)]
    empty = load_capture(write_pcap(tmp_path / "udp.pcap", udp)).summary()
    assert "connection" not in empty and empty["evidence"] == {} and empty["pause_shares"] == {}
    assert empty["in_flight"] == {"source": ""} and empty["idle"]["total_s"] == 0
    _round_trip(empty)
    handshake = load_capture(write_pcap(tmp_path / "hs.pcap", simulate(Scenario(duration=0.0))[:3]),
                             device_ip=DEVICE_IP).summary()
    assert handshake["connection"]["syn_seen"] is True and handshake["evidence"] == {}
    _round_trip(handshake)


def test_a_summary_from_an_older_or_newer_netrepro_loads():
    stored = json.loads(REFERENCES[0].with_suffix(".json").read_text())
    older = {k: v for k, v in stored.items() if k not in ("rtt_source", "idle", "connection", "pause_shares")}
    older["evidence"] = {k: v for k, v in stored["evidence"].items() if k != "base_rtt_ms"}
    typed = AnalysisSummary.from_dict({**older, "a_later_key": 1, "device_window": {**stored["device_window"],
                                                                                    "p99": 1}})
    assert typed.rtt_source == "" and typed.connection is None and typed.pause_shares is None
    assert typed.evidence is not None and typed.evidence.base_rtt_ms is None
    assert typed.device_window.max == stored["device_window"]["max"]
    assert typed.verdict == stored["verdict"]
    assert AnalysisSummary.from_dict({}) == AnalysisSummary()


@pytest.mark.parametrize("pcap", REFERENCES, ids=[p.stem for p in REFERENCES])
def test_reference_captures_round_trip(pcap, monkeypatch):
    """captures/NAME.json and NAME.txt were written by `netrepro inspect NAME.pcap ...` in captures/: the same now."""
    stored = json.loads(pcap.with_suffix(".json").read_text())
    _round_trip(stored)  # a summary written before loads, and writes the same JSON
    monkeypatch.chdir(CAPTURES)
    a = load_capture(pcap.name, device_ip="10.77.0.2", link_rate_bps=43e6, captured_at="device")
    assert json.dumps(a.summary(), indent=2) == json.dumps(stored, indent=2)
    assert AnalysisSummary.from_dict(stored) == a.to_summary()
    assert format_table(a) == pcap.with_suffix(".txt").read_text().rstrip("\n")
