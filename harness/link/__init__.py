"""The emulated network link between the device's NIC and the TCP peer.

The link itself is a small C program (harness/link/netrepro_link.c, built on demand by
harness.core.native). It sits between QEMU's unix datagram netdev and a tap device (or,
in tests, a second unix datagram socket) and applies, per direction and in this order:

1. loss: a deterministic drop list (``data:3`` = the 3rd TCP segment with payload seen in
   that direction, retransmissions included; ``frame:12``; ``syn:1``; also ``fin``, ``rst``,
   ``ack`` (pure ACKs), ``udp``, and ranges such as ``data:3-5``), netem's Gilbert-Elliott
   model (``loss gemodel p r 1-h 1-k``) and independent random loss. All are seeded: the
   same frames in the same order with the same seed are dropped the same way.
2. a drop-tail queue of ``limit_packets`` frames and/or ``limit_bytes`` bytes in front of
   the line. The frame on the line is not counted. Unlike netem's ``limit``, frames in the
   delay line are not counted either: this is the bottleneck's buffer.
3. the rate: serialisation at ``rate_bps`` counting Ethernet's overhead on the wire
   (frames padded to 60 bytes, plus 24 bytes of preamble, gap and FCS). ``burst_bytes``
   0 means strict serialisation; B > 0 makes it a token bucket of B bytes (like tbf).
4. the one-way delay, plus jitter: uniform in [-jitter, +jitter] (netem's default without
   a distribution table) or ``jitter_dist="normal"`` (sigma = jitter, truncated at 4
   sigma). Frames keep their order unless ``reorder`` is true (then jitter may reorder
   them, as netem's time-sorted queue does).

Toward the device, frames are also handed over no faster than its NIC's wire (``pace_bps``,
``pace_burst_frames``), and when the device's socket cannot take a frame when it is due
(QEMU reads it only while the emulated NIC has a free RX descriptor), ``overflow="hold"``
(the default) keeps it until it can, while ``overflow="drop"`` drops it as ``device-full``,
as a real NIC loses what arrives while its RX ring is full. ``sock_frames`` N limits what the
socket toward the device holds unread to N full-size frames (through SO_SNDBUF; at least 2,
the kernel's minimum), so that what waits in front of the device is its NIC's ring and a
small FIFO rather than the kernel's socket queue (``net.unix.max_dgram_qlen``, 11 frames).

Everything is per direction: ``to_device`` is peer -> device, ``to_peer`` device -> peer.
The capture is taken at the device side of the link: device -> peer frames are stamped
when they arrive from the device, peer -> device frames when they are handed to it.
Dropped frames are in the drops log, not in the capture (except a device -> peer frame
that the peer socket could not take, which only the test socket mode can produce).

Units follow tc's conventions (see ``parse_time``, ``parse_rate``, ``parse_size``,
``parse_percent``).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import json
import math
import os
import re
import select
import signal
import struct
import subprocess
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.native import build_tool

LINK_SOURCE = Path(__file__).resolve().parent / "netrepro_link.c"
ETHERNET_OVERHEAD = 24  # preamble 8 + inter-frame gap 12 + FCS 4, per frame on the wire
ETHERNET_MIN_FRAME = 60  # without FCS
DROP_REASONS = ("loss", "gemodel", "droplist", "queue", "unreachable", "device-full")
OVERFLOW_MODES = ("hold", "drop")
DROP_KINDS = ("frame", "data", "syn", "fin", "rst", "ack", "udp")
SUN_PATH_MAX = 107  # usable bytes of a unix socket path

# ------------------------------------------------------------------ units

_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z%]*)\s*$")

_TIME_UNITS = {
    "s": 1.0, "sec": 1.0, "secs": 1.0,
    "ms": 1e-3, "msec": 1e-3, "msecs": 1e-3,
    "us": 1e-6, "usec": 1e-6, "usecs": 1e-6, "": 1e-6,
    "ns": 1e-9, "nsec": 1e-9, "nsecs": 1e-9,
}  # fmt: skip

_RATE_UNITS = {
    "": 1, "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
    "kibit": 1024, "mibit": 1024**2, "gibit": 1024**3, "tibit": 1024**4,
    "bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9, "tbps": 8e12,
    "kibps": 8 * 1024, "mibps": 8 * 1024**2, "gibps": 8 * 1024**3, "tibps": 8 * 1024**4,
}  # fmt: skip

_SIZE_UNITS = {
    "": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3,
    "kbit": 1024 / 8, "mbit": 1024**2 / 8, "gbit": 1024**3 / 8,
}  # fmt: skip


def _split(value: Any, what: str, example: str) -> tuple[float, str]:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise NetreproError(f"bad {what} {value!r}", f"write it like {example}")
    if not isinstance(value, str):
        if not math.isfinite(value) or value < 0:
            raise NetreproError(f"bad {what} {value!r}", f"write it like {example}")
        return float(value), ""
    match = _NUMBER.match(value)
    if not match:
        raise NetreproError(f"bad {what} {value!r}", f"write it like {example}")
    return float(match.group(1)), match.group(2).lower()


def parse_time(value: str | float, what: str = "time") -> float:
    """A tc time in seconds: ``5.5ms``, ``300us``, ``2s``, ``10ns``, ``0``.

    As in tc, ``s``/``sec``/``secs``, ``ms``/``msec``/``msecs``, ``us``/``usec``/``usecs``
    are accepted, and a bare number in a string is microseconds. A Python number other
    than 0 is refused, because a number without a unit (``rtt = 5`` in TOML) is too easily
    meant as milliseconds.
    """
    if not isinstance(value, str) and not isinstance(value, bool) and value == 0:
        return 0.0
    if not isinstance(value, str):
        raise NetreproError(
            f"bad {what} {value!r}: a number has no unit", "write it as a string like '5.5ms'"
        )
    number, unit = _split(value, what, "'5.5ms', '300us' or '2s'")
    if unit not in _TIME_UNITS:
        raise NetreproError(
            f"bad {what} {value!r}: unknown unit {unit!r}", "use s, ms, us or ns, e.g. '5.5ms'"
        )
    return number * _TIME_UNITS[unit]


def parse_rate(value: str | float, what: str = "rate") -> int:
    """A tc rate in bits per second: ``43mbit``, ``100Mbit``, ``1gbit``, ``64kbit``, ``500000bit``.

    Units are case-insensitive and SI (``kbit`` = 1000 bit/s); ``kibit``/``mibit``/``gibit``
    are the 1024-based ones. A bare number (string or Python number) is bits per second.
    Beware, as in tc: ``bps``, ``kbps``, ``mbps``, ``gbps`` mean BYTES per second
    (``1mbps`` = 8 Mbit/s). 0 means no rate limit.
    """
    number, unit = _split(value, what, "'43mbit' or '100Mbit'")
    if unit not in _RATE_UNITS:
        raise NetreproError(
            f"bad {what} {value!r}: unknown unit {unit!r}",
            "use bit, kbit, mbit, gbit (or tc's byte units bps, mbps)",
        )
    return round(number * _RATE_UNITS[unit])


def parse_size(value: str | int, what: str = "size") -> int:
    """A tc size in bytes: ``1514``, ``64k`` (= 65536), ``1m``, ``2kb``, ``8kbit`` (= 1024 bytes).

    As in tc, ``k``/``kb``, ``m``/``mb``, ``g``/``gb`` are powers of 1024, ``kbit``/``mbit``/
    ``gbit`` are 1024-based bits, and a bare number is bytes.
    """
    number, unit = _split(value, what, "'1514' or '64k'")
    if unit not in _SIZE_UNITS:
        raise NetreproError(f"bad {what} {value!r}: unknown unit {unit!r}", "use b, k, m or g, e.g. '64k'")
    return round(number * _SIZE_UNITS[unit])


def parse_percent(value: str | float, what: str = "percentage") -> float:
    """A percentage as a fraction: ``0.1%`` -> 0.001; ``0`` -> 0.

    The ``%`` is required for anything but zero, since ``0.1`` could mean 0.1 % (tc) or 10 %.
    """
    if not isinstance(value, bool) and isinstance(value, (int, float)) and value == 0:
        return 0.0
    number, unit = _split(value, what, "'0.1%'")
    if unit != "%" and not (unit == "" and number == 0):
        raise NetreproError(f"bad {what} {value!r}", "write it with a percent sign, e.g. '0.1%'")
    fraction = number / 100.0
    if fraction > 1:
        raise NetreproError(f"bad {what} {value!r}: more than 100%", "give a value from 0% to 100%")
    return fraction


def parse_gemodel(value: Any) -> tuple[float, float, float, float] | None:
    """netem's ``loss gemodel p [r [1-h [1-k]]]`` as fractions (p, r, 1-h, 1-k), or None.

    p: good -> bad transition probability; r: bad -> good; 1-h: loss probability in the
    bad state (default 100%); 1-k: loss probability in the good state (default 0%). With
    only p, r defaults to 1-p as in iproute2. Accepts ``"1% 30% 100% 0%"`` (spaces or
    commas) or a sequence; ``None``, ``""``, ``"off"`` or ``False`` mean no model.
    """
    if (
        value is None
        or value is False
        or (isinstance(value, str) and value.strip().lower() in ("", "off", "none"))
    ):
        return None
    items: list[Any] = re.split(r"[\s,]+", value.strip()) if isinstance(value, str) else list(value)
    if not 1 <= len(items) <= 4:
        raise NetreproError(
            f"bad gemodel {value!r}: 1 to 4 values", "write it like '1% 30% 100% 0%' (p r 1-h 1-k)"
        )
    probs = [parse_percent(item, "gemodel probability") for item in items]
    p = probs[0]
    r = probs[1] if len(probs) > 1 else 1.0 - p
    bad_loss = probs[2] if len(probs) > 2 else 1.0
    good_loss = probs[3] if len(probs) > 3 else 0.0
    return (p, r, bad_loss, good_loss)


_DROP_ENTRY = re.compile(r"^(" + "|".join(DROP_KINDS) + r"):([1-9][0-9]*)(?:-([1-9][0-9]*))?$")


def parse_drop_list(value: Any) -> tuple[str, ...]:
    """Drop-list entries ``KIND:N`` or ``KIND:N-M`` from ``"data:3,frame:12"`` or a sequence.

    KIND is frame (every frame), data (IPv4 TCP segments with payload, retransmissions
    included), syn, fin, rst, ack (pure ACKs), or udp; N counts from 1 in that direction.
    """
    if value is None or value == "":
        return ()
    items = re.split(r"[\s,+]+", value.strip()) if isinstance(value, str) else [str(v).strip() for v in value]
    out = []
    for item in items:
        match = _DROP_ENTRY.match(item)
        if not match or (match.group(3) and int(match.group(3)) < int(match.group(2))):
            raise NetreproError(
                f"bad drop-list entry {item!r}",
                f"write KIND:N or KIND:N-M with KIND one of {', '.join(DROP_KINDS)}",
            )
        out.append(item)
    return tuple(out)


def _fmt_float(value: float) -> str:
    return format(value, ".12g")


# ------------------------------------------------------------------ the link's description


@dataclass(frozen=True)
class Direction:
    """What one direction of the link does to frames (plain units: seconds, bit/s, bytes)."""

    delay_s: float = 0.0
    jitter_s: float = 0.0
    rate_bps: int = 0  # 0: no rate limit
    burst_bytes: int = 0  # 0: strict serialisation
    limit_packets: int = 1000  # 0: no packet limit
    limit_bytes: int = 0  # 0: no byte limit
    loss: float = 0.0  # independent random loss, a fraction
    gemodel: tuple[float, float, float, float] | None = None  # (p, r, 1-h, 1-k) fractions
    drop: tuple[str, ...] = ()
    reorder: bool = False
    jitter_dist: str = "uniform"
    pace_bps: int = 0  # the receiving NIC's wire: frames are handed over no faster (0: off)
    pace_burst_frames: int = 0  # full frames it may take back to back
    overflow: str = "hold"  # receiver full when a frame is due: "hold" it, or "drop" it (device-full)
    sock_frames: int = 0  # full-size frames the socket toward the receiver holds unread (0: not limited)

    def __post_init__(self) -> None:
        for name in ("delay_s", "jitter_s", "loss"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise NetreproError(f"bad link {name} {value!r}", "give a finite value >= 0")
        if self.loss > 1:
            raise NetreproError(f"bad link loss {self.loss!r}", "give a fraction from 0 to 1")
        for name in ("rate_bps", "burst_bytes", "limit_packets", "limit_bytes", "pace_bps", "pace_burst_frames",
                     "sock_frames"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise NetreproError(f"bad link {name} {value!r}", "give a whole number >= 0")
        if self.gemodel is not None:
            if len(self.gemodel) != 4 or not all(0 <= float(v) <= 1 for v in self.gemodel):
                raise NetreproError(
                    f"bad gemodel {self.gemodel!r}", "give (p, r, 1-h, 1-k) as fractions 0..1"
                )
            object.__setattr__(self, "gemodel", tuple(float(v) for v in self.gemodel))
        object.__setattr__(self, "drop", parse_drop_list(self.drop))
        if self.jitter_dist not in ("uniform", "normal"):
            raise NetreproError(f"bad jitter distribution {self.jitter_dist!r}", "use 'uniform' or 'normal'")
        if self.overflow not in OVERFLOW_MODES:
            raise NetreproError(f"bad link overflow {self.overflow!r}", "use 'hold' or 'drop'")

    def serialisation_s(self, frame_len: int) -> float:
        """Time on the line for a frame of frame_len bytes (without FCS); 0 without a rate."""
        if not self.rate_bps:
            return 0.0
        return (max(frame_len, ETHERNET_MIN_FRAME) + ETHERNET_OVERHEAD) * 8 / self.rate_bps

    def stationary_loss(self) -> float:
        """The long-run loss fraction the random models predict (drop list and queue aside)."""
        ge = 0.0
        if self.gemodel:
            p, r, bad_loss, good_loss = self.gemodel
            bad = p / (p + r) if p + r > 0 else 0.0
            ge = bad * bad_loss + (1 - bad) * good_loss
        return 1 - (1 - ge) * (1 - self.loss)

    def cli(self) -> str:
        """The spec string the C link takes (--to-device/--to-peer)."""
        parts = [
            f"delay_us={_fmt_float(self.delay_s * 1e6)}",
            f"jitter_us={_fmt_float(self.jitter_s * 1e6)}",
            f"jitter_dist={self.jitter_dist}",
            f"rate_bps={self.rate_bps}",
            f"burst_bytes={self.burst_bytes}",
            f"limit_pkts={self.limit_packets}",
            f"limit_bytes={self.limit_bytes}",
            f"loss={_fmt_float(self.loss)}",
            "ge=" + (",".join(_fmt_float(v) for v in self.gemodel) if self.gemodel else ""),
            "drop=" + ",".join(self.drop),
            f"reorder={int(self.reorder)}",
            f"pace_bps={self.pace_bps}",
            f"pace_burst={self.pace_burst_frames}",
            f"overflow={self.overflow}",
            f"sock_frames={self.sock_frames}",
        ]
        return ",".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "delay_s": self.delay_s,
            "jitter_s": self.jitter_s,
            "jitter_dist": self.jitter_dist,
            "rate_bps": self.rate_bps,
            "burst_bytes": self.burst_bytes,
            "limit_packets": self.limit_packets,
            "limit_bytes": self.limit_bytes,
            "loss": self.loss,
            "gemodel": dict(zip(("p", "r", "1-h", "1-k"), self.gemodel, strict=True))
            if self.gemodel
            else None,
            "drop": list(self.drop),
            "reorder": self.reorder,
            "pace_bps": self.pace_bps,
            "pace_burst_frames": self.pace_burst_frames,
            "overflow": self.overflow,
            "sock_frames": self.sock_frames,
            "ethernet_overhead_bytes": ETHERNET_OVERHEAD,
        }


_DIRECTION_KEYS = {
    "delay", "rate", "jitter", "jitter_dist", "loss", "gemodel",
    "limit", "limit_bytes", "burst", "drop", "reorder",
}  # fmt: skip
_PRESET_KEYS = (_DIRECTION_KEYS - {"drop"}) | {
    "rtt",
    "seed",
    "snaplen",
    "to_device",
    "to_peer",
    "description",
    "note",
}


def _limit_packets(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        raise NetreproError(f"bad queue limit {value!r}", "give a whole number of packets, e.g. 100")
    return int(value)


def _bool(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1, "0", "1"):
        return bool(int(value))
    raise NetreproError(f"bad {what} {value!r}", "give true or false")


def _direction_changes(table: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Direction fields from a table with keys delay, rate, jitter, loss, gemodel, limit, ..."""
    unknown = set(table) - _DIRECTION_KEYS
    if unknown:
        raise NetreproError(
            f"unknown link key {sorted(unknown)[0]!r} in {where}", f"use {', '.join(sorted(_DIRECTION_KEYS))}"
        )
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key == "delay":
            out["delay_s"] = parse_time(value, f"{where} delay")
        elif key == "rate":
            out["rate_bps"] = parse_rate(value, f"{where} rate")
        elif key == "jitter":
            out["jitter_s"] = parse_time(value, f"{where} jitter")
        elif key == "jitter_dist":
            out["jitter_dist"] = value
        elif key == "loss":
            out["loss"] = parse_percent(value, f"{where} loss")
        elif key == "gemodel":
            out["gemodel"] = parse_gemodel(value)
        elif key == "limit":
            out["limit_packets"] = _limit_packets(value)
        elif key == "limit_bytes":
            out["limit_bytes"] = parse_size(value, f"{where} limit_bytes")
        elif key == "burst":
            out["burst_bytes"] = parse_size(value, f"{where} burst")
        elif key == "drop":
            out["drop"] = parse_drop_list(value)
        elif key == "reorder":
            out["reorder"] = _bool(value, f"{where} reorder")
    return out


