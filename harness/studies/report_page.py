"""A reproduce document as one self-contained HTML page, to share.

Everything is in the one file: the report's title, source and inputs, its table, per case the
median run's plots as inline SVG (matplotlib's own SVG text, compacted, so nothing is fetched when
the page is opened, from the network or the disk), the stand-in's honesty notes, a case's ``against``
(a user's capture beside the case's run: harness.analysis.against) as its comparison table and
overlay plots, and the command and netrepro version that made it. The page is a pure function of
the document and the files its run folders hold; a missing key or plot shows as "not listed" /
"no plot", never as a crash. The page stays under PAGE_LIMIT_BYTES: a case whose median run is an
earlier case's (a two-way run's two directions) points to that case's plots, and plots past the limit
are named rather than drawn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from harness import __version__
from harness.analysis.against import CaptureComparison
from harness.analysis.plots import compact_svg
from harness.core.errors import NetreproError
from harness.rig.platform import load_platform
from harness.studies.cases import format_number
from harness.studies.claims import DEFAULT_BAND, agrees_text, failed_runs_text, summary_line

PLOTS = (("timeseq", "time / sequence"), ("goodput", "goodput"), ("window", "window and bytes in flight"))
NO_PLOT = '<div class="noplot">no plot</div>'
# a page is shared by mail and kept in git (benchmarks/results): a few hundred kB, not megabytes
PAGE_LIMIT_BYTES = 500_000

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1d1d1f;
       margin: 0 auto; max-width: 1280px; padding: 16px 24px 40px; background: #fff; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 22px 0 4px; } .meta, .small { color: #555; font-size: 13px; }
code { background: #f3f3f5; padding: 1px 4px; border-radius: 3px; word-break: break-all; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { border: 1px solid #d6d6dc; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eef0f5; } tbody tr:nth-child(even) { background: #f8f8fb; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.holds { color: #17692e; font-weight: 600; } .fails { color: #b3261e; font-weight: 600; }
.unknown { color: #8a5a00; font-weight: 600; }
.same { color: #17692e; } .differs { color: #b3261e; font-weight: 600; }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(540px, 1fr)); gap: 12px; }
figure { margin: 0; border: 1px solid #e2e2e8; border-radius: 4px; padding: 6px; background: #fff; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { font-size: 12px; color: #555; margin-bottom: 4px; }
.noplot { color: #888; font-style: italic; padding: 40px 0; text-align: center; background: #fafafa; }
.notes li { margin: 4px 0; } dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; }
dt { font-weight: 600; } dd { margin: 0; } footer { margin-top: 32px; color: #555; font-size: 12px; }
"""


def write_report_page(document: dict[str, Any], path: Path, command: str | None = None) -> Path:
    """Write the document's page to path (its folder made if needed); returns path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report_page(document, command), encoding="utf-8")
    return path


def render_report_page(document: dict[str, Any], command: str | None = None) -> str:
    """The page's HTML text, under PAGE_LIMIT_BYTES (UTF-8): drawn once with no plot to learn what the
    text takes, then with the plots that fit in what is left, in the page's order."""
    bare = _render(document, command, _Plots(0)).encode("utf-8")
    return _render(document, command, _Plots(PAGE_LIMIT_BYTES - len(bare)))


@dataclass
class _Plots:
    """The bytes the page's plots may still take, and the run folders whose plots are drawn (by case)."""
    left: int
    drawn: dict[Path, int] = field(default_factory=dict)

    def figure(self, caption: str, path: Path | None, prefix: str) -> str:
        """A figure with the SVG at path inline when it fits in what is left, else named; "no plot" when
        there is no such SVG."""
        head = f"<figure><figcaption>{escape(caption)}</figcaption>"
        if path is None or not path.is_file():
            return head + NO_PLOT + "</figure>"
        svg = inline_svg(path, prefix) if self.left > 0 else ""
        if svg is None:
            return head + NO_PLOT + "</figure>"
        html = head + svg + "</figure>"
        if not svg or len(html.encode("utf-8")) > self.left:
            self.left = 0  # the plots after this one are left out too, so that those drawn are the page's first
            return (head + f"<div class=\"noplot\">left out to keep the page under {PAGE_LIMIT_BYTES // 1000} kB: "
                    f"<code>{escape(str(path))}</code></div></figure>")
        self.left -= len(html.encode("utf-8"))
        return html


