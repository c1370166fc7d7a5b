"""``load_capture``: read a capture with tshark, measure its facts, judge them."""

from __future__ import annotations

import ctypes
import dataclasses
import os
from pathlib import Path

from harness.analysis.capture import TsharkStream, check_capture_file, read_warnings
from harness.analysis.capture_analysis import CaptureAnalysis
from harness.analysis.facts import measure_scan
from harness.analysis.scan import CaptureScan
from harness.analysis.verdict import judge
from harness.core.errors import NetreproError


def _check_arguments(device_ip: str | None, interval_s: float, captured_at: str | None, sender: str | None) -> None:
    if interval_s <= 0:
        raise NetreproError(f"interval {interval_s} s is not positive", "give a goodput interval > 0")
    if captured_at not in (None, "device", "peer"):
        raise NetreproError(f"captured_at '{captured_at}' is not a side", "give 'device' or 'peer'")
    if sender not in (None, "device", "peer") or (sender and not device_ip):
        raise NetreproError(f"sender '{sender}' needs device_ip and is 'device' or 'peer'", "give both")


_M_MMAP_THRESHOLD = -3   # glibc's mallopt parameter
_MMAP_THRESHOLD = 4 << 20


def _return_freed_arrays() -> None:
    """Have glibc's malloc give each block of 4 MB or more back to the system when it is freed. Left to itself,
    once it has freed a block that large it raises that threshold to the block's size (up to 32 MB), and then
    keeps the measure's arrays of one number a frame, made and freed one after the other, in its heap, where
    the holes they leave are not given back: tens of MB held on a capture of millions of frames. Nothing where
    malloc is not glibc's."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)


def load_capture(path: str | os.PathLike, device_ip: str | None = None, conn: int | None = None,
                 link_rate_bps: float | None = None, interval_s: float = 1.0,
                 captured_at: str | None = None, sender: str | None = None,
                 device_busy: float | None = None, link_stage: str = "link") -> CaptureAnalysis:
    """Analyse one TCP connection of a capture (default: the one with the most payload).

    ``sender`` ("device" or "peer", with ``device_ip``) picks the connection carrying the most
    data from that side instead: one direction of an iperf -r or -d run.

    ``device_busy`` (0-1) is the board's own measure of how busy its core was over the workload,
    when the caller has it: with it the verdict can say "cpu-limited".

    ``link_stage`` is "bus" when ``link_rate_bps`` is the WiFi chip's host bus's bound, lower than the
    air's (harness.runs.analyse.data_rate): a transfer at that rate is then "bus-limited".

    ``captured_at`` ("device" or "peer") says where the capture was taken when the caller knows
    (netrepro's own captures are at the device side); otherwise it is judged from the timing.

    Raises NetreproError (one line) for a missing, empty or unreadable file, an unknown
    connection number or a device address that is not an endpoint. A readable capture without
    a usable TCP connection gives a CaptureAnalysis whose ``empty_reason`` says why.
    """
    path = Path(path)
    check_capture_file(path)
    _check_arguments(device_ip, interval_s, captured_at, sender)
    _return_freed_arrays()
    stream = TsharkStream(path)  # lines as tshark writes them: none is kept, only counters and columns
    scan = CaptureScan().read_blocks(stream.blocks())
    return analyse_scan(path, scan, read_warnings(path, stream), device_ip=device_ip, conn=conn,
                        link_rate_bps=link_rate_bps, interval_s=interval_s, captured_at=captured_at, sender=sender,
                        device_busy=device_busy, link_stage=link_stage)


def analyse_scan(path: str | os.PathLike, scan: CaptureScan, read_warnings: tuple[str, ...] = (),
                 device_ip: str | None = None, conn: int | None = None, link_rate_bps: float | None = None,
                 interval_s: float = 1.0, captured_at: str | None = None, sender: str | None = None,
                 device_busy: float | None = None, link_stage: str = "link") -> CaptureAnalysis:
    """load_capture's analysis of a capture already scanned (every row of it in `scan`, tshark's complaints
    in `read_warnings`): a capture followed while it was written (analysis.follow) ends here too."""
    _check_arguments(device_ip, interval_s, captured_at, sender)
    facts = measure_scan(str(path), scan, read_warnings, device_ip=device_ip, conn=conn, captured_at=captured_at,
                         sender=sender, link_rate_bps=link_rate_bps, interval_s=interval_s)
    if device_busy is not None:
        facts = dataclasses.replace(facts, device_busy=device_busy)
    if link_stage != "link":
        facts = dataclasses.replace(facts, link_stage=link_stage)
    return CaptureAnalysis(facts, judge(facts))
