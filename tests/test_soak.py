"""The soak (issue 15 item 4): `run --minutes N` over a lossy, jittery, reordering link ends with the board
alive, every byte accounted for (peer, capture, board) and no leak.

Unit tests count a synthetic capture's bytes (losses, retransmissions, reordering) and read the board's
count; the real chain runs a short soak (3 s of the board's time) with 1 % loss, jitter and reordering.
"""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from harness.cli.exit_codes import ExitCode
from harness.link.capture import write_pcap
from harness.rig.devicetime import DeviceTime
from harness.rig.peer import Addresses
from harness.rig.session import Session
from harness.studies.fuzz_frames import scapy
from harness.studies.soak import LWIPERF_HEADER, board_count, data_stream, runs_lwiperf

PEER, BOARD = "10.77.0.1", "10.77.0.2"


def _segment(seq: int, flags: str, payload: bytes = b"", to_board: bool = True) -> bytes:
    sc = scapy()
    src, dst = (PEER, BOARD) if to_board else (BOARD, PEER)
    ports = (40000, 5001) if to_board else (5001, 40000)
    tcp = sc.TCP(sport=ports[0], dport=ports[1], seq=seq & 0xFFFFFFFF, flags=flags)
    return bytes(sc.Ether() / sc.IP(src=src, dst=dst) / tcp / sc.Raw(payload))


def test_the_capture_counts_the_sequence_space_whatever_was_lost_resent_or_reordered(tmp_path):
    isn = 0xFFFFFF00  # the count wraps past 2**32
    first, rest = 60, 1460
    frames = [_segment(isn, "S"), _segment(7, "SA", to_board=False),
              _segment(isn + 1 + first, "A", b"b" * rest),           # the first segment was lost ...
              _segment(isn + 1, "A", b"a" * first),                  # ... and comes later
              _segment(isn + 1 + first + rest, "A", b"c" * rest),
              _segment(isn + 1 + first, "A", b"b" * rest),           # a spurious retransmission
              _segment(isn + 1 + first + 2 * rest, "FA"),
              _segment(8, "A", to_board=False)]
    capture = write_pcap(tmp_path / "capture.pcap", frames)
    stream = data_stream(capture, BOARD, "peer")
    assert stream is not None and stream.bytes == first + 2 * rest and stream.first_segment == first
    assert data_stream(capture, BOARD, "device") is None, "the board's side has no FIN here"


def test_the_boards_count_is_its_last_iperf_line_of_the_role(tmp_path):
    log = tmp_path / "console.log"
    log.write_text("IPERF role=server report=LWIPERF_TCP_DONE_SERVER remote=10.77.0.1:1 bytes=100 ms=5\r\n"
                   "IPERF role=client report=LWIPERF_TCP_DONE_CLIENT remote=10.77.0.1:2 bytes=7 ms=5\r\n"
                   "IPERF role=server report=LWIPERF_TCP_DONE_SERVER remote=10.77.0.1:3 bytes=2500 ms=9\r\n")
    assert board_count(log, "server") == 2500 and board_count(log, "client") == 7
    assert board_count(tmp_path / "missing.log", "server") is None
    assert LWIPERF_HEADER == 24


class _Clock:
    """The wall clock a ping waits on: an unanswered `ping -W 1` lasts a second."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


class _Namespace:
    """Answers a ping only from the `answer_at`-th one on, as a lossy link may."""

    def __init__(self, answer_at: int, clock: _Clock) -> None:
        self.answer_at, self.pings, self.clock = answer_at, 0, clock

    def run(self, argv: list[str], timeout: float, check: bool) -> subprocess.CompletedProcess:
        assert argv[0] == "ping" and not check
        self.pings += 1
        answered = self.pings >= self.answer_at
        self.clock.now += 0.001 if answered else float(argv[argv.index("-W") + 1])
        return subprocess.CompletedProcess(argv, 0 if answered else 1)


class _Console:
    """The board's console, its clock running at half the wall's (D = 2)."""

    def __init__(self, clock: _Clock) -> None:
        self.clock = clock

    def uptime_ms(self) -> int:
        return round(self.clock.now / 2 * 1000)


@pytest.mark.parametrize(("options", "lwiperf"), [
    ({"NO_SYS": 1}, True),                        # NO_SYS 1: the raw API only
    ({"NO_SYS": 0, "NR_APP_API": 0}, True),       # the raw apps in the tcpip thread
    ({"NO_SYS": 0, "NR_APP_API": 1}, False),      # iperf_os.c on sockets
    ({"NO_SYS": 0, "NR_APP_API": 2}, False),      # ... on netconn
])
def test_the_board_runs_lwiperf_only_on_the_raw_api(options, lwiperf):
    assert runs_lwiperf(SimpleNamespace(options=options)) is lwiperf


@pytest.mark.parametrize(("answer_at", "alive", "pings"), [(1, True, 1), (4, True, 4), (6, False, 5)])
def test_a_lost_echo_does_not_read_as_a_dead_board(monkeypatch, answer_at, alive, pings):
    # the soak's final ping crosses its own lossy link: one lost echo failed a CI run. Without the
    # board's ticks the wait follows its console's uptime: 2.5 board seconds at D = 2 are 5 unanswered
    # one-second pings.
    clock = _Clock()
    monkeypatch.setattr("harness.rig.session.time", clock)
    session = object.__new__(Session)
    session.console, session.namespace, session.addresses = _Console(clock), _Namespace(answer_at, clock), Addresses()
    session.link, session.time = None, DeviceTime("device", dilation=2.0)
    assert session.alive(timeout=2.5) == {"console": True, "ping": alive}
    assert session.namespace.pings == pings


@pytest.mark.real
def test_a_short_soak_with_loss_jitter_and_reordering_ends_alive_accounted_and_leak_free(tmp_path, no_leftovers):
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "run", "openmv-n6", "--lwip", "mp-n6-after",
                           "--link", "wifi", "--loss", "1%", "--jitter", "2ms", "--reorder", "1",
                           "--workload", "rx",
                           "--minutes", "0.05", "--out", str(tmp_path), "--json", "--quiet"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    document = json.loads(proc.stdout)
    soak = document["soak"]
    assert soak["ok"] and soak["alive"] == {"console": True, "ping": True}
    counted = soak["bytes"]
    assert counted["peer"] == counted["capture"] > 1_000_000
    assert counted["board"] == counted["capture"] - counted["board_uncounted"]
    assert document["workload"]["seconds"] == 3.0
    dropped = document["link_counters"]["to_device"]["dropped"]["loss"]
    assert dropped > 0, "1 % loss dropped no frame toward the board"
    assert document["link"]["to_device"]["reorder"] is True
    [soak_json] = tmp_path.glob("*/soak.json")
    assert json.loads(soak_json.read_text())["ok"]


def test_a_soak_of_no_minutes_is_one_line():
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "run", "openmv-n6", "--minutes", "0"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == ExitCode.COULD_NOT and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == ("netrepro: error: --minutes 0 is not a duration; give the board minutes, "
                                   "e.g. --minutes 10")
