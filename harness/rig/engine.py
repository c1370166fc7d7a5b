"""The engine: boots a firmware ELF in QEMU (controlled over its human monitor) or in the simavr board host,
its console on a pty.

The NIC's frames leave QEMU through a unix datagram socket (`-netdev dgram`), so the link can
sit between the board and the peer. QEMU binds `local` and sends every frame to `remote`.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pexpect

from harness.core.errors import NetreproError
from harness.core.native import build_tool
from harness.core.process import spawn_console, stop
from harness.rig.console import Console
from harness.rig.devicetime import DeviceTime
from harness.rig.monitor import HumanMonitor, MonitorTimeout, run_state
from harness.rig.platform import Platform


@dataclass(frozen=True)
class NicBackend:
    """Where the board meets the link: the NIC's two unix datagram socket paths, and the socket the
    link takes the board's clock from (device time; None: the link runs on wall / D)."""

    local: Path   # QEMU binds this
    remote: Path  # the link binds this; QEMU sends frames here
    clock: Path | None = None  # the link listens here; QEMU connects the board's clock port to it


class EngineProcess:
    """What every engine shares: one firmware image run by one child process whose terminal is the console."""

    def __init__(self, platform: Platform, elf: Path, run_dir: Path, sock_dir: Path,
                 nic: NicBackend | None = None, time: DeviceTime | None = None) -> None:
        self.platform = platform
        self.elf = elf
        self.run_dir = run_dir
        self.sock_dir = sock_dir
        self.nic = nic
        self.time = time or DeviceTime("host")
        self.child: pexpect.spawn | None = None

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    def start(self, timeout: float = 30.0) -> Console:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def status(self) -> str:
        raise NotImplementedError

    def clock_report(self) -> dict[str, float] | None:
        """How closely a self-paced engine tracked the wall clock (None: nothing to report)."""
        return None

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class QemuEngine(EngineProcess):
    """One QEMU process running one firmware image; a context manager that always cleans up."""

    def __init__(self, platform: Platform, elf: Path, run_dir: Path, sock_dir: Path,
                 nic: NicBackend | None = None, time: DeviceTime | None = None) -> None:
        super().__init__(platform, elf, run_dir, sock_dir, nic, time)
        self.monitor_path = sock_dir / "monitor.sock"
        self.monitor: HumanMonitor | None = None

    def argv(self) -> list[str]:
        engine = self.platform.engine
        binary = shutil.which(engine.binary)
        if binary is None:
            raise NetreproError(f"{engine.binary} not found",
                                f"run ./tools/bootstrap {self.platform.name} to install QEMU")
        argv = [binary, "-M", engine.machine, "-kernel", str(self.elf), "-display", "none",
                "-monitor", f"unix:{self.monitor_path},server=on,wait=off", "-serial", "stdio"]
        if engine.cpu is not None:
            argv += ["-cpu", engine.cpu]
        if engine.memory is not None:
            argv += ["-m", engine.memory]
        argv += self._nic_args() + self._clock_args() + self.time.qemu_args() + list(engine.extra_args)
        return argv

    @property
    def sends_clock(self) -> bool:
        """Whether the board sends its clock to the link: device time, a clock port, a link listening."""
        return self.platform.sends_clock(self.time) and self.nic is not None and self.nic.clock is not None

    def _clock_args(self) -> list[str]:
        if not self.sends_clock:
            return []
        assert self.nic is not None and self.platform.clock_port is not None
        # the console is serial 0 (-serial stdio); the clock port is the platform's next one
        if self.platform.clock_port.serial != 1:
            raise NetreproError(f"{self.platform.path}: clock_port.serial must be 1 (the console is serial 0)",
                                "put the board's clock on QEMU's second serial port")
        return ["-chardev", f"socket,id=nrclock,path={self.nic.clock}", "-serial", "chardev:nrclock"]

    def _nic_args(self) -> list[str]:
        if self.nic is None:
            return ["-nic", "none"]
        netdev = (f"dgram,id=net0,local.type=unix,local.path={self.nic.local},"
                  f"remote.type=unix,remote.path={self.nic.remote}")
        model = self.platform.nic.qemu_model
        nic = f"nic,netdev=net0,macaddr={self.platform.nic.mac}" + (f",model={model}" if model else "")
        return ["-netdev", netdev, "-net", nic]

    def start(self, timeout: float = 30.0) -> Console:
        """Start QEMU and return the firmware console once the boot banner and prompt are seen."""
        argv = self.argv()
        (self.run_dir / "qemu-cmdline.txt").write_text(" ".join(argv) + "\n")
        log = open(self.run_dir / "console.log", "w", encoding="utf-8", errors="replace")  # noqa: SIM115
        self.child = spawn_console(argv, timeout=timeout, priority=self.priority())
        self.child.logfile_read = log
        self.monitor = self._connect_monitor(timeout)
        console = Console(self.child, self.run_dir / "console.log")
        console.wait_boot(timeout)
        if self.time.icount_shift is not None:  # the core runs at host_mips: the board's ms lasts D ms
            console.set_tick_dilation(self.time.dilation)
        if self.sends_clock:
            console.clock_port(True)
        return console

    def priority(self) -> str:
        """The emulator's priority (harness.core.process.PRIORITIES): real-time where nothing follows the
        board's clock, a better nice value where the link does (a descheduled board then stops the link)."""
        if not self.time.favoured:
            return "normal"
        return "raised" if self.sends_clock else "realtime"

    def _connect_monitor(self, timeout: float) -> HumanMonitor:
        deadline = time.monotonic() + timeout
        while not self.monitor_path.exists():
            if self.child is not None and not self.child.isalive():
                raise NetreproError(f"QEMU exited at start: {self._exit_reason()}",
                                    f"see {self.run_dir / 'qemu-cmdline.txt'}")
            if time.monotonic() > deadline:
                raise NetreproError(f"QEMU did not open its monitor socket within {timeout:.0f} s",
                                    "check that the platform's machine exists in this QEMU")
            time.sleep(0.02)
        while True:
            monitor = HumanMonitor(self.monitor_path)
            try:
                monitor.connect_within(max(1.0, deadline - time.monotonic()))
                return monitor
            except MonitorTimeout as exc:  # QEMU's main loop never got the CPU to greet (a busy guest held it)
                raise NetreproError(f"QEMU did not answer on its monitor socket within {timeout:.0f} s",
                                    "the host is too busy for this board; run fewer emulators at once") from exc
            except OSError as exc:  # not listening yet (a loaded host), or it died
                if self.child is not None and self.child.isalive() and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                if self.child is not None and self.child.isalive():
                    raise NetreproError(f"QEMU's monitor socket did not take a connection within {timeout:.0f} s: "
                                        f"{exc}", "the host is too busy for this board; retry") from exc
                raise NetreproError(f"QEMU exited at start: {self._exit_reason()}",
                                    f"see {self.run_dir / 'qemu-cmdline.txt'}") from exc

    def _exit_reason(self) -> str:
        with contextlib.suppress(Exception):
            rest = self.child.read_nonblocking(4096, timeout=0.5) if self.child else ""
            return (rest.strip().splitlines() or ["no output"])[-1]
        return "no output"

    def status(self) -> str:
        """QEMU's run state as its monitor reports it ('running', 'paused', ...)."""
        if self.monitor is None:
            return "stopped"
        return run_state(self.monitor.command("info status"))

    def stop(self) -> None:
        """Quit QEMU (its monitor first, then signals); safe to call more than once. A QEMU that does not act on
        the monitor (seen with a guest spinning with interrupts off on a loaded host) is killed after the grace."""
        asked = False
        if self.monitor is not None:
            with contextlib.suppress(OSError):
                self.monitor.send("quit")
                asked = True
        if self.child is not None:
            stop(self.child, sig=None if asked else signal.SIGTERM)
            self.child = None
        if self.monitor is not None:
            self.monitor.close()
            self.monitor = None


