"""Where the capture is taken (`run --capture-at`): at the device's side of the link (the default), or at the
peer's, as a capture on the PC beside a real board is taken.

The link is driven through real unix datagram sockets (test_link.py's Bench). Every timing assertion compares
the capture's own stamps with the kernel's receive stamps of what the link handed over, and bounds hold by
causality (the device answers a frame only once it has it), never by how fast this process runs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from harness.core.errors import NetreproError
from harness.link import Link, LinkSpec, link_binary, read_drops, read_pcap_ns
from harness.runs.plan import RunPlan
from harness.runs.result import RunResult
from harness.studies import cases
from tests.conftest import netrepro_cli

sys.path.insert(0, str(Path(__file__).resolve().parent))
from linkbench import DEV_MAC, MS, PEER_MAC, Bench, frame_number, one_way, raw_frame
from test_workloads import ACK, SYN, conversation, tcp_segments

DELAY = 40 * MS   # one way, each way: far more than anything else the checks allow
TOL = 200_000     # ns: the kernel's stamp and the capture's, converted once at the link's start, may differ this much
HANDOVER = 5 * MS  # from the link's stamp of a frame it hands over to the kernel's stamp of its arrival
LATE = 20 * MS     # how late a busy host may let the link hand a frame over
PEER_BASE = 100    # frames the peer sends carry 100, 101, ...; the device's 0, 1, ...


@pytest.fixture
def root():
    path = Path(tempfile.mkdtemp(prefix="nrc-", dir="/tmp"))  # unix socket paths are short
    yield path
    shutil.rmtree(path, ignore_errors=True)


def side_bench(spec: LinkSpec, root: Path, side: str) -> Bench:
    """test_link.py's Bench, its link's capture taken at `side`."""
    bench = Bench(spec, root)
    link = bench.link
    bench.link = Link(spec, device_sock=link.device_sock, device_remote=link.device_remote, run_dir=link.run_dir,
                      peer_sock=link.peer_sock, peer_remote=link.peer_remote, capture_at=side)
    return bench


def from_peer(n: int, size: int = 200) -> bytes:
    return raw_frame(PEER_BASE + n, size, PEER_MAC, DEV_MAC)


def captured(bench: Bench) -> list[tuple[int, int]]:
    """(stamp in ns, frame number) of every record of the bench's capture, in file order."""
    return [(t, frame_number(f)) for t, f in read_pcap_ns(bench.link.pcap_path)]


def ping_pong(root: Path, side: str, medium: str, rounds: int = 4) -> tuple[list[tuple[int, int]], dict, dict]:
    """The peer sends a frame, the device answers once it has it, the peer sends the next once it has the answer.
    The capture, and the kernel's receive stamps of each frame at the device and at the peer, by number."""
    spec = LinkSpec.from_preset({"medium": medium, "rtt": f"{2 * DELAY / MS:g}ms"})
    at_device, at_peer = {}, {}
    with side_bench(spec, root, side) as b:
        for i in range(rounds):
            b.from_peer(from_peer(i))
            [(t, frame)] = b.at_device(1)
            at_device[frame_number(frame)] = t
            b.dev.send(raw_frame(i, 300))
            [(t, frame)] = b.at_peer(1)
            at_peer[frame_number(frame)] = t
        b.link.stop()
    return captured(b), at_device, at_peer


# ------------------------------------------------------------------ when each side stamps


@pytest.mark.parametrize("medium", ["wire", "shared"])
def test_the_peer_side_stamps_what_the_peer_sends_when_it_sends_it_and_the_answer_when_it_gets_it(root, medium):
    capture, at_device, at_peer = ping_pong(root, "peer", medium)
    assert [n for _, n in capture] == [100, 0, 101, 1, 102, 2, 103, 3]
    stamp = {n: t for t, n in capture}
    for i in range(4):
        sent, answer = stamp[PEER_BASE + i], stamp[i]
        # on arrival from the peer: the one-way delay before the device had it
        assert DELAY - TOL <= at_device[PEER_BASE + i] - sent <= DELAY + LATE
        # when handed to the peer: not the delay before
        assert -TOL <= at_peer[i] - answer <= HANDOVER
        # the round trip as a PC sees it: out and back through the link
        assert answer - sent >= 2 * DELAY - TOL


@pytest.mark.parametrize("medium", ["wire", "shared"])
def test_the_device_side_stamps_what_it_gets_when_handed_over_and_its_answer_when_it_leaves(root, medium):
    capture, at_device, at_peer = ping_pong(root, "device", medium)
    assert [n for _, n in capture] == [100, 0, 101, 1, 102, 2, 103, 3]
    stamp = {n: t for t, n in capture}
    for i in range(4):
        got, answer = stamp[PEER_BASE + i], stamp[i]
        assert -TOL <= at_device[PEER_BASE + i] - got <= HANDOVER  # when handed to the device
        assert DELAY - TOL <= at_peer[i] - answer <= DELAY + LATE  # on arrival from the device: the delay to go
        assert answer >= got


