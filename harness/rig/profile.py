"""lwIP option profiles: a named header in firmware/profiles/, or a user's own lwipopts.h.

A profile header is included before the firmware's base options, so whatever it sets wins
and whatever it leaves out stays at lwIP's default (opt.h). `--set NAME=VALUE` overrides
are written to a small header included after the profile.

A port's own lwipopts.h is taken as it is: the headers it includes come from `-I DIR` or are
stood in by empty ones (`--stub-header NAME`), C files it needs come with `--source FILE.c`,
and what the preprocessor made of it (`option_macros`) tells the build which options it sets
that this lwIP does not know (`unknown_options`) and which port functions its macros call.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from harness.core.errors import NetreproError
from harness.rig.platform import PROJECT_ROOT, Platform

PROFILES_DIR = PROJECT_ROOT / "firmware" / "profiles"
_NOT_PROFILES = {"base"}
_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
# The option headers lwIP documents its options in: the core's, its apps' and PPP's.
_OPTION_HEADERS = ("include/lwip/*opt*.h", "include/lwip/apps/*_opts.h", "include/netif/ppp/ppp_opts.h")
# Option-name prefixes too generic to say a name is meant as an lwIP option.
_GENERIC_PREFIXES = {"NO", "DEFAULT", "API", "LINK", "INET", "SO"}
# The firmware's own test-only options (e.g. NR_TEST_LEAK_PBUF, a deliberate leak for the leak
# check's test): `--set` takes a name the firmware's sources read as it takes lwIP's options.
_FIRMWARE_TEST_OPTION = re.compile(r"\bNR_TEST_[A-Z0-9_]+\b")
# The firmware's own options for users (NR_APP_API, NR_NIC_RX_THREAD, ...): those whose default
# profiles/base.h gives, where each is documented.
_FIRMWARE_OPTION_DEFAULT = re.compile(r"^\s*#\s*ifndef\s+(NR_[A-Z0-9_]+)\s*$", re.M)


@dataclass(frozen=True)
class Profile:
    """The lwIP options a build uses: a header, its include dirs, overrides, and a port's extras."""

    name: str
    header: Path
    include_dirs: tuple[Path, ...] = ()
    overrides: tuple[tuple[str, str], ...] = field(default=())
    sources: tuple[Path, ...] = ()        # --source: the port's C files, built into the firmware
    stub_headers: tuple[str, ...] = ()    # --stub-header: headers stood in by empty ones

    def overlay(self) -> str:
        """The header text that applies the overrides after the profile."""
        lines = ["/* netrepro --set overrides, applied after the profile */"]
        for name, value in self.overrides:
            lines += [f"#undef {name}", f"#define {name} {value}"]
        return "\n".join(lines) + "\n"

    def input_files(self) -> list[Path]:
        """Every file of the user's a build reads: the header, the sources and what they include."""
        files = {self.header, *self.sources}
        files.update(f for d in self.include_dirs for f in d.glob("*.h"))
        for start in (self.header, *self.sources):
            files.update(included_files(start, self.include_dirs))
        return sorted(files)


@dataclass(frozen=True)
class Macro:
    """One macro as the preprocessor left it, and the file and line that defined it."""

    name: str
    params: str | None  # "(lev)" for a function-like macro
    body: str
    file: str
    line: int

    @property
    def signature(self) -> str:
        return self.name + (self.params or "")

    @property
    def where(self) -> str:
        return f"{Path(self.file).name}:{self.line}"


def profile_names() -> list[str]:
    return sorted(p.stem for p in PROFILES_DIR.glob("*.h") if p.stem not in _NOT_PROFILES)


def resolve_profile(platform: Platform, spec: str | None, include_dirs: list[str] | None = None,
                    overrides: list[str] | None = None, lwip_tree: Path | None = None,
                    sources: list[str] | None = None, stub_headers: list[str] | None = None) -> Profile:
    """Turn `--lwip NAME_OR_PATH`, `-I DIR`, `--set NAME=VALUE`, `--source FILE.c` and
    `--stub-header NAME` into a Profile."""
    spec = spec or platform.default_profile
    dirs = tuple(_include_dir(d) for d in include_dirs or [])
    pairs = tuple(_parse_override(item, lwip_tree) for item in overrides or [])
    extras = {"sources": tuple(_source(s) for s in sources or []),
              "stub_headers": tuple(dict.fromkeys(_stub_name(h) for h in stub_headers or []))}
    if "/" in spec or spec.endswith(".h"):
        header = Path(spec).expanduser().resolve()
        if not header.is_file():
            raise NetreproError(f"lwIP options file {spec} does not exist", "give the path of your lwipopts.h")
        return Profile(header.stem if header.name != "lwipopts.h" else header.parent.name or "lwipopts",
                       header, (header.parent, *dirs), pairs, **extras)
    header = PROFILES_DIR / f"{spec}.h"
    if spec in _NOT_PROFILES or not header.is_file():
        raise NetreproError(f"unknown lwIP profile '{spec}'",
                            f"use one of: {', '.join(profile_names())}, or the path of a lwipopts.h")
    return Profile(spec, header, dirs, pairs, **extras)


def known_options(lwip_tree: Path) -> set[str]:
    """Every option lwIP's option headers (opt.h, its apps' *_opts.h, ppp_opts.h) define."""
    names: set[str] = set()
    for pattern in _OPTION_HEADERS:
        for header in (lwip_tree / "src").glob(pattern):
            names.update(re.findall(r"^\s*#\s*define\s+([A-Z][A-Z0-9_]*)", header.read_text(errors="replace"),
                                    re.M))
    return names


