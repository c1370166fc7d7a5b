"""The peer: a private network namespace where the Linux kernel is the board's TCP peer.

The namespace is held open by one sleeping process and vanishes with it, so nothing is left
in /run/netns or elsewhere if netrepro is killed. As root it is a plain network namespace;
otherwise it is made inside a user namespace that maps the user to root, so no privilege is
needed: what runs in it (ip, the link making its tap, iperf, the peer's services) has
CAP_NET_ADMIN there and nowhere else, and keeps the user's own uid and groups outside.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from harness.core.errors import NetreproError
from harness.core.process import spawn, stop

TAP_NAME = "nrtap0"


@dataclass(frozen=True)
class Addresses:
    """The run's IPv4 subnet: the peer's tap and the board; only reachable inside the namespace."""

    peer: str = "10.77.0.1"
    device: str = "10.77.0.2"
    prefix: int = 24


class Namespace:
    """A network namespace for one run; a context manager that always removes it."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.rootless = os.geteuid() != 0
        self.holder: subprocess.Popen | None = None

    def start(self, timeout: float = 5.0) -> Namespace:
        for tool in ("unshare", "nsenter", "ip"):
            if shutil.which(tool) is None:
                raise NetreproError(f"{tool} not found", "run ./tools/bootstrap (util-linux, iproute2)")
        flags = ["--user", "--map-root-user", "--net"] if self.rootless else ["--net"]
        self.holder = spawn(["unshare", *flags, "--", "sleep", "infinity"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
        try:
            self._wait_entered(timeout)
            self.run(["ip", "link", "set", "lo", "up"])
            # IPv6 router and neighbour chatter would only add noise to every capture.
            self.run(["sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6 && "
                                  "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6"], check=False)
        except BaseException:
            # the caller never gets this namespace to stop; left to die with netrepro, the holder would be
            # a zombie where the machine's init does not reap orphans
            self.stop()
            raise
        return self

    def _wait_entered(self, timeout: float) -> None:
        assert self.holder is not None
        ours = os.readlink("/proc/self/ns/net")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.holder.poll() is not None:
                err = self.holder.stderr.read().decode(errors="replace").strip() if self.holder.stderr else ""
                hint = ("enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1)"
                        if self.rootless else "check that this kernel supports network namespaces")
                raise NetreproError(f"could not create a network namespace: {err or 'unshare failed'}", hint)
            try:
                # unshare writes the user namespace's uid map after it has made the namespaces and before it
                # becomes `sleep`: entered earlier, a rootless `ip` runs unmapped, without CAP_NET_ADMIN (EPERM)
                holder = f"/proc/{self.holder.pid}"
                if Path(f"{holder}/comm").read_text().strip() == "sleep" and os.readlink(f"{holder}/ns/net") != ours:
                    return
            except OSError:
                pass
            time.sleep(0.005)
        raise NetreproError("the network namespace did not come up in time", "retry; the machine may be overloaded")

    def prefix(self) -> list[str]:
        """The command prefix that runs a program inside the namespace."""
        if self.holder is None:
            raise NetreproError("namespace is not started", "call start() first")
        # --preserve-credentials: entering the user namespace keeps netrepro's own (mapped) uid and
        # groups; without it nsenter calls setgroups, which an unprivileged user may not.
        user = ["--user", "--preserve-credentials"] if self.rootless else []
        return ["nsenter", "--target", str(self.holder.pid), *user, "--net", "--"]

    def run(self, argv: list[str], timeout: float = 10.0, check: bool = True) -> subprocess.CompletedProcess:
        try:
            proc = subprocess.run([*self.prefix(), *argv], capture_output=True, text=True, timeout=timeout,
                                  check=False)
        except subprocess.TimeoutExpired:
            raise NetreproError(f"'{' '.join(argv)}' in the namespace took over {timeout:g} s", "retry") from None
        if check and proc.returncode != 0:
            raise NetreproError(f"'{' '.join(argv)}' failed in the namespace: {proc.stderr.strip()}",
                                "see the run folder")
        return proc

    def popen(self, argv: list[str], **kwargs: object) -> subprocess.Popen:
        """Start a long-running program inside the namespace; it dies if netrepro dies.

        It runs at a raised priority where permitted (harness.core.process.PRIORITIES): the peer stands for a PC
        that has its own CPU, but here it shares the host with the boards' emulators (raised) and links
        (real-time); at normal priority, boards beside it on two cores starved the peer's application in wall
        time and its sender paused where the PC's would not (docs/device-time.md)."""
        return spawn([*self.prefix(), *argv], **{"priority": "raised", **kwargs})

    def configure_tap(self, name: str, addresses: Addresses) -> None:
        """Address the tap the link created and bring it up."""
        self.run(["ip", "addr", "add", f"{addresses.peer}/{addresses.prefix}", "dev", name])
        self.run(["ip", "link", "set", name, "up"])

    def stop(self) -> None:
        if self.holder is not None:
            stop(self.holder, grace_s=2.0)
            if self.holder.stderr:
                self.holder.stderr.close()
            self.holder = None

    def __enter__(self) -> Namespace:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