@pytest.mark.parametrize(("side", "order"), [("peer", [100, 0]), ("device", [0, 100])])
def test_frames_taken_in_together_are_written_in_the_order_of_the_sides_stamps(root, side, order):
    """The device's frame, then the peer's, wait unread while the link is held: each side's capture puts first
    the frame its own side sent (stamped when it arrived), the other one a delay later (when handed over)."""
    spec = LinkSpec(to_device=one_way(delay_s=DELAY / 1e9), to_peer=one_way(delay_s=DELAY / 1e9))
    with side_bench(spec, root, side) as b:
        with b.frozen():
            b.dev.send(raw_frame(0, 300))
            b.peer.send(from_peer(0))
        assert len(b.at_device(1)) == 1 and len(b.at_peer(1)) == 1
        b.link.stop()
    records = captured(b)
    assert [n for _, n in records] == order
    assert records[1][0] - records[0][0] > 0


# ------------------------------------------------------------------ which frames each side sees


def dropping_exchange(root: Path, side: str) -> tuple[list[int], list[dict[str, Any]]]:
    """Five frames each way; the link drops the peer's 3rd (toward the device) and the device's 2nd."""
    spec = LinkSpec(to_device=one_way(delay_s=0.002, drop=("frame:3",)),
                    to_peer=one_way(delay_s=0.002, drop=("frame:2",)))
    with side_bench(spec, root, side) as b:
        for i in range(5):
            b.dev.send(raw_frame(i, 300))
            b.peer.send(from_peer(i))
        assert len(b.at_device(4)) == 4 and len(b.at_peer(4)) == 4
        b.link.stop()
    return [n for _, n in captured(b)], read_drops(b.link.drops_path)


@pytest.mark.parametrize("side", ["peer", "device"])
def test_a_frame_dropped_toward_the_device_is_in_the_peer_side_capture_only(root, side):
    numbers, drops = dropping_exchange(root, side)
    assert [(d["dir"], d["frame"], d["reason"]) for d in drops] == [("to_peer", 2, "droplist"),
                                                                    ("to_device", 3, "droplist")]
    from_the_peer = [n for n in numbers if n >= PEER_BASE]
    from_the_device = [n for n in numbers if n < PEER_BASE]
    if side == "peer":
        assert from_the_peer == [100, 101, 102, 103, 104]  # all it sent, the dropped 102 too
    else:
        assert from_the_peer == [100, 101, 103, 104]       # what the device got
    assert from_the_device == [0, 2, 3, 4]  # the device's 2nd lost on the link: at neither side


def lossy_burst(root: Path, side: str) -> tuple[list[tuple[int, int]], list[int], list[dict[str, Any]], Any]:
    """60 frames from the peer at once into random loss and a two-frame queue in front of a slow line."""
    spec = LinkSpec(to_device=one_way(loss=0.2, limit_packets=2, rate_bps=2_000_000), seed=5)
    with side_bench(spec, root, side) as b:
        with b.frozen():
            for i in range(60):
                b.peer.send(from_peer(i, 500))
        b.wait_arrivals("to_device", 60)
        got = [frame_number(f) for _, f in b.at_device(60, timeout=0.5)]
        counters = b.link.stop()
    return captured(b), got, read_drops(b.link.drops_path), counters


@pytest.mark.parametrize("side", ["peer", "device"])
def test_frames_lost_or_queued_out_toward_the_device_show_at_the_peer_side_only(root, side):
    records, got, drops, counters = lossy_burst(root, side)
    stamps, numbers = [t for t, _ in records], [n for _, n in records]
    dropped = [PEER_BASE + d["frame"] - 1 for d in drops]  # the drops log counts a direction's frames from 1
    assert {d["reason"] for d in drops} == {"loss", "queue"}
    assert sorted(got + dropped) == list(range(PEER_BASE, PEER_BASE + 60)) and counters.to_device.frames_out == len(got)
    assert numbers == (list(range(PEER_BASE, PEER_BASE + 60)) if side == "peer" else got)
    assert stamps == sorted(stamps)


@pytest.mark.parametrize(("side", "seen"), [("peer", [100, 101, 102]), ("device", [0, 1, 2])])
def test_on_the_shared_medium_frames_lost_on_the_air_show_where_they_were_sent(root, side, seen):
    """Every frame lost on the air, both ways: each side's capture has what its own side sent, and nothing else."""
    spec = LinkSpec.from_preset({"medium": "shared", "fer": "100%", "retry_limit": 1})
    with side_bench(spec, root, side) as b:
        for i in range(3):
            b.dev.send(raw_frame(i, 300))
            b.peer.send(from_peer(i))
        b.wait_arrivals("to_device", 3)
        counters = b.wait_arrivals("to_peer", 3)
        assert counters.to_device.frames_in == counters.to_peer.frames_in == 3
        assert b.at_peer(1, timeout=0.3) == [] and b.at_device(1, timeout=0.1) == []
        counters = b.link.stop()
    assert counters.to_device.dropped["air"] == counters.to_peer.dropped["air"] == 3
    assert sorted(n for _, n in captured(b)) == seen


