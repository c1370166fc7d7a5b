"""One run's whole rig: firmware build, peer namespace, link, and the board, torn down in reverse.

    with Session(platform, firmware, run_dir, link_spec) as rig:
        rig.console.command("iperf server")
        assert rig.ping()
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import BoardClockCounters, Link, LinkCounters, LinkSpec, capture_side, parse_rate
from harness.rig.build import Firmware
from harness.rig.console import Console
from harness.rig.devicetime import CLOCK_SUBTICKS_PER_MS, LAG_ALLOWANCE, DeviceTime
from harness.rig.engine import Engine, NicBackend, make_engine
from harness.rig.peer import TAP_NAME, Addresses, Namespace
from harness.rig.peer_timers import PeerTimers
from harness.rig.platform import Platform


def make_run_dir(root: Path | None, platform: str, profile: str) -> Path:
    """A new folder for one run's files, under root (default ./runs)."""
    root = root or Path("runs")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    run_dir = Path(tempfile.mkdtemp(prefix=f"{stamp}-{platform}-{profile}-", dir=_mkdir(root)))
    return run_dir.resolve()


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


# a session's socket folder: /tmp/nr-PID-XXXXXXXX, PID the process that made it (unix socket paths are short)
SOCKET_ROOT, SOCKET_DIR_PREFIX = Path("/tmp"), "nr-"


def remove_orphan_socket_dirs(root: Path = SOCKET_ROOT) -> list[Path]:
    """Remove the socket folders of this user's sessions whose process is gone: one killed outright (SIGKILL, the
    OOM killer, a Ray worker lost mid-run) could not remove its own. A folder whose process lives, or that another
    user owns, is left alone. Returns what was removed."""
    removed = []
    for folder in root.glob(f"{SOCKET_DIR_PREFIX}*-*"):
        pid = folder.name[len(SOCKET_DIR_PREFIX):].split("-", 1)[0]
        try:
            if not pid.isdigit() or folder.lstat().st_uid != os.getuid() or _alive(int(pid)):
                continue
        except OSError:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


