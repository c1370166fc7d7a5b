"""`netrepro report check`: a report file against its format, one line per problem, with the file and line.

The format is reports/report.schema.json (harness/studies/report_schema.py); beside it this module checks
what a schema cannot: that the platform exists, that each case's link is a preset of the platform or of the
report, that its profile is a shipped one or a lwipopts.h that exists (with its include folders, sources and
stub headers), that a claim's case is in the report, that an assumed value lies in its range, that a case's
capture is the file its SHA-256 names, that a fitted or chosen input's cases and a case's `figure_of` (an
earlier case with the same report figure) are in the report, that a claim declared by construction checks
something. Warnings (a `source` left empty, no [[inputs]]) are allowed.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from harness.core.cache import file_sha256
from harness.core.errors import NetreproError
from harness.link import LinkSpec
from harness.rig.platform import Platform, load_platform
from harness.rig.profile import resolve_profile
from harness.rig.workload import KINDS
from harness.studies.report_schema import (
    CPU_PROVENANCE,
    PROVENANCE,
    PROVENANCE_OPTIONAL,
    provenance_keys,
    report_schema,
)

_OTHER_CASE_CLAIMS = ("faster_than", "slower_than", "close_to", "ratio_to")
_PROVENANCE_KEYS = {key for keys in PROVENANCE.values() for key in keys}


@dataclass(frozen=True)
class Problem:
    """One thing wrong (or worth a look) in a report file: where, what, and the fix."""

    file: str
    line: int | None
    severity: str   # "error" or "warning"
    message: str
    fix: str = ""

    def text(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.severity}: {self.message}" + (f"; {self.fix}" if self.fix else "")

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def check_report(path: Path) -> list[Problem]:
    """Every problem of the report file at `path`, errors and warnings, in the order of the file."""
    text = _read(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        return [Problem(str(path), int(line.group(1)) if line else None, "error", f"not valid TOML ({exc})",
                        "fix the syntax")]
    lines = key_lines(text)
    found = Found(str(path), lines, data)
    schema_problems(found)
    if not found.errors():  # the rest reads the keys the schema guarantees
        meaning_problems(found, path.parent)
    return sorted(found.problems, key=lambda p: (p.line or 0, p.severity))


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise NetreproError(f"cannot read report file {path} ({exc.strerror})", "check the path") from None
    except UnicodeDecodeError:
        raise NetreproError(f"report file {path} is not text", "give a .toml report file") from None


@dataclass
class Found:
    """The problems found so far, and what places them: the file, its keys' lines, its data."""

    file: str
    lines: dict[tuple[Any, ...], int]
    data: dict[str, Any]
    problems: list[Problem] = dataclasses.field(default_factory=list)

    def add(self, path: tuple[Any, ...], message: str, fix: str = "", severity: str = "error") -> None:
        self.problems.append(Problem(self.file, self.line(path), severity, message, fix))

    def line(self, path: tuple[Any, ...]) -> int | None:
        """The line of the key at `path`, or of the nearest enclosing key or table the file writes."""
        for end in range(len(path), 0, -1):
            if path[:end] in self.lines:
                return self.lines[path[:end]]
        return None

    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]


# ------------------------------------------------------------------ where each key is written


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")
_INLINE_KEY = re.compile(r"[{,]\s*([A-Za-z0-9_-]+)\s*=")


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(p.strip().strip("\"'") for p in re.split(r"\.(?=(?:[^\"']|\"[^\"]*\"|'[^']*')*$)", dotted))


def key_lines(text: str) -> dict[tuple[Any, ...], int]:
    """Each key's line: ("cases", 2, "claim", "window") -> 57. Tables of an array take their index; the keys of an
    inline table take the line they are written on. A key inside a multi-line string is no key."""
    lines: dict[tuple[Any, ...], int] = {}
    arrays: dict[tuple[str, ...], int] = {}
    table: tuple[Any, ...] = ()
    in_string = False
    for number, line in enumerate(text.splitlines(), 1):
        toggles = (line.count('"""') + line.count("'''")) % 2 == 1
        if in_string:
            in_string = not toggles
            continue
        in_string = toggles  # a key that opens a multi-line string is still a key
        header = _HEADER.match(line)
        if header:
            table = _table_path(_parts(header.group(2)), header.group(1) == "[[", arrays)
            lines.setdefault(table, number)
            continue
        key = _KEY.match(line)
        if key:
            path = (*table, *_parts(key.group(1)))
            lines.setdefault(path, number)
            for inner in _INLINE_KEY.findall(line[key.end():]):
                lines.setdefault((*path, inner), number)
    return lines


