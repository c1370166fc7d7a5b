"""`netrepro report from-capture`: a report file whose inputs are measured from the capture of a real board.

The capture says what the board's stack advertised (MSS, window, window scaling), the link it ran over (the
RTT of the handshake, the bottleneck's rate from the frames' spacing, the loss) and what it achieved (the
throughput, the verdict). The report's one case asks netrepro to reproduce that throughput on the platform
the user names, over a link of those measurements, with the capture's facts as its claims, and keeps the
capture so that `reproduce` shows it beside the emulated run. The case's profile is the user's own
lwipopts.h when given; otherwise a lwipopts.h with the MSS and window the capture shows is written beside
the report (and the report says so: the rest of the stack's options are then lwIP's defaults, assumed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.analysis import CaptureReading, read_board_capture
from harness.core.errors import NetreproError
from harness.link import drop_entries
from harness.rig.platform import Platform, load_platform
from harness.studies.report_check import check_report, errors_of
from harness.studies.report_writer import Draft, Entry, Table, input_table, relative_to, write_new_file

CAPTURE_LINK = "capture"   # the report's own link preset: the capture's RTT, rate and losses
CASE = "capture"
SECONDS = (3.0, 10.0)      # a run measures the capture's transfer time, within these board seconds
MIN_SEGMENTS = 2           # lwIP wants a window and a send buffer of at least two segments


@dataclass(frozen=True)
class FromCapture:
    """What `report from-capture` is given."""

    capture: Path
    platform: str
    out: Path
    lwip: Path | None = None
    device: str | None = None
    stream: int | None = None
    include: tuple[str, ...] = ()
    stub_headers: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Written:
    report: Path
    lwipopts: Path | None      # the lwipopts.h written beside it (None: the user's own)
    reading: CaptureReading


def write_report_from_capture(spec: FromCapture, force: bool = False) -> Written:
    platform = load_platform(spec.platform)
    if spec.lwip is not None and not spec.lwip.is_file():
        raise NetreproError(f"--lwip {spec.lwip} does not exist", "give the path of your board's lwipopts.h")
    if spec.out.suffix != ".toml":
        raise NetreproError(f"-o {spec.out} is not a .toml file", "give the report's path, e.g. -o my-board.toml")
    reading = read_board_capture(spec.capture, spec.device, spec.stream)
    _usable(reading, spec)
    header = None
    if spec.lwip is None:
        header = spec.out.with_name(f"{spec.out.stem}-lwipopts.h")
        write_new_file(header, lwipopts_text(reading), force)
    text = draft_from_capture(spec, platform, reading, header or spec.lwip).render()
    path = write_new_file(spec.out, text, force)
    errors = list(errors_of(check_report(path)))
    if errors:
        raise NetreproError(f"the report written to {path} does not check: {errors[0].text()}",
                            "report it as a netrepro bug; the file is kept")
    return Written(path, header, reading)


def _usable(reading: CaptureReading, spec: FromCapture) -> None:
    """What a reproduction needs of the capture, or one line saying what is missing and what to do."""
    if reading.throughput_mbps is None:
        raise NetreproError(f"{reading.name}: stream {reading.stream} has no measurable throughput",
                            "capture a longer transfer (a few seconds of it)")
    if reading.idle_rtt_ms is None and reading.loaded_rtt_ms is None:
        raise NetreproError(f"{reading.name}: no RTT could be measured on stream {reading.stream}",
                            "capture the transfer from its start (its handshake)")
    if spec.lwip is None and (reading.mss is None or reading.window_max is None):
        raise NetreproError(f"{reading.name} does not show the device's MSS and window (its SYN was not captured)",
                            "give your lwipopts.h with --lwip FILE, or capture the connection from its start")


def lwipopts_text(reading: CaptureReading) -> str:
    """A lwipopts.h with what the capture shows of the device's stack; the rest assumed (and said so)."""
    assert reading.mss is not None and reading.window_max is not None
    mss, window = reading.mss, max(reading.window_max, MIN_SEGMENTS * reading.mss)
    sndbuf = send_buffer(reading)
    lines = [
        "/*",
        f" * Written by `netrepro report from-capture` from {reading.name}",
        f" * (sha256 {reading.sha256}, stream {reading.stream}, frames {reading.frames_used[0]}-"
        f"{reading.frames_used[1]}).",
        " * Measured: TCP_MSS (the device's SYN) and TCP_WND (the largest window it advertised)"
        + (", TCP_SND_BUF (the most it had in flight)." if reading.direction == "tx" else "."),
        " * Assumed: everything else (sized not to limit the transfer; lwIP's own defaults where not set).",
        " * Your own lwipopts.h is better: netrepro report from-capture ... --lwip FILE.",
        " */",
        f"#define TCP_MSS              {mss}",
        f"#define TCP_WND              {window}",
    ]
    if reading.window_scaling:
        lines += ["#define LWIP_WND_SCALE       1", f"#define TCP_RCV_SCALE        {reading.window_scale or 0}"]
    lines += [f"#define TCP_SND_BUF          {sndbuf}",
              "#define TCP_SND_QUEUELEN     ((4 * (TCP_SND_BUF) + (TCP_MSS - 1)) / (TCP_MSS))",
              f"#define MEM_SIZE             ({max(64, math.ceil(2 * sndbuf / 1024))} * 1024)",
              f"#define PBUF_POOL_SIZE       {math.ceil(window / mss) + 8}",
              "#define MEMP_NUM_TCP_SEG     (TCP_SND_QUEUELEN + 8)"]
    return "\n".join(lines) + "\n"