class Session:
    """Namespace + link + board for one run; a context manager that leaves nothing behind.

    `capture_at` is the side of the link its capture is taken at, "device" or "peer" (harness.link.Link);
    `peer_quickack`: the peer ACKs every segment (a route's quickack), as a report's peer may have;
    `live_capture`: the link writes its capture as it goes instead of holding it in memory until it stops, for a
    capture analysed while it is written (harness.analysis.follow)."""

    def __init__(self, platform: Platform, firmware: Firmware, run_dir: Path, link_spec: LinkSpec,
                 addresses: Addresses | None = None, progress: Progress | None = None,
                 boot_timeout: float = 60.0, time: DeviceTime | None = None, capture_at: str = "device",
                 peer_quickack: bool = False, live_capture: bool = False) -> None:
        self.platform = platform
        self.firmware = firmware
        self.run_dir = run_dir
        self.link_spec = link_spec
        self.link_run = self.link_as_run(link_spec, platform)
        self.addresses = addresses or Addresses()
        self.progress = progress or Progress(quiet=True)
        self.boot_timeout = boot_timeout
        self.time = time or DeviceTime("host")
        self.capture_at = capture_side(capture_at)
        self.peer_quickack = peer_quickack
        self.live_capture = live_capture
        self.peer_timers: dict | None = None  # what PeerTimers.apply set, once the namespace is up
        self.sock_dir: Path | None = None
        self.namespace: Namespace | None = None
        self.link: Link | None = None
        self.engine: Engine | None = None
        self.console: Console | None = None
        self.link_counters: LinkCounters | None = None
        self.engine_clock: dict[str, float] | None = None

    @staticmethod
    def link_as_run(spec: LinkSpec, platform: Platform) -> LinkSpec:
        """The link as run: frames reach the stand-in NIC no faster than its wire, and leave it no faster
        (a 100 Mbit part cannot send at a gigabit preset's rate), whatever the preset; a frame the NIC
        cannot take when it is due is held or dropped as its ``rx_overflow`` says."""
        nic = platform.nic
        if nic.wire_rate is not None:
            wire = parse_rate(nic.wire_rate)
            spec = spec.paced_to_device(wire, nic.rx_burst_frames).sent_through_wire(wire)
        if nic.rx_overflow != "hold":
            spec = spec.overflowing_to_device(nic.rx_overflow, nic.overflow_frames)
        return spec

    def __enter__(self) -> Session:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def _start(self) -> None:
        # Unix socket paths are limited to 108 bytes, so they live in a short temp folder, named after
        # the process that made it (a folder left behind names its owner).
        remove_orphan_socket_dirs()
        self.sock_dir = Path(tempfile.mkdtemp(prefix=f"{SOCKET_DIR_PREFIX}{os.getpid()}-", dir=SOCKET_ROOT))
        # device time on QEMU: the link follows the board's own clock, sent on its clock port
        follows = self.platform.sends_clock(self.time)
        nic = NicBackend(local=self.sock_dir / "board.sock", remote=self.sock_dir / "link.sock",
                         clock=self.sock_dir / "clock.sock" if follows else None)
        self.progress.step("starting the peer namespace and the link")
        self.namespace = Namespace(self.run_dir).start()
        priority = {} if self.time.favoured else {"rt_priority": None, "nice": None}  # --no-realtime
        # a capture analysed while it is written (RunPlan.follows_capture) must reach the disk as it goes: the link
        # then hands it to its writer every full MiB and at least once a second of its time, not all at the end
        held = {"hold_capture_mib": 0} if self.live_capture else {}
        self.link = Link(self.link_run, device_sock=nic.remote,
                         device_remote=nic.local, run_dir=self.run_dir,
                         tap=TAP_NAME, prefix=self.namespace.prefix(), dilation=self.time.dilation,
                         board_clock=nic.clock, board_clock_per_ms=CLOCK_SUBTICKS_PER_MS,
                         capture_at=self.capture_at, **priority, **held)
        self.link.start(timeout=10.0)
        self.namespace.configure_tap(TAP_NAME, self.addresses)
        self.peer_timers = PeerTimers(self.time.dilation, self.peer_quickack).apply(self.namespace, self.addresses,
                                                                                    TAP_NAME)
        self.progress.step(f"booting {self.platform.name} ({self.firmware.profile.name}) on "
                           f"{self.platform.engine.kind} {self.platform.engine.machine}")
        self.engine = make_engine(self.platform, self.firmware.elf, self.run_dir, self.sock_dir, nic, self.time)
        self.console = self.engine.start(timeout=self.boot_timeout)
        self.console.ip(self.addresses.device, self.addresses.prefix, self.addresses.peer)
        (self.run_dir / "options.json").write_text(json.dumps(self.console.opts(), indent=2) + "\n")

    def realtime_priority(self) -> bool:
        """Whether the run's timekeeper had real-time priority (root only; without it, only device time keeps
        the figures independent of what else the host runs): the link where it follows the board's clock,
        else the emulator (harness.rig.engine.QemuEngine.priority)."""
        keeper = self.link if self.platform.sends_clock(self.time) else self.engine
        pid = keeper.pid if keeper is not None else None
        try:
            return pid is not None and os.sched_getscheduler(pid) == os.SCHED_FIFO
        except OSError:
            return False

    def clock_mark(self) -> BoardClockCounters | None:
        """Where the board's clock stands, as the link sees its ticks (None: the link runs on wall / D)."""
        if self.link is None or self.link.board_clock is None:
            return None
        return self.link.counters().board_clock

    def clock_sample(self) -> tuple[float, float, float] | None:
        """(this process's monotonic clock, the board's seconds, the link's wall seconds) at the board's
        last tick, for converting a stretch of wall time the peer measured (None: the link runs on wall / D)."""
        mark = self.clock_mark()
        return None if mark is None or not mark.ticks else (time.monotonic(), mark.board_s, mark.wall_s)

    def time_since(self, mark: BoardClockCounters | None) -> DeviceTime:
        """The run's time with the dilation the board really kept since `mark`: what turns a figure the
        peer timed on the wall clock into the board's time when the host could not keep the planned D."""
        now = self.clock_mark() if mark is not None else None
        if now is None or mark is None or now.board_s - mark.board_s < 0.05:
            return self.time
        return replace(self.time, dilation=(now.wall_s - mark.wall_s) / (now.board_s - mark.board_s))

    def alive(self, timeout: float = 10.0) -> dict[str, bool]:
        """Whether the board still answers its console and a ping from the peer (a soak's end).

        The ping crosses the run's own link, which loses frames on purpose (a soak's `--loss`), so one
        lost echo or ARP exchange must not read as a dead board: echoes for `timeout` board seconds,
        the first answer wins."""
        console = True
        try:
            assert self.console is not None
            self.console.uptime_ms()
        except (NetreproError, AssertionError):
            console = False
        return {"console": console, "ping": self.ping(timeout)}

    def ping(self, timeout: float = 2.0) -> bool:
        """Whether the board answers an echo from the peer within `timeout` seconds of its own time (it
        also leaves the board's address resolved)."""
        return self.answer_s(timeout) is not None

    def answer_s(self, timeout: float) -> float | None:
        """How many seconds of its own time the board took to answer an echo from the peer (None: not
        within `timeout`).

        The peer's ping waits on the wall clock, so it is sent again, a wall second at a time, until the
        board's clock has run `timeout`: a host that runs the board slower than planned delays the answer
        in wall time, not in the board's."""
        if self.namespace is None:
            return None
        board_s = self._board_clock()
        start, give_up = board_s(), time.monotonic() + self.time.wall_s(timeout) * LAG_ALLOWANCE + 5.0
        argv = ["ping", "-c", "1", "-W", "1", self.addresses.device]
        while True:
            answered = self.namespace.run(argv, timeout=6.0, check=False).returncode == 0
            waited = board_s() - start
            if answered:
                return round(waited, 3)
            if waited >= timeout or time.monotonic() >= give_up:
                return None

    def _board_clock(self) -> Callable[[], float]:
        """The board's own seconds, read the best way the run has: its ticks as the link sees them, else
        its console's uptime (host time has no ticks, and its board clock need not keep the wall's),
        else wall / D."""
        mark = self.clock_mark()
        if mark is not None and mark.ticks:
            return lambda: (self.clock_mark() or mark).board_s
        began = time.monotonic()

        def wall() -> float:
            return (time.monotonic() - began) / self.time.dilation

        try:
            assert self.console is not None
            offset = self.console.uptime_ms() / 1000 - wall()
        except (NetreproError, AssertionError):
            return wall

        def uptime() -> float:
            try:
                assert self.console is not None
                return self.console.uptime_ms() / 1000 - offset
            except (NetreproError, AssertionError):  # a console that stopped answering: the wall's estimate
                return wall()

        return uptime

    def close(self) -> None:
        """Stop the link (which writes its capture and counters), then the board, then the namespace.

        The link goes first: a frame the peer sends after the board has stopped (an ARP probe, a
        retransmitted FIN) has nowhere to go and would be counted as dropped, unreachable, in a
        run that lost nothing."""
        if self.link is not None:
            with contextlib.suppress(Exception):
                self.link_counters = self.link.stop()
            self.link = None
        if self.engine is not None:
            self.engine.stop()
            self.engine_clock = self.engine.clock_report()
            self.engine = None
        if self.namespace is not None:
            self.namespace.stop()
            self.namespace = None
        if self.sock_dir is not None:
            shutil.rmtree(self.sock_dir, ignore_errors=True)
            self.sock_dir = None

    def __exit__(self, *exc: object) -> None:
        self.close()
