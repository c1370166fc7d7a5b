"""The leak check: what a run's connections took from the board and did not give back.

The firmware lists what is in use now (`stats used`, firmware/apps/cmd_stats.c): the heap's bytes
(`mem.used`), every memp pool's elements (`memp.NAME.used`: PBUF_POOL, PBUF, TCP_PCB, TCP_SEG, ...), the
NIC driver's own buffers (`nic.buf.NAME`: the LAN91C111's chip pages, nvnetdrv's RX buffers lent to lwIP),
the TCP PCBs by state and the ARP cache's entries. The check reads that before the workload, with the
board's servers already listening, and again once the workload's connections have closed; every counter
above its first reading is a leak, named with its pool and count.

What a closed connection legitimately still holds is accounted for, and named under `held`, not leaks:

- TIME_WAIT: lwIP keeps the PCB of a connection the board closed first for 2 * TCP_MSL (120 s of the
  board's time by default, minutes of wall time in device time). The check does not wait for it:
  `stats reap` frees those PCBs as their expiry would (tcp_abort() on a TIME_WAIT PCB only unlinks and
  frees it), so their TCP_PCB elements must be back like everything else, and the report says how many.
- Connections still closing (FIN_WAIT_*, CLOSING, LAST_ACK) end within a round trip, and lwIP's TCP
  timer holds one SYS_TIMEOUT until its next tick (250 ms) finds no PCB left: the check reads again until
  nothing is above its baseline, for at most SETTLE_BOARD_S of the board's time (its clock stamps every
  reading, so a host running it slower than planned does not cut the wait short). A connection still
  open then (ESTABLISHED, CLOSE_WAIT: an application that never closed it) is a leak, with its pools.
- On a lossy link the board's FIN, or the peer's ACK of it, can be lost: the connection then ends only
  when lwIP's RTO sends the FIN again, seconds of the board's time later. The firmware says how long the
  longest such wait still is (`tcp.retx.ms`); the check waits for that retransmission and its answer,
  try after try, up to RETRANSMIT_WAIT_BOARD_S of the board's time, and says it did (`fin_retransmit`).
- The listening PCBs of the board's servers (the echo service opens one at boot, the workload's iperf
  server is started before the baseline) stay open by design: they are in both readings.
- The ARP entry for the peer is a slot of lwIP's static ARP table, not pool memory.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from harness.rig.devicetime import LAG_ALLOWANCE

SETTLE_BOARD_S = 0.6  # the longest the check waits for closing connections and the TCP timer (board time)
POLL_BOARD_S = 0.1    # between two readings while it waits (board time)
# The longest the check waits for a closing connection's lost FIN to be sent again (board time): lwIP's
# RTO starts at 3 s before a round trip is measured and doubles each try, so this covers two tries.
RETRANSMIT_WAIT_BOARD_S = 12.0
_DONE_STATES = ("CLOSED", "LISTEN", "TIME_WAIT")  # PCB states that are not a connection still open
_PCB_KEY = "tcp.pcb."
# What the board legitimately holds once the connections closed: name -> (the name for one, why it is no leak).
_HELD = {
    "TIME_WAIT PCBs reaped": ("TIME_WAIT PCB reaped", "closed connections lwIP keeps for 2 * TCP_MSL; freed by "
                                                      "the check as their expiry would, their memory back in TCP_PCB"),
    "listening PCBs": ("listening PCB", "the board's servers, listening since before the workload (in both "
                                        "readings)"),
    "ARP entries": ("ARP entry", "the peer's address in lwIP's static ARP table: no pool memory"),
}


class StatsReader(Protocol):
    """What the check needs of the board's console (harness.rig.console.Console)."""

    def stats(self, mode: str = "") -> dict[str, int]: ...


@dataclass(frozen=True)
class Usage:
    """One reading of what the board holds: `stats used` (or `stats reap`) parsed."""

    counters: dict[str, int]  # "mem.used" (heap bytes), "memp.NAME.used" (elements), "nic.buf.NAME" (buffers)
    pcbs: dict[str, int]      # TCP PCBs by state: LISTEN, TIME_WAIT, CLOSED (bound), ESTABLISHED, ...
    arp_entries: int = 0
    reaped: int = 0           # TIME_WAIT PCBs `stats reap` freed just before this reading
    board_ms: int = 0         # the board's clock (sys_now) at the reading
    retransmit_in_ms: int | None = None  # a closing connection's wait for its FIN's next retransmission

    @classmethod
    def parse(cls, stats: dict[str, int]) -> Usage:
        counters = {k: v for k, v in stats.items() if _is_memory(k)}
        pcbs = {k.removeprefix(_PCB_KEY): v for k, v in stats.items()
                if k.startswith(_PCB_KEY) and k != f"{_PCB_KEY}reaped"}
        return cls(counters, pcbs, stats.get("etharp.entries", 0), stats.get(f"{_PCB_KEY}reaped", 0),
                   stats.get("board.ms", 0), stats.get("tcp.retx.ms"))

    @property
    def counts_memory(self) -> bool:
        """Whether the firmware keeps heap or pool counters at all (LWIP_STATS, MEM_STATS, MEMP_STATS)."""
        return any(k == "mem.used" or k.startswith("memp.") for k in self.counters)

    @property
    def open_connections(self) -> dict[str, int]:
        """Connections not yet closed, by state."""
        return {state: n for state, n in self.pcbs.items() if n and state not in _DONE_STATES}


