"""Sensitivity: how far each figure moves when one assumed input goes to an end of its plausible range.

A report's [[inputs]] say which values netrepro assumed, their plausible `range = [low, high]` and
where netrepro uses them (`sets = "FILE: KEY"`). For each assumed input, every case of the
reproduction that depends on it runs again with that input at the low end of its range, then at the
high end, every other input at its value, through the steps reproduce takes for a case (its board,
firmware, link preset and workload; RunPlan.start, each run analysed beside the next;
repeat_runs; summarise_runs), and its median is set beside the reproduction's (the baseline):

    platforms/P.toml: links.L.rate / .rtt  the cases on board P over link preset L: that preset's rate or RTT
                                           (the input in Mbit/s or ms, the preset in tc's "43mbit", "5.5ms")
    platforms/P.toml: links.L.phy_rate     the cases over shared-medium preset L: the input is the air's UDP goodput
                                           (Mbit/s), and the PHY rate that carries it is found from the airtime
                                           arithmetic (harness.link.air.phy_rate_for), as calibrate-medium finds it
    platforms/P.toml: links.L.agg_frames   the same cases with the aggregation limit or the contention window (cwmin,
                      / .cwmin / .aifsn    aifsn) at an end, the PHY rate found again so the air still carries the
                                           preset's UDP goodput: the report's UDP figure stays what it is
    platforms/P.toml: links.L.bus_rate     the same for the WiFi chip's host bus (Mbit/s; its cost in us), bus and air
                      / .bus_cost          together; an end at which no PHY rate carries the UDP figure is not varied
    platforms/P.toml: nic.KEY              every case on board P: Platform.with_nic(KEY=value), for
                                           rx_burst_frames and rx_overflow_frames (the other one held at
                                           its effective value: rx_overflow_frames defaults to max(2, burst))
    platforms/P.toml: cpu.ipc              every case on board P, in device time: --mips = clock_mhz * ipc
    reports/R.toml: chunk                  the cases whose workload writes or reads in chunks (discard,
                                           sock-*) and that give no chunk of their own

With --jobs N (reproduce's, the same pool: harness.studies.plan_pool) every input's runs at both ends are
queued first and run N at once in device time, then judged as one at a time would; sensitivity.json records
`jobs` and the `schedule` (which runs shared the machine).

An end equal to the input's value is the baseline itself and is not run again. An assumed input that
cannot be varied is listed as not varied with the reason (e.g. the Ethernut's bytes in a K, which
converts the report's figures and changes no run), never skipped silently. A case "hangs on" an
input when an end of its range moved the case's median by more than the report's band.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import parse_rate, parse_time
from harness.rig.devicetime import TimeChoice
from harness.rig.platform import Nic, Platform, load_platform
from harness.rig.workload import DEFAULT_CHUNK, workload_kind
from harness.runs.analyse import Analyser, Repeats
from harness.runs.plan import RunPlan
from harness.runs.result import RunResult
from harness.studies.cases import CaseResult, summarise_runs
from harness.studies.claims import DEFAULT_BAND
from harness.studies.plan_pool import PlanPool, planned_jobs
from harness.studies.report_file import load_report, report_inputs, report_platform
from harness.studies.reproduce import Setup, case_direction, case_setup, repeat_runs
from harness.studies.sensitivity_air import (
    AIR_KEYS,
    AIR_UNITS,
    Unvaried,
    air_in_use,
    air_preset,
    air_shown,
    check_air_preset,
)
from harness.studies.sensitivity_text import ENDS, format_sensitivity, hangs_on
from harness.studies.sensitivity_text import moved as moved  # the module's own API, as before the split

NIC_KEYS = ("rx_burst_frames", "rx_overflow_frames")  # the [nic] numbers netrepro varies
LINK_KEYS = ("rate", "rtt")
_RATE_UNITS = {"bit/s": "bit", "kbit/s": "kbit", "Mbit/s": "mbit", "Gbit/s": "gbit"}  # input unit -> tc's
_TIME_UNITS = {"s": "s", "ms": "ms", "us": "us"}
_WHOLE_UNITS = {"nic": "frames", "chunk": "B"}
_SETS = re.compile(r"^(?:(platforms|reports)/([A-Za-z0-9_.-]+)\.toml|(report)):\s*([A-Za-z0-9_.-]+)$")
REPORT_OWNER = "report"  # `sets = "report: KEY"`: a key of the report file itself (its [links], [cpu], chunk)


@dataclass(frozen=True)
class Target:
    """Where an input's value goes, read from its `sets`."""

    kind: str                # "link", "air", "nic", "cpu" or "chunk"
    owner: str               # the platform (platforms/OWNER.toml) or the report (reports/OWNER.toml)
    key: str                 # rate or rtt, an air key, the [nic] key, ipc, chunk
    link: str | None = None  # the link preset (kinds "link" and "air")


