"""Baselines: one run's figures kept under a name, to check later runs against.

A baseline is NAME.json in a store (``./.netrepro/baselines`` in the current directory, or
$NETREPRO_BASELINES, or a directory given): the platform, workload and effective link of the
run it was taken from, its throughput, the device's MSS and advertised window (median, max)
from the capture, and the effective lwIP options the firmware reported.

    from harness.studies.baseline import compare_to_baseline, load_baseline
    failures = compare_to_baseline(result, load_baseline("n6-after"), max_drop=0.15)
    assert not failures, "\\n".join(failures)

A run fails against a baseline when its throughput falls by more than ``max_drop`` (a
fraction), or when an exact value changes: the device's MSS, its largest advertised window,
or any option's value. A throughput that rises passes; the median window is kept for
information only (it moves with how fast the application reads).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError

BASELINES_ENV = "NETREPRO_BASELINES"
DEFAULT_STORE = Path(".netrepro") / "baselines"
MAX_DROP = 0.15
FORMAT = 1
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_WORKLOAD_KEYS = ("name", "bytes", "chunk")   # seconds and warmup may differ: throughput is a rate


def baseline_store(directory: str | Path | None = None) -> Path:
    """The store: the directory given, else $NETREPRO_BASELINES, else ./.netrepro/baselines."""
    chosen = directory or os.environ.get(BASELINES_ENV)
    return Path(chosen).expanduser() if chosen else Path.cwd() / DEFAULT_STORE


def baseline_names(store: Path) -> list[str]:
    return sorted(p.stem for p in store.glob("*.json")) if store.is_dir() else []


def snapshot(result: Any) -> dict[str, Any]:
    """What a baseline keeps of a run: a RunResult, or a result.json loaded as a dict."""
    data = result.as_dict() if is_dataclass(result) else dict(result)
    analysis = data.get("analysis") or {}
    window = analysis.get("device_window") or {}
    return _plain({
        "platform": data.get("platform"), "profile": data.get("profile"), "lwip_version": data.get("lwip_version"),
        "workload": data.get("workload"), "link": data.get("link"),
        "throughput_mbps": data.get("throughput_mbps"),
        "device_mss": analysis.get("device_mss"),
        "device_window": {"median": window.get("median"), "max": window.get("max")},
        "verdict": analysis.get("verdict"), "rtt_ms": analysis.get("rtt_ms"),
        "options": data.get("options") or {}, "run_dir": data.get("run_dir"), "started": data.get("started"),
    })


def save_baseline(result: Any, name: str, store: str | Path | None = None, link_name: str | None = None) -> Path:
    """Write the run's snapshot as the baseline NAME (replacing one of that name); returns its path."""
    _check_name(name)
    snap = snapshot(result)
    if snap["throughput_mbps"] is None:
        raise NetreproError(f"the run has no throughput to keep as baseline '{name}'", "save a run that passed")
    directory = baseline_store(store)
    directory.mkdir(parents=True, exist_ok=True)
    document = {"netrepro_baseline": FORMAT, "name": name, "saved": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "link_name": link_name, **snap}
    path = directory / f"{name}.json"
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(document, indent=2) + "\n")
    partial.replace(path)
    return path.resolve()


def load_baseline(name: str, store: str | Path | None = None) -> dict[str, Any]:
    """The baseline NAME; an unknown name is one line naming the store and the names it has."""
    directory = baseline_store(store)
    path = directory / f"{name}.json"
    if not _NAME.fullmatch(name) or not path.is_file():
        known = baseline_names(directory)
        raise NetreproError(f"no baseline '{name}' in {directory}",
                            f"known: {', '.join(known)}" if known else
                            "none saved there yet: save one with `netrepro run ... --save-baseline NAME`")
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise NetreproError(f"baseline {path} is not readable JSON ({exc})", "save it again") from None
    if not isinstance(document, dict) or document.get("netrepro_baseline") != FORMAT:
        raise NetreproError(f"{path} is not a netrepro baseline (format {FORMAT})", "save it again")
    document["path"] = str(path.resolve())
    return document


