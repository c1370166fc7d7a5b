"""A soak's verdict (`netrepro run --minutes N`): after minutes of the board's time over a lossy, jittery,
reordering link, the board is alive, every byte is accounted for, and nothing leaked.

Every byte is counted three times, by three parties that cannot share a mistake:

peer     what the peer's program reports it sent (rx) or received (tx): the workload's own figure
capture  the data connection's sequence space between its SYN and its FIN, as the link's capture at the board's
         side saw it: what crossed to the board in order, lost frames' retransmissions included
board    what the board's own application counted (its console's IPERF line)

peer and capture must be equal. lwIP's lwiperf (the board's iperf on the raw API: NO_SYS 1, or
NR_APP_API 0) counts its first segment as the 24 bytes of the iperf header it reads from it, whatever else
that segment carries (lwiperf.c, lwiperf_tcp_recv), so the board's count is the capture's less the rest of
that first segment; the accounting names that difference. The iperf on sockets or netconn
(firmware/apps/iperf_os.c) counts every byte.
"""

from __future__ import annotations

import re
import struct
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.link import read_pcap
from harness.runs.result import RunResult

LWIPERF_HEADER = 24  # lwiperf_settings_t: what lwiperf counts of its first segment
_IPERF_LINE = re.compile(r"IPERF role=(\w+) [^\r\n]*?bytes=(\d+)")
_SYN, _FIN = 0x02, 0x01


@dataclass(frozen=True)
class Stream:
    """One direction of a TCP connection in the capture."""

    bytes: int          # FIN's sequence number less the SYN's, less one
    first_segment: int  # payload of the first data segment seen


@dataclass(frozen=True)
class ByteAccount:
    peer: int
    capture: int | None
    board: int | None
    board_uncounted: int  # what lwiperf leaves out of its count (the rest of its first segment)
    accounted: bool
    note: str


@dataclass(frozen=True)
class SoakVerdict:
    alive: dict[str, bool]
    bytes: ByteAccount
    leaks: str
    ok: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        alive = ", ".join(f"{k} {'answered' if v else 'SILENT'}" for k, v in self.alive.items()) or "not checked"
        b = self.bytes
        return [f"soak {'passed' if self.ok else 'FAILED'}: board {alive}; leaks {self.leaks}",
                f"  bytes    peer {b.peer}, capture {b.capture}, board {b.board}: {b.note}"]


def judge_soak(result: RunResult) -> SoakVerdict:
    """The soak's verdict from a finished run (its result, capture and console log)."""
    account = account_bytes(result)
    alive = result.alive or {}
    leaks = result.leaks.short() if result.leaks else "not checked"
    ok = bool(alive) and all(alive.values()) and account.accounted and bool(result.leaks and result.leaks.ok)
    return SoakVerdict(alive, account, leaks, ok)


def account_bytes(result: RunResult) -> ByteAccount:
    """peer vs capture vs board for a one-way iperf workload (rx: peer -> board, tx: board -> peer)."""
    direction = result.workload.get("name")
    if direction not in ("rx", "tx") or not isinstance(result.bytes, int):
        return ByteAccount(result.bytes if isinstance(result.bytes, int) else 0, None, None, 0, False,
                           f"only rx and tx are accounted (this run: {direction})")
    sender = "peer" if direction == "rx" else "device"
    stream = data_stream(Path(result.capture), result.device, sender)
    board = board_count(Path(result.console_log), role="server" if direction == "rx" else "client")
    if stream is None:
        return ByteAccount(result.bytes, None, board, 0, False, "no complete connection (SYN to FIN) in the capture")
    lwiperf = runs_lwiperf(result)
    uncounted = max(0, stream.first_segment - LWIPERF_HEADER) if direction == "rx" and lwiperf else 0
    accounted = result.bytes == stream.bytes and board is not None and board == stream.bytes - uncounted
    short = stream.bytes - board if board is not None else "no board count"
    counts = (f"the board's lwiperf leaves {uncounted} bytes of its first segment uncounted" if lwiperf else
              "the board's iperf counts every byte")
    note = (f"all accounted for ({counts})" if accounted else
            f"MISMATCH: peer - capture = {result.bytes - stream.bytes}, capture - board = {short} "
            f"(expected {uncounted})")
    return ByteAccount(result.bytes, stream.bytes, board, uncounted, accounted, note)


def runs_lwiperf(result: RunResult) -> bool:
    """Whether the board's iperf server is lwIP's lwiperf (raw API) rather than iperf_os.c's on a
    sequential API: the effective options say (NR_APP_API is only reported by a NO_SYS 0 build)."""
    options = result.options or {}
    return options.get("NO_SYS", 1) != 0 or options.get("NR_APP_API", 0) == 0


def data_stream(capture: Path, device_ip: str, sender: str) -> Stream | None:
    """The largest connection's data direction (sent by "peer" or "device") between its SYN and its FIN."""
    device = bytes(map(int, device_ip.split(".")))
    streams: dict[tuple[bytes, int, int], dict[str, int | None]] = {}
    for _ts, frame in read_pcap(capture) if capture.is_file() else []:
        if len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
            continue
        if (frame[26:30] == device) != (sender == "device"):
            continue
        ihl = (frame[14] & 0x0F) * 4
        tcp = frame[14 + ihl:]
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack("!HHI", tcp[:8])
        # lengths from the IP header, not the frame: a capture with --snaplen keeps only the headers
        flags, payload = tcp[13], struct.unpack("!H", frame[16:18])[0] - ihl - (tcp[12] >> 4) * 4
        s = streams.setdefault((frame[26:30], sport, dport), {"syn": None, "fin": None, "first": None})
        if flags & _SYN:
            s["syn"] = seq
        if flags & _FIN:
            s["fin"] = seq + payload
        if payload and s["first"] is None and s["syn"] is not None and seq == (s["syn"] + 1) & 0xFFFFFFFF:
            s["first"] = payload  # the segment that starts the data (a retransmission of it if it was lost)
    complete = [Stream((s["fin"] - s["syn"] - 1) & 0xFFFFFFFF, s["first"] or 0)
                for s in streams.values() if s["syn"] is not None and s["fin"] is not None]
    return max(complete, key=lambda st: st.bytes, default=None)


def board_count(console_log: Path, role: str) -> int | None:
    """The bytes of the board's last IPERF line for this role (None: it printed none)."""
    text = console_log.read_text(errors="replace") if console_log.is_file() else ""
    counts = [int(n) for r, n in _IPERF_LINE.findall(text) if r == role]
    return counts[-1] if counts else None
