"""A sweep: every combination of a few lwIP options' values, over every link asked for, each run as `run` runs it.

    netrepro sweep openmv-n6 --set TCP_WND=4*TCP_MSS,8*TCP_MSS --link wifi --rtt 5ms,10ms --workload sock-rx

Each configuration is built first, here; one lwIP rejects at compile time (its sanity checks'
#error) is listed with lwIP's message and not run. The points (configuration x link) then run on
Ray (harness.studies.parallel), each in its own folder under the sweep's folder:

    FOLDER/sweep.json    the sweep as asked (`spec`), its points so far and the rejected configurations
    FOLDER/points.csv    one row a point: options, link, throughput, lwIP RAM, the capture's figures
    FOLDER/sweep.txt     the table
    FOLDER/plots/        throughput against each swept option per link; a heatmap for two options
    FOLDER/NN-.../       each point's run folder

sweep.json is rewritten as each point ends, so an interrupted sweep keeps what finished;
`resume_sweep(FOLDER)` runs the points that did not pass.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.rig.build import build_firmware, lwip_tree
from harness.rig.devicetime import TimeChoice
from harness.rig.lwip_ram import ram_line
from harness.rig.platform import Platform, load_platform
from harness.rig.workload import Workload
from harness.runs.plan import Configuration
from harness.studies.parallel import RunTask, TaskOutcome

SWEEP_FILE = "sweep.json"
# The capture's figures a point keeps (the whole analysis stays in the point's result.json).
ANALYSIS_FIELDS = ("verdict", "verdict_reason", "rtt_ms", "device_mss", "device_window", "goodput_mbps",
                   "link_payload_mbps", "window_bound_mbps", "bound_mbps", "retransmissions")
CSV_ANALYSIS = ("verdict", "rtt_ms", "device_mss", "bound_mbps", "link_payload_mbps", "retransmissions")

Runner = Callable[[Sequence[RunTask], Callable[[TaskOutcome], None]], Any]  # RayRunner.run


@dataclass(frozen=True)
class Axis:
    """One swept option and its values, as `--set NAME=V1,V2,...` gives them (lwIP expressions)."""

    name: str
    values: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Axis:
        name, sep, values = text.partition("=")
        parts = tuple(v.strip() for v in values.split(","))
        if not sep or not name.strip() or not all(parts):
            raise NetreproError(f"bad sweep setting '{text}'",
                                "write it as NAME=V1,V2,..., e.g. --set TCP_WND=4*TCP_MSS,8*TCP_MSS")
        return cls(name.strip(), parts)


@dataclass(frozen=True)
class LinkPoint:
    """One link of the sweep: a preset and the --rtt/--rate value of this point (None: the preset's)."""

    preset: str | None
    rtt: str | None = None
    rate: str | None = None

    @property
    def label(self) -> str:
        given = [f"{k}={v}" for k, v in (("rtt", self.rtt), ("rate", self.rate)) if v is not None]
        return " ".join([self.preset or "direct", *given])

    def spec(self, platform: Platform) -> LinkSpec:
        preset = platform.link_preset(self.preset) if self.preset else {}
        return LinkSpec.from_preset(preset).override(rtt=self.rtt, rate=self.rate)


@dataclass(frozen=True)
class SweepSpec:
    """What the command line asked for; stored in sweep.json so a sweep can be resumed."""

    platform: str
    axes: tuple[Axis, ...]
    links: tuple[str | None, ...] = (None,)
    rtts: tuple[str, ...] = ()
    rates: tuple[str, ...] = ()
    workload: Workload = field(default_factory=lambda: Workload("rx", seconds=3.0))
    lwip: str | None = None
    include: tuple[str, ...] = ()
    time: TimeChoice = field(default_factory=TimeChoice)
    lwip_tree: str | None = None
    boot_timeout: float = 60.0

    def validate(self) -> None:
        if not self.axes:
            raise NetreproError("nothing to sweep", "give --set NAME=V1,V2,... at least once")
        names = [a.name for a in self.axes]
        if len(set(names)) < len(names):
            raise NetreproError(f"option {_first_repeat(names)} is swept twice", "give each option one --set")
        if self.workload.kind.two_way:
            raise NetreproError(f"workload {self.workload.name} measures two directions at once",
                                "sweep one direction: rx, tx, discard, sock-rx or sock-tx")

    def configurations(self) -> list[dict[str, str]]:
        """Every combination of the axes' values, the first axis slowest."""
        return [dict(zip([a.name for a in self.axes], values, strict=True))
                for values in itertools.product(*(a.values for a in self.axes))]

    def link_points(self) -> list[LinkPoint]:
        return [LinkPoint(preset, rtt, rate) for preset in self.links
                for rtt in (self.rtts or (None,)) for rate in (self.rates or (None,))]

    def configuration(self, options: dict[str, str]) -> Configuration:
        return Configuration(self.lwip, self.include, tuple(f"{k}={v}" for k, v in options.items()))

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["axes"] = [{"name": a.name, "values": list(a.values)} for a in self.axes]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepSpec:
        return cls(platform=data["platform"], axes=tuple(Axis(a["name"], tuple(a["values"])) for a in data["axes"]),
                   links=tuple(data["links"]), rtts=tuple(data["rtts"]), rates=tuple(data["rates"]),
                   workload=Workload(**data["workload"]), lwip=data["lwip"], include=tuple(data["include"]),
                   time=TimeChoice(**data["time"]), lwip_tree=data["lwip_tree"], boot_timeout=data["boot_timeout"])


@dataclass
class Sweep:
    """A sweep's folder and what it holds so far."""

    spec: SweepSpec
    folder: Path
    points: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False

    def document(self) -> dict[str, Any]:
        """`--json`'s document: {"points": [{"options", "link", "throughput_mbps", "lwip_ram", "analysis",
        "run_dir", ...}], "rejected": [{"options", "error"}], ...}."""
        return {"platform": self.spec.platform, "folder": str(self.folder), "spec": self.spec.as_dict(),
                "interrupted": self.interrupted, "points": self.points, "rejected": self.rejected}

    def save(self) -> None:
        (self.folder / SWEEP_FILE).write_text(json.dumps(self.document(), indent=2) + "\n")
        (self.folder / "points.csv").write_text(points_csv(self.points, [a.name for a in self.spec.axes]))
        (self.folder / "sweep.txt").write_text(format_sweep(self.document()) + "\n")

    @classmethod
    def load(cls, folder: Path) -> Sweep:
        path = Path(folder) / SWEEP_FILE
        if not path.is_file():
            raise NetreproError(f"{folder} is not a sweep's folder (no {SWEEP_FILE})",
                                "give the folder a sweep printed (its first line names it)")
        data = json.loads(path.read_text())
        return cls(SweepSpec.from_dict(data["spec"]), Path(folder).resolve(), data["points"], data["rejected"])


# ------------------------------------------------------------------ running


def run_sweep(spec: SweepSpec, folder: Path, runner: Runner, progress: Progress | None = None) -> Sweep:
    """Build every configuration, run every point not yet passed in `folder` (a sweep's folder, new or
    resumed), and write the table, CSV and JSON as points end. Plots are the caller's (plot_sweep)."""
    progress = progress or Progress(quiet=True)
    platform, tree = check_sweep(spec)
    links = spec.link_points()
    sweep = Sweep.load(folder) if (folder / SWEEP_FILE).is_file() else Sweep(spec, folder)
    sweep.spec, sweep.interrupted = spec, False
    finished = {p["key"]: p for p in sweep.points if p.get("status") == "passed"}
    sweep.points, sweep.rejected = list(finished.values()), []
    sweep.save()   # a sweep stopped while building is still a folder --resume takes
    tasks = []
    for number, options in enumerate(spec.configurations(), 1):
        configuration = spec.configuration(options)
        config = configuration.resolve(platform, tree)   # a bad option name stops the sweep here
        try:
            firmware = build_firmware(config, progress.step)
        except NetreproError as exc:
            progress.warn(f"{_options_text(options)}: lwIP rejects it: {exc.problem}")
            sweep.rejected.append({"options": options, "error": exc.problem})
            continue
        ram = firmware.lwip_ram.summary() if firmware.lwip_ram else {}
        for k, link in enumerate(links, 1):
            key = point_key(number, k, options, link)
            if key in finished:
                continue
            run_dir = folder / key
            _set_aside(run_dir)
            tasks.append(RunTask(key, platform.name, configuration, link.spec(platform), spec.workload, spec.time,
                                 str(run_dir), spec.lwip_tree, spec.boot_timeout))
            sweep.points.append(_pending(key, options, link, ram, run_dir))
    sweep.points.sort(key=lambda p: p["key"])
    sweep.save()
    if finished:
        progress.step(f"resuming: {len(finished)} point(s) passed before, {len(tasks)} to run")

    def on_done(outcome: TaskOutcome) -> None:
        point = next(p for p in sweep.points if p["key"] == outcome.task.key)
        point.update(point_figures(outcome))
        progress.step(point_line(point))
        sweep.save()

    try:
        runner(tasks, on_done)
    except KeyboardInterrupt:
        sweep.interrupted = True
        sweep.save()
        raise
    sweep.save()
    return sweep


def check_sweep(spec: SweepSpec) -> tuple[Platform, Path]:
    """Everything about the grid that can be wrong before a build or a run: one-line errors."""
    spec.validate()
    platform = load_platform(spec.platform)
    tree = lwip_tree(spec.lwip_tree)
    for link in spec.link_points():
        link.spec(platform)                          # an unknown preset, a bad --rtt or --rate
    spec.configuration(spec.configurations()[0]).profile(platform, tree)   # the options' names, the profile
    return platform, tree


def resume_sweep(folder: Path, runner: Runner, progress: Progress | None = None) -> Sweep:
    """Run again the points of FOLDER's sweep that did not pass (its spec as stored)."""
    return run_sweep(Sweep.load(folder).spec, Path(folder).resolve(), runner, progress)


def point_key(number: int, link_number: int, options: dict[str, str], link: LinkPoint) -> str:
    """A point's folder name: its configuration's and link's numbers, then its options and link, readably."""
    text = "_".join([*(f"{k}={v}" for k, v in options.items()), link.label])
    return f"c{number:02d}-l{link_number:02d}-" + re.sub(r"[^A-Za-z0-9=._-]+", "_", text.replace("*", "x"))[:80]


def _set_aside(run_dir: Path) -> None:
    """A folder an interrupted or failed earlier attempt left keeps its files under another name."""
    if not run_dir.exists():
        return
    n = 1
    while run_dir.with_name(f"{run_dir.name}-earlier{n}").exists():
        n += 1
    run_dir.rename(run_dir.with_name(f"{run_dir.name}-earlier{n}"))


def _pending(key: str, options: dict[str, str], link: LinkPoint, ram: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    return {"key": key, "options": options, "link": link.label, "status": "pending", "throughput_mbps": None,
            "lwip_ram": ram, "effective_options": {}, "analysis": {}, "run_dir": str(run_dir), "error": None,
            "attempts": [], "host": None, "node": None}


def point_figures(outcome: TaskOutcome) -> dict[str, Any]:
    """What a finished task adds to its point; its folder is that of the run that stands (a run the host
    disturbed stands repeated at twice D, in a folder beside the planned one: harness.runs.disturbed)."""
    result = outcome.result or {}
    analysis = result.get("analysis") or {}
    status = "passed" if outcome.passed else ("failed" if outcome.error or result else "lost")
    return {"run_dir": outcome.standing_run_dir, "status": status,
            "throughput_mbps": result.get("throughput_mbps") if outcome.passed else None,
            "effective_options": result.get("options", {}),
            "analysis": {k: analysis[k] for k in ANALYSIS_FIELDS if k in analysis},
            "error": outcome.error, "attempts": list(outcome.attempts), "host": outcome.host,
            "node": outcome.node,
            "time": {k: result.get("time", {}).get(k) for k in ("mode", "dilation", "host_lagged")}}


# ------------------------------------------------------------------ output


def point_line(point: dict[str, Any]) -> str:
    figure = f"{point['throughput_mbps']:.2f} Mbit/s" if point["throughput_mbps"] is not None else point["status"]
    verdict = point["analysis"].get("verdict")
    tries = f" (after {len(point['attempts'])} attempts)" if len(point["attempts"]) > 1 else ""
    return (f"{_options_text(point['options'])} over {point['link']}: {figure}" + (f", {verdict}" if verdict else "")
            + tries)


def format_sweep(document: dict[str, Any]) -> str:
    """The sweep's table: one row a point, then the configurations lwIP rejected."""
    spec, points = document["spec"], document["points"]
    names = [a["name"] for a in spec["axes"]]
    workload = spec["workload"]
    lines = [f"sweep on {document['platform']}: {', '.join(names)} x {len({p['link'] for p in points}) or 0} link(s), "
             f"workload {workload['name']} ({workload['seconds']:g} s a run, {spec['time']['mode']} time); "
             f"folder {document['folder']}", ""]
    widths = [max(len(n), *(len(str(p["options"].get(n))) for p in points)) if points else len(n) for n in names]
    link_w = max([len("link"), *(len(p["link"]) for p in points)])
    header = ("  ".join(f"{n:<{w}}" for n, w in zip(names, widths, strict=True)) + f"  {'link':<{link_w}}  "
              f"{'Mbit/s':>7} {'bound':>7} {'RTT ms':>6} {'lwIP KiB':>8}  verdict")
    lines += [header, "-" * len(header)]
    for p in points:
        a = p["analysis"]
        figure = f"{p['throughput_mbps']:.2f}" if p["throughput_mbps"] is not None else p["status"]
        ram = p["lwip_ram"].get("total") if p["lwip_ram"] else None
        lines.append("  ".join(f"{p['options'].get(n)!s:<{w}}" for n, w in zip(names, widths, strict=True))
                     + f"  {p['link']:<{link_w}}  {figure:>7} {_num(a.get('bound_mbps')):>7} "
                     f"{_num(a.get('rtt_ms')):>6} {_num(ram / 1024 if ram else None):>8}  "
                     f"{a.get('verdict') or p.get('error') or '-'}")
    if document["rejected"]:
        lines += ["", "configurations lwIP rejects (not run):",
                  *(f"  {_options_text(r['options'])}: {r['error']}" for r in document["rejected"])]
    failed = [p for p in points if p["status"] not in ("passed", "pending")]
    if failed:
        lines += ["", "points that failed (after a retry):",
                  *(f"  {p['key']}: {p['error']} (attempts: {', '.join(p['attempts'])})" for p in failed)]
    rams = {ram_line(p["lwip_ram"]) for p in points if p["lwip_ram"]}
    if len(rams) == 1:
        lines += ["", f"every configuration: {rams.pop()}"]
    if document.get("interrupted"):
        lines += ["", f"interrupted: resume with --resume {document['folder']}"]
    return "\n".join(lines)


def points_csv(points: Sequence[dict[str, Any]], names: Sequence[str]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([*names, "link", "status", "throughput_mbps", "lwip_ram_bytes", *CSV_ANALYSIS, "run_dir"])
    for p in points:
        writer.writerow([*(p["options"].get(n) for n in names), p["link"], p["status"], p["throughput_mbps"],
                         (p["lwip_ram"] or {}).get("total"), *(p["analysis"].get(k) for k in CSV_ANALYSIS),
                         p["run_dir"]])
    return out.getvalue()


def _options_text(options: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in options.items())


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}" if value < 100 else f"{value:.0f}"


def _first_repeat(names: Sequence[str]) -> str:
    return next(n for i, n in enumerate(names) if n in names[:i])

