"""The Xbox stand-in (report R4: nxdk's pktdrv vs nvnetdrv), end to end on the real chain.

QEMU pc (Pentium III) with an e1000 in place of nvnet; both nxdk driver designs rebuilt over
it (firmware/nics/e1000), chosen by profile. Pinned here: the report's exact TCP values (MSS
1432, window 64440, no scaling), the RX ring check at build time, and robust comparisons only.
QEMU's e1000 holds frames back while its ring is full; the platform's `rx_overflow = "drop"`
makes the link drop them instead ("device-full"), as nvnet does, so pktdrv's RX collapse (its
32-entry ring polled every 5 ms overflows at 100 Mbit/s) shows. The 20 Kbit/s pktdrv TX
collapse does not reproduce: it needs a race in nxdk's pktdrv that the stand-in does not have, so
the test pins what the stand-in does (line rate) and the report's table says FAILS.
"""

from __future__ import annotations

import pytest

from harness.core.errors import NetreproError
from harness.core.paths import PROJECT_ROOT

pytestmark = pytest.mark.real

MSS, WINDOW = 1432, 45 * 1432
LINE_RATE_CLAIM = 85   # reports/xbox.toml: nvnetdrv "at line rate", at least 85 Mbit/s each way
SNDBUF_REPORT, BAND = 60, 0.15   # reports/xbox.toml: TCP_SND_BUF 2*MSS gives ~60 Mbit/s; the report's band
PROFILES = {"pktdrv": "nxdk-pktdrv", "nvnetdrv": "nxdk-nvnetdrv"}
# board seconds (device time repeats to ~1 %); QEMU's e1000 holds RX ~1 s after RCTL is written: warm up first
SECONDS, WARMUP = 4.0, 2.0


def run(netrepro, profile, workload):
    result = netrepro.run("xbox", profile, link="ethernet", workload=workload, seconds=SECONDS, warmup=WARMUP)
    assert result.status == "passed", result.error
    a = result.analysis
    where = f"{profile} {workload} ({result.run_dir})"
    assert a.device_mss == MSS, f"{where}: device MSS {a.device_mss}"
    assert a.device_window.max == WINDOW and a.device_window.median == WINDOW, \
        f"{where}: device window {a.device_window}"
    assert a.window_scaling == "not negotiated", f"{where}: scaling {a.window_scale}"
    return result


def test_both_designs_build_and_the_rx_ring_check_rejects_a_small_ring(netrepro, tmp_path):
    for profile in (*PROFILES.values(), "nxdk-nvnetdrv-sndbuf-default"):
        assert netrepro.firmware("xbox", profile).elf.is_file()
    small = tmp_path / "lwipopts.h"
    small.write_text('#include "nxdk-nvnetdrv.h"\n#define NVNETDRV_RX_RING_SIZE 32\n')
    with pytest.raises(NetreproError) as error:
        netrepro.firmware("xbox", str(small), include=[str(PROJECT_ROOT / "firmware" / "profiles")])
    message = str(error.value)
    assert "\n" not in message, message
    assert "NVNETDRV_RX_RING_SIZE" in message and "TCP_WND/TCP_MSS" in message, message
    assert "nvnetdrv.c" in message, message


@pytest.mark.parametrize("design", sorted(PROFILES))
def test_the_board_boots_and_answers_ping(netrepro, design):
    with netrepro.board("xbox", PROFILES[design], link="ethernet") as rig:
        opts = rig.console.opts()
        assert (opts["TCP_MSS"], opts["TCP_WND"], opts["LWIP_WND_SCALE"]) == (MSS, WINDOW, 0)
        assert opts["TCP_SND_BUF"] == WINDOW
        assert [rig.ping() for _ in range(3)] == [True] * 3
        assert rig.console.stats()["icmp.recv"] >= 3
    # The driver announces itself at boot (firmware/nics/e1000/e1000_common.c).
    assert f"driver={design} " in (rig.run_dir / "console.log").read_text()


def full(result):
    """Frames the link dropped because the NIC could not take them, and the frames it was given."""
    to_device = result.link_counters["to_device"]
    return to_device["dropped"]["device-full"], to_device["frames_in"]


def test_rx_nvnetdrv_beats_pktdrv(netrepro):
    pkt = run(netrepro, PROFILES["pktdrv"], "rx")
    nv = run(netrepro, PROFILES["nvnetdrv"], "rx")
    assert pkt.link.to_device.overflow == "drop", "platforms/xbox.toml: rx_overflow"
    # pktdrv takes at most its 32 descriptors every 5 ms while ~41 full frames arrive at
    # 100 Mbit/s: the rest is lost on the wire, and TCP backs off (measured ~20 Mbit/s, report
    # 33). nvnetdrv takes frames as they come, on interrupts, without copying; it loses only a
    # few, when the host delays the emulator (tens a run).
    assert pkt.device_stats["nic.irqs"] == 0, "pktdrv polls: no NIC interrupts"
    assert nv.device_stats["nic.irqs"] > 0, "nvnetdrv is interrupt driven"
    pkt_full, _ = full(pkt)
    nv_full, nv_in = full(nv)
    assert pkt_full > 100, f"pktdrv's ring never overflowed ({pkt.run_dir})"
    assert pkt.analysis.retransmissions > 0, pkt.analysis.verdict_reason
    assert nv_full < 0.01 * nv_in, f"nvnetdrv lost {nv_full} of {nv_in} frames ({nv.run_dir})"
    assert pkt.throughput_mbps <= 0.5 * nv.throughput_mbps, (pkt.throughput_mbps, nv.throughput_mbps)
    assert nv.throughput_mbps >= LINE_RATE_CLAIM, nv.throughput_mbps


def test_tx_send_buffer_default_is_send_buffer_limited(netrepro):
    nv = run(netrepro, PROFILES["nvnetdrv"], "tx")
    small = run(netrepro, "nxdk-nvnetdrv-sndbuf-default", "tx")
    pkt = run(netrepro, PROFILES["pktdrv"], "tx")
    assert nv.throughput_mbps >= LINE_RATE_CLAIM, nv.throughput_mbps
    assert small.options["TCP_SND_BUF"] == 2 * MSS
    assert small.analysis.verdict == "send-buffer-limited", small.analysis.verdict_reason
    assert abs(small.throughput_mbps - SNDBUF_REPORT) <= BAND * SNDBUF_REPORT, small.throughput_mbps
    # The report's 20 Kbit/s collapse does not happen on the stand-in (see the module docstring):
    # pinned as what it does, line rate, limited by the link
    assert pkt.throughput_mbps >= LINE_RATE_CLAIM, pkt.throughput_mbps
    assert pkt.analysis.verdict == "link-limited", pkt.analysis.verdict_reason
