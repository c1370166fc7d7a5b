"""THE table of the link's settings: each one is declared once, here, and everything else is derived.

A row gives a setting's
  name      the user's word: the preset key, the override keyword, the command-line option
            (``--name``, and ``--name-to-device``/``--name-to-peer`` where it has `cli_each`) and
            the C link's key (``--to-device name=...``; ``--name`` for a link-wide setting);
  field     the Direction (or, link-wide, LinkSpec) field, which is also the key in result.json's
            ``link`` object; it carries the plain unit (``delay_s``, ``rate_bps``, ``limit_packets``);
  default   in plain units;
  parse     from what the user wrote (tc units, see units.py) to plain units;
  check     the values the field may hold; it also says how the C link declares the setting
            (-DNR_DIR_SETTINGS, see harness/link/c/settings.h), how the value is written on its command line
            and in JSON;
  cli, cli_each   the command line's help for the both-ways and the per-direction options (none
            when empty; "{way}" names the direction);
  user      False for what the platform's [nic] sets (LinkSpec.paced_to_device and
            overflowing_to_device), which presets, overrides and the command line do not offer;
  scope     "direction" (one value each way) or "link" (one value for the whole link);
  doc       for a setting without a command-line option: what it means and where its default comes from.

Adding a setting is one row here plus its use in the link's C units, harness/link/c/ (its struct member, default,
parser and range check come from the row).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.errors import NetreproError
from harness.link.units import (
    fmt_float,
    parse_count,
    parse_drop_list,
    parse_flag,
    parse_gemodel,
    parse_percent,
    parse_rate,
    parse_size,
    parse_time,
    parse_word,
)

WAYS = {"to_device": "peer -> device", "to_peer": "device -> peer"}
RTT_HELP = "round-trip time the link adds, split evenly (e.g. 5.5ms)"  # rtt is not a setting: it sets both delays
_U64_MAX = 2**64 - 1  # what the C link's whole numbers hold
_GEMODEL_KEYS = ("p", "r", "1-h", "1-k")


def _bad(field: str, value: Any, problem: str, fix: str) -> NetreproError:
    return NetreproError(f"bad link {field} {value!r}{problem}", fix)


# ------------------------------------------------------------------ checks: the values a field may hold


@dataclass(frozen=True)
class Real:
    """A finite number from lo to hi (seconds, fractions); written with 12 significant digits."""

    lo: float = 0.0
    hi: float = math.inf
    type = "float"

    def validate(self, field: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise _bad(field, value, "", f"give a number from {self._range()}")
        if not self.lo <= value <= self.hi:
            problem = f": less than {self.lo:g}" if value < self.lo else f": more than {self.hi:g}"
            raise _bad(field, value, problem, f"give a number from {self._range()}")
        return float(value)

    def _range(self) -> str:
        return f"{self.lo:g} up" if self.hi == math.inf else f"{self.lo:g} to {self.hi:g}"

    def c_decl(self, name: str, default: float) -> str:
        return f"NR_REAL({name}, {_c_real(default)}, {_c_real(self.lo)}, {_c_real(self.hi)})"

    def c_value(self, value: float) -> str:
        return fmt_float(value)

    to_json = from_json = staticmethod(lambda value: value)


@dataclass(frozen=True)
class Whole:
    """A whole number from lo to hi (None: what the C link holds), or `off`, the value that turns it off."""

    lo: int = 0
    hi: int | None = None
    off: int | None = None
    type = "int"

    def validate(self, field: str, value: Any) -> int:
        hi = _U64_MAX if self.hi is None else self.hi
        if isinstance(value, bool) or not isinstance(value, int):
            raise _bad(field, value, "", self._allowed())
        if value == self.off or self.lo <= value <= hi:
            return value
        raise _bad(field, value, f": less than {self.lo}" if value < self.lo else f": more than {hi}", self._allowed())

    def _allowed(self) -> str:
        text = f"give a whole number from {self.lo} " + ("up" if self.hi is None else f"to {self.hi}")
        return text if self.off is None else f"{text}, or {self.off} to turn it off"

    def c_decl(self, name: str, default: int) -> str:
        hi = "UINT64_MAX" if self.hi is None else f"{self.hi}ULL"
        off = self.lo if self.off is None else self.off  # lo is allowed anyway: no second value
        return f"NR_WHOLE({name}, {default}ULL, {self.lo}ULL, {hi}, {off}ULL)"

    def c_value(self, value: int) -> str:
        return str(value)

    to_json = from_json = staticmethod(lambda value: value)


@dataclass(frozen=True)
class Flag:
    """true or false; 0 or 1 on the C link's command line."""

    type = "bool"

    def validate(self, field: str, value: Any) -> bool:
        if value not in (True, False):  # 0 and 1 too
            raise _bad(field, value, "", "give true or false")
        return bool(value)

    def c_decl(self, name: str, default: bool) -> str:
        return f"NR_FLAG({name}, {int(default)})"

    def c_value(self, value: bool) -> str:
        return str(int(value))

    to_json = from_json = staticmethod(lambda value: value)


