"""The simavr Ethernut 2 board host (platforms/ethernut2): self-test, console, XMEM RAM,
the LAN91C111 model's TX and RX paths through the datagram socket, INT5, and pacing.

Runs the self-test firmware platforms/ethernut2/selftest/nictest.c, built with avr-gcc.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from harness.core.native import build_tool
from harness.link.stamps import recv_stamped, stamp_arrivals
from harness.rig.engine import parse_host_summary

ROOT = Path(__file__).resolve().parent.parent
BOARD = ROOT / "platforms" / "ethernut2"

needs_avr = pytest.mark.skipif(
    shutil.which("avr-gcc") is None or not Path("/usr/include/simavr/sim_avr.h").is_file(),
    reason="needs gcc-avr, avr-libc and libsimavr-dev",
)

MAC = "02:00:00:00:00:01"


@pytest.fixture(scope="module")
def host() -> Path:
    return build_tool("netrepro-ethernut", [BOARD / "board_host.c", BOARD / "lan91c111.c"], libs=["-lsimavr"])


@pytest.fixture(scope="module")
def nictest(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("avr") / "nictest.elf"
    subprocess.run(
        ["avr-gcc", "-mmcu=atmega128", "-Os", "-Wall", "-o", str(out), str(BOARD / "selftest" / "nictest.c")],
        check=True,
    )
    return out




@needs_avr
def test_self_test_only(host, nictest):
    proc = subprocess.run(
        [str(host), "--elf", str(nictest), "--self-test-only"], capture_output=True, text=True, timeout=10
    )
    assert proc.returncode == 0, proc.stderr
    assert "self-test ok" in proc.stderr
    assert proc.stdout == ""


class Board:
    def __init__(self, host: Path, elf: Path, tmp: Path, *extra: str):
        self.link_path = tmp / "link.sock"
        self.dev_path = tmp / "dev.sock"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(self.link_path))
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [
                str(host),
                "--elf",
                str(elf),
                "--local",
                str(self.dev_path),
                "--remote",
                str(self.link_path),
                "--mac",
                MAC,
                *extra,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: list[tuple[float, str]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.append((time.monotonic() - self.t0, raw.decode(errors="replace").rstrip()))

    def wait_line(self, prefix: str, timeout: float = 20.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for _, line in self.lines:
                if line.startswith(prefix):
                    return line
            time.sleep(0.02)
        raise AssertionError(f"no console line {prefix!r}; got {self.lines}")

    def stop(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        err = self.proc.stderr.read().decode()
        self.proc.wait(timeout=10)
        self.sock.close()
        return err


@needs_avr
def test_console_xmem_tx_rx_int5(host, nictest, tmp_path):
    board = Board(host, nictest, tmp_path, "--no-throttle")
    try:
        board.sock.settimeout(20)
        frame = board.sock.recv(4096)
        # 23-byte broadcast frame written with an odd byte count, padded to 60 (PAD_EN)
        assert len(frame) == 60
        assert frame[:14] == bytes.fromhex("ffffffffffff02000000000188b5")
        assert frame[14:23] == b"netrepro!"
        assert board.wait_line("xram:") == "xram: 0 bad"
        # 8 external minus 8 internal loads: (1 + wait states) each, for SRW11:10 = 2, = 3,
        # and a lower sector (SRL) with SRW01:00 = 1
        assert board.wait_line("xwait") == "xwait 24 32 16"
        assert board.wait_line("bsr=") == "bsr=3303 rev=3391"
        assert board.wait_line("mac=").startswith("mac=02:00:00:00:00:01")
        assert board.wait_line("mir=") == "mir=0404"
        board.wait_line("waiting for a frame")
        injected = (
            bytes.fromhex(MAC.replace(":", ""))
            + bytes.fromhex("0a0000000002")
            + b"\x08\x00"
            + bytes(range(50))
            + b"\x77"
        )
        board.sock.sendto(injected, str(board.dev_path))
        assert board.wait_line("int5=").startswith("int5=1 ")
        # 65 data bytes (odd), CRC stripped: count = 64 + 6, ODDFRM status, odd byte before the ODD control byte
        assert board.wait_line("rx status=") == (
            "rx status=1000 count=70 data=" + injected[:16].hex() + " last=77 ctl=20"
        )
        assert board.wait_line("after release") == "after release rxfifo=80 mir=0404"
        board.wait_line("done")
    finally:
        err = board.stop()
    assert board.proc.returncode == 0, err
    assert "frames tx 1 (lost at the socket 0) rx 1" in err


@needs_avr
def test_paced_to_wall_clock(host, nictest, tmp_path):
    """Each 'tick' is 14,745,600 cycles of busy loop plus ~0.8 ms of console output."""
    board = Board(host, nictest, tmp_path)
    try:
        board.wait_line("waiting for a frame")
        board.sock.sendto(bytes.fromhex(MAC.replace(":", "")) * 2 + b"\x08\x00" + bytes(50), str(board.dev_path))
        board.wait_line("tick 4", timeout=30)
    finally:
        err = board.stop()
    ticks = [t for t, line in board.lines if line.startswith("tick")]
    span = ticks[-1] - ticks[0]
    n = len(ticks) - 1
    assert n >= 3
    assert abs(span / n - 1.0008) < 0.02 * 1.0008, (ticks, err)


def test_lan91c111_model_unit():
    """MMU allocation/release, RX overrun, address filter, TX wire time, TX-done FIFO, auto-release."""
    unit = build_tool("netrepro-lan91c111-unit", [BOARD / "selftest" / "lan_unit.c", BOARD / "lan91c111.c"])
    proc = subprocess.run([str(unit)], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "lan_unit: ok"


@needs_avr
def test_console_input_and_halt(host, nictest, tmp_path):
    """The console works through a pty with pexpect, as QEMU's serial on stdio; cli+sleep ends the run."""
    import pexpect

    link = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    link.bind(str(tmp_path / "link.sock"))
    dev = tmp_path / "dev.sock"
    child = pexpect.spawn(
        str(host),
        ["--elf", str(nictest), "--local", str(dev), "--remote", str(tmp_path / "link.sock"), "--no-throttle"],
        timeout=20,
    )
    try:
        child.expect("waiting for a frame")
        link.sendto(bytes.fromhex(MAC.replace(":", "")) * 2 + b"\x08\x00" + bytes(50), str(dev))
        child.expect("done")
        child.sendline("hello world")
        child.expect("echo: HELLO WORLD")
        child.sendline("halt")
        child.expect("firmware stopped")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
        link.close()
    assert child.exitstatus == 0


