"""The report file's format: one JSON Schema, built here from the facts it names (the workloads, the verdicts,
the claims, the link's settings) and published as reports/report.schema.json for editors' TOML tooling.

`netrepro report check` and the loader validate every report file against it; what a schema cannot say
(a platform that exists, a link preset the platform or the report defines, a file a path names, a claim's
case that is in the report) is checked beside it in harness/studies/report_check.py. Every key carries its
description: docs/writing-a-report.md describes the same keys for a reader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.analysis import VERDICTS
from harness.rig.platform import PROJECT_ROOT
from harness.rig.workload import WORKLOADS

SCHEMA_PATH = PROJECT_ROOT / "reports" / "report.schema.json"
SCHEMA_ID = "https://netrepro.invalid/report.schema.json"  # an identifier, never fetched
# What an [[inputs]] entry gives besides name and value, by where the value came from.
PROVENANCE: dict[str, tuple[str, ...]] = {
    "report": ("source",),
    "assumed": ("why", "range"),
    "fitted": ("from", "cases"),
    "capture": ("capture", "sha256", "frames"),
    # picked to produce a mechanism the report implies (neither measured nor a neutral guess): the figures of
    # its cases hang on it, so they show the choice worked rather than test the model
    "chosen": ("why", "cases"),
}
# What a provenance may give besides what it must.
PROVENANCE_OPTIONAL: dict[str, tuple[str, ...]] = {"chosen": ("range",)}
# What [cpu] may say of its value's origin (fitted needs cases, which a part's speed is never fitted to here).
CPU_PROVENANCE = ("report", "assumed", "capture")
FIRMWARE_KEYS = ("include", "stub_headers", "sources", "lwip_tree")

_TEXT = {"type": "string"}
_NAME = {"type": "string", "minLength": 1}
_POSITIVE = {"type": "number", "exclusiveMinimum": 0}
_FRACTION = {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}
_WHOLE = {"type": "integer", "minimum": 1}
_RANGE = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2,
          "description": "[low, high]: the value's plausible span"}


def _with(base: dict[str, Any], description: str) -> dict[str, Any]:
    return {**base, "description": description}


def _table(properties: dict[str, Any], required: tuple[str, ...] = (), description: str = "") -> dict[str, Any]:
    table: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        table["required"] = list(required)
    if description:
        table["description"] = description
    return table


def _firmware_keys(where: str) -> dict[str, Any]:
    """The keys that build a profile given as the path of a lwipopts.h, as `run --lwip FILE` builds it."""
    paths = {"type": "array", "items": _NAME}
    return {
        "include": _with(paths, f"include folders the lwipopts.h needs ({where}; `run -I DIR`), relative to "
                                "the report file"),
        "stub_headers": _with(paths, f"headers the lwipopts.h includes that are stood in by empty ones ({where}; "
                                     "`run --stub-header NAME`), named as the #include writes them"),
        "sources": _with(paths, f"C files of the port to build into the firmware ({where}; `run --source "
                                "FILE.c`), relative to the report file"),
        "lwip_tree": _with(_NAME, f"the lwIP source tree to build ({where}; `run --lwip-tree DIR`), relative to "
                                  "the report file; default: Debian's lwIP 2.1.3"),
    }


def _claim() -> dict[str, Any]:
    other = {"case": _with(_NAME, "another case of this report")}
    factor = _table({**other, "factor": _POSITIVE}, ("case", "factor"))
    within = _table({**other, "within": _FRACTION}, ("case", "within"))
    return _table({
        "verdict": {"enum": list(VERDICTS), "description": "the capture's bottleneck verdict (median run)"},
        "window": _with(_WHOLE, "the window the device advertised with nothing unread (exact, bytes)"),
        "mss": _with(_WHOLE, "the MSS the device advertised in its SYN (exact, bytes)"),
        "window_scaling": {"type": "boolean", "description": "whether the window-scale option was negotiated"},
        "by_construction": _with(_NAME, "why the whole claim holds by construction (e.g. the two profiles differ "
                                        "only in an option the workload does not use): shown, not counted"),
        "faster_than": _with(factor, "median >= factor x that case's median"),
        "slower_than": _with(factor, "median <= factor x that case's median"),
        "close_to": _with(within, "|median - that case's| <= within x that case's median"),
        "at_least_mbps": _with(_POSITIVE, "median >= this many Mbit/s"),
        "link_limited_or_within": _with(_FRACTION, "verdict link-limited, or median within this of the link rate"),
        "within_of_report": _with(_FRACTION, "|median - report| <= this fraction of the report's figure"),
        "ratio_to": _with(within, "median / that case's median within `within` of the report's own ratio"),
    }, description="what the case's runs must show (mechanisms), each checked against the capture or other cases")


def _capture() -> dict[str, Any]:
    return _table({
        "file": _with(_NAME, "the capture (pcap or pcapng) of the real board's transfer, relative to the report"),
        "sha256": _with({"type": "string", "pattern": "^[0-9a-f]{64}$"}, "the file's SHA-256, checked on load"),
        "device": _with(_NAME, "the device's address in that capture (default: the side with the smaller window)"),
        "stream": _with({"type": "integer", "minimum": 0}, "the TCP stream of the transfer (tshark's tcp.stream)"),
    }, ("file",), "the user's own capture of this case: reproduce shows its facts beside the emulated run's")


def _case() -> dict[str, Any]:
    figure = {"oneOf": [_POSITIVE, {"type": "array", "items": _POSITIVE, "minItems": 2, "maxItems": 2}]}
    return _table({
        "case": _with(_NAME, "the case's name, unique in the report"),
        "profile": _with(_NAME, "a shipped profile's name (firmware/profiles/) or the path of a lwipopts.h, "
                                "relative to the report file"),
        "link": _with(_NAME, "a link preset of the platform, or of this report's [links]"),
        "workload": {"enum": list(WORKLOADS), "description": "what the board and the peer run"},
        "report_mbps": _with(figure, "the report's figure in Mbit/s, or its range [low, high]"),
        "report_value": _with(_POSITIVE, "the report's figure in the report's own unit (needs unit, unit_bytes)"),
        "figure_of": _with(_NAME, "an earlier case that measures the same report figure (e.g. under another "
                                  "link setting): the figure is counted once"),
        "source": _with(_TEXT, "where the report gives this case's figure"),
        "claim": _claim(),
        "seconds": _with(_POSITIVE, "seconds of the board's time a run measures (default: the report's)"),
        "platform": _with(_NAME, "this case's board, when not the report's"),
        "note": _TEXT,
        "chunk": _with(_WHOLE, "bytes a write or read of the socket workloads (default: the report's)"),
        "bytes": _with(_WHOLE, "bytes the discard workload sends"),
        "direction": {"enum": ["rx", "tx"], "description": "rr and duplex: which direction's figure this case is"},
        "warmup": _with({"type": "number", "minimum": 0}, "seconds of unmeasured transfer first"),
        "rx_overflow": {"enum": ["hold", "drop"], "description": "a frame the NIC cannot take: held or dropped"},
        "peer_quickack": _PEER_QUICKACK,
        "capture": _capture(),
        **_firmware_keys("this case"),
    }, ("case", "profile", "link", "workload"), "one measurement of the report, as netrepro runs it")


def _input() -> dict[str, Any]:
    keys = {key for needed in PROVENANCE.values() for key in needed}
    properties: dict[str, Any] = {
        "name": _NAME,
        "value": {"type": ["number", "string", "boolean"], "description": "the value the model was given"},
        "unit": _TEXT,
        "provenance": {"enum": list(PROVENANCE), "description": "where the value came from"},
        "sets": _with(_TEXT, "where netrepro uses it, as FILE: KEY (e.g. platforms/openmv-n6.toml: links.wifi.rtt, "
                             "or report: links.capture.rtt for this report's own keys)"),
        "calibrated": {"type": "object", "description": "what a calibration produced from the value"},
        "source": _with(_TEXT, "report: where in the report the value is given"),
        "why": _with(_NAME, "assumed: why this value; chosen: the mechanism the report implies that it produces"),
        "range": _RANGE,
        "from": _with(_NAME, "fitted: the report figure it was derived from"),
        "cases": _with({"type": "array", "items": _NAME, "minItems": 1},
                       "fitted: the cases it was fitted to; chosen: the cases whose figures hang on it"),
        "capture": _with(_NAME, "capture: the capture's file name"),
        "sha256": _with({"type": "string", "pattern": "^[0-9a-f]{64}$"}, "capture: the capture's SHA-256"),
        "frames": _with(_NAME, "capture: the frames the value was measured on (e.g. 1-4500 of stream 0)"),
    }
    rules = [{"if": {"properties": {"provenance": {"const": kind}}, "required": ["provenance"]},
              "then": {"required": list(needed),
                       "properties": {key: False for key in sorted(keys - set(provenance_keys(kind)))}}}
             for kind, needed in PROVENANCE.items()]
    table = _table(properties, ("name", "value", "provenance"),
                   "one value the model was given apart from the figures it predicts, and where it came from")
    table["allOf"] = rules
    return table


def provenance_keys(kind: str) -> tuple[str, ...]:
    """The keys an input of this provenance may give: what it must, then what it may."""
    return PROVENANCE.get(kind, ()) + PROVENANCE_OPTIONAL.get(kind, ())


def _cpu() -> dict[str, Any]:
    table = _table({
        "part": _with(_NAME, "the real part, e.g. STM32F767 (Cortex-M7)"),
        "clock_mhz": _with(_POSITIVE, "the part's core clock"),
        "ipc": _with(_POSITIVE, "instructions per cycle assumed for network code"),
        "mips": _with(_POSITIVE, "or the part's instruction rate directly (million instructions a second)"),
        "provenance": {"enum": list(CPU_PROVENANCE), "description": "where the speed came from"},
        "source": _TEXT, "why": _NAME, "range": _with(_RANGE, "assumed: the plausible span of the MIPS"),
        "capture": _NAME, "sha256": {"type": "string"}, "frames": _NAME,
    }, ("part", "provenance"), "the user's part modelled on the platform's core: device time runs the core at "
                               "clock_mhz x ipc (or mips) million instructions a second, as `run --mips` does")
    table["oneOf"] = [{"required": ["clock_mhz", "ipc"], "not": {"required": ["mips"]}},
                      {"required": ["mips"], "not": {"anyOf": [{"required": ["clock_mhz"]}, {"required": ["ipc"]}]}}]
    return table


_PEER_QUICKACK = {"type": "boolean", "description": "the report's peer ACKed every segment: the Linux peer's route to "
                  "the board gets quickack (default false: Linux's delayed ACKs)"}


def report_schema() -> dict[str, Any]:
    """The report file's format as a JSON Schema (draft 2020-12)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "netrepro report",
        "description": "A network-performance report netrepro reproduces: the board, the cases, the report's "
                       "figures and claims, and every input the model was given with its provenance.",
        **_table({
            "report": _with(_NAME, "the report's name (default: the file's name without .toml)"),
            "title": _TEXT,
            "platform": _with(_NAME, "the board: a platform name (netrepro platforms) or the path of a platform "
                                     "file"),
            "source": _with(_TEXT, "the public source of the report's figures"),
            "note": _TEXT,
            "seconds": _with(_POSITIVE, "seconds of the board's time a run measures (default 10)"),
            "repeats": _with(_WHOLE, "runs a case (default 3)"),
            "chunk": _with(_WHOLE, "bytes a write or read of the socket workloads (default 1460)"),
            "warmup": _with({"type": "number", "minimum": 0}, "seconds of unmeasured transfer first"),
            "band": _with(_FRACTION, "how far from the report's figure a median may be and still agree "
                                     "(default 0.15)"),
            "peer_quickack": _PEER_QUICKACK,
            "unit": _with(_NAME, "the unit of the report's figures when not Mbit/s, e.g. KB/s"),
            "unit_bytes": _with(_WHOLE, "bytes in the unit's K (1000 or 1024)"),
            "cpu": _cpu(),
            "links": {"type": "object", "description": "link presets of this report, beside (or over) the "
                                                       "platform's: each a table as in a platform file's [links]",
                      "additionalProperties": {"type": "object"}},
            "inputs": {"type": "array", "items": _input()},
            "cases": {"type": "array", "items": _case(), "minItems": 1},
            **_firmware_keys("every case"),
        }, ("platform", "cases")),
    }


def schema_text() -> str:
    """The schema as the published file holds it."""
    return json.dumps(report_schema(), indent=2) + "\n"


def write_schema(path: Path = SCHEMA_PATH) -> Path:
    path.write_text(schema_text())
    return path
