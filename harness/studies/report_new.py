"""`netrepro report new`: a report file from the few facts a received report gives.

Two lwipopts.h files (before and after the change), the board they run on, the link the report names (its
RTT and rate, when given) and the report's figures. Every fact given is written as the report's
(`provenance = "report"` with an empty `source` to fill in); every other value the model needs is written as
`assumed`, with why and a plausible range, so that `--sensitivity` can say what the figures hang on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.link import LinkSpec, parse_rate, parse_time
from harness.rig.platform import Platform, load_platform
from harness.rig.workload import DEFAULT_CHUNK, ONE_WAY, workload_kind
from harness.studies.report_check import check_report, errors_of
from harness.studies.report_writer import Draft, Entry, Table, input_table, relative_to, write_new_file

CASES = ("before", "after")
OWN_LINK = "report"   # the link preset a report written with --rtt or --rate defines
DEFAULT_BAND = 0.15


@dataclass(frozen=True)
class Part:
    """The user's part, when given: its name and its speed (clock and IPC, or MIPS)."""

    name: str
    clock_mhz: float | None = None
    ipc: float | None = None
    mips: float | None = None


@dataclass(frozen=True)
class NewReport:
    """What `report new` is given."""

    path: Path
    platform: str
    before: Path
    after: Path
    link: str | None = None
    rtt: str | None = None        # tc time, e.g. 0.4ms
    rate: str | None = None       # tc rate, e.g. 100mbit
    workload: str = "rx"
    figures: dict[str, str] = field(default_factory=dict)   # case -> "40" or "35-39" (Mbit/s)
    include: tuple[str, ...] = ()
    stub_headers: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    part: Part | None = None
    title: str | None = None
    seconds: float = 5.0


def write_new_report(spec: NewReport, force: bool = False) -> Path:
    """Write the report; it passes `report check` but for the sources left to fill (warnings)."""
    platform = load_platform(spec.platform)
    _check(spec, platform)
    text = draft_new(spec, platform).render()
    path = write_new_file(spec.path, text, force)
    errors = list(errors_of(check_report(path)))
    if errors:  # what it wrote does not read back: say so rather than leave a file that fails later
        raise NetreproError(f"the report written to {path} does not check: {errors[0].text()}",
                            "report it as a netrepro bug; the file is kept")
    return path


def _check(spec: NewReport, platform: Platform) -> None:
    for which, path in (("--before", spec.before), ("--after", spec.after)):
        if not path.is_file():
            raise NetreproError(f"{which} {path} does not exist", "give the path of that version's lwipopts.h")
    if spec.workload not in ONE_WAY:
        raise NetreproError(f"--workload {spec.workload} is not a one-way workload",
                            f"use one of: {', '.join(ONE_WAY)}")
    for case, figure in spec.figures.items():
        if case not in CASES:
            raise NetreproError(f"--figure names case '{case}'", f"the cases are {' and '.join(CASES)}, e.g. "
                                                                  "--figure before=40")
        parse_figure(figure)
    base = base_link(spec, platform)
    if (spec.rtt or spec.rate) and platform.links.get(base, {}).get("medium") == "shared" and spec.rate:
        raise NetreproError(f"--rate sets a wire's rate, and link preset {base} is a shared radio channel",
                            "give a wire preset with --link (e.g. wifi-wire), or leave --rate out")
    for value, parse in ((spec.rtt, parse_time), (spec.rate, parse_rate)):
        if value is not None:
            parse(value)


def parse_figure(text: str) -> float | list[float]:
    """A figure as --figure gives it: "40" or a range "35-39" (Mbit/s)."""
    try:
        low, _, high = text.partition("-")
        figure = [float(low), float(high)] if high else float(low)
    except ValueError:
        raise NetreproError(f"--figure value '{text}' is not Mbit/s", "write e.g. before=40 or after=35-39") from None
    values = figure if isinstance(figure, list) else [figure]
    if any(v <= 0 for v in values) or (isinstance(figure, list) and figure[0] > figure[1]):
        raise NetreproError(f"--figure value '{text}' is not a positive figure or range", "write e.g. 40 or 35-39")
    return figure


def base_link(spec: NewReport, platform: Platform) -> str:
    """The platform's preset the cases run over (or build their own link on)."""
    if spec.link is not None:
        platform.link_preset(spec.link)  # an unknown preset: one line naming the platform's
        return spec.link
    if spec.rtt or spec.rate:
        return "direct" if "direct" in platform.links else sorted(platform.links)[0]
    return "ethernet" if "ethernet" in platform.links else sorted(platform.links)[0]


