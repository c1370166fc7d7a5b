"""A user's capture beside netrepro's: ``inspect --against`` and the against section of reproduce's page.

``compare_summaries(theirs, ours)`` puts two ``AnalysisSummary`` side by side, one row per figure a
user checks first (the device's MSS, its largest window, window scaling, idle and loaded RTT,
throughput, retransmissions, loss, the verdict), with the difference: ours - theirs and its share
of theirs for numbers, "same" / "differs" for exact facts ("unknown" when a side does not show it).

``load_against(path)`` reads "the other side": a run folder (its result.json names the capture and
the device, and holds the run's analysis) or a capture file (a run's, when a result.json beside it
names it; else a capture like any other, its device guessed). ``against_document`` is the whole
chain for one reproduce case, as the page's ``against`` key holds it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.analysis.capture_analysis import CaptureAnalysis
from harness.analysis.load import load_capture
from harness.analysis.plots import plot_overlay
from harness.analysis.summary import AnalysisSummary
from harness.core.errors import NetreproError
from harness.core.records import known_fields

Value = int | float | str | None
NUMBER, EXACT = "number", "exact"
SAME, DIFFERS, UNKNOWN = "same", "differs", "unknown"


@dataclass(frozen=True)
class ComparisonRow:
    """One figure of both captures. ``difference`` is ours - theirs for a number (None when a side lacks it),
    "same" / "differs" / "unknown" for an exact fact; ``difference_pct`` is that difference as a share of
    theirs (None for exact facts, a side missing, or theirs 0 and ours not)."""

    key: str
    name: str
    unit: str
    kind: str
    theirs: Value
    ours: Value
    difference: Value
    difference_pct: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "name": self.name, "unit": self.unit, "kind": self.kind, "theirs": self.theirs,
                "ours": self.ours, "difference": self.difference, "difference_pct": self.difference_pct}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComparisonRow:
        return cls(**known_fields(cls, data))

    def cells(self) -> tuple[str, str, str]:
        """theirs, ours and the difference as the text table and the page write them."""
        return _value_text(self.theirs, self.unit), _value_text(self.ours, self.unit), self.difference_text()

    def difference_text(self) -> str:
        if self.kind == EXACT or isinstance(self.difference, str):
            return str(self.difference)
        if self.difference is None:
            return "-"
        if self.difference == 0:
            return "0"
        # a share's difference is in percentage points; its relative change follows in brackets
        text = f"{self.difference:+.3f}".rstrip("0").rstrip(".") if isinstance(self.difference, float) \
            else f"{self.difference:+d}"
        text += {"": "", "%": " pp"}.get(self.unit, f" {self.unit}")
        return text + (f" ({self.difference_pct:+.1f} %)" if self.difference_pct is not None else "")


@dataclass(frozen=True)
class ComparedCapture:
    """Which capture a column is, and what of it the rows rest on."""

    label: str
    capture: str = ""
    conn: int | None = None
    device: str | None = None
    device_identified_by: str = ""
    data_direction: str | None = None
    capture_near: str | None = None
    verdict_reason: str = ""
    empty_reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComparedCapture:
        return cls(**known_fields(cls, data))

    @classmethod
    def of(cls, label: str, s: AnalysisSummary) -> ComparedCapture:
        return cls(label, s.capture, s.conn, s.device, s.device_identified_by, s.data_direction, s.capture_near,
                   s.verdict_reason, s.empty_reason)


@dataclass(frozen=True)
class CaptureComparison:
    """Two captures' analyses side by side (see the module's docstring); ``notes`` say what makes a row
    not comparable (other data direction, capture taken elsewhere, nothing to analyse)."""

    theirs: ComparedCapture
    ours: ComparedCapture
    rows: tuple[ComparisonRow, ...]
    notes: tuple[str, ...] = ()

    def row(self, key: str) -> ComparisonRow:
        return next(r for r in self.rows if r.key == key)

    def as_dict(self) -> dict[str, Any]:
        return {"theirs": self.theirs.as_dict(), "ours": self.ours.as_dict(),
                "rows": [r.as_dict() for r in self.rows], "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaptureComparison:
        return cls(ComparedCapture.from_dict(data.get("theirs") or {"label": "theirs"}),
                   ComparedCapture.from_dict(data.get("ours") or {"label": "ours"}),
                   tuple(ComparisonRow.from_dict(r) for r in data.get("rows") or ()), tuple(data.get("notes") or ()))


# ------------------------------------------------------------------ the rows


def _loss_pct(s: AnalysisSummary) -> float | None:
    """Bytes sent again per byte of payload (first transmissions), in %: what the sender paid for loss."""
    return round(100 * s.retransmitted_bytes / s.payload_bytes, 4) if s.payload_bytes else None


def _scaling(s: AnalysisSummary) -> str | None:
    """Whether scaling was negotiated and the device's own shift: the peer's shift is the peer's stack,
    not the device's, so it is left out of what must be the same."""
    if s.window_scaling == "negotiated":
        return f"negotiated, device shift {s.window_scale.device}"
    return s.window_scaling if s.window_scaling == "not negotiated" else None  # no SYN: unknown


