"""The emulated link: its units and settings, its command line, its capture and stats, and its process.

The link between two test sockets is tests/linkbench.py; the link's stages have a test file each
(test_link_timing, test_link_loss, test_link_device, ...).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import time
from pathlib import Path

import pytest
from linkbench import DEV_MAC, MS, PEER_MAC, Bench, frame_number, one_way, raw_frame

from harness.core.errors import NetreproError
from harness.core.native import build_tool
from harness.link import (
    Direction,
    Link,
    LinkSpec,
    link_binary,
    parse_drop_list,
    parse_gemodel,
    parse_percent,
    parse_rate,
    parse_size,
    parse_time,
    read_pcap,
    read_pcap_ns,
)

# ------------------------------------------------------------------ units and specs


def test_time_units():
    assert parse_time("5.5ms") == pytest.approx(0.0055)
    assert parse_time("300us") == pytest.approx(300e-6)
    assert parse_time("2s") == 2.0
    assert parse_time("0") == 0.0
    assert parse_time(0) == 0.0
    assert parse_time("250") == pytest.approx(250e-6)  # tc: a bare number is microseconds
    assert parse_time("1.5msec") == pytest.approx(0.0015)
    for bad in ("5 parsecs", "fast", "-1ms", "", 5, 2.5, None):
        with pytest.raises(NetreproError) as err:
            parse_time(bad)
        assert "\n" not in str(err.value)


def test_rate_units():
    assert parse_rate("43mbit") == 43_000_000
    assert parse_rate("100Mbit") == 100_000_000
    assert parse_rate("1gbit") == 1_000_000_000
    assert parse_rate("64kbit") == 64_000
    assert parse_rate("500000bit") == 500_000
    assert parse_rate("500000") == 500_000
    assert parse_rate("1mbps") == 8_000_000  # tc: bps is bytes per second
    assert parse_rate("10kbps") == 80_000
    assert parse_rate("1mibit") == 1024 * 1024
    for bad in ("43 furlongs", "mbit", "-5mbit", "1.2.3mbit", True):
        with pytest.raises(NetreproError):
            parse_rate(bad)


def test_size_and_percent_units():
    assert parse_size("64k") == 65536
    assert parse_size("1514") == 1514
    assert parse_size(1514) == 1514
    assert parse_size("1m") == 1024 * 1024
    assert parse_size("8kbit") == 1024
    assert parse_percent("0.1%") == pytest.approx(0.001)
    assert parse_percent("100%") == 1.0
    assert parse_percent("0") == 0.0
    for bad in ("0.1", 0.5, "150%", "x%"):
        with pytest.raises(NetreproError):
            parse_percent(bad)
    with pytest.raises(NetreproError):
        parse_size("64 lightyears")


def test_gemodel_and_drop_list_parsing():
    assert parse_gemodel("1% 30% 100% 0%") == pytest.approx((0.01, 0.3, 1.0, 0.0))
    assert parse_gemodel("2%") == pytest.approx((0.02, 0.98, 1.0, 0.0))  # iproute2: r = 1 - p
    assert parse_gemodel(["5%", "20%"]) == pytest.approx((0.05, 0.2, 1.0, 0.0))
    assert parse_gemodel("off") is None
    with pytest.raises(NetreproError):
        parse_gemodel("1% 2% 3% 4% 5%")
    assert parse_drop_list("data:3, frame:12 syn:1") == ("data:3", "frame:12", "syn:1")
    assert parse_drop_list(["data:3-5"]) == ("data:3-5",)
    for bad in ("data:0", "packet:3", "data:5-3", "data"):
        with pytest.raises(NetreproError):
            parse_drop_list(bad)


def test_preset_rtt_split_and_override():
    spec = LinkSpec.from_preset({"rtt": "5.5ms", "rate": "43mbit"})
    for d in (spec.to_device, spec.to_peer):
        assert d.delay_s == pytest.approx(2.75e-3)
        assert d.rate_bps == 43_000_000
        assert d.limit_packets == 1000
    assert spec.rtt_s == pytest.approx(5.5e-3)

    spec = LinkSpec.from_preset(
        {"rtt": "6ms", "rate": "100mbit", "to_device": {"delay": "4ms", "rate": "43mbit", "drop": "data:3"}}
    )
    assert spec.to_device.delay_s == pytest.approx(4e-3)
    assert spec.to_peer.delay_s == pytest.approx(2e-3)  # the rest of the RTT
    assert spec.to_device.rate_bps == 43_000_000 and spec.to_peer.rate_bps == 100_000_000
    assert spec.to_device.drop == ("data:3",) and spec.to_peer.drop == ()

    changed = spec.override(rtt="10ms", loss="1%", limit=50, seed=7)
    assert changed.to_device.delay_s == pytest.approx(5e-3) and changed.to_peer.delay_s == pytest.approx(5e-3)
    assert changed.to_device.loss == pytest.approx(0.01) and changed.to_peer.limit_packets == 50
    assert changed.seed == 7
    assert changed.to_device.rate_bps == 43_000_000  # untouched
    assert spec.to_device.delay_s == pytest.approx(4e-3)  # the original is unchanged

    asym = spec.override(rtt="10ms", delay_to_peer="1ms", rate_to_peer="1gbit", gemodel="1% 30%")
    assert asym.to_peer.delay_s == pytest.approx(1e-3) and asym.to_device.delay_s == pytest.approx(9e-3)
    assert asym.to_peer.rate_bps == 1_000_000_000 and asym.to_device.gemodel == pytest.approx(
        (0.01, 0.3, 1, 0)
    )

    d = asym.as_dict()
    assert d["rtt_s"] == pytest.approx(0.01)
    assert d["to_device"]["gemodel"] == {"p": 0.01, "r": 0.3, "1-h": 1.0, "1-k": 0.0}
    json.dumps(d)

    with pytest.raises(NetreproError, match="unknown link preset key 'bandwidth'"):
        LinkSpec.from_preset({"bandwidth": "43mbit"})
    with pytest.raises(NetreproError):
        LinkSpec.from_preset({"rtt": "5ms", "to_device": {"delay": "4ms"}, "to_peer": {"delay": "4ms"}})
    with pytest.raises(NetreproError):
        spec.override(rtt="2ms", delay_to_device="3ms")


def test_direction_cli_round_trip():
    d = Direction(
        delay_s=2.75e-3, rate_bps=43_000_000, gemodel=(0.01, 0.3, 1.0, 0.0), drop=("data:3", "syn:1")
    )
    cli = d.cli()
    assert "delay=0.00275" in cli and "rate=43000000" in cli  # the settings' names, in plain units
    assert "gemodel=0.01,0.3,1,0" in cli and "drop=data:3,syn:1" in cli
    assert d.serialisation_s(1514) == pytest.approx(1538 * 8 / 43e6)
    assert d.serialisation_s(42) == pytest.approx(84 * 8 / 43e6)


def test_bad_options_exit_2(tmp_path):
    binary = link_binary()
    base = [str(binary), "--device-sock", str(tmp_path / "a"), "--device-remote", str(tmp_path / "b")]
    peer = ["--peer-sock", str(tmp_path / "c"), "--peer-remote", str(tmp_path / "d")]
    cases = [
        (base + peer + ["--frobnicate", "1"], "--frobnicate"),
        (base + peer + ["--to-peer", "delay=5e-6,colour=blue"], "colour"),
        (base + peer + ["--to-device", "rate=fast"], "rate"),
        (base + peer + ["--to-device", "delay=7200"], "delay"),  # ranges come from the settings' table
        (base + peer + ["--to-device", "drop=data:0"], "data:0"),
        (base + peer + ["--seed"], "--seed"),
        (base + peer + ["--to-device", "overflow=spill"], "overflow"),
        (base + peer + ["--to-peer", "overflow=drop"], "overflow=drop"),
        (base + peer + ["--to-device", "sock_frames=many"], "sock_frames"),
        (base + peer + ["--to-device", "sock_frames=1001"], "sock_frames"),
        (base + peer + ["--snaplen", "300000"], "snaplen"),
        (base, "--tap"),
    ]
    for cmd, needle in cases:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=5)
        assert proc.returncode == 2, cmd
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0], proc.stderr


# ------------------------------------------------------------------ capture, stats, process


def test_capture_device_side_timestamps(root):
    spec = LinkSpec(to_device=one_way(delay_s=0.020), to_peer=one_way(delay_s=0.020), snaplen=128)
    with Bench(spec, root) as b:
        sent = []
        # the device's frames all before the peer's: their order in the capture then holds however slowly this
        # process runs (the device's are stamped on arrival, the peer's on delivery, 20 ms after they were sent)
        for i in range(5):
            sent.append(("to_peer", i, b.from_device(raw_frame(i, 1514))))
            time.sleep(0.002)
        for i in range(5):
            sent.append(("to_device", i, b.from_peer(raw_frame(100 + i, 300, PEER_MAC, DEV_MAC))))
            time.sleep(0.002)
        at_device = b.at_device(5)
        b.at_peer(5)
        counters = b.link.stop()
    records = read_pcap(b.link.pcap_path)
    assert len(records) == 10 == counters.total_frames_out
    stamps = [t for t, _ in read_pcap_ns(b.link.pcap_path)]  # exact: floats keep only ~240 ns here
    assert stamps == sorted(stamps)
    numbers = [frame_number(f) for _, f in records]
    assert numbers == [0, 1, 2, 3, 4, 100, 101, 102, 103, 104]  # device->peer stamped on arrival
    for t, (_, frame), (_, _i, t_sent) in zip(stamps[:5], records[:5], [s for s in sent if s[0] == "to_peer"],
                                              strict=True):
        assert len(frame) == 128  # snap length
        assert 0 <= t - t_sent < 5 * MS  # not the 20 ms delay later
    for t, (_, frame), (t_rx, _) in zip(stamps[5:], records[5:], at_device, strict=True):
        assert len(frame) == 128
        assert abs(t - t_rx) < 1 * MS  # peer->device stamped when handed to the device
    data = Path(b.link.pcap_path).read_bytes()
    magic, major, minor, _, _, snaplen, linktype = struct.unpack("<IHHiIII", data[:24])
    assert (magic, major, minor, snaplen, linktype) == (0xA1B23C4D, 2, 4, 128, 1)
    orig_len = struct.unpack("<IIII", data[24:40])[3]
    assert orig_len == 1514


def test_stats_json_and_snapshot(root):
    spec = LinkSpec(to_peer=one_way(delay_s=0.001))
    with Bench(spec, root) as b:
        for i in range(7):
            b.from_device(raw_frame(i, 500))
        b.at_peer(7)
        snap = b.wait_arrivals("to_peer", 7)
        assert not snap.final and snap.to_peer.frames_out == 7
        counters = b.link.stop()
    raw = json.loads(b.link.stats_path.read_text())
    assert raw["final"] is True and raw["elapsed_s"] > 0
    for name in ("to_device", "to_peer"):
        for key in ("frames_in", "bytes_in", "frames_out", "bytes_out", "queue_hwm_pkts", "queue_hwm_bytes"):
            assert isinstance(raw[name][key], int)
        assert set(raw[name]["dropped"]) == {"loss", "gemodel", "droplist", "queue", "unreachable", "device-full"}
        assert raw[name]["overflow"] == "hold" and raw[name]["sock_frames"] == 0
    assert counters.to_peer.bytes_in == counters.to_peer.bytes_out == 3500
    assert counters.total_frames_out == 7 and counters.total_dropped == 0
    assert counters.to_peer.late_us_max < 5000


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


def test_stop_leaves_no_process(root):
    b = Bench(LinkSpec(), root)
    with b:
        pid = b.link.pid
        assert pid and not _gone(pid)
    assert _gone(pid)
    assert not (root / "link-dev.sock").exists()

    sub = root / "again"
    sub.mkdir()
    with pytest.raises(RuntimeError), Bench(LinkSpec(), sub) as b2:
        pid = b2.link.pid
        raise RuntimeError("the test fails half-way")
    assert _gone(pid)


def test_start_failure_names_the_log(root):
    (root / "run").mkdir()
    link = Link(
        LinkSpec(),
        device_sock=root / "missing-dir" / "dev.sock",
        device_remote=root / "qemu.sock",
        run_dir=root / "run",
        peer_sock=root / "p.sock",
        peer_remote=root / "peer.sock",
    )
    with pytest.raises(NetreproError, match=r"cannot bind"):
        link.start(timeout=5)
    assert link.proc is not None and link.proc.poll() is not None


def test_native_build_is_cached_and_errors_are_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("NETREPRO_CACHE", str(tmp_path / "cache"))
    good = tmp_path / "good.c"
    good.write_text("int main(void) { return 0; }\n")
    first = build_tool("good", [good])
    assert first.parent == tmp_path / "cache" / "bin" and first.name.startswith("good-")
    stamp = first.stat().st_mtime_ns
    assert build_tool("good", [good]) == first and first.stat().st_mtime_ns == stamp
    assert build_tool("good", [good], cflags=["-O0"]) != first  # the flags are part of the name
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return nope; }\n")
    with pytest.raises(NetreproError, match=r"building bad failed: .*error.*nope") as err:
        build_tool("bad", [bad])
    assert "\n" not in str(err.value)
    assert not [
        p for p in (tmp_path / "cache" / "bin").iterdir() if p.name.startswith(".")
    ]  # no temp files left
    monkeypatch.setenv("CC", "no-such-compiler")
    with pytest.raises(NetreproError, match="no C compiler"):
        build_tool("good", [good])


def test_a_native_tools_headers_are_found_and_part_of_its_name(tmp_path, monkeypatch):
    """The link is built from units in a folder: their headers are found (-I) and a changed header builds anew."""
    monkeypatch.setenv("NETREPRO_CACHE", str(tmp_path / "cache"))
    units = tmp_path / "units"
    units.mkdir()
    header = units / "answer.h"
    header.write_text("#define ANSWER 0\n")
    main = tmp_path / "main.c"  # not beside its header: -I finds it
    main.write_text('#include "answer.h"\nint main(void) { return ANSWER; }\n')
    first = build_tool("headed", [main], headers=[header])
    assert subprocess.run([first], check=False).returncode == 0
    header.write_text("#define ANSWER 3\n")
    second = build_tool("headed", [main], headers=[header])
    assert second != first and subprocess.run([second], check=False).returncode == 3
    with pytest.raises(NetreproError, match="missing"):
        build_tool("headed", [main], headers=[units / "gone.h"])
