"""Device time: the board runs at its modelled CPU speed, and everything it perceives as time follows it.

The real part executes `model_mips` million instructions per second. The host can execute the
emulated core at some lower sustained rate, `host_mips`. Run at that rate, one second of the
board's time lasts D = model_mips / host_mips seconds of wall time (the dilation). The board's
tick, the link's delays and rates, the pacing into the NIC and the peer's durations are all
stretched by D, so the board sees a world in which its core runs at the real part's speed, and a
figure measures the board, not the host (the time-dilation technique of Gupta et al., "To
Infinity and Beyond: Time-Warped Network Emulation", NSDI 2006).

QEMU counts instructions (`-icount shift=S,align=on,sleep=on`): the guest executes 2^-S
instructions per nanosecond of its virtual clock, i.e. 1000 / 2^S MIPS, and `align=on` keeps the
virtual clock in step with the wall clock (QEMU prints "The guest is now late by ..." when the host
cannot keep up). So a QEMU board's host rate is one of 1000, 500, 250, 125, ... MIPS.

simavr is cycle-accurate; its board host paces simulated cycles to the wall clock divided by D.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from harness.core.cache import cache_dir
from harness.core.errors import NetreproError
from harness.core.records import known_fields

TIME_MODES = ("device", "host")
DEFAULT_MODE = "device"  # figures measure the board; --time host for quick, host-dependent iteration
HOST_MIPS_ENV = "NETREPRO_HOST_MIPS"
CALIBRATION_ENV = "NETREPRO_CALIBRATION"  # where calibrations are kept (default: the cache's calibration/)
# The board's clock port sends a byte this many times a board ms (its timer interrupts that often):
# the finer it is, the sooner the link sees the board stop (a descheduled emulator) and stops with it,
# before it hands the NIC frames the board cannot take.
CLOCK_SUBTICKS_PER_MS = 8
MAX_ICOUNT_SHIFT = 10  # 1000 / 2^10 ~ 1 MIPS: slower than that, a run would take hours
# A board whose host cannot keep the planned D runs slower still (the link follows its clock): a
# wait timed in the board's seconds may take this many times its planned wall time before it is given up
# (a CI run saw an Xbox board at 2.96 times its planned D just after boot; under network load they run at ~2).
LAG_ALLOWANCE = 5.0
# A frame the link hands over this much later than its schedule (board ms; time the receiver could not
# take it not counted) means the host stalled the board or the link: the board saw a gap no real link has.
# Typically the host held QEMU for over a wall second, the link took the board for stopped and ran on by
# itself (harness/link/c/clock.h, CLOCK_STALL_NS), and what it held left hundreds of board ms late. Undisturbed
# runs of every QEMU board stay under 5 ms (the link's pacing into the NIC); runs beside two other boards
# on two cores reached 195-312 ms and lost 10-25 % of their figure; 50 ms lies ten times above the first
# and four times below the second.
LINK_LATE_MS = 50.0
# A board that sent no tick for this many wall ms during its workload was held by the host (or its link
# was): the link held still with it, so the board saw nothing odd, but the peer's retransmission timer
# runs on the wall clock and Linux's minimum is 200 ms (TCP_RTO_MIN), so a longer stall while the peer
# waits for ACKs fires it: the peer resends data that was never lost and starts again from one segment.
# Eight runs two at a time, before the link stopped spinning for the board's tick, each had 950 ms stalls:
# 2-81 retransmissions that nothing dropped, one figure 14 % low.
BOARD_STALL_MS = 200.0


@dataclass(frozen=True)
class CpuModel:
    """The real part's speed, from the platform description's [cpu] table (a model parameter)."""

    clock_mhz: float
    ipc: float            # instructions per cycle assumed for network code
    host_mips: float      # the rate this host sustains for this board (cycles/s for simavr), measured
    source: str           # where the clock and the IPC assumption come from

    @property
    def model_mips(self) -> float:
        return self.clock_mhz * self.ipc


@dataclass(frozen=True)
class DeviceTime:
    """How one run relates the board's time to the wall clock; result.json's `time` object."""

    mode: str                        # "device" or "host" (free-running: figures depend on the host)
    dilation: float = 1.0            # D: wall seconds per second of the board's time
    model_mips: float | None = None
    host_mips: float | None = None
    host_mips_source: str | None = None  # "--host-mips", "$NETREPRO_HOST_MIPS", "calibrated" or "platform"
    icount_shift: int | None = None  # QEMU's -icount shift (None: not counting instructions)
    realtime_priority: bool | None = None  # planned: False (--no-realtime) or None (where permitted); then as applied
    host_lagged: bool = False        # the board's clock fell behind wall time / D
    max_lag_ms: float = 0.0
    link_follows_board: bool = False  # the link kept to the board's own clock (so a lag moved no figure)
    effective_dilation: float | None = None  # the D the board really kept over the workload
    link_late_ms: float = 0.0        # the latest a frame left the link against its schedule (board ms)
    link_late: bool = False          # ... later than LINK_LATE_MS: the host stalled the link or the board
    board_stall_ms: float = 0.0      # the longest the board sent no tick during the workload (wall ms)
    board_stalled: bool = False      # ... longer than BOARD_STALL_MS: the peer's wall-clock timer may have fired

    @property
    def figures_at_risk(self) -> bool:
        """The board fell behind while the link ran on wall / D (the board saw a faster world than
        modelled), the link handed frames over late in the board's own time (the host stalled it or
        the board's clock), or the host held the board longer than the peer's shortest retransmission
        timeout: either way the figures are not the board's (repeat at a larger D)."""
        return (self.host_lagged and not self.link_follows_board) or self.link_late or self.board_stalled

    def with_link_lateness(self, late_ms: float) -> DeviceTime:
        """This run's time with how late its link handed frames over (link-stats.json) judged."""
        return replace(self, link_late_ms=round(late_ms, 3), link_late=self.device and late_ms > LINK_LATE_MS)

    def with_board_stall(self, stall_ms: float) -> DeviceTime:
        """This run's time with the longest wall gap between the board's ticks during its workload judged."""
        return replace(self, board_stall_ms=round(stall_ms, 3), board_stalled=self.device and stall_ms > BOARD_STALL_MS)

    @property
    def device(self) -> bool:
        return self.mode == "device"

    @property
    def favoured(self) -> bool:
        """Whether the emulator and the link ask for real-time priority (not with --no-realtime)."""
        return self.realtime_priority is not False

    def wall_s(self, board_s: float) -> float:
        """How long `board_s` seconds of the board's time take on the wall clock."""
        return board_s * self.dilation

    def board_mbps(self, wall_mbps: float) -> float:
        """A rate measured against the wall clock (e.g. by iperf on the peer), in the board's time."""
        return wall_mbps * self.dilation

    def slower(self) -> DeviceTime:
        """The same model with the host asked for half the rate (twice the dilation): what a run whose
        host fell behind is repeated at."""
        if not self.device or self.host_mips is None or self.model_mips is None:
            return self
        host = self.host_mips / 2
        shift = None if self.icount_shift is None else icount_shift(host)
        return DeviceTime("device", dilation=self.model_mips / host, model_mips=self.model_mips, host_mips=host,
                          host_mips_source="halved after a lag", icount_shift=shift,
                          realtime_priority=False if not self.favoured else None)

    def qemu_args(self) -> list[str]:
        if self.icount_shift is None:
            return []
        return ["-icount", f"shift={self.icount_shift},align=on,sleep=on"]

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> DeviceTime:
        """A result's `time` object read back (its other keys, e.g. peer_figures_timed_by, left out)."""
        return cls(**known_fields(cls, data))


