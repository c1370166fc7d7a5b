"""Plots of a sweep and of a tune: throughput against each swept option per link, a heatmap for two
options, and the frontier of throughput against lwIP's RAM. matplotlib's object API on Agg, as
harness.analysis.plots; PNG and SVG each."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.analysis.plots import COLOURS, new_figure, save_figure


def plot_sweep(document: dict[str, Any], out_dir: Path) -> list[Path]:
    """One plot per swept option (throughput against its effective value, a line per link and per
    value of the other options), and a heatmap per link when exactly two options were swept."""
    points = [p for p in document["points"] if p["throughput_mbps"] is not None]
    if not points:
        return []
    names = [a["name"] for a in document["spec"]["axes"]]
    written = []
    for name in names:
        fig = new_figure(8, 5)
        ax = fig.add_subplot()
        for label, series in _series(points, name, names).items():
            xs, ys, bounds = zip(*series, strict=True)
            line = ax.plot(xs, ys, marker="o", label=label)[0]
            if any(b is not None for b in bounds):
                ax.plot(xs, [b if b is not None else float("nan") for b in bounds], linestyle="--",
                        color=line.get_color(), alpha=0.6, label=f"{label}: bound min(rate, window/RTT)")
        ax.set_xlabel(f"{name} (effective value)")
        ax.set_ylabel("throughput (Mbit/s)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.suptitle(f"{document['platform']}: throughput against {name} "
                     f"({document['spec']['workload']['name']})", fontsize=10.5)
        written += save_figure(fig, Path(out_dir) / f"throughput-{name}")
    if len(names) == 2:
        for link in dict.fromkeys(p["link"] for p in points):
            written += _heatmap(document, [p for p in points if p["link"] == link], names, link, out_dir)
    return written


def _value(point: dict[str, Any], name: str) -> float | str:
    """The option's effective value (what the firmware reported), else the value as written."""
    value = point.get("effective_options", {}).get(name)
    return value if value is not None else point["options"][name]


def _series(points: Sequence[dict[str, Any]], name: str, names: Sequence[str]) -> dict[str, list[tuple]]:
    """(x, throughput, bound) per line: a line per link and per combination of the other options."""
    out: dict[str, list[tuple]] = {}
    for p in points:
        others = " ".join(f"{n}={p['options'][n]}" for n in names if n != name)
        out.setdefault(" ".join(filter(None, [p["link"], others])), []).append(
            (_value(p, name), p["throughput_mbps"], p["analysis"].get("bound_mbps")))
    return {label: sorted(series, key=lambda s: s[0]) for label, series in out.items()}


def _heatmap(document: dict[str, Any], points: Sequence[dict[str, Any]], names: Sequence[str], link: str,
             out_dir: Path) -> list[Path]:
    xs = sorted({_value(p, names[0]) for p in points})
    ys = sorted({_value(p, names[1]) for p in points})
    grid = [[float("nan")] * len(xs) for _ in ys]
    for p in points:
        grid[ys.index(_value(p, names[1]))][xs.index(_value(p, names[0]))] = p["throughput_mbps"]
    fig = new_figure(8, 6)
    ax = fig.add_subplot()
    image = ax.imshow(grid, origin="lower", cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(xs)), [str(x) for x in xs])
    ax.set_yticks(range(len(ys)), [str(y) for y in ys])
    for i, row in enumerate(grid):
        for j, value in enumerate(row):
            if value == value:  # not NaN
                ax.text(j, i, f"{value:.1f}", ha="center", va="center", color="white", fontsize=8)
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    fig.colorbar(image, ax=ax, label="throughput (Mbit/s)")
    fig.suptitle(f"{document['platform']} over {link}: throughput (Mbit/s)", fontsize=10.5)
    slug = "".join(c if c.isalnum() else "_" for c in link)
    return save_figure(fig, Path(out_dir) / f"heatmap-{slug}")


def plot_frontier(trials: Sequence[dict[str, Any]], frontier: Sequence[dict[str, Any]], marks: Sequence[dict[str, Any]],
                  budget: int, path_stem: Path, title: str) -> list[Path]:
    """Throughput against lwIP RAM: every trial run, the Pareto frontier joined, the budget as a line
    and `marks` (the report profiles: {"label", "ram", "throughput_mbps"}) as stars."""
    fig = new_figure(9, 5.5)
    ax = fig.add_subplot()
    ran = [t for t in trials if t.get("throughput_mbps") is not None]
    ax.scatter([t["lwip_ram"] / 1024 for t in ran], [t["throughput_mbps"] for t in ran], s=18,
               color=COLOURS["link"], alpha=0.5, label="trials")
    front = sorted(frontier, key=lambda t: t["lwip_ram"])
    ax.plot([t["lwip_ram"] / 1024 for t in front], [t["throughput_mbps"] for t in front], marker="o",
            color=COLOURS["data"], drawstyle="steps-post", label="Pareto frontier")
    ax.axvline(budget / 1024, color=COLOURS["retrans"], linestyle="--", label=f"RAM budget {budget / 1024:.1f} KiB")
    for mark in marks:
        if mark.get("throughput_mbps") is None:
            continue
        ax.scatter([mark["ram"] / 1024], [mark["throughput_mbps"]], marker="*", s=160, zorder=5,
                   label=f"{mark['label']} ({mark['ram'] / 1024:.1f} KiB)")
    ax.set_xlabel("lwIP RAM (KiB: heap, pools, other data)")
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10.5)
    return save_figure(fig, path_stem)
