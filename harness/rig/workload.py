"""Workloads: what traffic a run makes between the board and the Linux peer, one WorkloadKind subclass each
(its docstring says what it runs; KINDS names them: rx, tx, duplex, rr, discard, sock-rx, sock-tx, udp-rx,
udp-tx), and the peer's programs their legs run."""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, ClassVar

from harness.core.errors import NetreproError
from harness.core.process import stop
from harness.rig.devicetime import LAG_ALLOWANCE, DeviceTime
from harness.rig.peer_services import PeerService
from harness.rig.session import Session
from harness.rig.transfer import Transfer, parse_iperf_csv

IPERF_PORT = 5001
SOCK_PORT = 5002
_SOCK_MEASURE = ("dir", "bytes", "ms", "kbps")  # the SOCK line's measurement; its other fields are counts
UDP_PORT = 5003
UDP_LEN = 1470  # iperf2's UDP payload: a datagram fills one Ethernet frame (1470 + 8 + 20 + 14 = 1512)
# udp-* without a rate: the sender offers this much (board bit/s), more than any preset's link carries,
# so the link, not the sender, sets the goodput (the excess waits in the link's queue and is dropped
# there). An emulated NIC sends as fast as the host copies, far beyond any real wire: unpaced, the
# board's source would only flood the host.
UDP_OFFERED_BPS = 100_000_000
DISCARD_BYTES = 8 * 1024 * 1024
_SLACK_S = 30.0  # on top of the transfer's own time, for slow emulated boards


DEFAULT_CHUNK = 1460  # a workload's write/read size unless the case or report gives one (one MSS)


@dataclass(frozen=True)
class Workload:
    """One workload as a run gives it: its kind by name (KINDS) and how much of it."""

    name: str
    seconds: float = 10.0
    bytes: int | None = None        # byte-count variant; discard defaults to the Ethernut report's 8 MiB
    chunk: int = DEFAULT_CHUNK      # discard: bytes per write; sock-*: the application's write/read size
    warmup_s: float = 0.0           # a transfer of this length first, not measured
    rate_bps: int | None = None     # udp-*: the offered rate in board bit/s (None: UDP_OFFERED_BPS)

    def __post_init__(self) -> None:
        kind = workload_kind(self.name)
        if self.seconds <= 0 or (self.bytes is not None and self.bytes <= 0) or self.chunk <= 0:
            raise NetreproError("workload seconds, bytes and chunk must be positive", "fix the numbers")
        if kind.udp and self.bytes is not None:
            raise NetreproError(f"{self.name} runs for a time, not a byte count", "give seconds instead of bytes")
        if self.rate_bps is not None and self.rate_bps <= 0:
            raise NetreproError("the UDP rate must be positive", "give a rate such as 43mbit, or none")

    @property
    def kind(self) -> WorkloadKind:
        return KINDS[self.name]

    def describe(self) -> dict[str, object]:
        described: dict[str, object] = {"name": self.name, "seconds": self.seconds, "bytes": self.bytes,
                                        "chunk": self.chunk, "warmup_s": self.warmup_s}
        if self.kind.udp:
            described["rate_bps"] = self.rate_bps
        return described

    def amount(self) -> str:
        """How much of it a run asks for, in the user's words."""
        return f"{self.bytes} bytes" if self.bytes else f"{self.seconds:g} s"


class WorkloadKind:
    """What one workload is: which way its data goes, and its legs (`run`: how the peer's side starts, how
    the board's side runs, and how its figure is read). One subclass per workload; KINDS names them."""

    name: ClassVar[str]
    device_sends: ClassVar[bool] = False  # its data flows device -> peer
    two_way: ClassVar[bool] = False       # it measures both directions: results per direction
    udp: ClassVar[bool] = False           # datagrams, no connection: counted, not acknowledged; runs for a time
    chunked: ClassVar[bool] = False       # the board writes or reads in chunks of Workload.chunk
    peer_client: ClassVar[tuple[str, ...] | None] = None  # the peer's iperf client against the board's iperf
                                                           # server, with these flags (None: no such client)
    legs: ClassVar[int] = 1               # the peer client's legs one after the other (iperf -r: two)
    board_may_end: ClassVar[bool] = False  # timed, its peer client may be ended by the board's clock (one-way rx)

    def run(self, rig: Session, workload: Workload, prefix: str) -> list[Transfer]:
        """Run it on a started rig (its logs named PREFIX...); one Transfer per direction measured."""
        assert self.peer_client is not None, f"{self.name} has no legs of its own"
        return _peer_client(rig, workload, list(self.peer_client), f"{prefix}peer-iperf-client.csv")

    def amount(self, workload: Workload) -> str:
        return workload.amount()