@dataclass(frozen=True)
class Varied:
    """An assumed input netrepro varies: its value and range in the report's unit, and as netrepro sets them."""

    name: str
    value: float
    unit: str | None
    low: float
    high: float
    sets: str
    target: Target
    settings: dict[str, Any]  # "value", "low", "high" -> as set (e.g. "25mbit", 4, 0.5)
    shown: dict[str, str]     # "low", "high" -> what the runs were given, in words (e.g. "mips 400")
    note: str | None = None   # the reproduction did not run at the input's value


Execute = Callable[[Setup, Path], RunResult | Future[RunResult]]  # one run of a setup in a run folder


class RealRun:
    """The real runs: the setup's firmware built (or reused from the cache), then RunPlan.start, as reproduce
    runs a case; with a pool (--jobs N), queued on it instead, to run when the pool runs."""

    def __init__(self, lwip_tree_path: str | None, progress: Progress, analyser: Analyser,
                 pool: PlanPool | None = None) -> None:
        self.tree_path, self.progress, self.analyser, self.pool = lwip_tree_path, progress, analyser, pool
        self.plans: dict[tuple[str, ...], RunPlan] = {}

    def __call__(self, setup: Setup, run_dir: Path) -> Future[RunResult]:
        if self.pool is not None:
            return self.pool.submit(self.plan(setup), run_dir)
        return self.plan(setup).start(run_dir, self.analyser)

    def plan(self, setup: Setup) -> RunPlan:
        if setup.key() not in self.plans:
            self.plans[setup.key()] = setup.plan(self.tree_path, self.progress)
        return self.plans[setup.key()]


# ------------------------------------------------------------------ where an input goes


def parse_sets(sets: str | None) -> Target:
    """An input's `sets` ("FILE: KEY") as the place netrepro puts its value; Unvaried when it has none."""
    if not sets:
        raise Unvaried("the report does not say where netrepro uses it (no sets)")
    match = _SETS.match(sets.strip())
    if not match:
        raise Unvaried(f"sets '{sets}' is not 'platforms/P.toml: KEY', 'reports/R.toml: KEY' or 'report: KEY'")
    folder, owner, itself, key = match.groups()
    folder, owner = (folder, owner) if itself is None else ("reports", REPORT_OWNER)
    if key == "cpu" and owner == REPORT_OWNER:
        return Target("cpu", owner, "mips")
    if folder == "reports" and key.split(".")[0] != "links":
        if key == "chunk":
            return Target("chunk", owner, key)
        raise Unvaried(f"the report key {key} is not one netrepro varies (chunk is)")
    parts = key.split(".")
    if parts[0] == "links" and len(parts) == 3 and parts[2] in LINK_KEYS:
        return Target("link", owner, parts[2], parts[1])
    if parts[0] == "links" and len(parts) == 3 and parts[2] in AIR_KEYS:
        return Target("air", owner, parts[2], parts[1])
    if parts[0] == "nic" and len(parts) == 2 and parts[1] in NIC_KEYS:
        return Target("nic", owner, parts[1])
    if key == "cpu.ipc":
        return Target("cpu", owner, "ipc")
    raise Unvaried(f"{key} is not a key netrepro varies (links.NAME.rate, links.NAME.rtt, "
                   f"links.NAME.{', links.NAME.'.join(AIR_KEYS)}, "
                   f"nic.{', nic.'.join(NIC_KEYS)}, cpu.ipc)")


