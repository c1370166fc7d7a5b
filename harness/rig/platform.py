"""Platform descriptions: one TOML file per emulated board, loaded and validated.

A description says which engine and machine run the board, the facts the firmware needs
(memory map, console, NIC address and interrupt), the link presets that go with the board
and the lwIP option profiles known for it. It is engine-neutral on purpose: the `engine`
table names the engine, the rest describes the board. Each table is loaded once into a frozen
dataclass (Nic, BoardEngine, ...) whose fields are the table's keys.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
import types
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any, get_args, get_origin, get_type_hints

from harness.core.errors import NetreproError
from harness.core.paths import PROJECT_ROOT
from harness.rig.devicetime import CpuModel, DeviceTime, TimeChoice

_REQUIRED_SECTIONS = ("engine", "firmware", "memory", "console", "nic", "profiles", "stand_in", "real")
_REGION_KEYS = {"origin", "length", "name"}
_ENGINES = ("qemu", "simavr")

# section dataclasses: each [table]'s keys are declared once, as fields (a field without a default is required)


@dataclass(frozen=True)
class RealBoard:
    """[real]: the board the report measured."""

    cpu: str
    nics: tuple[str, ...] = ()


@dataclass(frozen=True)
class StandIn:
    """[stand_in]: what stands in for the real board's parts, and how far to trust it."""

    cpu: str
    nic: str
    honesty: str


@dataclass(frozen=True)
class BoardEngine:
    """[engine]: the emulator and machine that run the board."""

    kind: str
    binary: str
    machine: str
    cpu: str | None = None
    boot: str | None = None
    memory: str | None = None
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class BoardFirmware:
    """[firmware]: the firmware's board and NIC directories, its compiler and the clock it counts in."""

    board: str
    nic: str
    toolchain: str
    cpu_hz: int
    no_sys_1_only: str | None = None  # why the board runs only NO_SYS 1 profiles (None: it runs both)


@dataclass(frozen=True)
class Console:
    """[console]: the firmware's serial console."""

    device: str
    base: int
    serial: int | None = None


@dataclass(frozen=True)
class ClockPort:
    """[clock_port]: the serial port the board sends its clock on (device time)."""

    device: str
    base: int
    serial: int


@dataclass(frozen=True)
class Nic:
    """[nic]: the stand-in NIC, its address and interrupt, and how the link feeds it."""

    model: str
    base: int
    irq: int
    mac: str
    rx_fifo_frames: int | None = None
    wire_rate: str | None = None      # None: the link does not pace frames to the NIC's wire
    rx_burst_frames: int = 0
    rx_overflow: str = "hold"
    rx_overflow_frames: int | None = None  # None: max(2, rx_burst_frames)
    qemu_model: str | None = None     # a pluggable NIC (PCI); a board's own NIC has none

    @property
    def overflow_frames(self) -> int:
        """The full-size frames the NIC holds beyond its ring when rx_overflow is drop."""
        return self.rx_overflow_frames if self.rx_overflow_frames is not None else max(2, self.rx_burst_frames)


@dataclass(frozen=True)
class Host:
    """[host]: the Debian packages the board needs (read by tools/bootstrap, not by the harness)."""

    packages: tuple[str, ...]


@dataclass(frozen=True)
class MemoryRegion:
    role: str
    origin: int
    length: str
    name: str = ""


# the [tables] read into dataclasses; their keys are the dataclasses' fields
_SECTIONS: dict[str, type] = {"real": RealBoard, "stand_in": StandIn, "engine": BoardEngine, "firmware": BoardFirmware,
                              "console": Console, "clock_port": ClockPort, "nic": Nic, "host": Host}


def _keys(cls: type) -> dict[str, bool]:
    """A dataclass's fields as a section's keys: {key: required?} (required: no default)."""
    return {f.name: f.default is MISSING and f.default_factory is MISSING for f in dataclasses.fields(cls)}


# section -> {key: required?}; a section marked required must be present.
_SCHEMA: dict[str, dict[str, bool]] = {
    "": {"name": True, "description": True},
    **{section: _keys(cls) for section, cls in _SECTIONS.items()},
    "cpu": _keys(CpuModel),
    "memory": {"code": True, "data": True, "bulk": False},
    "links": {},
    "profiles": {"default": True, "known": True},
}


