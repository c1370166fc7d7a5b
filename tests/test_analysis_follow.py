"""A capture analysed while it is written (harness.analysis.follow): the same analysis as load_capture of the finished
file, whatever pieces the writer wrote it in, and nothing left running when it is cancelled."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from bulk_capture import write_bulk

from harness.analysis import load_capture
from harness.analysis.follow import CaptureFollower
from harness.core.errors import NetreproError
from harness.link import LinkSpec
from harness.rig.devicetime import TimeChoice
from harness.rig.platform import load_platform
from harness.rig.workload import Workload
from harness.runs.plan import RunPlan
from tests.conftest import children_named

DEVICE = "10.77.0.2"


class PieceWriter:
    """Writes `data` into `path` in pieces of `piece` bytes (records cut anywhere), `pause_s` apart, in a thread of
    its own; `closed` is true once the last piece is written."""

    def __init__(self, path: Path, data: bytes, piece: int, pause_s: float = 0.01) -> None:
        self.path, self.data, self.piece, self.pause_s = path, data, piece, pause_s
        self.done = threading.Event()
        path.write_bytes(b"")  # the writer has opened it: the follower may start
        self.thread = threading.Thread(target=self._write, daemon=True)

    def _write(self) -> None:
        with self.path.open("ab") as out:
            for at in range(0, len(self.data), self.piece):
                out.write(self.data[at : at + self.piece])
                out.flush()
                time.sleep(self.pause_s)
        self.done.set()

    def closed(self) -> bool:
        return self.done.is_set()


@pytest.fixture(scope="module", name="bulk")
def bulk_fixture(tmp_path_factory) -> Path:
    return write_bulk(tmp_path_factory.mktemp("follow") / "bulk-30k.pcap", 30_000)


@pytest.fixture(name="new_tshark")
def new_tshark_fixture() -> Callable[[], set[int]]:
    """The tshark children that appeared since the test began: one there before is not the test's (the
    suite's process is a subreaper and adopts the orphans of a CLI run another test killed)."""
    before = children_named("tshark")
    return lambda: children_named("tshark") - before


def _follow_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(("netrepro-follow", "netrepro-tshark"))]


@pytest.mark.parametrize("piece", [65_537, 1_000_003])
def test_a_capture_followed_in_pieces_is_analysed_as_the_finished_file(bulk, tmp_path, piece):
    writer = PieceWriter(tmp_path / "capture.pcap", bulk.read_bytes(), piece)
    follower = CaptureFollower.start(writer.path, writer.closed, poll_s=0.005)
    writer.thread.start()
    followed = follower.analysis(device_ip=DEVICE, device_busy=0.5, link_rate_bps=100e6)
    whole = load_capture(writer.path, device_ip=DEVICE, device_busy=0.5, link_rate_bps=100e6)
    assert followed.to_summary() == whole.to_summary() and followed.facts == whole.facts
    assert followed.frames == whole.frames > 29_000 and follower.bytes_copied == bulk.stat().st_size
    assert follower.closed_at is not None and not follower.running and not _follow_threads()


def test_a_capture_cut_short_warns_as_the_finished_file_does(bulk, tmp_path):
    data = bulk.read_bytes()
    writer = PieceWriter(tmp_path / "cut.pcap", data[: len(data) // 2 + 7], 300_000)
    follower = CaptureFollower.start(writer.path, writer.closed, poll_s=0.005)
    writer.thread.start()
    followed = follower.analysis(device_ip=DEVICE)
    whole = load_capture(writer.path, device_ip=DEVICE)
    assert followed.warnings and followed.to_summary() == whole.to_summary()


def test_an_empty_capture_fails_as_the_finished_file_does(tmp_path, new_tshark):
    writer = PieceWriter(tmp_path / "empty.pcap", b"", 1)
    follower = CaptureFollower.start(writer.path, writer.closed, poll_s=0.005)
    writer.thread.start()
    with pytest.raises(NetreproError, match="empty"):
        follower.analysis(device_ip=DEVICE)
    assert not follower.running and not new_tshark()


def test_cancel_leaves_no_tshark_nor_thread_and_keeps_the_capture(bulk, tmp_path, new_tshark):
    data = bulk.read_bytes()
    path = tmp_path / "capture.pcap"
    path.write_bytes(data[: len(data) // 3])  # a writer that never stops: the run failed
    follower = CaptureFollower.start(path, lambda: False, poll_s=0.005)
    deadline = time.monotonic() + 60
    while follower.bytes_copied < len(data) // 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert new_tshark(), "tshark follows the capture"
    follower.cancel()
    assert not follower.running and not _follow_threads() and not new_tshark()
    assert path.read_bytes() == data[: len(data) // 3]
    with pytest.raises(NetreproError, match="cancelled"):
        follower.analysis(device_ip=DEVICE)


def test_cancel_right_after_start_leaves_nothing(bulk, tmp_path, new_tshark):
    path = tmp_path / "capture.pcap"
    path.write_bytes(bulk.read_bytes())
    follower = CaptureFollower.start(path, lambda: False)
    follower.cancel()
    assert not follower.running and not _follow_threads() and not new_tshark()


def _plan(time: str, **fields: object) -> RunPlan:
    firmware = SimpleNamespace(profile=SimpleNamespace(name="p"), lwip_version="2.1.3")
    n6 = load_platform("openmv-n6")
    return RunPlan(n6, firmware, LinkSpec(), Workload("rx", seconds=1), time=n6.time(TimeChoice(time)),  # type: ignore[arg-type]
                   **fields)  # type: ignore[arg-type]


def test_a_run_follows_its_capture_only_where_its_analysis_may_overlap_it():
    assert _plan("device").follows_capture()
    assert not _plan("host").follows_capture()  # host time: the analysis would take the host from the run
    assert not _plan("device", follow_capture=False).follows_capture()