def send_buffer(reading: CaptureReading) -> int:
    """The device's send buffer: for a transfer it sent, the most it had in flight in whole segments; else 16
    segments (assumed, not the limit of a transfer it received)."""
    assert reading.mss is not None
    flight = reading.analysis.in_flight.max
    if reading.direction == "tx" and flight:
        return max(MIN_SEGMENTS, math.ceil(flight / reading.mss)) * reading.mss
    return 16 * reading.mss


def draft_from_capture(spec: FromCapture, platform: Platform, reading: CaptureReading, profile: Path) -> Draft:
    folder = spec.out.parent
    where = {"capture": reading.name, "sha256": reading.sha256,
             "frames": f"{reading.frames_used[0]}-{reading.frames_used[1]} of stream {reading.stream}"}
    top = [Entry("report", spec.out.stem),
           Entry("title", f"{reading.name}: a real board's {reading.direction} transfer, reproduced"),
           Entry("platform", platform.name, "the emulated board nearest the capture's"),
           Entry("source", f"the capture {reading.name} (sha256 {reading.sha256})"),
           Entry("seconds", _seconds(reading), "the capture's transfer time, within 3-10 board seconds"),
           Entry("repeats", 3, "runs a case (netrepro's choice)"),
           Entry("band", 0.15, "how far the median may be from the capture's throughput and agree (netrepro's)")]
    top += [Entry(key, list(values), "relative to this file") for key, values in
            (("include", spec.include), ("sources", spec.sources)) if values]
    if spec.stub_headers:
        top.append(Entry("stub_headers", list(spec.stub_headers), "stood in by empty headers"))
    tables = [_link(reading), *_measured_inputs(reading, where, spec.lwip is None, profile.name),
              *_assumed_inputs(platform, spec.lwip is None, reading), _case(reading, relative_to(profile, folder),
                                                                            relative_to(spec.capture, folder))]
    return Draft(_opening(reading, spec), top, tables)


def _opening(reading: CaptureReading, spec: FromCapture) -> str:
    profile = ("its own lwipopts.h" if spec.lwip else
               f"a lwipopts.h written beside it ({spec.out.stem}-lwipopts.h) with the MSS and window the capture shows")
    return (f"{spec.out.stem}: written by `netrepro report from-capture` from {reading.name}.\n\n"
            f"The device is {reading.device} ({reading.device_identified_by}); the capture was taken at its "
            f"{reading.captured_at} side.\n"
            f"Every input with provenance \"capture\" was measured from it; the case runs {profile}.\n"
            "Then: netrepro report check THIS_FILE && netrepro reproduce THIS_FILE")


def _link(reading: CaptureReading) -> Table:
    rtt = reading.idle_rtt_ms if reading.idle_rtt_ms is not None else reading.loaded_rtt_ms
    entries = [Entry("medium", "wire", "a capture does not show a shared radio channel: a wire each way"),
               Entry("rtt", f"{_round(rtt)}ms", "the handshake's RTT" if reading.idle_rtt_ms is not None else
                     "the RTT under load (no handshake was captured)")]
    if reading.rate_bps:
        entries.append(Entry("rate", f"{_round(reading.rate_bps / 1e6)}mbit", f"the bottleneck ({reading.rate_from})"))
    loss = _loss_setting(reading)
    if loss:
        key, value, comment = loss
        entries.append(Entry(_lossy_way(reading), {key: value}, comment))
    entries.append(Entry("note", f"the link of {reading.name}, as measured from it"))
    return Table(f"links.{CAPTURE_LINK}", entries, "The capture's link: its RTT, its rate and its losses.")


