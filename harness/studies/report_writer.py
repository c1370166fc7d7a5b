"""Writing a report file: `netrepro report new` (from a few facts) and `netrepro report from-capture` (from a real
board's capture) both describe a draft here, and `render` writes it as commented TOML that the loader reads back.

Values are written by one small emitter (`toml_value`): strings and keys as the TOML library (tomlkit) writes
them, so any text a user gives (a quote in a source, a backslash in a path, a newline) stays valid TOML; numbers
rounded as the report files keep them, booleans, arrays and inline tables.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit

from harness.core.errors import NetreproError


def toml_value(value: Any) -> str:
    """One value as TOML writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} has no TOML form here")
        return repr(round(value, 6)) if value != int(value) or abs(value) >= 1e15 else f"{value:.1f}"
    if isinstance(value, str):
        return tomlkit.item(value).as_string()
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def toml_key(key: str) -> str:
    return tomlkit.key(key).as_string()


@dataclass
class Entry:
    """One key = value line, with the comment that says where the value came from."""

    key: str
    value: Any
    comment: str = ""

    def line(self) -> str:
        text = f"{toml_key(self.key)} = {toml_value(self.value)}"
        return f"{text}  # {self.comment}" if self.comment else text


@dataclass
class Table:
    """A [table] or an [[array]] entry: a comment above, its lines."""

    header: str            # "cpu", "links.capture", "[inputs]" for an array of tables
    entries: list[Entry] = field(default_factory=list)
    comment: str = ""

    def lines(self) -> list[str]:
        above = [f"# {line}" if line else "#" for line in self.comment.splitlines()]
        return [*above, f"[{self.header}]", *(e.line() for e in self.entries)]


@dataclass
class Draft:
    """A report file to write: its opening comment, its top-level keys and its tables in order."""

    comment: str
    top: list[Entry]
    tables: list[Table] = field(default_factory=list)

    def render(self) -> str:
        lines = [f"# {line}" if line else "#" for line in self.comment.splitlines()]
        lines += ["", *(e.line() for e in self.top)]
        for table in self.tables:
            lines += ["", *table.lines()]
        return "\n".join(lines) + "\n"


def input_table(name: str, value: Any, provenance: str, unit: str | None = None, sets: str | None = None,
                comment: str = "", **where: Any) -> Table:
    """An [[inputs]] entry: the value, its unit, where it came from (source / why and range / capture ...)."""
    entries = [Entry("name", name), Entry("value", value)]
    entries += [Entry("unit", unit)] if unit else []
    entries.append(Entry("provenance", provenance))
    entries += [Entry(key, given, "fill in" if key == "source" and not given else "") for key, given in where.items()]
    entries += [Entry("sets", sets)] if sets else []
    return Table("[inputs]", entries, comment)


def relative_to(path: Path, folder: Path) -> str:
    """A path as the report writes it: relative to the report's folder (so the two can move together)."""
    return os.path.relpath(path.resolve(), folder.resolve())


def write_new_file(path: Path, text: str, force: bool) -> Path:
    """Write a file netrepro drafts; an existing one is kept unless `force`."""
    if path.exists() and not force:
        raise NetreproError(f"{path} exists", "give another path, or --force to replace it")
    if not path.parent.is_dir():
        raise NetreproError(f"folder {path.parent} does not exist", "create it, or give a path in an existing folder")
    try:
        path.write_text(text)
    except OSError as exc:
        raise NetreproError(f"cannot write {path} ({exc.strerror})", "give a path you can write") from None
    return path
