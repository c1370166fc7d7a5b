"""The largest-window helpers on the stored sock-rx captures: TCP_WND is the largest window, not the usual one."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.analysis import load_capture

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

CAPTURES = Path(__file__).resolve().parent.parent / "captures"
TCP_WND = {"before": 16 * 1460, "after": 32 * 1460}


@pytest.mark.parametrize("case", sorted(TCP_WND))
def test_largest_window_is_tcp_wnd(case):
    a = load_capture(CAPTURES / f"openmv-n6-wifi-sock-rx-mp-n6-{case}.pcap", device_ip="10.77.0.2")
    a.expect_largest_device_window(TCP_WND[case])
    a.expect_largest_peer_window(64240)
    a.expect_device_window(TCP_WND[case] - 1460)  # its usual window: the application gives one MSS back late
    with pytest.raises(AssertionError, match=rf"^the largest window the device advertised was {TCP_WND[case]}, "
                                             rf"expected 46721 \(its usual window: {TCP_WND[case] - 1460} in \d+ of "
                                             rf"{a.device_window.count} ACKs\)$"):
        a.expect_largest_device_window(46721)
