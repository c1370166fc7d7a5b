"""The engine: boots a firmware ELF in QEMU, controlled over QMP, its console on a pty.

The NIC's frames leave QEMU through a unix datagram socket (`-netdev dgram`), so the link can
sit between the board and the peer. QEMU binds `local` and sends every frame to `remote`.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pexpect
from qemu.qmp.legacy import QEMUMonitorProtocol

from harness.console import Console
from harness.errors import NetreproError
from harness.platform import Platform
from harness.process import die_with_parent_favoured


@dataclass(frozen=True)
class NicBackend:
    """Where the board's NIC meets the link: two unix datagram socket paths."""

    local: Path   # QEMU binds this
    remote: Path  # the link binds this; QEMU sends frames here


class QemuEngine:
    """One QEMU process running one firmware image; a context manager that always cleans up."""

    def __init__(self, platform: Platform, elf: Path, run_dir: Path, sock_dir: Path,
                 nic: NicBackend | None = None) -> None:
        self.platform = platform
        self.elf = elf
        self.run_dir = run_dir
        self.qmp_path = sock_dir / "qmp.sock"
        self.nic = nic
        self.child: pexpect.spawn | None = None
        self.qmp: QEMUMonitorProtocol | None = None

    def argv(self) -> list[str]:
        engine = self.platform.engine
        binary = shutil.which(engine["binary"])
        if binary is None:
            raise NetreproError(f"{engine['binary']} not found", "run ./tools/bootstrap to install QEMU")
        argv = [binary, "-M", engine["machine"], "-kernel", str(self.elf), "-display", "none",
                "-monitor", "none", "-serial", "stdio", "-qmp", f"unix:{self.qmp_path},server=on,wait=off"]
        if "memory" in engine:
            argv += ["-m", str(engine["memory"])]
        argv += self._nic_args() + list(engine.get("extra_args", []))
        return argv

    def _nic_args(self) -> list[str]:
        if self.nic is None:
            return ["-nic", "none"]
        netdev = (f"dgram,id=net0,local.type=unix,local.path={self.nic.local},"
                  f"remote.type=unix,remote.path={self.nic.remote}")
        return ["-netdev", netdev, "-net", f"nic,netdev=net0,macaddr={self.platform.nic['mac']}"]

    def start(self, timeout: float = 30.0) -> Console:
        """Start QEMU and return the firmware console once the boot banner and prompt are seen."""
        argv = self.argv()
        (self.run_dir / "qemu-cmdline.txt").write_text(" ".join(argv) + "\n")
        log = open(self.run_dir / "console.log", "w", encoding="utf-8", errors="replace")  # noqa: SIM115
        self.child = pexpect.spawn(argv[0], argv[1:], encoding="utf-8", codec_errors="replace",
                                   timeout=timeout, preexec_fn=die_with_parent_favoured, echo=False)
        self.child.logfile_read = log
        self.child.delaybeforesend = None
        self.qmp = self._connect_qmp(timeout)
        console = Console(self.child, self.run_dir / "console.log")
        console.wait_boot(timeout)
        return console

    def _connect_qmp(self, timeout: float) -> QEMUMonitorProtocol:
        deadline = time.monotonic() + timeout
        while not self.qmp_path.exists():
            if self.child is not None and not self.child.isalive():
                raise NetreproError(f"QEMU exited at start: {self._exit_reason()}",
                                    f"see {self.run_dir / 'qemu-cmdline.txt'}")
            if time.monotonic() > deadline:
                raise NetreproError(f"QEMU did not open its QMP socket within {timeout:.0f} s",
                                    "check that the platform's machine exists in this QEMU")
            time.sleep(0.02)
        qmp = QEMUMonitorProtocol(str(self.qmp_path))
        qmp.connect()
        return qmp

    def _exit_reason(self) -> str:
        with contextlib.suppress(Exception):
            rest = self.child.read_nonblocking(4096, timeout=0.5) if self.child else ""
            return (rest.strip().splitlines() or ["no output"])[-1]
        return "no output"

    def status(self) -> str:
        """QEMU's run state as QMP reports it ('running', 'paused', ...)."""
        if self.qmp is None:
            return "stopped"
        return str(self.qmp.cmd("query-status")["status"])

    def stop(self) -> None:
        """Quit QEMU (QMP first, then signals); safe to call more than once."""
        if self.qmp is not None:
            with contextlib.suppress(Exception):
                self.qmp.cmd("quit")
            with contextlib.suppress(Exception):
                self.qmp.close()
            self.qmp = None
        if self.child is not None:
            with contextlib.suppress(Exception):
                self.child.expect(pexpect.EOF, timeout=3)
            if self.child.isalive():
                self.child.terminate(force=True)
            with contextlib.suppress(Exception):
                self.child.close()
            if self.child.logfile_read:
                self.child.logfile_read.close()
            self.child = None

    def __enter__(self) -> QemuEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
