"""The socket benchmark (`sock`) on each of lwIP's APIs a NO_SYS 0 options file can choose, and the
NO_SYS 1 benchmark it must stay interchangeable with.

A NO_SYS 0 build runs `sock` in a thread of its own on BSD sockets (apps/sockbench_socket.c) or, for
a file with LWIP_SOCKET 0 and LWIP_NETCONN 1 as many STM32Cube projects have it, on netconn
(apps/sockbench_netconn.c); NR_APP_API (profiles/base.h) says which. Both parse the command with
the raw-API benchmark's parser (apps/sockbench_args.c) and print its result lines, which the harness
reads (harness/rig/workload.py). The figures come from the real chain: each run's capture gives the
MSS and window the board advertised, what it kept in flight, and the RTT, so the bound is checked
against the file's own numbers.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.core.errors import NetreproError
from harness.core.process import stop
from harness.rig.build import FirmwareConfig, build_firmware
from harness.rig.console import Console
from harness.rig.platform import load_platform
from harness.rig.profile import resolve_profile
from tests.conftest import netrepro_cli

pytestmark = pytest.mark.real

MSS = 1460
WINDOW = 4 * MSS
SND_BUF = 2 * MSS  # the file leaves TCP_SND_BUF at lwIP's default, 2 * TCP_MSS
API = {"socket": 1, "netconn": 2}  # NR_APP_API_SOCKET, NR_APP_API_NETCONN
OPTS = """\
/* STM32Cube-style lwipopts.h */
#ifndef __LWIPOPTS__H__
#define __LWIPOPTS__H__
#define NO_SYS                      0
#define LWIP_SOCKET                 {socket}
#define LWIP_NETCONN                1
#define TCPIP_MBOX_SIZE             6
#define TCPIP_THREAD_PRIO           24
#define DEFAULT_TCP_RECVMBOX_SIZE   6
#define MEM_SIZE                    (16*1024)
#define TCP_MSS                     {mss}
#define TCP_WND                     (4*TCP_MSS)
{extra}
#endif
"""
# The NO_SYS 1 benchmark's result line, field for field; the thread-based ones print the same.
SOCK_LINE = re.compile(r"^SOCK dir=(tx|rx) bytes=\d+ ms=\d+ kbps=\d+ err_mem_waits=\d+ sndbuf_waits=\d+"
                       r"( err_mem_fragmented=\d+ err_mem_heap_full=\d+ heap_free=\d+ heap_largest_free=\d+"
                       r" segment_heap_request=\d+)?\r?$", re.M)
USAGE = ("usage: sock tx <ip> <port> (-t <sec> | -n <bytes>) [-w <write size>] | "
         "sock rx <ip> <port> (-t <sec> | -n <bytes>) [-r <read size>] [-d <us per read>]")


def _opts_file(tmp_path: Path, api: str, extra: str = "") -> Path:
    """The file for an API: sockets on (socket), off (netconn, chosen by default then), or on with the apps on
    the raw API by the file's own NR_APP_API 0 (raw: sockbench.c in the tcpip thread)."""
    path = tmp_path / api / "lwipopts.h"
    path.parent.mkdir(parents=True, exist_ok=True)
    if api == "raw":
        extra = f"#define NR_APP_API 0\n{extra}"
    path.write_text(OPTS.format(socket=0 if api == "netconn" else 1, mss=MSS, extra=extra))
    return path