def setting(target: Target, value: float, unit: str | None) -> str | int | float:
    """The value as netrepro's file takes it: a tc rate or time for a link preset ("43mbit", "5.5ms"), a whole
    number of frames or bytes, an IPC."""
    if target.kind == "link" or (target.kind == "air" and target.key in AIR_UNITS):
        rate = target.key == "rate" or AIR_UNITS.get(target.key) == "rate"
        table, word = (_RATE_UNITS, "rate") if rate else (_TIME_UNITS, "RTT" if target.key == "rtt" else "time")
        if unit not in table:
            raise Unvaried(f"a link {word} in {unit or 'no unit'} is not converted (give it in {', '.join(table)})")
        return f"{format(value, '.12g')}{table[unit]}"
    if target.kind in _WHOLE_UNITS or target.kind == "air":
        whole = _WHOLE_UNITS.get(target.kind, "frames" if target.key == "agg_frames" else "slots")
        if unit not in (None, whole):
            raise Unvaried(f"{target.key} is counted in {whole}, not {unit}")
        if value != int(value) or value < 1:
            raise Unvaried(f"{value:g} is not a whole number of {whole}")
        return int(value)
    what = "a MIPS figure" if target.key == "mips" else "an IPC"
    if unit and not (target.key == "mips" and unit == "MIPS"):
        raise Unvaried(f"{what} is in MIPS, not {unit}" if target.key == "mips" else f"an IPC has no unit, not {unit}")
    if value <= 0:
        raise Unvaried(f"{what} of {value:g} is not positive")
    return float(value)


def plain(target: Target, value: str | int | float) -> float:
    """A setting in plain units (bit/s, seconds, frames, bytes, IPC), to compare what was run with."""
    if target.kind == "link" or (target.kind == "air" and target.key in AIR_UNITS):
        rate = target.key == "rate" or AIR_UNITS.get(target.key) == "rate"
        return float(parse_rate(value)) if rate else parse_time(value)
    return float(value)


def nic_value(nic: Nic, key: str) -> int:
    """A [nic] number as a run uses it (rx_overflow_frames's default filled in)."""
    return nic.overflow_frames if key == "rx_overflow_frames" else int(getattr(nic, key))


def in_use(target: Target, platform: Platform | None, report: dict[str, Any]) -> tuple[float, str] | None:
    """What the reproduction ran with, in plain units and as the file writes it (None: the file sets none)."""
    if target.kind == "chunk":
        chunk = report.get("chunk", DEFAULT_CHUNK)
        return float(chunk), str(chunk)
    assert platform is not None
    if target.kind == "link":
        raw = platform.links[str(target.link)].get(target.key)
        return None if raw is None else (plain(target, raw), str(raw))
    if target.kind == "air":
        return air_in_use(platform, str(target.link), target.key)
    if target.kind == "nic":
        return float(nic_value(platform.nic, target.key)), str(nic_value(platform.nic, target.key))
    assert platform.cpu is not None
    if target.key == "mips":
        return platform.cpu.model_mips, f"{platform.cpu.model_mips:g}"
    return platform.cpu.ipc, f"{platform.cpu.ipc:g}"


def apply(setup: Setup, target: Target, value: str | int | float) -> Setup:
    """The setup with the input's value in place (a setting as `setting` made it)."""
    if target.kind == "link":
        platform, preset = setup.platform, str(target.link)
        links = {**platform.links, preset: {**platform.links[preset], target.key: value}}
        return dataclasses.replace(setup, platform=dataclasses.replace(platform, links=links))
    if target.kind == "air":
        platform, preset = setup.platform, str(target.link)
        links = {**platform.links, preset: air_preset(platform, preset, target.key, value)}
        return dataclasses.replace(setup, platform=dataclasses.replace(platform, links=links))
    if target.kind == "nic":
        held = {key: nic_value(setup.platform.nic, key) for key in NIC_KEYS}  # the other key stays as run
        return dataclasses.replace(setup, platform=setup.platform.with_nic(**{**held, target.key: value}))
    if target.kind == "cpu":
        assert setup.platform.cpu is not None
        mips = float(value) if target.key == "mips" else setup.platform.cpu.clock_mhz * float(value)
        return dataclasses.replace(setup, time=dataclasses.replace(setup.time, mips=mips))
    return dataclasses.replace(setup, workload=dataclasses.replace(setup.workload, chunk=int(value)))


def depends(target: Target, report: dict[str, Any], spec: dict[str, Any]) -> bool:
    """Whether the case runs with the input: on the input's board (and link preset), or with the report's chunk."""
    if target.kind == "chunk":
        return workload_kind(spec["workload"]).chunked and "chunk" not in spec
    board = Path(str(spec.get("platform", report["platform"]))).stem
    return target.owner in (board, REPORT_OWNER) and (target.kind not in ("link", "air") or spec["link"] == target.link)


# ------------------------------------------------------------------ which inputs, which cases