class Rx(WorkloadKind):
    """peer -> device: iperf2 client in the namespace against the firmware's lwiperf server"""

    name, peer_client, board_may_end = "rx", (), True


class Duplex(WorkloadKind):
    """both at once (iperf2 -d)"""

    name, two_way, peer_client = "duplex", True, ("-d",)


class Rr(WorkloadKind):
    """rx then tx (iperf2 -r)"""

    name, two_way, peer_client, legs = "rr", True, ("-r",), 2


class Tx(WorkloadKind):
    """device -> peer: the firmware's iperf client against an iperf2 server in the namespace"""

    name, device_sends = "tx", True

    def run(self, rig: Session, workload: Workload, prefix: str) -> list[Transfer]:
        return [_device_client(rig, workload, f"{prefix}peer-iperf-server.csv")]


class Discard(WorkloadKind):
    """device sends N bytes to the peer's port 9 service, timed from SYN to FIN"""

    name, device_sends, chunked = "discard", True, True

    def run(self, rig: Session, workload: Workload, prefix: str) -> list[Transfer]:
        return [_discard(rig, workload, f"{prefix}peer-discard.json")]

    def amount(self, workload: Workload) -> str:
        return f"{workload.bytes or DISCARD_BYTES} bytes in chunks of {workload.chunk}"


class SockRx(WorkloadKind):
    """peer -> device through a socket benchmark with MicroPython's lwIP socket semantics"""

    name, chunked = "sock-rx", True

    def run(self, rig: Session, workload: Workload, prefix: str) -> list[Transfer]:
        return [_socket_benchmark(rig, workload, "tx" if self.device_sends else "rx",
                                  f"{prefix}peer-{self.name}.json")]


class SockTx(SockRx):
    """device -> peer, the same (tcp_write COPY up to tcp_sndbuf, 50 ms waits on ERR_MEM)"""

    name, device_sends = "sock-tx", True


class UdpRx(WorkloadKind):
    """peer -> device: iperf2 -u client at the offered rate into the firmware's UDP sink (timed by the board)"""

    name, udp = "udp-rx", True

    def run(self, rig: Session, workload: Workload, prefix: str) -> list[Transfer]:
        return [_udp_to_device(rig, workload, f"{prefix}peer-iperf-udp-client.csv")]


class UdpTx(WorkloadKind):
    """device -> peer: the firmware's UDP source (iperf2's datagram format) into `iperf -s -u`"""

    name, udp, device_sends = "udp-tx", True, True

    def run(self, rig: Session, workload: Workload, prefix: str) -> list[Transfer]:
        return [_udp_from_device(rig, workload, f"{prefix}peer-iperf-udp-server.csv")]


# every workload by its name, in the order the command line lists them
KINDS: dict[str, WorkloadKind] = {k.name: k for k in (Rx(), Tx(), Duplex(), Rr(), Discard(), SockRx(), SockTx(),
                                                      UdpRx(), UdpTx())}
WORKLOADS = tuple(KINDS)
ONE_WAY = tuple(name for name, kind in KINDS.items() if not kind.two_way)  # what compare, sweep, report new take


def workload_kind(name: str) -> WorkloadKind:
    """The workload of that name; an unknown one is a one-line error naming them all."""
    if name not in KINDS:
        raise NetreproError(f"unknown workload '{name}'", f"use one of: {', '.join(WORKLOADS)}")
    return KINDS[name]


def run_workload(rig: Session, workload: Workload) -> list[Transfer]:
    """Run the workload on a started rig; one Transfer per direction measured."""
    warm = _warmup(workload)
    if warm is not None:
        warm.kind.run(rig, warm, "warmup-")
    return workload.kind.run(rig, workload, "")


def start_board_services(rig: Session, workload: Workload) -> None:
    """Start the board's servers the workload's legs will use (its iperf server), ahead of them: a server
    listens from then on, so what it holds belongs to the board before the workload (the leak check's
    baseline), not to the connections the workload makes. Starting one again is harmless."""
    if any(leg.kind.peer_client is not None for leg in (_warmup(workload), workload) if leg is not None):
        rig.console.command("iperf server")


