"""The units a link setting is written in: tc's conventions for times, rates, sizes and percentages.

Each parser takes what a user wrote (a preset's TOML value, an override, a command-line
option) and `what`, the name to put in the one-line error, and returns the value in plain
units: seconds, bit/s, bytes, fractions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from harness.core.errors import NetreproError

DROP_KINDS = ("frame", "data", "syn", "fin", "rst", "ack", "udp", "seq")

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


def parse_count(value: Any, what: str = "count") -> int:
    """A whole number such as a queue limit in packets: ``100`` or ``"100"``."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or not str(value).strip().isdigit():
        raise NetreproError(f"bad {what} {value!r}", "give a whole number, e.g. 100")
    return int(value)


def parse_flag(value: Any, what: str = "flag") -> bool:
    """true/false, or 0/1 (as a number or a string)."""
    if isinstance(value, bool):
        return value
    if value in (0, 1, "0", "1"):
        return bool(int(value))
    raise NetreproError(f"bad {what} {value!r}", "give true or false")


def parse_word(value: Any, what: str = "name") -> str:
    """A name such as ``normal`` or ``drop``; which names are allowed is the setting's check."""
    if not isinstance(value, str):
        raise NetreproError(f"bad {what} {value!r}", "give it as a string")
    return value.strip()


def parse_gemodel(value: Any, what: str = "gemodel") -> tuple[float, float, float, float] | None:
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
            f"bad {what} {value!r}: 1 to 4 values", "write it like '1% 30% 100% 0%' (p r 1-h 1-k)"
        )
    probs = [parse_percent(item, f"{what} probability") for item in items]
    p = probs[0]
    r = probs[1] if len(probs) > 1 else 1.0 - p
    bad_loss = probs[2] if len(probs) > 2 else 1.0
    good_loss = probs[3] if len(probs) > 3 else 0.0
    return (p, r, bad_loss, good_loss)


_DROP_ENTRY = re.compile(r"^(" + "|".join(DROP_KINDS) + r"):([1-9][0-9]*)(?:-([1-9][0-9]*))?$")


def parse_drop_list(value: Any, what: str = "drop-list entry") -> tuple[str, ...]:
    """Drop-list entries ``KIND:N`` or ``KIND:N-M`` from ``"data:3,frame:12"`` or a sequence.

    KIND is frame (every frame), data (IPv4 TCP segments with payload, retransmissions
    included), syn, fin, rst, ack (pure ACKs), or udp; N counts from 1 in that direction.
    KIND seq names bytes, not frames: seq:N drops the frame that first carries byte N of the
    TCP connection opened last that way (relative to its SYN, as Wireshark numbers them: the
    first byte of data is 1), seq:N-M each frame that first carries any of bytes N to M; a
    retransmission is never dropped by a seq entry.
    """
    if value is None or value == "":
        return ()
    items = re.split(r"[\s,+]+", value.strip()) if isinstance(value, str) else [str(v).strip() for v in value]
    out = []
    for item in items:
        match = _DROP_ENTRY.match(item)
        if not match or (match.group(3) and int(match.group(3)) < int(match.group(2))):
            raise NetreproError(
                f"bad {what} {item!r}",
                f"write KIND:N or KIND:N-M with KIND one of {', '.join(DROP_KINDS)}",
            )
        out.append(item)
    return tuple(out)


def drop_entries(kind: str, spans: Sequence[tuple[int, int]]) -> tuple[str, ...]:
    """The drop list that names ``spans`` (first, last; from 1) of ``kind``: ``KIND:N``, or ``KIND:N-M`` for
    spans that touch or overlap, merged."""
    merged: list[list[int]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return tuple(f"{kind}:{lo}" if lo == hi else f"{kind}:{lo}-{hi}" for lo, hi in merged)


def fmt_float(value: float) -> str:
    """A float as the C link reads it: short, and exact to 12 significant digits."""
    return format(value, ".12g")
