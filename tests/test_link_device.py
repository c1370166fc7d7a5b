"""The emulated link toward a device that cannot take a frame: overflow=drop and hold, the socket's limit, a
stalled link, and the pacing into the device's NIC (tests/linkbench.py runs the link).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from linkbench import DEV_MAC, PEER_MAC, Bench, frame_number, one_way, raw_frame

from harness.core.errors import NetreproError
from harness.link import Direction, LinkCounters, LinkSpec, parse_rate, read_drops, read_pcap
from harness.rig.devicetime import LINK_LATE_MS

# ------------------------------------------------------------------ a device that cannot take a frame


def _max_dgram_qlen() -> int:
    """What a unix datagram socket queues before its senders block (net.unix.max_dgram_qlen + 1)."""
    return int(Path("/proc/sys/net/unix/max_dgram_qlen").read_text()) + 1


def _to_a_device_that_stops_reading(root: Path, spec: LinkSpec, count: int = 30) -> tuple[Bench, LinkCounters]:
    """count full-size frames toward a device socket nobody reads; the counters once all are in.

    The device socket is not connected back to the link, as QEMU's is not (it sends with
    sendto), so its queue takes max_dgram_qlen frames before the link's sends would block."""
    b = Bench(spec, root, connect_device=False)
    b.__enter__()
    for i in range(count):
        b.from_peer(raw_frame(i, 1514, PEER_MAC, DEV_MAC))
    counters = b.wait_arrivals("to_device", count)
    deadline = time.monotonic() + 2
    while counters.to_device.frames_out + counters.to_device.dropped_total + counters.to_device.in_flight < count:
        assert time.monotonic() < deadline, counters
        counters = b.link.counters()
    return b, counters


@pytest.mark.parametrize("sock_frames", [2, 4])
def test_overflow_drop_loses_what_the_device_cannot_take(root, sock_frames):
    # A real NIC with a full RX ring drops what comes in on the wire: nothing is held back.
    spec = LinkSpec(to_device=one_way(overflow="drop", sock_frames=sock_frames))
    b, snap = _to_a_device_that_stops_reading(root, spec)
    try:
        c = snap.to_device
        assert c.frames_in == 30 and c.in_flight == 0  # none held
        assert c.frames_out == sock_frames  # what the socket toward the device holds unread
        assert c.dropped["device-full"] == 30 - sock_frames == c.dropped_total
        assert c.overflow == "drop" and c.sock_frames == sock_frames and c.out_sndbuf_bytes > 0
        got = b.at_device(30, timeout=0.3)
        assert [frame_number(f) for _, f in got] == list(range(sock_frames))
        # once the device reads again, frames get through again
        for i in range(100, 100 + sock_frames):
            b.from_peer(raw_frame(i, 1514, PEER_MAC, DEV_MAC))
            time.sleep(0.005)  # one at a time: the test reads them only afterwards
        assert [frame_number(f) for _, f in b.at_device(sock_frames)] == list(range(100, 100 + sock_frames))
        counters = b.link.stop()
    finally:
        b.__exit__(None, None, None)
    assert counters.to_device.frames_out == 2 * sock_frames
    assert counters.dropped["device-full"] == 30 - sock_frames
    drops = read_drops(b.link.drops_path)
    assert [d["frame"] for d in drops] == list(range(sock_frames + 1, 31))
    assert {(d["dir"], d["reason"], d["len"]) for d in drops} == {("to_device", "device-full", 1514)}
    assert len(read_pcap(b.link.pcap_path)) == 2 * sock_frames  # dropped frames are not in the capture


def test_overflow_drop_without_a_socket_limit_stops_at_the_kernels_queue(root):
    spec = LinkSpec(to_device=one_way(overflow="drop"))
    b, snap = _to_a_device_that_stops_reading(root, spec)
    b.__exit__(None, None, None)
    qlen = _max_dgram_qlen()
    assert snap.to_device.frames_out == qlen and snap.to_device.sock_frames == 0
    assert snap.to_device.dropped["device-full"] == 30 - qlen and snap.to_device.in_flight == 0