def _warmup(workload: Workload) -> Workload | None:
    if workload.warmup_s <= 0:
        return None
    return Workload("tx" if workload.kind.device_sends else "rx", seconds=workload.warmup_s)


def _peer_amount(workload: Workload, time: DeviceTime, allowance: float = 1.0) -> list[str]:
    """iperf's amount and report interval, on the wall clock: one report per second of the board's time;
    its duration `allowance` times the planned wall time (more than 1: the board's clock ends it)."""
    interval = ["-i", f"{time.wall_s(1.0):.4g}"]
    return ["-n", str(workload.bytes), *interval] if workload.bytes else \
        ["-t", f"{time.wall_s(workload.seconds) * allowance:.4g}", *interval]


def _ends_on_board_clock(rig: Session, workload: Workload) -> bool:
    """Whether the peer's iperf is stopped by the board's clock: a timed one-way rx whose board sends its clock.
    iperf times itself on the wall clock, so a board that falls behind its planned D would otherwise get
    fewer seconds of its own time than asked (rr's two legs and duplex's return leg are iperf's own affair)."""
    return workload.kind.board_may_end and not workload.bytes and rig.platform.sends_clock(rig.time)


def _budget(rig: Session, workload: Workload, legs: int = 1, allowance: float | None = None) -> float:
    """How long to wait on the wall clock for the workload to end (`allowance` times its planned wall time;
    default _lag_allowance)."""
    board_s = legs * (workload.seconds if not workload.bytes else max(workload.seconds, 60.0))
    return rig.time.wall_s(board_s) * (_lag_allowance(rig) if allowance is None else allowance) + _SLACK_S


# A leg the board's clock ends (rx on a board that sends its clock) gives iperf's own duration and the wait this
# many times the planned wall time: only backstops, since the board ends it and a board whose clock stops is given
# up after _CLOCK_STOPPED_S (a CI run planned at D = 0.8 kept 6.8: 5 times let iperf end itself at 1.2 board s of 2).
_BOARD_ENDED_ALLOWANCE = 30.0
_CLOCK_STOPPED_S = 20.0  # wall seconds without the board's clock moving: the board (or its emulator) has stopped


def _lag_allowance(rig: Session) -> float:
    """How many times its planned wall time a board-timed leg may take: the link follows a board that
    falls behind, so the leg takes longer and the board, not the peer, ends it."""
    return LAG_ALLOWANCE if rig.platform.sends_clock(rig.time) else 1.0


def _peer_client(rig: Session, workload: Workload, flags: list[str], log_name: str) -> list[Transfer]:
    start_board_services(rig, workload)
    on_board_clock = _ends_on_board_clock(rig, workload)
    amount = _peer_amount(workload, rig.time, _BOARD_ENDED_ALLOWANCE if on_board_clock else 1.0)
    argv = ["iperf", "-c", rig.addresses.device, "-p", str(IPERF_PORT), *amount, "-y", "C", *flags]
    legs = workload.kind.legs
    budget = _budget(rig, workload, legs, _BOARD_ENDED_ALLOWANCE if on_board_clock else None)
    start = time.monotonic()
    out, err, returncode, samples = _run_sampling_clock(rig, argv, budget, workload.seconds if on_board_clock else None)
    (rig.run_dir / log_name).write_text(out + err)
    measured = parse_iperf_csv(out, rig.addresses.device)
    transfers = [t.in_board_time(_kept(rig, samples, leg)) for t, leg in _legs(measured, start, legs > 1)]
    if returncode != 0 or not transfers:
        raise NetreproError(f"iperf against the board failed: {(err or out).strip()[-200:]}",
                            f"see {rig.run_dir / log_name} and the console log")
    return transfers


ClockSample = tuple[float, float, float]  # Session.clock_sample(): monotonic s, board s, link wall s