def _split_rtt(rtt: float | None, dev: float | None, peer: float | None) -> tuple[float | None, float | None]:
    """One-way delays from an RTT: split evenly unless a direction's delay is given."""
    if rtt is None:
        return dev, peer
    if dev is None and peer is None:
        return rtt / 2, rtt / 2
    if dev is not None and peer is not None:
        if abs(dev + peer - rtt) > 1e-9:
            raise NetreproError(
                f"the link's RTT {rtt * 1e3:g} ms is not the sum of its one-way delays "
                f"{dev * 1e3:g} + {peer * 1e3:g} ms",
                "give the RTT or both one-way delays, not conflicting values",
            )
        return dev, peer
    given = dev if dev is not None else peer
    assert given is not None
    if given > rtt:
        raise NetreproError(
            f"a one-way delay of {given * 1e3:g} ms exceeds the RTT {rtt * 1e3:g} ms",
            "give a smaller delay or RTT",
        )
    return (given, rtt - given) if dev is not None else (rtt - given, given)


@dataclass(frozen=True)
class LinkSpec:
    """Both directions of the link, the PRNG seed and the capture's snap length (0 = whole frames)."""

    to_device: Direction = field(default_factory=Direction)
    to_peer: Direction = field(default_factory=Direction)
    seed: int = 1
    snaplen: int = 0

    @property
    def rtt_s(self) -> float:
        """The round-trip time the delays add (serialisation and queueing aside)."""
        return self.to_device.delay_s + self.to_peer.delay_s

    @classmethod
    def from_preset(cls, table: Mapping[str, Any]) -> LinkSpec:
        """A spec from a platform description's link preset.

        ``{rtt = "5.5ms", rate = "43mbit"}`` applies to both directions (the RTT split
        evenly); keys delay (one-way, both directions), jitter, jitter_dist, loss, gemodel,
        limit (packets), limit_bytes, burst, reorder, seed and snaplen work the same way,
        and sub-tables ``to_device = {...}`` / ``to_peer = {...}`` set one direction
        (delay, rate, jitter, loss, gemodel, limit, limit_bytes, burst, drop, reorder).
        With an RTT and one direction's delay, the other direction gets the rest.
        """
        if not isinstance(table, Mapping):
            raise NetreproError(f"a link preset must be a table, not {table!r}", "write e.g. {rtt = '5.5ms'}")
        unknown = set(table) - _PRESET_KEYS
        if unknown:
            raise NetreproError(
                f"unknown link preset key {sorted(unknown)[0]!r}", f"use {', '.join(sorted(_PRESET_KEYS))}"
            )
        if "rtt" in table and "delay" in table:
            raise NetreproError("a link preset gives both rtt and delay", "give one of them")
        common = _direction_changes(
            {k: v for k, v in table.items() if k in _DIRECTION_KEYS and k != "drop"}, "the link preset"
        )
        per_dir = {}
        for name in ("to_device", "to_peer"):
            sub = table.get(name, {})
            if not isinstance(sub, Mapping):
                raise NetreproError(
                    f"link preset {name} must be a table", f"write {name} = {{delay = '2ms'}}"
                )
            per_dir[name] = {**common, **_direction_changes(sub, f"the link preset's {name}")}
        rtt = parse_time(table["rtt"], "rtt") if "rtt" in table else None
        dev, peer = _split_rtt(rtt, per_dir["to_device"].get("delay_s"), per_dir["to_peer"].get("delay_s"))
        for name, delay in (("to_device", dev), ("to_peer", peer)):
            if delay is not None:
                per_dir[name]["delay_s"] = delay
        seed = table.get("seed", 1)
        snaplen = parse_size(table.get("snaplen", 0), "snaplen")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise NetreproError(f"bad link seed {seed!r}", "give a whole number >= 0")
        return cls(
            Direction(**per_dir["to_device"]), Direction(**per_dir["to_peer"]), seed=seed, snaplen=snaplen
        )

    def override(
        self,
        *,
        rtt: str | float | None = None,
        rate: str | float | None = None,
        loss: str | float | None = None,
        jitter: str | float | None = None,
        jitter_dist: str | None = None,
        limit: int | str | None = None,
        limit_bytes: str | int | None = None,
        burst: str | int | None = None,
        delay_to_device: str | float | None = None,
        delay_to_peer: str | float | None = None,
        rate_to_device: str | float | None = None,
        rate_to_peer: str | float | None = None,
        loss_to_device: str | float | None = None,
        loss_to_peer: str | float | None = None,
        drop_to_device: str | Sequence[str] | None = None,
        drop_to_peer: str | Sequence[str] | None = None,
        gemodel: str | Sequence[Any] | None = None,
        reorder: bool | None = None,
        seed: int | None = None,
        snaplen: int | str | None = None,
    ) -> LinkSpec:
        """A new spec with the given values changed (None = unchanged), in tc units.

        ``rtt`` sets both one-way delays to half of it, unless ``delay_to_device`` or
        ``delay_to_peer`` is given too (then the other direction gets the rest). ``rate``,
        ``loss``, ``jitter``, ``limit``, ``limit_bytes``, ``burst``, ``gemodel`` and
        ``reorder`` apply to both directions; the ``*_to_device``/``*_to_peer`` forms to one.
        ``gemodel="off"`` removes the model, ``drop_to_peer=""`` empties a drop list.
        """
        both: dict[str, Any] = {}
        if rate is not None:
            both["rate_bps"] = parse_rate(rate)
        if loss is not None:
            both["loss"] = parse_percent(loss, "loss")
        if jitter is not None:
            both["jitter_s"] = parse_time(jitter, "jitter")
        if jitter_dist is not None:
            both["jitter_dist"] = jitter_dist
        if limit is not None:
            both["limit_packets"] = _limit_packets(limit)
        if limit_bytes is not None:
            both["limit_bytes"] = parse_size(limit_bytes, "limit_bytes")
        if burst is not None:
            both["burst_bytes"] = parse_size(burst, "burst")
        if gemodel is not None:
            both["gemodel"] = parse_gemodel(gemodel)
        if reorder is not None:
            both["reorder"] = _bool(reorder, "reorder")
        dev: dict[str, Any] = dict(both)
        peer: dict[str, Any] = dict(both)
        for changes, d_rate, d_loss, d_drop in (
            (dev, rate_to_device, loss_to_device, drop_to_device),
            (peer, rate_to_peer, loss_to_peer, drop_to_peer),
        ):
            if d_rate is not None:
                changes["rate_bps"] = parse_rate(d_rate)
            if d_loss is not None:
                changes["loss"] = parse_percent(d_loss, "loss")
            if d_drop is not None:
                changes["drop"] = parse_drop_list(d_drop)
        d_dev = parse_time(delay_to_device, "delay_to_device") if delay_to_device is not None else None
        d_peer = parse_time(delay_to_peer, "delay_to_peer") if delay_to_peer is not None else None
        d_dev, d_peer = _split_rtt(parse_time(rtt, "rtt") if rtt is not None else None, d_dev, d_peer)
        if d_dev is not None:
            dev["delay_s"] = d_dev
        if d_peer is not None:
            peer["delay_s"] = d_peer
        new_seed = self.seed if seed is None else seed
        if isinstance(new_seed, bool) or not isinstance(new_seed, int) or new_seed < 0:
            raise NetreproError(f"bad link seed {seed!r}", "give a whole number >= 0")
        return dataclasses.replace(
            self,
            to_device=dataclasses.replace(self.to_device, **dev),
            to_peer=dataclasses.replace(self.to_peer, **peer),
            seed=new_seed,
            snaplen=self.snaplen if snaplen is None else parse_size(snaplen, "snaplen"),
        )

    def paced_to_device(self, rate_bps: int, burst_frames: int) -> LinkSpec:
        """The same link, handing frames to the device no faster than its NIC's wire takes them."""
        return dataclasses.replace(
            self, to_device=dataclasses.replace(self.to_device, pace_bps=rate_bps, pace_burst_frames=burst_frames)
        )

    def overflowing_to_device(self, overflow: str, sock_frames: int = 0) -> LinkSpec:
        """The same link, with what happens when the device cannot take a frame that is due:
        ``"hold"`` it until it can, or ``"drop"`` it (``device-full``) as a full NIC ring does;
        ``sock_frames`` full-size frames may wait unread in the socket toward it (0: no limit
        but the kernel's max_dgram_qlen)."""
        return dataclasses.replace(
            self, to_device=dataclasses.replace(self.to_device, overflow=overflow, sock_frames=sock_frames)
        )

    def as_dict(self) -> dict[str, Any]:
        """The effective values in plain units (seconds, bit/s, bytes, fractions)."""
        return {
            "rtt_s": self.rtt_s,
            "seed": self.seed,
            "snaplen": self.snaplen,
            "to_device": self.to_device.as_dict(),
            "to_peer": self.to_peer.as_dict(),
        }