class SimavrBoardHost(EngineProcess):
    """The Ethernut 2 board host (simavr + netrepro's XMEM bus and LAN91C111) running one AVR image.

    The host is netrepro's own C program, kept beside the platform description
    (platforms/<name>/*.c) and built against Debian's libsimavr on first use. It speaks the
    same datagram-socket protocol as QEMU's `-netdev dgram`, its stdout is the board's USART0,
    and its own messages (the start-up self-test, the exit summary with the clock-tracking
    figures) go to host.log in the run folder.
    """

    def __init__(self, platform: Platform, elf: Path, run_dir: Path, sock_dir: Path,
                 nic: NicBackend | None = None, time: DeviceTime | None = None) -> None:
        super().__init__(platform, elf, run_dir, sock_dir, nic, time)
        self.host_log = run_dir / "host.log"

    def host(self) -> Path:
        sources = sorted(self.platform.path.with_suffix("").glob("*.c"))
        if not sources:
            raise NetreproError(f"platform {self.platform.name} has no board host sources",
                                f"put them in {self.platform.path.with_suffix('')}/")
        if not Path("/usr/include/simavr/sim_avr.h").is_file():
            raise NetreproError("libsimavr-dev is not installed",
                                f"run ./tools/bootstrap {self.platform.name} to install simavr")
        return build_tool(self.platform.engine.binary, sources, libs=["-lsimavr"])

    def argv(self) -> list[str]:
        # Without a link (netrepro boot) the NIC still needs its socket; frames go nowhere.
        nic = self.nic or NicBackend(local=self.sock_dir / "board.sock", remote=self.sock_dir / "nowhere.sock")
        return [str(self.host()), "--elf", str(self.elf), "--local", str(nic.local), "--remote", str(nic.remote),
                "--mac", self.platform.nic.mac, "--freq", str(self.platform.firmware.cpu_hz),
                "--dilation", f"{self.time.dilation:.6f}"]

    def start(self, timeout: float = 30.0) -> Console:
        """Start the board host and return the firmware console once the banner and prompt are seen."""
        argv = self.argv()
        (self.run_dir / "engine-cmdline.txt").write_text(" ".join(argv) + "\n")
        log = open(self.run_dir / "console.log", "w", encoding="utf-8", errors="replace")  # noqa: SIM115
        # sh only redirects the host's stderr, then execs it: the pty carries USART0 alone.
        self.child = spawn_console(["/bin/sh", "-c", 'exec "$@" 2>>"$0"', str(self.host_log), *argv],
                                   timeout=timeout, priority="realtime" if self.time.favoured else "normal")
        self.child.logfile_read = log
        console = Console(self.child, self.run_dir / "console.log")
        try:
            console.wait_boot(timeout)
        except NetreproError:
            if not self.child.isalive():
                raise NetreproError(f"the board host exited at start: {self.host_message()}",
                                    f"see {self.host_log}") from None
            raise
        return console

    def host_message(self) -> str:
        """The host's last message (self-test failure, exit summary), or '' before it wrote any."""
        with contextlib.suppress(OSError):
            lines = self.host_log.read_text(errors="replace").strip().splitlines()
            return lines[-1].removeprefix("netrepro-ethernut: ") if lines else ""
        return ""

    def status(self) -> str:
        return "running" if self.child is not None and self.child.isalive() else "stopped"

    def stop(self) -> None:
        """SIGTERM the host (it prints its summary and unlinks its socket); safe to call more than once."""
        if self.child is None:
            return
        stop(self.child)
        self.child = None

    def clock_report(self) -> dict[str, float] | None:
        """How closely simulated time tracked the wall clock, from the host's exit summary."""
        return parse_host_summary(self.host_message())