def test_overflow_hold_is_the_default_and_loses_nothing(root):
    assert Direction().overflow == "hold" and Direction().sock_frames == 0
    b, snap = _to_a_device_that_stops_reading(root, LinkSpec())
    try:
        c = snap.to_device
        assert c.dropped_total == 0 and c.overflow == "hold"
        assert c.frames_out == _max_dgram_qlen() and c.in_flight == 30 - c.frames_out  # held by the link
        time.sleep(0.3)  # the device takes nothing for a while: the held frames wait, and are not late
        got = b.at_device(30)  # the device reads again: everything arrives, in order
        assert [frame_number(f) for _, f in got] == list(range(30))
        counters = b.link.stop()
    finally:
        b.__exit__(None, None, None)
    assert counters.to_device.frames_out == 30 and counters.total_dropped == 0
    assert read_drops(b.link.drops_path) == []
    # lateness is the link's own: the time the receiver could not take a frame does not count
    assert counters.late_ms_max < LINK_LATE_MS / 5, counters.to_device


def test_a_stalled_link_hands_its_frames_over_late(root):
    """The host stalling the link (here SIGSTOP, 600 ms) while it holds frames due 200 ms after they came in
    hands them over ~400 ms late against their schedule: what a run's `link_late` judges."""
    spec = LinkSpec(to_peer=one_way(delay_s=0.200))
    with Bench(spec, root) as b:
        for i in range(5):
            b.from_device(raw_frame(i, 500))
        b.wait_arrivals("to_peer", 5)  # in the link, not yet due
        with b.frozen():
            time.sleep(0.6)
        assert [frame_number(f) for _, f in b.at_peer(5)] == list(range(5))
        counters = b.link.stop()
    assert 300 <= counters.to_peer.late_us_max / 1000 < 2000
    assert counters.late_ms_max == counters.to_peer.late_us_max / 1000 > LINK_LATE_MS
    assert counters.to_device.late_us_max == 0


def test_overflow_in_the_spec_and_from_the_platform(tmp_path):
    from harness.rig.platform import load_platform
    from harness.rig.session import Session

    with pytest.raises(NetreproError, match="overflow"):
        Direction(overflow="spill")
    d = Direction(overflow="drop", sock_frames=4)
    assert "overflow=drop" in d.cli() and "sock_frames=4" in d.cli()
    assert d.as_dict()["overflow"] == "drop" and d.as_dict()["sock_frames"] == 4

    xbox = load_platform("xbox")
    text = xbox.path.read_text()
    preset = LinkSpec.from_preset(xbox.link_preset("ethernet"))
    variants = {}
    for name, nic_lines in (("hold", ""), ("drop", 'rx_overflow = "drop"\n'),
                            ("drop6", 'rx_overflow = "drop"\nrx_overflow_frames = 6\n')):
        body = "\n".join(line for line in text.splitlines() if not line.startswith("rx_overflow"))
        path = tmp_path / f"{name}.toml"
        path.write_text(body.replace("[nic]\n", "[nic]\n" + nic_lines) + "\n")
        variants[name] = Session.link_as_run(preset, load_platform(str(path)))
    assert variants["hold"].to_device.overflow == "hold" and variants["hold"].to_device.sock_frames == 0
    burst = xbox.nic.rx_burst_frames
    assert variants["drop"].to_device.overflow == "drop"
    assert variants["drop"].to_device.sock_frames == max(2, burst)  # the pacing's burst fits
    assert variants["drop6"].to_device.sock_frames == 6
    assert variants["drop"].to_peer.overflow == "hold"
    assert variants["drop"].as_dict()["to_device"]["overflow"] == "drop"  # what link.json records
    bad = tmp_path / "bad.toml"
    bad.write_text(body.replace("[nic]\n", '[nic]\nrx_overflow = "spill"\n', 1) + "\n")
    with pytest.raises(NetreproError, match="rx_overflow") as err:
        load_platform(str(bad))
    assert "\n" not in str(err.value)


def test_a_stand_in_nic_sends_no_faster_than_its_wire():
    """The N6's gigabit preset over a 10/100 stand-in NIC: 100 Mbit/s each way as run; a slower preset
    keeps its own rate, and a preset without a rate gets the wire's."""
    from harness.rig.platform import load_platform
    from harness.rig.session import Session

    n6 = load_platform("openmv-n6")
    wire = parse_rate(n6.nic.wire_rate)
    gigabit = LinkSpec.from_preset(n6.link_preset("ethernet"))
    assert gigabit.to_peer.rate_bps > wire
    as_run = Session.link_as_run(gigabit, n6)
    assert as_run.to_peer.rate_bps == wire and as_run.to_device.pace_bps == wire
    assert Session.link_as_run(LinkSpec.from_preset({"rate": "43mbit"}), n6).to_peer.rate_bps == 43_000_000
    assert Session.link_as_run(LinkSpec(), n6).to_peer.rate_bps == wire