@functools.lru_cache(maxsize=1)
def firmware_options() -> frozenset[str]:
    """netrepro's own options `--set` takes beside lwIP's: those profiles/base.h documents with a default
    (NR_APP_API, NR_NIC_RX_THREAD, ...) and the test-only ones the C sources read (NR_TEST_*, never set
    by a real build)."""
    documented = _FIRMWARE_OPTION_DEFAULT.findall((PROFILES_DIR / "base.h").read_text(errors="replace"))
    tests = (name for path in PROFILES_DIR.parent.rglob("*.[ch]")
             for name in _FIRMWARE_TEST_OPTION.findall(path.read_text(errors="replace")))
    return frozenset([*documented, *tests])


@functools.lru_cache(maxsize=4)
def lwip_identifiers(lwip_tree: Path) -> frozenset[str]:
    """Every identifier lwIP's sources mention: a name outside it is one this lwIP never reads."""
    names: set[str] = set()
    for path in (lwip_tree / "src").rglob("*"):
        if path.suffix in (".c", ".h") and path.is_file():
            names.update(_IDENTIFIER.findall(path.read_text(errors="replace")))
    return frozenset(names)


def unknown_options(macros: dict[str, Macro], lwip_tree: Path) -> list[Macro]:
    """The macros the options file sets that look like lwIP options but this lwIP never reads
    (options of a newer or older release): named like lwIP's own options, mentioned nowhere in it."""
    prefixes = {n.split("_")[0] for n in known_options(lwip_tree)} - _GENERIC_PREFIXES
    known = lwip_identifiers(lwip_tree)
    return [m for m in macros.values() if m.name.split("_")[0] in prefixes and m.name not in known]


def parse_macro_dump(text: str) -> dict[str, Macro]:
    """The macros in `cc -E -dD` output that are in force at its end, each with the file and line
    that defined it (line markers say where the preprocessor is; #undef removes a macro)."""
    macros: dict[str, Macro] = {}
    where, line = "", 0
    for raw in text.splitlines():
        marker = re.match(r'#\s+(\d+)\s+"((?:[^"\\]|\\.)*)"(.*)$', raw)
        if marker:
            where, line = marker.group(2), int(marker.group(1))
            continue
        define = re.match(r"#define\s+([A-Za-z_]\w*)(\([^)]*\))?\s?(.*)$", raw)
        if define:
            name, params, body = define.groups()
            macros[name] = Macro(name, params, body.strip(), where, line)
        elif undef := re.match(r"#undef\s+([A-Za-z_]\w*)", raw):
            macros.pop(undef.group(1), None)
        line += 1
    return macros


def user_macros(macros: dict[str, Macro], profile: Profile, ignored_dirs: tuple[Path, ...]) -> dict[str, Macro]:
    """The macros the options file and its own headers define: not the compiler's, not a system
    header's, not lwIP's and not a stood-in header's (those are in ignored_dirs)."""
    def own(macro: Macro) -> bool:
        if macro.file.startswith("<"):
            return False
        path = Path(macro.file)
        return path == profile.header or (
            not any(path.is_relative_to(d) for d in ignored_dirs)
            and any(path.is_relative_to(d) for d in (profile.header.parent, *profile.include_dirs)))
    return {name: m for name, m in macros.items() if own(m)}


def macros_calling(symbol: str, macros: dict[str, Macro]) -> list[Macro]:
    """The macros whose expansion names symbol, directly or through other macros (outermost first)."""
    direct = [m for m in macros.values() if symbol in _IDENTIFIER.findall(m.body)]
    callers = [c for m in direct for c in macros.values()
               if c.name != m.name and m.name in _IDENTIFIER.findall(c.body)]
    return callers + direct


def included_files(start: Path, dirs: tuple[Path, ...]) -> set[Path]:
    """The files start includes, transitively, that are found beside it or in dirs (a cheap
    overestimate of the preprocessor's: conditional includes count too)."""
    found: set[Path] = set()
    pending = [start]
    while pending:
        current = pending.pop()
        for name in _INCLUDE.findall(current.read_text(errors="replace")):
            for directory in (current.parent, *dirs):
                candidate = (directory / name).resolve()
                if candidate.is_file() and candidate not in found:
                    found.add(candidate)
                    pending.append(candidate)
                    break
    return found


def _parse_override(item: str, lwip_tree: Path | None) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not _NAME.fullmatch(name) or not value:
        raise NetreproError(f"bad lwIP option setting '{item}'", "write it as NAME=VALUE, e.g. TCP_WND=32*TCP_MSS")
    if lwip_tree is not None:
        known = known_options(lwip_tree) | firmware_options()
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = (f"did you mean {close[0]}?" if close else
                    "see lwIP's src/include/lwip/opt.h, or firmware/profiles/base.h for netrepro's own NR_ options")
            raise NetreproError(f"unknown lwIP option {name}", hint)
    return name, f"({value})"


def _include_dir(path: str) -> Path:
    directory = Path(path).expanduser().resolve()
    if not directory.is_dir():
        raise NetreproError(f"include directory {path} does not exist", "give a directory your lwipopts.h needs")
    return directory


def _source(path: str) -> Path:
    source = Path(path).expanduser().resolve()
    if source.suffix != ".c" or not source.is_file():
        raise NetreproError(f"--source {path} is not a C file", "give the path of a .c file your port needs")
    return source


def _stub_name(name: str) -> str:
    """A header name as an #include writes it (py/mpconfig.h), kept inside the stub folder."""
    clean = PurePosixPath(name.strip())
    if not clean.parts or clean.is_absolute() or ".." in clean.parts or not clean.suffix:
        raise NetreproError(f"--stub-header '{name}' is not a header name",
                            "give it as the #include writes it, e.g. --stub-header py/mpconfig.h")
    return str(clean)
