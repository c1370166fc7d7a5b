"""A user's capture beside netrepro's: compare_summaries, inspect --against, the overlay plots and the page's section.

The unit tests build AnalysisSummary objects by hand (the answers are their fields) or analyse small synthetic
captures (tests/captures_gen.py: the device's window is the scenario's receive buffer); the real chain runs two
emulated boards that differ only in TCP_WND and compares their captures through the command line.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from captures_gen import DEVICE_IP, PEER_IP, Scenario, udp_frame, write_pcap, write_scenario
from conftest import assert_one_line_error, netrepro_cli

from harness.analysis import load_capture
from harness.analysis.against import (
    CaptureComparison,
    ComparisonRow,
    against_document,
    compare_summaries,
    format_comparison,
    load_against,
)
from harness.analysis.plots import OVERLAY_COLOURS, plot_overlay
from harness.analysis.sides import PerSide
from harness.analysis.summary import AnalysisSummary, WindowSummary
from harness.core.errors import NetreproError
from harness.studies.report_page import render_report_page, write_report_page

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

THEIRS = AnalysisSummary(
    capture="board.pcapng", conn=3, device="192.168.1.50:5001", device_identified_by="given (device_ip=192.168.1.50)",
    data_direction="peer->device", capture_near="device", syn_seen=True, device_mss=1460,
    window_scaling="not negotiated", device_window=WindowSummary(min=7300, median=21900.0, max=23360, count=900),
    initial_rtt_ms=5.0, rtt_ms=6.0, goodput_mbps=20.0, retransmissions=4, payload_bytes=1_000_000,
    retransmitted_bytes=5840, verdict="window-limited", verdict_reason="in flight sat at the window")
OURS = AnalysisSummary(
    capture="runs/x/capture.pcap", conn=0, device="10.77.0.2:5001", device_identified_by="given (device_ip=10.77.0.2)",
    data_direction="peer->device", capture_near="device", syn_seen=True, device_mss=1460,
    window_scaling="negotiated", window_scale=PerSide(2, 7),
    device_window=WindowSummary(min=40000, median=45260.0, max=46720, count=1800),
    initial_rtt_ms=5.5, rtt_ms=8.0, goodput_mbps=30.0, retransmissions=0, payload_bytes=2_000_000,
    retransmitted_bytes=0, verdict="link-limited", verdict_reason="goodput at the link's rate")

BEFORE = Scenario(duration=0.4, rcv_buf=23360, rtt=0.006, rate_bps=100e6)   # TCP_WND 16*MSS
AFTER = Scenario(duration=0.4, rcv_buf=46720, rtt=0.006, rate_bps=100e6)    # TCP_WND 32*MSS


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("against-captures")
    return write_scenario(folder / "before.pcap", BEFORE), write_scenario(folder / "after.pcap", AFTER)


def _run_folder(root: Path, capture: Path, **analysis_changes: object) -> Path:
    """A run folder as `netrepro run` leaves it: capture.pcap and result.json (device, capture, analysis)."""
    run_dir = root / "run"
    run_dir.mkdir(parents=True)
    shutil.copy(capture, run_dir / "capture.pcap")
    summary = load_capture(run_dir / "capture.pcap", device_ip=DEVICE_IP, captured_at="device").summary()
    result = {"status": "passed", "device": DEVICE_IP, "capture": str(run_dir / "capture.pcap"),
              "analysis": {**summary, **analysis_changes}}
    (run_dir / "result.json").write_text(json.dumps(result))
    return run_dir


# ------------------------------------------------------------------ compare_summaries


def test_every_row_and_its_difference():
    c = compare_summaries(THEIRS, OURS)
    assert [r.key for r in c.rows] == ["mss", "window", "window_scaling", "idle_rtt", "loaded_rtt", "throughput",
                                       "retransmissions", "loss", "verdict"]
    assert c.row("mss") == ComparisonRow("mss", "MSS (device)", "B", "exact", 1460, 1460, "same")
    assert c.row("window") == ComparisonRow("window", "largest device window", "B", "exact", 23360, 46720, "differs")
    assert c.row("window_scaling") == ComparisonRow("window_scaling", "window scaling", "", "exact", "not negotiated",
                                                    "negotiated, device shift 2", "differs")
    assert c.row("idle_rtt") == ComparisonRow("idle_rtt", "idle RTT (handshake)", "ms", "number", 5.0, 5.5, 0.5, 10.0)
    assert c.row("loaded_rtt") == ComparisonRow("loaded_rtt", "loaded RTT", "ms", "number", 6.0, 8.0, 2.0, 33.3)
    assert c.row("throughput") == ComparisonRow("throughput", "throughput", "Mbit/s", "number", 20.0, 30.0, 10.0, 50.0)
    assert c.row("retransmissions") == ComparisonRow("retransmissions", "retransmissions", "", "number", 4, 0, -4,
                                                     -100.0)
    # loss: bytes resent per byte of payload, in %: 5840 / 1000000
    assert c.row("loss") == ComparisonRow("loss", "loss (bytes resent)", "%", "number", 0.584, 0.0, -0.584, -100.0)
    assert c.row("verdict") == ComparisonRow("verdict", "verdict", "", "exact", "window-limited", "link-limited",
                                             "differs")
    assert (c.theirs.label, c.theirs.capture, c.theirs.conn) == ("your capture", "board.pcapng", 3)
    assert (c.ours.label, c.ours.verdict_reason) == ("netrepro", "goodput at the link's rate")
    assert c.notes == ()


def test_what_a_side_does_not_show_is_unknown_not_a_difference():
    no_syn = replace(THEIRS, syn_seen=False, device_mss=None, window_scaling="unknown (SYN not captured)",
                     initial_rtt_ms=None, verdict="unknown", retransmissions=0, payload_bytes=0, retransmitted_bytes=0)
    c = compare_summaries(no_syn, replace(OURS, retransmissions=3))
    for key in ("mss", "window_scaling", "verdict"):
        assert c.row(key).difference == "unknown" and c.row(key).difference_pct is None, key
    assert c.row("idle_rtt").difference is None and c.row("idle_rtt").cells() == ("-", "5.5 ms", "-")
    assert c.row("loss").theirs is None and c.row("loss").difference is None   # no payload: no share to take
    # nothing from nothing is no change; something from nothing has no relative size
    assert c.row("retransmissions").difference == 3 and c.row("retransmissions").difference_pct is None
    assert c.row("retransmissions").difference_text() == "+3"
    assert compare_summaries(no_syn, no_syn).row("retransmissions").difference_pct == 0.0
    # the peer's shift is the peer's stack: the device's own shift decides "same"
    other_peer = compare_summaries(replace(OURS, window_scale=PerSide(2, 8)), OURS)
    assert other_peer.row("window_scaling").difference == "same"
    assert compare_summaries(replace(OURS, window_scale=PerSide(3, 7)), OURS).row("window_scaling").difference \
        == "differs"


def test_notes_say_when_rows_are_not_comparable():
    other_way = replace(THEIRS, data_direction="device->peer", capture_near="peer",
                        device_window=replace(THEIRS.device_window, unknown_scale=True))
    notes = compare_summaries(other_way, OURS).notes
    assert any("device->peer" in n and "peer->device" in n for n in notes), notes
    assert any("next to the peer" in n and "RTTs" in n for n in notes), notes
    assert any(n.startswith("your capture: the SYN was not captured") for n in notes), notes
    empty = compare_summaries(THEIRS, AnalysisSummary(empty_reason="no TCP connection in the capture"))
    assert "netrepro: nothing to analyse: no TCP connection in the capture" in empty.notes


def test_the_text_table_has_both_columns_and_the_difference():
    text = format_comparison(compare_summaries(THEIRS, OURS, theirs_label="board", ours_label="emulated"))
    lines = text.splitlines()
    assert lines[0].startswith("board     board.pcapng: conn 3, device 192.168.1.50:5001 (given)")
    assert lines[1].startswith("emulated  runs/x/capture.pcap: conn 0")
    head = next(line for line in lines if "difference" in line)
    assert head.split() == ["board", "emulated", "difference", "(emulated", "-", "board)"]

    def row(name: str) -> list[str]:
        line = next(line for line in lines if line.strip().startswith(name))
        return re.split(r"\s{2,}", line.strip())

    assert row("MSS (device)") == ["MSS (device)", "1460 B", "1460 B", "same"]
    assert row("largest device window") == ["largest device window", "23360 B", "46720 B", "differs"]
    assert row("throughput") == ["throughput", "20 Mbit/s", "30 Mbit/s", "+10 Mbit/s (+50.0 %)"]
    assert row("loaded RTT") == ["loaded RTT", "6 ms", "8 ms", "+2 ms (+33.3 %)"]
    assert row("retransmissions") == ["retransmissions", "4", "0", "-4 (-100.0 %)"]
    assert row("loss") == ["loss (bytes resent)", "0.584 %", "0 %", "-0.584 pp (-100.0 %)"]
    assert row("verdict ") == ["verdict", "window-limited", "link-limited", "differs"]
    assert "verdict   board: in flight sat at the window" in lines


def test_the_json_reads_back_as_the_same_comparison():
    c = compare_summaries(THEIRS, OURS)
    data = json.loads(json.dumps(c.as_dict()))
    assert set(data) == {"theirs", "ours", "rows", "notes"}
    assert data["rows"][1] == {"key": "window", "name": "largest device window", "unit": "B", "kind": "exact",
                               "theirs": 23360, "ours": 46720, "difference": "differs", "difference_pct": None}
    assert CaptureComparison.from_dict(data) == c
    assert format_comparison(CaptureComparison.from_dict(data)) == format_comparison(c)


# ------------------------------------------------------------------ the other side


def test_a_run_folder_is_read_through_its_recorded_analysis(tmp_path, captures):
    # the recorded verdict differs from what the capture alone shows: the record is what the run found
    run_dir = _run_folder(tmp_path, captures[1], verdict="cpu-limited")
    side = load_against(run_dir)
    assert side.run_dir == run_dir and side.device == DEVICE_IP and side.capture == run_dir / "capture.pcap"
    assert side.summary.verdict == "cpu-limited" and side.summary.device_window.max == 46720
    assert side.analysis().device_window.max == 46720   # the frames, for the plots: read again
    # the run's capture named on its own is the run's too
    assert load_against(run_dir / "capture.pcap").summary.verdict == "cpu-limited"
    # a moved run folder: result.json names the old place, the capture is still beside it
    moved = tmp_path / "moved"
    run_dir.rename(moved)
    assert load_against(moved).capture == moved / "capture.pcap"
    assert load_against(moved).captured_at == "device"   # a result without captured_at: at the device


def test_a_run_captured_at_the_peer_is_read_again_as_taken_there(tmp_path, captures):
    run_dir = _run_folder(tmp_path, captures[1])
    result = json.loads((run_dir / "result.json").read_text())
    (run_dir / "result.json").write_text(json.dumps({**result, "captured_at": "peer"}))
    side = load_against(run_dir)
    assert side.captured_at == "peer" and side.analysis().capture_near == "peer"


def test_a_bare_capture_is_analysed_with_its_device_guessed(captures):
    side = load_against(captures[0])
    assert side.run_dir is None and side.device is None
    assert side.summary.device_window.max == 23360 and side.summary.device.startswith(DEVICE_IP)


def test_what_is_not_a_run_or_a_capture_is_one_line(tmp_path, captures):
    with pytest.raises(NetreproError, match=r"has no result\.json, so it is not a run folder"):
        load_against(tmp_path)
    no_capture = tmp_path / "no-capture"
    no_capture.mkdir()
    (no_capture / "result.json").write_text(json.dumps({"capture": str(no_capture / "capture.pcap")}))
    with pytest.raises(NetreproError, match="has no capture"):
        load_against(no_capture)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "result.json").write_text("{not json")
    with pytest.raises(NetreproError, match="is not readable JSON"):
        load_against(broken)
    with pytest.raises(NetreproError, match="not found"):
        load_against(tmp_path / "gone")


def _written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(("make", "words"), [
    (lambda d: d, ["has no result.json", "run folder"]),
    (lambda d: _written(d / "result.json", "{}").parent, ["has no capture", "capture.pcap"]),
    (lambda d: d / "gone.pcap", ["gone.pcap not found"]),
    (lambda d: _written(d / "empty.pcap", ""), ["empty.pcap is empty"]),
])
def test_inspect_against_bad_input_is_one_line(tmp_path, captures, make, words):
    other = tmp_path / "other"
    other.mkdir()
    proc = netrepro_cli("inspect", str(captures[0]), "--against", str(make(other)))
    assert_one_line_error(proc, *words)
    assert proc.stdout == ""


# ------------------------------------------------------------------ inspect --against, in process


def test_inspect_against_prints_the_comparison_in_place_of_the_table(tmp_path, captures, capsys):
    cli = importlib.import_module("harness.cli.main")  # harness.cli's `main` is the function, not the module
    run_dir = _run_folder(tmp_path, captures[1])
    assert cli.main(["inspect", str(captures[0]), "--device", DEVICE_IP, "--against", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"largest device window\s+23360 B\s+46720 B\s+differs", out), out
    assert re.search(r"MSS \(device\)\s+1460 B\s+1460 B\s+same", out), out
    assert "window min/med/max" not in out   # the one-capture table gave way
    assert cli.main(["inspect", str(captures[0]), "--device", DEVICE_IP]) == 0
    plain = capsys.readouterr().out
    assert "window min/med/max" in plain and "difference" not in plain   # without --against: as ever


# ------------------------------------------------------------------ plots


def test_the_overlay_plots_draw_both_captures_in_their_colours(tmp_path, captures):
    theirs, ours = (load_capture(c, device_ip=DEVICE_IP) for c in captures)
    files = plot_overlay(theirs, ours, tmp_path / "plots", "before vs after")
    assert [f.name for f in files] == ["against-timeseq.png", "against-timeseq.svg", "against-window.png",
                                       "against-window.svg"]
    assert all(f.stat().st_size > 5000 for f in files)
    for svg in (f for f in files if f.suffix == ".svg"):
        text = svg.read_text()
        assert all(colour in text for colour in OVERLAY_COLOURS), svg.name
        assert text.count("<g id=\"legend_") == 1, svg.name


def test_a_capture_without_data_is_left_out_of_the_overlay(tmp_path, captures):
    udp = write_pcap(tmp_path / "udp.pcap", [(1.0, udp_frame(PEER_IP, DEVICE_IP, 4000, 5001, b"x" * 100))])
    empty, ours = load_capture(udp), load_capture(captures[1], device_ip=DEVICE_IP)
    files = plot_overlay(empty, ours, tmp_path / "one", "udp vs after")
    assert len(files) == 4
    svg = files[1].read_text()
    assert OVERLAY_COLOURS[1] in svg and OVERLAY_COLOURS[0] not in svg
    assert plot_overlay(empty, empty, tmp_path / "none", "nothing") == []
    assert not (tmp_path / "none").exists()


# ------------------------------------------------------------------ the page


@pytest.fixture(scope="module")
def against(captures, tmp_path_factory) -> dict:
    """A reproduce case's against entry: the user's capture (before) beside the case's run (after)."""
    return against_document(captures[0], DEVICE_IP, None, captures[1], DEVICE_IP,
                            tmp_path_factory.mktemp("against-plots"), title="wifi rx after")


