"""Reading a capture: tshark's TCP dissection as rows of fields, through pyshark's machinery.

pyshark's per-packet objects (PDML, JSON or EK) cost tens of microseconds each, and pyshark's
EK/JSON readers cannot take a ``-e`` field selection (they expect a ``frame`` layer that field
output does not have). ``TsharkFields`` is therefore a pyshark ``FileCapture`` that asks tshark
for tab-separated fields (``-T fields -e ...``) and reads them in large chunks through pyshark's
output-parser interface; parameters, preferences and the capture loop are pyshark's. tshark
itself is started with ``subprocess.Popen`` and its pipes are attached to the loop, so no
asyncio child watcher is involved. The whole read runs in a worker thread with its own event
loop: it works from inside a running asyncio program, from a pytest test, and after other code
has installed a signal-based child watcher.

``TsharkStream`` hands the rows over as tshark writes them, through a queue of a few blocks: the
analysis (``scan.CaptureScan``) keeps counters and typed columns, never the rows, and tshark waits
on its pipe when the analysis falls behind. ``read_capture`` still gives every row as a list, for
the readers that want them all (``board_capture``).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import queue
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.process import spawn

# tshark preferences: timestamps per conversation, relative sequence numbers, the sequence
# analysis (retransmissions, in flight, RTT). No reassembly: nothing above TCP is needed.
TSHARK_PREFS = {
    "tcp.calculate_timestamps": "TRUE",
    "tcp.relative_sequence_numbers": "TRUE",
    "tcp.analyze_sequence_numbers": "TRUE",
    "tcp.track_bytes_in_flight": "TRUE",
    "tcp.desegment_tcp_streams": "FALSE",
    "tcp.try_heuristic_first": "FALSE",
    "tcp.check_checksum": "FALSE",
}

# (column name, tshark field): one row per frame holds these, in this order
FIELDS = (
    ("num", "frame.number"),
    ("t", "frame.time_relative"),
    ("len", "frame.len"),
    ("caplen", "frame.cap_len"),
    ("protocols", "frame.protocols"),
    ("ip_src", "ip.src"),
    ("ip_dst", "ip.dst"),
    ("ip6_src", "ipv6.src"),
    ("ip6_dst", "ipv6.dst"),
    ("ip_proto", "ip.proto"),
    ("ip6_nxt", "ipv6.nxt"),
    ("stream", "tcp.stream"),
    ("sport", "tcp.srcport"),
    ("dport", "tcp.dstport"),
    ("flags", "tcp.flags"),
    ("seq", "tcp.seq"),
    ("ack", "tcp.ack"),
    ("tcplen", "tcp.len"),
    ("nxtseq", "tcp.nxtseq"),
    ("win_raw", "tcp.window_size_value"),
    ("win", "tcp.window_size"),
    ("scale", "tcp.window_size_scalefactor"),
    ("mss", "tcp.options.mss_val"),
    ("wscale", "tcp.options.wscale.shift"),
    ("sack_perm", "tcp.options.sack_perm"),
    ("tsval", "tcp.options.timestamp.tsval"),
    ("tsecr", "tcp.options.timestamp.tsecr"),
    ("retrans", "tcp.analysis.retransmission"),
    ("fast", "tcp.analysis.fast_retransmission"),
    ("spurious", "tcp.analysis.spurious_retransmission"),
    ("dupack", "tcp.analysis.duplicate_ack"),
    ("zerowin", "tcp.analysis.zero_window"),
    ("winfull", "tcp.analysis.window_full"),
    ("ooo", "tcp.analysis.out_of_order"),
    ("lost", "tcp.analysis.lost_segment"),
    ("ack_rtt", "tcp.analysis.ack_rtt"),
    ("bif", "tcp.analysis.bytes_in_flight"),
    ("irtt", "tcp.analysis.initial_rtt"),
    ("keepalive", "tcp.analysis.keep_alive"),
    ("zwp", "tcp.analysis.zero_window_probe"),
)
TSHARK_FIELDS = tuple(f for _, f in FIELDS)
COLUMN = {name: i for i, (name, _) in enumerate(FIELDS)}

Row = list[str]


def block_rows(block: bytes) -> list[Row]:
    """The rows of a block of tshark's lines (empty lines are no rows)."""
    return [line.split("\t") for line in block.decode("utf-8", "replace").split("\n") if line]


def block_row_count(block: bytes) -> int:
    """How many rows ``block_rows`` finds in a block, without splitting it."""
    if b"\n\n" in block or block.startswith(b"\n"):  # empty lines (tshark writes none): counted the long way
        return sum(1 for line in block.split(b"\n") if line)
    return block.count(b"\n") + (not block.endswith(b"\n") and bool(block))
# handed tshark's process once it runs: writes the capture into its stdin, then closes it (and may stop it)
Feed = Callable[[subprocess.Popen], None]