def draft_new(spec: NewReport, platform: Platform) -> Draft:
    folder = spec.path.parent
    base = base_link(spec, platform)
    link = OWN_LINK if spec.rtt or spec.rate else base
    top = [Entry("report", spec.path.stem), Entry("title", spec.title or f"{spec.path.stem}: before and after"),
           Entry("platform", platform.name, "the emulated board nearest the report's"),
           Entry("source", "", "fill in: where the report was published (its figures' source)"),
           Entry("seconds", spec.seconds, "of the board's time a run (netrepro's choice)"),
           Entry("repeats", 3, "runs a case (netrepro's choice)"),
           Entry("band", DEFAULT_BAND, "how far a median may be from a report figure and agree (netrepro's choice)")]
    if workload_kind(spec.workload).chunked:
        top.append(Entry("chunk", DEFAULT_CHUNK, "assumed: see the inputs"))
    top += [Entry(key, list(values), "relative to this file") for key, values in
            (("include", spec.include), ("sources", spec.sources)) if values]
    if spec.stub_headers:
        top.append(Entry("stub_headers", list(spec.stub_headers), "stood in by empty headers"))
    tables = [_own_link(spec, platform, base)] if link == OWN_LINK else []
    tables += _cpu_tables(spec, platform) + _link_inputs(spec, platform, base, link)
    if workload_kind(spec.workload).chunked:
        tables.append(input_table("socket write/read size", DEFAULT_CHUNK, "assumed", "B", "report: chunk",
                                  why="the report gives no write size: one MSS", range=[512, 4096]))
    tables += [_case(spec, case, path, link, folder) for case, path in zip(CASES, (spec.before, spec.after),
                                                                          strict=True)]
    return Draft(_opening(spec), top, tables)


def _opening(spec: NewReport) -> str:
    return (f"{spec.path.stem}: written by `netrepro report new`.\n\n"
            "Fill in every empty source (netrepro report check names them), check each assumed input's why and\n"
            "range, then: netrepro report check THIS_FILE && netrepro reproduce THIS_FILE\n"
            "Keys and provenance: docs/writing-a-report.md.")


def _cpu_tables(spec: NewReport, platform: Platform) -> list[Table]:
    if spec.part is None:
        if platform.cpu is None:
            return []
        return [input_table("instructions per cycle (device time only)", platform.cpu.ipc, "assumed", None,
                            f"platforms/{platform.name}.toml: cpu.ipc",
                            why=f"the platform's own model of its part ({platform.cpu.source})", range=[0.5, 2.0])]
    part = spec.part
    entries = [Entry("part", part.name)]
    if part.mips is not None:
        entries.append(Entry("mips", part.mips))
    else:
        entries += [Entry("clock_mhz", part.clock_mhz), Entry("ipc", part.ipc, "assumed unless the report says")]
    entries += [Entry("provenance", "report"), Entry("source", "", "fill in")]
    return [Table("cpu", entries, f"The report's part, modelled on the {platform.name} stand-in's core.")]


def _own_link(spec: NewReport, platform: Platform, base: str) -> Table:
    preset = {k: v for k, v in platform.links[base].items() if k != "note"}
    preset.update({k: v for k, v in (("rtt", spec.rtt), ("rate", spec.rate)) if v is not None})
    LinkSpec.from_preset(preset)  # a bad value: one line now
    entries = [Entry(k, v) for k, v in preset.items()]
    entries.append(Entry("note", f"the report's link: platform {platform.name}'s {base} preset with its RTT and rate"))
    return Table(f"links.{OWN_LINK}", entries, "The report's link (its RTT and rate; the rest from the preset).")


def _link_inputs(spec: NewReport, platform: Platform, base: str, link: str) -> list[Table]:
    preset, tables = platform.links.get(base, {}), []
    sets = (lambda key: f"report: links.{link}.{key}") if link == OWN_LINK else (
        lambda key: f"platforms/{platform.name}.toml: links.{link}.{key}")
    for key, given, unit, scale, parse in (("rtt", spec.rtt, "ms", 1e3, parse_time),
                                           ("rate", spec.rate, "Mbit/s", 1e-6, parse_rate)):
        name = f"link {'RTT' if key == 'rtt' else 'rate'}"
        if given is not None:
            tables.append(input_table(name, round(parse(given) * scale, 6), "report", unit, sets(key), source=""))
        elif key in preset:
            value = round(parse(preset[key]) * scale, 6)
            tables.append(input_table(name, value, "assumed", unit, sets(key), range=[value / 2, value * 2],
                                      why=f"the report gives none: platform {platform.name}'s {base} preset's"))
    return tables


def _case(spec: NewReport, case: str, profile: Path, link: str, folder: Path) -> Table:
    entries = [Entry("case", case), Entry("profile", relative_to(profile, folder), "your lwipopts.h"),
               Entry("link", link), Entry("workload", spec.workload)]
    figure: Any = spec.figures.get(case)
    if figure is not None:
        entries += [Entry("report_mbps", parse_figure(figure)), Entry("source", "", "fill in: where the report "
                                                                                      "gives this figure")]
    if case == "after" and {"before", "after"} <= set(spec.figures):
        entries.append(Entry("claim", {"ratio_to": {"case": "before", "within": DEFAULT_BAND}},
                             "after/before as the report's own ratio"))
    comment = "" if case == "before" else ("More claims: window = N, mss = N (what the device advertises), "
                                           "verdict = \"window-limited\"... (docs/writing-a-report.md).")
    return Table("[cases]", entries, comment)