def _table_path(parts: tuple[str, ...], array: bool, arrays: dict[tuple[str, ...], int]) -> tuple[Any, ...]:
    """A header's place: [[cases]] is ("cases", i); [cases.claim] under it is ("cases", i, "claim")."""
    path: tuple[Any, ...] = ()
    for i, part in enumerate(parts):
        path = (*path, part)
        named = tuple(str(p) for p in path if not isinstance(p, int))
        if array and i == len(parts) - 1:
            arrays[named] = arrays.get(named, -1) + 1
            path = (*path, arrays[named])
        elif named in arrays:
            path = (*path, arrays[named])
    return path


# ------------------------------------------------------------------ the format


def schema_problems(found: Found, schema: dict[str, Any] | None = None, under: tuple[Any, ...] = ()) -> None:
    """The schema's errors (the report's, or `schema` for the part of the data at `under`) in the user's words."""
    validator = jsonschema.Draft202012Validator(schema or report_schema())
    instance = _at(found.data, under)
    for error in sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path]):
        message, fix, path = _explain(error, (*under, *error.absolute_path), found.data)
        found.add(path, message, fix)


def check_input(item: dict[str, Any], cases: set[str], where: Path | str = "report") -> None:
    """One [[inputs]] entry (e.g. one a calibration writes) as the report check judges it: its first error raised."""
    found = Found(str(where), {}, {"inputs": [item]})
    schema_problems(found, report_schema()["properties"]["inputs"]["items"], ("inputs", 0))
    if not found.errors():
        _inputs_problems(found, cases)
    errors = found.errors()
    if errors:
        raise NetreproError(f"{where}: {errors[0].message}", errors[0].fix)