def test_against_document_is_the_entry_the_page_reads(against, captures):
    assert set(against) == {"capture", "comparison", "plots"} and against["capture"] == str(captures[0])
    comparison = CaptureComparison.from_dict(json.loads(json.dumps(against["comparison"])))
    assert (comparison.row("window").theirs, comparison.row("window").ours) == (23360, 46720)
    assert comparison.row("mss").difference == "same"
    assert sorted(Path(p).name for p in against["plots"]) == ["against-timeseq.png", "against-timeseq.svg",
                                                              "against-window.png", "against-window.svg"]


def _page_document(against: dict) -> dict:
    return {"report": "openmv-n6", "title": "n6", "cases": [
        {"case": "wifi rx before", "runs_mbps": [27.0], "median_mbps": 27.0, "run_dirs": []},
        {"case": "wifi rx after", "runs_mbps": [40.0], "median_mbps": 40.0, "run_dirs": [], "against": against}]}


def test_the_page_shows_the_comparison_and_embeds_the_overlays(against):
    html = render_report_page(_page_document(against))
    assert html.count("<h2>Your captures beside netrepro's</h2>") == 1
    section = html.split("<h2>Your captures beside netrepro's</h2>")[1]
    assert '<h3 id="against-1">wifi rx after</h3>' in section and "wifi rx before" not in section
    assert '<a href="#against-1">beside your capture</a>' in html   # from the case's own plots
    rows = re.findall(r'<tr class="against-row">(.*?)</tr>', section, re.S)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows]
    assert cells[0] == ["MSS (device)", "1460 B", "1460 B", "same"]
    assert cells[1] == ["largest device window", "23360 B", "46720 B", "differs"]
    assert '<td class="num differs">differs</td>' in rows[1]
    assert "<th>your capture</th><th>netrepro</th>" in section
    assert section.count("<svg") == 2 and "time / sequence, both captures" in section
    assert all(c in section for c in OVERLAY_COLOURS)
    ids = re.findall(r'\bid="([^"]+)"', html)
    assert len(ids) == len(set(ids)), "the overlays' ids are their own"