@dataclass(frozen=True)
class Choice:
    """One of a few names."""

    options: tuple[str, ...]
    type = "str"

    def validate(self, field: str, value: Any) -> str:
        if value not in self.options:
            raise _bad(field, value, "", "use " + " or ".join(repr(o) for o in self.options))
        return str(value)

    def c_decl(self, name: str, default: str) -> str:
        return f'NR_CHOICE({name}, "{default}", "{"|".join(self.options)}")'

    def c_value(self, value: str) -> str:
        return value

    to_json = from_json = staticmethod(lambda value: value)


@dataclass(frozen=True)
class GeModel:
    """netem's Gilbert-Elliott model (p, r, 1-h, 1-k) as fractions, or None; a dict of them in JSON."""

    type = "tuple[float, float, float, float] | None"

    def validate(self, field: str, value: Any) -> tuple[float, ...] | None:
        if value is None:
            return None
        try:
            probs = tuple(float(v) for v in value)
        except (TypeError, ValueError):
            probs = ()
        if len(probs) != 4 or not all(0 <= v <= 1 for v in probs):
            raise _bad(field, value, "", "give (p, r, 1-h, 1-k) as fractions 0..1")
        return probs

    def c_decl(self, name: str, default: None) -> str:
        return f"NR_GEMODEL({name})"

    def c_value(self, value: tuple[float, ...] | None) -> str:
        return ",".join(fmt_float(v) for v in value) if value else ""

    def to_json(self, value: tuple[float, ...] | None) -> dict[str, float] | None:
        return dict(zip(_GEMODEL_KEYS, value, strict=True)) if value else None

    def from_json(self, value: Mapping[str, float] | None) -> tuple[float, ...] | None:
        return tuple(value[k] for k in _GEMODEL_KEYS) if value else None


@dataclass(frozen=True)
class DropList:
    """Drop-list entries KIND:N or KIND:N-M (see units.parse_drop_list); a list in JSON."""

    type = "tuple[str, ...]"

    def validate(self, field: str, value: Any) -> tuple[str, ...]:
        return parse_drop_list(value, f"link {field} entry")

    def c_decl(self, name: str, default: tuple[str, ...]) -> str:
        return f"NR_DROPS({name})"

    def c_value(self, value: tuple[str, ...]) -> str:
        return ",".join(value)

    def to_json(self, value: tuple[str, ...]) -> list[str]:
        return list(value)

    from_json = staticmethod(lambda value: tuple(value))


Check = Real | Whole | Flag | Choice | GeModel | DropList


def _c_real(value: float) -> str:
    return "INFINITY" if value == math.inf else repr(float(value))


# ------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Setting:
    """One row of the table (see the module's docstring)."""

    name: str
    field: str
    default: Any
    parse: Callable[[Any, str], Any]
    check: Check
    cli: str = ""
    cli_each: str = ""
    user: bool = True
    scope: str = "direction"
    cli_type: Callable[[str], Any] = str  # what argparse converts the option's text with
    doc: str = ""  # what a setting without a command-line option means, and where its default comes from


