"""lwIP's RAM in a linked firmware: the heap, every memp pool and lwIP's other static data, in bytes.

Read from the ELF's symbol table (the toolchain's nm) and the linker's map file, which says which
object file each input section came from; lwIP's objects are the ones the Makefile builds under
obj/lwip/. Only writable data counts (.data, .bss and the .bulk region the port puts the heap and
pools in: nm's b/B/d/D symbols); lwIP's const tables (the memp descriptors) stay in flash.

    heap   ram_heap (mem.c): MEM_SIZE as lwIP places it, with its two struct mem and the alignment
           slack; 0 when lwIP has no heap of its own (MEM_LIBC_MALLOC, MEM_USE_POOLS)
    pools  per memp pool NAME: its storage memp_memory_NAME_base, its free list memp_tab_NAME and
           its statistics memp_stats_NAME (PBUF_POOL is the pool of PBUF_POOL_SIZE pbufs)
    other  every other data symbol defined in lwIP's objects (PCB lists, ARP table, lwip_stats, ...)

The total is the sum of the symbols named (`symbols`); the measure is kept with the build as
lwip_ram.json, so it is taken once per build.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError

RAM_FILE = "lwip_ram.json"
MAP_FILE = "firmware.map"
LWIP_OBJECTS = "/obj/lwip/"            # the Makefile's folder for lwIP's objects
_DATA_TYPES = set("bBdD")              # nm: bss and initialised data, local or global
_HEAP = "ram_heap"
_POOL = re.compile(r"^memp_(?:memory_(?P<storage>\w+)_base|tab_(?P<list>\w+)|stats_(?P<stats>\w+))$")
# An input section in the map: ".bss.x  0xADDR  0xSIZE /path/x.o", the name possibly on the line before.
_INPUT = re.compile(r"^ (?:\S+)?\s+0x(?P<address>[0-9a-fA-F]+)\s+0x(?P<size>[0-9a-fA-F]+)\s+(?P<object>\S.*)$")
_OUTPUT = re.compile(r"^(?P<name>\.\S+|COMMON)\b")
_UNALLOCATED = (".debug", ".comment", ".stab", ".note", ".ARM.attributes", ".gnu.attributes")


@dataclass(frozen=True)
class LwipSymbol:
    """One data symbol of lwIP's, as nm lists it, and the object file (under obj/lwip/) defining it."""

    name: str
    address: int
    size: int
    object: str


@dataclass(frozen=True)
class LwipRam:
    """lwIP's static RAM in bytes: heap + pools + other = total."""

    total: int
    heap: int
    pools: dict[str, int]
    other: int
    symbols: tuple[LwipSymbol, ...] = field(default=(), repr=False)

    def summary(self) -> dict[str, Any]:
        """What boot --json and result.json carry: {"total", "heap", "pools": {name: bytes}, "other"}."""
        return {"total": self.total, "heap": self.heap, "pools": dict(self.pools), "other": self.other}

    def as_dict(self) -> dict[str, Any]:
        """lwip_ram.json: the summary and every symbol counted."""
        return {**self.summary(), "symbols": [asdict(s) for s in self.symbols]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LwipRam:
        symbols = tuple(LwipSymbol(**s) for s in data.get("symbols", ()))
        return cls(int(data["total"]), int(data["heap"]), {k: int(v) for k, v in data["pools"].items()},
                   int(data["other"]), symbols)


def ram_line(summary: dict[str, Any]) -> str:
    """One line: "lwIP RAM 41.2 KiB: heap 16000, pools 21344 (PBUF_POOL 12288, ...), other 3120"."""
    pools = summary["pools"]
    each = ", ".join(f"{name} {size}" for name, size in pools.items())
    return (f"lwIP RAM {summary['total'] / 1024:.1f} KiB: heap {summary['heap']}, pools {sum(pools.values())}"
            f"{f' ({each})' if each else ''}, other {summary['other']}")


def cached_lwip_ram(build_dir: Path, toolchain: str) -> LwipRam:
    """The build's lwIP RAM: from lwip_ram.json, else measured now and kept there."""
    path = build_dir / RAM_FILE
    try:
        return LwipRam.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        pass  # not measured yet (a build from before lwip_ram.json), or an unreadable file: measure again
    ram = measure(build_dir / "firmware.elf", build_dir / MAP_FILE, f"{toolchain}nm")
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(ram.as_dict(), indent=2) + "\n")
    partial.replace(path)  # atomic: a parallel reader sees the whole file or none
    return ram


