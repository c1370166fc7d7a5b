"""TOML that netrepro writes into files people keep (report files, platform files), by a TOML library (tomlkit):
any text a user gives (a quote, a backslash, a newline in --source) stays valid TOML, and an edit leaves the
file's comments and layout as they were."""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomlkit


def entry_toml(array: str, entry: dict[str, Any]) -> str:
    """One [[array]] entry as TOML text, its tables inline (one line each, as the report files keep them)."""
    table = tomlkit.table()
    for key, value in entry.items():
        table[key] = _inline(value)
    aot = tomlkit.aot()
    aot.append(table)
    document = tomlkit.document()
    document[array] = aot
    return tomlkit.dumps(document).strip("\n")


def record_entry(path: Path, array: str, entry_text: str, key: str = "name") -> None:
    """Put an [[array]] entry (entry_toml's text) in the file: in place of the entry with the same `key`, its
    comments and blank lines around it kept; else at the file's end. The rest of the file is left as it is."""
    entry = tomllib.loads(entry_text)[array][0]
    text = path.read_text(encoding="utf-8")
    document = tomlkit.parse(text)
    same = [t for t in document.get(array, []) if t.get(key) == entry[key]]
    if same:
        for old in list(same[0]):
            del same[0][old]
        for name, value in entry.items():
            same[0][name] = _inline(value)
        text = tomlkit.dumps(document)
    else:  # at the end, not after the array's last entry, where a comment may be the next table's
        text = text.rstrip("\n") + "\n\n" + entry_text + "\n"
    path.write_text(text, encoding="utf-8")


def record_value(path: Path, keys: Sequence[str], value: Any, comment: str) -> None:
    """Set the value at keys (e.g. links, wifi, rtt) with a comment after it; the rest of the file as it is."""
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    table = document
    for key in keys[:-1]:
        table = table[key]
    item = tomlkit.item(value)
    item.comment(comment)
    item.trivia.comment_ws = "   "
    table[keys[-1]] = item
    path.write_text(tomlkit.dumps(document), encoding="utf-8")


def plain_number(value: float) -> int | float:
    """A whole number as one (40, not 40.0), as the files people keep write it."""
    return int(value) if value == int(value) else value


def _inline(value: Any) -> Any:
    if isinstance(value, dict):
        table = tomlkit.inline_table()
        table.update({k: _inline(v) for k, v in value.items()})
        return table
    return value
