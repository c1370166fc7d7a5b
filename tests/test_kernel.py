"""The kernel (firmware/kernel, docs/kernel.md) on the Cortex-M boards and the Xbox (i386), and NO_SYS 1 firmware
without it.

A firmware built with the test-only option NR_TEST_KERNEL has the kernel and the shell command `ktest`, which runs
the kernel's tests on the board (firmware/apps/ktest.c): one `KTEST <name> pass|FAIL` line a test, a `KCOST` line of
costs and `ktest: N passed, M failed`. The boards run in device time, so every board nanosecond is a count of the
modelled core's instructions and the tests' timing checks are exact. Any other firmware must not carry the kernel.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.rig.build import Firmware, FirmwareConfig, build_firmware
from harness.rig.devicetime import TimeChoice
from harness.rig.engine import QemuEngine
from harness.rig.platform import load_platform
from harness.rig.profile import resolve_profile

pytestmark = pytest.mark.real

# Cortex-M55 (mps3-an547), Cortex-M7 (mps2-an500) and the Xbox's Pentium III (QEMU pc, i386)
BOARDS = ("openmv-n6", "openmv-rt1060", "xbox")
TESTS = ("kernel_start", "priority_order", "preemption", "round_robin", "sleep", "semaphore", "mutex_basic",
         "mutex_inheritance", "mutex_timeout", "queue", "isr_give", "stack_watermark", "fpu_context", "counters",
         "thread_errno", "costs")
# The kernel's functions: none may be in a firmware built without it.
KERNEL_SYMBOL = re.compile(r"^(nr_kernel_|nr_thread_|nr_port_|nr_sem_|nr_mutex_|nr_queue_|nr_sleep_ms$|nr_app_ktest$)")
PENDSV_VECTOR = 14
NO_FPU = {"xbox"}  # built with -mno-80387 -mno-sse: no FP state, so no fpu_context test
_KTEST = re.compile(r"^KTEST (\S+) (pass|FAIL)\b ?(.*)$", re.M)
_SUMMARY = re.compile(r"^ktest: (\d+) passed, (\d+) failed$", re.M)
_KCOST = re.compile(r"^KCOST (.*)$", re.M)


@dataclass(frozen=True)
class Ktest:
    """One `ktest` run's output, parsed."""

    results: dict[str, tuple[bool, str]]  # test -> (passed, detail or why)
    passed: int
    failed: int
    costs: dict[str, float]
    threads: list[dict[str, str]]
    text: str


