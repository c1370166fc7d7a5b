"""QEMU's human monitor (HMP) on a unix socket: how the engine asks QEMU its state and tells it to quit.

Not QMP. QEMU serves a QMP monitor on a socket from an I/O thread of its own, and with `-icount` every
expiry of a timer on the board's clock notifies every thread with an event loop, that one included: with
the board's clock ticking 8 times a board ms (docs/device-time.md), that thread woke about 1,750 times a
wall second for nothing. The human monitor is served by QEMU's main loop, which wakes for those timers
anyway: a run without QMP cost 8-17 % less CPU, its figures unchanged (benchmarks/monitor_bench.py;
docs/device-time.md, "The board's monitor"). The engine asks two things only, which the human monitor answers
as plainly: `info status` and `quit`.
"""

from __future__ import annotations

import contextlib
import re
import socket
import time
from pathlib import Path

PROMPT = b"(qemu) "
COMMAND_TIMEOUT_S = 10.0  # QEMU answers a monitor command in milliseconds, on a loaded host too
_ESCAPES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # the monitor's line editor moves its cursor with these


class MonitorTimeout(TimeoutError):
    """QEMU did not answer on its monitor within the time given."""


class HumanMonitor:
    """One connection to QEMU's human monitor (`-monitor unix:PATH,server=on,wait=off`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._sock: socket.socket | None = None

    def connect_within(self, timeout: float) -> None:
        """Connect and wait for QEMU's greeting and first prompt. ConnectionRefusedError: nothing listens yet;
        MonitorTimeout: connected, and QEMU's main loop did not greet within `timeout`."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(str(self.path))
            self._sock = sock
            self._read_to_prompt(time.monotonic() + timeout)
        except BaseException:
            self._sock = None
            sock.close()
            raise

    def command(self, line: str, timeout: float = COMMAND_TIMEOUT_S) -> str:
        """Run one command and return what QEMU printed for it (its echo and the prompt left out)."""
        self.send(line)
        text = self._read_to_prompt(time.monotonic() + timeout)
        lines = _ESCAPES.sub("", text).replace("\r", "").split("\n")
        return "\n".join(lines[1:]).strip()  # the first line is the monitor's echo of the command

    def send(self, line: str) -> None:
        """Send a command and read nothing back (`quit`, whose answer is QEMU going away)."""
        if self._sock is None:
            raise ConnectionError("the monitor is not connected")
        self._sock.sendall(line.encode() + b"\n")

    def close(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None

    def _read_to_prompt(self, deadline: float) -> str:
        assert self._sock is not None
        data = b""
        while not data.endswith(PROMPT):
            left = deadline - time.monotonic()
            if left <= 0:
                raise MonitorTimeout(f"no prompt from QEMU's monitor at {self.path}")
            self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(4096)
            except TimeoutError as exc:
                raise MonitorTimeout(f"no prompt from QEMU's monitor at {self.path}") from exc
            if not chunk:
                raise ConnectionError("QEMU closed its monitor")
            data += chunk
        return data[: -len(PROMPT)].decode(errors="replace")


def run_state(answer: str) -> str:
    """QEMU's run state ('running', 'paused', ...) from the monitor's answer to `info status`."""
    found = re.search(r"VM status: (\w[\w-]*)", answer)
    if found is None:
        raise ValueError(f"not an answer to info status: {answer!r}")
    return found.group(1)
