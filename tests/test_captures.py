"""The stored reference captures still read as their summaries say (captures/*.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.analysis import load_capture

CAPTURES = Path(__file__).resolve().parent.parent / "captures"
REFERENCES = sorted(CAPTURES.glob("*.pcap"))


@pytest.mark.parametrize("pcap", REFERENCES, ids=[p.stem for p in REFERENCES])
def test_reference_capture_matches_its_summary(pcap):
    summary = json.loads(pcap.with_suffix(".json").read_text())
    analysis = load_capture(pcap, device_ip="10.77.0.2", link_rate_bps=43e6, captured_at="device").summary()
    for key in ("device_mss", "peer_mss", "window_scale", "device_window", "retransmissions", "verdict"):
        assert analysis[key] == summary[key], f"{pcap.name}: {key} {analysis[key]!r}, summary {summary[key]!r}"
    assert analysis["goodput_mbps"] == pytest.approx(summary["goodput_mbps"], rel=1e-6)
    window = 23360 if "before" in pcap.name else 46720
    assert analysis["device_mss"] == 1460 and analysis["device_window"]["max"] == window


def test_there_are_reference_captures():
    assert len(REFERENCES) >= 2
