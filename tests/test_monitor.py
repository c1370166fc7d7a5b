"""QEMU's human monitor client (harness/rig/monitor.py) against a fake monitor on a unix socket: the greeting,
an answer with the line editor's echo and escapes, a silent QEMU, a closed one. The real QEMU's monitor is
exercised by every board test (tests/test_firmware.py asks it `info status`; tests/test_peer.py stops a
QEMU that no longer answers it)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from harness.rig.monitor import HumanMonitor, MonitorTimeout, run_state

GREETING = b"QEMU 7.2.22 monitor - type 'help' for more information\r\n(qemu) "


def _serve(path: Path, script: list[tuple[bytes | None, bytes]], hold_s: float = 0.5) -> threading.Thread:
    """A fake monitor: sends each reply after reading the line it expects (None: at once), then holds the
    connection open for hold_s."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)

    def run() -> None:
        conn, _ = server.accept()
        with conn, server:
            for expect, reply in script:
                if expect is not None:
                    got = b""
                    while not got.endswith(b"\n"):
                        got += conn.recv(1)
                    assert got == expect
                conn.sendall(reply)
            time.sleep(hold_s)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_a_command_returns_what_qemu_printed_without_its_echo_or_prompt(tmp_path):
    path = tmp_path / "m.sock"
    # QEMU's line editor echoes the command with cursor escapes, then prints the answer and a new prompt
    echo = b"info status\x1b[K\x1b[D\r\n"
    thread = _serve(path, [(None, GREETING), (b"info status\n", echo + b"VM status: running\r\n(qemu) ")])
    monitor = HumanMonitor(path)
    monitor.connect_within(2.0)
    answer = monitor.command("info status")
    assert answer == "VM status: running"
    assert run_state(answer) == "running"
    monitor.close()
    thread.join(2)


def test_a_monitor_that_never_greets_times_out_and_a_closed_one_is_a_connection_error(tmp_path):
    silent = tmp_path / "silent.sock"
    _serve(silent, [(None, b"QEMU 7.2.22 monitor")], hold_s=3.0)  # a greeting cut short: no prompt ever comes
    began = time.monotonic()
    with pytest.raises(MonitorTimeout):
        HumanMonitor(silent).connect_within(0.5)
    assert time.monotonic() - began < 2
    closed = tmp_path / "closed.sock"
    thread = _serve(closed, [(None, GREETING), (b"info status\n", b"")])
    monitor = HumanMonitor(closed)
    monitor.connect_within(2.0)
    thread.join(2)  # the fake QEMU went away after reading the command
    with pytest.raises(ConnectionError):
        monitor.command("info status", timeout=1.0)


def test_nothing_listening_is_refused(tmp_path):
    path = tmp_path / "nobody.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))  # the file exists, nothing listens yet: QEMU on a loaded host, tried again by the engine
    with pytest.raises(ConnectionRefusedError):
        HumanMonitor(path).connect_within(0.5)
    sock.close()


@pytest.mark.parametrize(("answer", "state"), [("VM status: running", "running"), ("VM status: paused", "paused"),
                                               ("VM status: paused (internal-error)", "paused")])
def test_run_state_reads_the_state_and_refuses_anything_else(answer, state):
    assert run_state(answer) == state
    with pytest.raises(ValueError, match="not an answer to info status"):
        run_state("unknown command: 'info'")
