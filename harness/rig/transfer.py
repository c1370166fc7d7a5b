"""What one direction of a workload moved (Transfer), and iperf2's CSV report read into transfers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from harness.analysis.frames import Connection
from harness.rig.devicetime import DeviceTime


@dataclass
class Transfer:
    """One direction's measured transfer."""

    direction: str                  # "rx" (peer -> device) or "tx" (device -> peer)
    bytes: int
    seconds: float
    per_second_mbps: list[float] = field(default_factory=list)
    source: str = ""                # which side measured it
    datagrams: dict[str, int] = field(default_factory=dict)  # udp-*: sent, received, lost, out_of_order
    board_counts: dict[str, int] = field(default_factory=dict)  # the board's own counts of it (its SOCK line:
                                                                # err_mem_waits, sndbuf_waits)
    ports: tuple[int, int] | None = None  # a TCP transfer iperf timed: (sender's port, receiver's port)
    timed_by: str = ""              # device time: how its seconds became the board's ("" when the board timed it)

    @property
    def mbps(self) -> float:
        return self.bytes * 8 / self.seconds / 1e6 if self.seconds > 0 else 0.0

    def in_board_time(self, time: DeviceTime) -> Transfer:
        """A transfer the peer timed against the wall clock, in the board's time (bytes stay as they are)."""
        if time.dilation == 1.0:
            return self
        return replace(self, seconds=self.seconds / time.dilation,
                       per_second_mbps=[time.board_mbps(x) for x in self.per_second_mbps],
                       timed_by="the D the board kept, from clock samples")

    def retimed(self, connections: Sequence[Connection], device_ip: str) -> Transfer:
        """A transfer the peer timed, its seconds taken from the capture (link time, the board's): how
        long its connection's data took there. Clock samples give the D kept only to a few percent over
        a short leg (sampled 4 times a wall second, the legs of iperf -r placed by their lengths); the
        capture stamps every frame in the board's time. Unchanged without a matching connection."""
        if self.ports is None or not self.timed_by:
            return self
        device_sends = self.direction == "tx"
        for conn in connections:
            sender, receiver = (conn.a, conn.b) if conn.a.port == self.ports[0] else (conn.b, conn.a)
            if (sender.port, receiver.port) != self.ports or (sender.ip == device_ip) != device_sends:
                continue
            seconds = conn.data_seconds(sender)
            if not seconds or not 0.5 <= seconds / self.seconds <= 2.0:
                return self  # not the transfer iperf counted (a capture cut short): keep the estimate
            scale = self.seconds / seconds
            return replace(self, seconds=seconds, per_second_mbps=[x * scale for x in self.per_second_mbps],
                           timed_by="its connection's data in the capture (the board's time)")
        return self


def parse_iperf_csv(text: str, device_ip: str) -> list[Transfer]:
    """iperf2 `-y C` lines -> one Transfer per connection (per-second figures and the total).

    iperf2 writes each line as sender address, port, receiver address, port (the server's port
    last), on the client and the server alike: a line whose sender is the board is tx, else rx.
    Per connection, iperf prints its interval lines and then the whole-test line (0.0-end) last.
    A UDP server's lines go on with jitter (ms), lost and total datagrams, lost %, out of order; its
    whole-test line's counts become the transfer's datagrams (a UDP client writes -1 for them).
    """
    rows: dict[tuple[str, str], list[tuple[float, float, int, int]]] = {}
    udp: dict[tuple[str, str], dict[str, int]] = {}
    ports: dict[tuple[str, str], tuple[int, int]] = {}
    for line in text.splitlines():
        cols = line.strip().split(",")
        if len(cols) < 9 or not cols[0].isdigit() or "-" not in cols[6]:
            continue
        direction = "tx" if cols[1] == device_ip else "rx"
        start, end = (float(x) for x in cols[6].split("-"))
        rows.setdefault((direction, cols[5]), []).append((start, end, int(cols[7]), int(cols[8])))
        ports[(direction, cols[5])] = (int(cols[2]), int(cols[4]))
        if len(cols) >= 14 and int(cols[11]) >= 0:
            udp[(direction, cols[5])] = {"lost": int(cols[10]), "total": int(cols[11]), "out_of_order": int(cols[13])}
    transfers = []
    for key, lines in rows.items():
        start, end, nbytes, _bps = lines[-1]
        intervals = [bps / 1e6 for _s, _e, _b, bps in lines[:-1]]
        transfers.append(Transfer(key[0], nbytes, end - start, intervals, source="peer iperf2",
                                  datagrams=udp.get(key, {}), ports=None if key in udp else ports[key]))
    return sorted(transfers, key=lambda t: t.direction)
