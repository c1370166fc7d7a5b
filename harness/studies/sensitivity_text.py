"""What a sensitivity study says (harness.studies.sensitivity): a table per varied input, what was not varied
and why, and what each case hangs on."""

from __future__ import annotations

from typing import Any

from harness.studies.claims import percent

ENDS = ("low", "high")


# ------------------------------------------------------------------ what it says


def moved(entry: dict[str, Any], band: float) -> str | None:
    """How an input moved a case beyond the band: the larger end's delta, or the ends that gave no figure."""
    if entry["baseline_mbps"] is None:
        return None
    deltas = [entry[end]["delta_pct"] for end in ENDS if entry[end]["delta_pct"] is not None]
    failed = [end for end in ENDS if entry[end]["median_mbps"] is None]
    parts = []
    largest = max(deltas, key=abs, default=None)
    if largest is not None and abs(largest) > band * 100 + 1e-9:
        parts.append(f"{largest:+.1f} %")
    if failed:
        parts.append(f"no figure at the {' and '.join(failed)} end{'s' if len(failed) > 1 else ''}")
    return ", ".join(parts) or None


def hangs_on(found: dict[str, Any], order: list[str]) -> list[dict[str, Any]]:
    """Per case (the reproduction's order): the inputs that moved it beyond the band, and whether any was varied."""
    rows: dict[str, dict[str, Any]] = {case: {"case": case, "varied": False, "inputs": []} for case in order}
    for item in found["inputs"]:
        for entry in item["cases"]:
            row = rows[entry["case"]]
            row["varied"], row["baseline_mbps"] = True, entry["baseline_mbps"]
            how = moved(entry, found["band"])
            if how:
                row["inputs"].append({"name": item["name"], "moved": how})
    return list(rows.values())


def format_sensitivity(found: dict[str, Any]) -> str:
    """The text: a table per varied input, what was not varied and why, and what each case hangs on."""
    runs = found["repeats"]
    lines = [f"sensitivity of {found['report']}: the cases that run with an assumed input, rerun with it at each end "
             f"of its range and every other input at its value ({runs} run{'s' if runs > 1 else ''} an end, "
             f"{found['time']} time; figures in Mbit/s; delta % against the reproduction's median of "
             f"{found.get('baseline_repeats') or '?'} runs, the baseline)"]
    for item in found["inputs"]:
        lines += ["", *input_block(item)]
    if found["not_varied"]:
        lines += ["", "not varied:", *(f"  {n['name']} ({n['sets'] or 'no sets'}): {n['why']}"
                                       for n in found["not_varied"])]
    if (found.get("jobs") or 1) > 1:
        lines += ["", f"runs: {found['jobs']} at once (device time; which shared the machine: sensitivity.json)"]
    lines += ["", f"what each case hangs on (an input whose range moved its median by more than the band, "
                  f"{percent(found['band'])}):", *(f"  {_hang_line(row, found['band'])}" for row in found["hangs_on"])]
    return "\n".join(lines)


def _value_text(value: float, unit: str | None) -> str:
    return f"{value:g} {unit}" if unit else f"{value:g}"


def input_block(item: dict[str, Any]) -> list[str]:
    """One input: its value, range and where it goes, then a row per case."""
    unit, (low, high), set_as = item["unit"], item["range"], item["set_as"]
    head = (f"{item['name']} = {_value_text(item['value'], unit)}, range {low:g}-{_value_text(high, unit)}  "
            f"[{item['sets']}: {set_as['low']} / {set_as['high']}]")
    width = max([22, *(len(c["case"]) + 1 for c in item["cases"])])
    header = (f"  {'case':<{width}} {'baseline (min-max)':>20} {'low ' + _value_text(low, unit):>22} "
              f"{'high ' + _value_text(high, unit):>22}  verdict")
    rows = [f"  {c['case']:<{width}} {_baseline_text(c):>20} {_end_text(c['low']):>22} {_end_text(c['high']):>22}  "
            f"{_verdict_text(c)}" for c in item["cases"]]
    notes = [f"  note: {item['note']}"] if item.get("note") else []
    return [head, *notes, header, *rows]


def _figure(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _baseline_text(c: dict[str, Any]) -> str:
    if c["baseline_mbps"] is None:
        return "failed"
    low, high = c["baseline_range"]
    spread = f" ({_figure(low)}-{_figure(high)})" if low is not None and high is not None else ""
    return _figure(c["baseline_mbps"]) + spread


def _end_text(end: dict[str, Any]) -> str:
    if end["is_baseline"]:
        return "= baseline"
    if end["median_mbps"] is None:
        runs = len(end["run_dirs"])
        return f"failed ({end['runs_failed']} of {runs} run{'s' if runs != 1 else ''})"
    delta = "-" if end["delta_pct"] is None else f"{end['delta_pct']:+.1f} %"
    return f"{_figure(end['median_mbps'])} ({delta})"


def _verdict_text(c: dict[str, Any]) -> str:
    """The baseline's verdict, and an end's where it differs."""
    base = c["baseline_verdict"]
    changed = [f"{end}: {c[end]['verdict'] or '-'}" for end in ENDS
               if c[end]["median_mbps"] is not None and c[end]["verdict"] != base]
    return (base or "-") + (f"; {', '.join(changed)}" if changed else "")


def _hang_line(row: dict[str, Any], band: float) -> str:
    if not row["varied"]:
        return f"{row['case']}: no assumed input it runs with was varied"
    if row["baseline_mbps"] is None:
        return f"{row['case']}: the reproduction gave no figure to compare with"
    if not row["inputs"]:
        return f"{row['case']}: no assumed input moved it by more than {percent(band)}"
    return f"{row['case']} hangs on: " + ", ".join(f"{i['name']} ({i['moved']})" for i in row["inputs"])

