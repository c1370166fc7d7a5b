"""Reading what the link wrote: the capture (classic pcap) and the drops log (JSON lines)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError

_MICRO, _NANO = 0xA1B2C3D4, 0xA1B23C4D  # classic pcap's magic numbers for µs and ns timestamps
# The sides of the link a capture can be taken at (harness/link/c/capture.h, "Capture:"): "device" as a capture on the
# board would see the link, "peer" as one on the PC beside it, where a user's own capture usually comes from.
CAPTURE_SIDES = ("device", "peer")


def capture_side(side: str) -> str:
    """`side` if the link can take its capture there, else a one-line error."""
    if side not in CAPTURE_SIDES:
        raise NetreproError(f"capture_at {side!r} is not a side of the link", f"give one of {', '.join(CAPTURE_SIDES)}")
    return side


def read_drops(path: Path) -> list[dict[str, Any]]:
    """The drops log as a list of dicts."""
    text = Path(path).read_text() if Path(path).exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def read_pcap(path: Path) -> list[tuple[float, bytes]]:
    """(timestamp in seconds, frame bytes) for each record of a classic pcap (µs or ns)."""
    return [(sec + frac * (1 / per_s), frame) for sec, frac, per_s, frame in _records(path)]  # as ever: x 1e-9 or 1e-6


def read_pcap_ns(path: Path) -> list[tuple[int, bytes]]:
    """(timestamp in integer ns, frame bytes) for each record: exact, where a float of seconds since 1970
    keeps only ~240 ns."""
    return [(sec * 1_000_000_000 + frac * (1_000_000_000 // per_s), frame)
            for sec, frac, per_s, frame in _records(path)]


def _records(path: Path) -> list[tuple[int, int, int, bytes]]:
    """(seconds, fraction, fractions a second, frame bytes) for each record of a classic pcap."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        raise NetreproError(f"{path} is not a pcap file (too short)", "check the link's log")
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (_MICRO, _NANO) else ">"
    magic = struct.unpack(endian + "I", data[:4])[0]
    if magic not in (_MICRO, _NANO):
        raise NetreproError(f"{path} is not a classic pcap file (magic {magic:#x})", "check the link's log")
    per_s = 1_000_000_000 if magic == _NANO else 1_000_000
    out = []
    offset = 24
    while offset + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack(endian + "IIII", data[offset : offset + 16])
        offset += 16
        out.append((sec, frac, per_s, data[offset : offset + incl]))
        offset += incl
    return out


def write_pcap(path: Path, frames: list[bytes], spacing_s: float = 0.001, times: list[float] | None = None) -> Path:
    """Write Ethernet frames as a classic pcap (µs), at `times` or `spacing_s` apart from time 0: what
    `read_pcap` reads."""
    out = bytearray(struct.pack("<IHHiIII", _MICRO, 2, 4, 0, 0, 65535, 1))  # linktype 1: Ethernet
    for i, frame in enumerate(frames):
        micros = round((times[i] if times is not None else i * spacing_s) * 1e6)
        out += struct.pack("<IIII", micros // 1_000_000, micros % 1_000_000, len(frame), len(frame)) + frame
    Path(path).write_bytes(bytes(out))
    return Path(path)