def test_cases_without_against_render_as_before_and_a_bad_entry_does_not_crash(against):
    plain = _page_document(against)
    del plain["cases"][1]["against"]
    html = render_report_page(plain)
    assert "Your captures beside" not in html and "beside your capture" not in html and 'class="against"' not in html
    broken = _page_document("not a dict")
    html = render_report_page(broken)
    assert "comparison: not listed" in html and "no plot" in html
    half = _page_document({"capture": "x.pcap", "comparison": {"rows": [{"key": "mss"}]}, "plots": [3]})
    assert "comparison: not listed" in render_report_page(half)


def test_chromium_renders_the_against_section(against, tmp_path):
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail("chromium is not installed: run ./tools/bootstrap --all (it installs Debian's chromium)")
    page = write_report_page(_page_document(against), tmp_path / "page.html")
    dom = subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'p'}",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=180, check=False)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert len(re.findall(r'<tr class="against-row">', dom.stdout)) == 9
    assert dom.stdout.count("<svg") == 2 and "46720 B" in dom.stdout


# ------------------------------------------------------------------ the real chain


def _run(out: Path, profile: str) -> Path:
    proc = netrepro_cli("run", "openmv-n6", "--lwip", profile, "--link", "wifi-wire", "--workload", "rx",
                        "--seconds", "3", "--out", str(out), "--json", timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return Path(json.loads(proc.stdout)["run_dir"])


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("against-runs")
    return _run(out, "mp-n6-before"), _run(out, "mp-n6-after")


@pytest.mark.real
def test_inspect_a_run_against_another(two_runs, tmp_path, no_leftovers):
    before, after = two_runs
    proc = netrepro_cli("inspect", str(before / "capture.pcap"), "--against", str(after))
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"largest device window\s+23360 B\s+46720 B\s+differs", proc.stdout), proc.stdout
    assert re.search(r"MSS \(device\)\s+1460 B\s+1460 B\s+same", proc.stdout), proc.stdout
    assert re.search(r"window scaling\s+not negotiated\s+not negotiated\s+same", proc.stdout), proc.stdout
    recorded = json.loads((after / "result.json").read_text())["analysis"]
    proc = netrepro_cli("inspect", str(before / "capture.pcap"), "--against", str(after), "--json")
    assert proc.returncode == 0, proc.stderr
    comparison = CaptureComparison.from_dict(json.loads(proc.stdout))
    window = comparison.row("window")
    assert (window.theirs, window.ours, window.difference) == (23360, 46720, "differs")
    assert comparison.row("throughput").ours == recorded["goodput_mbps"]   # the run's own record
    assert comparison.row("throughput").difference > 0                    # twice the window, more throughput
    plots = tmp_path / "plots"
    proc = netrepro_cli("inspect", str(before / "capture.pcap"), "--against", str(after / "capture.pcap"),
                        "--plot", str(plots))
    assert proc.returncode == 0, proc.stderr
    for name in ("against-timeseq", "against-window", "timeseq", "window"):
        for ext in ("png", "svg"):
            assert (plots / f"{name}.{ext}").stat().st_size > 5000, name
            assert f"plot: {plots / f'{name}.{ext}'}" in proc.stderr
    assert all(c in (plots / "against-window.svg").read_text() for c in OVERLAY_COLOURS)
