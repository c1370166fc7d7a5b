"""The data a plain (non-editable) install carries, found by walking the checkout.

pyproject.toml holds the project's metadata; only data_files is computed here, because
setuptools' [tool.setuptools.data-files] puts every file a glob matches into one target
folder, while the harness needs platforms/, reports/ and firmware/ with their folder
structure (harness/core/paths.py finds them under <prefix>/share/netrepro). A new board,
NIC or arch folder is carried without touching this file.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).resolve().parent
DATA_DIRS = ("platforms", "reports", "firmware")
TARGET = Path("share") / "netrepro"
_SKIPPED_PARTS = {"__pycache__", ".pytest_cache", ".ruff_cache"}
_SKIPPED_SUFFIXES = {".pyc", ".o", ".d", ".elf"}


def _carried(path: Path) -> bool:
    parts = path.relative_to(ROOT).parts
    return (path.is_file() and not any(p.startswith(".") or p in _SKIPPED_PARTS for p in parts)
            and path.suffix not in _SKIPPED_SUFFIXES)


def data_files() -> list[tuple[str, list[str]]]:
    """(target folder, [files]) for every folder under DATA_DIRS, paths relative to the checkout."""
    groups: dict[str, list[str]] = {}
    for top in DATA_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if _carried(path):
                relative = path.relative_to(ROOT)
                groups.setdefault(str(TARGET / relative.parent), []).append(str(relative))
    return sorted(groups.items())


setup(data_files=data_files())