def _explain(error: jsonschema.ValidationError, path: tuple[Any, ...], data: dict[str, Any]
             ) -> tuple[str, str, tuple[Any, ...]]:
    """A schema error in the user's words: what is wrong where, the fix, and the key it is on."""
    where, key = place(path, data), path[-1] if path else None
    owner = place(path[:-1], data) if path else "the report"
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))[0]
        close = difflib.get_close_matches(extra, allowed, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        return f"{where} has unknown key {extra}", f"{hint}allowed: {', '.join(allowed)}", (*path, extra)
    if error.validator == "required":
        named = re.search(r"'([^']+)'", error.message)
        missing = named.group(1) if named else "?"
        return f"{where} has no {missing}", f"add {missing} = ... ({_describe(error.schema, missing)})", path
    if error.validator is None or schema is False:  # a key another provenance gives (the error names no key)
        item, kind = _at(data, path), _provenance(path, data)
        extra = sorted(set(item) - set(provenance_keys(kind)) & _PROVENANCE_KEYS)[0]
        return (f"{place(path, data)} has unknown key {extra}: an input of provenance '{kind}' does not give it",
                f"remove it; each provenance gives: {_provenance_keys()}", (*path, extra))
    if error.validator == "enum":
        return (f"{owner} has {key} {error.instance!r}",
                f"use one of: {', '.join(map(str, error.validator_value))}", path)
    if key == "range":
        return f"{owner} has range {error.instance!r}", "write range = [low, high]", path
    if key == "cases" and path[0] == "inputs":
        if _provenance(path, data) == "chosen":
            return f"{owner} names no case", "name the cases whose figures hang on it", path
        return f"{owner} is fitted to no case", "name the cases whose figures it was fitted to", path
    if error.validator == "oneOf" and key == "cpu":
        return ("[cpu] gives both clock_mhz and ipc, or mips, not both or neither", "write clock_mhz and ipc, or mips",
                path)
    if error.validator == "oneOf":
        return f"{owner} has {key} {error.instance!r}: not a number or [low, high]", "write e.g. 31 or [35, 39]", \
            path
    fix = schema.get("description") or "see docs/writing-a-report.md"
    return f"{owner} has {key} {error.instance!r}: {error.message}", fix, path


def _describe(schema: Any, key: str) -> str:
    if isinstance(schema, dict):
        described = schema.get("properties", {}).get(key, {})
        if isinstance(described, dict) and described.get("description"):
            return described["description"]
    return "see docs/writing-a-report.md"


def _provenance(path: tuple[Any, ...], data: dict[str, Any]) -> str:
    item = _at(data, path[:2]) if len(path) >= 2 else {}
    return item.get("provenance", "?") if isinstance(item, dict) else "?"


def _provenance_keys() -> str:
    def optional(kind: str) -> str:
        return "".join(f" (optional {key})" for key in PROVENANCE_OPTIONAL.get(kind, ()))
    return "; ".join(f"{kind}: {', '.join(keys)}{optional(kind)}" for kind, keys in PROVENANCE.items())


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def place(path: tuple[Any, ...], data: dict[str, Any]) -> str:
    """A key's place as a reader finds it: "case 'wifi rx' claim.window", "input 'wifi RTT' source", "[cpu]"."""
    if not path:
        return "the report"
    head, rest = path[0], path[1:]
    if head in ("cases", "inputs") and rest and isinstance(rest[0], int):
        item = _at(data, (head, rest[0]))
        item = item if isinstance(item, dict) else {}
        keys = ".".join(str(p) for p in rest[1:])
        if head == "cases":
            return f"case '{item.get('case', f'#{rest[0] + 1}')}'" + (f" {keys}" if keys else "")
        kind = f" ({item['provenance']})" if isinstance(item.get("provenance"), str) else ""
        return f"input '{item.get('name', f'#{rest[0] + 1}')}'{kind}" + (f" {keys}" if keys else "")
    return ".".join(str(p) for p in path) if rest else str(head)


# ------------------------------------------------------------------ what the format cannot say


def meaning_problems(found: Found, folder: Path) -> None:
    data = found.data
    platform = _platform(found, ("platform",), data["platform"], folder)
    if platform is not None:
        platform = _cpu_problems(found, platform)
        _links_problems(found, platform)
    names = [c["case"] for c in data["cases"]]
    for i, case in enumerate(data["cases"]):
        if names.count(case["case"]) > 1 and names.index(case["case"]) < i:
            found.add(("cases", i, "case"), f"case '{case['case']}' is named twice", "give each case its own name")
        _case_problems(found, i, case, platform, folder, set(names))
    _inputs_problems(found, set(names))
    if not data.get("source"):
        found.add(("source",) if "source" in data else (), "the report names no source for its figures",
                  'fill in source = "where the figures were published"', "warning")


def _platform(found: Found, path: tuple[Any, ...], name: str, folder: Path) -> Platform | None:
    try:
        return load_platform(str(resolve_path(name, folder)) if name.endswith(".toml") else name)
    except NetreproError as exc:
        found.add(path, exc.problem, exc.fix)
        return None


def _cpu_problems(found: Found, platform: Platform) -> Platform:
    cpu = found.data.get("cpu")
    if cpu is None:
        return platform
    if platform.cpu is None:
        found.add(("cpu",), f"platform {platform.name} has no [cpu] model to give the part's speed to",
                  "remove [cpu], or choose a platform with one")
        return platform
    kind = cpu["provenance"]
    needed = {"report": ("source",), "assumed": ("why", "range"), "capture": ("capture", "sha256", "frames")}[kind]
    for key in needed:
        if key not in cpu:
            found.add(("cpu",), f"[cpu] of provenance '{kind}' has no {key}",
                      f"a {kind} cpu gives {', '.join(needed)} (provenance one of {', '.join(CPU_PROVENANCE)})")
    if kind == "report" and not str(cpu.get("source", "x")).strip():
        found.add(("cpu", "source"), "[cpu] says the part's speed is from the report but its source is empty",
                  "fill in where the report gives the part and its clock", "warning")
    mips = report_mips(cpu)
    span = cpu.get("range")
    if kind == "assumed" and isinstance(span, list) and len(span) == 2 and not span[0] <= mips <= span[1]:
        found.add(("cpu", "range"), f"[cpu] gives {mips:g} MIPS, outside its range {span}",
                  "an assumed value lies inside its plausible range: fix one of them")
    return platform


def report_mips(cpu: dict[str, Any]) -> float:
    """The part's instruction rate [cpu] gives: mips, or clock_mhz x ipc."""
    return float(cpu["mips"]) if "mips" in cpu else float(cpu["clock_mhz"]) * float(cpu["ipc"])


def _links_problems(found: Found, platform: Platform) -> None:
    for name, table in (found.data.get("links") or {}).items():
        try:
            LinkSpec.from_preset({k: v for k, v in table.items() if k != "note"})
        except NetreproError as exc:
            found.add(("links", name), f"link preset '{name}': {exc.problem}", exc.fix)
        if name in platform.links:
            found.add(("links", name), f"link preset '{name}' replaces the platform's own for this report",
                      "name it differently to keep both", "warning")


def _case_problems(found: Found, i: int, case: dict[str, Any], platform: Platform | None, folder: Path,
                   names: set[str]) -> None:
    at = ("cases", i)
    if "platform" in case:
        platform = _platform(found, (*at, "platform"), case["platform"], folder)
    links = sorted({*(platform.links if platform else {}), *(found.data.get("links") or {})})
    if platform is not None and case["link"] not in links:
        found.add((*at, "link"), f"case '{case['case']}' runs over link '{case['link']}', which neither platform "
                                 f"{platform.name} nor the report's [links] defines", f"use one of: {', '.join(links)}")
    if platform is not None:
        _profile_problems(found, at, case, platform, folder)
    _direction_problems(found, at, case)
    if "report_value" in case and not found.data.get("unit_bytes"):
        found.add((*at, "report_value"), f"case '{case['case']}' gives report_value but the report has no unit_bytes",
                  "add unit and unit_bytes (e.g. KB/s, 1024), or give report_mbps")
    for key in _OTHER_CASE_CLAIMS:
        other = (case.get("claim") or {}).get(key, {}).get("case")
        if other is not None and other not in names:
            found.add((*at, "claim", key), f"case '{case['case']}' compares with case '{other}', which the report "
                                           "does not have", f"use one of: {', '.join(sorted(names))}")
    claim = case.get("claim") or {}
    if "by_construction" in claim and len(claim) == 1:
        found.add((*at, "claim", "by_construction"), f"case '{case['case']}' declares its claim by construction "
                                                      "but checks nothing", "add the checks that hold by construction")
    if "figure_of" in case:
        _figure_of_problems(found, i, case)
    if "capture" in case:
        _capture_problems(found, (*at, "capture"), case["capture"], folder)
    if "source" in case and not case["source"].strip():
        found.add((*at, "source"), f"case '{case['case']}': the source of its figure is empty",
                  "fill in where the report gives it", "warning")


def _figure_of_problems(found: Found, i: int, case: dict[str, Any]) -> None:
    """figure_of names an earlier case that gives the same report figure: the one figure is counted once."""
    at, other = ("cases", i, "figure_of"), case["figure_of"]
    earlier = [c["case"] for c in found.data["cases"][:i]]
    if other not in earlier:
        later = other in [c["case"] for c in found.data["cases"][i + 1:]]
        which = "is itself" if other == case["case"] else "comes after it" if later else "the report does not have"
        found.add(at, f"case '{case['case']}' gives figure_of '{other}', which {which}",
                  f"name an earlier case that measures the same report figure: {', '.join(earlier) or 'none'}")
        return
    first = next(c for c in found.data["cases"][:i] if c["case"] == other)
    if _report_figure(case) is None or _report_figure(case) != _report_figure(first):
        found.add(at, f"case '{case['case']}' gives figure_of '{other}' but not the same report figure "
                      f"({_report_figure(case)} against {_report_figure(first)})",
                  "give both cases the report's one figure, or remove figure_of")


def _report_figure(case: dict[str, Any]) -> Any:
    """The report figure a case gives, as written (report_mbps, else report_value)."""
    return case.get("report_mbps", case.get("report_value"))


def _profile_problems(found: Found, at: tuple[Any, ...], case: dict[str, Any], platform: Platform,
                      folder: Path) -> None:
    firmware = case_firmware(found.data, case, folder)
    try:
        resolve_profile(platform, firmware["profile"], firmware["include"], None, None, firmware["sources"],
                        firmware["stub_headers"])
    except NetreproError as exc:
        found.add((*at, "profile"), f"case '{case['case']}': {exc.problem}", exc.fix)
    tree = firmware["lwip_tree"]
    if tree and not (Path(tree) / "src" / "include" / "lwip" / "init.h").is_file():
        key = "lwip_tree" if "lwip_tree" in case else None
        found.add((*at, key) if key else ("lwip_tree",), f"lwip_tree {tree} is not an lwIP tree (no "
                                                         "src/include/lwip/init.h)", "give the folder of lwIP's source")


def _direction_problems(found: Found, at: tuple[Any, ...], case: dict[str, Any]) -> None:
    kind, direction = KINDS.get(case["workload"]), case.get("direction")  # an unknown one: the schema says so
    two_way = kind is not None and kind.two_way
    if two_way and direction is None:
        found.add((*at, "workload"), f"case '{case['case']}' runs {case['workload']} (both directions) but does not "
                                     "say which one it is",
                  'add direction = "rx" (peer -> device) or "tx" (device -> peer)')
    if not two_way and direction is not None:
        found.add((*at, "direction"), f"case '{case['case']}': direction applies only to the rr and duplex "
                                      "workloads", "remove it")


def _capture_problems(found: Found, at: tuple[Any, ...], capture: dict[str, Any], folder: Path) -> None:
    path = resolve_path(capture["file"], folder)
    if not path.is_file():
        found.add((*at, "file"), f"capture {capture['file']} does not exist", "give the path of your capture, "
                                                                                "relative to the report file")
    elif "sha256" in capture and file_sha256(path) != capture["sha256"]:
        found.add((*at, "sha256"), f"capture {capture['file']} is not the file its sha256 names (it changed)",
                  "give the capture the report was written from, or update its sha256")


def _inputs_problems(found: Found, cases: set[str]) -> None:
    inputs = found.data.get("inputs") or []
    if not inputs:
        found.add((), "the report lists no [[inputs]]: nothing says what the model was given or where it came from",
                  "list each value you set with its provenance (docs/writing-a-report.md)", "warning")
    for i, item in enumerate(inputs):
        at, name = ("inputs", i), item["name"]
        if item["provenance"] == "report" and not str(item.get("source", "")).strip():
            found.add((*at, "source"), f"input '{name}' says it is from the report but its source is empty",
                      "fill in where in the report the value is given", "warning")
        span, value = item.get("range"), item["value"]
        if isinstance(span, list) and span[0] > span[1]:
            found.add((*at, "range"), f"input '{name}' has range {span}", "write range = [low, high]")
        elif (item["provenance"] in ("assumed", "chosen") and isinstance(span, list) and isinstance(value, int | float)
                and not isinstance(value, bool) and not span[0] <= value <= span[1]):
            found.add((*at, "range"), f"input '{name}' = {value} lies outside its range {span}",
                      f"the {item['provenance']} value lies inside its plausible range: fix one of them")
        _input_cases_problems(found, at, item, cases)


def _input_cases_problems(found: Found, at: tuple[Any, ...], item: dict[str, Any], cases: set[str]) -> None:
    """A fitted or chosen input names the cases whose figures it decides: each must be in the report."""
    how = {"fitted": ("is fitted to", "it was fitted to"), "chosen": ("is chosen for", "hang on it")}
    if item["provenance"] not in how:
        return
    verb, whose = how[item["provenance"]]
    for other in item.get("cases", []):
        if other not in cases:
            found.add((*at, "cases"), f"input '{item['name']}' {verb} unknown case '{other}'",
                      f"name the cases whose figures {whose}: {', '.join(sorted(cases))}")


# ------------------------------------------------------------------ paths in a report


def resolve_path(text: str, folder: Path) -> Path:
    """A path a report gives: relative to the report file's folder, ~ expanded."""
    path = Path(text).expanduser()
    return (path if path.is_absolute() else folder / path).resolve()


def is_profile_path(profile: str) -> bool:
    """A case's profile names a lwipopts.h rather than a shipped profile (the rule `run --lwip` follows)."""
    return "/" in profile or profile.endswith(".h")


def case_firmware(report: dict[str, Any], case: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The case's firmware keys, each the case's own or else the report's, paths resolved against `folder`."""
    def given(key: str) -> Any:
        return case.get(key, report.get(key))
    profile = case["profile"]
    tree = given("lwip_tree")
    return {"profile": str(resolve_path(profile, folder)) if is_profile_path(profile) else profile,
            "include": [str(resolve_path(p, folder)) for p in given("include") or []],
            "sources": [str(resolve_path(p, folder)) for p in given("sources") or []],
            "stub_headers": list(given("stub_headers") or []),
            "lwip_tree": str(resolve_path(tree, folder)) if tree else None}


def errors_of(problems: list[Problem]) -> Iterator[Problem]:
    return (p for p in problems if p.severity == "error")