def setup_differences(baseline: Mapping[str, Any], platform: str | None, workload: Mapping[str, Any] | None,
                      link: Mapping[str, Any] | None) -> list[str]:
    """Why a run is not comparable with the baseline: another platform, workload or effective link."""
    out = []
    if platform != baseline.get("platform"):
        out.append(f"platform {platform}, baseline {baseline.get('platform')}")
    base_work, work = baseline.get("workload") or {}, _plain(workload or {})
    for key in _WORKLOAD_KEYS:
        if work.get(key) != base_work.get(key):
            out.append(f"workload {key} {work.get(key)}, baseline {base_work.get(key)}")
    here, there = _flatten(_plain(link or {})), _flatten(baseline.get("link") or {})
    for key in [*here, *(k for k in there if k not in here)]:
        if here.get(key) != there.get(key):
            out.append(f"link {key} {here.get(key)}, baseline {there.get(key)}")
    return out


def compare_to_baseline(result: Any, baseline: Mapping[str, Any], max_drop: float = MAX_DROP) -> list[str]:
    """One line per failure (empty: the run matches): setup, throughput drop, MSS, max window, options."""
    if not 0 <= max_drop < 1:
        raise NetreproError(f"bad max drop {max_drop}", "give a fraction from 0 to below 1, e.g. 0.15")
    now = snapshot(result)
    failures = setup_differences(baseline, now["platform"], now["workload"], now["link"])
    failures += _throughput(now, baseline, max_drop)
    if now["device_mss"] != baseline.get("device_mss"):
        failures.append(f"device MSS {_v(now['device_mss'])}, baseline {_v(baseline.get('device_mss'))}")
    new_max, old_max = now["device_window"]["max"], (baseline.get("device_window") or {}).get("max")
    if new_max != old_max:
        failures.append(f"device window (max advertised) {_v(new_max)} B, baseline {_v(old_max)} B")
    options, base_options = now["options"], baseline.get("options") or {}
    for name in [*options, *(n for n in base_options if n not in options)]:
        if options.get(name) != base_options.get(name):
            failures.append(f"option {name} {_v(options.get(name))}, baseline {_v(base_options.get(name))}")
    return failures


def parse_fraction(text: str) -> float:
    """--max-drop: ``0.15`` or ``15%``."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise NetreproError(f"bad max drop {text!r}", "give a fraction like 0.15 or a percentage like 15%") from None
    if not 0 <= value < 1:
        raise NetreproError(f"bad max drop {text!r}", "give a fraction from 0 to below 1, e.g. 0.15")
    return value


def _throughput(now: Mapping[str, Any], baseline: Mapping[str, Any], max_drop: float) -> list[str]:
    new, old = now["throughput_mbps"], baseline.get("throughput_mbps")
    pairs = ([(f"{k} ", new.get(k), v) for k, v in old.items()] if isinstance(old, dict) and isinstance(new, dict)
             else [("", new, old)])
    out = []
    verdict = now.get("verdict")
    why = f"; verdict {verdict}, baseline {baseline.get('verdict')}" if verdict != baseline.get("verdict") else ""
    for direction, value, base in pairs:
        if not isinstance(base, int | float) or base <= 0:
            continue
        if not isinstance(value, int | float):
            out.append(f"{direction}throughput unknown, baseline {base:.2f} Mbit/s")
        elif (base - value) / base > max_drop:
            out.append(f"{direction}throughput {value:.2f} Mbit/s is {(base - value) / base:.1%} below the "
                       f"baseline's {base:.2f} Mbit/s (allowed {max_drop:.0%}){why}")
    return out


def _check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise NetreproError(f"bad baseline name {name!r}", "use letters, digits, '.', '_' and '-', e.g. n6-wifi-rx")


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {prefix: value}
    out: dict[str, Any] = {}
    for key, item in value.items():
        out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    return out


def _plain(value: Any) -> Any:
    """As it reads back from JSON (tuples become lists), so a saved and a fresh value compare equal."""
    return json.loads(json.dumps(value))


def _v(value: Any) -> str:
    return "unknown" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