def plan_inputs(report: dict[str, Any], name: str, time: TimeChoice,
                ran: list[str]) -> tuple[list[Varied], list[dict[str, Any]]]:
    """The report's assumed inputs (and chosen ones: their figures hang on them): those netrepro varies, and the
    others with why not (`ran`: the cases run)."""
    varied, not_varied = [], []
    for item in report_inputs(report):
        if item.get("provenance") not in ("assumed", "chosen"):
            continue
        try:
            varied.append(plan_input(item, report, name, time, ran))
        except Unvaried as why:
            not_varied.append({"name": item["name"], "sets": item.get("sets"), "why": str(why)})
    return varied, not_varied


def plan_input(item: dict[str, Any], report: dict[str, Any], name: str, time: TimeChoice,
               ran: list[str]) -> Varied:
    if (item.get("sets") or "").strip().endswith(": unit_bytes"):
        raise Unvaried(_unit_bytes_reason(item))
    if "range" not in item:  # a chosen input need not give one
        raise Unvaried("it gives no range to vary it over")
    target = parse_sets(item.get("sets"))
    value, (low, high), unit = item["value"], item["range"], item.get("unit")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Unvaried(f"its value {value!r} is not a number")
    platform = _board(target, name, time, report)
    settings = {"value": setting(target, value, unit), "low": setting(target, low, unit),
                "high": setting(target, high, unit)}
    cases = [c["case"] for c in report["cases"] if depends(target, report, c)]
    if not cases:
        raise Unvaried("no case of the report runs with it")
    if not set(cases) & set(ran):
        raise Unvaried(f"none of the cases that run with it was run this time ({', '.join(cases)})")
    used = in_use(target, platform, report)
    note = None
    # an air's UDP goodput comes from a calibration by floods, which lands within 1 % of its target
    tolerance = 0.01 if target.kind == "air" and target.key == "phy_rate" else 1e-9
    if used is not None and not math.isclose(used[0], plain(target, settings["value"]), rel_tol=tolerance):
        note = (f"the reproduction ran with {used[1]} ({item['sets']}), not the input's {settings['value']}: "
                "its median is not the figure at the input's value")
    return Varied(item["name"], value, unit, low, high, item["sets"], target, settings,
                  _shown(target, settings, platform), note)


def _shown(target: Target, settings: dict[str, Any], platform: Platform | None) -> dict[str, str]:
    """The ends as the runs get them: the preset's or [nic]'s value, the chunk, or the modelled rate an IPC makes."""
    if target.kind == "cpu" and target.key == "mips":
        return {end: f"mips {settings[end]:g}" for end in ENDS}
    if target.kind == "cpu" and platform is not None and platform.cpu is not None:
        return {end: f"mips {platform.cpu.clock_mhz * settings[end]:g}" for end in ENDS}
    if target.kind == "air" and platform is not None:
        return air_shown(platform, str(target.link), target.key, settings, ENDS)
    return {end: str(settings[end]) for end in ENDS}


def _board(target: Target, name: str, time: TimeChoice, report: dict[str, Any]) -> Platform | None:
    """The board the input's file describes (the report's own, as it models it, for `report: KEY`), checked to
    have what the input needs."""
    if target.kind == "chunk":
        if target.owner not in (name, REPORT_OWNER):
            raise Unvaried(f"it sets reports/{target.owner}.toml, not this report's reports/{name}.toml")
        return None
    try:
        platform = report_platform(report, {}) if target.owner == REPORT_OWNER else load_platform(target.owner)
    except NetreproError as exc:
        raise Unvaried(str(exc)) from None
    if target.kind in ("link", "air") and target.link not in platform.links:
        raise Unvaried(f"platform {target.owner} has no link preset '{target.link}'")
    if target.kind == "air":
        check_air_preset(platform, target.owner, str(target.link), target.key)
    if target.kind == "cpu":
        if platform.cpu is None:
            raise Unvaried(f"platform {target.owner} has no [cpu] model")
        if time.mode != "device":
            raise Unvaried("the runs are in host time (the core as fast as the host allows): the IPC is not used")
        if time.mips is not None:
            raise Unvaried(f"--mips {time.mips:g} fixes the modelled rate: the IPC is not used")
    return platform


def _unit_bytes_reason(item: dict[str, Any]) -> str:
    value, (low, high) = item["value"], item["range"]
    moves = ", ".join(f"{end:g} B moves them {(end / value - 1) * 100:+.1f} %" for end in (low, high) if end != value)
    return f"it changes no run, only the report's figures converted to Mbit/s ({moves or 'no end differs'})"


# ------------------------------------------------------------------ running


@dataclass
class Context:
    """What every run of a sensitivity study shares."""

    report: dict[str, Any]
    baseline: dict[str, dict[str, Any]]  # the reproduction's cases by name
    root: Path
    repeats: int
    seconds: float | None
    time: TimeChoice
    execute: Execute
    progress: Progress


