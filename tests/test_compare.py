"""netrepro compare: the options diff, the recommendation arithmetic, the table, and one real comparison."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from harness.analysis import AnalysisSummary
from harness.cli.exit_codes import ExitCode
from harness.cli.main import build_parser
from harness.link.spec import LinkSpec
from harness.rig.platform import PROJECT_ROOT
from harness.runs.analyse import data_rate_bps
from harness.runs.plan import Configuration
from harness.studies.compare import differing_options, format_comparison, recommend, summarise

N6_OPTIONS = {"TCP_MSS": 1460, "TCP_WND": 23360, "TCP_SND_BUF": 23360, "TCP_SND_QUEUELEN": 64, "MEM_SIZE": 65536,
              "PBUF_POOL_SIZE": 32, "PBUF_POOL_BUFSIZE": 1516, "MEMP_NUM_TCP_SEG": 64, "LWIP_WND_SCALE": 0,
              "TCP_QUEUE_OOSEQ": 1, "LWIP_TCP_SACK_OUT": 0, "ETH_PAD_SIZE": 2}


def _link(rate_to_device=43e6, rate_to_peer=43e6) -> LinkSpec:
    spec = LinkSpec.from_preset({"rtt": "5.5ms"}).paced_to_device(100_000_000, 1)
    return spec.override(rate_to_device=f"{rate_to_device:.0f}bit", rate_to_peer=f"{rate_to_peer:.0f}bit")


def fake_run(mbps, verdict="window-limited", rtt_ms=6.1, options=None, workload="sock-rx", link=None,
             direction="peer->device", window=(21900.0, 23360), lwip_ram=None, time=None, disturbed=None):
    """What summarise reads of a RunResult."""
    analysis = {"verdict": verdict, "verdict_reason": "...", "rtt_ms": rtt_ms, "device_mss": 1460,
                "device_window": {"median": window[0], "max": window[1]}, "window_scale": {"device": None},
                "bound_mbps": round(window[0] * 8 / rtt_ms / 1e3, 3), "data_direction": direction,
                "retransmissions": 0, "rto_retransmissions": 0}
    return SimpleNamespace(throughput_mbps=mbps, analysis=AnalysisSummary.from_dict(analysis),
                           options=dict(options or N6_OPTIONS), device_cpu={"busy_percent": 12.5},
                           link=link or _link(), workload={"name": workload}, lwip_ram=dict(lwip_ram or {}),
                           leaks=None, time=dict(time or {}), run_dir=f"/runs/{mbps}", threads=None,
                           disturbed=disturbed)


# ------------------------------------------------------------------ options diff


def test_differing_options_only_those_that_differ_in_the_firmwares_order():
    a = {"TCP_MSS": 1460, "TCP_WND": 23360, "TCP_SND_BUF": 23360, "MEM_SIZE": 65536}
    b = {"TCP_MSS": 1460, "TCP_WND": 46720, "TCP_SND_BUF": 23360, "MEM_SIZE": 8000, "NEW_OPT": 1}
    assert differing_options(a, b) == [{"name": "TCP_WND", "a": 23360, "b": 46720},
                                       {"name": "MEM_SIZE", "a": 65536, "b": 8000},
                                       {"name": "NEW_OPT", "a": None, "b": 1}]
    assert differing_options(a, dict(a)) == []


# ------------------------------------------------------------------ recommendations


def test_window_limited_sizes_tcp_wnd_from_rate_and_rtt():
    rec = recommend("window-limited", rate_bps=43e6, rtt_ms=5.5, options=N6_OPTIONS)
    # 43 Mbit/s x 5.5 ms = 29562.5 B -> 29563 B = 29.6 KB; / 1460 = 20.2 -> 21 segments
    assert (rec.option, rec.needed_bytes, rec.segments, rec.current) == ("TCP_WND", 29563, 21, 23360)
    assert rec.text.startswith("window-limited: TCP_WND >= rate x RTT = 43 Mbit/s x 5.50 ms = 29.6 KB = 21*MSS "
                               "would reach the link rate")
    assert "now 23360 B = 16*MSS; try --set TCP_WND=21*TCP_MSS)" in rec.text
    measured = recommend("window-limited", rate_bps=43e6, rtt_ms=6.104, options=N6_OPTIONS)
    assert measured.needed_bytes == math.ceil(43e6 * 6.104e-3 / 8) == 32809 and measured.segments == 23


def test_window_limited_names_what_else_lwip_needs_for_a_large_window():
    rec = recommend("window-limited", rate_bps=100e6, rtt_ms=10.0, options=N6_OPTIONS)
    assert rec.needed_bytes == 125000 and rec.segments == 86
    assert "LWIP_WND_SCALE=1" in rec.text
    # 86 * 1460 = 125560 B over pbufs of 1516 - 56 = 1460 B payload -> 86 pool pbufs
    assert "PBUF_POOL_SIZE >= 86" in rec.text


def test_window_limited_when_tcp_wnd_already_covers_it_blames_the_unread_data():
    options = {**N6_OPTIONS, "TCP_WND": 46720}
    rec = recommend("window-limited", rate_bps=43e6, rtt_ms=6.1, options=options, device_window=30000.0)
    assert "TCP_WND is already 46720 B = 32*MSS" in rec.text and "median 30000 B" in rec.text
    assert "--set" not in rec.text


def test_send_buffer_limited_sizes_tcp_snd_buf_and_the_queue_lwip_checks():
    options = {"TCP_MSS": 1460, "TCP_SND_BUF": 8760, "TCP_SND_QUEUELEN": 12, "MEMP_NUM_TCP_SEG": 12}
    rec = recommend("send-buffer-limited", rate_bps=40e6, rtt_ms=3.3, options=options, device_receives=False)
    # 40 Mbit/s x 3.3 ms = 16500 B = 11.3 -> 12 segments = 17520 B; lwIP wants queuelen >= 2 * 12
    assert (rec.option, rec.needed_bytes, rec.segments) == ("TCP_SND_BUF", 16500, 12)
    assert "TCP_SND_BUF >= rate x RTT = 40 Mbit/s x 3.30 ms = 16.5 KB = 12*MSS" in rec.text
    assert "try --set TCP_SND_BUF=12*TCP_MSS, TCP_SND_QUEUELEN >= 24, MEMP_NUM_TCP_SEG >= 24)" in rec.text


def test_send_buffer_limited_with_lwips_default_queue_length_needs_more_segments():
    # mp-n6-before leaves TCP_SND_QUEUELEN at lwIP's default, 4 * TCP_SND_BUF / TCP_MSS = 64 = MEMP_NUM_TCP_SEG:
    # 23*MSS of send buffer makes it (4 * 33580 + 1459) / 1460 = 92, which lwIP's sanity check refuses
    rec = recommend("send-buffer-limited", rate_bps=43e6, rtt_ms=6.1, options=N6_OPTIONS, device_receives=False)
    assert rec.segments == 23
    assert rec.text.endswith("try --set TCP_SND_BUF=23*TCP_MSS, MEMP_NUM_TCP_SEG >= 92 (the default "
                             "TCP_SND_QUEUELEN grows with TCP_SND_BUF))")


def test_recommendations_without_a_rate_and_for_the_peers_side():
    no_rate = recommend("window-limited", rate_bps=None, rtt_ms=6.0, options=N6_OPTIONS, bound_mbps=31.1)
    assert no_rate.needed_bytes is None and "no rate" in no_rate.text and "31.1 Mbit/s" in no_rate.text
    peer = recommend("window-limited", rate_bps=43e6, rtt_ms=6.0, options=N6_OPTIONS, device_receives=False)
    assert peer.option is None and "peer's receive window" in peer.text
    peer_buf = recommend("send-buffer-limited", rate_bps=43e6, rtt_ms=6.0, options=N6_OPTIONS, device_receives=True)
    assert "peer's send buffer" in peer_buf.text


def test_the_other_verdicts():
    link = recommend("link-limited", rate_bps=43e6, rtt_ms=6.0, options=N6_OPTIONS)
    assert link.text == "link-limited: the link is the limit: options will not help"
    loss = recommend("loss-limited", rate_bps=43e6, rtt_ms=6.0, options=N6_OPTIONS, device_receives=True,
                     retransmissions=40, rto_retransmissions=3)
    assert "40 retransmissions (3 after timeouts)" in loss.text and "LWIP_TCP_SACK_OUT=1" in loss.text
    assert "TCP_QUEUE_OOSEQ" not in loss.text   # already on
    receiver = recommend("receiver-limited", rate_bps=43e6, rtt_ms=6.0, options=N6_OPTIONS, device_receives=True)
    assert "device's application reads too slowly" in receiver.text
    for verdict in ("unknown", None):
        assert recommend(verdict, rate_bps=43e6, rtt_ms=6.0, options=N6_OPTIONS) is None


# ------------------------------------------------------------------ summaries and the table


def test_the_data_rate_follows_the_captures_data_direction():
    link = _link(rate_to_device=43e6, rate_to_peer=20e6)
    assert data_rate_bps(fake_run(10, direction="device->peer", workload="sock-tx", link=link)) == 20e6
    assert data_rate_bps(fake_run(10, direction="peer->device", link=link)) == 43e6
    assert data_rate_bps(fake_run(10, direction="peer->device", link=_link(rate_to_device=200e6))) == 100e6


def _document(before, after):
    a = summarise("mp-n6-before", "A", before, Configuration("mp-n6-before"), "mp-n6-before", "openmv-n6", "wifi",
                  "sock-rx", ["runs/A-1", "runs/A-2", "runs/A-3"])
    b = summarise("mp-n6-after", "B", after, Configuration("mp-n6-after"), "mp-n6-after", "openmv-n6", "wifi",
                  "sock-rx", ["runs/B-1", "runs/B-2", "runs/B-3"])
    return {"platform": "openmv-n6", "link": "wifi", "link_effective": _link().as_dict(),
            "repeats": len(before) or len(after), "run_dir": "runs/x",
            "workload": {"name": "sock-rx", "seconds": 4.0}, "configurations": [a, b],
            "differing_options": differing_options(a["options"], b["options"])}


def test_summarise_takes_the_median_run_and_recommends_from_it():
    before = [fake_run(27.2, rtt_ms=6.0), fake_run(26.4, rtt_ms=9.9), fake_run(27.0, rtt_ms=6.1)]
    after = [fake_run(40.8, "link-limited", 8.5, {**N6_OPTIONS, "TCP_WND": 46720}, window=(45260.0, 46720))] * 3
    doc = _document(before, after)
    a, b = doc["configurations"]
    assert (a["median_mbps"], a["min_mbps"], a["max_mbps"], a["rtt_ms"]) == (27.0, 26.4, 27.2, 6.1)
    assert a["recommendation"]["needed_bytes"] == math.ceil(43e6 * 6.1e-3 / 8)
    assert a["data_rate_mbps"] == 43.0 and a["options"]["TCP_WND"] == 23360
    assert b["recommendation"]["text"] == "link-limited: the link is the limit: options will not help"
    assert doc["differing_options"] == [{"name": "TCP_WND", "a": 23360, "b": 46720}]

    table = format_comparison(doc)
    header = next(line for line in table.splitlines() if line.startswith("configuration"))
    assert header.split()[:2] == ["configuration", "TCP_WND"]
    row = next(line for line in table.splitlines() if line.startswith("mp-n6-before "))
    assert row.split()[:3] == ["mp-n6-before", "23360", "27.0"] and row.endswith("window-limited")
    assert "mp-n6-before: window-limited: TCP_WND >= rate x RTT = 43 Mbit/s x 6.10 ms = 32.8 KB = 23*MSS" in table


def test_runs_the_host_disturbed_even_after_their_repeat_are_listed_under_the_table():
    late = {"mode": "device", "link_follows_board": True, "link_late": True, "link_late_ms": 240.0}
    followed = {"mode": "device", "host_lagged": True, "link_follows_board": True, "link_late_ms": 1.2}
    before = [fake_run(27.2, time=late), fake_run(26.4, time=followed), fake_run(27.0)]
    lossy = fake_run(40.1, "link-limited", time=followed, disturbed="the board's NIC lost 3 frames ...")
    doc = _document(before, [fake_run(40.8, "link-limited", time=followed)] * 2 + [lossy])
    a, b = doc["configurations"]
    assert (a["runs_at_risk"], b["runs_at_risk"]) == (1, 1)  # by its time, and by the policy's record
    lines = format_comparison(doc).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("figures at risk"))
    assert lines[at + 1:] == ["  mp-n6-before: 1 of 3 runs", "  mp-n6-after: 1 of 3 runs"]
    clean = _document([fake_run(27.0, time=followed)], [fake_run(40.8, time=followed)])
    assert "figures at risk" not in format_comparison(clean)


def test_many_differing_options_go_above_the_table():
    wide = {**N6_OPTIONS, "TCP_SND_BUF": 33580, "TCP_SND_QUEUELEN": 92, "MEMP_NUM_TCP_SEG": 92, "MEM_SIZE": 131072,
            "PBUF_POOL_SIZE": 64}
    doc = _document([fake_run(30.2, "send-buffer-limited")], [fake_run(40.4, "link-limited", options=wide)])
    assert [d["name"] for d in doc["differing_options"]] == ["TCP_SND_BUF", "TCP_SND_QUEUELEN", "MEM_SIZE",
                                                             "PBUF_POOL_SIZE", "MEMP_NUM_TCP_SEG"]
    lines = format_comparison(doc, width=80).splitlines()
    first = lines.index("options that differ (effective values; A = mp-n6-before, B = mp-n6-after):")
    assert lines[first + 2].split() == ["TCP_SND_BUF", "23360", "33580"]
    header = next(line for line in lines if line.startswith("configuration"))
    assert header.split()[:2] == ["configuration", "median"] and lines.index(header) > first
    assert "(1 run each," in lines[1]


def test_each_configurations_lwip_ram_is_a_column_and_a_line():
    ram = {"total": 118600, "heap": 65563, "pools": {"PBUF_POOL": 49051, "TCP_SEG": 1051}, "other": 2935}
    doc = _document([fake_run(27.2, lwip_ram=ram)], [fake_run(40.8, "link-limited")])
    a, b = doc["configurations"]
    assert (a["lwip_ram"], a["lwip_ram_total"]) == (ram, 118600) and (b["lwip_ram"], b["lwip_ram_total"]) == ({}, None)
    lines = format_comparison(doc).splitlines()
    header = next(line for line in lines if line.startswith("configuration"))
    columns = [header.index("lwIP KiB"), header.index("lwIP KiB") + len("lwIP KiB")]
    row = {line.split()[0]: line[columns[0]:columns[1]].strip() for line in lines if line.startswith("mp-n6-")}
    assert row == {"mp-n6-before": "115.8", "mp-n6-after": "-"}
    assert ("  mp-n6-before: lwIP RAM 115.8 KiB: heap 65563, pools 50102 (PBUF_POOL 49051, TCP_SEG 1051), "
            "other 2935") in lines


def test_a_configuration_without_a_successful_run_shows_as_failed():
    doc = _document([], [fake_run(40.8, "link-limited")])
    doc["configurations"][0]["error"] = "boot failed"
    table = format_comparison(doc)
    assert "failed" in table and "mp-n6-before: boot failed" in table


def test_set_and_include_belong_to_the_lwip_before_them():
    args = build_parser().parse_args(["compare", "openmv-n6", "--set", "TCP_MSS=1200", "--source", "hooks.c",
                                      "--lwip", "mp-n6-before", "-I", "/tmp", "--stub-header", "py/mpconfig.h",
                                      "--lwip", "mp-n6-before", "--set", "TCP_WND=24*TCP_MSS"])
    none = {"include": [], "set": [], "source": [], "stub_header": []}
    assert args.shared == {**none, "set": ["TCP_MSS=1200"], "source": ["hooks.c"]}
    assert args.configurations == [
        {"lwip": "mp-n6-before", **none, "include": ["/tmp"], "stub_header": ["py/mpconfig.h"]},
        {"lwip": "mp-n6-before", **none, "set": ["TCP_WND=24*TCP_MSS"]}]


def test_compare_needs_two_configurations():
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "compare", "openmv-n6", "--lwip", "mp-n6-before"],
                          capture_output=True, text=True, timeout=60, cwd=PROJECT_ROOT,
                          env={**os.environ, "CI": "true"})
    assert proc.returncode == ExitCode.COULD_NOT and proc.stderr.count("\n") == 1
    assert "two configurations" in proc.stderr


# ------------------------------------------------------------------ the real chain


@pytest.mark.real
def test_compare_n6_before_and_after_over_wifi(tmp_path, no_leftovers):
    """Over the WiFi as a wire (wifi-wire): its 43 Mbit/s is the rate the recommendation multiplies by the RTT."""
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "compare", "openmv-n6", "--lwip", "mp-n6-before",
                           "--lwip", "mp-n6-after", "--link", "wifi-wire", "--workload", "sock-rx", "--seconds", "3",
                           "--repeats", "2", "--out", str(tmp_path), "--json"],
                          capture_output=True, text=True, timeout=600, cwd=PROJECT_ROOT,
                          env={**os.environ, "CI": "true"})
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["differing_options"] == [{"name": "TCP_WND", "a": 23360, "b": 46720}]
    before, after = doc["configurations"]
    assert before["verdict"] == "window-limited", before["verdict_reason"]
    assert after["median_mbps"] > before["median_mbps"]
    rec = before["recommendation"]
    assert rec["option"] == "TCP_WND" and rec["rate_mbps"] == 43.0 and rec["rtt_ms"] == before["rtt_ms"]
    assert rec["needed_bytes"] == math.ceil(43e6 * before["rtt_ms"] / 1e3 / 8)
    assert rec["segments"] == math.ceil(rec["needed_bytes"] / 1460) > 16
    assert doc["recommendations"][0]["configuration"] == "mp-n6-before"

    table = (Path(doc["run_dir"]) / "compare.txt").read_text()
    header = next(line for line in table.splitlines() if line.startswith("configuration"))
    assert header.split()[1] == "TCP_WND", table
    assert f"TCP_WND >= rate x RTT = 43 Mbit/s x {before['rtt_ms']:.2f} ms" in table, table