@dataclass(frozen=True)
class Leak:
    """A counter above its level before the workload once the connections closed."""

    name: str    # the memp pool (PBUF_POOL, TCP_PCB, ...), "heap", or "nic.NAME" (the driver's buffers)
    count: int   # how many were not given back, in unit
    unit: str    # "elements", "bytes" or "buffers"
    before: int
    after: int
    note: str = ""  # what holds them, where the readings say (connections still open)

    def describe(self) -> str:
        note = f"; {self.note}" if self.note else ""
        return f"{self.name}: {self.count} {self.unit} not returned ({self.before} before, {self.after} after{note})"


@dataclass(frozen=True)
class Held:
    """What the board legitimately still holds after the connections closed, and why it is no leak."""

    name: str
    count: int
    why: str


@dataclass
class LeakReport:
    """result.json's `leaks`: the check's outcome."""

    checked: bool
    leaks: list[Leak] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    open_connections: dict[str, int] = field(default_factory=dict)
    reason: str = ""       # why it could not check
    reads: int = 0         # readings after the workload until everything was back (or the wait ended)
    seconds: float = 0.0   # wall time the check added to the run
    board_s: float = 0.0   # the board's time from the first reading after the workload to the last
    fin_retransmit: bool = False  # it waited for the board to send a lost FIN again (a lossy link)
    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.checked and not self.leaks

    def summary(self) -> str:
        """One line: the leaks, or that everything came back, and what is held."""
        if not self.checked:
            return f"not checked: {self.reason}"
        held = ", ".join(f"{h.count} {h.name if h.count != 1 else _HELD[h.name][0]}" for h in self.held)
        waited = (f", {self.board_s:g} s of the board's time waiting for a lost FIN to be sent again"
                  if self.fin_retransmit else "")
        tail = (f"; held: {held}" if held else "") + f"; check {self.seconds:g} s{waited}"
        if self.leaks:
            return "; ".join(leak.describe() for leak in self.leaks) + tail
        return f"none: {_what_came_back(self.after)} back where they were{tail}"

    def short(self) -> str:
        """The leaks as "PBUF_POOL 3 elements, heap 40 bytes", or why it did not check."""
        if not self.checked:
            return f"not checked: {self.reason}"
        return _listed(self.leaks)

    def expect_no_leaks(self) -> None:
        """pytest: fail with every leak named (pool and count) when the run did not give everything back."""
        if not self.checked:
            raise AssertionError(f"the leak check did not run: {self.reason}")
        if self.leaks:
            raise AssertionError("the board did not get back what the run took: "
                                 + "; ".join(leak.describe() for leak in self.leaks))


@dataclass
class LeakCheck:
    """The baseline, read as it is made; `finish` waits for the connections to close and accounts."""

    console: StatsReader
    wall_s: Callable[[float], float]  # board seconds -> wall seconds (DeviceTime.wall_s)
    before: Usage
    spent_s: float

    @classmethod
    def start(cls, console: StatsReader, wall_s: Callable[[float], float]) -> LeakCheck:
        began = time.monotonic()
        before = Usage.parse(console.stats("used"))
        return cls(console, wall_s, before, time.monotonic() - began)

    def finish(self, settle_board_s: float = SETTLE_BOARD_S) -> LeakReport:
        """Account; `settle_board_s`: the longest to wait for what the board frees by itself (board time)."""
        began = time.monotonic()
        if not self.before.counts_memory:
            return LeakReport(False, reason="the firmware keeps no heap or pool counters (its options set "
                                            "LWIP_STATS, MEM_STATS or MEMP_STATS to 0; --set LWIP_STATS=1 etc.)")
        settled = settle(self.console, self.before, settle_board_s, self.wall_s)
        leaks, held = account(self.before, settled.after, settled.reaped)
        seconds = round(self.spent_s + time.monotonic() - began, 2)
        return LeakReport(True, leaks, held, settled.after.open_connections, reads=settled.reads,
                          seconds=seconds, board_s=settled.board_s, fin_retransmit=settled.fin_retransmit,
                          before=self.before.counters, after=settled.after.counters)


    def above_baseline(self) -> str:
        """What the board holds now above its baseline, as "PBUF_POOL 7 elements, REASSDATA 1 elements" ("none"):
        a reading in the middle of things (a board that stopped answering), not an account."""
        return _listed(account(self.before, Usage.parse(self.console.stats("used")), 0)[0])


