"""Child processes that cannot outlive the run: every one dies with its parent and is reaped."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """preexec_fn: the kernel kills this child if netrepro dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def die_with_parent_favoured() -> None:
    """preexec_fn for the emulator: dies with netrepro and, where permitted, gets the CPU first.

    The emulated NIC's receive FIFO holds a few frames; when the guest is descheduled for a
    moment, frames are lost. A better nice value keeps the guest running beside iperf and the
    kernel's own networking on a 2-core machine.
    """
    die_with_parent()
    with contextlib.suppress(OSError):
        os.nice(-10)


def stop_process(proc: subprocess.Popen, grace_s: float = 3.0, sig: int = signal.SIGTERM) -> int | None:
    """Ask a process to end, then kill it; returns its exit code."""
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace_s)
        except ProcessLookupError:
            pass
    return proc.returncode
