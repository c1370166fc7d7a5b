"""What the link does: Direction (one way) and LinkSpec (both ways, seed, snap length), from presets and overrides.

Their fields are written out, for static tools to read, and must match the table in settings.py, where
a setting is declared (tests/test_link_spec_fields.py fails when they drift); this module adds what is not
per setting: the RTT split between the two delays, the C link's spec string,
the JSON written into result.json, and reading a preset or an override.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core.errors import NetreproError
from harness.core.ethernet import OVERHEAD, wire_bytes
from harness.link.settings import (
    DIRECTION_SETTINGS,
    LINK_SETTINGS,
    SETTING,
    WAYS,
    Setting,
    override_keys,
)
from harness.link.units import parse_time

_RTT = "rtt"  # not a setting: the sum of the two delays, split evenly unless one is given
_DELAY = SETTING["delay"]
_PRESET_NOTES = ("description", "note")  # words for people in a preset, not settings
_OVERRIDES = {key: (setting, way) for key, setting, way in override_keys()}
_WORDS = sorted(key for key, (_, way) in _OVERRIDES.items() if way is None)  # both ways, and link-wide
_WIRE_ONLY = ("rate", "burst")  # a wire's line each way: on the shared medium the air's phy_rate sets the pace
_PRESET_KEYS = sorted([_RTT, *WAYS, *_PRESET_NOTES, *_WORDS])
_WAY_KEYS = sorted(s.name for s in DIRECTION_SETTINGS if s.user)


def _validate(obj: Any, settings: Sequence[Setting]) -> None:
    """Check every setting's value; store the normalised one (e.g. a drop list's text as a tuple)."""
    for s in settings:
        object.__setattr__(obj, s.field, s.check.validate(s.field, getattr(obj, s.field)))


def _from_json(settings: Sequence[Setting], data: Mapping[str, Any]) -> dict[str, Any]:
    return {s.field: s.check.from_json(data[s.field]) for s in settings if s.field in data}


# ------------------------------------------------------------------ one direction


@dataclass(frozen=True)
class Direction:
    """What one direction of the link does to frames (plain units: seconds, bit/s, bytes, fractions); one field
    per direction setting of the table in settings.py, in its order, with its type and default."""

    delay_s: float = 0.0
    jitter_s: float = 0.0
    jitter_dist: str = "uniform"
    rate_bps: int = 0
    burst_bytes: int = 0
    limit_packets: int = 1000
    limit_bytes: int = 0
    loss: float = 0.0
    gemodel: tuple[float, float, float, float] | None = None
    drop: tuple[str, ...] = ()
    reorder: bool = False
    pace_bps: int = 0
    pace_burst_frames: int = 0
    overflow: str = "hold"
    sock_frames: int = 0

    def __post_init__(self) -> None:
        _validate(self, DIRECTION_SETTINGS)

    def serialisation_s(self, frame_len: int) -> float:
        """Time on the line for a frame of frame_len bytes (without FCS); 0 without a rate."""
        return wire_bytes(frame_len) * 8 / self.rate_bps if self.rate_bps else 0.0

    def stationary_loss(self) -> float:
        """The long-run loss fraction the random models predict (drop list and queue aside)."""
        ge = 0.0
        if self.gemodel:
            p, r, bad_loss, good_loss = self.gemodel
            bad = p / (p + r) if p + r > 0 else 0.0
            ge = bad * bad_loss + (1 - bad) * good_loss
        return 1 - (1 - ge) * (1 - self.loss)

    def cli(self) -> str:
        """The spec string the C link takes (--to-device/--to-peer): name=value for every setting."""
        return ",".join(f"{s.name}={s.check.c_value(getattr(self, s.field))}" for s in DIRECTION_SETTINGS)

    def as_dict(self) -> dict[str, Any]:
        """The values in plain units, keyed by field, as result.json's link object records them."""
        out = {s.field: s.check.to_json(getattr(self, s.field)) for s in DIRECTION_SETTINGS}
        return {**out, "ethernet_overhead_bytes": OVERHEAD}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Direction:
        """A direction from as_dict()'s output (keys it lacks keep their defaults)."""
        return cls(**_from_json(DIRECTION_SETTINGS, data))


