"""The reports' claims, pinned at the reports' own thresholds, from real runs in device time.

Each test reproduces some cases of a report through the plugin's `netrepro` fixture (firmware,
link, peer, capture, analysis; run folders kept when a test fails; device time, the plugin's
default) and checks the report's claims as the report file states them. In device time the
figures repeat to about 1 % (benchmarks/results/device-time-repeat.md), so one short run a case
decides. Where a claim does not reproduce on the stand-in, the test pins what the stand-in does,
the report's table says FAILS, and docs/reports/ says why.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.analysis import load_capture
from harness.analysis.transfer import HEADERS
from harness.core.ethernet import wire_bytes

pytestmark = pytest.mark.real


def cases(netrepro, report, names, repeats=1, seconds=3.0, d_check=False):
    found = netrepro.reproduce(report, names, repeats=repeats, seconds=seconds, d_check=d_check)
    assert set(found) == set(names), f"cases run: {sorted(found)}"
    for case in found.values():
        assert case["median_mbps"] is not None, f"{case['case']} failed: {case['error']}"
    return found


def err_mem_waits(case) -> int:
    """The socket benchmark's ERR_MEM waits in the case's (only) run, from the board's console."""
    (run_dir,) = case["run_dirs"]
    return err_mem_waits_in(run_dir)


def err_mem_waits_in(run_dir) -> int:
    """The ERR_MEM waits of a run; where there were any, the board judged lwIP's heap at each (nr_heap.c), and
    on the RT1060's before profile the heap runs out in holes: a segment's 872 B pbuf fits in what is free in
    all, not in its largest block (docs/measurements.md, "What limits RT1060 TX before")."""
    counts = json.loads((Path(run_dir) / "result.json").read_text())["board_counts"]
    assert counts is not None, f"no board counts in {run_dir}/result.json"
    waits = counts["err_mem_waits"]
    if waits:  # every one of ~800 waits over 12 runs out of heap was in holes (device-time-repeat.md)
        assert counts["err_mem_fragmented"] == waits and counts["err_mem_heap_full"] == 0, counts
        assert counts["heap_free"] >= counts["segment_heap_request"] == 16 + 56 + 800 > counts["heap_largest_free"], \
            counts
    return waits


def err_mem_sleep_share(waits: int, seconds: float) -> float:
    """The share of a run the board's socket benchmark slept on ERR_MEM: MicroPython sleeps 50 ms a wait."""
    return waits * 0.050 / seconds


def err_mem_ceiling_mbps(bound_mbps: float, waits: int, seconds: float, send_buffer: int = 6400) -> float:
    """The most a run whose heap ran out can carry: its send buffer per RTT (``bound_mbps``) while awake, plus,
    at each ERR_MEM wait, what it had queued (at most its send buffer), which lwIP still sends during the 50 ms
    sleep as the peer's ACKs open the window. A run of 3 s with ~50 waits carries ~0.9 Mbit/s in those drains."""
    awake = bound_mbps * (1 - err_mem_sleep_share(waits, seconds))
    return awake + waits * send_buffer * 8 / seconds / 1e6


def run_seconds(case) -> float:
    (run_dir,) = case["run_dirs"]
    return json.loads((Path(run_dir) / "result.json").read_text())["seconds"]


def claim(case):
    return f"{case['case']}: {case['median_mbps']} Mbit/s, {case['verdict']} ({'; '.join(case['claim_notes'])})"


def test_n6_wifi_window_before_and_after(netrepro):
    found = cases(netrepro, "openmv-n6", ["wifi rx before", "wifi rx after", "wifi tx before", "wifi tx after"])
    before, after = found["wifi rx before"], found["wifi rx after"]
    for case, window in ((before, 23360), (after, 46720)):
        assert case["device_mss"] == 1460 and case["device_window_max"] == window, claim(case)
        assert case["window_scaling"] is False, claim(case)
    assert before["verdict"] == "window-limited", claim(before)
    assert after["median_mbps"] >= 1.1 * before["median_mbps"], claim(after)
    assert after["verdict"] == "link-limited" or after["median_mbps"] >= 0.85 * 35, claim(after)
    tx_before, tx_after = found["wifi tx before"]["median_mbps"], found["wifi tx after"]["median_mbps"]
    assert abs(tx_after - tx_before) <= 0.15 * tx_before, f"TX {tx_before} -> {tx_after} Mbit/s"
    # the report's figures over the shared medium: 35-39 after agrees within the report's 15 % band; 31 before
    # does not (~23): the report's 5-6 ms RTT was measured on that air and the medium's turns add to it, so
    # part of the air's cost counts twice (docs/reports/openmv-n6.md). The table says "no"; this pins it.
    assert after["agrees"] is True, claim(after)
    assert before["agrees"] is False and before["median_mbps"] < 0.85 * 31, claim(before)
    # "wifi tx after" declares its claim by construction (the two profiles differ only in TCP_WND, which a
    # send-buffer-limited TX does not use): it holds, but is shown, not counted.
    assert all(c["claim_result"] in ("holds", "by-construction", None) for c in found.values()), \
        [claim(c) for c in found.values()]
    assert found["wifi tx after"]["claim_result"] == "by-construction", claim(found["wifi tx after"])