def _render(document: dict[str, Any], command: str | None, plots: _Plots) -> str:
    cases = [c for c in document.get("cases") or [] if isinstance(c, dict)]
    title = _text(document.get("title") or document.get("report") or "netrepro report")
    body = [f"<h1>{escape(title)}</h1>", _header(document),
            "<h2>Inputs</h2>", _inputs(document.get("inputs")),
            "<h2>Results</h2>", _table(document, cases), _claim_notes(cases),
            "<h2>Stand-in</h2>", _stand_in(document, cases),
            "<h2>Plots</h2>", *(_case_plots(i, c, plots) for i, c in enumerate(cases)),
            *_against_sections(cases, plots), _footer(document, command)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _text(value: Any) -> str:
    """Any document value as plain text: lists joined, a two-number range as lo-hi, dicts as k=v."""
    if value is None:
        return "-"
    if isinstance(value, list | tuple):
        if len(value) == 2 and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            return f"{value[0]:g}-{value[1]:g}"
        return ", ".join(_text(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_text(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _header(document: dict[str, Any]) -> str:
    source = document.get("source")
    lines = [f"<p class=\"meta\">source: {escape(_text(source)) if source else 'not given'}</p>"]
    facts = [f"report {document.get('report', '-')}", f"{document.get('repeats', '?')} runs a case",
             "figures in Mbit/s", f"time: {document.get('time') or '-'}"]
    if isinstance(document.get("band"), int | float):
        facts.append(f"a figure agrees within {document['band'] * 100:g} % of the report's")
    if document.get("unit") not in (None, "Mbit/s"):
        facts.append(f"report figures in {document['unit']} (1 K = {document.get('unit_bytes')} B)")
    lines.append(f"<p class=\"meta\">{escape('; '.join(_text(f) for f in facts))}</p>")
    if document.get("run_dir"):
        lines.append(f"<p class=\"meta\">run folders: <code>{escape(_text(document['run_dir']))}</code></p>")
    if document.get("note"):
        lines.append(f"<p>note: {escape(_text(document['note']))}</p>")
    return "\n".join(lines)


_CLAIM_TEXT = {"holds": "holds", "fails": "FAILS", "unknown": "unknown"}


def _inputs(inputs: Any) -> str:
    """The report's inputs and where each came from; documents older than [[inputs]] do not list them."""
    if not isinstance(inputs, list):
        return "<p class=\"small\">inputs: not listed</p>"
    if not inputs:
        return "<p class=\"small\">inputs: none declared in the report file</p>"
    rows = []
    for item in inputs:
        item = item if isinstance(item, dict) else {"name": item}
        unit = f" {_text(item['unit'])}" if item.get("unit") else ""
        value = _text(item.get("value")) + (unit if item.get("value") is not None else "")
        cells = [_text(item.get("name")), value, _text(item.get("provenance")), _basis(item, unit),
                 _text(item.get("sets"))]
        rows.append("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("input", "value", "provenance", "where it came from", "sets"))
    return f"<table class=\"inputs\"><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _basis(item: dict[str, Any], unit: str) -> str:
    """source (report), why and range (assumed), from and cases (fitted): whichever the input gives."""
    parts = [_text(item[key]) for key in ("source", "why") if item.get(key)]
    if item.get("range") is not None:
        parts.append(f"range {_text(item['range'])}{unit}")
    if item.get("from"):
        parts.append(f"fitted from {_text(item['from'])}")
    if item.get("cases"):
        parts.append(f"fitted to the figures of {_text(item['cases'])}")
    if item.get("calibrated"):
        parts.append(f"calibrated: {_text(item['calibrated'])}")
    return "; ".join(parts) or "-"


def _report_figure(case: dict[str, Any], unit: str) -> str:
    figure = case.get("report_mbps")
    text = "-" if figure is None else _text(figure)
    if case.get("report_value") is not None and unit != "Mbit/s":
        text += f" ({_text(case['report_value'])} {unit})"
    return text


def _measured(case: dict[str, Any]) -> str:
    """median (min-max, n runs), as the text table writes it; 'failed' when no run gave a figure."""
    runs = len(case.get("runs_mbps") or [])
    if case.get("median_mbps") is None:
        return f"failed (0 of {runs + (case.get('runs_failed') or 0)} runs)"
    spread = f"{format_number(case.get('min_mbps'))}-{format_number(case.get('max_mbps'))}"
    return f"{format_number(case['median_mbps'])} ({spread}, {runs} run{'' if runs == 1 else 's'})"


def _delta(case: dict[str, Any]) -> str:
    delta = case.get("delta_pct")
    return f"{delta:+.1f}" if isinstance(delta, int | float) and not isinstance(delta, bool) else "-"


def _claim(case: dict[str, Any]) -> str:
    """holds / fails / unknown; documents older than claim_result say only claim_holds."""
    if "claim_result" in case:
        return _CLAIM_TEXT.get(case["claim_result"], "-")
    return {True: "holds", False: "FAILS"}.get(case.get("claim_holds"), "-")


def _table(document: dict[str, Any], cases: list[dict[str, Any]]) -> str:
    """The report table; delta % and agreement only when the document judged them."""
    if not cases:
        return "<p class=\"small\">no cases</p>"
    unit = _text(document.get("unit") or "Mbit/s")
    with_delta = any("delta_pct" in c for c in cases)
    with_agrees = any("agrees" in c for c in cases)
    band = document.get("band")
    agrees_head = f"agrees (within {band * 100:g} %)" if isinstance(band, int | float) else "agrees"
    heads = ["case", "report figure", "netrepro median (min-max, runs)", *(["delta %"] if with_delta else []),
             *([agrees_head] if with_agrees else []), "bound", "MSS", "window", "verdict", "claim"]
    rows = []
    for i, c in enumerate(cases):
        claim = _claim(c)
        numbers = [_report_figure(c, unit), _measured(c), *([_delta(c)] if with_delta else []),
                   *([agrees_text(c)] if with_agrees else []), format_number(c.get("bound_mbps")),
                   format_number(c.get("device_mss")), format_number(c.get("device_window_max"))]
        cells = [f"<td><a href=\"#case-{i}\">{escape(_text(c.get('case')))}</a></td>",
                 *(f"<td class=\"num\">{escape(n)}</td>" for n in numbers),
                 f"<td title=\"{escape(_text(c.get('verdict_reason') or ''))}\">{escape(_text(c.get('verdict')))}</td>",
                 f"<td class=\"{claim.lower()}\">{escape(claim)}</td>"]
        rows.append(f"<tr class=\"case\">{''.join(cells)}</tr>")
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    table = f"<table class=\"report\"><thead><tr>{head}</tr></thead><tbody>\n" + "\n".join(rows) + "\n</tbody></table>"
    return table + _summary(document)


def _summary(document: dict[str, Any]) -> str:
    """The text table's last line, from the document's counts (older documents have none)."""
    counts, band = document.get("summary"), document.get("band", DEFAULT_BAND)
    try:
        return f"<p><b>{escape(summary_line(counts, float(band)))}</b></p>" if isinstance(counts, dict) else ""
    except (KeyError, TypeError, ValueError):
        return ""


def _claim_notes(cases: list[dict[str, Any]]) -> str:
    """The table's failed, fitted, FAILS and unknown explained, as the text table does below it."""
    sections = [("runs that failed", [f"{c.get('case')}: {failed_runs_text(c)}" for c in cases
                                      if c.get("runs_failed") and "runs_mbps" in c]),
                ("figures an input was fitted to (not counted as agreement)",
                 [_text(c.get("case")) for c in cases if c.get("fitted") and c.get("report_mbps") is not None]),
                ("claims that do not hold", _notes_starting(cases, "fails")),
                ("claims left unknown (the evidence is missing)", _notes_starting(cases, "unknown"))]
    if not any(c.get("runs_failed") for c in cases):  # older documents: the error is all there is
        sections[0] = ("runs that failed", [f"{c.get('case')}: {c['error']}" for c in cases if c.get("error")])
    return "".join(f"<p class=\"small\">{escape(title)}:</p><ul class=\"notes\">"
                   + "".join(f"<li>{escape(_text(n))}</li>" for n in notes) + "</ul>"
                   for title, notes in sections if notes)


def _notes_starting(cases: list[dict[str, Any]], answer: str) -> list[str]:
    return [f"{_text(c.get('case'))}: {_text(n)}" for c in cases for n in c.get("claim_notes") or []
            if str(n).startswith(answer)]


def _stand_in(document: dict[str, Any], cases: list[dict[str, Any]]) -> str:
    """What stood in for the real board, and what that changes, from the document and the platforms."""
    stand_in = document.get("stand_in") if isinstance(document.get("stand_in"), dict) else {}
    items = [(label, _text(stand_in[key])) for key, label in (("cpu", "CPU"), ("nic", "NIC"), ("honesty", "honesty"))
             if stand_in.get(key)]
    seen = {text for _, text in items}
    for name in dict.fromkeys(str(c["platform"]) for c in cases if c.get("platform")):
        honesty = _platform_honesty(name)
        if honesty and honesty not in seen:
            items.append((f"honesty (platform {name})", honesty))
            seen.add(honesty)
    if not items:
        return "<p class=\"small\">stand-in: not described</p>"
    return "<dl>" + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in items) + "</dl>"


def _platform_honesty(name: str) -> str | None:
    try:
        return load_platform(name).stand_in.honesty
    except (NetreproError, OSError, KeyError, ValueError):
        return None  # a platform renamed or removed since the run: the document's own notes still stand


def _case_plots(index: int, case: dict[str, Any], plots: _Plots) -> str:
    run_dir = median_run_dir(case)
    where = f"run folder <code>{escape(str(run_dir))}</code>" if run_dir else "no run folder"
    facts = " / ".join(_text(case.get(k)) for k in ("platform", "profile", "link", "workload") if case.get(k))
    reason = case.get("verdict_reason")
    verdict = f"{_text(case.get('verdict'))}: {_text(reason)}" if reason else None
    beside = f"; <a href=\"#against-{index}\">beside your capture</a>" if case.get("against") else ""
    return (f"<h3 id=\"case-{index}\">{escape(_text(case.get('case')))}</h3>"
            f"<p class=\"small\">{escape(facts)}; {where}{beside}</p>"
            + (f"<p class=\"small\">{escape(verdict)}</p>" if verdict else "")
            + _run_plots(index, run_dir, plots))


def _run_plots(index: int, run_dir: Path | None, plots: _Plots) -> str:
    """The run's three plots; a pointer to the case that drew them when an earlier case did (a two-way
    run's two directions share one run)."""
    earlier = plots.drawn.get(run_dir.resolve()) if run_dir else None
    if earlier is not None:
        return f"<p class=\"small\">plots: the same run as <a href=\"#case-{earlier}\">case {earlier + 1}</a>'s</p>"
    if run_dir:
        plots.drawn[run_dir.resolve()] = index
    figures = [plots.figure(label, run_dir / "plots" / f"{name}.svg" if run_dir else None, f"c{index}-{name}")
               for name, label in PLOTS]
    return f"<div class=\"plots\">{''.join(figures)}</div>"


def median_run_dir(case: dict[str, Any]) -> Path | None:
    """The run folder that speaks for the case: the median run, as summarise_runs picks it, when the runs'
    figures tell which; else the first folder with plots; else the first that exists."""
    dirs = [Path(d) for d in case.get("run_dirs") or [] if isinstance(d, str) and d]
    figures = [_run_figure(d, case.get("direction")) for d in dirs]
    if not any(f is not None for f in figures) and len(case.get("runs_mbps") or []) == len(dirs):
        figures = list(case["runs_mbps"])  # every run measured: runs_mbps is in run_dirs' order
    measured = sorted((f, d) for f, d in zip(figures, dirs, strict=True) if isinstance(f, int | float))
    if measured and case.get("median_mbps") is not None:
        middle = measured[len(measured) // 2][1]
        if (middle / "plots").is_dir():
            return middle
    with_plots = [d for d in dirs if any((d / "plots" / f"{n}.svg").is_file() for n, _ in PLOTS)]
    existing = [d for d in dirs if d.is_dir()]
    return (with_plots or existing or [None])[0]


def _run_figure(run_dir: Path, direction: str | None) -> float | None:
    """The run's throughput from its result.json (this case's direction of a two-way run)."""
    try:
        value = json.loads((run_dir / "result.json").read_text()).get("throughput_mbps")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(value, dict):
        value = value.get(direction) if direction else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


AGAINST_PLOTS = {"against-timeseq": "time / sequence, both captures",
                 "against-window": "advertised window and bytes in flight, both captures"}


def _against_sections(cases: list[dict[str, Any]], plots: _Plots) -> list[str]:
    """A section per case whose row has `against`: the user's capture beside the case's run (the
    comparison's table, its notes and the overlay plots); none when no case has one."""
    sections = [_against(i, c, plots) for i, c in enumerate(cases) if c.get("against")]
    return ["<h2>Your captures beside netrepro's</h2>", *sections] if sections else []


def _against(index: int, case: dict[str, Any], plots: _Plots) -> str:
    against = case["against"] if isinstance(case["against"], dict) else {}
    head = (f"<h3 id=\"against-{index}\">{escape(_text(case.get('case')))}</h3>"
            f"<p class=\"small\">your capture <code>{escape(_text(against.get('capture')))}</code></p>")
    comparison = _comparison(against.get("comparison"))
    if comparison is None:
        why = escape(_text(against.get("error") or "not listed"))  # reproduce says why it could not compare
        return head + f"<p class=\"small\">comparison: {why}</p>" + _against_plots(index, against, plots)
    return (head + _comparison_table(comparison) + _comparison_notes(comparison)
            + _against_plots(index, against, plots))


def _comparison(data: Any) -> CaptureComparison | None:
    """The comparison read back; None when the document holds none or one this netrepro cannot read."""
    if not isinstance(data, dict):
        return None
    try:
        return CaptureComparison.from_dict(data)
    except (TypeError, ValueError, AttributeError):
        return None


def _comparison_table(c: CaptureComparison) -> str:
    """The rows as the text table writes them: figure, theirs, ours, difference (coloured same / differs)."""
    heads = ["", c.theirs.label, c.ours.label, f"difference ({c.ours.label} - {c.theirs.label})"]
    rows = []
    for r in c.rows:
        theirs, ours, difference = r.cells()
        kind = f" {difference}" if difference in ("same", "differs", "unknown") else ""
        rows.append(f"<tr class=\"against-row\"><td>{escape(r.name)}</td><td class=\"num\">{escape(theirs)}</td>"
                    f"<td class=\"num\">{escape(ours)}</td><td class=\"num{kind}\">{escape(difference)}</td></tr>")
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    return f"<table class=\"against\"><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _comparison_notes(c: CaptureComparison) -> str:
    lines = [f"{side.label}: {side.verdict_reason}" for side in (c.theirs, c.ours) if side.verdict_reason]
    lines += list(c.notes)
    return "<ul class=\"notes\">" + "".join(f"<li>{escape(_text(n))}</li>" for n in lines) + "</ul>" if lines else ""


def _against_plots(index: int, against: dict[str, Any], plots: _Plots) -> str:
    """The overlay plots' SVGs inline (their PNGs are for viewers outside the page)."""
    svgs = [Path(p) for p in against.get("plots") or [] if isinstance(p, str) and p.endswith(".svg")]
    figures = [plots.figure(AGAINST_PLOTS.get(p.stem, p.stem), p, f"a{index}-{p.stem}") for p in svgs]
    return f"<div class=\"plots\">{''.join(figures) or NO_PLOT}</div>"


_PROLOGUE = re.compile(r"<\?xml.*?\?>|<!DOCTYPE.*?>|<!--.*?-->|<metadata\b.*?</metadata>", re.S | re.I)
_UNSAFE = re.compile(r"<script\b.*?</script\s*>|<foreignObject\b.*?</foreignObject\s*>"
                     r"|\son\w+\s*=\s*(\"[^\"]*\"|'[^']*')", re.S | re.I)
_EXTERNAL = re.compile(r"""(\s(?:xlink:)?href\s*=\s*)(["'])(?!#|data:)[^"']*\2""", re.I)


def inline_svg(path: Path, prefix: str) -> str | None:
    """An SVG file's markup to put inline: no prologue, no scripts, no links out, and its ids
    prefixed so that several figures' clip paths and markers cannot collide on one page."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # compacted here too: a run folder written before plots.py compacted its SVGs
    text = _UNSAFE.sub("", _PROLOGUE.sub("", compact_svg(text)))
    start = text.find("<svg")
    if start < 0 or "</svg>" not in text:
        return None
    text = _EXTERNAL.sub(r'\1\2#\2', text[start:text.rfind("</svg>") + len("</svg>")])
    text = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}-\1"', text)
    text = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}-\1)", text)
    return re.sub(r'(href\s*=\s*")#(?=[^"])', rf"\1#{prefix}-", text)


def _footer(document: dict[str, Any], command: str | None) -> str:
    made_by = document.get("command") or command
    made = f"<code>{escape(_text(made_by))}</code>" if made_by else "command not recorded"
    return f"<footer>made by {made} with netrepro {escape(__version__)}</footer>"


__all__ = ["PAGE_LIMIT_BYTES", "inline_svg", "median_run_dir", "render_report_page", "write_report_page"]