SETTINGS: tuple[Setting, ...] = (
    # name, field (= result.json key), default, parse, check, command-line help
    Setting("delay", "delay_s", 0.0, parse_time, Real(0, 3600), cli_each="one-way delay {way}"),
    Setting("jitter", "jitter_s", 0.0, parse_time, Real(0, 3600), cli="delay jitter each way (e.g. 200us)"),
    Setting("jitter_dist", "jitter_dist", "uniform", parse_word, Choice(("uniform", "normal"))),
    Setting("rate", "rate_bps", 0, parse_rate, Whole(), cli="bit rate each way, tc units (e.g. 43mbit)",
            cli_each="rate {way}"),
    Setting("burst", "burst_bytes", 0, parse_size, Whole(), cli="bytes the rate may pass back to back"),
    Setting("limit", "limit_packets", 1000, parse_count, Whole(), cli="queue limit in packets each way"),
    Setting("limit_bytes", "limit_bytes", 0, parse_size, Whole(), cli="queue limit in bytes each way"),
    Setting("loss", "loss", 0.0, parse_percent, Real(0, 1), cli="random loss each way (e.g. 0.1%)",
            cli_each="loss {way}"),
    Setting("gemodel", "gemodel", None, parse_gemodel, GeModel(),
            cli="Gilbert-Elliott loss: p,r[,1-h[,1-k]] (netem's gemodel)"),
    Setting("drop", "drop", (), parse_drop_list, DropList(),
            cli_each="drop list {way} (e.g. data:3,syn:1,seq:1461-2920)"),
    Setting("reorder", "reorder", False, parse_flag, Flag(),
            cli="1: jitter may reorder frames (default 0: order kept)"),
    # the device's NIC, from the platform's [nic]: its wire (frames handed over no faster) ...
    Setting("pace", "pace_bps", 0, parse_rate, Whole(), user=False),
    Setting("pace_burst", "pace_burst_frames", 0, parse_count, Whole(), user=False),
    # ... and what happens to a frame it cannot take when due: "hold" it, or "drop" it (device-full)
    Setting("overflow", "overflow", "hold", parse_word, Choice(("hold", "drop")), user=False),
    # full-size frames the socket toward it holds unread (through SO_SNDBUF): 2 is the kernel's least
    # SO_SNDBUF, 1000 bounds what is asked of it; 0 leaves the queue to the kernel's max_dgram_qlen
    Setting("sock_frames", "sock_frames", 0, parse_count, Whole(2, 1000, off=0), user=False),
    # link-wide: the loss models' seed, and the capture's snap length (0: whole frames; pcap's largest)
    Setting("seed", "seed", 1, parse_count, Whole(), cli="seed of the loss models", scope="link", cli_type=int),
    Setting("snaplen", "snaplen", 0, parse_size, Whole(0, 262144), cli="bytes of each frame kept in the capture",
            scope="link"),
    # link-wide: the medium. "wire": two independent lines, one each way (rate, burst). "shared": one radio
    # channel that both directions take turns on (802.11 DCF with A-MPDU aggregation and block acks; see
    # harness/link/c/air.h, "the shared medium"); rate and burst then do not apply, phy_rate does. The defaults
    # are 802.11n (HT) at 2.4 GHz, IEEE Std 802.11-2016 clause 19 (HT PHY) and clause 10 (MAC).
    Setting("medium", "medium", "wire", parse_word, Choice(("wire", "shared")), scope="link",
            doc="wire: a line each way; shared: one channel both directions take turns on"),
    Setting("phy_rate", "phy_rate_bps", 65_000_000, parse_rate, Whole(1), scope="link",
            doc="the PHY data rate of the aggregated frames: 65 Mbit/s is HT MCS 7, 20 MHz, one spatial stream, "
                "800 ns guard interval (802.11-2016 19.5, the HT MCS tables)"),
    Setting("slot", "slot_s", 9e-6, parse_time, Real(0, 1), scope="link",
            doc="aSlotTime: 9 us, the short slot of HT/ERP at 2.4 GHz (802.11-2016 19.4.4, HT PHY "
                "characteristics)"),
    Setting("sifs", "sifs_s", 10e-6, parse_time, Real(0, 1), scope="link",
            doc="aSIFSTime: 10 us at 2.4 GHz (802.11-2016 19.4.4)"),
    Setting("aifsn", "aifsn", 2, parse_count, Whole(1, 15), scope="link",
            doc="slots after SIFS before the backoff: 2 is DCF's DIFS = SIFS + 2 slots = 28 us (802.11-2016 "
                "10.3.2.3, IFS); EDCA's best effort is 3"),
    Setting("cwmin", "cwmin", 15, parse_count, Whole(0, 1023), scope="link",
            doc="aCWmin: 15 (802.11-2016 19.4.4); a turn waits the mean backoff, cwmin/2 slots"),
    Setting("preamble", "preamble_s", 36e-6, parse_time, Real(0, 1), scope="link",
            doc="the data PPDU's preamble and headers: HT-mixed, one stream: L-STF 8 + L-LTF 8 + L-SIG 4 + "
                "HT-SIG 8 + HT-STF 4 + HT-LTF 4 = 36 us (802.11-2016 19.3.6, timing constants)"),
    Setting("signal_ext", "signal_ext_s", 6e-6, parse_time, Real(0, 1), scope="link",
            doc="aSignalExtension after every OFDM PPDU at 2.4 GHz: 6 us (802.11-2016 19.4.4)"),
    Setting("blockack", "blockack_s", 32e-6, parse_time, Real(0, 1), scope="link",
            doc="the compressed BlockAck (32 bytes) at 24 Mbit/s non-HT OFDM, the highest mandatory rate not "
                "above MCS 7's 54 Mbit/s reference rate: 20 us preamble + ceil((16 + 256 + 6) / 96) = 3 symbols "
                "of 4 us = 32 us, plus its signal extension"),
    Setting("mpdu_overhead", "mpdu_overhead_bytes", 28, parse_size, Whole(0, 4096), scope="link",
            doc="bytes an Ethernet frame gains as an A-MPDU subframe: delimiter 4 + QoS data header 26 + "
                "LLC/SNAP 8 + FCS 4 - Ethernet header 14 = 28, then padded to 4 bytes (802.11-2016 9.2, 9.7)"),
    Setting("agg_frames", "agg_frames", 64, parse_count, Whole(1, 64), scope="link",
            doc="most MPDUs a turn carries: 64, the HT block ack window (802.11-2016 10.24)"),
    Setting("agg_bytes", "agg_bytes", 65535, parse_size, Whole(1), scope="link",
            doc="most A-MPDU bytes a turn carries: 65535, HT's largest A-MPDU, 2^(13+3) - 1 (802.11-2016 "
                "9.4.2.56, HT Capabilities)"),
    Setting("agg_time", "agg_time_s", 5.484e-3, parse_time, Real(0, 1), scope="link",
            doc="longest data PPDU (preamble + frames): 5.484 ms, the longest HT-mixed PPDU its L-SIG can "
                "announce (802.11-2016 19.3.9.3, L-SIG; ns-3 uses it too); 0: no limit"),
    Setting("fer", "fer", 0.0, parse_percent, Real(0, 1), scope="link",
            doc="chance that an MPDU of a turn is lost on the air (its block ack asks for it again)"),
    Setting("retry_limit", "retry_limit", 7, parse_count, Whole(1, 255), scope="link",
            doc="transmissions of an MPDU before it is dropped (reason air): dot11ShortRetryLimit 7 "
                "(802.11-2016 Annex C)"),
    # link-wide, the shared medium only: the WiFi chip's host bus (SDIO or SPI) between the board and the radio,
    # one half-duplex resource both directions cross, a transfer at a time in arrival order (harness/link/c/bus.h,
    # "the WiFi chip's host bus"). 0: no bus stage, the default, so a preset without it runs as before.
    Setting("bus_rate", "bus_rate_bps", 0, parse_rate, Whole(), scope="link",
            doc="the host bus's data rate (medium = \"shared\" only); 0: no bus. Assumed, not published: SDIO "
                "4-bit at 50 MHz is 200 Mbit/s raw (SD 3.0 high speed; the CYW43439 and CYW4343W take it), gSPI "
                "at 50 MHz 50 Mbit/s"),
    Setting("bus_cost", "bus_cost_s", 0.0, parse_time, Real(0, 1), scope="link",
            doc="the host bus's time for each transfer beside its bytes: command and response, block framing "
                "and the driver's interrupt turnaround for one frame; assumed, 20-300 us"),
)