def _run(lwip: str, workload: str, platform: str = "openmv-n6", seconds: int = 3) -> dict:
    proc = netrepro_cli("run", platform, "--lwip", lwip, "--link", "wifi-wire", "--workload", workload,
                        "--seconds", str(seconds), "--json", timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "passed", result.get("error")
    return result


def _sock_lines(result: dict) -> list[str]:
    return [m.group(0).rstrip("\r") for m in SOCK_LINE.finditer(Path(result["console_log"]).read_text())]


@pytest.mark.parametrize("api", API)
def test_sock_rx_reaches_the_window_bound(tmp_path: Path, api: str) -> None:
    result = _run(str(_opts_file(tmp_path, api)), "sock-rx")
    options, analysis = result["options"], result["analysis"]
    assert (options["NO_SYS"], options["LWIP_SOCKET"], options["NR_APP_API"]) == (0, int(api == "socket"), API[api])
    assert analysis["device_mss"] == MSS and analysis["device_window"]["max"] == WINDOW
    # the bound is min(link rate, the file's window / the RTT the capture measured)
    bound = min(analysis["link_rate_mbps"], WINDOW * 8 / (analysis["rtt_ms"] * 1000))
    assert analysis["bound_mbps"] == pytest.approx(bound, rel=0.01), analysis
    assert bound < 0.5 * analysis["link_rate_mbps"]  # the window, not the link, is what holds it
    assert result["throughput_mbps"] >= 0.9 * bound, (result["throughput_mbps"], bound)
    assert result["board_counts"] == {"err_mem_waits": 0, "sndbuf_waits": 0}
    assert len(_sock_lines(result)) == 1
    threads = {t["name"] for t in result["threads"]["after"]["threads"]}
    assert {"sock", "tcpip_thread", "nic_rx"} <= threads


@pytest.mark.parametrize("api", API)
def test_sock_tx_reaches_the_send_buffer_bound(tmp_path: Path, api: str) -> None:
    """The file leaves TCP_SND_BUF at 2 MSS: a blocking write returns once its data is queued, so at most
    that much is ever in flight, and the send buffer over the RTT is the bound (the peer's window is 64 KB)."""
    result = _run(str(_opts_file(tmp_path, api)), "sock-tx")
    options, analysis = result["options"], result["analysis"]
    assert options["NR_APP_API"] == API[api] and options["TCP_SND_BUF"] == SND_BUF
    assert analysis["device_mss"] == MSS and analysis["in_flight"]["max"] == SND_BUF
    bound = min(analysis["link_rate_mbps"], SND_BUF * 8 / (analysis["rtt_ms"] * 1000))
    assert result["throughput_mbps"] >= 0.9 * bound, (result["throughput_mbps"], bound, analysis["in_flight"])
    assert result["throughput_mbps"] <= 1.02 * bound
    assert analysis["verdict"] == "send-buffer-limited"
    assert result["board_counts"] == {"err_mem_waits": 0, "sndbuf_waits": 0}


def test_a_netif_api_file_adds_its_interface_through_the_api(tmp_path: Path, tree: Path) -> None:
    """LWIP_NETIF_API 1: main_os.c adds and raises the interface with netifapi_* from main's thread (calls
    into the tcpip thread) instead of netif_add() with the core held; the board then serves as before."""
    opts = _opts_file(tmp_path, "netconn", extra="#define LWIP_NETIF_API 1")
    platform = load_platform("openmv-n6")
    firmware = build_firmware(FirmwareConfig(platform, resolve_profile(platform, str(opts), lwip_tree=tree), tree))
    out = subprocess.run(["arm-none-eabi-nm", str(firmware.elf)], capture_output=True, text=True, check=True).stdout
    assert re.search(r" T netifapi_netif_add$", out, re.M), "netifapi_netif_add is not linked"
    result = _run(str(opts), "sock-rx")
    assert result["options"]["LWIP_NETIF_API"] == 1
    assert result["analysis"]["device_window"]["max"] == WINDOW
    assert result["throughput_mbps"] >= 0.9 * result["analysis"]["bound_mbps"]


def test_the_no_sys_1_result_line_is_unchanged() -> None:
    """The raw-API benchmark of a NO_SYS 1 build (the report's MicroPython semantics) prints the line the
    harness parses, field for field, and its counts reach the result."""
    result = _run("mp-n6-after", "sock-tx", seconds=2)
    assert result["options"]["NO_SYS"] == 1
    lines = _sock_lines(result)
    assert len(lines) == 1 and lines[0].startswith("SOCK dir=tx bytes="), lines
    assert set(result["board_counts"]) >= {"err_mem_waits", "sndbuf_waits"}
    assert result["bytes"] == int(re.search(r"bytes=(\d+)", lines[0]).group(1))


def _refusal(console: Console, line: str) -> str:
    with pytest.raises(NetreproError) as caught:
        console.command(line)
    return caught.value.problem.split("': ", 1)[1]


@pytest.mark.parametrize("lwip", ["mp-n6-after", "raw", "netconn", "socket"])
def test_the_command_is_read_alike_on_every_api(netrepro, tmp_path: Path, lwip: str) -> None:
    """One parser: the same command lines are refused with the same words on every build, and a connection the
    peer refuses ends in one error line (each API's own words for the reset)."""
    opts = lwip if lwip.startswith("mp-") else str(_opts_file(tmp_path, lwip))
    with netrepro.board("openmv-n6", opts, link="direct") as rig:
        peer = rig.addresses.peer
        console = rig.console
        if lwip != "mp-n6-after":
            assert (console.opts()["NO_SYS"], console.opts()["NR_APP_API"]) == (0, {"raw": 0, **API}[lwip])
        assert _refusal(console, "sock") == USAGE
        assert _refusal(console, f"sock up {peer} 5002 -t 1") == USAGE
        assert _refusal(console, f"sock rx {peer} 5002") == USAGE  # neither -t nor -n
        assert _refusal(console, f"sock rx {peer} 5002 -t 1 -n 5") == USAGE  # both
        assert _refusal(console, f"sock tx {peer} 5002 -t 1 -r 512") == USAGE  # -r is rx's
        assert _refusal(console, f"sock rx {peer} 5002 -t 1 -w 512") == USAGE  # -w is tx's
        assert _refusal(console, f"sock rx {peer} 0 -t 1") == USAGE
        assert _refusal(console, f"sock rx {peer} 5002 -t 1 -r 8193") == "write/read size must be 1..8192"
        console.command(f"sock tx {peer} 5999 -n 1000")  # nothing listens there: the peer resets
        event = console.wait_event("SOCK", timeout=30, dir="tx")
        expected = {"mp-n6-after": "ERR_RST", "raw": "ERR_RST", "netconn": "connect_ERR_RST",
                    "socket": "connect_errno_104"}
        assert event.fields == {"dir": "tx", "error": expected[lwip]}
        # the benchmark is idle again: a second test runs
        console.command(f"sock tx {peer} 5999 -n 1000")
        assert console.wait_event("SOCK", timeout=30, dir="tx").fields["error"] == expected[lwip]


# A peer that accepts and then neither reads nor writes nor closes: a dead application on a live host.
_SILENT = """
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.bind(("", int(sys.argv[1])))
s.listen(4)
print("LISTENING", flush=True)
held = []
while True:
    held.append(s.accept()[0])
"""


@pytest.mark.parametrize("api", API)
def test_a_silent_peer_ends_the_test_at_the_files_timeouts(netrepro, tmp_path: Path, api: str) -> None:
    """With LWIP_SO_RCVTIMEO and LWIP_SO_SNDTIMEO the benchmark sets its receive and send timeouts (here
    500 board ms): a peer that stops reading or never sends ends the test with an error line, not a thread
    blocked for good; the benchmark then runs again."""
    extra = "#define LWIP_SO_RCVTIMEO 1\n#define LWIP_SO_SNDTIMEO 1\n#define SOCK_IO_TIMEOUT_MS 500"
    timeout = {"socket": ("recv_errno_11", "send_errno_11"), "netconn": ("recv_ERR_TIMEOUT", "write_ERR_WOULDBLOCK")}
    with netrepro.board("openmv-n6", str(_opts_file(tmp_path, api, extra)), link="direct") as rig:
        assert rig.console.opts()["NR_APP_API"] == API[api]
        peer = rig.namespace.popen([sys.executable, "-c", _SILENT, "5003"], stdout=subprocess.PIPE, text=True)
        try:
            assert peer.stdout is not None and peer.stdout.readline().strip() == "LISTENING"
            rig.console.command(f"sock rx {rig.addresses.peer} 5003 -t 20")
            assert rig.console.wait_event("SOCK", timeout=30, dir="rx").fields["error"] == timeout[api][0]
            # tx: the peer's receive buffer and then its window fill; the blocked write gives up
            rig.console.command(f"sock tx {rig.addresses.peer} 5003 -t 20")
            assert rig.console.wait_event("SOCK", timeout=30, dir="tx").fields["error"] == timeout[api][1]
        finally:
            stop(peer, grace_s=1.0)