def test_n6_ethernet_is_unaffected_by_the_window(netrepro):
    """The report: gigabit ethernet, sub-millisecond RTT, "never window-limited"; after within 15 % of before."""
    found = cases(netrepro, "openmv-n6", ["ethernet rx before", "ethernet rx after"])
    before, after = found["ethernet rx before"], found["ethernet rx after"]
    for case, window in ((before, 23360), (after, 46720)):
        assert (case["device_mss"], case["device_window_max"]) == (1460, window), claim(case)
        assert case["verdict"] != "window-limited", claim(case)
    assert abs(after["median_mbps"] - before["median_mbps"]) <= 0.15 * before["median_mbps"], claim(after)
    # both capped by the stand-in NIC's 100 Mbit/s wire: the report file declares the claim by construction
    assert after["claim_result"] == "by-construction", claim(after)


def test_rt1060_wifi_mss_window_and_rx(netrepro):
    found = cases(netrepro, "openmv-rt1060", ["wifi rx before", "wifi rx after", "wifi tx before", "wifi tx after"])
    rx_before, rx_after = found["wifi rx before"], found["wifi rx after"]
    assert (rx_before["device_mss"], rx_before["device_window_max"]) == (800, 6400), claim(rx_before)
    assert (rx_after["device_mss"], rx_after["device_window_max"]) == (1460, 10220), claim(rx_after)
    assert rx_before["verdict"] == "window-limited", claim(rx_before)
    # The report: 24 / 15.9 = 1.51x; its claim here, at least 1.3x. On the shared medium it is ~1.29x (the wire
    # gave 1.45x): the larger window's data takes longer turns of the air and the board's ACKs take turns of
    # their own, so the stored run says FAILS (docs/reports/openmv-rt1060.md). This pins the band the air gives.
    assert 1.15 * rx_before["median_mbps"] <= rx_after["median_mbps"] < 1.42 * rx_before["median_mbps"], \
        f"{claim(rx_before)} / {claim(rx_after)}"
    # TX: the report's "3.5x faster" (claim >= 2x) needs the 8000 B heap to run out before the change
    # (lwIP's ERR_MEM, MicroPython's 50 ms sleeps). TX before is bistable: the heap holds the nine segment
    # pbufs the send buffer takes only while they lie packed; once the queue drains, a pbuf of a write's
    # own size cuts it into holes, and the 50 ms sleeps keep it so (docs/measurements.md). Either the heap
    # holds and the send buffer is the limit (1.2-2x, the claim FAILS), or it runs out in holes (all three
    # runs of the stored reproduction over the air). The test pins both states by their cause, the board's
    # own count of ERR_MEM waits and its judgement of the heap at each.
    tx_before, tx_after = found["wifi tx before"], found["wifi tx after"]
    assert tx_before["verdict"] in ("send-buffer-limited", "sender-limited"), claim(tx_before)
    ratio = tx_after["median_mbps"] / tx_before["median_mbps"]
    if err_mem_waits(tx_before) == 0:
        assert tx_before["verdict"] == "send-buffer-limited", claim(tx_before)
        # send buffers 8760 / 6400 = 1.37x, less the longer RTT the larger one's turns make on the air (1.14-1.23x
        # measured; the wire's 1.2x is pinned by the next test): faster, and short of the claim
        assert 1.05 <= ratio < 2.0 and tx_after["claim_result"] == "fails", f"{claim(tx_before)} / {claim(tx_after)}"
    else:  # the heap ran out: below what its 6400 B send buffer carries in an RTT while awake, plus what it
        # had queued at each sleep (2 waits in 3 s, 3 % of the time, were seen beside 51: one model for every count)
        bound = 6400 * 8 / tx_before["rtt_ms"] / 1e3
        waits, seconds = err_mem_waits(tx_before), run_seconds(tx_before)
        ceiling = err_mem_ceiling_mbps(bound, waits, seconds)
        assert tx_before["median_mbps"] < bound, (claim(tx_before), bound)
        assert tx_before["median_mbps"] <= ceiling * 1.02, (claim(tx_before), bound, waits, seconds, ceiling)
        assert ratio >= 1.05, f"{claim(tx_before)} / {claim(tx_after)}"
    assert err_mem_waits(tx_after) == 0, claim(tx_after)  # the 13 KiB heap holds
    assert tx_after["agrees"] is True, claim(tx_after)  # 22.2 in the report