@functools.cache
def _pyshark_classes() -> type:
    """pyshark's classes, imported on first use (pyshark pulls in lxml and friends)."""
    from pyshark.capture.file_capture import FileCapture
    from pyshark.tshark.output_parser.base_parser import BaseTsharkOutputParser

    class FieldRows(BaseTsharkOutputParser):
        """Output parser for ``-T fields``: hands over the complete lines read, as one block of bytes of about
        ``DEFAULT_BATCH_SIZE`` (a pipe read gives a few kB: the reader's cost per block is spread over thousands
        of lines). The block is split into rows only by a reader that wants rows: ``scan.CaptureScan`` reads
        it whole."""

        DEFAULT_BATCH_SIZE = 1 << 20

        async def get_packets_from_stream(self, stream, existing_data, got_first_packet=True):
            parts, size, ended = [existing_data], len(existing_data), False
            while size < self.DEFAULT_BATCH_SIZE:
                new_data = await stream.read(self.DEFAULT_BATCH_SIZE)
                if not new_data:
                    ended = True
                    break
                parts.append(new_data)
                size += len(new_data)
            data = b"".join(parts)
            end = data.rfind(b"\n")
            if end < 0:
                if ended:
                    raise EOFError()
                return None, data
            return data[: end + 1], data[end + 1 :]

    class PipeProcess:
        """What pyshark expects of an asyncio subprocess, over a plain Popen (no child watcher)."""

        def __init__(self, popen: subprocess.Popen, stdout, stderr) -> None:
            self.popen, self.stdout, self.stderr, self.pid = popen, stdout, stderr, popen.pid

        @property
        def returncode(self):
            return self.popen.poll()

        def kill(self) -> None:
            if self.popen.poll() is None:
                self.popen.kill()

        def reap(self) -> None:
            """Killed and waited for: pyshark's close may fail before it waits, and an unreaped tshark stays."""
            self.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=10)

        async def wait(self) -> int:
            try:
                return self.popen.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                return self.popen.wait()

    async def pipe_reader(loop, pipe):
        reader = asyncio.StreamReader(limit=1 << 24, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
        return reader

    class TsharkFields(FileCapture):
        """pyshark FileCapture reading tshark's field output (-T fields) in blocks of lines."""

        def __init__(self, path: Path, fields: Sequence[str], prefs: dict[str, str], loop,
                     feed: Feed | None = None) -> None:
            params = ["-T", "fields", "-E", "separator=/t", "-E", "occurrence=f", "-E", "header=n", "-E", "quote=n"]
            for name in fields:
                params += ["-e", name]
            super().__init__(str(path), keep_packets=False, override_prefs=prefs, eventloop=loop,
                             custom_parameters=params)
            self.stderr_lines: list[str] = []
            self.returncode: int | None = None
            self.feed = feed

        def get_parameters(self, packet_count=None):
            parameters = super().get_parameters(packet_count=packet_count)
            if self.feed is not None:  # the capture comes on stdin (a file still being written: analysis.follow)
                parameters[parameters.index("-r") + 1] = "-"
            return parameters

        async def _get_tshark_process(self, packet_count=None, stdin=None):
            self._verify_capture_parameters()
            parameters = [self._get_tshark_path(), "-n", *self.get_parameters(packet_count=packet_count)]
            # dies with the thread reading it (and so with netrepro, even killed by SIGKILL): an orphan would
            # read a followed capture's pipe to its end alone
            popen = spawn(parameters, stdin=subprocess.PIPE if self.feed else subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if self.feed is not None:
                self.feed(popen)
            with contextlib.suppress(OSError):  # a deep pipe: tshark does not wait while rows are parsed
                fcntl.fcntl(popen.stdout.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
            process = PipeProcess(popen, await pipe_reader(self.eventloop, popen.stdout),
                                  await pipe_reader(self.eventloop, popen.stderr))
            self._create_stderr_handling_task(process.stderr)
            self._created_new_process(parameters, process)
            return process

        def _setup_tshark_output_parser(self):
            return FieldRows()

        async def _handle_process_stderr_forever(self, stderr):
            while line := await stderr.readline():
                self.stderr_lines.append(line.decode("utf-8", "replace").strip())

        async def _cleanup_subprocess(self, process):
            self.returncode = await process.wait()

    return TsharkFields


@dataclass(frozen=True)
class TsharkOutput:
    rows: list[Row]
    returncode: int
    stderr: list[str]


class _Stop(Exception):
    """Raised inside pyshark's loop when the reader of the rows went away: tshark is stopped."""


_END = object()


class TsharkStream:
    """tshark's rows as they come: pyshark's capture loop runs in a worker thread and hands each block of
    lines through a short queue, so at most a few blocks (about a megabyte of text each) are held at a
    time, and tshark waits on its pipe while the rows are used. Iterate once; then ``returncode`` and
    ``stderr`` say how tshark ended. ``rows_read`` counts the rows handed over.

    ``feed``, when given, writes the capture into tshark's stdin (``-r -``) instead of tshark reading
    ``path``: a capture read while its writer still writes it (``analysis.follow``)."""

    QUEUE_BATCHES = 4

    def __init__(self, path: Path, *, feed: Feed | None = None) -> None:
        self.path = path
        self.feed = feed
        self.returncode: int | None = None
        self.stderr: list[str] = []
        self.rows_read = 0
        self._queue: queue.Queue[Any] = queue.Queue(self.QUEUE_BATCHES)
        self._closed = threading.Event()
        self._error: BaseException | None = None
        self._worker = threading.Thread(target=self._run, name="netrepro-tshark", daemon=True)

    def _put(self, item: Any) -> None:
        while not self._closed.is_set():
            with contextlib.suppress(queue.Full):
                self._queue.put(item, timeout=0.2)
                return
        raise _Stop

    def _run(self) -> None:
        """The read on a fresh event loop; every block, then the end (or the error), goes into the queue."""
        loop = asyncio.new_event_loop()
        capture = None
        try:
            capture = _pyshark_classes()(self.path, TSHARK_FIELDS, TSHARK_PREFS, loop, self.feed)
            capture.apply_on_packets(self._put)
            self.returncode, self.stderr = capture.returncode or 0, capture.stderr_lines
        except BaseException as exc:  # handed to the reading thread
            self._error = None if isinstance(exc, _Stop) else exc
            if capture is not None:  # do not leave tshark running, nor pyshark's __del__ a closed loop
                processes = list(capture._running_processes)
                for process in processes:
                    process.kill()
                with contextlib.suppress(Exception):
                    capture.close()
                capture._running_processes.clear()
                for process in processes:
                    process.reap()
        finally:
            loop.close()
            with contextlib.suppress(_Stop):
                self._put(_END)

    def __iter__(self) -> Iterator[Row]:
        for block in self.blocks():
            yield from block_rows(block)

    def blocks(self) -> Iterator[bytes]:
        """tshark's output as it comes, in blocks of whole lines (about a megabyte each): one row a line."""
        self._worker.start()
        try:
            while (block := self._queue.get()) is not _END:
                self.rows_read += block_row_count(block)
                yield block
        finally:
            self._closed.set()
            self._worker.join()
        if self._error is not None:
            if type(self._error).__name__ == "TSharkNotFoundException":
                raise NetreproError("tshark not found", "install it: apt-get install tshark") from None
            raise self._error


def run_tshark(path: Path) -> TsharkOutput:
    """tshark's fields for every frame, read in a worker thread with its own event loop."""
    stream = TsharkStream(path)
    rows = list(stream)
    return TsharkOutput(rows, stream.returncode or 0, stream.stderr)


def check_capture_file(path: Path) -> None:
    """A one-line error for a path that cannot hold a capture (missing, a directory, empty)."""
    if not path.exists():
        raise NetreproError(f"capture {path} not found", "check the path (a run keeps it as capture.pcap)")
    if path.is_dir():
        raise NetreproError(f"{path} is a directory, not a capture", "give the capture file, e.g. RUN/capture.pcap")
    if path.stat().st_size == 0:
        raise NetreproError(f"capture {path} is empty (0 bytes)", "the capture was never written: check the link's log")


@dataclass(frozen=True)
class CaptureRows:
    """tshark's rows of a capture file, and what was wrong with the file if it could still be read."""

    rows: list[Row]
    warnings: tuple[str, ...] = ()


def read_capture(path: Path) -> CaptureRows:
    """The rows of a capture; a capture cut short gives its complete frames and a warning.

    Raises NetreproError (one line) when tshark is missing or cannot read the file.
    """
    stream = TsharkStream(path)
    rows = list(stream)
    return CaptureRows(rows, read_warnings(path, stream))


def read_warnings(path: Path, stream: TsharkStream) -> tuple[str, ...]:
    """What was wrong with a capture whose rows `stream` has handed over, if it could still be read.

    Raises NetreproError (one line) when tshark could not read the file.
    """
    if stream.returncode == 0:
        return ()
    errors = [line for line in stream.stderr if line and not line.startswith("Running as user")]
    message = errors[-1] if errors else f"tshark exited with status {stream.returncode}"
    message = message.removeprefix("tshark: ")
    count = stream.rows_read
    if "cut short in the middle of a packet" in message or "damaged or corrupt" in message:
        if not count:
            raise NetreproError(f"capture {path} is damaged: {message}", "recapture; nothing could be read")
        what = "cut short in the middle of frame" if "cut short" in message else "damaged after frame"
        return (f"capture file {what} {count + 1} (was its writer stopped?); analysed the {count} complete frames",)
    if "isn't a capture file" in message or "unknown file format" in message.lower():
        raise NetreproError(f"{path} is not a capture file tshark can read",
                            "give a pcap or pcapng file (a run keeps it as capture.pcap)")
    raise NetreproError(f"tshark cannot read {path}: {message}", "check the file with capinfos")