# ------------------------------------------------------------------ counters


@dataclass(frozen=True)
class DirectionCounters:
    """What one direction of the link did."""

    frames_in: int = 0
    bytes_in: int = 0
    frames_out: int = 0
    bytes_out: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    queue_hwm_pkts: int = 0
    queue_hwm_bytes: int = 0
    in_flight: int = 0  # admitted but not yet delivered when the counters were written
    late_us_mean: float = 0.0  # how late frames left the link against their schedule
    late_us_max: float = 0.0
    late_over_100us: int = 0
    overflow: str = "hold"  # what the link did with a frame the receiver could not take
    out_sndbuf_bytes: int = 0  # SO_SNDBUF of the socket toward the receiver, as the kernel kept it
    sock_frames: int = 0  # full-size frames that socket holds unread (0: not limited by SO_SNDBUF)

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DirectionCounters:
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values["dropped"] = {reason: int(data.get("dropped", {}).get(reason, 0)) for reason in DROP_REASONS}
        return cls(**values)


@dataclass(frozen=True)
class LinkCounters:
    """The link's stats file: both directions and the elapsed time."""

    to_device: DirectionCounters
    to_peer: DirectionCounters
    elapsed_s: float
    final: bool = True
    snapshot: int = 0
    spin_s: float = 0.0  # CPU time spent spinning before deadlines
    capture_stalls: int = 0  # times the link waited for the disk (capture backlog over 256 MiB)

    @property
    def total_frames_in(self) -> int:
        return self.to_device.frames_in + self.to_peer.frames_in

    @property
    def total_frames_out(self) -> int:
        return self.to_device.frames_out + self.to_peer.frames_out

    @property
    def total_bytes_out(self) -> int:
        return self.to_device.bytes_out + self.to_peer.bytes_out

    @property
    def total_dropped(self) -> int:
        return self.to_device.dropped_total + self.to_peer.dropped_total

    @property
    def dropped(self) -> dict[str, int]:
        """Drops of both directions by reason."""
        return {r: self.to_device.dropped.get(r, 0) + self.to_peer.dropped.get(r, 0) for r in DROP_REASONS}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinkCounters:
        return cls(
            to_device=DirectionCounters.from_dict(data["to_device"]),
            to_peer=DirectionCounters.from_dict(data["to_peer"]),
            elapsed_s=float(data["elapsed_s"]),
            final=bool(data.get("final", True)),
            snapshot=int(data.get("snapshot", 0)),
            spin_s=float(data.get("spin_s", 0.0)),
            capture_stalls=int(data.get("capture_stalls", 0)),
        )

    @classmethod
    def from_file(cls, path: Path) -> LinkCounters:
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise NetreproError(
                f"cannot read the link's stats {path}: {exc}", "see link.log next to it"
            ) from exc

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ------------------------------------------------------------------ the process

