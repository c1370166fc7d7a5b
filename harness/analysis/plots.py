"""Plots of a capture analysis: time/sequence, goodput, advertised window and bytes in flight.

matplotlib's object API with the Agg renderer (no pyplot, no global state), so plotting works
headless, from threads and from tests. Each plot is written as PNG and as SVG; in the SVG the
dense parts (thousands of segments) are embedded as a bitmap so the file stays small while
axes and text stay vector.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from harness.analysis.capture_analysis import CaptureAnalysis

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
        fig = Figure(figsize=(10, 6.2), dpi=DPI, layout="constrained")
        draw(fig, analysis)
        fig.suptitle(_title(analysis, title, name), fontsize=10.5, x=0.01, ha="left")
        for ext in ("png", "svg"):
            path = out_dir / f"{name}.{ext}"
            fig.savefig(path, format=ext)
            written.append(path)
    return written


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
                    markeredgewidth=1.6, label=f"retransmissions ({len(old)})", zorder=5)
        if acks:
            ts = [r[0] for r in acks]
            ax.step(ts, [r[1] / div for r in acks], where="post", color=COLOURS["ack"], linewidth=1.1,
                    label=f"{a.receiver}'s ACK", rasterized=len(acks) > 3000)
            ax.step(ts, [(r[1] + r[2]) / div for r in acks], where="post", color=COLOURS["window"], linewidth=1.1,
                    label=f"{a.receiver}'s window edge (ACK + window)", rasterized=len(acks) > 3000)
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
                color="#222222", linewidth=0.9, alpha=0.8, label=f"per {step * 1e3:g} ms")
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
                linewidth=1.6, label=f"{a.receiver}'s advertised window", rasterized=len(acks) > 3000, zorder=3)
        zeros = [r[0] for r in acks if r[2] == 0]
        if zeros:
            ax.plot(zeros, [0] * len(zeros), "v", color=COLOURS["retrans"], markersize=6,
                    label=f"zero window ({len(zeros)} ACKs)")
    if a.in_flight:
        # per pixel column, its least and its most in flight
        flight = [p for g in _by_column(a.in_flight, lambda point: point[0])
                  for p in dict.fromkeys((min(g, key=lambda q: q[1]), max(g, key=lambda q: q[1])))]
        ax.plot([t for t, _ in flight], [f / div for _, f in flight], ".", color=COLOURS["flight"],
                markersize=2.5, alpha=0.7, label=f"bytes in flight ({a.sender}'s view)",
                rasterized=len(a.in_flight) > 3000)
    ax.set_xlabel("time since the connection's first frame (s)")
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    source = textwrap.shorten(a.in_flight_source, 110)
    ax.set_title(f"in flight: {source}", fontsize=8.5, loc="left")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)


__all__ = ["plot_capture"]
