"""A capture analysed while its writer still writes it, so that the figures are ready when the run ends.

``CaptureFollower.start(path, closed)`` starts tshark on its stdin (``-r -``, ``capture.TsharkStream``'s
``feed``) and two threads: one copies the file's new bytes into tshark's stdin as they appear, the other
reads tshark's lines into a ``scan.CaptureScan``. tshark reads a pipe as it reads a file, one frame after
another (a record the writer has not finished yet only makes it wait), so the rows, and the analysis
``analysis()`` makes of them once the writer has stopped (``closed()`` true) and every byte was copied,
are those of ``load_capture`` on the finished file.

``cancel()`` tears it down on any path (a failed run, an interrupt): the copy stops and closes tshark's
stdin, the scan stops reading, tshark exits or is killed; the file itself is never touched.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from harness.analysis.capture import TsharkStream, check_capture_file, read_warnings
from harness.analysis.capture_analysis import CaptureAnalysis
from harness.analysis.load import analyse_scan
from harness.analysis.scan import CaptureScan
from harness.core.errors import NetreproError

POLL_S = 0.05           # how often the copy looks for new bytes once it has copied everything there was
COPY_BYTES = 1 << 20    # the most it copies in one read
CANCEL_WAIT_S = 30.0    # the longest cancel() waits for each thread (tshark killed, they end at once)


class CaptureFollower:
    """tshark's analysis of a capture file that is still growing; see the module's docstring.

    ``closed`` says whether the writer has stopped (the file is complete once it says so); ``closed_at`` is
    the time.monotonic() at which the copy saw it, ``bytes_copied`` what it has copied so far."""

    def __init__(self, path: str | os.PathLike, closed: Callable[[], bool], poll_s: float = POLL_S) -> None:
        self.path = Path(path)
        self.closed = closed
        self.poll_s = poll_s
        self.closed_at: float | None = None
        self.bytes_copied = 0
        self._cancel = threading.Event()
        self._stream = TsharkStream(self.path, feed=self._feed)
        self._scan: CaptureScan | None = None
        self._error: BaseException | None = None
        self._copy_error: OSError | None = None
        self._copier: threading.Thread | None = None
        self._tshark: subprocess.Popen | None = None
        self._scanner = threading.Thread(target=self._read, name="netrepro-follow-scan", daemon=True)

    @classmethod
    def start(cls, path: str | os.PathLike, closed: Callable[[], bool], poll_s: float = POLL_S) -> CaptureFollower:
        """Follow the capture at `path` (it must exist: its writer has opened it) until `closed()` is true."""
        follower = cls(path, closed, poll_s)
        follower._scanner.start()
        return follower

    @property
    def running(self) -> bool:
        """Whether a thread of the follower is still at work."""
        return self._scanner.is_alive() or (self._copier is not None and self._copier.is_alive())

    def _feed(self, tshark: subprocess.Popen) -> None:
        """TsharkStream's feed: called once tshark runs; the copy then owns its stdin."""
        assert tshark.stdin is not None
        self._tshark = tshark
        self._copier = threading.Thread(target=self._copy, args=(tshark.stdin,), name="netrepro-follow-copy",
                                        daemon=True)
        self._copier.start()
        if self._cancel.is_set():  # cancelled while tshark started (cancel() may not have seen it)
            self._stop_tshark()

    def _copy(self, pipe: IO[bytes]) -> None:
        """The file's bytes into tshark's stdin as they appear; closing it at the end is tshark's end of file."""
        try:
            with pipe, open(self.path, "rb", buffering=0) as source:
                while not self._cancel.is_set():
                    closed = self.closed()  # asked before the read: a writer that stopped has written everything
                    if chunk := source.read(COPY_BYTES):
                        pipe.write(chunk)
                        pipe.flush()
                        self.bytes_copied += len(chunk)
                    elif closed:
                        self.closed_at = time.monotonic()
                        return
                    else:
                        self._cancel.wait(self.poll_s)
        except BrokenPipeError:
            pass  # tshark went away: stopped by cancel(), or it failed and its stderr says why
        except OSError as exc:
            self._copy_error = exc

    def _read(self) -> None:
        """tshark's lines into the scan; stops at the end of the lines, or at once when cancelled."""
        blocks = self._stream.blocks()
        try:
            self._scan = CaptureScan().read_blocks(self._until_cancelled(blocks))
        except BaseException as exc:  # handed to analysis()
            self._error = exc
        finally:
            with contextlib.suppress(Exception):  # a stream read half-way: its worker stops tshark
                blocks.close()

    def _until_cancelled(self, blocks: Iterable[bytes]) -> Iterator[bytes]:
        cancel = self._cancel
        for block in blocks:
            if cancel.is_set():
                return
            yield block

    def analysis(self, **arguments: Any) -> CaptureAnalysis:
        """The capture's analysis, as ``load_capture(path, **arguments)`` gives it for the finished file; waits
        until the writer has stopped and every row is scanned. Raises NetreproError as load_capture does."""
        try:
            self._scanner.join()
        except BaseException:
            self.cancel()
            raise
        if self._copy_error is not None:
            raise NetreproError(f"cannot read the capture {self.path} while it is written: {self._copy_error}",
                                "analyse the capture after the run: netrepro inspect RUN/capture.pcap")
        if self._error is not None:
            raise self._error
        if self._cancel.is_set() or self._scan is None:
            raise NetreproError(f"the analysis of {self.path} was cancelled before it finished",
                                "analyse the capture after the run: netrepro inspect RUN/capture.pcap")
        check_capture_file(self.path)
        scan, self._scan = self._scan, None  # the analysis takes the scan's columns: it is not kept here too
        return analyse_scan(self.path, scan, read_warnings(self.path, self._stream), **arguments)

    def _stop_tshark(self) -> None:
        tshark = self._tshark
        if tshark is not None and tshark.poll() is None:
            with contextlib.suppress(OSError):
                tshark.kill()

    def cancel(self) -> None:
        """Stop copying and scanning, and tshark (its reader reaps it). Safe to call at any time, and again."""
        self._cancel.set()
        self._stop_tshark()
        self._scanner.join(CANCEL_WAIT_S)
        if self._copier is not None:
            self._copier.join(CANCEL_WAIT_S)
