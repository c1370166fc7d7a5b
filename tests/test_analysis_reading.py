"""Reading captures beyond the verdict: counts as tshark gives them (on two connections, and on real Linux
transfers through a rate-limited router in private namespaces, root only), bad captures as one line, loading
inside event loops and threads, and the outputs (the summary, the table, the plots)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from analysis_captures import _one_line_error, tshark_count

# the module fixtures: pytest finds them in this module by their name= (capdir, fast, r1, sndbuf)
from analysis_captures import capdir_fixture as capdir_fixture
from analysis_captures import fast_fixture as fast_fixture
from analysis_captures import r1_fixture as r1_fixture
from analysis_captures import sndbuf_fixture as sndbuf_fixture
from captures_gen import (
    DEVICE_IP,
    PEER_IP,
    Scenario,
    linux_capture,
    linux_capture_possible,
    simulate,
    udp_frame,
    write_pcap,
)
from conftest import RUN_PLOT_FILES

from harness.analysis import VERDICTS, CaptureAnalysis, format_table, load_capture
from harness.analysis.plots import PLOTS_ENV, plot_capture
from harness.cli.exit_codes import ExitCode
from harness.core.errors import NetreproError
from harness.link import LinkSpec
from harness.runs.analyse import plot_run
from harness.runs.result import RunResult

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


# ------------------------------------------------------------------ agreement with tshark


def test_counts_agree_with_tshark_on_two_connections(capdir):
    one = simulate(Scenario(duration=0.4, drop=frozenset({30, 31, 90}), rcv_buf=64000))
    two = simulate(Scenario(duration=0.2, device_port=5002, peer_port=40002, start=1.1, drop=frozenset({10}),
                            app_pause=(0.05, 0.05)))
    path = write_pcap(capdir / "two.pcap", sorted(one + two, key=lambda r: r[0]))
    a = load_capture(path, device_ip=DEVICE_IP)
    assert a.frames == tshark_count(path) == len(one) + len(two)
    assert a.tcp_frames == tshark_count(path, "tcp")
    assert len(a.connections) == 2
    big = max(a.connections, key=lambda c: c.payload_bytes)
    assert a.conn == big.stream and "most payload" in a.conn_chosen_by
    for conn in a.connections:
        b = a if conn.stream == a.conn else load_capture(path, device_ip=DEVICE_IP, conn=conn.stream)
        where = f"tcp.stream=={conn.stream}"
        assert conn.frames == tshark_count(path, where)
        assert b.retransmissions == tshark_count(path, f"{where} && tcp.analysis.retransmission") > 0
        assert b.fast_retransmissions == tshark_count(path, f"{where} && tcp.analysis.fast_retransmission")
        assert sum(b.dup_acks.values()) == tshark_count(path, f"{where} && tcp.analysis.duplicate_ack")
        assert sum(b.zero_windows.values()) == tshark_count(path, f"{where} && tcp.analysis.zero_window")
        assert b.out_of_order == tshark_count(path, f"{where} && tcp.analysis.out_of_order")
        assert b.device_window.count + b.peer_window.count == tshark_count(
            path, f"{where} && tcp.flags.ack==1 && tcp.flags.syn==0 && tcp.flags.reset==0")
    with pytest.raises(NetreproError, match=r"connection 7 is not in the capture; pick one of: 0, 1"):
        load_capture(path, conn=7)


@pytest.mark.skipif(linux_capture_possible() is not None, reason=str(linux_capture_possible()))
def test_real_linux_transfer_agrees_with_tshark(tmp_path, no_leftovers):
    """A lossy transfer (Linux's window outgrows the router's 20000 B queue): every count as tshark counts it."""
    path = linux_capture(tmp_path / "linux.pcap", seconds=1.5, rate="20mbit", queue_bytes=20000)
    a = load_capture(path, device_ip="10.77.0.2", link_rate_bps=20e6)
    assert a.frames == tshark_count(path)
    assert a.retransmissions == tshark_count(path, "tcp.analysis.retransmission")
    assert sum(a.dup_acks.values()) == tshark_count(path, "tcp.analysis.duplicate_ack")
    assert (a.device_mss, a.peer_mss) == (1460, 1460)
    assert a.window_scaling == "negotiated" and a.sack_permitted == {"device": True, "peer": True}
    assert a.data_direction == "peer->device"
    assert a.truncated  # dumpcap kept 128 bytes of each frame
    assert any("snap length (128 bytes kept)" in w for w in a.warnings)
    assert 0 < a.goodput_mbps <= 20  # never above the link's rate (tbf's 16 KB burst included)


@pytest.mark.skipif(linux_capture_possible() is not None, reason=str(linux_capture_possible()))
def test_real_linux_transfer_at_the_link_rate_reads_link_limited(tmp_path, no_leftovers):
    """A transfer the router never drops from: the receiver's window (iperf -w 64K) stays under the router's
    256000 B queue, so the queue keeps the link busy through a stall of either process (~50 ms of it queued);
    the capture must read the link's payload rate, ~19 of 20 Mbit/s, and say the link limited it."""
    path = linux_capture(tmp_path / "linux.pcap", seconds=1.5, rate="20mbit", queue_bytes=256000,
                         receive_buffer="64K")
    a = load_capture(path, device_ip="10.77.0.2", link_rate_bps=20e6)
    # the queue drops nothing, but a loaded host can still fire a sender's timer early: counted as tshark does
    assert a.retransmissions == tshark_count(path, "tcp.analysis.retransmission")
    assert a.goodput_mbps == pytest.approx(19, rel=0.1)
    assert a.verdict == "link-limited", a.verdict_reason


