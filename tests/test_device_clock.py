"""Device time on the firmware side: the board's tick follows the dilation D, and the board reports its CPU load.

Real firmware on real QEMU (and simavr for the Ethernut 2), started in device time: QEMU counts
instructions (-icount), the firmware is told D with `tick <D*1000>` and stretches its 1 ms tick
by D. A loop of a known instruction count then takes N*K/model_mips microseconds of the board's
time, whatever the host's speed, and `cpu` tells an idle board from a busy one.
"""

from __future__ import annotations

import re
import time

import pytest

from harness.core.errors import NetreproError
from harness.rig.build import FirmwareConfig, build_firmware
from harness.rig.devicetime import CLOCK_SUBTICKS_PER_MS, plan_time
from harness.rig.engine import make_engine
from harness.rig.platform import load_platform
from harness.rig.profile import resolve_profile

pytestmark = pytest.mark.real

# The QEMU boards' tick timers and their input clocks, in the emulator's virtual time.
QEMU_BOARDS = {
    "openmv-n6": ("mp-n6-before", "SysTick at the modelled SYSCLK"),
    "openmv-rt1060": ("mp-rt1060-before", "SysTick at the modelled SYSCLK"),
    "xbox": ("nxdk-nvnetdrv", "the PIT"),
}
PIT_HZ = 1_193_182
SPIN_BOARD_S = 0.5  # board seconds of busy loop per measurement


def tick_input_hz(platform) -> int:
    return PIT_HZ if platform.engine.machine == "pc" else platform.firmware.cpu_hz


def fields(line: str, kind: str) -> dict[str, int]:
    """The `KIND k=v ...` line of a command's output (QEMU may add its own warnings around it)."""
    match = re.search(rf"^{kind} ((?:\w+=\d+ ?)+)$", line, re.MULTILINE)
    assert match, f"no {kind} line in {line!r}"
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", match[1])}


def cpu(console, reset: bool = False) -> dict[str, int]:
    load = fields(console.command("cpu reset" if reset else "cpu"), "CPU")
    assert 0 <= load["busy_ppm"] <= 1_000_000 and 0 <= load["idle_us"] <= load["total_us"], load
    return load


def spin(console, iterations: int) -> dict[str, int]:
    return fields(console.command(f"spin {iterations}", timeout=120), "SPIN")


class Board:
    def __init__(self, platform, console, dilation: float, model_mips: float) -> None:
        self.platform, self.console, self.dilation, self.model_mips = platform, console, dilation, model_mips


@pytest.fixture(scope="module", params=sorted(QEMU_BOARDS))
def board(request, tree, tmp_path_factory):
    """A QEMU board booted in device time and told its dilation, once per platform."""
    platform = load_platform(request.param)
    elf = build_firmware(FirmwareConfig(platform, resolve_profile(platform, QEMU_BOARDS[request.param][0]), tree)).elf
    device_time = plan_time(platform.engine.kind, platform.cpu, "device")
    assert device_time.icount_shift is not None
    run_dir = tmp_path_factory.mktemp(request.param)
    with make_engine(platform, elf, run_dir, run_dir, time=device_time) as engine:
        console = engine.start(timeout=60)
        milli = round(device_time.dilation * 1000)
        tick = fields(console.command(f"tick {milli}"), "TICK")
        # The timer's new period: one board ms is D ms of its input clock, in CLOCK_SUBTICKS_PER_MS interrupts
        # (each sends the board's clock to the link).
        period = round(tick_input_hz(platform) * milli / (1_000_000 * CLOCK_SUBTICKS_PER_MS))
        assert tick == {"dilation_milli": milli, "period": period}
        yield Board(platform, console, device_time.dilation, device_time.model_mips)


def test_a_known_loop_takes_its_modelled_time_on_the_boards_clock(board):
    k = spin(board.console, 1)["instructions_per_iteration"]
    assert k == 2  # subs/bne, dec/jnz
    iterations = round(SPIN_BOARD_S * board.model_mips * 1e6 / k)
    cpu(board.console, reset=True)
    result = spin(board.console, iterations)
    load = cpu(board.console)
    expected_ms = iterations * k / board.model_mips / 1000
    assert abs(result["ms"] - expected_ms) <= 0.01 * expected_ms, \
        f"{board.platform.name}: {result['ms']} ms on the board for {expected_ms:.1f} ms of modelled instructions"
    # The fine clock agrees with the tick: the loop is its busy time, give or take the tick's own step (a loop
    # that starts just before a tick counts up to one ms more than it took). Its idle time is the board waiting
    # for the console's next command, which a busy host answers later (22 ms of the board's time beside two busy
    # loops): the whole interval, once compared here, measured the host.
    busy_us = load["busy_ppm"] * load["total_us"] / 1e6
    assert (result["ms"] - 1) * 1000 <= busy_us <= result["ms"] * 1000 * 1.02 + 2000, (result, load)
    assert busy_us <= load["total_us"], load


def test_an_idle_board_reports_a_low_load_and_its_clock_never_runs_ahead_of_the_wall(board):
    cpu(board.console, reset=True)
    started = time.monotonic()
    time.sleep(1.0)
    load = cpu(board.console)
    wall_us = (time.monotonic() - started) * 1e6
    assert load["busy_ppm"] < 200_000, load
    # -icount align=on: the board's clock never runs ahead of wall time / D.
    assert load["total_us"] <= wall_us / board.dilation * 1.02 + 1000, (load, wall_us)
    # sleep=on: an idle board's time passes (with sleep=off it would jump, without a warp it would stop). It
    # falls behind wall time / D, because each of its timer wakeups costs the host wall time that QEMU's
    # virtual clock does not count (docs/device-time.md, "An idle board falls behind too"; 40-60 % of it
    # on this machine); the link follows the board's clock, so that lag moves no figure.
    assert load["total_us"] >= 0.1 * wall_us / board.dilation, (load, wall_us)


def test_a_tick_the_timer_cannot_hold_is_refused_and_the_tick_stays(board):
    before = fields(board.console.command("tick"), "TICK")
    for value in ("0", "99", "100000000", "x"):
        with pytest.raises(NetreproError) as error:
            board.console.command(f"tick {value}")
        assert "\n" not in str(error.value)
        assert ("outside" if value.isdigit() else "usage") in str(error.value), error.value
    assert fields(board.console.command("tick"), "TICK") == before


@pytest.fixture(scope="module")
def ethernut(tree):
    platform = load_platform("ethernut2")
    return platform, build_firmware(FirmwareConfig(platform, resolve_profile(platform, "nutos-default"), tree)).elf


def test_the_ethernut_keeps_its_tick_and_reports_its_load(ethernut, tmp_path):
    platform, elf = ethernut
    device_time = plan_time(platform.engine.kind, platform.cpu, "device")
    with make_engine(platform, elf, tmp_path, tmp_path, time=device_time) as engine:
        console = engine.start(timeout=30)
        # The board host paces simulated cycles itself: the firmware's tick is never stretched.
        assert fields(console.command("tick 1000"), "TICK") == {"dilation_milli": 1000, "period": 230}
        with pytest.raises(NetreproError, match="this board's host paces its clock; tick stays 1000"):
            console.command("tick 2000")
        cpu(console, reset=True)
        time.sleep(0.5)
        idle = cpu(console)
        cpu(console, reset=True)
        result = spin(console, 500_000)  # 6 cycles an iteration: ~0.2 s
        busy = cpu(console)
    assert idle["busy_ppm"] < 200_000, idle
    assert result["instructions_per_iteration"] == 5 and busy["busy_ppm"] > 900_000, (result, busy)
