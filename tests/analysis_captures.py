"""The synthetic captures and helpers the capture-analysis tests share (tests/test_analysis.py,
tests/test_analysis_reading.py): the scenarios with known answers behind the module fixtures, tshark's own
counts, the one-line error check.

A test module imports the fixtures (capdir_fixture, ...); pytest knows each by its name= (capdir, ...), so a
test's argument of that name does not shadow the import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from captures_gen import DEVICE_IP, Scenario, write_scenario

from harness.analysis import CaptureAnalysis, load_capture
from harness.core.errors import NetreproError

# R1 before: lwIP TCP_WND 16*MSS = 23360, no window scaling, RTT ~6 ms, link faster than the window allows
R1_BEFORE = Scenario(duration=1.0, rcv_buf=23360, rtt=0.006, rate_bps=100e6)
FAST_RETRANS = Scenario(duration=0.5, drop=frozenset({40}))
# R4 before: device transmits with TCP_SND_BUF 2*MSS (MSS 1432) to a Linux receiver
SEND_BUFFER = Scenario(duration=1.0, sender="device", client="peer", device_mss=1432, peer_mss=1460, snd_buf=2864,
                       rcv_buf=64240, rtt=0.002, peer_wscale=7, rate_bps=100e6)


def tshark_count(path: Path, display_filter: str | None = None) -> int:
    """How many frames tshark itself shows (optionally through a display filter)."""
    cmd = ["tshark", "-n", "-r", str(path), "-T", "fields", "-e", "frame.number"]
    if display_filter:
        cmd += ["-Y", display_filter]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return len([line for line in out.stdout.splitlines() if line.strip()])


@pytest.fixture(scope="module", name="capdir")
def capdir_fixture(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("captures")


def _load(capdir: Path, name: str, sc: Scenario, **kw) -> tuple[Path, CaptureAnalysis]:
    path = write_scenario(capdir / f"{name}.pcap", sc)
    return path, load_capture(path, **kw)


@pytest.fixture(scope="module", name="r1")
def r1_fixture(capdir):
    return _load(capdir, "r1", R1_BEFORE, device_ip=DEVICE_IP)


@pytest.fixture(scope="module", name="fast")
def fast_fixture(capdir):
    return _load(capdir, "fast", FAST_RETRANS, device_ip=DEVICE_IP)


@pytest.fixture(scope="module", name="sndbuf")
def sndbuf_fixture(capdir):
    return _load(capdir, "sndbuf", SEND_BUFFER, device_ip=DEVICE_IP, link_rate_bps=100e6)


def _one_line_error(path, fragment: str, **kw) -> None:
    with pytest.raises(NetreproError) as info:
        load_capture(path, **kw)
    text = str(info.value)
    assert "\n" not in text and fragment in text, text
