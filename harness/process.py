"""Child processes that cannot outlive the run: every one dies with its parent and is reaped."""

from __future__ import annotations

import ctypes
import signal
import subprocess

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """preexec_fn: the kernel kills this child if netrepro dies, even by SIGKILL."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


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
