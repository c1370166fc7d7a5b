"""lwIP option profiles: a named header in firmware/profiles/, or a user's own lwipopts.h.

A profile header is included before the firmware's base options, so whatever it sets wins
and whatever it leaves out stays at lwIP's default (opt.h). `--set NAME=VALUE` overrides
are written to a small header included after the profile.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.core.errors import NetreproError
from harness.rig.platform import PROJECT_ROOT, Platform

PROFILES_DIR = PROJECT_ROOT / "firmware" / "profiles"
_NOT_PROFILES = {"base"}
_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


@dataclass(frozen=True)
class Profile:
    """The lwIP options a build uses: a header, its include dirs and any overrides."""

    name: str
    header: Path
    include_dirs: tuple[Path, ...] = ()
    overrides: tuple[tuple[str, str], ...] = field(default=())

    def overlay(self) -> str:
        """The header text that applies the overrides after the profile."""
        lines = ["/* netrepro --set overrides, applied after the profile */"]
        for name, value in self.overrides:
            lines += [f"#undef {name}", f"#define {name} {value}"]
        return "\n".join(lines) + "\n"


def profile_names() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.h") if p.stem not in _NOT_PROFILES)


def resolve_profile(platform: Platform, spec: str | None, include_dirs: list[str] | None = None,
                    overrides: list[str] | None = None, lwip_tree: Path | None = None) -> Profile:
    """Turn `--lwip NAME_OR_PATH`, `-I DIR` and `--set NAME=VALUE` into a Profile."""
    spec = spec or platform.default_profile
    dirs = tuple(_include_dir(d) for d in include_dirs or [])
    pairs = tuple(_parse_override(item, lwip_tree) for item in overrides or [])
    if "/" in spec or spec.endswith(".h"):
        header = Path(spec).expanduser().resolve()
        if not header.is_file():
            raise NetreproError(f"lwIP options file {spec} does not exist", "give the path of your lwipopts.h")
        return Profile(header.stem if header.name != "lwipopts.h" else header.parent.name or "lwipopts",
                       header, (header.parent, *dirs), pairs)
    header = PROFILES_DIR / f"{spec}.h"
    if spec in _NOT_PROFILES or not header.is_file():
        raise NetreproError(f"unknown lwIP profile '{spec}'",
                            f"use one of: {', '.join(profile_names())}, or the path of a lwipopts.h")
    return Profile(spec, header, dirs, pairs)


def known_options(lwip_tree: Path) -> set[str]:
    """Every option lwIP's opt.h (and the headers it documents options in) defines."""
    names: set[str] = set()
    for header in (lwip_tree / "src" / "include" / "lwip").glob("*opt*.h"):
        names.update(re.findall(r"^\s*#\s*define\s+([A-Z][A-Z0-9_]*)", header.read_text(errors="replace"), re.M))
    return names


def _parse_override(item: str, lwip_tree: Path | None) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not _NAME.fullmatch(name) or not value:
        raise NetreproError(f"bad lwIP option setting '{item}'", "write it as NAME=VALUE, e.g. TCP_WND=32*TCP_MSS")
    if lwip_tree is not None:
        known = known_options(lwip_tree)
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"did you mean {close[0]}?" if close else "see lwIP's src/include/lwip/opt.h"
            raise NetreproError(f"unknown lwIP option {name}", hint)
    return name, f"({value})"


def _include_dir(path: str) -> Path:
    directory = Path(path).expanduser().resolve()
    if not directory.is_dir():
        raise NetreproError(f"include directory {path} does not exist", "give a directory your lwipopts.h needs")
    return directory