def test_rt1060_wifi_tx_on_the_wire_is_the_send_buffers_ratio_when_the_heap_holds(netrepro):
    """Over `wifi-wire` (the WiFi as a 40 Mbit/s wire, the report's RTT) no turn of the air stretches the larger
    send buffer's RTT, so when the 8000 B heap holds, TX after / before is close to the send buffers' ratio,
    8760 / 6400 = 1.37x (1.31x measured): at least 1.2x. When the heap runs out, before falls under what its
    send buffer carries in an RTT by the share of the time it slept on ERR_MEM (50 ms a wait, the board's
    count), though what it had queued at each sleep still goes out: 1 to 13 waits in 3 s were seen, 2-22 % of
    the time."""
    seconds = 3.0
    before = netrepro.run("openmv-rt1060", "mp-rt1060-before", link="wifi-wire", workload="sock-tx", seconds=seconds)
    after = netrepro.run("openmv-rt1060", "mp-rt1060-after", link="wifi-wire", workload="sock-tx", seconds=3.0)
    a, b = after.analysis, before.analysis
    assert err_mem_waits_in(after.run_dir) == 0 and a.verdict == "send-buffer-limited", a.verdict
    ratio = after.throughput_mbps / before.throughput_mbps
    waits = err_mem_waits_in(before.run_dir)
    if waits == 0:
        assert b.verdict == "send-buffer-limited", b.verdict
        assert 1.2 <= ratio <= 8760 / 6400 * 1.05, f"{after.throughput_mbps} / {before.throughput_mbps} = {ratio:.3f}"
    else:
        bound = 6400 * 8 / b.rtt_ms / 1e3
        ceiling = err_mem_ceiling_mbps(bound, waits, seconds)
        assert before.throughput_mbps <= ceiling * 1.02, (before.throughput_mbps, bound, waits, ceiling)
        assert before.throughput_mbps < bound, (before.throughput_mbps, bound, waits)
        assert ratio >= 1.2, f"{after.throughput_mbps} / {before.throughput_mbps}"


