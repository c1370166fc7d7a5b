"""The capture read as a stream: the figures equal a read of every row into memory, and the reader holds no rows."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from analysis_captures import FAST_RETRANS, R1_BEFORE, SEND_BUFFER
from analysis_reference import connection_facts, measure_transfer
from bulk_capture import write_bulk
from captures_gen import DEVICE_IP, PEER_IP, Scenario, simulate, udp_frame, write_pcap, write_scenario

from harness.analysis import CaptureAnalysis, load_capture
from harness.analysis.capture import TsharkStream, block_row_count, block_rows, read_capture
from harness.analysis.facts import Facts, _bounds
from harness.analysis.flow import Flow, thin_index
from harness.analysis.frames import segments, select_connection
from harness.analysis.scan import CaptureScan, Steps, Times, _nanoseconds
from harness.analysis.series import thin
from harness.analysis.sides import other_side
from harness.analysis.verdict import judge

ROOT = Path(__file__).resolve().parent.parent
STORED = ROOT / "captures" / "openmv-n6-wifi-sock-rx-mp-n6-before.pcap"
# scenarios that take every path of the measure: sender or receiver side, timestamps or not, losses and
# timeouts, a zero window, a send buffer, a stalled capture point, no handshake
SCENARIOS = {
    "r1": (R1_BEFORE, None), "fast": (FAST_RETRANS, None), "sndbuf": (SEND_BUFFER, None),
    "timestamps": (Scenario(duration=0.5, timestamps=True, sack=True, peer_wscale=7, device_wscale=7,
                            rcv_buf=131072), None),
    "rto": (Scenario(duration=0.6, drop=frozenset({20, 21, 22, 23}), fast_retransmit=False), None),
    "zero-window": (Scenario(duration=1.0, app_pause=(0.3, 0.2)), None),
    "device-sends-ts": (Scenario(duration=0.5, sender="device", client="device", timestamps=True, cwnd=4 * 1460,
                                 rcv_buf=65535), None),
    "no-handshake": (Scenario(duration=0.5, handshake=False), None),
    "stall": (Scenario(duration=0.6, device_stall=(0.3, 0.02)), None),
    "peer-side": (Scenario(duration=0.5, capture_at="peer"), "peer"),
    "slow-app": (Scenario(duration=0.6, app_read_bps=20e6, rcv_buf=11680), None),
}


def _full_read(path: Path, device_ip: str | None, captured_at: str | None = None) -> Facts:
    """The facts as the analysis found them before it streamed: every row in a list, then the chosen rows."""
    read = read_capture(path)
    capture, rows = select_connection(read.rows, read.warnings, device_ip, None, None)
    segs, ends = segments(rows)
    connection, roles, snd = connection_facts(segs, ends, capture.conn, device_ip, captured_at)
    assert snd is not None
    near = roles.near if roles.near is not None else roles.device
    transfer = measure_transfer(segs, snd, near, connection.initial_rtt_ms, 1.0, None)
    window = connection.windows[other_side(roles.name(snd))].median
    return Facts(str(path), 1.0, None, capture, connection, transfer, _bounds(window, transfer, None))


@pytest.fixture(scope="module", name="bulk")
def bulk_fixture(tmp_path_factory) -> Path:
    return write_bulk(tmp_path_factory.mktemp("stream") / "bulk-50k.pcap", 50_000)


def test_streamed_figures_equal_a_full_read(bulk):
    streamed = load_capture(bulk, device_ip="10.77.0.2")
    assert streamed.frames == 50_000 and streamed.truncated_frames > 0
    assert streamed.facts == _full_read(bulk, "10.77.0.2")
    # the series are thinned for the plots, their counts are whole
    assert streamed.data_segment_count > len(streamed.data_segments) and len(streamed.data_segments) <= 20_000
    assert streamed.to_summary().rtt_samples == streamed.rtt_sample_count > 20_000


@pytest.mark.parametrize("name", ["before", "after"])
def test_streamed_figures_equal_a_full_read_on_a_stored_capture(name):
    path = STORED.with_name(f"openmv-n6-wifi-sock-rx-mp-n6-{name}.pcap")
    assert load_capture(path).facts == _full_read(path, None)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_figures_on_columns_equal_the_segment_reference(tmp_path, name):
    """``flow``/``flow_transfer`` on numpy columns give what ``analysis_reference`` gives on Segment objects."""
    scenario, captured_at = SCENARIOS[name]
    path = write_scenario(tmp_path / f"{name}.pcap", scenario)
    for device_ip in ("10.77.0.2", None):
        streamed = load_capture(path, device_ip=device_ip, captured_at=captured_at)
        reference = _full_read(path, device_ip, captured_at)
        assert streamed.facts == reference
        assert streamed.summary() == CaptureAnalysis(reference, judge(reference)).summary()


def _reader_peak(path: Path) -> tuple[int, int]:
    """Rows handed over and the most memory Python held meanwhile (both threads), bytes."""
    tracemalloc.start()
    try:
        count = sum(1 for _ in TsharkStream(path))
        return count, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module", name="big")
def big_fixture(tmp_path_factory) -> Path:
    return write_bulk(tmp_path_factory.mktemp("stream") / "bulk-200k.pcap", 200_000)


def test_the_reader_holds_a_few_batches_not_the_capture(bulk, big):
    small_rows, small_peak = _reader_peak(bulk)
    big_rows, big_peak = _reader_peak(big)
    assert (small_rows, big_rows) == (50_000, 200_000)
    # at most a few batches in the queue (a few MB, however long the capture): 200k rows kept would be ~340 MB
    assert small_peak < 20e6 and big_peak < 20e6, (small_peak, big_peak)


def test_a_connection_costs_its_columns_per_frame(bulk):
    scan = CaptureScan().read(TsharkStream(bulk))
    (columns,) = scan.columns.values()
    assert len(columns) == 50_000
    # compact typed columns (24 B: the time and the TCP numbers as steps, the TCP flags in the bit column, no next
    # sequence number; tshark's ACK RTT, 12 B, on the third of the frames that are ACKs: 28 B), not rows of
    # strings (~1.7 kB a frame)
    assert columns.nbytes() / len(columns) <= 29


def test_steps_and_times_give_back_every_value():
    """``Steps`` (2-byte steps per side, the large ones apart) and ``Times`` (nanosecond steps, the odd times
    apart) give back each value, appended one by one or at once, whatever the jumps."""
    rng = np.random.default_rng(7)
    n = 5000
    side = rng.random(n) < 0.4
    values = np.where(side, 5000 + np.cumsum(rng.integers(0, 3000, n)), np.cumsum(rng.integers(-20000, 20000, n)))
    values[::97] = rng.integers(0, 1 << 32, len(values[::97]))  # jumps, a wrap of the 32 bits among them
    values = values % (1 << 32)
    by_one, at_once = Steps(), Steps()
    for v, s in zip(values.tolist(), side.tolist(), strict=True):
        by_one.append(v, int(s))
    for lo in range(0, n, 700):
        at_once.extend(values[lo:lo + 700].astype(np.int64), side[lo:lo + 700])
    assert by_one == at_once and 0 < len(by_one.big_at) < n // 10
    assert by_one.decode(side.astype(np.int8)).tolist() == values.tolist()
    wide = Steps()
    for v in (3, -5, 1 << 40, 7):
        wide.append(v, 0)
    assert wide.decode(np.zeros(4, np.int8)).tolist() == [3, -5, 1 << 40, 7]
    texts = ["1.000000000", "1.000000300", "0.5", "1.000000400", "0.999999999", "6.500000000", "6.500000001",
             "123456.123456789", "9007199.254740993", "9007199254.740993000"]
    times = Times()
    for text in texts:
        times.append(_nanoseconds(text), float(text))
    assert times.floats(0.25).tolist() == [float(text) - 0.25 for text in texts]
    assert times.last_float(0.25) == float(texts[-1]) - 0.25
    assert len(times.odd_at) == 3  # the one without nine decimals, the two at 2**53 ns or beyond
    assert len(times.big_at) == 3  # the one back, the two steps of 4.29 s or more


def _analysis_peak(path: Path) -> int:
    """The most memory Python held while reading and measuring the capture (numpy's arrays included), bytes."""
    tracemalloc.start()
    try:
        load_capture(path, device_ip="10.77.0.2")
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_analysis_costs_a_few_columns_per_frame_not_objects(bulk, big):
    small_peak, big_peak = _analysis_peak(bulk), _analysis_peak(big)
    per_frame = (big_peak - small_peak) / (200_000 - 50_000)
    # compact columns (24 B a frame, decoded by chunks) and numpy's work arrays (in chunks, 4-byte where they can
    # be, the data's and the ACKs' own columns): ~40 B a frame at the peak between these two captures, whose
    # frames all fit in one chunk (262,144) of the work arrays (~75 with the 44-byte columns read in place); a
    # Segment per frame and the lists built on them cost ~900 B a frame (5,000,000 frames: 5.3 GB)
    assert per_frame < 45, (small_peak, big_peak, per_frame)
    assert big_peak < 30e6, big_peak


def _mixed_capture(path: Path) -> Path:
    """Two connections interleaved, UDP frames among them, frames cut by the snap length, a FIN: every rare row."""
    one = simulate(Scenario(duration=0.2, timestamps=True, sack=True))
    two = simulate(Scenario(duration=0.2, device_port=5002, peer_port=40002, sender="device", client="device"))
    udp = [(k * 0.01, udp_frame(PEER_IP, DEVICE_IP, 53, 53, b"x" * 20)) for k in range(30)]
    return write_pcap(path, sorted(one + [(t + 0.05, f) for t, f in two] + udp, key=lambda r: r[0]), snaplen=90)


def _blocks(path: Path, lines: int) -> list[bytes]:
    """tshark's lines of a capture in blocks of `lines` lines (the reader's own blocks are ~1 MB)."""
    text = b"".join(TsharkStream(path).blocks()).splitlines(keepends=True)
    return [b"".join(text[k:k + lines]) for k in range(0, len(text), lines)]


@pytest.mark.parametrize("lines", [1, 7, 1000])
def test_blocks_read_as_columns_equal_the_rows_read_one_by_one(tmp_path, lines):
    """``CaptureScan.add_block`` (numbers read from a block's bytes at once) keeps what ``add`` keeps row by row:
    counters, tallies and every column, on captures with every rare row, whatever the blocks' size."""
    paths = [_mixed_capture(tmp_path / "mixed.pcap"), STORED, *sorted((ROOT / "captures").glob("*/*.pcap"))]
    for path in paths:
        blocks = _blocks(path, lines)
        by_rows = CaptureScan().read(row for block in blocks for row in block_rows(block))
        by_blocks = CaptureScan().read_blocks(blocks)
        assert by_blocks == by_rows, path
        assert by_blocks.frames == sum(map(block_row_count, blocks))
    assert len(by_rows.columns) >= 1


def test_a_block_that_is_not_plain_numbers_is_read_row_by_row(tmp_path):
    path = _mixed_capture(tmp_path / "mixed.pcap")
    (block,) = _blocks(path, 100_000)
    lines = block.split(b"\n")
    fields = lines[40].split(b"\t")
    fields[15] = b"+" + fields[15]  # int() takes a sign, the block reader does not: the rows' reading decides
    odd = b"\n".join([*lines[:40], b"\t".join(fields), *lines[41:]])
    assert CaptureScan().read_blocks([odd]) == CaptureScan().read(block_rows(odd))
    assert CaptureScan().read_blocks([b"a\tb\n" + block]) == CaptureScan().read(block_rows(b"a\tb\n" + block))


def test_next_sequence_numbers_are_seq_plus_len_but_where_tshark_says_otherwise(tmp_path):
    """The next sequence number is not a column: seq + len, and tshark's own where it differs (SYN, FIN) kept."""
    path = _mixed_capture(tmp_path / "mixed.pcap")
    rows = read_capture(path).rows
    scan = CaptureScan().read_blocks(TsharkStream(path).blocks())
    for stream, columns in scan.columns.items():
        mine = [r for r in rows if r[11] == str(stream) and "icmp" not in r[4]]
        flow = Flow.of(columns)
        assert len(columns.nxt_at) >= 2  # the SYN and the SYN-ACK at least
        assert flow.nxt(np.arange(len(flow))).tolist() == [s.nxt for s in segments(mine)[0]]


@pytest.mark.parametrize("n", [5, 20_000, 20_001, 39_999, 100_003])
def test_thin_index_keeps_the_points_series_thin_keeps(n):
    """``flow.thin_index`` (built from the strides) picks what ``series.thin`` picks, point by point."""
    rng = np.random.default_rng(n)
    for keep in (None, rng.random(n) < 0.01, rng.random(n) < 0.6, np.zeros(n, bool)):
        wanted = None if keep is None else (lambda i, keep=keep: bool(keep[i]))
        assert thin_index(n, keep).tolist() == list(thin(range(n), wanted))