@dataclass(frozen=True)
class Platform:
    """One emulated board, as its description file says."""

    name: str
    description: str
    path: Path
    real: RealBoard
    stand_in: StandIn
    engine: BoardEngine
    firmware: BoardFirmware
    memory: dict[str, MemoryRegion]
    console: Console
    nic: Nic
    links: dict[str, dict[str, Any]]
    default_profile: str
    profiles: list[str] = field(default_factory=list)
    cpu: CpuModel | None = None       # the real part's speed, for device time
    clock_port: ClockPort | None = None  # the serial port the board sends its clock on (device time)
    host: Host | None = None

    def with_nic(self, **changes: Any) -> Platform:
        """The same board with some [nic] keys changed (e.g. rx_overflow="hold" for one run)."""
        if changes.get("rx_overflow", "hold") not in ("hold", "drop"):
            raise NetreproError(f"rx_overflow '{changes['rx_overflow']}' is not hold or drop", "use hold or drop")
        return dataclasses.replace(self, nic=dataclasses.replace(self.nic, **changes))

    def time(self, choice: TimeChoice) -> DeviceTime:
        """How this board's time relates to the wall clock for a run, as the user chose."""
        return choice.for_platform(self.engine.kind, self.cpu, self.name)

    def sends_clock(self, time: DeviceTime) -> bool:
        """Whether, run in this time, the board sends its clock for the link to follow: device time
        counted by instructions (QEMU), and a clock port to send it on."""
        return time.icount_shift is not None and self.clock_port is not None

    def link_preset(self, name: str) -> dict[str, Any]:
        if name not in self.links:
            raise NetreproError(f"platform {self.name} has no link preset '{name}'",
                                f"use one of: {', '.join(sorted(self.links))}")
        return {k: v for k, v in self.links[name].items() if k != "note"}


def platform_dirs() -> list[Path]:
    """Where descriptions are looked up: $NETREPRO_PLATFORMS (colon-separated), then the project's."""
    extra = [Path(p) for p in os.environ.get("NETREPRO_PLATFORMS", "").split(":") if p]
    return [*extra, PROJECT_ROOT / "platforms"]


def platform_names() -> list[str]:
    names = {p.stem for d in platform_dirs() if d.is_dir() for p in d.glob("*.toml")}
    return sorted(names)


def load_platform(name_or_path: str) -> Platform:
    """Load a platform by name (platforms/<name>.toml) or by the path of a .toml file."""
    path = _find(name_or_path)
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise NetreproError(f"{path}: not valid TOML ({exc})", "fix the syntax") from None
    return _parse(path, data)


def _find(name_or_path: str) -> Path:
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml":
        if not candidate.is_file():
            raise NetreproError(f"platform file {candidate} does not exist", "check the path")
        return candidate
    for directory in platform_dirs():
        path = directory / f"{name_or_path}.toml"
        if path.is_file():
            return path
    raise NetreproError(f"unknown platform '{name_or_path}'",
                        f"use one of: {', '.join(platform_names())} (netrepro platforms lists them)")