# ------------------------------------------------------------------ bad captures: one line, never a traceback


def test_bad_captures_give_one_line(tmp_path, r1):
    _one_line_error(tmp_path / "missing.pcap", "not found")
    _one_line_error(tmp_path, "is a directory")
    (tmp_path / "empty.pcap").write_bytes(b"")
    _one_line_error(tmp_path / "empty.pcap", "is empty (0 bytes)")
    (tmp_path / "junk.pcap").write_bytes(b"this is not a capture at all\n" * 20)
    _one_line_error(tmp_path / "junk.pcap", "is not a capture file tshark can read")
    # cut short in the middle of a frame: what is there is analysed, with a warning
    data = r1[0].read_bytes()
    (tmp_path / "cut.pcap").write_bytes(data[: len(data) // 3 + 7])
    a = load_capture(tmp_path / "cut.pcap", device_ip=DEVICE_IP)
    assert any("cut short in the middle of frame" in w for w in a.warnings), a.warnings
    assert a.frames == tshark_count(tmp_path / "cut.pcap") and a.conn == 0
    a.expect_device_window(23360)


def test_captures_without_a_usable_connection_say_why(tmp_path):
    a = load_capture(write_pcap(tmp_path / "none.pcap", []))
    assert a.conn is None and a.empty_reason == "the capture holds no frames"
    udp = [(1.0 + i / 10, udp_frame(PEER_IP, DEVICE_IP, 1234, 5001, b"x" * 100)) for i in range(5)]
    a = load_capture(write_pcap(tmp_path / "udp.pcap", udp))
    assert a.empty_reason == "the capture holds 5 frames, none of them TCP (UDP x5)"
    assert a.verdict == "unknown" and a.verdict_reason == a.empty_reason
    assert "nothing to analyse: the capture holds 5 frames, none of them TCP" in format_table(a)
    with pytest.raises(AssertionError, match="no connection to check"):
        a.expect_device_window(23360)
    assert plot_capture(a, tmp_path / "plots", "udp") == []
    json.dumps(a.summary())
    handshake_only = simulate(Scenario(duration=0.0))[:3]
    a = load_capture(write_pcap(tmp_path / "hs.pcap", handshake_only), device_ip=DEVICE_IP)
    assert a.empty_reason == "connection 0 carries no payload" and a.device_mss == 1460


def test_snap_length_is_reported(tmp_path):
    records = simulate(Scenario(duration=0.1))
    a = load_capture(write_pcap(tmp_path / "s64.pcap", records, snaplen=64), device_ip=DEVICE_IP)
    assert a.truncated and a.snaplen == 64
    assert a.truncated_frames == sum(1 for _, f in records if len(f) > 64)
    assert any("truncated by the capture's snap length (64 bytes kept): headers intact" in w for w in a.warnings)
    a.expect_device_window(23360)  # headers survive, so the facts are still right
    assert a.payload_bytes == sum(len(f) - 54 for _, f in records if len(f) > 60)
    a = load_capture(write_pcap(tmp_path / "s40.pcap", records, snaplen=40))
    assert a.conn is None and "snap length (40 bytes) cut off every TCP header" in a.empty_reason


# ------------------------------------------------------------------ event loops


def test_works_inside_a_running_event_loop(r1):
    path, _ = r1

    async def main() -> CaptureAnalysis:
        await asyncio.sleep(0)
        return load_capture(path, device_ip=DEVICE_IP)

    a = asyncio.run(main())
    assert a.verdict == "window-limited"


def test_works_beside_a_signal_based_child_watcher(r1):
    """pyshark used directly in the main thread installs a SafeChildWatcher on an idle loop."""
    path, _ = r1
    loop = asyncio.new_event_loop()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            watcher = asyncio.SafeChildWatcher()
            asyncio.set_child_watcher(watcher)
        watcher.attach_loop(loop)
        start = time.monotonic()
        a = load_capture(path, device_ip=DEVICE_IP)
        assert time.monotonic() - start < 10
        assert a.verdict == "window-limited"
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            asyncio.set_child_watcher(None)
        loop.close()


def test_works_from_several_threads_at_once(r1, fast):
    results: list[str] = []

    def work(path: Path) -> None:
        results.append(load_capture(path, device_ip=DEVICE_IP).verdict)

    threads = [threading.Thread(target=work, args=(p,)) for p in (r1[0], fast[0], r1[0])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == ["window-limited"] * 3


# ------------------------------------------------------------------ outputs


def test_summary_is_the_run_result_analysis(r1):
    _, a = r1
    s = json.loads(json.dumps(a.summary()))
    for key in ("device_mss", "peer_mss", "device_window", "window_scale", "rtt_ms", "retransmissions",
                "goodput_mbps", "bound_mbps", "verdict", "verdict_reason"):
        assert key in s, key
    assert s["device_window"] == {"min": 23360, "median": 23360, "max": 23360, "count": a.device_window.count,
                                  "unknown_scale": False}
    assert s["window_scale"] == {"device": None, "peer": None}
    assert s["verdict"] in VERDICTS and s["device"] == f"{DEVICE_IP}:5001"
    assert s["goodput_per_interval_mbps"] and s["connection"]["syn_seen"] is True


def test_format_table(r1, sndbuf):
    text = format_table(r1[1])
    assert "23360/23360/23360" in text and "verdict   window-limited:" in text
    assert "MSS option" in text and "not negotiated" in text
    assert len(text.splitlines()) < 30
    text = format_table(sndbuf[1])
    assert "bound     " in text and "send-buffer-limited" in text


def test_plots(tmp_path, fast):
    _, a = fast
    files = plot_capture(a, tmp_path, "openmv-n6 / mp-n6-before / wifi")
    assert sorted(f.name for f in files) == RUN_PLOT_FILES
    for f in files:
        head = f.read_bytes()[:200]
        assert head.startswith(b"\x89PNG") if f.suffix == ".png" else b"<svg" in head or b"<?xml" in head
        assert f.stat().st_size > 5000
    assert "openmv-n6 / mp-n6-before / wifi" in (tmp_path / "timeseq.svg").read_text()


@pytest.mark.parametrize("setting", ["on", None, "off"])
def test_a_run_draws_its_plots_unless_they_are_off(tmp_path, fast, monkeypatch, setting):
    if setting is None:
        monkeypatch.delenv(PLOTS_ENV, raising=False)
    else:
        monkeypatch.setenv(PLOTS_ENV, setting)
    result = RunResult(platform="openmv-n6", profile="mp-n6-before", lwip_version="2.1.3", link=LinkSpec(),
                       workload={"name": "rx"}, run_dir=str(tmp_path), capture="c", console_log="l", device="d")
    plot_run(result, fast[1])
    drawn = sorted(Path(p).name for p in result.plots)
    assert drawn == ([] if setting == "off" else RUN_PLOT_FILES)
    assert (tmp_path / "plots").is_dir() == (setting != "off")


def test_a_bad_plots_setting_is_one_line_before_anything_runs():
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "platforms"], capture_output=True, text=True,
                          env={**os.environ, PLOTS_ENV: "sometimes"}, check=False, timeout=60)
    assert proc.returncode == ExitCode.COULD_NOT and proc.stdout == ""
    assert proc.stderr == "netrepro: error: NETREPRO_PLOTS='sometimes' is neither on nor off; " \
                          "set NETREPRO_PLOTS to on or off, or unset it\n"


def test_marks_sharing_a_pixel_column_are_grouped_and_few_are_left_alone():
    from harness.analysis.plots import MAX_MARKS, _by_column

    few = [(i * 0.001, i) for i in range(MAX_MARKS)]
    assert _by_column(few, lambda p: p[0]) == [[p] for p in few]
    many = [(i * 0.0001, i % 7) for i in range(20 * MAX_MARKS)]
    groups = _by_column(many, lambda p: p[0])
    assert MAX_MARKS <= len(groups) <= MAX_MARKS + 1
    assert [p for g in groups for p in g] == many  # every mark in one group, in order
    width = (many[-1][0] - many[0][0]) / MAX_MARKS
    assert all(g[-1][0] - g[0][0] < width for g in groups)