def parse_ktest(text: str) -> Ktest:
    summary = _SUMMARY.search(text)
    assert summary, f"no ktest summary in: {text[-600:]}"
    cost = _KCOST.search(text)
    costs = {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", cost.group(1))} if cost else {}
    threads = [dict(re.findall(r"(\w+)=(\S+)", line)) for line in re.findall(r"^KTHREAD (.*)$", text, re.M)]
    return Ktest({m.group(1): (m.group(2) == "pass", m.group(3)) for m in _KTEST.finditer(text)},
                 int(summary.group(1)), int(summary.group(2)), costs, threads, text)


def expected_tests(board: str) -> tuple[str, ...]:
    return tuple(t for t in TESTS if not (t == "fpu_context" and board in NO_FPU))


def kernel_firmware(board: str, tree: Path) -> Firmware:
    platform = load_platform(board)
    return build_firmware(FirmwareConfig(platform, resolve_profile(platform, None, overrides=["NR_TEST_KERNEL=1"],
                                                    lwip_tree=tree), tree))


def symbols(elf: Path, nm: str = "arm-none-eabi-nm") -> dict[str, int]:
    out = subprocess.run([nm, str(elf)], capture_output=True, text=True, check=True).stdout
    return {parts[2]: int(parts[0], 16) for parts in (line.split() for line in out.splitlines()) if len(parts) == 3}


def vector(elf: Path, index: int) -> int:
    """Entry `index` of the firmware's vector table (the handler's address, Thumb bit clear)."""
    out = subprocess.run(["arm-none-eabi-objdump", "-s", "-j", ".vectors", str(elf)], capture_output=True,
                         text=True, check=True).stdout
    words = [w for line in out.splitlines() if re.match(r"^ [0-9a-f]{4,} ", line) for w in line.split()[1:5]]
    return int.from_bytes(bytes.fromhex(words[index]), "little") & ~1


@pytest.fixture(scope="module", params=BOARDS)
def ktest_runs(request: pytest.FixtureRequest, tree: Path, tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[str, Ktest, Ktest, str]:
    """ktest run twice on a board in device time, and the shell's answer after: (board, first, second, uptime)."""
    board = request.param
    platform = load_platform(board)
    firmware = kernel_firmware(board, tree)
    run_dir = tmp_path_factory.mktemp(f"ktest-{board}")
    engine = QemuEngine(platform, firmware.elf, run_dir, run_dir, time=platform.time(TimeChoice("device")))
    with engine:
        console = engine.start(timeout=60)
        first = parse_ktest(console.command("ktest", timeout=120))
        second = parse_ktest(console.command("ktest", timeout=120))
        uptime = console.command("uptime")
    return board, first, second, uptime


def test_every_kernel_test_passes_on_the_board(ktest_runs):
    board, first, _, _ = ktest_runs
    failed = {name: why for name, (ok, why) in first.results.items() if not ok}
    assert not failed, f"{board}: {failed}"
    tests = expected_tests(board)
    assert tuple(first.results) == tests, first.results  # every test ran, in order, once
    assert (first.passed, first.failed) == (len(tests), 0), first.text


def test_ktest_runs_again_and_the_shell_goes_on(ktest_runs):
    """The kernel stays up after ktest with main as its least urgent thread: the shell keeps serving, and a second
    ktest (its threads' slots and stacks reused) passes too."""
    board, _, second, uptime = ktest_runs
    assert (second.passed, second.failed) == (len(expected_tests(board)), 0), second.text
    assert re.fullmatch(r"ms=\d+", uptime.strip()), uptime
    live = {t["name"]: t for t in second.threads}
    assert set(live) == {"main", "idle"}, f"{board}: threads left after ktest: {sorted(live)}"
    assert live["main"]["prio"] == "1" and live["idle"]["prio"] == "0"
    assert 0 < int(live["idle"]["stack_used"]) < int(live["idle"]["stack_size"])


def test_the_costs_are_sane(ktest_runs):
    """Board ns and cycles of the modelled core agree with its clock (device time: the platform's MHz x IPC), and a
    round trip (two switches, a give and a take each way) costs more than a switch, but not a hundred times more."""
    board, first, second, _ = ktest_runs
    cpu = load_platform(board).cpu
    assert cpu is not None
    costs = first.costs
    assert costs["core_mhz"] == pytest.approx(cpu.model_mips, rel=0.01), costs
    for name in ("switch", "sem_round_trip", "queue_round_trip"):
        ns, cycles = costs[f"{name}_ns"], costs[f"{name}_cycles"]
        assert 0 < ns < 20_000, costs
        assert cycles == pytest.approx(ns * cpu.model_mips / 1000, rel=0.02, abs=1), costs
        # device time: a second run costs the same
        assert second.costs[f"{name}_ns"] == pytest.approx(ns, rel=0.05), (costs, second.costs)
    assert 2 * costs["switch_ns"] < costs["sem_round_trip_ns"] < 100 * costs["switch_ns"], costs
    assert costs["sem_round_trip_ns"] <= costs["queue_round_trip_ns"] * 1.5, costs


# 20 KB through the board's echo service (firmware/apps/echo.c, port 7), run in the peer's namespace.
_ECHO = """
import socket, sys
data = bytes(range(256)) * 80
with socket.create_connection((sys.argv[1], 7), timeout=10) as s:
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    back = b""
    while chunk := s.recv(65536):
        back += chunk
print("echoed" if back == data else f"got {len(back)} of {len(data)}")
"""


def test_the_network_still_works_with_main_as_a_thread(netrepro, no_leftovers):
    """After ktest the NO_SYS 1 main loop runs on as the kernel's least urgent thread, its interrupts on the
    handler stack: the board still answers the peer and echoes TCP through lwIP."""
    with netrepro.board("openmv-n6", link="direct", options={"NR_TEST_KERNEL": 1}) as rig:
        assert rig.ping()
        result = parse_ktest(rig.console.command("ktest", timeout=120))
        assert (result.passed, result.failed) == (len(TESTS), 0), result.text
        assert rig.ping()
        echo = rig.namespace.run([sys.executable, "-c", _ECHO, rig.addresses.device], timeout=60).stdout
        assert echo.strip() == "echoed", echo


@pytest.mark.parametrize(("board", "profile"), [("openmv-n6", "mp-n6-before"), ("openmv-rt1060", "mp-rt1060-after")])
def test_a_firmware_without_the_option_has_no_kernel(tree, board, profile):
    """NO_SYS 1 firmware is what it was: no kernel function, PendSV still the fault dump, no kernel section linked
    (the kernel's objects are built for every Cortex-M board and dropped whole by --gc-sections)."""
    platform = load_platform(board)
    plain = build_firmware(FirmwareConfig(platform, resolve_profile(platform, profile), tree))
    names = symbols(plain.elf)
    assert not sorted(n for n in names if KERNEL_SYMBOL.match(n))
    assert vector(plain.elf, PENDSV_VECTOR) == names["fault_entry"] & ~1
    assert "ktest" not in plain.apps
    linked = (plain.build_dir / "firmware.map").read_text().split("Linker script and memory map", 1)[1]
    kept = [line for line in linked.splitlines() if re.search(r"/(kernel|kernel_port|ktest)\.o\b", line)
            and not line.startswith("LOAD ")]
    assert not kept, kept

    # The same check sees the kernel where it is built in.
    kernel = kernel_firmware(board, tree)
    names = symbols(kernel.elf)
    assert {"nr_kernel_start", "nr_kernel_tick", "nr_port_pendsv_handler", "nr_app_ktest"} <= set(names)
    assert vector(kernel.elf, PENDSV_VECTOR) == names["nr_port_pendsv_handler"] & ~1
    assert "ktest" in kernel.apps


def test_an_xbox_firmware_without_the_option_has_no_kernel(tree):
    """The i386 port is compiled for every Xbox build, and a NO_SYS 1 one drops all of it: no kernel function, the
    IDT's 48 vectors without the switch's, the plain interrupt stub (no interrupt stack), no kernel section linked."""
    platform = load_platform("xbox")
    nm = f"{platform.firmware.toolchain}nm"
    plain = build_firmware(FirmwareConfig(platform, resolve_profile(platform, "nxdk-nvnetdrv"), tree))
    names = symbols(plain.elf, nm)
    assert not sorted(n for n in names if KERNEL_SYMBOL.match(n))
    assert "isr48" not in names and "isr47" in names
    assert "ktest" not in plain.apps
    linked = (plain.build_dir / "firmware.map").read_text().split("Linker script and memory map", 1)[1]
    kept = [line for line in linked.splitlines() if re.search(r"/(kernel|kernel_port|ktest)\.o\b", line)
            and not line.startswith("LOAD ")]
    assert not kept, kept

    kernel = kernel_firmware("xbox", tree)
    names = symbols(kernel.elf, nm)
    assert {"nr_kernel_start", "nr_kernel_tick", "nr_port_switch", "nr_port_irq_depth", "isr48",
            "nr_app_ktest"} <= set(names)
    assert "ktest" in kernel.apps


def test_the_option_is_refused_where_the_kernel_has_no_port(tree):
    """The AVR has no kernel port: a build asking for the kernel's tests says so in one line."""
    from harness.core.errors import NetreproError

    platform = load_platform("ethernut2")
    with pytest.raises(NetreproError, match="no port for ARCH 'avr'"):
        profile = resolve_profile(platform, None, overrides=["NR_TEST_KERNEL=1"], lwip_tree=tree)
        build_firmware(FirmwareConfig(platform, profile, tree))


def test_the_kernels_tests_are_refused_beside_lwips_threads(tree):
    """ktest starts the kernel itself: a NO_SYS 0 build asking for it is one line naming the fix."""
    from harness.core.errors import NetreproError

    platform = load_platform("xbox")
    profile = resolve_profile(platform, "nxdk-nvnetdrv-os", overrides=["NR_TEST_KERNEL=1"], lwip_tree=tree)
    with pytest.raises(NetreproError, match="run on a NO_SYS 1 build and this options file has NO_SYS 0") as error:
        build_firmware(FirmwareConfig(platform, profile, tree))
    assert error.value.fix == "use a NO_SYS 1 profile (the platform's default)"