# key, name, unit, kind, how to read the figure from a summary
_ROWS: tuple[tuple[str, str, str, str, Any], ...] = (
    ("mss", "MSS (device)", "B", EXACT, lambda s: s.device_mss),
    ("window", "largest device window", "B", EXACT, lambda s: s.device_window.max),
    ("window_scaling", "window scaling", "", EXACT, _scaling),
    ("idle_rtt", "idle RTT (handshake)", "ms", NUMBER, lambda s: s.initial_rtt_ms),
    ("loaded_rtt", "loaded RTT", "ms", NUMBER, lambda s: s.rtt_ms),
    ("throughput", "throughput", "Mbit/s", NUMBER, lambda s: s.goodput_mbps),
    ("retransmissions", "retransmissions", "", NUMBER, lambda s: s.retransmissions),
    ("loss", "loss (bytes resent)", "%", NUMBER, _loss_pct),
    ("verdict", "verdict", "", EXACT, lambda s: None if s.verdict == "unknown" else s.verdict),
)


def _row(key: str, name: str, unit: str, kind: str, theirs: Value, ours: Value) -> ComparisonRow:
    if kind == EXACT:
        same = UNKNOWN if theirs is None or ours is None else SAME if theirs == ours else DIFFERS
        return ComparisonRow(key, name, unit, kind, theirs, ours, same)
    if not isinstance(theirs, int | float) or not isinstance(ours, int | float):
        return ComparisonRow(key, name, unit, kind, theirs, ours, None)
    difference = ours - theirs if isinstance(ours, int) and isinstance(theirs, int) else round(ours - theirs, 4)
    pct = round(100 * difference / theirs, 1) if theirs else (0.0 if not difference else None)
    return ComparisonRow(key, name, unit, kind, theirs, ours, difference, pct)


def _notes(theirs: ComparedCapture, ours: ComparedCapture, t: AnalysisSummary, o: AnalysisSummary) -> list[str]:
    notes = [f"{c.label}: nothing to analyse: {c.empty_reason}" for c in (theirs, ours) if c.empty_reason]
    if theirs.data_direction and ours.data_direction and theirs.data_direction != ours.data_direction:
        notes.append(f"{theirs.label} carries data {theirs.data_direction}, {ours.label} {ours.data_direction}: "
                     "the figures are of transfers the other way round")
    if theirs.capture_near and ours.capture_near and theirs.capture_near != ours.capture_near:
        notes.append(f"{theirs.label} was taken next to the {theirs.capture_near}, {ours.label} next to the "
                     f"{ours.capture_near}: RTTs are measured from different ends")
    for label, s in ((theirs.label, t), (ours.label, o)):
        if s.device_window.unknown_scale:
            notes.append(f"{label}: the SYN was not captured, so its windows are as sent (scale unknown)")
    return notes


def compare_summaries(theirs: AnalysisSummary, ours: AnalysisSummary, theirs_label: str = "your capture",
                      ours_label: str = "netrepro") -> CaptureComparison:
    """The two analyses side by side; differences are ours - theirs."""
    rows = tuple(_row(key, name, unit, kind, read(theirs), read(ours)) for key, name, unit, kind, read in _ROWS)
    a, b = ComparedCapture.of(theirs_label, theirs), ComparedCapture.of(ours_label, ours)
    return CaptureComparison(a, b, rows, tuple(_notes(a, b, theirs, ours)))