def _parse(path: Path, data: dict[str, Any]) -> Platform:
    _check_keys(path, "", data)
    for section in _REQUIRED_SECTIONS:
        if section not in data:
            raise NetreproError(f"{path}: missing section [{section}]", "add it (see platforms/openmv-n6.toml)")
    for section, table in data.items():
        if section in _SCHEMA and section and section != "links":
            if not isinstance(table, dict):
                raise NetreproError(f"{path}: '{section}' must be a table", f"write it as [{section}]")
            _check_keys(path, section, table)
    if data["engine"]["kind"] not in _ENGINES:
        raise NetreproError(f"{path}: engine.kind '{data['engine']['kind']}' is not supported",
                            f"use one of: {', '.join(_ENGINES)}")
    if not re.fullmatch(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", str(data["nic"]["mac"])):
        raise NetreproError(f"{path}: nic.mac '{data['nic']['mac']}' is not a MAC address",
                            "write it as 52:54:00:12:34:56")
    if data["nic"].get("rx_overflow", "hold") not in ("hold", "drop"):
        raise NetreproError(f"{path}: nic.rx_overflow '{data['nic']['rx_overflow']}' is not hold or drop",
                            "use \"hold\" (frames wait for the NIC) or \"drop\" (a full RX ring drops them)")
    frames = data["nic"].get("rx_overflow_frames", 2)
    if isinstance(frames, bool) or not isinstance(frames, int) or not 2 <= frames <= 1000:
        raise NetreproError(f"{path}: nic.rx_overflow_frames {frames!r} is not a whole number from 2 to 1000",
                            "give the full-size frames the NIC holds beyond its ring, e.g. 4")
    profiles = data["profiles"]
    if profiles["default"] not in profiles["known"]:
        raise NetreproError(f"{path}: profiles.default '{profiles['default']}' is not in profiles.known",
                            "add it to the list")
    sections = {name: _section(path, name, data[name]) for name in _SECTIONS if name in data}
    return Platform(
        name=data["name"], description=data["description"], path=path, **sections,
        memory=_regions(path, data["memory"]), links=_links(path, data.get("links", {})),
        default_profile=profiles["default"], profiles=list(profiles["known"]), cpu=_cpu(path, data.get("cpu")),
    )


def _section(path: Path, name: str, table: dict[str, Any]) -> Any:
    """A checked [table] as its dataclass, each value of the type its field declares."""
    cls = _SECTIONS[name]
    hints = get_type_hints(cls)
    return cls(**{key: _typed(path, f"{name}.{key}", hints[key], value) for key, value in table.items()})


def _typed(path: Path, where: str, hint: Any, value: Any) -> Any:
    """The value as its field's type (a TOML list becomes a tuple); a wrong type is named here, at load,
    rather than failing later inside a build or a run."""
    kind = next(a for a in get_args(hint) if a is not type(None)) if isinstance(hint, types.UnionType) else hint
    if get_origin(kind) is tuple:
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return tuple(value)
        wanted, example = "a list of strings", '["a", "b"]'
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        wanted, example = "a whole number", "0x40000000 or 49"
    else:
        if isinstance(value, str):
            return value
        wanted, example = "a string", '"text"'
    raise NetreproError(f"{path}: {where} {value!r} is not {wanted}", f"write it as {example}")


def _check_keys(path: Path, section: str, table: dict[str, Any]) -> None:
    schema = _SCHEMA[section]
    where = f"{section}." if section else ""
    for key in table:
        if section == "" and key in _SCHEMA:
            continue
        if key not in schema:
            raise NetreproError(f"{path}: unknown key '{where}{key}'",
                                f"allowed keys: {', '.join(sorted(k for k in schema if k not in _SCHEMA))}")
    for key, required in schema.items():
        if required and key not in table:
            raise NetreproError(f"{path}: missing key '{where}{key}'", "add it (see platforms/openmv-n6.toml)")


def _cpu(path: Path, table: dict[str, Any] | None) -> CpuModel | None:
    if table is None:
        return None
    for key in ("clock_mhz", "ipc", "host_mips"):
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise NetreproError(f"{path}: cpu.{key} {value!r} is not a positive number", "fix the number")
    return CpuModel(float(table["clock_mhz"]), float(table["ipc"]), float(table["host_mips"]), str(table["source"]))


def _regions(path: Path, table: dict[str, Any]) -> dict[str, MemoryRegion]:
    regions = {}
    for role, region in table.items():
        if not isinstance(region, dict) or not {"origin", "length"} <= region.keys() <= _REGION_KEYS:
            raise NetreproError(f"{path}: memory.{role} must be {{ origin = ..., length = \"...\" }}",
                                "optionally with name = \"...\"")
        regions[role] = MemoryRegion(role, int(region["origin"]), str(region["length"]), region.get("name", ""))
    return regions


def _links(path: Path, table: dict[str, Any]) -> dict[str, dict[str, Any]]:
    for name, preset in table.items():
        if not isinstance(preset, dict):
            raise NetreproError(f"{path}: links.{name} must be a table", f"write it as [links.{name}]")
    return dict(table)