def _run_sampling_clock(rig: Session, argv: list[str], timeout: float, stop_after_board_s: float | None = None
                        ) -> tuple[str, str, int, list[ClockSample]]:
    """Run a peer program in the namespace, sampling the board's clock as it runs (device time); with
    `stop_after_board_s`, interrupt it (SIGINT: iperf2 then ends its test and reports) once the board's
    clock has run that long."""
    proc = rig.namespace.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                               text=True)
    # Read its output as it comes: a long run's interval reports fill a pipe (64 KiB, ~700 iperf lines), and a
    # program blocked writing to it never ends (a 10-minute device-time soak at D = 6 stopped so).
    drains = [_Drain(proc.stdout), _Drain(proc.stderr)]
    samples: list[ClockSample] = []
    moved = time.monotonic()  # when the board's clock was last seen to move
    deadline = moved + timeout
    interrupted = False
    try:
        while proc.poll() is None:
            now = time.monotonic()
            if now > deadline:
                raise NetreproError(f"'{' '.join(argv)}' in the namespace took over {timeout:g} s", "retry")
            if (sample := rig.clock_sample()) is not None:
                if samples and sample[1] > samples[-1][1]:
                    moved = now
                samples.append(sample)
                if (stop_after_board_s is not None and not interrupted
                        and sample[1] - samples[0][1] >= stop_after_board_s):
                    proc.send_signal(signal.SIGINT)  # nsenter exec'd iperf: this is iperf's own pid
                    interrupted = True
            if stop_after_board_s is not None and not interrupted and now - moved > _CLOCK_STOPPED_S:
                raise NetreproError(f"the board's clock did not move for {_CLOCK_STOPPED_S:g} s of wall time during "
                                    f"'{argv[0]}'", "the board or its emulator stopped: see the console log")
            time.sleep(0.25)
        out, err = (drain.text() for drain in drains)  # to their end, before stop() closes the pipes
    finally:
        stop(proc, grace_s=1.0)
    if (sample := rig.clock_sample()) is not None:
        samples.append(sample)
    return out, err, proc.returncode or 0, samples


class _Drain:
    """A pipe read to its end by a thread of its own, kept as text."""

    def __init__(self, pipe: IO[str] | None) -> None:
        self.parts: list[str] = []
        self.thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.thread.start()

    def _read(self, pipe: IO[str] | None) -> None:
        if pipe is not None:
            with contextlib.suppress(OSError, ValueError):  # closed under it by a teardown
                for line in pipe:
                    self.parts.append(line)

    def text(self, timeout: float = 5.0) -> str:
        self.thread.join(timeout)
        return "".join(self.parts)


def _legs(transfers: list[Transfer], start: float, sequential: bool) -> list[tuple[Transfer, tuple[float, float]]]:
    """Each transfer with the stretch of this process's monotonic clock it took: iperf -r runs the
    peer's leg (rx) and then the board's (tx); otherwise every leg starts at once."""
    out, at = [], start
    for t in sorted(transfers, key=lambda t: t.direction):  # rx first
        out.append((t, (at, at + t.seconds)))
        if sequential:
            at += t.seconds
    return out


def _kept(rig: Session, samples: list[ClockSample], span: tuple[float, float]) -> DeviceTime:
    """The run's time with the D the board kept over that stretch of wall time (the planned D without samples)."""
    if len(samples) < 2:
        return rig.time
    begin, end = (_board_s_at(samples, m) for m in span)
    if end - begin < 0.05:
        return rig.time
    return replace(rig.time, dilation=(span[1] - span[0]) / (end - begin))


def _board_s_at(samples: list[ClockSample], mono: float) -> float:
    """The board's seconds at a moment of this process's monotonic clock, interpolated between samples."""
    points = sorted((m, board) for m, board, _wall in samples)
    if mono <= points[0][0]:
        return points[0][1]
    for (m0, b0), (m1, b1) in itertools.pairwise(points):
        if m0 <= mono <= m1:
            return b0 + (b1 - b0) * (mono - m0) / (m1 - m0) if m1 > m0 else b1
    return points[-1][1]