# ------------------------------------------------------------------ as text


def _value_text(value: Value, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    text = f"{value:.3f}".rstrip("0").rstrip(".") if isinstance(value, float) else str(value)
    return f"{text} {unit}" if unit else text


def _about(c: ComparedCapture) -> str:
    if c.conn is None:
        return f"{c.capture}: no connection analysed"
    how = c.device_identified_by.split(":")[0].split(" (")[0]  # "given" or "guessed": the JSON has the reason
    return (f"{c.capture}: conn {c.conn}, device {c.device} ({how}), "
            f"data {c.data_direction or 'none'}, captured next to the {c.capture_near}")


def format_comparison(c: CaptureComparison) -> str:
    """Both captures named, then a table: figure, theirs, ours, difference; then each verdict's reason."""
    width = max(len(c.theirs.label), len(c.ours.label))
    lines = [f"{c.theirs.label:<{width}}  {_about(c.theirs)}", f"{c.ours.label:<{width}}  {_about(c.ours)}", ""]
    table = [("", c.theirs.label, c.ours.label, f"difference ({c.ours.label} - {c.theirs.label})")]
    table += [(r.name, *r.cells()) for r in c.rows]
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    lines += [f"  {r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}".rstrip() for r in table]
    lines += [f"verdict   {side.label}: {side.verdict_reason}" for side in (c.theirs, c.ours) if side.verdict_reason]
    lines += [f"note      {n}" for n in c.notes]
    return "\n".join(lines)


# ------------------------------------------------------------------ the other side


@dataclass(frozen=True)
class AgainstSide:
    """The capture compared with: a run's (``run_dir`` set; its recorded analysis) or any capture's."""

    capture: Path
    summary: AnalysisSummary
    device: str | None = None               # the device's address (None: guessed from the capture)
    run_dir: Path | None = None
    link_rate_bps: float | None = None
    captured_at: str | None = None          # a run's: where it took its capture (None: judged from the timing)
    loaded: CaptureAnalysis | None = field(default=None, compare=False, repr=False)

    def analysis(self) -> CaptureAnalysis:
        """The capture's full analysis (frames, for the plots): a run's record keeps only its figures."""
        if self.loaded is not None:
            return self.loaded
        return load_capture(self.capture, device_ip=self.device, link_rate_bps=self.link_rate_bps,
                            captured_at=self.captured_at, sender=self._sender())

    def _sender(self) -> str | None:
        """The side that sent the summary's data, so a two-way run is re-read on the same connection."""
        direction = self.summary.data_direction or ""
        return direction.split("->")[0] if self.device and direction.count("->") == 1 else None


def _result(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "result.json"
    if not path.is_file():
        raise NetreproError(f"{run_dir} has no result.json, so it is not a run folder",
                            "give a run folder (netrepro run makes one) or a capture file")
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise NetreproError(f"{path} is not readable JSON ({exc})", "give another run folder or its capture") from None
    if not isinstance(result, dict):
        raise NetreproError(f"{path} is not a run's result", "give another run folder or its capture")
    return result


def _run_capture(run_dir: Path, result: Mapping[str, Any]) -> Path:
    """The run's capture: where result.json says, or in the folder itself when the folder was moved."""
    named = Path(str(result.get("capture") or "capture.pcap"))
    for path in (named, run_dir / named.name):
        if path.is_file() and path.stat().st_size:
            return path
    raise NetreproError(f"run folder {run_dir} has no capture ({named.name} missing or empty)",
                        "the run did not get to capture: give another run folder or a capture file")


def _run_side(run_dir: Path, result: Mapping[str, Any], capture: Path, sender: str | None) -> AgainstSide:
    """A run's capture with its recorded analysis; analysed again only when the run has none or the
    caller wants the other direction of a two-way run."""
    device = result.get("device") if isinstance(result.get("device"), str) else None
    recorded = result.get("analysis") if isinstance(result.get("analysis"), dict) else {}
    rate = recorded.get("link_rate_mbps")
    rate_bps = rate * 1e6 if isinstance(rate, int | float) else None
    # a result without captured_at was taken at the device, as every run's was before `run --capture-at`
    captured_at = result.get("captured_at") if result.get("captured_at") in ("device", "peer") else "device"
    summary = AnalysisSummary.from_dict(recorded) if recorded.get("conn") is not None else None
    sent_by = (summary.data_direction or "").split("->")[0] if summary else None
    # a one-connection run has no other direction to pick (a guessed device on the user's side may be wrong)
    if summary is not None and (sender in (None, sent_by) or device is None or summary.connections < 2):
        return AgainstSide(capture, summary, device, run_dir, rate_bps, captured_at)
    loaded = load_capture(capture, device_ip=device, link_rate_bps=rate_bps, captured_at=captured_at,
                          sender=sender if device else None)
    return AgainstSide(capture, loaded.to_summary(), device, run_dir, rate_bps, captured_at, loaded)


def _beside(capture: Path) -> dict[str, Any] | None:
    """The result.json of the run folder a capture is in, when it names this capture."""
    try:
        result = json.loads((capture.parent / "result.json").read_text())
    except (OSError, ValueError):
        return None
    named = result.get("capture") if isinstance(result, dict) else None
    return result if isinstance(named, str) and Path(named).name == capture.name else None


def load_against(path: str | os.PathLike, sender: str | None = None) -> AgainstSide:
    """The other side of a comparison: a run folder or a capture file (see the module's docstring).

    ``sender`` ("device"/"peer"): for a run, the connection carrying data from that side (a two-way run's
    other direction). Raises NetreproError (one line) for a folder that is not a run or has no capture,
    and for a capture that cannot be read.
    """
    path = Path(path)
    if not path.exists():
        raise NetreproError(f"{path} not found", "give a run folder (netrepro run makes one) or a capture file")
    if path.is_dir():
        result = _result(path)
        return _run_side(path, result, _run_capture(path, result), sender)
    result = _beside(path) if path.is_file() else None
    if result is not None:
        return _run_side(path.parent, result, path, sender)
    loaded = load_capture(path)
    return AgainstSide(path, loaded.to_summary(), loaded=loaded)


def against_document(user_capture: str | os.PathLike, user_device: str | None, user_stream: int | None,
                     run_capture: str | os.PathLike, run_device: str | None, out_dir: str | os.PathLike,
                     title: str = "", run_sender: str | None = None, run_captured_at: str = "device",
                     user_rate_bps: float | None = None) -> dict[str, Any]:
    """A reproduce case's ``against`` entry: {"capture", "comparison", "plots"}.

    The user's capture is analysed as ``inspect --device --conn`` would; the run's capture with its
    device, read with the run's recorded analysis (and its captured_at) when a result.json beside it
    names it, else as taken at ``run_captured_at``. ``run_sender`` picks the direction of a two-way run.
    The overlay plots go into out_dir. ``user_rate_bps``, the rate of the user's link where known (the report's),
    lets the user's verdict test for link-limited as the run's does.
    """
    theirs = load_capture(user_capture, device_ip=user_device, conn=user_stream, link_rate_bps=user_rate_bps)
    run_capture = Path(run_capture)
    result = _beside(run_capture)
    if result is not None and (run_device is None or result.get("device") == run_device):
        ours = _run_side(run_capture.parent, result, run_capture, run_sender)
    else:
        loaded = load_capture(run_capture, device_ip=run_device, captured_at=run_captured_at,
                              sender=run_sender if run_device else None)
        ours = AgainstSide(run_capture, loaded.to_summary(), run_device, captured_at=run_captured_at, loaded=loaded)
    comparison = compare_summaries(theirs.to_summary(), ours.summary)
    plots = plot_overlay(theirs, ours.analysis(), Path(out_dir), title or Path(user_capture).name)
    return {"capture": str(user_capture), "comparison": comparison.as_dict(), "plots": [str(p) for p in plots]}


__all__ = ["AgainstSide", "CaptureComparison", "ComparedCapture", "ComparisonRow", "against_document",
           "compare_summaries", "format_comparison", "load_against"]
