"""Every child process of a run has one life cycle: started with a death signal, stopped with a grace period, reaped.

QEMU, the simavr board host, the link and the peer services all go through `spawn` (or
`spawn_console` for a process whose terminal is the board's console) and `stop`, so none can
outlive netrepro, even when it is killed with SIGKILL, and none is left as a zombie.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pexpect

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)  # loaded before any fork: a child only calls prctl through it


def die_with_parent() -> None:
    """preexec_fn: the kernel kills this child if netrepro dies, even by SIGKILL."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


# How much of the CPU a child asks for, where permitted (root or CAP_SYS_NICE; otherwise it runs as it is):
# "realtime" SCHED_FIFO 5, else nice -10; "raised" nice -10; "normal" as netrepro runs.
PRIORITIES = ("realtime", "raised", "normal")


def _die_with_parent_at(priority: str) -> Callable[[], None]:
    """preexec_fn: the child dies with netrepro and runs at `priority` (PRIORITIES).

    An emulator whose board's time nothing follows (host time, the simavr board host) needs the CPU
    on time: QEMU's LAN9118 holds about 6 frames and drops the rest silently, and on a 2-core machine
    an emulator descheduled for a millisecond by iperf or the kernel's networking then takes a burst
    of frames at once and loses some (measured, openmv-n6 rx at RTT 0.2 ms and 100 Mbit/s went from
    ~26 to ~88 Mbit/s with SCHED_FIFO). Priority 5 stays below the link's 10. An emulator the link
    follows (device time, the board's clock port) does not: descheduled, its clock stops and the link
    with it. SCHED_FIFO would even hang it: a guest that keeps its TCG thread busy holds a core against
    QEMU's own main loop at the same priority, and two such QEMUs on two cores (tests on two workers)
    never answered their monitor; so it gets a better nice value only.
    """
    if priority not in PRIORITIES:
        raise ValueError(f"priority {priority!r} is not one of {PRIORITIES}")

    def preexec() -> None:
        die_with_parent()
        # A caller's blocked or ignored signals are inherited across exec: a Ray worker's thread blocks
        # SIGINT, and an iperf started from it never heard the board's clock end its run (a sweep point
        # asked for 2 board s ran 31.8). Every child netrepro starts must be stoppable by its signals.
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_DFL)
        if priority == "realtime":
            with contextlib.suppress(OSError):
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(5))
                return
        if priority != "normal":
            with contextlib.suppress(OSError):
                os.nice(-10)

    return preexec


def spawn(argv: Sequence[str], *, priority: str = "normal", **popen: Any) -> subprocess.Popen:
    """Start a child that dies with netrepro, at `priority` (PRIORITIES) where permitted."""
    return subprocess.Popen(list(argv), preexec_fn=_die_with_parent_at(priority), **popen)


def spawn_console(argv: Sequence[str], *, timeout: float, priority: str = "normal") -> pexpect.spawn:
    """Start a child whose terminal is a board's console (read with pexpect); it dies with netrepro."""
    child = pexpect.spawn(argv[0], list(argv[1:]), encoding="utf-8", codec_errors="replace", timeout=timeout,
                          preexec_fn=_die_with_parent_at(priority), echo=False)
    child.delaybeforesend = None
    return child


@dataclass(frozen=True)
class Stopped:
    """How a child ended: its exit status (negative: the signal) and whether it ended within the grace period."""

    returncode: int | None
    graceful: bool


def stop(proc: subprocess.Popen | pexpect.spawn, grace_s: float = 3.0, sig: int | None = signal.SIGTERM) -> Stopped:
    """Ask a child to end with `sig` (None: it was already asked, e.g. over its monitor), kill it after
    grace_s, reap it and close what netrepro held of it (pipes, pty, console log)."""
    if isinstance(proc, pexpect.spawn):
        return _stop_console(proc, grace_s, sig)
    graceful = True
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            if sig is not None:
                proc.send_signal(sig)
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            graceful = False
            proc.kill()
            proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    return Stopped(proc.returncode, graceful)


def _stop_console(child: pexpect.spawn, grace_s: float, sig: int | None) -> Stopped:
    if sig is not None and child.isalive():
        with contextlib.suppress(Exception):
            child.kill(sig)
    with contextlib.suppress(Exception):
        child.expect(pexpect.EOF, timeout=grace_s)
    graceful = not child.isalive()
    if not graceful:
        child.terminate(force=True)
    with contextlib.suppress(Exception):
        child.close()
    if child.logfile_read:
        child.logfile_read.close()
    status = child.signalstatus
    return Stopped(-status if status else child.exitstatus, graceful)


def kill_now(proc: subprocess.Popen) -> None:
    """Last resort for a child whose owner was dropped without stopping it (a weakref finalizer)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
