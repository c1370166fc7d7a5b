"""iperf on lwIP's sequential APIs: a NO_SYS 0 build's iperf in application threads (firmware/apps/iperf_os.c).

An STM32Cube-style options file (NO_SYS 0) on openmv-n6 builds the iperf app on BSD sockets (LWIP_SOCKET 1,
NR_APP_API's default then) or on netconn (the same file with LWIP_SOCKET 0, as many Cube projects have it),
instead of the raw-API lwiperf in the tcpip thread. The harness drives it exactly as it drives lwiperf (`iperf
server`, `iperf client`, the IPERF lines), so its rx, tx, rr and duplex workloads run unchanged over the wifi
preset as a wire. Each count is checked three ways where the run has them: the board's IPERF line, the peer's
iperf2 CSV and the capture's sequence space; the window and MSS the file sets are read from the capture.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.studies.soak import data_stream
from tests.conftest import netrepro_cli

pytestmark = pytest.mark.real

MSS = 1460
WINDOW = 4 * MSS
SND_BUF = 2 * MSS
OPTS = """\
/* STM32Cube-style lwipopts.h (CMSIS-RTOS2 priorities) */
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
#define TCP_SND_BUF                 (2*TCP_MSS)

#endif
"""
# The API, as the options file chooses it: LWIP_SOCKET, and the name the build's `help` gives its iperf.
APIS = {"socket": (1, "BSD sockets"), "netconn": (0, "netconn")}
_IPERF_LINE = re.compile(r"^IPERF (.*?)\r?$", re.MULTILINE)


def _run(tmp_path: Path, api: str, workload: str) -> dict:
    socket, api_name = APIS[api]
    opts = tmp_path / api / "lwipopts.h"
    opts.parent.mkdir(parents=True, exist_ok=True)
    opts.write_text(OPTS.format(socket=socket, mss=MSS))
    proc = netrepro_cli("run", "openmv-n6", "--lwip", str(opts), "--link", "wifi-wire", "--workload", workload,
                        "--seconds", "3", "--out", str(tmp_path / "runs"), "--json", timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["status"] == "passed", result.get("error")
    assert result["options"]["NO_SYS"] == 0 and result["options"]["LWIP_SOCKET"] == socket
    # The threaded iperf answered, not lwiperf: its help line names the API, its threads exist.
    assert f"iperf2 TCP test on {api_name}" in _console(result)
    assert {"iperf_srv", "iperf_tx"} <= {t["name"] for t in result["threads"]["after"]["threads"]}
    analysis = result["analysis"]
    assert analysis["device_mss"] == MSS and analysis["device_window"]["max"] == WINDOW, analysis
    return result


def _console(result: dict) -> str:
    return Path(result["console_log"]).read_text(errors="replace")


def _iperf_lines(result: dict) -> list[dict[str, str]]:
    return [dict(field.split("=", 1) for field in m.group(1).split()) for m in _IPERF_LINE.finditer(_console(result))]


def _one(lines: list[dict[str, str]], **want: str) -> dict[str, str]:
    found = [line for line in lines if all(line.get(k) == v for k, v in want.items())]
    assert len(found) == 1, (want, lines)
    return found[0]


def _cpu_ms(result: dict, thread: str) -> float:
    return next(t["run_ms"] for t in result["threads"]["cpu"]["threads"] if t["name"] == thread)


def _assert_rx_at_its_bound(result: dict, mbps: float) -> None:
    """The received stream reaches 0.9 of min(link rate, window/RTT), the window being the file's."""
    analysis = result["analysis"]
    bound = min(analysis["link_payload_mbps"], WINDOW * 8 / (analysis["rtt_ms"] * 1000))
    assert analysis["bound_mbps"] == pytest.approx(bound, rel=0.01), analysis
    assert mbps >= 0.9 * bound, (mbps, bound)


@pytest.mark.parametrize("api", APIS)
def test_rx_counts_every_byte_and_reaches_the_window_bound(tmp_path: Path, api: str) -> None:
    result = _run(tmp_path, api, "rx")
    board = _one(_iperf_lines(result), role="server", report="LWIPERF_TCP_DONE_SERVER")
    stream = data_stream(Path(result["capture"]), result["device"], "peer")
    assert stream is not None
    # Unlike lwiperf (harness/studies/soak.py), every byte counts, the iperf2 header included.
    assert int(board["bytes"]) == result["bytes"] == stream.bytes
    _assert_rx_at_its_bound(result, result["throughput_mbps"])
    assert _cpu_ms(result, "iperf_srv") > 0


@pytest.mark.parametrize("api", APIS)
def test_tx_counts_every_byte_and_fills_the_send_buffer(tmp_path: Path, api: str) -> None:
    result = _run(tmp_path, api, "tx")
    board = _one(_iperf_lines(result), role="client", report="done")
    stream = data_stream(Path(result["capture"]), result["device"], "device")
    assert stream is not None
    assert int(board["bytes"]) == stream.bytes
    # iperf2 2.1's server reads the first word of a client's header (its flags: 0 here, nothing more follows)
    # before it starts counting; the rest of the stream, header and all, it counts.
    assert result["bytes"] == stream.bytes - 4
    analysis = result["analysis"]
    assert result["options"]["TCP_SND_BUF"] == SND_BUF and analysis["in_flight"]["max"] == SND_BUF
    assert analysis["verdict"] == "send-buffer-limited", analysis["verdict_reason"]
    assert result["throughput_mbps"] >= 0.9 * SND_BUF * 8 / (analysis["rtt_ms"] * 1000)
    assert _cpu_ms(result, "iperf_tx") > 0


def _assert_sent_back(result: dict) -> None:
    """The test iperf2 asked back (-r, -d) went out from the sender's thread to the client's port. It ends
    with the peer's reset: the header's amount is iperf's -t, which the harness gives in wall seconds and
    the board reads as its own (D times longer), so the peer stops first, as it stops lwiperf."""
    peer = result["analysis"]["peer"].rsplit(":", 1)[0]
    back = _one(_iperf_lines(result), role="server", remote=f"{peer}:5001")
    assert back["report"] in ("LWIPERF_TCP_DONE_CLIENT", "LWIPERF_TCP_ABORTED_REMOTE"), back
    # The counts differ by what the reset caught unread or in flight.
    assert int(back["bytes"]) > 0 and result["bytes"]["tx"] > 0 and result["throughput_mbps"]["tx"] > 0


@pytest.mark.parametrize("api", APIS)
def test_rr_receives_then_sends_back(tmp_path: Path, api: str) -> None:
    result = _run(tmp_path, api, "rr")
    received = _one(_iperf_lines(result), role="server", report="LWIPERF_TCP_DONE_SERVER")
    assert int(received["bytes"]) == result["bytes"]["rx"]
    _assert_rx_at_its_bound(result, result["throughput_mbps"]["rx"])
    _assert_sent_back(result)


def test_duplex_moves_data_both_ways_at_once(tmp_path: Path) -> None:
    result = _run(tmp_path, "socket", "duplex")
    received = _one(_iperf_lines(result), role="server", report="LWIPERF_TCP_DONE_SERVER")
    assert int(received["bytes"]) == result["bytes"]["rx"]
    assert result["throughput_mbps"]["rx"] > 0
    _assert_sent_back(result)
