"""lwIP with NO_SYS 0 on the Cortex-M boards: an STM32Cube-style lwipopts.h runs as written.

The options file is the shape most lwIP products have (NO_SYS 0, sockets and netconn, the tcpip
thread's mailbox and priority in CMSIS-RTOS2 numbers). On openmv-n6 and openmv-rt1060 it builds on
netrepro's kernel (firmware/kernel): lwIP's core in its tcpip thread (port/sys_arch_os.c), the
NIC's receive path in a thread (apps/nic_thread.c), the socket benchmark on BSD sockets in an app
thread (apps/sockbench_socket.c). The figures come from the real chain: the board's own `threads`
and the capture's analysis (the window/RTT bound). A board without the kernel (ethernut2) still runs it
as NO_SYS 1 and says so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.runs.result import busiest_threads
from tests.conftest import netrepro_cli

pytestmark = pytest.mark.real

WINDOW = 4 * 1460
CUBE_OPTS = """\
/* STM32Cube-style lwipopts.h (CMSIS-RTOS2 priorities) */
#ifndef __LWIPOPTS__H__
#define __LWIPOPTS__H__

#define NO_SYS                      0
#define LWIP_SOCKET                 1
#define LWIP_NETCONN                1
#define TCPIP_MBOX_SIZE             {mbox}
#define TCPIP_THREAD_PRIO           24
#define DEFAULT_TCP_RECVMBOX_SIZE   6
#define MEM_SIZE                    (16*1024)
#define TCP_MSS                     1460
#define TCP_WND                     (4*TCP_MSS)
{extra}
#endif
"""


def _opts_file(tmp_path: Path, name: str, mbox: int = 6, extra: str = "") -> Path:
    path = tmp_path / name / "lwipopts.h"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CUBE_OPTS.format(mbox=mbox, extra=extra))
    return path


def _run_sock_rx(platform: str, opts: Path) -> dict:
    proc = netrepro_cli("run", platform, "--lwip", str(opts), "--link", "wifi-wire", "--workload", "sock-rx",
                        "--seconds", "3", "--json", timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "passed", result.get("error")
    assert result["options"]["NO_SYS"] == 0 and result["options"]["LWIP_SOCKET"] == 1
    return result


def _mbox_full(result: dict) -> int:
    """Full-mailbox drops the board counted over the workload (its `threads` before and after)."""
    threads = result["threads"]
    return threads["after"]["totals"]["mbox_full"] - threads["before"]["totals"]["mbox_full"]


def test_cube_file_boots_as_written_on_openmv_n6(tmp_path: Path) -> None:
    opts = _opts_file(tmp_path, "cube")
    proc = netrepro_cli("boot", "openmv-n6", "--lwip", str(opts), "--json", timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    options = result["options"]
    assert (options["NO_SYS"], options["LWIP_SOCKET"], options["LWIP_NETCONN"]) == (0, 1, 1)
    assert options["TCPIP_MBOX_SIZE"] == 6 and options["TCPIP_THREAD_PRIO"] == 24
    assert options["DEFAULT_TCP_RECVMBOX_SIZE"] == 6 and options["TCP_WND"] == WINDOW
    assert result["forced"] == []
    threads = {t["name"]: t for t in result["threads"]["threads"]}
    # sys_arch_os.c maps lwIP's (CMSIS-RTOS2) priority p onto the kernel's 1..31 as (p + 1) // 2.
    assert threads["tcpip_thread"]["base_prio"] == (24 + 1) // 2
    assert threads["nic_rx"]["base_prio"] == (40 + 1) // 2  # NR_NIC_RX_THREAD_PRIO's default, osPriorityHigh
    assert {"idle", "main", "sock"} <= threads.keys()
    assert all(0 < t["stack_used"] < t["stack"] for t in threads.values())
    assert result["threads"]["totals"]["mbox_full"] == 0


@pytest.mark.parametrize("locking", [None, 0, 1], ids=["lwip-default", "core-locking-0", "core-locking-1"])
def test_sock_rx_on_sockets_reaches_the_window_bound(tmp_path: Path, locking: int | None) -> None:
    extra = "" if locking is None else f"#define LWIP_TCPIP_CORE_LOCKING {locking}"
    result = _run_sock_rx("openmv-n6", _opts_file(tmp_path, f"lock{locking}", extra=extra))
    if locking is not None:
        assert result["options"]["LWIP_TCPIP_CORE_LOCKING"] == locking
    analysis = result["analysis"]
    assert analysis["device_window"]["max"] == WINDOW
    assert result["throughput_mbps"] >= 0.9 * analysis["bound_mbps"], (result["throughput_mbps"], analysis)
    assert _mbox_full(result) == 0
    cpu = result["threads"]["cpu"]
    # The threads' run times between the two readings cover the workload's board time between them.
    assert abs(sum(r["percent"] for r in cpu["threads"]) - 100) < 0.1
    assert cpu["total_ms"] >= 0.9 * result["seconds"] * 1000, (cpu["total_ms"], result["seconds"])
    assert cpu["switches"] > 0 and cpu["mbox_full"] == 0
    assert busiest_threads(cpu)[0]["name"] in {"tcpip_thread", "nic_rx", "sock"}


def test_openmv_rt1060_runs_the_cube_file(tmp_path: Path) -> None:
    result = _run_sock_rx("openmv-rt1060", _opts_file(tmp_path, "rt"))
    analysis = result["analysis"]
    assert analysis["device_window"]["max"] == WINDOW
    assert result["throughput_mbps"] >= 0.9 * analysis["bound_mbps"], (result["throughput_mbps"], analysis)
    assert any(t["name"] == "tcpip_thread" for t in result["threads"]["after"]["threads"])


def test_a_small_tcpip_mailbox_drops_frames(tmp_path: Path) -> None:
    """The polled driver shape hands a tick's frames to tcpip_input() at once, from a thread more
    urgent than the tcpip thread: a one-entry mailbox overflows (a dropped frame each time), the
    file's 6 does not. NO_SYS 1 has no mailbox to show this."""
    polled = "#define NR_NIC_RX_THREAD 0"
    good = _run_sock_rx("openmv-n6", _opts_file(tmp_path, "mbox6", mbox=6, extra=polled))
    small = _run_sock_rx("openmv-n6", _opts_file(tmp_path, "mbox1", mbox=1, extra=polled))
    assert small["options"]["TCPIP_MBOX_SIZE"] == 1 and small["options"]["NR_NIC_RX_THREAD"] == 0
    assert _mbox_full(good) == 0
    assert _mbox_full(small) > 0
    assert small["threads"]["after"]["totals"]["mbox_full_tcpip"] > 0
    assert small["throughput_mbps"] < 0.9 * good["throughput_mbps"], (small["throughput_mbps"],
                                                                      good["throughput_mbps"])


def test_a_board_without_the_kernel_forces_no_sys_1(tmp_path: Path) -> None:
    """The AVR has no port of the kernel: the file's NO_SYS 0 runs as NO_SYS 1, and one line says why."""
    small = "#undef MEM_SIZE\n#define MEM_SIZE 1600\n#undef TCP_WND\n#define TCP_WND (2*TCP_MSS)\n#undef TCP_MSS\n" \
            "#define TCP_MSS 536"
    opts = _opts_file(tmp_path, "avr", extra=small)
    proc = netrepro_cli("boot", "ethernut2", "--lwip", str(opts), "--json", timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["options"]["NO_SYS"] == 1 and result["threads"] is None
    assert {"NO_SYS", "LWIP_SOCKET", "LWIP_NETCONN"} <= set(result["forced"])
    notes = [line for line in proc.stderr.splitlines() if "NO_SYS 0" in line]
    assert len(notes) == 1 and notes[0].startswith("netrepro: ethernut2 runs NO_SYS 1 only (netrepro's kernel has "
                                                   "no AVR port"), proc.stderr