@dataclass(frozen=True)
class TimeChoice:
    """What the user chose (--time, --mips, --host-mips); each platform turns it into its DeviceTime."""

    mode: str = DEFAULT_MODE
    mips: float | None = None
    host_mips: float | None = None
    realtime: bool = True   # real-time priority for the emulator and the link where permitted

    def for_platform(self, engine_kind: str, cpu: CpuModel | None, platform: str | None = None) -> DeviceTime:
        planned = plan_time(engine_kind, cpu, self.mode, self.mips, self.host_mips, platform)
        return planned if self.realtime else replace(planned, realtime_priority=False)


def icount_shift(host_mips: float) -> int:
    """The -icount shift whose rate (1000 / 2^S MIPS) is the fastest not above host_mips."""
    if host_mips <= 0 or not math.isfinite(host_mips):
        raise NetreproError(f"bad host rate {host_mips!r} MIPS", "give a positive number, e.g. --host-mips 250")
    shift = max(0, math.ceil(math.log2(1000.0 / host_mips) - 1e-9))
    if shift > MAX_ICOUNT_SHIFT:
        raise NetreproError(f"a host rate of {host_mips:g} MIPS is too slow to emulate with",
                            f"give at least {1000 / 2 ** MAX_ICOUNT_SHIFT:.2f} MIPS")
    return shift