@needs_avr
def test_tx_paced_at_10_mbit(host, tmp_path):
    """300 back-to-back 1514-byte frames leave one per wire time: (1514 + 24) * 8 bits at 10 Mbit/s."""
    elf = tmp_path / "txblast.elf"
    subprocess.run(
        ["avr-gcc", "-mmcu=atmega128", "-Os", "-o", str(elf), str(BOARD / "selftest" / "txblast.c")], check=True
    )
    board = Board(host, elf, tmp_path)
    stamps, seqs = [], []
    try:
        stamp_arrivals(board.sock)  # the kernel's stamp of the host's send
        board.sock.settimeout(10)
        while len(stamps) < 300:
            frame, stamp = recv_stamped(board.sock, 4096)
            stamps.append(stamp)
            assert len(frame) == 1514
            seqs.append(frame[14] | frame[15] << 8)
        board.wait_line("blast done")
        board.proc.wait(timeout=10)
    finally:
        err = board.stop()
    assert seqs == list(range(300))
    assert "firmware stopped" in err
    summary = next(parse_host_summary(line) for line in reversed(err.splitlines()) if parse_host_summary(line))
    wire = 1538 * 8 / 10e6
    span = (stamps[-1] - stamps[0]) / 1e9
    # the host sends each frame when the board's simulated time reaches it; a host that fell behind catches up
    # by up to its own measured max lag, so that (and only that) widens the bound
    lag_s = summary["max_lag_ms"] / 1000
    assert abs(span - 299 * wire) < 0.03 * 299 * wire + lag_s, (span, summary)