def test_rt1060_ethernet_at_line_rate_with_either_mss(netrepro):
    """The report: "100M ethernet on the RT10xx still runs at line rate (91/91 Mbit/s TCP)", before and
    after; its claim, at least 85 Mbit/s each way. In host time the MSS-800 cases missed it (the
    emulated core's speed was the host's); in device time the modelled 600 MHz core is ~12 % busy."""
    names = ["ethernet tx before", "ethernet rx before", "ethernet tx after", "ethernet rx after"]
    seconds = 3.0
    # RX is judged on the median of three runs; TX on one, its heap state read off the board's console. TX before
    # also runs once more at twice D (reproduce --d-check): out of heap, its figure can follow the host's D.
    found = cases(netrepro, "openmv-rt1060", ["ethernet tx before"], seconds=seconds, d_check=True)
    found |= cases(netrepro, "openmv-rt1060", ["ethernet tx after"], seconds=seconds)
    found |= cases(netrepro, "openmv-rt1060", [n for n in names if " rx " in n], repeats=3, seconds=seconds)
    for name in names:
        case = found[name]
        assert case["device_mss"] == (800 if "before" in name else 1460), claim(case)
        waits = err_mem_waits(case) if " tx " in name else 0
        if name == "ethernet rx before":
            # MSS 800: the board's 6400 B window (5.6 KB median as advertised) carries 85 Mbit/s only while the
            # capture's RTT stays under ~0.5 ms; it read 0.476 ms (87.3 Mbit/s) on one machine of this kind and
            # 0.515 ms (82.0) on another, the same board and build (docs/device-time.md). Pinned: the window per
            # RTT is what it carries, and the table says FAILS whenever the figure is under the claim. Both bounds in
            # payload: the window per RTT, and the 100 Mbit/s wire's share of 800-byte segments (91.1 Mbit/s).
            payload = case["link_mbps"] * 800 / wire_bytes(800 + HEADERS)
            carried = min(case["bound_mbps"], payload)
            assert case["median_mbps"] >= 0.9 * carried and case["verdict"] == "link-limited", (claim(case), carried)
            assert (case["claim_result"] == "holds") == (case["median_mbps"] >= 85), claim(case)
        elif waits == 0:
            assert case["median_mbps"] >= 85 and case["claim_result"] == "holds", claim(case)
        else:
            # The 8000 B heap ran out in holes (lwIP's ERR_MEM, MicroPython's 50 ms sleeps), the bistable state
            # of TX before (docs/reports/openmv-rt1060.md): the board sent nothing for waits x 50 ms of its time
            # and ran at the claim's rate for the rest. Runs held, slept a few times, or stayed out of heap (30 waits
            # in 3 s). Deeper in that state the heap stays cut between sleeps, the peer's ACKs (its delayed ACK is on
            # the wall clock) pace what the board sends while awake, and the figure follows the D the host let the
            # board keep (2.98 Mbit/s with 41 waits beside two busy loops, docs/device-time.md): the D check must
            # then find it host-dependent, so the table shows it and does not count it.
            assert "before" in name, claim(case)
            idle_share = err_mem_sleep_share(waits, seconds)
            awake_at_claim = case["median_mbps"] >= 85 * (1 - idle_share)
            assert awake_at_claim or case["host_dependent"], \
                f"{claim(case)}; err_mem_waits={waits}; D check {case['d_check']} ({case['d_check_dilation']})"
    assert found["ethernet rx after"]["device_window_max"] == 10220, claim(found["ethernet rx after"])


def test_xbox_two_way_cases_share_one_run_and_judge_their_own_direction(netrepro):
    found = cases(netrepro, "xbox", ["nvnetdrv rx", "nvnetdrv tx"])
    rx, tx = found["nvnetdrv rx"], found["nvnetdrv tx"]
    assert rx["run_dirs"] == tx["run_dirs"], "one iperf -r run serves both directions"
    assert (rx["direction"], tx["direction"]) == ("rx", "tx")
    for case in (rx, tx):
        assert case["device_mss"] == 1432 and case["window_scaling"] is False, claim(case)
    assert rx["device_window_max"] == 64440, claim(rx)
    # the report: nvnetdrv at line rate both ways (94.2 / 92.9); its claim, at least 85 Mbit/s
    assert rx["median_mbps"] >= 85 and tx["median_mbps"] >= 85, (claim(rx), claim(tx))
    # 100 Mbit/s carries 94.8 Mbit/s of 1432-byte segments; the peer's figure converts to within ~1 %
    assert rx["median_mbps"] <= 96 and tx["median_mbps"] <= 96, "no more payload than 100 Mbit/s carries"
    assert rx["claim_result"] == tx["claim_result"] == "holds", (claim(rx), claim(tx))
    # Each direction is its own connection of the capture, and its analysis is that connection's.
    capture = Path(rx["run_dirs"][0]) / "capture.pcap"
    peer_sends = load_capture(capture, device_ip="10.77.0.2", sender="peer", captured_at="device")
    board_sends = load_capture(capture, device_ip="10.77.0.2", sender="device", captured_at="device")
    assert peer_sends.conn != board_sends.conn
    assert peer_sends.goodput_mbps == pytest.approx(rx["median_mbps"], rel=0.15)
    assert board_sends.goodput_mbps == pytest.approx(tx["median_mbps"], rel=0.15)
    # both legs of iperf -r, the peer's figures, are timed by their connections' data in the capture: the
    # board's time, whatever D the host kept (the second leg's length is iperf's, on the wall clock)
    result = json.loads((Path(rx["run_dirs"][0]) / "result.json").read_text())
    assert set(result["time"]["peer_figures_timed_by"]) == {"rx", "tx"}, result["time"]
    assert all("in the capture" in how for how in result["time"]["peer_figures_timed_by"].values())
    # and the peer's minimum RTO was in the board's time too
    assert result["peer_timers"]["rto_min"]["scaled"] is True and result["peer_timers"]["rto_min"]["board_ms"] == 200