def sensitivity(name: str, document: dict[str, Any], repeats: int = 1, seconds: float | None = None,
                progress: Progress | None = None, lwip_tree_path: str | None = None,
                time: TimeChoice | None = None, execute: Execute | None = None,
                inputs: list[str] | None = None, jobs: int | None = 1) -> dict[str, Any]:
    """Rerun the reproduction's cases with each assumed input at each end of its range (`document`: what
    reproduce returned, the baseline; `inputs`: only the assumed inputs of these names); writes
    sensitivity.json and sensitivity.txt into its top folder. `jobs`: runs at once, as reproduce's (plan_pool;
    None: what the machine holds); every input's runs are started first and judged once all have ended."""
    if repeats < 1:
        raise NetreproError(f"--sensitivity-repeats {repeats} is not a positive number of runs", "give 1 or more")
    time, progress = time or TimeChoice(), progress or Progress(quiet=True)
    if document.get("time") not in (None, time.mode):
        raise NetreproError(f"the reproduction ran in {document['time']} time, not {time.mode}",
                            "vary the inputs in the time the baseline ran in")
    report, baseline = load_report(name), {c["case"]: c for c in document["cases"]}
    name = report["report"]  # `name` may have been the report file's path
    varied, not_varied = plan_inputs(report, name, time, list(baseline))
    if inputs is not None:
        known = [v.name for v in varied]
        unknown = [n for n in inputs if n not in known]
        if unknown:
            raise NetreproError(f"'{unknown[0]}' is not an assumed input of {name} that netrepro varies",
                                f"use one of: {', '.join(known)}")
        varied = [v for v in varied if v.name in inputs]
    root, runs = Path(document["run_dir"]), planned_runs(varied, report, list(baseline)) * repeats
    progress.step(f"sensitivity: {len(varied)} assumed input{'s' if len(varied) != 1 else ''} to vary, up to "
                  f"{runs} runs ({len(not_varied)} not varied)")
    pool = PlanPool(jobs, progress) if (jobs := planned_jobs(jobs, runs)) > 1 else None
    with Analyser() as analyser:  # a run's capture is analysed while the next one runs, where that is harmless
        ctx = Context(report, baseline, _fresh(root / "sensitivity"), repeats, seconds, time,
                      execute or RealRun(lwip_tree_path, progress, analyser, pool), progress)
        started = [vary(ctx, i + 1, item) for i, item in enumerate(varied)]
        if pool:
            pool.run()
        figures = [s.figures() for s in started]
    found = {"report": name, "repeats": repeats, "baseline_repeats": document.get("repeats"),
             "band": float(document.get("band", DEFAULT_BAND)), "time": time.mode,
             "jobs": jobs, "schedule": pool.schedule() if pool else None,
             "inputs": figures, "not_varied": not_varied}
    found["hangs_on"] = hangs_on(found, [c["case"] for c in document["cases"]])
    (root / "sensitivity.json").write_text(json.dumps(found, indent=2) + "\n")
    (root / "sensitivity.txt").write_text(format_sensitivity(found) + "\n")
    return found


def planned_runs(varied: list[Varied], report: dict[str, Any], ran: list[str]) -> int:
    """The runs a study makes with one repeat at most (two-way cases share theirs, so it may make fewer)."""
    return sum(sum(end != item.value for end in (item.low, item.high))
               * sum(c["case"] in ran and depends(item.target, report, c) for c in report["cases"]) for item in varied)


@dataclass
class StartedEnd:
    """One end of an input's range, its runs started (none when the end is the input's value)."""

    ctx: Context
    value: float
    specs: list[dict[str, Any]]
    setups: list[Setup]
    shared: dict[tuple[str, ...], Repeats]

    def figures(self) -> dict[str, dict[str, Any]]:
        """The cases' figures at this end, once its runs ended (the baseline's own at the input's value)."""
        if not self.setups:
            return {s["case"]: _at_value(self.ctx.baseline[s["case"]], self.value) for s in self.specs}
        return {spec["case"]: end_figures(spec, setup, self.shared[setup.key()].settled(), self.value,
                                          self.ctx.baseline[spec["case"]])
                for spec, setup in zip(self.specs, self.setups, strict=True)}


