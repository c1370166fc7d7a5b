"""lwIP with NO_SYS 0 on the Xbox (i386), the nxdk way: the nxdk-*-os profiles on the real chain.

The kernel's i386 port (firmware/arch/x86/kernel_port.c) runs lwIP's tcpip thread on the QEMU `pc` stand-in.
Each nxdk-*-os profile is its NO_SYS 1 sibling's TCP figures plus nxdk's thread options, and the e1000
stand-in's driver design chooses the receive path: nvnetdrv receives in a thread the NIC's interrupt wakes
(`nic_rx`, one step above the tcpip thread, for the Xbox kernel's wake-up boost), pktdrv has no receive thread
at all (its 5 ms packet_timer is an lwIP timeout in the tcpip thread, as in nxdk). The checks are the board's
own `threads` listing and the capture's figures (what the device advertised), never timing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import netrepro_cli

pytestmark = pytest.mark.real

MSS = 1432              # nxdk's lwipopts.h
WINDOW = 45 * MSS       # 64440: nxdk's TCP_WND, no window scaling
STACK = 4096            # nxdk's TCPIP_THREAD_STACKSIZE; the -os files give the receive thread the same
SECONDS = 2


def kernel_prio(lwip_prio: int) -> int:
    """port/sys_arch_os.c's mapping of a lwIP priority onto the kernel's 1..31."""
    return (lwip_prio + 1) // 2


def _run_rx(profile: str) -> dict:
    proc = netrepro_cli("run", "xbox", "--lwip", profile, "--link", "ethernet", "--workload", "rx",
                        "--seconds", str(SECONDS), "--json", timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "passed", result.get("error")
    return result


def _threads(result: dict, when: str = "after") -> dict[str, dict]:
    return {t["name"]: t for t in result["threads"][when]["threads"]}


def _advertised(result: dict) -> None:
    """The capture: the device's SYN carried nxdk's MSS and its ACKs offered nxdk's whole window, unscaled."""
    analysis = result["analysis"]
    assert analysis["device_mss"] == MSS
    assert analysis["device_window"]["max"] == WINDOW
    assert analysis["window_scaling"] == "not negotiated"
    assert result["bytes"] > 0


def test_nvnetdrv_os_receives_in_a_thread_the_interrupt_wakes() -> None:
    result = _run_rx("nxdk-nvnetdrv-os")
    options = result["options"]
    assert (options["NO_SYS"], options["LWIP_TCPIP_CORE_LOCKING"]) == (0, 1)
    assert options["TCPIP_MBOX_SIZE"] == 128 and options["NR_NIC_RX_THREAD"] == 1
    threads = _threads(result)
    assert set(threads) == {"idle", "main", "tcpip_thread", "nic_rx"}
    assert threads["tcpip_thread"]["base_prio"] == kernel_prio(24)
    assert threads["nic_rx"]["base_prio"] == kernel_prio(26) == threads["tcpip_thread"]["base_prio"] + 1
    assert threads["tcpip_thread"]["stack"] == threads["nic_rx"]["stack"] == STACK
    assert all(0 < t["stack_used"] < t["stack"] for t in threads.values())
    _advertised(result)
    cpu = result["threads"]["cpu"]
    # With LWIP_TCPIP_CORE_LOCKING_INPUT 1 (nxdk's then) the segments are processed in the receive thread, under
    # the core lock: it is the busiest thread, and the interrupt woke it.
    busy = [t for t in cpu["threads"] if t["name"] != "idle"]
    assert max(busy, key=lambda t: t["run_ms"])["name"] == "nic_rx", cpu
    before = _threads(result, "before")
    assert threads["nic_rx"]["switches"] - before["nic_rx"]["switches"] > 0
    assert cpu["mbox_full"] == 0


def test_pktdrv_os_polls_in_the_tcpip_thread() -> None:
    result = _run_rx("nxdk-pktdrv-os")
    options = result["options"]
    assert (options["NO_SYS"], options["LWIP_TCPIP_CORE_LOCKING"]) == (0, 1)
    threads = _threads(result)
    assert set(threads) == {"idle", "main", "tcpip_thread"}  # no receive thread: packet_timer is an lwIP timeout
    assert threads["tcpip_thread"]["base_prio"] == kernel_prio(24)
    assert threads["tcpip_thread"]["stack"] == STACK
    _advertised(result)
    cpu = result["threads"]["cpu"]
    busy = [t for t in cpu["threads"] if t["name"] != "idle"]
    assert max(busy, key=lambda t: t["run_ms"])["name"] == "tcpip_thread", cpu
    # The 5 ms poll wakes the tcpip thread 200 times a board second; half of that is a bound no load can miss.
    before = _threads(result, "before")
    assert threads["tcpip_thread"]["switches"] - before["tcpip_thread"]["switches"] >= SECONDS * 100
    # Each frame a poll takes is a message in the tcpip thread's own mailbox (128, as nxdk's): a 32-entry ring
    # never fills it.
    assert cpu["mbox_full"] == 0


OPTS = """\
/* An nxdk-style lwipopts.h of the user's own, NO_SYS 0 */
#define NO_SYS                        0
#define LWIP_TCPIP_CORE_LOCKING       1
#define LWIP_SOCKET                   1
#define LWIP_NETCONN                  1
#define TCPIP_THREAD_STACKSIZE        4096
#define TCPIP_MBOX_SIZE               16
#define TCP_MSS                       1432
#define TCP_WND                       (4 * TCP_MSS)
#define LWIP_SUPPORT_CUSTOM_PBUF      1
"""


def test_an_options_file_with_no_sys_0_boots_on_the_xbox(tmp_path: Path) -> None:
    opts = tmp_path / "lwipopts.h"
    opts.write_text(OPTS)
    proc = netrepro_cli("boot", "xbox", "--lwip", str(opts), "--json", timeout=240)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    options = result["options"]
    assert (options["NO_SYS"], options["LWIP_SOCKET"], options["LWIP_NETCONN"]) == (0, 1, 1)
    assert options["TCPIP_MBOX_SIZE"] == 16 and result["forced"] == []
    threads = {t["name"]: t for t in result["threads"]["threads"]}
    assert {"idle", "main", "tcpip_thread"} <= set(threads)
    assert threads["tcpip_thread"]["stack"] == 4096 and threads["main"]["base_prio"] == kernel_prio(16)


@pytest.mark.parametrize(("api", "thread"), [(1, "iperf_srv"), (2, "iperf_srv")], ids=["sockets", "netconn"])
def test_iperf_on_a_sequential_api_runs_on_the_xbox(api: int, thread: str) -> None:
    """The report's iperf is lwiperf under the core lock (NR_APP_API 0, the profile's); the threaded iperf on
    sockets or netconn (apps/iperf_os.c) runs on the i386 kernel too: its server thread receives the peer's
    whole stream, counted byte for byte as the peer sent it."""
    proc = netrepro_cli("run", "xbox", "--lwip", "nxdk-nvnetdrv-os", "--set", f"NR_APP_API={api}", "--link",
                        "ethernet", "--workload", "rx", "--seconds", str(SECONDS), "--json", timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "passed", result.get("error")
    assert result["options"]["NR_APP_API"] == api
    assert thread in _threads(result)
    _advertised(result)
    console = (Path(result["run_dir"]) / "console.log").read_text(errors="replace")
    board = [int(n) for n in re.findall(r"IPERF role=server report=LWIPERF_TCP_DONE_SERVER \S+ bytes=(\d+)", console)]
    assert board and board[-1] == result["bytes"], (board, result["bytes"])
