"""The firmware's console shell, driven with pexpect (a `dut` in pytest-embedded's sense).

The firmware prints a one-line banner, then `netrepro> ` after every command. Output lines of
the form NAME=VALUE (opts, stats) and `KEY k=v k=v` events (IPERF, DISCARD) are parsed here.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import pexpect

from harness.core.errors import NetreproError

PROMPT = "netrepro> "
BANNER = re.compile(r"netrepro firmware board=(\S+) nic=(\S+) lwip=(\S+) profile=(\S+)\r?\n")
# Lines the firmware prints by itself when something finishes; they may land inside a command's output.
_EVENT = re.compile(r"^(IPERF|DISCARD|SOCK|UDP) (.*)$")
_FAULT = re.compile(r"\bFAULT[^\r\n]*")  # \b: not the DEFAULT_* options `opts` lists
# QEMU's own note when -icount's align finds the guest behind the wall clock. QEMU prints it on the stdout the
# serial console shares, so it can land inside a line the firmware is printing (seen: "mbox_fWarning: The guest
# is now late by 4.0 to 5.0 seconds" then "ull=0 ..."). It is taken out, newline and all, before a line is read.
_QEMU_NOTE = r"Warning: The guest is now late by [\d.]+ to [\d.]+ seconds\r?\n"


@dataclass(frozen=True)
class Banner:
    board: str
    nic: str
    lwip: str
    profile: str


@dataclass(frozen=True)
class Event:
    """An asynchronous report line such as `IPERF role=server bytes=... ms=...`."""

    kind: str
    fields: dict[str, str]

    def number(self, key: str) -> int:
        return int(self.fields[key])


class Console:
    """Send commands to the firmware and read their answers; every wait has a timeout."""

    def __init__(self, child: pexpect.spawn, log_path: Path) -> None:
        self.child = child
        self.log_path = log_path
        self.banner: Banner | None = None
        self.boot_seconds: float | None = None
        self.events: list[Event] = []

    def expect(self, pattern: str | re.Pattern[str], timeout: float) -> re.Match[str]:
        """Wait for a regex; a crash, a fault or the timeout is a one-line error naming the log."""
        try:
            self.child.expect([pattern, _FAULT, pexpect.EOF], timeout=timeout)
        except pexpect.TIMEOUT:
            raise NetreproError(f"firmware did not print /{_pattern_text(pattern)}/ within {timeout:g} s",
                                f"see the console log {self.log_path}") from None
        match = self.child.match
        if match is pexpect.EOF:
            raise NetreproError("the emulator exited unexpectedly", f"see the console log {self.log_path}")
        if match.re is _FAULT:
            raise NetreproError(f"firmware fault: {self._rest_of_line(match.group(0)).strip()}",
                                f"see the console log {self.log_path}")
        return match

    def _rest_of_line(self, start: str) -> str:
        """The whole FAULT line: the match may come before a slow board (simavr) has printed all of it."""
        if self.child.after is pexpect.EOF or not isinstance(self.child.after, str):
            return start
        try:
            self.child.expect([r"\r?\n", pexpect.EOF], timeout=1.0)
        except pexpect.TIMEOUT:
            return start + str(self.child.buffer or "")
        return start + (self.child.before if isinstance(self.child.before, str) else "")

    def wait_boot(self, timeout: float) -> Banner:
        start = time.monotonic()
        match = self.expect(BANNER, timeout)
        self.banner = Banner(*match.groups())
        self.expect(re.escape(PROMPT), timeout)
        self.boot_seconds = time.monotonic() - start
        return self.banner

    def command(self, line: str, timeout: float = 10.0) -> str:
        """Run one shell command; returns its output without the echo and the prompt."""
        self.child.send(line + "\r")
        self.expect(re.escape(PROMPT), timeout)
        out = re.sub(_QEMU_NOTE, "", self.child.before).replace("\r", "")
        lines = out.split("\n")
        if lines and lines[0].strip() == line.strip():
            lines = lines[1:]
        text = "\n".join(self._take_events(lines)).strip("\n")
        error = next((ln for ln in text.splitlines() if ln.startswith("ERROR: ")), None)
        if error:
            raise NetreproError(f"firmware refused '{line}': {error[7:]}", f"see {self.log_path}")
        return text

    def _take_events(self, lines: list[str]) -> list[str]:
        """Keep event lines found in a command's output for wait_event; return the rest."""
        rest = []
        for line in lines:
            match = _EVENT.match(line.strip())
            if match:
                self.events.append(_event(match.group(1), match.group(2)))
            else:
                rest.append(line)
        return rest

    def wait_event(self, kind: str, timeout: float, **fields: str) -> Event:
        """The next `KIND k=v ...` line with these field values that the firmware printed by itself."""
        deadline = time.monotonic() + timeout
        while True:
            for event in self.events:
                if event.kind == kind and all(event.fields.get(k) == v for k, v in fields.items()):
                    self.events.remove(event)
                    return event
            # the note's start is only ever read as the note: a line cut by it is not taken before its end arrives
            match = self.expect(re.compile(rf"{kind} ((?:{_QEMU_NOTE}|(?!Warning: The guest)[^\r\n])*)\r?\n"),
                                max(0.0, deadline - time.monotonic()))
            self.events.append(_event(kind, re.sub(_QEMU_NOTE, "", match.group(1))))

    def opts(self) -> dict[str, int]:
        """The effective lwIP options, as the compiler saw them."""
        return {k: int(v) for k, v in _pairs(self.command("opts")).items() if k != "FORCED"}

    def forced_options(self) -> list[str]:
        forced = _pairs(self.command("opts")).get("FORCED", "")
        return [name for name in forced.split(",") if name]

    def set_tick_dilation(self, dilation: float) -> int:
        """Stretch the board's millisecond to `dilation` ms of its emulated clock (device time);
        returns the timer period the firmware chose."""
        out = self.command(f"tick {round(dilation * 1000)}")
        match = re.search(r"TICK dilation_milli=(\d+) period=(\d+)", out)
        if not match:
            raise NetreproError(f"the firmware did not confirm its tick: {out.strip()[:80]!r}",
                                "rebuild the firmware (its `tick` command sets device time)")
        return int(match.group(2))

    def clock_port(self, on: bool) -> None:
        """Have the tick send the board's clock on its clock port (device time: the link follows it)."""
        out = self.command(f"clock {'on' if on else 'off'}")
        if f"CLOCK {'on' if on else 'off'}" not in out:
            raise NetreproError(f"the firmware did not switch its clock port: {out.strip()[:80]!r}",
                                "rebuild the firmware (its `clock` command sends the board's clock to the link)")

    def cpu_load(self, reset: bool = False) -> dict[str, int]:
        """The board's own measure of its core: busy parts per million, idle and total µs of its time."""
        out = self.command("cpu reset" if reset else "cpu")
        match = re.search(r"CPU busy_ppm=(\d+) idle_us=(\d+) total_us=(\d+)", out)
        if not match:
            raise NetreproError(f"the firmware did not report its CPU load: {out.strip()[:80]!r}",
                                "rebuild the firmware (its `cpu` command measures the core's load)")
        return dict(zip(("busy_ppm", "idle_us", "total_us"), map(int, match.groups()), strict=True))

    def threads(self) -> dict[str, object] | None:
        """The kernel's threads and the lwIP port's mailbox counters (a NO_SYS 0 firmware's `threads`,
        firmware/apps/threads.c): {"threads": [{name, prio, ...}], "totals": {idle_us, mbox_full, ...}};
        None for a firmware without the command (NO_SYS 1)."""
        if not re.search(r"^threads ", self.command("help"), re.M):
            return None
        out = self.command("threads")
        threads = []
        totals: dict[str, int] = {}
        for line in out.splitlines():
            kind, _, rest = line.strip().partition(" ")
            fields = dict(re.findall(r"(\w+)=(\S+)", rest))
            values = {k: int(v) if v.isdigit() else v for k, v in fields.items()}
            if kind == "THREAD":
                threads.append(values)
            elif kind == "THREADS":
                totals = {k: v for k, v in values.items() if isinstance(v, int)}
        return {"threads": threads, "totals": totals}

    def uptime_ms(self) -> int:
        """Milliseconds since boot, on the board's own clock."""
        return int(_pairs(self.command("uptime"))["ms"])

    def stats(self, mode: str = "") -> dict[str, int]:
        """The firmware's counters (`stats`), or only what is in use now (mode "used"; "reap" frees the
        TIME_WAIT PCBs first: firmware/apps/cmd_stats.c)."""
        line = f"stats {mode}".strip()
        return {k: int(v) for k, v in _pairs(self.command(line)).items() if v.lstrip("-").isdigit()}

    def ip(self, address: str | None = None, prefix: int = 24, gateway: str | None = None) -> dict[str, str]:
        """Read the interface configuration, or set it when an address is given."""
        line = "ip" if address is None else f"ip {address}/{prefix}" + (f" {gateway}" if gateway else "")
        return dict(re.findall(r"(\w+)=(\S+)", self.command(line)))


def _event(kind: str, rest: str) -> Event:
    return Event(kind, dict(re.findall(r"(\w+)=(\S+)", rest)))


def _pairs(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _pattern_text(pattern: str | re.Pattern[str]) -> str:
    return pattern.pattern if isinstance(pattern, re.Pattern) else pattern