_libc: Any = None


def _pdeathsig() -> None:  # runs in the child between fork and exec
    if _libc is not None:
        _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def link_binary() -> Path:
    """The netrepro-link binary, built (and cached) on first use."""
    return build_tool("netrepro-link", [LINK_SOURCE], libs=["-lm", "-pthread"])


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


class Link:
    """One running link process; a context manager that never leaves the process behind.

    ``device_sock`` is bound by the link; ``device_remote`` is QEMU's ``local.path``. The
    peer side is either a tap created by the link (``tap="nr0"``, optionally ``tap_addr``
    such as "10.77.0.1/24" to configure and bring it up) or, for tests, a unix datagram
    pair (``peer_sock`` bound by the link, ``peer_remote`` where it sends).
    ``prefix`` is prepended to the command (e.g. nsenter arguments); it should exec the
    link rather than fork it, so that signals reach the link.

    The link's timing depends on waking up on time next to a busy QEMU, so it asks for
    SCHED_FIFO at ``rt_priority`` (default 10; it blocks when idle and its spin is
    CPU-budgeted) and, if that is not allowed, for ``nice`` (default -10); both need root
    or CAP_SYS_NICE. Where neither is allowed it says so in link.log and runs at the
    normal priority (less precise under load). None disables either request.

    In a VM, writing the capture to disk during the run stalls the vCPUs for milliseconds
    now and then, even from the link's writer thread; so the link keeps up to
    ``hold_capture_mib`` (default 256) MiB of capture in memory and writes it when it stops
    (beyond that it writes as it goes; 0 writes as it goes from the start). The files are
    complete after stop(); a link killed with SIGKILL loses what it held.

    The link dies with the thread that started it (PR_SET_PDEATHSIG): start it from a
    thread that lives as long as the run.

    Files in run_dir: capture.pcap, drops.jsonl, link-stats.json, link.log (stderr).
    """

    def __init__(
        self,
        spec: LinkSpec,
        device_sock: str | Path,
        device_remote: str | Path,
        run_dir: str | Path,
        tap: str | None = None,
        peer_sock: str | Path | None = None,
        peer_remote: str | Path | None = None,
        prefix: Sequence[str] = (),
        *,
        tap_addr: str | None = None,
        tap_mtu: int | None = None,
        rt_priority: int | None = 10,
        nice: int | None = -10,
        hold_capture_mib: int = 256,
        extra_args: Sequence[str] = (),
    ) -> None:
        if (tap is None) == (peer_sock is None or peer_remote is None):
            raise NetreproError(
                "a link needs either a tap or a peer socket pair", "give tap= or peer_sock+peer_remote"
            )
        self.spec = spec
        self.device_sock = Path(device_sock)
        self.device_remote = Path(device_remote)
        self.run_dir = Path(run_dir)
        self.tap = tap
        self.peer_sock = Path(peer_sock) if peer_sock is not None else None
        self.peer_remote = Path(peer_remote) if peer_remote is not None else None
        self.prefix = list(prefix)
        self.tap_addr = tap_addr
        self.tap_mtu = tap_mtu
        self.rt_priority = rt_priority
        self.nice = nice
        self.hold_capture_mib = hold_capture_mib
        self.extra_args = list(extra_args)
        self.proc: subprocess.Popen | None = None
        self._finalizer: weakref.finalize | None = None
        self.counters_at_stop: LinkCounters | None = None

    pcap_path = property(lambda self: self.run_dir / "capture.pcap")
    drops_path = property(lambda self: self.run_dir / "drops.jsonl")
    stats_path = property(lambda self: self.run_dir / "link-stats.json")
    log_path = property(lambda self: self.run_dir / "link.log")

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def command(self, binary: Path | None = None) -> list[str]:
        """The full command line (prefix included)."""
        cmd = [
            *self.prefix,
            str(binary or link_binary()),
            "--device-sock", str(self.device_sock),
            "--device-remote", str(self.device_remote),
        ]  # fmt: skip
        if self.tap is not None:
            cmd += ["--tap", self.tap]
            if self.tap_addr:
                cmd += ["--tap-addr", self.tap_addr]
            if self.tap_mtu:
                cmd += ["--tap-mtu", str(self.tap_mtu)]
        else:
            cmd += ["--peer-sock", str(self.peer_sock), "--peer-remote", str(self.peer_remote)]
        cmd += [
            "--to-device", self.spec.to_device.cli(),
            "--to-peer", self.spec.to_peer.cli(),
            "--seed", str(self.spec.seed),
            "--pcap", str(self.pcap_path),
            "--drops", str(self.drops_path),
            "--stats", str(self.stats_path),
            "--die-with-parent",
        ]  # fmt: skip
        if self.spec.snaplen:
            cmd += ["--snaplen", str(self.spec.snaplen)]
        if self.hold_capture_mib:
            cmd += ["--hold-capture-mib", str(self.hold_capture_mib)]
        if self.rt_priority:
            cmd += ["--rt-priority", str(self.rt_priority)]
        if self.nice is not None:
            cmd += ["--nice", str(self.nice)]
        return cmd + self.extra_args

    def _check_paths(self) -> None:
        for path in (self.device_sock, self.device_remote, self.peer_sock, self.peer_remote):
            if path is not None and len(os.fsencode(str(path))) > SUN_PATH_MAX:
                raise NetreproError(
                    f"unix socket path too long ({len(str(path))} > {SUN_PATH_MAX} bytes): {path}",
                    "use a shorter run directory (e.g. under /tmp)",
                )

    def _log_line(self) -> str:
        try:
            lines = [line for line in self.log_path.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            lines = []
        return lines[-1].strip() if lines else "no message"

    def start(self, timeout: float = 10.0) -> Link:
        """Spawn the link and wait until it prints READY."""
        global _libc
        if self.proc is not None:
            raise NetreproError("this link was already started", "create a new Link for a new run")
        self._check_paths()
        binary = link_binary()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.stats_path.unlink(missing_ok=True)
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        with open(self.log_path, "wb") as log:
            try:
                self.proc = subprocess.Popen(
                    self.command(binary),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    preexec_fn=_pdeathsig,
                    start_new_session=False,
                    close_fds=True,
                )
            except OSError as exc:
                raise NetreproError(
                    f"cannot start the link: {exc}", f"check the command prefix {self.prefix}"
                ) from exc
        self._finalizer = weakref.finalize(self, _kill, self.proc)
        try:
            self._wait_ready(timeout)
        except BaseException:
            self._terminate(1.0)
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        data = b""
        while b"\n" not in data:
            left = deadline - time.monotonic()
            if left <= 0:
                raise NetreproError(
                    f"the link did not become ready within {timeout:g} s",
                    f"see {self.log_path}: {self._log_line()}",
                )
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 256)
                if not chunk:
                    self.proc.wait()
                    raise NetreproError(
                        f"the link exited at start (status {self.proc.returncode}): {self._log_line()}",
                        f"see {self.log_path}",
                    )
                data += chunk
        if data.split(b"\n", 1)[0].strip() != b"READY":
            raise NetreproError(f"the link said {data!r} instead of READY", f"see {self.log_path}")

    def counters(self, timeout: float = 2.0) -> LinkCounters:
        """The counters now, without stopping the link (SIGUSR1 and a fresh stats file)."""
        if self.proc is None or self.proc.poll() is not None:
            raise NetreproError("the link is not running", "start it first")
        before = self._snapshot_number()
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._snapshot_number() > before:
                return LinkCounters.from_file(self.stats_path)
            time.sleep(0.002)
        raise NetreproError(f"the link did not write its stats within {timeout:g} s", f"see {self.log_path}")

    def _snapshot_number(self) -> int:
        try:
            return int(json.loads(self.stats_path.read_text()).get("snapshot", 0))
        except (OSError, ValueError):
            return 0

    def _terminate(self, timeout: float) -> bool:
        """SIGTERM, then SIGKILL if needed; True if it stopped on SIGTERM."""
        proc = self.proc
        if proc is None:
            return False
        graceful = True
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                graceful = False
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if self._finalizer is not None:
            self._finalizer.detach()
        return graceful

    def stop(self, timeout: float = 5.0) -> LinkCounters:
        """Stop the link (SIGTERM; SIGKILL if it hangs) and return its final counters."""
        if self.counters_at_stop is not None:
            return self.counters_at_stop
        if self.proc is None:
            raise NetreproError("the link was never started", "call start() first")
        already_exited = self.proc.poll() is not None
        graceful = self._terminate(timeout)
        status = self.proc.returncode
        if not graceful:
            raise NetreproError(
                f"the link did not stop within {timeout:g} s and was killed", f"see {self.log_path}"
            )
        if status != 0:
            when = "during the run" if already_exited else "when stopped"
            raise NetreproError(
                f"the link exited {when} with status {status}: {self._log_line()}", f"see {self.log_path}"
            )
        self.counters_at_stop = LinkCounters.from_file(self.stats_path)
        return self.counters_at_stop

    def __enter__(self) -> Link:
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.stop()
        else:
            # the exception in flight is the one to report; the process is gone either way
            with contextlib.suppress(NetreproError):
                self.stop()