def measure(elf: Path, map_file: Path, nm: str = "nm") -> LwipRam:
    """lwIP's RAM in the linked ELF, its objects told apart by the map file."""
    sections = map_sections(map_file)
    placed = [(s, sections.object_at(s.address)) for s in data_symbols(elf, nm)]
    return tally([LwipSymbol(s.name, s.address, s.size, _relative(obj)) for s, obj in placed if LWIP_OBJECTS in obj])


def tally(symbols: list[LwipSymbol]) -> LwipRam:
    """Heap, pools (largest first) and the rest of lwIP's symbols."""
    heap = sum(s.size for s in symbols if s.name == _HEAP)
    pools: dict[str, int] = {}
    for s in symbols:
        if match := _POOL.match(s.name):
            name = next(v for v in match.groupdict().values() if v)
            pools[name] = pools.get(name, 0) + s.size
    total = sum(s.size for s in symbols)
    ordered = dict(sorted(pools.items(), key=lambda kv: (-kv[1], kv[0])))
    ordered_symbols = tuple(sorted(symbols, key=lambda s: s.address))
    return LwipRam(total, heap, ordered, total - heap - sum(pools.values()), ordered_symbols)


@dataclass(frozen=True)
class _Section:
    start: int
    end: int
    object: str


@dataclass(frozen=True)
class _NmSymbol:
    name: str
    address: int
    size: int


@dataclass(frozen=True)
class _Sections:
    """The map's allocated input sections, sorted by address."""

    starts: list[int]
    sections: list[_Section]

    def object_at(self, address: int) -> str:
        i = bisect.bisect_right(self.starts, address) - 1
        if i >= 0 and address < self.sections[i].end:
            return self.sections[i].object
        return ""


def map_sections(map_file: Path) -> _Sections:
    """Every input section the link placed in an allocated output section, with its object file."""
    try:
        text = map_file.read_text(errors="replace")
    except OSError:
        raise NetreproError(f"no linker map {map_file} to tell lwIP's objects apart",
                            "link with -Wl,-Map=$(OUT)/firmware.map (the board.mk's LD_SCRIPT_FLAGS)") from None
    _, _, placed = text.partition("Linker script and memory map")
    found: list[_Section] = []
    allocated = True
    for line in placed.splitlines():
        if output := _OUTPUT.match(line):
            allocated = not output["name"].startswith(_UNALLOCATED)
        elif allocated and (entry := _INPUT.match(line)) and (size := int(entry["size"], 16)):
            start = int(entry["address"], 16)
            found.append(_Section(start, start + size, entry["object"].strip()))
    found.sort(key=lambda s: s.start)
    return _Sections([s.start for s in found], found)


def data_symbols(elf: Path, nm: str) -> list[_NmSymbol]:
    """The ELF's sized data symbols (nm's b, B, d, D), one per address."""
    if shutil.which(nm) is None:
        raise NetreproError(f"{nm} not found to read {elf}", "run ./tools/bootstrap to install the toolchain")
    proc = subprocess.run([nm, "-S", "--defined-only", str(elf)], capture_output=True, text=True, timeout=60,
                          check=False, env={**os.environ, "LC_ALL": "C"})
    if proc.returncode != 0:
        raise NetreproError(f"{nm} could not read {elf}: {(proc.stderr.strip() or 'no output').splitlines()[0]}",
                            "rebuild the firmware (remove its build folder)")
    seen: dict[int, _NmSymbol] = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in _DATA_TYPES:
            symbol = _NmSymbol(parts[3], int(parts[0], 16), int(parts[1], 16))
            seen.setdefault(symbol.address, symbol)  # an alias of a symbol already counted is not counted again
    return list(seen.values())


def _relative(path: str) -> str:
    """core/tcp.o for <build>/obj/lwip/core/tcp.o."""
    return path.split(LWIP_OBJECTS, 1)[1]