# ------------------------------------------------------------------ both directions


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


def _preset_changes(table: Any) -> dict[str, tuple[Any, str]]:
    """A preset table as override keywords: ``to_device = {rate = ...}`` is ``rate_to_device``."""
    if not isinstance(table, Mapping):
        raise NetreproError(f"a link preset must be a table, not {table!r}", "write e.g. {rtt = '5.5ms'}")
    changes: dict[str, tuple[Any, str]] = {}
    for key, value in table.items():
        if key in WAYS:
            if not isinstance(value, Mapping):
                raise NetreproError(f"link preset {key} must be a table", f"write {key} = {{delay = '2ms'}}")
            for name, sub in value.items():
                if name not in _WAY_KEYS:
                    raise NetreproError(f"unknown link key {name!r} in the link preset's {key}",
                                        f"use {', '.join(_WAY_KEYS)}")
                changes[f"{name}_{key}"] = (sub, f"link preset {key}.{name}")
        elif key not in _PRESET_KEYS:
            raise NetreproError(f"unknown link preset key {key!r}", f"use {', '.join(_PRESET_KEYS)}")
        elif key not in _PRESET_NOTES:
            changes[key] = (value, f"link preset {key}")
    return changes


@dataclass(frozen=True)
class LinkSpec:
    """Both directions of the link, the loss models' seed, the capture's snap length (0: whole frames) and the
    medium (a wire, or one shared channel with its 802.11 timing); after the two directions, one field per
    link-wide setting of the table in settings.py, in its order, with its type and default."""

    to_device: Direction = field(default_factory=Direction)
    to_peer: Direction = field(default_factory=Direction)
    seed: int = 1
    snaplen: int = 0
    medium: str = "wire"
    phy_rate_bps: int = 65_000_000
    slot_s: float = 9e-6
    sifs_s: float = 10e-6
    aifsn: int = 2
    cwmin: int = 15
    preamble_s: float = 36e-6
    signal_ext_s: float = 6e-6
    blockack_s: float = 32e-6
    mpdu_overhead_bytes: int = 28
    agg_frames: int = 64
    agg_bytes: int = 65535
    agg_time_s: float = 5.484e-3
    fer: float = 0.0
    retry_limit: int = 7
    bus_rate_bps: int = 0
    bus_cost_s: float = 0.0

    def __post_init__(self) -> None:
        _validate(self, LINK_SETTINGS)
        if self.bus_rate_bps and self.medium != "shared":
            raise NetreproError(f"the link's bus_rate {self.bus_rate_bps / 1e6:g} Mbit/s needs medium = \"shared\": "
                                "the WiFi chip's host bus sits between the board and the air",
                                "set medium = \"shared\" (e.g. the N6's wifi preset), or bus_rate = 0 for no bus")
        if self.to_peer.overflow != "hold":
            raise NetreproError(f"bad link to_peer overflow {self.to_peer.overflow!r}: dropping what the receiver "
                                "cannot take is for the device's NIC", "set overflow on to_device only")

    @property
    def rtt_s(self) -> float:
        """The round-trip time the delays add (serialisation and queueing aside)."""
        return self.to_device.delay_s + self.to_peer.delay_s

    @classmethod
    def from_preset(cls, table: Mapping[str, Any]) -> LinkSpec:
        """A spec from a platform description's link preset.

        ``{rtt = "5.5ms", rate = "43mbit"}`` applies to both directions (the RTT split evenly);
        every setting a user may give (the table in settings.py) works the same way, and
        sub-tables ``to_device = {...}`` / ``to_peer = {...}`` set one direction. With an RTT
        and one direction's delay, the other direction gets the rest.
        """
        return cls()._changed(_preset_changes(table))

    def override(self, **changes: Any) -> LinkSpec:
        """A new spec with the given values changed (None = unchanged), in tc units.

        A setting's name (``rate``, ``loss``, ``jitter``, ``limit``, ``burst``, ``gemodel``, ...)
        applies to both directions, ``<name>_to_device``/``<name>_to_peer`` to one; ``seed`` and
        ``snaplen`` to the link. ``rtt`` sets both one-way delays to half of it, unless
        ``delay_to_device`` or ``delay_to_peer`` is given too (then the other direction gets the
        rest). ``gemodel="off"`` removes the model, ``drop_to_peer=""`` empties a drop list.
        """
        return self._changed({key: (value, key) for key, value in changes.items() if value is not None})

    def _changed(self, changes: Mapping[str, tuple[Any, str]]) -> LinkSpec:
        """A new spec with changes {override keyword: (value as written, its name for errors)}."""
        both: dict[str, Any] = {}
        ways: dict[str, dict[str, Any]] = {way: {} for way in WAYS}
        link: dict[str, Any] = {}
        for key, (raw, label) in changes.items():
            if key == _RTT:
                continue
            if key not in _OVERRIDES:
                raise NetreproError(f"unknown link setting {key!r}", f"use {_RTT} or one of {', '.join(_WORDS)}"
                                    " (with _to_device or _to_peer for one direction)")
            setting, way = _OVERRIDES[key]
            target = link if setting.scope == "link" else ways[way] if way else both
            target[setting.field] = setting.parse(raw, label)
        dev, peer = {**both, **ways["to_device"]}, {**both, **ways["to_peer"]}
        if _RTT in changes:
            if _DELAY.name in changes:
                raise NetreproError("the link's rtt and delay are both given", "give one of them")
            rtt = parse_time(*changes[_RTT])
            dev[_DELAY.field], peer[_DELAY.field] = _split_rtt(rtt, dev.get(_DELAY.field), peer.get(_DELAY.field))
        changed = dataclasses.replace(self, to_device=dataclasses.replace(self.to_device, **dev),
                                      to_peer=dataclasses.replace(self.to_peer, **peer), **link)
        wire_only = [key for key in changes if key in _OVERRIDES and _OVERRIDES[key][0].name in _WIRE_ONLY]
        if changed.medium == "shared" and wire_only:
            raise NetreproError(f"the link's {wire_only[0]} does not apply on the shared medium: its phy_rate does",
                                "set phy_rate, or use a wire preset (e.g. wifi-wire)")
        return changed

    def paced_to_device(self, rate_bps: int, burst_frames: int) -> LinkSpec:
        """The same link, handing frames to the device no faster than its NIC's wire takes them."""
        return dataclasses.replace(
            self, to_device=dataclasses.replace(self.to_device, pace_bps=rate_bps, pace_burst_frames=burst_frames)
        )

    def sent_through_wire(self, rate_bps: int) -> LinkSpec:
        """The same link, carrying what the device sends no faster than its NIC's wire puts it out: the
        lower of the wire's rate and the preset's (0: the preset had none)."""
        own = self.to_peer.rate_bps
        capped = rate_bps if not own or own > rate_bps else own
        return dataclasses.replace(self, to_peer=dataclasses.replace(self.to_peer, rate_bps=capped))

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
            **{s.field: s.check.to_json(getattr(self, s.field)) for s in LINK_SETTINGS},
            "to_device": self.to_device.as_dict(),
            "to_peer": self.to_peer.as_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinkSpec:
        """A spec from as_dict()'s output, e.g. result.json's ``link`` (rtt_s is the delays' sum)."""
        return cls(to_device=Direction.from_dict(data.get("to_device", {})),
                   to_peer=Direction.from_dict(data.get("to_peer", {})), **_from_json(LINK_SETTINGS, data))

