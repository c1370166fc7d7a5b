"""Plots of a capture analysis: time/sequence, goodput, advertised window and bytes in flight.

matplotlib's object API with the Agg renderer (no pyplot, no global state), so plotting works
headless, from threads and from tests. Each plot is written as PNG and as SVG; in the SVG every
data series (up to thousands of segments, ACKs or columns) is a bitmap (rasterized=True) and the
rest is compacted (compact_svg), so the file stays small (tens of kB: a report page inlines dozens)
while axes and text stay vector.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import textwrap
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from harness.analysis.capture_analysis import CaptureAnalysis
from harness.core.errors import NetreproError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLOURS = {
    "data": "#1f4e9c",       # sender's segments
    "retrans": "#d62728",    # retransmissions
    "ack": "#2a9d3a",        # receiver's cumulative ACK
    "window": "#e6a100",     # right edge of the receiver's window (ACK + window)
    "flight": "#1f4e9c",
    "goodput": "#4c72b0",
    "link": "#555555",
    "bound": "#e6a100",
}
DPI = 110
# A full-width plot is ~1000 pixel columns wide: past this many marks, those sharing a column are drawn as one
# (a 100 Mbit/s capture has ~8000 segments a second, and drawing each took seconds a run for no visible change)
MAX_MARKS = 2000

T = TypeVar("T")
PLOTS_ENV = "NETREPRO_PLOTS"


def run_plots_wanted() -> bool:
    """Whether a run draws its capture's plots: yes unless $NETREPRO_PLOTS is "off". A batch job that reads
    only figures (a CI suite of hundreds of runs) saves about 2 CPU-s a run (matplotlib's import and six
    renders), time its boards would otherwise share the cores with."""
    given = os.environ.get(PLOTS_ENV, "on")
    if given not in ("on", "off"):
        raise NetreproError(f"{PLOTS_ENV}={given!r} is neither on nor off",
                            f"set {PLOTS_ENV} to on or off, or unset it")
    return given == "on"


def new_figure(width: float = 10, height: float = 6.2) -> Figure:
    """An empty figure (Agg, laid out by matplotlib's constrained layout). matplotlib is imported here, on the
    first plot: importing it takes about half a second of CPU, which every `netrepro` command paid at start,
    plotting or not."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def plot_capture(analysis: CaptureAnalysis, out_dir: Path, title: str) -> list[Path]:
    """Write timeseq, goodput and window plots (PNG and SVG) into out_dir; returns the files.

    Returns [] when the analysis has no data direction (empty capture, no payload): its
    ``empty_reason`` says why.
    """
    if analysis.sender is None or not analysis.data_segments:
        return []
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, draw in (("timeseq", _time_sequence), ("goodput", _goodput), ("window", _window)):
        fig = new_figure()
        draw(fig, analysis)
        fig.suptitle(_title(analysis, title, name), fontsize=10.5, x=0.01, ha="left")
        written += save_figure(fig, out_dir / name)
    return written


def save_figure(fig: Figure, stem: Path) -> list[Path]:
    """Write the figure as stem.png and stem.svg (compacted: compact_svg); returns both paths."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    from matplotlib import rc_context

    paths = [stem.with_suffix(f".{ext}") for ext in ("png", "svg")]
    fig.savefig(paths[0], format="png")
    # rc_context is matplotlib's only way to set these; both are restored once the file is written. Text
    # stays text (else every glyph is a path: two thirds of a plot's bytes), and DejaVu Sans, the font the
    # layout was measured with, is named alone before the generic sans-serif (not ten fallbacks per label)
    with rc_context(SVG_RC):
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg")
    paths[1].write_text(compact_svg(buffer.getvalue()), encoding="utf-8")
    return paths


SVG_RC = {"svg.fonttype": "none", "font.sans-serif": ["DejaVu Sans"]}
_METADATA = re.compile(r"<metadata\b.*?</metadata>\s*", re.S)
_TAG = re.compile(r"<[^>]+>")
_GEOMETRY = re.compile(r'(\s(?:d|x|y|width|height)=")([^"]*)(")')
_LONG_DECIMAL = re.compile(r"(\d\.\d)\d+")
_PNG = re.compile(r"(data:image/png;base64,)\s*([A-Za-z0-9+/=\s]+)")
PALETTE = 256  # colours of a raster part: its lines and marks, and enough shades to smooth their edges


def compact_svg(text: str) -> str:
    """matplotlib's SVG without what a reader cannot see: no metadata, no indentation, coordinates to a
    tenth of a point (a plot is 720 pt wide, a few hundredths of a pixel on a screen), no rotations by
    zero, and the raster parts as palette PNGs (a fifth of the bytes). Text between tags and transforms
    (a raster part's scale needs its digits) are left as they are."""
    text = _TAG.sub(_compact_tag, _METADATA.sub("", text))
    return _styles_as_classes(_unreferenced_group_ids(re.sub(r">\s+<", "><", text)))


def _unreferenced_group_ids(text: str) -> str:
    """Groups' ids that nothing points to (matplotlib names every group: "patch_3", "text_12") dropped;
    a legend's kept, so the plot still says where its legend is."""
    referenced = set(re.findall(r"#([\w.-]+)", text))
    return re.sub(r'<g id="([^"]+)"', lambda m: m.group(0) if m.group(1) in referenced
                  or m.group(1).startswith("legend_") else "<g", text)


_STYLE = re.compile(r'(<\w+)([^>]*?) style="([^"]*)"')


def _styles_as_classes(text: str) -> str:
    """Each style attribute used more than once as a class (its name the style's hash, so the same style
    has the same class in every plot and a page inlining several has no clash) defined once in the SVG's
    own <style>; a tag with a class of its own keeps its style attribute."""
    counts = Counter(m.group(3) for m in _STYLE.finditer(text) if " class=" not in m.group(2))
    names = {style: "nr" + hashlib.sha1(style.encode()).hexdigest()[:8] for style, n in counts.items() if n > 1}
    if not names or "</style>" not in text:
        return text
    text = _STYLE.sub(lambda m: f'{m.group(1)}{m.group(2)} class="{names[m.group(3)]}"'
                      if m.group(3) in names and " class=" not in m.group(2) else m.group(0), text)
    rules = "".join(f".{name}{{{style}}}" for style, name in names.items())
    return text.replace("</style>", rules + "</style>", 1)


def _compact_tag(match: re.Match[str]) -> str:
    tag = re.sub(r'\stransform="rotate\(-?0 [^")]*\)"', "", match.group(0))
    tag = _PNG.sub(lambda m: m.group(1) + _palette_png(re.sub(r"\s+", "", m.group(2))), tag)
    tag = _GEOMETRY.sub(lambda m: m.group(1) + _LONG_DECIMAL.sub(r"\1", " ".join(m.group(2).split())) + m.group(3),
                        tag)
    return re.sub(r"\s+", " ", tag)


def _palette_png(data: str) -> str:
    """A base64 RGBA PNG as a palette PNG of PALETTE colours, when that is smaller (it nearly always is)."""
    from PIL import Image

    try:
        image = Image.open(io.BytesIO(base64.b64decode(data, validate=True)))
        image.load()
    except (ValueError, OSError):
        return data  # not a PNG Pillow reads: left as matplotlib wrote it
    buffer = io.BytesIO()
    image.convert("RGBA").quantize(PALETTE, method=Image.Quantize.FASTOCTREE).save(buffer, format="PNG",
                                                                                   optimize=True)
    smaller = base64.b64encode(buffer.getvalue()).decode("ascii")
    return smaller if len(smaller) < len(data) else data


def _title(a: CaptureAnalysis, title: str, which: str) -> str:
    what = {"timeseq": "time / sequence", "goodput": "goodput", "window": "advertised window and bytes in flight"}
    head = f"{title} - {what[which]} ({a.data_direction}, connection {a.conn})"
    verdict = textwrap.fill(f"{a.verdict}: {a.verdict_reason}", 130)
    return f"{head}\n{verdict}"


def _mb_axis(ax, top: int) -> float:
    """Scale for a byte axis: returns the divisor and labels the axis."""
    if top >= 4_000_000:
        ax.set_ylabel("relative sequence (MB)")
        return 1e6
    if top >= 4_000:
        ax.set_ylabel("relative sequence (kB)")
        return 1e3
    ax.set_ylabel("relative sequence (bytes)")
    return 1.0


def _by_column(items: Sequence[T], when: Callable[[T], float]) -> list[Sequence[T]]:
    """Time-ordered items in groups of one MAX_MARKS-th of their time span each (each item its own group
    when there are no more than MAX_MARKS)."""
    if len(items) <= MAX_MARKS:
        return [[item] for item in items]
    start = when(items[0])
    width = (when(items[-1]) - start) / MAX_MARKS or 1.0
    groups: list[list[T]] = []
    column = None
    for item in items:
        here = int((when(item) - start) / width)
        if here != column:
            groups.append([])
            column = here
        groups[-1].append(item)
    return groups


def _time_sequence(fig: Figure, a: CaptureAnalysis) -> None:
    """Stevens/tcptrace style: each segment a vertical bar from seq to seq+len, ACK and window lines."""
    from matplotlib.collections import LineCollection

    rtt = (a.rtt_ms or 5.0) / 1e3
    first = a.data_segments[0][0]
    last = a.data_segments[-1][0]
    zoom_len = min(max(10 * rtt, 0.02), max(last - first, 1e-3))
    # the zoom shows the first retransmission if there is one, else the middle of the transfer
    focus = next((t for t, _, _, re in a.data_segments if re), first + (last - first) / 2)
    zoom_start = min(max(first, focus - zoom_len / 2), max(first, last - zoom_len))
    axes = fig.subplots(2, 1, height_ratios=[3, 2])
    for ax, span in ((axes[0], None), (axes[1], (zoom_start, zoom_start + zoom_len))):
        segs = a.data_segments
        acks = a.receiver_acks
        if span is not None:
            lo, hi = span
            segs = [s for s in segs if lo <= s[0] <= hi]
            acks = [r for r in acks if lo - rtt <= r[0] <= hi]
        top = max((s[2] for s in segs), default=1)
        div = _mb_axis(ax, top)
        # the segments sharing a pixel column as one bar, from the lowest sequence number to the highest end
        new = [[(g[0][0], min(s for _, s, _, _ in g) / div), (g[0][0], max(e for _, _, e, _ in g) / div)]
               for g in _by_column([s for s in segs if not s[3]], lambda seg: seg[0])]
        old = [[(t, s / div), (t, e / div)] for t, s, e, re in segs if re]
        if new:
            ax.add_collection(LineCollection(new, colors=COLOURS["data"], linewidths=1.2, rasterized=True,
                                             label=f"{a.sender}'s segments"))
            ticks = [(t, e / div) for t, _, e, re in segs if not re]
            if len(ticks) <= 3000:
                ax.plot([t for t, _ in ticks], [y for _, y in ticks], "_", color=COLOURS["data"], markersize=4,
                        rasterized=True)
        if old:
            ax.add_collection(LineCollection(old, colors=COLOURS["retrans"], linewidths=2.2, rasterized=True))
            ax.plot([p[0][0] for p in old], [p[1][1] for p in old], "x", color=COLOURS["retrans"], markersize=7,
                    markeredgewidth=1.6, label=f"retransmissions ({len(old)})", zorder=5, rasterized=True)
        if acks:
            ts = [r[0] for r in acks]
            ax.step(ts, [r[1] / div for r in acks], where="post", color=COLOURS["ack"], linewidth=1.1,
                    label=f"{a.receiver}'s ACK", rasterized=True)
            ax.step(ts, [(r[1] + r[2]) / div for r in acks], where="post", color=COLOURS["window"], linewidth=1.1,
                    label=f"{a.receiver}'s window edge (ACK + window)", rasterized=True)
        if span is not None:
            ax.set_xlim(*span)
            ax.set_title(f"zoom: {zoom_len * 1e3:.0f} ms from {zoom_start:.3f} s", fontsize=9, loc="left")
        else:
            ax.set_xlim(first - (last - first) * 0.01, last + (last - first) * 0.01 + 1e-6)
        ax.autoscale(axis="y")
        ax.set_ylim(bottom=max(0.0, ax.get_ylim()[0]))
        ax.grid(True, alpha=0.3)
    axes[1].set_xlabel(f"time since the connection's first frame (s), as seen next to the {a.capture_near}")
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(loc="upper left", fontsize=8)


def _goodput(fig: Figure, a: CaptureAnalysis) -> None:
    ax = fig.subplots()
    if a.goodput:
        starts = [t for t, _ in a.goodput]
        values = [v for _, v in a.goodput]
        ax.bar(starts, values, width=a.interval_s * 0.9, align="edge", color=COLOURS["goodput"], alpha=0.6,
               label=f"goodput per {a.interval_s:g} s")
    if a.delivered and a.transfer_s:
        step = a.interval_s / 10
        bins: dict[int, int] = {}
        for t, n in a.delivered:
            bins[int(t // step)] = bins.get(int(t // step), 0) + n
        ks = range(min(bins), max(bins) + 1)
        ax.step([k * step for k in ks], [bins.get(k, 0) * 8 / step / 1e6 for k in ks], where="post",
                color="#222222", linewidth=0.9, alpha=0.8, label=f"per {step * 1e3:g} ms", rasterized=True)
    if a.goodput_mbps is not None:
        ax.axhline(a.goodput_mbps, color=COLOURS["goodput"], linestyle=":", linewidth=1.2,
                   label=f"total {a.goodput_mbps:.1f} Mbit/s")
    if a.link_rate_bps:
        ax.axhline(a.link_rate_bps / 1e6, color=COLOURS["link"], linestyle="--", linewidth=1.2,
                   label=f"link {a.link_rate_bps / 1e6:g} Mbit/s")
    if a.window_bound_mbps:
        ax.axhline(a.window_bound_mbps, color=COLOURS["bound"], linestyle="--", linewidth=1.2,
                   label=f"window/RTT {a.window_bound_mbps:.1f} Mbit/s")
    ax.set_xlabel("time since the connection's first frame (s)")
    ax.set_ylabel("Mbit/s (payload, retransmissions excluded)")
    tops = [v for _, v in a.goodput] + [a.goodput_mbps or 0, (a.link_rate_bps or 0) / 1e6, a.window_bound_mbps or 0]
    ax.set_ylim(0, max(max(tops) * 1.3, 1e-3))
    ax.grid(True, axis="y", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        fig.legend(loc="outside lower center", ncols=5, fontsize=8)


def _window(fig: Figure, a: CaptureAnalysis) -> None:
    ax = fig.subplots()
    acks = a.receiver_acks
    div, unit = (1e3, "kB") if max((w for _, _, w in acks), default=0) >= 4000 else (1.0, "bytes")
    if acks:
        ax.step([r[0] for r in acks], [r[2] / div for r in acks], where="post", color=COLOURS["window"],
                linewidth=1.6, label=f"{a.receiver}'s advertised window", rasterized=True, zorder=3)
        zeros = [r[0] for r in acks if r[2] == 0]
        if zeros:
            ax.plot(zeros, [0] * len(zeros), "v", color=COLOURS["retrans"], markersize=6,
                    label=f"zero window ({len(zeros)} ACKs)", rasterized=True)
    if a.in_flight:
        # per pixel column, its least and its most in flight
        flight = [p for g in _by_column(a.in_flight, lambda point: point[0])
                  for p in dict.fromkeys((min(g, key=lambda q: q[1]), max(g, key=lambda q: q[1])))]
        ax.plot([t for t, _ in flight], [f / div for _, f in flight], ".", color=COLOURS["flight"],
                markersize=2.5, alpha=0.7, label=f"bytes in flight ({a.sender}'s view)",
                rasterized=True)
    ax.set_xlabel("time since the connection's first frame (s)")
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    source = textwrap.shorten(a.in_flight_source, 110)
    ax.set_title(f"in flight: {source}", fontsize=8.5, loc="left")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)


# ------------------------------------------------------------------ two captures overlaid

OVERLAY_COLOURS = ("#d95f02", "#1f4e9c")   # the user's capture, netrepro's


def plot_overlay(theirs: CaptureAnalysis, ours: CaptureAnalysis, out_dir: Path, title: str,
                 theirs_label: str = "your capture", ours_label: str = "netrepro") -> list[Path]:
    """Write the time/sequence and the window plot of two captures overlaid (against-timeseq and
    against-window, PNG and SVG) into out_dir; returns the files.

    A capture without a data direction is left out of the plots (and its label says so); when neither
    has one, nothing is written and [] is returned.
    """
    sides = ((theirs, theirs_label, OVERLAY_COLOURS[0]), (ours, ours_label, OVERLAY_COLOURS[1]))
    drawn = [side for side in sides if side[0].sender is not None and side[0].data_segments]
    if not drawn:
        return []
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    missing = "; ".join(f"{label}: no data to plot ({a.empty_reason or 'no payload'})" for a, label, _ in sides
                        if a.sender is None or not a.data_segments)
    written: list[Path] = []
    for name, draw, what in (("against-timeseq", _overlay_time_sequence, "time / sequence"),
                             ("against-window", _overlay_window, "advertised window and bytes in flight")):
        fig = new_figure()
        draw(fig, drawn)
        verdicts = "; ".join([*(f"{label}: {a.verdict}" for a, label, _ in drawn), *([missing] if missing else [])])
        fig.suptitle(textwrap.fill(f"{title} - {what}", 130) + "\n" + textwrap.fill(verdicts, 130), fontsize=10.5,
                     x=0.01, ha="left")
        written += save_figure(fig, out_dir / name)
    return written


Drawn = Sequence[tuple[CaptureAnalysis, str, str]]


def _sequence_line(a: CaptureAnalysis, span: tuple[float, float] | None) -> tuple[list[float], list[int], int]:
    """Times and highest segment ends of the sender's first transmissions, a point per pixel column, and
    the sequence they start from (in a span: the highest end before it, so each capture starts at 0)."""
    segs = [s for s in a.data_segments if not s[3]]
    base = 0
    if span is not None:
        base = max((e for t, _, e, _ in segs if t < span[0]), default=min((s for _, s, _, _ in segs), default=0))
        segs = [s for s in segs if span[0] <= s[0] <= span[1]]
    groups = _by_column(segs, lambda seg: seg[0])
    return [g[-1][0] for g in groups], [max(e for _, _, e, _ in g) - base for g in groups], base


def _overlay_time_sequence(fig: Figure, drawn: Drawn) -> None:
    """Top: each capture's data (solid) and its receiver's window edge (dotted) over the whole connection.
    Bottom: the same 10 RTTs (the slower capture's) from the middle of the shorter transfer, each
    capture's bytes counted from that moment, so their pace compares directly."""
    rtt = max((a.rtt_ms or 5.0) for a, _, _ in drawn) / 1e3
    ends = [a.data_segments[-1][0] for a, _, _ in drawn]
    starts = [a.data_segments[0][0] for a, _, _ in drawn]
    middle = (max(starts) + min(ends)) / 2
    span = (middle, middle + min(max(10 * rtt, 0.02), max(min(ends) - middle, 1e-3)))
    axes = fig.subplots(2, 1, height_ratios=[3, 2])
    top = max(max(e for _, _, e, _ in a.data_segments) for a, _, _ in drawn)
    div = _mb_axis(axes[0], top)
    for a, label, colour in drawn:
        for ax, window in ((axes[0], None), (axes[1], span)):
            ts, seqs, base = _sequence_line(a, window)
            scale = div if window is None else 1e3
            ax.plot(ts, [s / scale for s in seqs], "-", color=colour, linewidth=1.4, rasterized=True,
                    label=f"{label}: {a.sender}'s data ({a.goodput_mbps or 0:.1f} Mbit/s)")
            acks = [r for r in a.receiver_acks if window is None or window[0] <= r[0] <= window[1]]
            acks = [g[-1] for g in _by_column(acks, lambda r: r[0])]
            ax.step([r[0] for r in acks], [(r[1] + r[2] - base) / scale for r in acks], where="post", color=colour,
                    linestyle=":", linewidth=1.1, label=f"{label}: {a.receiver}'s window edge", rasterized=True)
            old = [(t, (e - base) / scale) for t, _, e, re in a.data_segments
                   if re and (window is None or window[0] <= t <= window[1])]
            if old:
                ax.plot([t for t, _ in old], [y for _, y in old], "x", color=colour, markersize=7,
                        markeredgewidth=1.6, label=f"{label}: retransmissions ({len(old)})", zorder=5, rasterized=True)
    axes[1].set_xlim(*span)
    axes[1].set_ylabel("kB since the zoom's start")
    axes[1].set_title(f"zoom: {(span[1] - span[0]) * 1e3:.0f} ms from {span[0]:.3f} s", fontsize=9, loc="left")
    axes[1].set_xlabel("time since each connection's first frame (s)")
    for ax in axes:
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="upper left", fontsize=8)


def _overlay_window(fig: Figure, drawn: Drawn) -> None:
    """Each capture's receiver window (a line) and its sender's bytes in flight (dots), in its colour."""
    ax = fig.subplots()
    top = max(max((w for _, _, w in a.receiver_acks), default=0) for a, _, _ in drawn)
    div, unit = (1e3, "kB") if top >= 4000 else (1.0, "bytes")
    for a, label, colour in drawn:
        # per pixel column the largest window as the line and the range down to the smallest shaded, so a
        # dip stays visible without the line jumping between the two at every column
        columns = _by_column(a.receiver_acks, lambda r: r[0])
        if columns:
            ts = [g[0][0] for g in columns]
            highs = [max(w for _, _, w in g) / div for g in columns]
            ax.step(ts, highs, where="post", color=colour, linewidth=1.6, zorder=3, rasterized=True,
                    label=f"{label}: {a.receiver}'s advertised window (max {a.window_of(a.receiver).max} B)")
            ax.fill_between(ts, [min(w for _, _, w in g) / div for g in columns], highs, step="post", color=colour,
                            alpha=0.25, linewidth=0, zorder=2, rasterized=True)
        flight = [p for g in _by_column(a.in_flight, lambda point: point[0])
                  for p in dict.fromkeys((min(g, key=lambda q: q[1]), max(g, key=lambda q: q[1])))]
        if flight:
            ax.plot([t for t, _ in flight], [f / div for _, f in flight], ".", color=colour, markersize=2.5,
                    alpha=0.45, label=f"{label}: bytes in flight", rasterized=True)
    ax.set_xlabel("time since each connection's first frame (s)")
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)


__all__ = ["OVERLAY_COLOURS", "plot_capture", "plot_overlay"]