# ------------------------------------------------------------------ the option, the plan and the result


def test_a_side_that_is_not_one_is_a_one_line_error(tmp_path):
    with pytest.raises(NetreproError, match="capture_at 'switch' is not a side of the link"):
        Link(LinkSpec(), tmp_path / "a", tmp_path / "b", tmp_path, peer_sock=tmp_path / "c",
             peer_remote=tmp_path / "d", capture_at="switch")
    with pytest.raises(NetreproError, match="give one of device, peer"):
        RunPlan(None, None, LinkSpec(), None, capture_at="pc")  # type: ignore[arg-type]
    proc = subprocess.run([str(link_binary()), "--device-sock", "x", "--device-remote", "y", "--capture-at", "pc"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "--capture-at: bad value 'pc' (device, peer or both)" in proc.stderr
    cli = netrepro_cli("run", "openmv-n6", "--capture-at", "pc", timeout=60)
    assert cli.returncode == 2 and "argument --capture-at: invalid choice: 'pc'" in cli.stderr, cli.stderr
    assert "Traceback" not in cli.stderr


def test_the_link_is_told_the_side_and_device_is_the_default(tmp_path):
    peer = Link(LinkSpec(), tmp_path / "a", tmp_path / "b", tmp_path, peer_sock=tmp_path / "c",
                peer_remote=tmp_path / "d", capture_at="peer").command(Path("/bin/link"))
    default = Link(LinkSpec(), tmp_path / "a", tmp_path / "b", tmp_path, peer_sock=tmp_path / "c",
                   peer_remote=tmp_path / "d").command(Path("/bin/link"))
    assert peer[peer.index("--capture-at") + 1] == "peer" and default[default.index("--capture-at") + 1] == "device"


def _result(captured_at: str | None) -> RunResult:
    extra = {} if captured_at is None else {"captured_at": captured_at}
    return RunResult(platform="p", profile="q", lwip_version="2.1.3", link=LinkSpec(), workload={"name": "rr"},
                     run_dir="runs/x", capture="runs/x/capture.pcap", console_log="runs/x/console.log",
                     device="10.77.0.2", **extra)


def test_a_result_records_its_side_and_a_case_analyses_its_capture_there(monkeypatch):
    assert _result(None).as_dict()["captured_at"] == "device"  # what a result.json without the key meant
    assert _result("peer").as_dict()["captured_at"] == "peer"
    told = []

    def load(*_args: Any, **kwargs: Any) -> Any:
        told.append(kwargs["captured_at"])
        raise NetreproError("no capture here", "none needed")

    monkeypatch.setattr(cases, "load_capture", load)
    for side in ("peer", "device"):
        assert cases._direction_analysis(_result(side), "tx", None).verdict is None
    assert told == ["peer", "device"]


# ------------------------------------------------------------------ the real chain


def _handshake_split_ms(capture: Path) -> tuple[float, float]:
    """(SYN to SYN-ACK, SYN-ACK to the ACK that completes it) of the iperf connection, in the capture's time."""
    conv = conversation(tcp_segments(capture), 5001)
    syn = next(s for s in conv if s[5] & SYN and not s[5] & ACK)
    synack = next(s for s in conv if s[5] & SYN and s[5] & ACK)
    ack = next(s for s in conv if s[0] > synack[0] and s[5] & ACK and not s[5] & SYN)
    return (synack[0] - syn[0]) * 1e3, (ack[0] - synack[0]) * 1e3


@pytest.mark.real
@pytest.mark.parametrize("side", ["peer", None])  # None: the default, the device's side
def test_a_run_measures_the_handshake_at_the_side_it_captured(tmp_path, no_leftovers, side):
    """rx over 13 ms: the peer's SYN, the board's SYN-ACK and the peer's ACK. The whole handshake takes the RTT
    at either side; at the peer's it lies between the SYN and the SYN-ACK, at the device's after the SYN-ACK."""
    args = ["run", "openmv-n6", "--lwip", "mp-n6-after", "--link", "wifi-wire", "--rtt", "13ms", "--rate", "17mbit",
            "--workload", "rx", "--seconds", "3", "--out", str(tmp_path), "--json"]
    cli = netrepro_cli(*args, *(["--capture-at", side] if side else []), timeout=300)
    assert cli.returncode == 0, cli.stderr
    printed = json.loads(cli.stdout)
    result = json.loads((Path(printed["run_dir"]) / "result.json").read_text())
    where = side or "device"
    assert result["captured_at"] == where and result["status"] == "passed"
    analysis = result["analysis"]
    assert analysis["capture_near"] == where and analysis["syn_seen"]
    assert analysis["initial_rtt_ms"] == pytest.approx(13.0, rel=0.05)
    to_synack, to_ack = _handshake_split_ms(Path(result["capture"]))
    rtt_part, turn_part = (to_synack, to_ack) if where == "peer" else (to_ack, to_synack)
    assert rtt_part == pytest.approx(13.0, rel=0.05) and turn_part < 1.0, (to_synack, to_ack)
