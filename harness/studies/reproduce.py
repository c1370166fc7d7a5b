"""Reproduce a report: every case it measured, repeated, beside the report's figures and claims.

A report is described in reports/<name>.toml: the platform, and per case the profile, link
preset, workload, the report's figure and the claim to check. Claims are small and exact:

    verdict = "window-limited"            the capture's bottleneck verdict (median run)
    window = 23360, mss = 1460            what the device advertised (exact; the window with nothing unread)
    window_scaling = false                no window-scale option
    faster_than = {case, factor}          median >= factor x that case's median
    slower_than = {case, factor}          median <= factor x that case's median
    close_to = {case, within}             |median - other| <= within x other
    at_least_mbps = 85                    median >= 85
    link_limited_or_within = 0.15         verdict link-limited, or median within 15% of the link rate
    within_of_report = 0.30               |median - report| <= 30% of the report's figure
    ratio_to = {case, within}             median/that case's median within 15% of the report's own ratio

A case of a two-way workload (`rr`: iperf -r, `duplex`: iperf -d) names its `direction`
("rx": peer -> device, "tx": device -> peer); cases that share profile, link and workload share
their runs, and each is judged on its own direction's figure and connection.

A report that gives figures in another unit (the Ethernut's KB/s) says so with `unit` and
`unit_bytes` (what a K is taken to be) and gives each case's `report_value` in that unit; every
figure is still compared and written in Mbit/s, and the table shows both.

Every case with a report figure is judged against it apart from its claim: `delta_pct` (signed, of
netrepro's median against the figure; a range counts 0 inside it, else the distance to its nearer
end) and `agrees` (within the report's `band`, default 0.15). The report's [[inputs]] say what
the model was given and where each value came from: "report" (source), "assumed" (why, range),
"fitted" (from, cases) or "chosen" (why, cases: picked to produce a mechanism the report implies); a
figure an input was fitted to is `fitted`, one that hangs on a chosen input `chosen`, and neither is
counted as agreement. A case that measures the same report figure as an earlier one (`figure_of`)
does not count that figure twice: the two agree, disagree, or split. A claim that holds only by
construction (claims.py) is shown and not counted among the mechanisms. A check that lacks its
evidence is unknown, a failed run fails its case's claim and agreement, and a run the host disturbed
that a repeat at twice D replaced is listed under the table.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from harness.analysis.against import CaptureComparison, against_document, format_comparison
from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.rig.build import lwip_tree
from harness.rig.devicetime import TimeChoice
from harness.rig.platform import Platform
from harness.rig.session import make_run_dir
from harness.rig.workload import DEFAULT_CHUNK, Workload, workload_kind
from harness.runs.analyse import Analyser, Repeats
from harness.runs.plan import Configuration, RunPlan
from harness.runs.result import RunResult
from harness.studies.cases import (
    CaseResult,
    format_number,
    judge_d_check,
    leak_notes,
    replaced_notes,
    risk_notes,
    summarise_runs,
    thread_notes,
    time_line,
)
from harness.studies.claims import (
    DEFAULT_BAND,
    agreement,
    agrees_text,
    claim_result,
    construction_reason,
    failed_runs_text,
    judge,
    percent,
    summary_line,
)
from harness.studies.plan_pool import PlanPool, planned_jobs
from harness.studies.report_file import FILE_KEY, case_configuration, load_report, report_inputs, report_platform
from harness.studies.report_page import write_report_page


def report_band(report: dict[str, Any]) -> float:
    """How far from the report's figure a median may be and still agree (a fraction, checked on load)."""
    return float(report.get("band", DEFAULT_BAND))


def fitted_cases(report: dict[str, Any]) -> set[str]:
    """The cases whose report figures some input was fitted to: they cannot also test the model."""
    return {c for item in report.get("inputs", []) if item.get("provenance") == "fitted" for c in item["cases"]}