def read_drops(path: Path) -> list[dict[str, Any]]:
    """The drops log as a list of dicts."""
    text = Path(path).read_text() if Path(path).exists() else ""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def read_pcap(path: Path) -> list[tuple[float, bytes]]:
    """(timestamp in seconds, frame bytes) for each record of a classic pcap (µs or ns)."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        raise NetreproError(f"{path} is not a pcap file (too short)", "check the link's log")
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    magic = struct.unpack(endian + "I", data[:4])[0]
    if magic not in (0xA1B2C3D4, 0xA1B23C4D):
        raise NetreproError(f"{path} is not a classic pcap file (magic {magic:#x})", "check the link's log")
    scale = 1e-9 if magic == 0xA1B23C4D else 1e-6
    out = []
    offset = 24
    while offset + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack(endian + "IIII", data[offset : offset + 16])
        offset += 16
        out.append((sec + frac * scale, data[offset : offset + incl]))
        offset += incl
    return out


__all__ = [
    "Direction",
    "DirectionCounters",
    "Link",
    "LinkCounters",
    "LinkSpec",
    "link_binary",
    "parse_drop_list",
    "parse_gemodel",
    "parse_percent",
    "parse_rate",
    "parse_size",
    "parse_time",
    "read_drops",
    "read_pcap",
]