@dataclass
class StartedInput:
    """An input whose runs at both ends are started; `figures` waits for them."""

    ctx: Context
    item: Varied
    specs: list[dict[str, Any]]
    ends: dict[str, StartedEnd]

    def figures(self) -> dict[str, Any]:
        ends = {end: started.figures() for end, started in self.ends.items()}
        item, cases = self.item, []
        for spec in self.specs:
            base = self.ctx.baseline[spec["case"]]
            cases.append({"case": spec["case"], "baseline_mbps": base["median_mbps"],
                          "baseline_range": [base.get("min_mbps"), base.get("max_mbps")],
                          "baseline_verdict": base.get("verdict"), **{end: ends[end][spec["case"]] for end in ENDS}})
        return {"name": item.name, "value": item.value, "unit": item.unit, "range": [item.low, item.high],
                "sets": item.sets, "set_as": dict(item.shown), "note": item.note, "cases": cases}


def vary(ctx: Context, index: int, item: Varied) -> StartedInput:
    """One input at both ends of its range, over the cases of the reproduction that run with it: the runs
    started (run one at a time, or queued on the pool), their figures once `figures()` is asked."""
    specs = [s for s in ctx.report["cases"] if s["case"] in ctx.baseline and depends(item.target, ctx.report, s)]
    return StartedInput(ctx, item, specs,
                        {end: run_end(ctx, f"{index}-{_slug(item.name)}-{end}", item, end, specs) for end in ENDS})


def run_end(ctx: Context, folder: str, item: Varied, end: str, specs: list[dict[str, Any]]) -> StartedEnd:
    """The cases' runs with the input at one end (none when that end is its value: the baseline stands)."""
    value = item.low if end == "low" else item.high
    started = StartedEnd(ctx, value, specs, [], {})
    if value == item.value:
        return started
    where = ctx.root / folder
    where.mkdir(parents=True, exist_ok=True)
    for spec in specs:  # every case's runs started first: a run's analysis may go on beside the next case's run
        setup = apply(case_setup(ctx.report, spec, ctx.seconds, ctx.time), item.target, item.settings[end])
        started.setups.append(setup)
        if setup.key() not in started.shared:
            ctx.progress.step(f"sensitivity: {item.name} = {item.shown[end]} ({end} end of its range): "
                              f"{spec['case']}")
            started.shared[setup.key()] = repeat_runs(partial(ctx.execute, setup), spec["case"], where, ctx.repeats,
                                                      ctx.progress)
    return started


def end_figures(spec: dict[str, Any], setup: Setup, found: Repeats, value: float,
                base: dict[str, Any]) -> dict[str, Any]:
    """The case's median and verdict at one end, as reproduce summarises a case's runs, against the baseline."""
    result = CaseResult(case=spec["case"], platform=setup.platform.name, profile=setup.profile, link=setup.link,
                        workload=setup.workload.name, report_mbps=None, direction=case_direction(spec),
                        run_dirs=list(found.run_dirs), error=found.error)
    summarise_runs(result, found.runs, raised=len(found.run_dirs) - len(found.runs))
    return {"value": value, "median_mbps": result.median_mbps, "delta_pct": delta_pct(result.median_mbps,
                                                                                        base["median_mbps"]),
            "verdict": result.verdict, "run_dirs": result.run_dirs, "runs_failed": result.runs_failed,
            "error": result.error, "is_baseline": False}


def _at_value(base: dict[str, Any], value: float) -> dict[str, Any]:
    """An end that is the input's own value: the baseline's runs stand for it."""
    return {"value": value, "median_mbps": base["median_mbps"],
            "delta_pct": None if base["median_mbps"] is None else 0.0, "verdict": base.get("verdict"),
            "run_dirs": list(base.get("run_dirs") or []), "runs_failed": base.get("runs_failed", 0),
            "error": base.get("error"), "is_baseline": True}


def positive_count(text: str) -> int:
    """A number of runs from the command line, checked before anything runs (argparse names the option)."""
    value = int(text)
    if value < 1:
        raise ValueError(f"{value} is not a positive number of runs")
    return value


def delta_pct(median: float | None, baseline: float | None) -> float | None:
    """How far a median moved from the baseline's, in % of the baseline (None: no figure to compare)."""
    if median is None or baseline is None or baseline == 0:
        return None
    return round((median - baseline) / baseline * 100, 1)


def _fresh(folder: Path) -> Path:
    """The study's folder for its runs: FOLDER, or FOLDER-2, -3, ... when an earlier study of the same
    reproduction has it."""
    candidate, n = folder, 1
    while candidate.exists():
        n += 1
        candidate = folder.with_name(f"{folder.name}-{n}")
    return candidate


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-")[:40] or "input"
