"""The link process: build the C link, start it with the spec's settings, stop it and read its counters.

It follows every child's life cycle (harness.core.process): spawned with a death signal, stopped
with a grace period and reaped, and killed by a weakref finalizer if its owner is dropped.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.core import ethernet
from harness.core.errors import NetreproError
from harness.core.native import build_tool
from harness.core.process import Stopped, kill_now, spawn
from harness.core.process import stop as stop_child
from harness.link.capture import capture_side
from harness.link.counters import LinkCounters
from harness.link.settings import LINK_SETTINGS, c_defines
from harness.link.spec import LinkSpec

LINK_DIR = Path(__file__).resolve().parent / "c"  # the link's C units: a .c and a .h each, and main.c
SUN_PATH_MAX = 107  # usable bytes of a unix socket path
TUN_DEVICE = "/dev/net/tun"


def link_binary() -> Path:
    """The netrepro-link binary, built (and cached) on first use.

    Ethernet's sizes and the settings' table reach the C source as -D flags, so neither is
    written twice; a change to either builds a new binary (the flags are part of its name)."""
    ether = [f"-DNR_ETH_OVERHEAD={ethernet.OVERHEAD}", f"-DNR_ETH_MIN_FRAME={ethernet.MIN_FRAME}",
             f"-DNR_ETH_MAX_FRAME={ethernet.MAX_FRAME}"]
    return build_tool("netrepro-link", sorted(LINK_DIR.glob("*.c")), cflags=[*ether, *c_defines()],
                      libs=["-lm", "-pthread"], headers=sorted(LINK_DIR.glob("*.h")))


class Link:
    """One running link process; a context manager that never leaves the process behind.

    ``device_sock`` is bound by the link; ``device_remote`` is QEMU's ``local.path``. The
    peer side is either a tap created by the link (``tap="nr0"``, optionally ``tap_addr``
    such as "10.77.0.1/24" to configure and bring it up) or, for tests, a unix datagram
    pair (``peer_sock`` bound by the link, ``peer_remote`` where it sends).
    ``prefix`` is prepended to the command (e.g. nsenter arguments); it should exec the
    link rather than fork it, so that signals reach the link.

    The link's timing depends on waking up on time next to a busy QEMU, so it asks for
    SCHED_FIFO at ``rt_priority`` (default 10; it blocks when idle and its spin is
    CPU-budgeted) and, if that is not allowed, for ``nice`` (default -10); both need root
    or CAP_SYS_NICE. Where neither is allowed it says so in link.log and runs at the
    normal priority (less precise under load). None disables either request.

    In a VM, writing the capture to disk during the run stalls the vCPUs for milliseconds
    now and then, even from the link's writer thread; so the link keeps up to
    ``hold_capture_mib`` (default 256) MiB of capture in memory and writes it when it stops
    (beyond that it writes as it goes; 0 writes as it goes from the start). The files are
    complete after stop(); a link killed with SIGKILL loses what it held.

    The link dies with the thread that started it (PR_SET_PDEATHSIG): start it from a
    thread that lives as long as the run.

    ``capture_at`` is the side of the link the capture is taken at: "device" (the default) or
    "peer", where a user's own capture beside a real board is usually taken (harness/link/c/capture.h,
    "Capture:", says which frames each side sees and when it stamps them), or "both", each frame at
    each side in one file, which only timing a frame's passage wants (harness.link.ping).

    Files in run_dir: capture.pcap, drops.jsonl, link-stats.json, link.log (stderr).
    """

    def __init__(
        self,
        spec: LinkSpec,
        device_sock: str | Path,
        device_remote: str | Path,
        run_dir: str | Path,
        tap: str | None = None,
        peer_sock: str | Path | None = None,
        peer_remote: str | Path | None = None,
        prefix: Sequence[str] = (),
        *,
        tap_addr: str | None = None,
        tap_mtu: int | None = None,
        rt_priority: int | None = 10,
        nice: int | None = -10,
        hold_capture_mib: int = 256,
        dilation: float = 1.0,
        board_clock: str | Path | None = None,
        board_clock_per_ms: int = 1,
        extra_args: Sequence[str] = (),
        capture_at: str = "device",
    ) -> None:
        if (tap is None) == (peer_sock is None or peer_remote is None):
            raise NetreproError(
                "a link needs either a tap or a peer socket pair", "give tap= or peer_sock+peer_remote"
            )
        self.spec = spec
        self.device_sock = Path(device_sock)
        self.device_remote = Path(device_remote)
        self.run_dir = Path(run_dir)
        self.tap = tap
        self.peer_sock = Path(peer_sock) if peer_sock is not None else None
        self.peer_remote = Path(peer_remote) if peer_remote is not None else None
        self.prefix = list(prefix)
        self.tap_addr = tap_addr
        self.tap_mtu = tap_mtu
        self.rt_priority = rt_priority
        self.nice = nice
        self.hold_capture_mib = hold_capture_mib
        self.dilation = dilation  # device time: every setting and timestamp stays in the board's time
        self.board_clock = Path(board_clock) if board_clock is not None else None  # the board's tick socket
        self.board_clock_per_ms = board_clock_per_ms  # its ticks a board ms
        self.extra_args = list(extra_args)
        self.capture_at = capture_at if capture_at == "both" else capture_side(capture_at)
        self.proc: subprocess.Popen | None = None
        self._finalizer: weakref.finalize | None = None
        self.counters_at_stop: LinkCounters | None = None

    pcap_path = property(lambda self: self.run_dir / "capture.pcap")
    drops_path = property(lambda self: self.run_dir / "drops.jsonl")
    stats_path = property(lambda self: self.run_dir / "link-stats.json")
    log_path = property(lambda self: self.run_dir / "link.log")

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def command(self, binary: Path | None = None) -> list[str]:
        """The full command line (prefix included)."""
        cmd = [
            *self.prefix,
            str(binary or link_binary()),
            "--device-sock", str(self.device_sock),
            "--device-remote", str(self.device_remote),
        ]  # fmt: skip
        if self.tap is not None:
            cmd += ["--tap", self.tap]
            if self.tap_addr:
                cmd += ["--tap-addr", self.tap_addr]
            if self.tap_mtu:
                cmd += ["--tap-mtu", str(self.tap_mtu)]
        else:
            cmd += ["--peer-sock", str(self.peer_sock), "--peer-remote", str(self.peer_remote)]
        if self.dilation != 1.0:
            cmd += ["--dilation", f"{self.dilation:.9g}"]
        if self.board_clock is not None:  # link time follows the board's clock, not wall / D
            cmd += ["--board-clock", str(self.board_clock), "--board-clock-per-ms", str(self.board_clock_per_ms)]
        cmd += [
            "--to-device", self.spec.to_device.cli(),
            "--to-peer", self.spec.to_peer.cli(),
            "--pcap", str(self.pcap_path),
            "--capture-at", self.capture_at,
            "--drops", str(self.drops_path),
            "--stats", str(self.stats_path),
            "--die-with-parent",
        ]  # fmt: skip
        for s in LINK_SETTINGS:  # the link-wide settings are options of their own: --seed N, --snaplen N
            cmd += [f"--{s.name}", s.check.c_value(getattr(self.spec, s.field))]
        if self.hold_capture_mib:
            cmd += ["--hold-capture-mib", str(self.hold_capture_mib)]
        if self.rt_priority:
            cmd += ["--rt-priority", str(self.rt_priority)]
        if self.nice is not None:
            cmd += ["--nice", str(self.nice)]
        return cmd + self.extra_args

    def _check_paths(self) -> None:
        for path in (self.device_sock, self.device_remote, self.peer_sock, self.peer_remote):
            if path is not None and len(os.fsencode(str(path))) > SUN_PATH_MAX:
                raise NetreproError(
                    f"unix socket path too long ({len(str(path))} > {SUN_PATH_MAX} bytes): {path}",
                    "use a shorter run directory (e.g. under /tmp)",
                )

    def _check_tun(self) -> None:
        """Without root the link makes its tap in a user namespace, and opens the tun device as this user:
        Debian's udev makes it 0666 (a tap still needs CAP_NET_ADMIN, which only the namespace gives);
        a machine without udev leaves the kernel's 0600."""
        if self.tap is None or os.geteuid() == 0 or os.access(TUN_DEVICE, os.R_OK | os.W_OK):
            return
        try:
            mode = os.stat(TUN_DEVICE).st_mode & 0o777
        except OSError:
            raise NetreproError(f"{TUN_DEVICE} does not exist", "load the tun module: sudo modprobe tun") from None
        raise NetreproError(f"{TUN_DEVICE} is not usable without root here (mode {mode:04o}; Debian's is 0666)",
                            f"run once: sudo chmod 0666 {TUN_DEVICE}")

    def _log_line(self) -> str:
        try:
            lines = [line for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            lines = []
        return lines[-1].strip() if lines else "no message"

    def start(self, timeout: float = 10.0) -> Link:
        """Spawn the link and wait until it prints READY."""
        if self.proc is not None:
            raise NetreproError("this link was already started", "create a new Link for a new run")
        self._check_paths()
        self._check_tun()
        binary = link_binary()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.stats_path.unlink(missing_ok=True)
        with open(self.log_path, "wb") as log:
            try:
                self.proc = spawn(self.command(binary), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=log, close_fds=True)
            except OSError as exc:
                raise NetreproError(
                    f"cannot start the link: {exc}", f"check the command prefix {self.prefix}"
                ) from exc
        self._finalizer = weakref.finalize(self, kill_now, self.proc)
        try:
            self._wait_ready(timeout)
        except BaseException:
            self._end(1.0)
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        data = b""
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0:
                raise NetreproError(
                    f"the link did not become ready within {timeout:g} s",
                    f"see {self.log_path}: {self._log_line()}",
                )
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 256)
                if not chunk:
                    self.proc.wait()
                    raise NetreproError(
                        f"the link exited at start (status {self.proc.returncode}): {self._log_line()}",
                        f"see {self.log_path}",
                    )
                data += chunk
        if data.split(b"\n", 1)[0].strip() != b"READY":
            raise NetreproError(f"the link said {data!r} instead of READY", f"see {self.log_path}")

    def counters(self, timeout: float = 2.0) -> LinkCounters:
        """The counters now, without stopping the link (SIGUSR1 and a fresh stats file)."""
        if self.proc is None or self.proc.poll() is not None:
            raise NetreproError("the link is not running", "start it first")
        before = self._snapshot_number()
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._snapshot_number() > before:
                return LinkCounters.from_file(self.stats_path)
            time.sleep(0.002)
        raise NetreproError(f"the link did not write its stats within {timeout:g} s", f"see {self.log_path}")

    def _snapshot_number(self) -> int:
        try:
            return int(json.loads(self.stats_path.read_text()).get("snapshot", 0))
        except (OSError, ValueError):
            return 0

    def _end(self, grace_s: float) -> Stopped:
        """SIGTERM (the link then writes its files), SIGKILL after grace_s; reaped either way."""
        assert self.proc is not None
        stopped = stop_child(self.proc, grace_s)
        if self._finalizer is not None:
            self._finalizer.detach()
        return stopped

    def stop(self, timeout: float = 5.0) -> LinkCounters:
        """Stop the link (SIGTERM; SIGKILL if it hangs) and return its final counters."""
        if self.counters_at_stop is not None:
            return self.counters_at_stop
        if self.proc is None:
            raise NetreproError("the link was never started", "call start() first")
        already_exited = self.proc.poll() is not None
        stopped = self._end(timeout)
        status = stopped.returncode
        if not stopped.graceful:
            raise NetreproError(
                f"the link did not stop within {timeout:g} s and was killed", f"see {self.log_path}"
            )
        if status != 0:
            when = "during the run" if already_exited else "when stopped"
            raise NetreproError(
                f"the link exited {when} with status {status}: {self._log_line()}", f"see {self.log_path}"
            )
        self.counters_at_stop = LinkCounters.from_file(self.stats_path)
        return self.counters_at_stop

    def __enter__(self) -> Link:
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.stop()
        else:
            # the exception in flight is the one to report; the process is gone either way
            with contextlib.suppress(NetreproError):
                self.stop()