def _loss_setting(reading: CaptureReading) -> tuple[str, str, str] | None:
    """The link's setting for the capture's losses (key, value, why), on the way the data crossed; None: none."""
    if reading.lost_data and reading.syn_seen:
        lost = drop_entries("seq", [(g.first, g.last) for g in reading.lost_data])
        frames = sum(g.frames for g in reading.lost_data)
        return ("drop", ",".join(lost), f"the data the capture shows lost ({frames} frames), dropped where it was: "
                "the frames that first carry those bytes (neither a lost retransmission nor an ACK lost on its way "
                "back shows in the capture, so neither is replayed)")
    if reading.loss:
        return ("loss", f"{_round(reading.loss * 100)}%",
                "the data's loss, at random: without the SYN the capture cannot say which bytes")
    return None


def _lossy_way(reading: CaptureReading) -> str:
    """The link's direction the data crossed."""
    return "to_device" if reading.direction == "rx" else "to_peer"


def _measured_inputs(reading: CaptureReading, where: dict[str, Any], wrote_profile: bool, header: str
                     ) -> list[Table]:
    sets = f"report: links.{CAPTURE_LINK}"
    rtt_idle = reading.idle_rtt_ms is not None
    tables = [input_table("link RTT (the handshake's)" if rtt_idle else "link RTT (under load)",
                          _round(reading.idle_rtt_ms if rtt_idle else reading.loaded_rtt_ms), "capture", "ms",
                          f"{sets}.rtt", **where)]
    if reading.rate_bps:
        tables.append(input_table(f"bottleneck rate ({reading.rate_from})", _round(reading.rate_bps / 1e6),
                                  "capture", "Mbit/s", f"{sets}.rate", **where))
    if reading.loss is not None:
        setting = _loss_setting(reading)
        tables.append(input_table("loss of the data", _round(reading.loss * 100), "capture", "%",
                                  f"{sets}.{_lossy_way(reading)}.{setting[0]}" if setting else None, **where))
    if wrote_profile:
        tables += [input_table("device MSS (TCP_MSS)", reading.mss, "capture", "B", f"{header}: TCP_MSS", **where),
                   input_table("device window (TCP_WND)", reading.window_max, "capture", "B", f"{header}: TCP_WND",
                               **where)]
    return tables


def _assumed_inputs(platform: Platform, wrote_profile: bool, reading: CaptureReading) -> list[Table]:
    tables = []
    if platform.cpu is not None:
        tables.append(input_table("instructions per cycle (device time only)", platform.cpu.ipc, "assumed", None,
                                  f"platforms/{platform.name}.toml: cpu.ipc",
                                  why=f"the platform's own model of its part ({platform.cpu.source})",
                                  range=[0.5, 2.0]))
    if wrote_profile and reading.direction == "rx":
        assert reading.mss is not None
        tables.append(input_table("device send buffer (TCP_SND_BUF)", send_buffer(reading), "assumed", "B",
                                  why="a received transfer does not show it: 16 segments, not to limit the ACKs",
                                  range=[MIN_SEGMENTS * reading.mss, 64 * reading.mss]))
    return tables


def _case(reading: CaptureReading, profile: str, capture: str) -> Table:
    claim: dict[str, Any] = {}
    if reading.mss is not None:
        claim["mss"] = reading.mss
    if reading.window_max is not None:
        claim["window"] = reading.window_max
    if reading.window_scaling is not None:
        claim["window_scaling"] = reading.window_scaling
    if reading.verdict and reading.verdict != "unknown":
        claim["verdict"] = reading.verdict
    entries = [Entry("case", CASE), Entry("profile", profile), Entry("link", CAPTURE_LINK),
               Entry("workload", reading.direction, "iperf: peer -> device" if reading.direction == "rx" else
                     "iperf: device -> peer"),
               Entry("report_mbps", _round(reading.throughput_mbps), "the capture's throughput"),
               Entry("source", f"the capture {reading.name}: goodput of stream {reading.stream}")]
    if claim:
        entries.append(Entry("claim", claim, "what the capture shows"))
    capture_table = {"file": capture, "sha256": reading.sha256, "device": reading.device, "stream": reading.stream}
    entries.append(Entry("capture", capture_table, "shown beside the emulated run"))
    return Table("[cases]", entries, f"The capture's transfer: {reading.verdict} ({reading.verdict_reason}).")


def _seconds(reading: CaptureReading) -> float:
    took = reading.analysis.transfer_s or SECONDS[1]
    return float(round(min(max(took, SECONDS[0]), SECONDS[1])))


def _round(value: float | None) -> float:
    assert value is not None
    return float(f"{value:.4g}")