def plan_time(engine_kind: str, cpu: CpuModel | None, mode: str = DEFAULT_MODE, mips: float | None = None,
              host_mips: float | None = None, platform: str | None = None) -> DeviceTime:
    """The run's relation of board time to wall time, from the platform's model and the user's overrides.

    `mips` overrides the modelled rate (--mips), `host_mips` the host's (--host-mips, else
    $NETREPRO_HOST_MIPS, else this host's calibration of `platform` (`netrepro calibrate`), else the
    platform description's figure).
    """
    if mode not in TIME_MODES:
        raise NetreproError(f"unknown time mode '{mode}'", f"use one of: {', '.join(TIME_MODES)}")
    if mode == "host":
        return DeviceTime("host")
    if cpu is None:
        raise NetreproError("this platform has no [cpu] model, so it cannot run in device time",
                            "add [cpu] clock_mhz, ipc, host_mips and source to its description, or use --time host")
    model = _positive(mips if mips is not None else cpu.model_mips, "--mips")
    source, host = _host_rate(host_mips, cpu, platform)
    host = _positive(host, source)
    if engine_kind == "qemu":
        shift = icount_shift(host)
        host = 1000.0 / 2**shift
        return DeviceTime("device", dilation=model / host, model_mips=model, host_mips=host, host_mips_source=source,
                          icount_shift=shift)
    return DeviceTime("device", dilation=model / host, model_mips=model, host_mips=host, host_mips_source=source)


def _host_rate(given: float | None, cpu: CpuModel, platform: str | None) -> tuple[str, float]:
    """Where the host's rate comes from, and the rate."""
    if given is not None:
        return "--host-mips", given
    env = _env_host_mips()
    if env:
        return f"${HOST_MIPS_ENV}", env
    calibrated = calibrated_host_mips(platform) if platform else None
    if calibrated:
        return "calibrated", calibrated
    return "platform", cpu.host_mips


def calibration_path(platform: str) -> Path:
    """Where `netrepro calibrate PLATFORM` keeps what it measured on this host."""
    folder = Path(os.environ[CALIBRATION_ENV]) if os.environ.get(CALIBRATION_ENV) else cache_dir("calibration")
    return folder / f"{platform}.json"


def calibrated_host_mips(platform: str) -> float | None:
    """The host rate this host's calibration chose for the platform (None: not calibrated here)."""
    path = calibration_path(platform)
    try:
        value = json.loads(path.read_text())["host_mips"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(value) if isinstance(value, int | float) and value > 0 else None


def _env_host_mips() -> float | None:
    text = os.environ.get(HOST_MIPS_ENV)
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise NetreproError(f"{HOST_MIPS_ENV}={text!r} is not a number", "give MIPS, e.g. 250") from None


def _positive(value: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise NetreproError(f"bad {what} {value!r}", "give a positive number of MIPS")
    return float(value)