SETTING = {s.name: s for s in SETTINGS}
DIRECTION_SETTINGS = tuple(s for s in SETTINGS if s.scope == "direction")
LINK_SETTINGS = tuple(s for s in SETTINGS if s.scope == "link")
OVERFLOW_MODES = SETTING["overflow"].check.options


def override_keys() -> Iterator[tuple[str, Setting, str | None]]:
    """(keyword, setting, direction or None for both) for every keyword an override takes, rtt aside.

    A direction's setting is ``name`` (both directions) or ``name_to_device``/``name_to_peer``."""
    for s in SETTINGS:
        if not s.user:
            continue
        yield s.name, s, None
        if s.scope == "direction":
            for way in WAYS:
                yield f"{s.name}_{way}", s, way


@dataclass(frozen=True)
class CliOption:
    """One command-line option: ``--key`` (dashes for underscores) stored as ``link_<key>``."""

    key: str
    help: str
    type: Callable[[str], Any] = str


def cli_options() -> list[CliOption]:
    """The command line's link options, in the table's order (rtt first)."""
    options = [CliOption("rtt", RTT_HELP)]
    for s in SETTINGS:
        if s.cli:
            options.append(CliOption(s.name, s.cli, s.cli_type))
        if s.cli_each:
            options += [CliOption(f"{s.name}_{way}", s.cli_each.format(way=arrow), s.cli_type)
                        for way, arrow in WAYS.items()]
    return options


def c_defines() -> list[str]:
    """The C link's settings as -D flags: its struct members, defaults, parsers and ranges come from the table."""
    return [
        "-DNR_DIR_SETTINGS=" + " ".join(s.check.c_decl(s.name, s.default) for s in DIRECTION_SETTINGS),
        "-DNR_LINK_SETTINGS=" + " ".join(s.check.c_decl(s.name, s.default) for s in LINK_SETTINGS),
    ]