@dataclass(frozen=True)
class Settled:
    """How the wait after the workload ended."""

    after: Usage          # the last reading
    reaped: int           # TIME_WAIT PCBs freed over all readings
    reads: int
    board_s: float        # the board's time from the first reading to the last
    fin_retransmit: bool  # it read on past its budget because a closing connection had its FIN to send again


def settle(console: StatsReader, before: Usage, budget_board_s: float,
           wall_s: Callable[[float], float]) -> Settled:
    """Read what the board holds, reaping TIME_WAIT PCBs each time, until nothing is above the baseline
    and no connection is open, or budget_board_s of the board's time passed since the first reading
    (longer while a closing connection waits to retransmit its FIN: retransmit_budget)."""
    began = time.monotonic()
    first: Usage | None = None
    reaped = reads = 0
    budget, fin_retransmit = budget_board_s, False
    while True:
        after = Usage.parse(console.stats("reap"))
        first = first or after
        reaped, reads = reaped + after.reaped, reads + 1
        waited_s = (after.board_ms - first.board_ms) / 1000
        budget = max(budget, retransmit_budget(after, waited_s))
        if (is_settled(before, after) or waited_s >= budget
                or time.monotonic() - began > LAG_ALLOWANCE * wall_s(budget)):
            return Settled(after, reaped, reads, waited_s, fin_retransmit)
        # a FIN merely unacknowledged yet (its ACK a round trip away) is no lost FIN: only reading on past
        # the budget, for a retransmission still due, is
        fin_retransmit = fin_retransmit or waited_s >= budget_board_s
        time.sleep(wall_s(POLL_BOARD_S))


def retransmit_budget(after: Usage, waited_s: float) -> float:
    """The board time from the first reading to wait for: past a closing connection's next FIN
    retransmission and the answer to it (SETTLE_BOARD_S), within RETRANSMIT_WAIT_BOARD_S; 0 when none waits."""
    if after.retransmit_in_ms is None:
        return 0.0
    return min(waited_s + after.retransmit_in_ms / 1000 + SETTLE_BOARD_S, RETRANSMIT_WAIT_BOARD_S)


def is_settled(before: Usage, after: Usage) -> bool:
    """Nothing above its baseline and no connection still open."""
    return not after.open_connections and all(n <= before.counters.get(k, 0) for k, n in after.counters.items())


def account(before: Usage, after: Usage, reaped: int) -> tuple[list[Leak], list[Held]]:
    """The leaks (every counter above its baseline) and what is legitimately held, named."""
    leaks = []
    for key, now in after.counters.items():
        was = before.counters.get(key, 0)
        if now > was:
            name, unit = _name_and_unit(key)
            leaks.append(Leak(name, now - was, unit, was, now, _note(name, after)))
    counts = {"TIME_WAIT PCBs reaped": reaped, "ARP entries": after.arp_entries,
              "listening PCBs": min(before.pcbs.get("LISTEN", 0), after.pcbs.get("LISTEN", 0))}
    held = [Held(name, counts[name], why) for name, (_one, why) in _HELD.items() if counts[name]]
    return leaks, held


def _listed(leaks: list[Leak]) -> str:
    return ", ".join(f"{leak.name} {leak.count} {leak.unit}" for leak in leaks) or "none"


def _is_memory(key: str) -> bool:
    return key == "mem.used" or (key.startswith("memp.") and key.endswith(".used")) or key.startswith("nic.buf.")


def _name_and_unit(key: str) -> tuple[str, str]:
    if key == "mem.used":
        return "heap", "bytes"
    if key.startswith("nic.buf."):
        return "nic." + key.removeprefix("nic.buf."), "buffers"
    return key.removeprefix("memp.").removesuffix(".used"), "elements"


def _note(name: str, after: Usage) -> str:
    """What the readings say holds a leaked TCP PCB."""
    if name == "TCP_PCB" and after.open_connections:
        states = ", ".join(f"{state} {n}" for state, n in after.open_connections.items())
        return f"connections still open: {states}"
    if name == "TCP_PCB_LISTEN":
        return "a server started during the workload still listens"
    return ""


def _what_came_back(counters: dict[str, int]) -> str:
    """"the heap, 15 pools and the NIC's pages": what a clean check compared."""
    pools = sum(1 for k in counters if k.startswith("memp."))
    nic = [_name_and_unit(k)[0].removeprefix("nic.") for k in counters if k.startswith("nic.buf.")]
    parts = [*(["the heap"] if "mem.used" in counters else []), *([f"{pools} pools"] if pools else []),
             *([f"the NIC's {', '.join(nic)}"] if nic else [])]
    return ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else "".join(parts)