def _device_client(rig: Session, workload: Workload, log_name: str) -> Transfer:
    log = open(rig.run_dir / log_name, "w")  # noqa: SIM115
    server = rig.namespace.popen(["iperf", "-s", "-p", str(IPERF_PORT), "-i", f"{rig.time.wall_s(1.0):.4g}", "-y", "C"],
                                 stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        _wait_listening(rig, IPERF_PORT)
        mark = rig.clock_mark()
        amount = f"-n {workload.bytes}" if workload.bytes else f"-t {workload.seconds:g}"
        rig.console.command(f"iperf client {rig.addresses.peer} -p {IPERF_PORT} {amount}")
        event = rig.console.wait_event("IPERF", timeout=_budget(rig, workload), role="client")
        if event.fields.get("report") == "error":
            raise NetreproError(f"the board's iperf client failed: {event.fields}", "see the console log")
        time.sleep(0.5)  # the server prints its summary when the connection closes
        kept = rig.time_since(mark)
    finally:
        stop(server, grace_s=2.0)
        log.close()
    seen = parse_iperf_csv((rig.run_dir / log_name).read_text(), rig.addresses.device)
    transfers = [t.in_board_time(kept) for t in seen if t.direction == "tx"]
    if not transfers:
        raise NetreproError("the peer's iperf server saw no transfer from the board", f"see {rig.run_dir / log_name}")
    return transfers[0]


def _discard(rig: Session, workload: Workload, out_name: str) -> Transfer:
    total = workload.bytes or DISCARD_BYTES
    out = rig.run_dir / out_name
    with _peer_service(rig, PeerService("discard", str(out), accept_timeout=_budget(rig, workload),
                                          bucket_s=rig.time.wall_s(1.0))) as server:
        rig.console.command(f"discard {rig.addresses.peer} {total} {workload.chunk}")
        event = rig.console.wait_event("DISCARD", timeout=max(_budget(rig, workload), rig.time.wall_s(total * 8 / 1e5)))
        if "error" in event.fields:
            raise NetreproError(f"the board's discard sender failed: {event.fields['error']}", "see the console log")
        server.wait(timeout=_SLACK_S)
    seen = json.loads(out.read_text()) if out.is_file() else {}
    if seen.get("bytes") != total:
        raise NetreproError(f"the peer's discard service got {seen.get('bytes')} of {total} bytes",
                            f"see {out} and the console log")
    per_second = [b * 8 / 1e6 for b in seen["per_second_bytes"]]  # bytes per second of the board's time
    return Transfer("tx", total, event.number("ms") / 1000.0, per_second, source="device SYN..FIN")


def _socket_benchmark(rig: Session, workload: Workload, direction: str, out_name: str) -> Transfer:
    """The device's socket benchmark against the peer's sink (direction tx) or source (rx)."""
    out = rig.run_dir / out_name
    service = PeerService("sink" if direction == "tx" else "source", str(out), SOCK_PORT, _budget(rig, workload),
                          seconds=None if workload.bytes else rig.time.wall_s(workload.seconds) * _lag_allowance(rig),
                          bytes=workload.bytes,
                          bucket_s=rig.time.wall_s(1.0))
    with _peer_service(rig, service) as server:
        device_amount = f"-n {workload.bytes}" if workload.bytes else f"-t {workload.seconds:g}"
        size_flag = "-w" if direction == "tx" else "-r"
        rig.console.command(f"sock {direction} {rig.addresses.peer} {SOCK_PORT} {device_amount} "
                            f"{size_flag} {workload.chunk}")
        event = rig.console.wait_event("SOCK", timeout=_budget(rig, workload), dir=direction)
        if "error" in event.fields:
            raise NetreproError(f"the board's socket benchmark failed: {event.fields['error']}",
                                "see the console log")
        server.wait(timeout=_SLACK_S)
    seen = json.loads(out.read_text()) if out.is_file() else {}
    per_second = [b * 8 / 1e6 for b in seen.get("per_second_bytes", [])]
    counts = {k: int(v) for k, v in event.fields.items() if k not in _SOCK_MEASURE and v.isdigit()}
    return Transfer(direction, event.number("bytes"), event.number("ms") / 1000.0, per_second,
                    source=f"device socket benchmark ({', '.join(f'{k}={v}' for k, v in event.fields.items())})",
                    board_counts=counts)


@contextlib.contextmanager
def _peer_service(rig: Session, service: PeerService) -> Iterator[subprocess.Popen]:
    """A harness.rig.peer_services program in the namespace, listening before the board is told to connect."""
    server = rig.namespace.popen(service.argv(),
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 text=True, cwd=str(Path(__file__).resolve().parents[2]))
    try:
        if server.stdout is None or server.stdout.readline().strip() != "LISTENING":
            raise NetreproError(f"the peer's {service.service} service did not start", f"see {rig.run_dir}")
        yield server
    finally:
        stop(server, grace_s=2.0)
        if server.stdout:
            server.stdout.close()


def _wait_listening(rig: Session, port: int, timeout: float = 5.0, udp: bool = False) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = rig.namespace.run(["ss", "-Huln" if udp else "-Htln", f"sport = :{port}"], check=False).stdout
        if out.strip():
            return
        time.sleep(0.05)
    raise NetreproError(f"the peer's iperf server is not listening on port {port}", "see the run folder")


def _udp_to_device(rig: Session, workload: Workload, log_name: str) -> Transfer:
    """udp-rx: iperf2's UDP client offers the rate (in the wall time that is that rate in the board's);
    the board's sink counts and times what arrives (its own clock), the client's bytes say what was sent."""
    rig.console.command(f"udp sink {UDP_PORT}")
    # The flood must not start while the peer resolves the board's address: Linux queues the first
    # datagrams during ARP and flushes that queue while the sender's next ones already pass it (seen: 35 before 24).
    rig.ping()
    offered = workload.rate_bps or UDP_OFFERED_BPS
    argv = ["iperf", "-c", rig.addresses.device, "-u", "-p", str(UDP_PORT), "-l", str(UDP_LEN),
            "-b", f"{offered / rig.time.dilation:.0f}", "-t", f"{rig.time.wall_s(workload.seconds):.4g}", "-y", "C"]
    out, err, returncode, _samples = _run_sampling_clock(rig, argv, _budget(rig, workload))
    (rig.run_dir / log_name).write_text(out + err)
    _until(lambda: _udp_sink_counts(rig).get("fin") == "1", rig.time.wall_s(5.0) + 5)
    rig.console.command("udp stop")
    seen = rig.console.wait_event("UDP", timeout=10, dir="rx")
    sent = [t for t in parse_iperf_csv(out, rig.addresses.device) if t.direction == "rx"]
    if returncode != 0 or not sent:
        raise NetreproError(f"iperf -u against the board failed: {(err or out).strip()[-200:]}",
                            f"see {rig.run_dir / log_name}")
    received = int(seen.number("datagrams"))
    if received == 0:
        raise NetreproError("the board's UDP sink got no datagram", f"see {rig.run_dir / log_name} and the console log")
    datagrams = {"sent": sent[0].bytes // UDP_LEN, "received": received,
                 "lost": sent[0].bytes // UDP_LEN - received, "out_of_order": int(seen.number("ooo"))}
    return Transfer("rx", int(seen.number("bytes")), seen.number("ms") / 1000.0, source="device UDP sink",
                    datagrams=datagrams)


def _udp_from_device(rig: Session, workload: Workload, log_name: str) -> Transfer:
    """udp-tx: the board's UDP source for the workload's seconds (its time) into `iperf -s -u`, whose
    report (timed on the wall clock, converted with the D the board kept) gives bytes and lost datagrams."""
    log = open(rig.run_dir / log_name, "w")  # noqa: SIM115
    server = rig.namespace.popen(["iperf", "-s", "-u", "-p", str(UDP_PORT), "-l", str(UDP_LEN), "-y", "C"],
                                 stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        _wait_listening(rig, UDP_PORT, udp=True)
        mark = rig.clock_mark()
        rig.console.command(f"udp send {rig.addresses.peer} {UDP_PORT} -t {math.ceil(workload.seconds)} "
                            f"-l {UDP_LEN} -b {workload.rate_bps or UDP_OFFERED_BPS}")
        event = rig.console.wait_event("UDP", timeout=_budget(rig, workload), dir="tx")
        if "error" in event.fields:
            raise NetreproError(f"the board's UDP source failed: {event.fields['error']}", "see the console log")
        # the server writes its report when the end datagram arrives, behind what the link still holds
        _until(lambda: any(t.datagrams for t in parse_iperf_csv((rig.run_dir / log_name).read_text(),
                                                                   rig.addresses.device)), 10.0)
        kept = rig.time_since(mark)
    finally:
        stop(server, grace_s=2.0)
        log.close()
    seen = [t for t in parse_iperf_csv((rig.run_dir / log_name).read_text(), rig.addresses.device)
            if t.direction == "tx" and t.datagrams]
    if not seen:
        raise NetreproError("the peer's iperf -u server saw no datagram from the board",
                            f"see {rig.run_dir / log_name}")
    got = seen[0].datagrams
    datagrams = {"sent": int(event.number("datagrams")), "received": got["total"] - got["lost"],
                 "lost": int(event.number("datagrams")) - (got["total"] - got["lost"]),
                 "out_of_order": got["out_of_order"], "refused": int(event.number("refused"))}
    return replace(seen[0].in_board_time(kept), datagrams=datagrams, source="peer iperf2 -u server")


def _udp_sink_counts(rig: Session) -> dict[str, str]:
    """The board's UDP sink's counts so far (`udp report`)."""
    rig.console.command("udp report")
    return rig.console.wait_event("UDP", timeout=10, dir="rx").fields


def _until(done: Callable[[], bool], timeout: float, every: float = 0.25) -> bool:
    """Poll until done() or the timeout (wall seconds); whether it got done."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True