def chosen_cases(inputs: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Each case whose figure hangs on an input chosen to produce a mechanism, with those inputs' names: the
    figure shows the choice worked, not that the model predicts it."""
    found: dict[str, list[str]] = {}
    for item in inputs:
        if item.get("provenance") == "chosen":
            for case in item["cases"]:
                found.setdefault(case, []).append(item["name"])
    return found


def reproduce(name: str, out: Path | None = None, repeats: int | None = None, seconds: float | None = None,
              only: list[str] | None = None, progress: Progress | None = None,
              lwip_tree_path: str | None = None, time: TimeChoice | None = None,
              command: str | None = None, d_check: bool = False, jobs: int | None = 1) -> dict[str, Any]:
    """Run every case of the report (a shipped report's name or the path of a report file); returns the document
    (report, inputs, cases, summary) and writes it as JSON, as the text table and as the page to share
    (reproduce.html; `command` is what it says produced it). `d_check`: each case once more at twice D
    (device time), and a figure that moves by more than half the band is marked host-dependent. `jobs`: runs
    at once (plan_pool; None: what the machine holds); 1 runs them one at a time."""
    progress = progress or Progress(quiet=True)
    report = load_report(name)
    name = report["report"]
    cases = selected_cases(report, name, only)  # before anything is built or made: a typo costs nothing
    repeats = repeats or int(report.get("repeats", 3))
    time = time or TimeChoice()
    setups = [case_setup(report, spec, seconds, time) for spec in cases]
    plans = {setup.key(): setup.plan(lwip_tree_path, progress) for setup in setups}  # a profile that does not
    root = make_run_dir(out, f"reproduce-{name}", "all")                            # compile stops it here
    shared: dict[tuple, Repeats] = {}
    checks: dict[tuple, Repeats] = {}
    jobs = planned_jobs(jobs, len(plans) * repeats + d_check * sum(p.time.device for p in plans.values()))
    pool = PlanPool(jobs, progress) if jobs > 1 else None
    with Analyser() as analyser:  # a run's capture is analysed while the next one runs, where that is harmless
        def start(plan: RunPlan, run_dir: Path) -> Future[RunResult]:
            return pool.submit(plan, run_dir) if pool else plan.start(run_dir, analyser, progress)
        started = [_start_case(report, spec, setup, plans[setup.key()], root, repeats, progress, shared, start)
                   for spec, setup in zip(cases, setups, strict=True)]
        if d_check:
            for (spec, _setup), (_result, key) in zip(zip(cases, setups, strict=True), started, strict=True):
                if key not in checks and plans[key].time.device:
                    checks[key] = _start_d_check(spec["case"], plans[key], root, progress, start)
        if pool:
            pool.run()
        results = {result.case: _finish_case(report, spec, result, shared[key].settled(), _settled_check(checks, key))
                   for spec, (result, key) in zip(cases, started, strict=True)}
    for result in results.values():
        judge(result, results)
    platform = report_platform(report, {})
    document = {"report": name, "file": report[FILE_KEY], "title": report.get("title", name),
                "source": report.get("source"), "note": report.get("note"), "stand_in": asdict(platform.stand_in),
                "unit": report.get("unit", "Mbit/s"), "unit_bytes": report.get("unit_bytes"),
                "repeats": repeats, "time": time.mode, "run_dir": str(root), "jobs": jobs,
                "schedule": pool.schedule() if pool else None,
                **judged_document(report, list(results.values()))}
    (root / "reproduce.json").write_text(json.dumps(document, indent=2) + "\n")
    (root / "reproduce.txt").write_text(format_report(document) + "\n")
    write_report_page(document, root / "reproduce.html", command=command)
    return document


def selected_cases(report: dict[str, Any], name: str, only: list[str] | None) -> list[dict[str, Any]]:
    names = [c["case"] for c in report["cases"]]
    unknown = [n for n in only or [] if n not in names]
    if unknown:
        raise NetreproError(f"report {name} has no case '{unknown[0]}'", f"use one of: {', '.join(names)}")
    return [c for c in report["cases"] if not only or c["case"] in only]


def judged_document(report: dict[str, Any], results: list[CaseResult]) -> dict[str, Any]:
    """The band, the inputs and every (judged) case against the report, with the counts the summary line gives."""
    band, fitted, inputs = report_band(report), fitted_cases(report), report_inputs(report)
    chosen = chosen_cases(inputs)
    specs = {spec["case"]: spec for spec in report.get("cases", [])}
    cases = [case_document(r, band, r.case in fitted, r.case in chosen, specs.get(r.case, {}).get("figure_of"))
             for r in results]
    return {"band": band, "inputs": inputs, "cases": cases, "summary": summary(cases)}


def case_document(result: CaseResult, band: float, fitted: bool, chosen: bool = False,
                  figure_of: str | None = None) -> dict[str, Any]:
    row = asdict(result)
    found = agreement(result, band)
    row.update(delta_pct=found.delta_pct, agrees=found.agrees, fitted=fitted, chosen=chosen, figure_of=figure_of,
               claim_result=claim_result(row))
    return row


def summary(cases: list[dict[str, Any]]) -> dict[str, int]:
    """The counts behind the table's last line: fitted and chosen figures are not evidence, a report figure
    that several cases measure counts once, unknown is not holding, by construction is not a mechanism."""
    groups = figure_groups([c for c in cases if _counted_figure(c)])
    answers = [_answer(c) for c in cases if c.get("claim") and not c.get("host_dependent")]
    failing = [c for c in cases if c["median_mbps"] is None
               or (c.get("claim_holds") is False and not c.get("host_dependent"))]
    return {"figures": len(groups), "agree": sum(group_agrees(g) is True for g in groups),
            "repeated": sum(len(g) > 1 for g in groups), "split": sum(group_agrees(g) == "split" for g in groups),
            "fitted": sum(1 for c in cases if c.get("fitted") and c["report_mbps"] is not None),
            "chosen": sum(1 for c in cases if _chosen_figure(c)),
            "mechanisms": sum(a != "by-construction" for a in answers), "hold": answers.count("holds"),
            "unknown": answers.count("unknown"), "by_construction": answers.count("by-construction"),
            "fail": len(failing), "replaced": sum(1 for c in cases if c.get("runs_replaced")),
            "host_dependent": sum(1 for c in cases if c.get("host_dependent")),
            "d_checked": sum(1 for c in cases if c.get("d_check") is not None)}


def _counted_figure(case: dict[str, Any]) -> bool:
    """A report figure that tests the model: neither fitted to it, nor hanging on a chosen input, nor moved by
    the host's D (the D check)."""
    return (case["report_mbps"] is not None and not case.get("fitted") and not case.get("chosen")
            and not case.get("host_dependent"))


def _chosen_figure(case: dict[str, Any]) -> bool:
    return bool(case.get("chosen")) and not case.get("fitted") and case["report_mbps"] is not None


def figure_groups(cases: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The cases grouped by the report figure they measure (a case's own, or the one `figure_of` names, followed
    to the first case that measures it), in the order of their first case."""
    names = {c["case"]: c for c in cases}
    groups: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        groups.setdefault(_figure_root(case, names), []).append(case)
    return list(groups.values())


def _figure_root(case: dict[str, Any], names: dict[str, dict[str, Any]]) -> str:
    seen = {case["case"]}
    while case.get("figure_of") in names and case["figure_of"] not in seen:  # report_check rules out loops
        case = names[case["figure_of"]]
        seen.add(case["case"])
    return case.get("figure_of") or case["case"]


def group_agrees(group: list[dict[str, Any]]) -> bool | str | None:
    """One report figure's verdict: its first case's, unless its cases disagree (one agrees, another not):
    then "split", which is not agreement."""
    verdicts = {c.get("agrees") for c in group} - {None}
    return "split" if verdicts == {True, False} else group[0].get("agrees")


def _answer(case: dict[str, Any]) -> str | None:
    """The claim's answer by name (documents written before claim_result existed are judged from claim_holds)."""
    return case["claim_result"] if "claim_result" in case else claim_result(case)


@dataclass(frozen=True)
class Setup:
    """One case's run as reproduce makes it, with at most one input changed."""

    case: str
    platform: Platform       # as the report models it (its [cpu], its [links], the case's rx_overflow)
    firmware: Configuration  # the case's profile (a shipped one or a lwipopts.h) and what builds it
    link: str  # the link preset
    workload: Workload
    time: TimeChoice
    lwip_tree: str | None = None  # the report's or the case's lwIP tree (None: the default one)
    peer_quickack: bool = False   # the report's peer ACKed every segment (harness.rig.peer_timers)

    @property
    def profile(self) -> str:
        """The profile as the report names it: a shipped profile or the path of a lwipopts.h."""
        return str(self.firmware.lwip)

    def link_spec(self) -> Any:
        return LinkSpec.from_preset(self.platform.link_preset(self.link))

    def key(self) -> tuple[str, ...]:
        """What makes two setups the same run (a two-way workload's two cases share their runs)."""
        return (self.platform.name, repr(self.firmware), str(self.lwip_tree), self.link,
                repr(self.platform.links.get(self.link)), repr(self.platform.cpu),
                repr(self.platform.nic), repr(self.workload), repr(self.time), str(self.peer_quickack))

    def plan(self, lwip_tree_path: str | None, progress: Progress) -> RunPlan:
        """The run, its firmware built now (or taken from the cache) from the lwIP tree the report or case names,
        else `lwip_tree_path` (--lwip-tree), else the default tree."""
        firmware = self.firmware.build(self.platform, lwip_tree(self.lwip_tree or lwip_tree_path), progress)
        return RunPlan(self.platform, firmware, self.link_spec(), self.workload, time=self.platform.time(self.time),
                       peer_quickack=self.peer_quickack)


def case_setup(report: dict[str, Any], spec: dict[str, Any], seconds: float | None, time: TimeChoice) -> Setup:
    """The case's run as reproduce makes it: its board, firmware, link preset, workload, time."""
    workload = Workload(spec["workload"], seconds=seconds or float(spec.get("seconds", report.get("seconds", 10))),
                        bytes=spec.get("bytes"), chunk=int(spec.get("chunk", report.get("chunk", DEFAULT_CHUNK))),
                        warmup_s=float(spec.get("warmup", report.get("warmup", 0.0))))
    return Setup(spec["case"], report_platform(report, spec), case_configuration(spec), spec["link"], workload, time,
                 spec.get("lwip_tree"), bool(spec.get("peer_quickack", report.get("peer_quickack", False))))


def _start_case(report: dict[str, Any], spec: dict[str, Any], setup: Setup, plan: RunPlan, root: Path,
                repeats: int, progress: Progress, shared: dict[tuple, Repeats],
                start: Callable[[RunPlan, Path], Future[RunResult]]) -> tuple[CaseResult, tuple]:
    """The case's result to fill and the key of its runs in `shared`, whose runs are started unless an
    earlier case (the other direction of one two-way run) started them."""
    platform = setup.platform
    result = CaseResult(case=spec["case"], platform=platform.name, profile=plan.firmware.profile.name,
                        link=spec["link"], workload=spec["workload"], report_mbps=report_figure_mbps(report, spec),
                        direction=case_direction(spec), rx_overflow=platform.nic.rx_overflow,
                        medium=plan.link.medium, report_value=spec.get("report_value"), claim=spec.get("claim", {}))
    key = setup.key()
    if key not in shared:
        shared[key] = repeat_runs(lambda run_dir: start(plan, run_dir), spec["case"],
                                  root, repeats, progress)
    return result, key


def _start_d_check(case: str, plan: RunPlan, root: Path, progress: Progress,
                   start: Callable[[RunPlan, Path], Future[RunResult]]) -> Repeats:
    """One more run of the case at twice D (its folder: CASE-d-check), not counted among its repeats."""
    slower = replace(plan, time=plan.time.slower())
    run_dir = root / f"{case.replace(' ', '-')}-d-check"
    run_dir.mkdir()
    progress.step(f"{case}: D check, one run at D = {slower.time.dilation:g} (twice {plan.time.dilation:g})")
    found = Repeats([], [str(run_dir)])
    try:
        found.pending.append(start(slower, run_dir))
    except NetreproError as exc:
        found.error = str(exc)
    return found


def _settled_check(checks: dict[tuple, Repeats], key: tuple) -> RunResult | None:
    """The D check's run of these runs' configuration, once analysed (None: not run, or it failed)."""
    runs = checks[key].settled().runs if key in checks else []
    return runs[0] if runs else None


def _finish_case(report: dict[str, Any], spec: dict[str, Any], result: CaseResult, found: Repeats,
                 check: RunResult | None = None) -> CaseResult:
    result.run_dirs, result.error = list(found.run_dirs), found.error
    summarise_runs(result, found.runs, raised=len(result.run_dirs) - len(found.runs))
    judge_d_check(result, check, report_band(report))
    if result.median_mbps is not None and report.get("unit_bytes"):
        result.median_in_unit = round(result.median_mbps * 1e6 / 8 / int(report["unit_bytes"]), 1)
    if "capture" in spec and result.median_run_dir:
        result.against = case_against(spec["capture"], result)
    return result


def case_against(capture: dict[str, Any], result: CaseResult) -> dict[str, Any]:
    """The user's capture of the case beside its median run's: the comparison and the overlaid plots (in the run's
    folder); a capture that cannot be read is said in the entry, not fatal to the reproduction."""
    run_dir = Path(str(result.median_run_dir))
    sender = None if result.direction is None else ("device" if result.direction == "tx" else "peer")
    try:
        return against_document(capture["file"], capture.get("device"), capture.get("stream"),
                                run_dir / "capture.pcap", None, run_dir / "against",
                                title=f"{result.case}: your capture and netrepro's", run_sender=sender,
                                user_rate_bps=result.link_mbps * 1e6 if result.link_mbps else None)
    except NetreproError as exc:
        return {"capture": capture["file"], "error": str(exc), "plots": []}


def repeat_runs(execute: Callable[[Path], RunResult | Future[RunResult]], case: str, root: Path, repeats: int,
                progress: Progress) -> Repeats:
    """Run `repeats` times, each in its own folder; a run that fails is counted, not fatal. A run `execute`
    hands back as a Future is still being analysed: Repeats.settled() waits for it."""
    found = Repeats([], [])
    for i in range(repeats):
        run_dir = root / f"{case.replace(' ', '-')}-{i + 1}"
        run_dir.mkdir()
        progress.step(f"{case}: run {i + 1} of {repeats}")
        try:
            run = execute(run_dir)
            (found.pending if isinstance(run, Future) else found.runs).append(run)
        except NetreproError as exc:
            found.error = found.error or str(exc)  # the first failure explains; later ones usually repeat it
        found.run_dirs.append(str(run_dir))
    return found


def case_direction(spec: dict[str, Any]) -> str | None:
    two_way = workload_kind(spec["workload"]).two_way
    direction = spec.get("direction")
    if two_way and direction not in ("rx", "tx"):
        raise NetreproError(f"case '{spec['case']}' runs {spec['workload']} (both directions) but does not say "
                            "which one it is", 'add direction = "rx" (peer -> device) or "tx" (device -> peer)')
    if not two_way and direction is not None:
        raise NetreproError(f"case '{spec['case']}': direction applies only to the rr and duplex workloads",
                            "remove it")
    return direction


def report_figure_mbps(report: dict[str, Any], spec: dict[str, Any]) -> float | list[float] | None:
    """The report's figure in Mbit/s: given as such, or converted from report_value in the report's unit."""
    if "report_value" not in spec:
        return spec.get("report_mbps")
    if not report.get("unit_bytes"):
        raise NetreproError(f"report {report.get('report')}: case '{spec['case']}' gives report_value "
                            "but the report has no unit_bytes", "add unit and unit_bytes (e.g. KB/s, 1024)")
    return round(float(spec["report_value"]) * int(report["unit_bytes"]) * 8 / 1e6, 4)


def format_report(document: dict[str, Any]) -> str:
    """The report's table: its inputs, its figures beside netrepro's, how far apart, the verdict, the mechanisms."""
    band = float(document.get("band", DEFAULT_BAND))
    lines = [*_preamble(document, band), "", *_inputs_block(document.get("inputs") or []), ""]
    lines += _table(document, band)
    cases = document["cases"]
    return "\n".join(lines + _notes(cases, document.get("inputs") or []) + _against_notes(cases)
                     + thread_notes(cases, "case") + leak_notes(cases, "case") + replaced_notes(cases, "case")
                     + risk_notes(cases, "case"))


def _against_notes(cases: list[dict[str, Any]]) -> list[str]:
    """Below the table: each case's own capture beside its median run's."""
    lines: list[str] = []
    for c in cases:
        against = c.get("against")
        if not against:
            continue
        lines += ["", f"{c['case']}: your capture ({against['capture']}) beside netrepro's median run:"]
        if against.get("error"):
            lines.append(f"  not compared: {against['error']}")
            continue
        lines += [f"  {line}" for line in format_comparison(CaptureComparison.from_dict(against["comparison"]))
                  .splitlines()]
    return lines


def _preamble(document: dict[str, Any], band: float) -> list[str]:
    unit, unit_bytes = document.get("unit", "Mbit/s"), document.get("unit_bytes")
    scale = f"; report figures in {unit}, 1 K = {unit_bytes} B, converted to Mbit/s" if _in_unit(document) else ""
    lines = [document["title"], f"({document['repeats']} runs a case; figures in Mbit/s{scale}; run folders in "
                                f"{document['run_dir']})", time_line(document.get("time"))]
    stand_in = document.get("stand_in") or {}
    if stand_in:
        lines.append(f"stand-in: {stand_in.get('cpu')}; NIC: {stand_in.get('nic')}")
    if document.get("note"):
        lines.append(f"note: {document['note']}")
    if (document.get("jobs") or 1) > 1:
        lines.append(f"runs: {document['jobs']} at once (device time; which shared the machine: reproduce.json)")
    pct = percent(band)
    chosen = (" (or that hangs on an input chosen to produce a mechanism the report implies: marked chosen)"
              if chosen_cases(document.get("inputs") or []) else "")
    lines.append(f"agreement: a report figure agrees when netrepro's median is within {pct} of it (a range: inside "
                 f"it or within {pct} of its ends; the report file's band); a figure an input was fitted to is "
                 f"marked fitted{chosen} and not counted")
    return lines


def _in_unit(document: dict[str, Any]) -> bool:
    return document.get("unit", "Mbit/s") != "Mbit/s" and bool(document.get("unit_bytes"))


def _inputs_block(inputs: list[dict[str, Any]]) -> list[str]:
    if not inputs:
        return ["inputs: none declared in the report file"]
    return ["inputs (what the model was given, apart from the figures it predicts):",
            *(f"  {input_line(item)}" for item in inputs)]


def input_line(item: dict[str, Any]) -> str:
    """name = value unit [provenance: where it came from]."""
    unit = f" {item['unit']}" if item.get("unit") else ""
    value = item["value"]
    text = f"{item['name']} = {value:g}{unit}" if isinstance(value, float) else f"{item['name']} = {value}{unit}"
    kind = item["provenance"]
    if item.get("calibrated"):
        text += " -> " + ", ".join(f"{k} {v}" for k, v in item["calibrated"].items())
    if kind == "report":
        return f"{text} [report: {item['source'] or 'its source not filled in'}]"
    if kind == "assumed":
        low, high = item["range"]
        return f"{text} [assumed: {item['why']}; range {low:g}-{high:g}{unit}]"
    if kind == "capture":
        return f"{text} [capture: {item['capture']} (sha256 {str(item['sha256'])[:12]}), {item['frames']}]"
    if kind == "chosen":
        span = f"; range {item['range'][0]:g}-{item['range'][1]:g}{unit}" if item.get("range") else ""
        return f"{text} [chosen: {item['why']}; the figures of {', '.join(item['cases'])} hang on it{span}]"
    return f"{text} [fitted from {item['from']}; fitted to the figures of {', '.join(item['cases'])}]"


_MECHANISMS = {"holds": "holds", "fails": "FAILS", "unknown": "unknown", "by-construction": "by-construction",
               None: "-"}
_NETREPRO_HEAD = "netrepro median (min-max, n runs)"


def _table(document: dict[str, Any], band: float) -> list[str]:
    cases, unit = document["cases"], document.get("unit", "Mbit/s")
    width = max([22, *(len(c["case"]) + 1 for c in cases)])
    unit_head = f" {'report ' + unit:>13} {'netrepro ' + unit:>15}" if _in_unit(document) else ""
    # as wide as "ethernet (wire)" and one more at least, so a table of some cases lines up with the whole report's
    link_width = max([18, *(len(_link_text(c)) + 1 for c in cases)])
    header = (f"{'case':<{width}}{'link':<{link_width}}{unit_head} {'report':>9} {_NETREPRO_HEAD:>34} {'delta %':>8} "
              f"{'within ' + percent(band):>11} {'bound':>7} {'MSS':>5} {'window':>7} {'cpu %':>6} {'us/seg':>7}  "
              f"{'verdict':<20} mechanisms")
    rows = [_row(c, width, link_width, _in_unit(document)) for c in cases]
    return [header, "-" * len(header), *rows, "-" * len(header), summary_line(summary(cases), band)]


def _link_text(c: dict[str, Any]) -> str:
    """The case's link preset and its medium: a wire, or one radio channel both directions share."""
    return f"{c['link']} ({c.get('medium', 'wire')})"


def _row(c: dict[str, Any], width: int, link_width: int, in_unit: bool) -> str:
    window = "-" if c["device_window_max"] is None else f"{c['device_window_max']:g}"
    units = (f" {format_number(c.get('report_value')):>13} {format_number(c.get('median_in_unit')):>15}"
             if in_unit else "")
    mechanisms = _MECHANISMS[_answer(c)] + (" (host)" if c.get("host_dependent") else "")
    return (f"{c['case']:<{width}}{_link_text(c):<{link_width}}{units} {_report_text(c['report_mbps']):>9} "
            f"{_figure_text(c):>34} "
            f"{_delta_text(c.get('delta_pct')):>8} {agrees_text(c):>11} {format_number(c['bound_mbps']):>7} "
            f"{format_number(c['device_mss']):>5} {window:>7} {format_number(c.get('device_cpu_percent')):>6} "
            f"{format_number(c.get('us_per_segment')):>7}  {c['verdict'] or '-':<20} {mechanisms}")


def _report_text(report: float | list[float] | None) -> str:
    if report is None:
        return "-"
    if isinstance(report, list):
        return f"{report[0]:g}-{report[1]:g}"
    return f"{report:.3g}" if report < 10 else f"{report:g}"


def _figure_text(c: dict[str, Any]) -> str:
    """median (min-max, n runs); 'failed' when no run gave a figure."""
    runs = len(c.get("runs_mbps") or [])
    if c["median_mbps"] is None:
        return f"failed (0 of {runs + (c.get('runs_failed') or 0)} runs)"
    digits = 2 if c["median_mbps"] < 10 else 1
    count = f"{runs} run" if runs == 1 else f"{runs} runs"
    return f"{c['median_mbps']:.{digits}f} ({c['min_mbps']:.{digits}f}-{c['max_mbps']:.{digits}f}, {count})"


def _delta_text(delta: float | None) -> str:
    if delta is None:
        return "-"
    return f"{delta:+.1f}" if abs(delta) < 100 else f"{delta:+.0f}"


def _notes(cases: list[dict[str, Any]], inputs: list[dict[str, Any]]) -> list[str]:
    """Below the table: failed runs, fitted and chosen figures, figures counted once, and the claims that failed,
    were left unknown or hold only by construction."""
    chosen = chosen_cases(inputs)
    lines: list[str] = []
    sections = [
        ("runs that failed:", [f"  {c['case']}: {failed_runs_text(c)}" for c in cases if c.get("runs_failed")]),
        ("figures an input was fitted to (not counted as agreement):",
         [f"  {c['case']}" for c in cases if c.get("fitted") and c["report_mbps"] is not None]),
        ("figures that hang on a chosen input (not counted):",
         [f"  {c['case']}: {'; '.join(chosen.get(c['case'], []))}" for c in cases if _chosen_figure(c)]),
        ("report figures measured by more than one case (counted once):", _repeated_notes(cases)),
        ("host-dependent: at twice D the figure moved by more than half the band (not counted as agreeing or "
         "failing, its claim not counted):",
         [f"  {c['case']}: {c['host_dependent_why']}" for c in cases if c.get("host_dependent")]),
        ("the D check (one more run at twice D; a figure that moves by more than half the band is host-dependent):",
         [f"  {c['case']}: {d_check_text(c)}" for c in cases
          if c.get("d_check_run_dir") and not c.get("host_dependent")]),
        ("claims that do not hold:", _claim_notes(cases, "fails")),
        ("claims left unknown (the evidence is missing):", _claim_notes(cases, "unknown")),
        ("claims that hold by construction (shown, not counted):",
         [f"  {c['case']}: {construction_reason(c)}" for c in cases if _answer(c) == "by-construction"]),
    ]
    for title, notes in sections:
        if notes:
            lines += ["", title, *notes]
    return lines


def d_check_text(c: dict[str, Any]) -> str:
    """'94.8 Mbit/s at D=2.93, 94.7 at D=5.86 (-0.1%)', or that the check's run gave no figure."""
    if c.get("d_check") is None or not c.get("median_mbps"):
        return f"no figure at twice D (see {c['d_check_run_dir']})"
    moved = c["d_check"] / c["median_mbps"] - 1
    return (f"{c['median_mbps']:g} Mbit/s at D={c.get('dilation') or '?'}, {c['d_check']:g} at "
            f"D={c.get('d_check_dilation') or '?'} ({moved:+.1%})")


def _repeated_notes(cases: list[dict[str, Any]]) -> list[str]:
    """Each report figure several counted cases measure: its cases' answers, and the one that counts."""
    lines = []
    for group in figure_groups([c for c in cases if _counted_figure(c)]):
        if len(group) > 1:
            answers = ", ".join(f"{c['case']} {agrees_text(c)}" for c in group)
            verdict = group_agrees(group)
            counted = "split (not counted as agreeing)" if verdict == "split" else agrees_text(group[0])
            lines.append(f"  {group[0]['case']}: {answers}: counts as {counted}")
    return lines


def _claim_notes(cases: list[dict[str, Any]], answer: str) -> list[str]:
    return [f"  {c['case']}: {n}" for c in cases for n in c["claim_notes"] if n.startswith(answer + ":")]