def parse_host_summary(line: str) -> dict[str, float] | None:
    """The board host's exit summary as numbers (simulated/wall seconds, lag, late slices, frames)."""
    fields = {
        "simulated_s": r"simulated ([\d.]+) s", "wall_s": r"wall ([\d.]+) s",
        "drift_percent": r"\((-?[\d.]+)%\)", "mhz_equivalent": r"speed ([\d.]+) MHz",
        "max_lag_ms": r"max lag ([\d.]+) ms", "late_slices": r"(\d+) of \d+ 100-us slices",
        "slices": r"of (\d+) 100-us slices", "frames_tx": r"frames tx (\d+)", "frames_rx": r"\brx (\d+)",
        "rx_dropped_overrun": r"overrun (\d+)",
    }
    found = {key: re.search(pattern, line) for key, pattern in fields.items()}
    if not all(found.values()):
        return None
    return {key: float(m.group(1)) for key, m in found.items() if m}


Engine = EngineProcess

ENGINES: dict[str, type[EngineProcess]] = {"qemu": QemuEngine, "simavr": SimavrBoardHost}


def make_engine(platform: Platform, elf: Path, run_dir: Path, sock_dir: Path,
                nic: NicBackend | None = None, time: DeviceTime | None = None) -> Engine:
    """The engine the platform's description names."""
    kind = platform.engine.kind
    return ENGINES[kind](platform, elf, run_dir, sock_dir, nic, time)
