"""The link's settings table: every setting's preset key, override keyword, command-line option,
JSON key and C key are derived from its one row, and they agree; its ranges are checked in Python
and, from the same row, by the real C link."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness.cli.link_args import LINK_OPTIONS, add_link_args, link_spec
from harness.core.errors import NetreproError
from harness.core.ethernet import OVERHEAD
from harness.link import DROP_KINDS, Direction, Link, LinkSpec, link_binary, parse_drop_list
from harness.link.settings import DIRECTION_SETTINGS, LINK_SETTINGS, SETTINGS, WAYS, Real, Whole, cli_options

# what a user writes for each setting, and the plain value it means (a new setting needs a sample here)
SAMPLES = {
    "delay": ("3ms", 0.003),
    "jitter": ("200us", 200e-6),
    "jitter_dist": ("normal", "normal"),
    "rate": ("43mbit", 43_000_000),
    "burst": ("3k", 3072),
    "limit": ("50", 50),
    "limit_bytes": ("64k", 65536),
    "loss": ("0.5%", 0.005),
    "gemodel": ("1%,30%", (0.01, 0.3, 1.0, 0.0)),
    "drop": ("data:3,syn:1", ("data:3", "syn:1")),
    "reorder": ("1", True),
    "pace": ("100mbit", 100_000_000),
    "pace_burst": ("4", 4),
    "overflow": ("drop", "drop"),
    "sock_frames": ("6", 6),
    "seed": ("7", 7),
    "snaplen": ("128", 128),
    "medium": ("shared", "shared"),
    "phy_rate": ("72.2mbit", 72_200_000),
    "slot": ("0.02ms", 20e-6),
    "sifs": ("16us", 16e-6),
    "aifsn": ("3", 3),
    "cwmin": ("31", 31),
    "preamble": ("44us", 44e-6),
    "signal_ext": ("0", 0.0),
    "blockack": ("12us", 12e-6),
    "mpdu_overhead": ("32", 32),
    "agg_frames": ("32", 32),
    "agg_bytes": ("32k", 32768),
    "agg_time": ("4ms", 4e-3),
    "fer": ("10%", 0.1),
    "retry_limit": ("4", 4),
    "bus_rate": ("200mbit", 200_000_000),
    "bus_cost": ("0.04ms", 40e-6),
}

# the shared medium's settings (link-wide, after the keys that were there before them)
MEDIUM_KEYS = [
    "medium", "phy_rate_bps", "slot_s", "sifs_s", "aifsn", "cwmin", "preamble_s", "signal_ext_s", "blockack_s",
    "mpdu_overhead_bytes", "agg_frames", "agg_bytes", "agg_time_s", "fer", "retry_limit", "bus_rate_bps", "bus_cost_s",
]  # fmt: skip

# the command line and result.json as they were before the table: they must not change
CLI_OPTIONS = {
    "rtt", "rate", "loss", "jitter", "limit", "limit_bytes", "burst", "delay_to_device", "delay_to_peer",
    "rate_to_device", "rate_to_peer", "loss_to_device", "loss_to_peer", "drop_to_device", "drop_to_peer",
    "gemodel", "seed", "snaplen", "reorder",
}  # fmt: skip
JSON_LINK_KEYS = ["rtt_s", "seed", "snaplen", *MEDIUM_KEYS, "to_device", "to_peer"]
JSON_DIRECTION_KEYS = [
    "delay_s", "jitter_s", "jitter_dist", "rate_bps", "burst_bytes", "limit_packets", "limit_bytes", "loss",
    "gemodel", "drop", "reorder", "pace_bps", "pace_burst_frames", "overflow", "sock_frames",
    "ethernet_overhead_bytes",
]  # fmt: skip

USER = [s for s in SETTINGS if s.user]
SHARED_ONLY = ("medium", "bus_rate")  # the bus needs medium = "shared": given with it
USER_WAYS = [s for s in DIRECTION_SETTINGS if s.user]
NIC = [s for s in SETTINGS if not s.user]


def plain(name: str):
    value = SAMPLES[name][1]
    return pytest.approx(value) if isinstance(value, float | tuple) and name != "drop" else value


def field_of(spec: LinkSpec, setting, way: str = "to_device"):
    return getattr(spec if setting.scope == "link" else getattr(spec, way), setting.field)


def every_setting() -> LinkSpec:
    """A spec with every setting at its sample: the user's through a preset, the NIC's as the rig sets them."""
    # a preset giving a wire's rate and burst with medium = "shared" is refused (harness/link/spec.py), and so is a
    # host bus on a wire: the medium and the bus come in a change of their own, so that every setting reaches the link
    spec = LinkSpec.from_preset({s.name: SAMPLES[s.name][0] for s in USER if s.name not in SHARED_ONLY}).override(
        **{name: SAMPLES[name][0] for name in SHARED_ONLY})
    return spec.paced_to_device(SAMPLES["pace"][1], SAMPLES["pace_burst"][1]).overflowing_to_device(
        SAMPLES["overflow"][1], SAMPLES["sock_frames"][1]
    )


@pytest.fixture
def short_dir():
    path = Path(tempfile.mkdtemp(prefix="nrs-", dir="/tmp"))  # unix socket paths are short
    yield path
    shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------ the table itself


def test_every_setting_has_a_sample_and_distinct_names():
    assert set(SAMPLES) == {s.name for s in SETTINGS}
    assert len({s.name for s in SETTINGS}) == len(SETTINGS) and len({s.field for s in SETTINGS}) == len(SETTINGS)
    for s in SETTINGS:
        assert s.check.validate(s.field, s.default) == s.default, s.name  # the default is allowed
        assert s.parse(SAMPLES[s.name][0], s.name) == plain(s.name), s.name


def test_fields_are_the_tables():
    assert [f.name for f in dataclasses.fields(Direction)] == [s.field for s in DIRECTION_SETTINGS]
    assert [f.name for f in dataclasses.fields(LinkSpec)] == ["to_device", "to_peer", *(s.field for s in LINK_SETTINGS)]
    for s in DIRECTION_SETTINGS:
        assert getattr(Direction(), s.field) == s.default
    for s in LINK_SETTINGS:
        assert getattr(LinkSpec(), s.field) == s.default


# ------------------------------------------------------------------ preset keys and overrides


def test_a_preset_with_every_setting():
    spec = every_setting()
    for s in SETTINGS:
        for way in WAYS if s.user else ["to_device"]:  # the NIC's settings are the device's side
            assert field_of(spec, s, way) == plain(s.name), (s.name, way)
    by_override = LinkSpec().override(**{s.name: SAMPLES[s.name][0] for s in USER if s.name not in SHARED_ONLY})
    by_override = by_override.override(**{name: SAMPLES[name][0] for name in SHARED_ONLY})
    assert spec == by_override.paced_to_device(SAMPLES["pace"][1], SAMPLES["pace_burst"][1]).overflowing_to_device(
        SAMPLES["overflow"][1], SAMPLES["sock_frames"][1])


@pytest.mark.parametrize("setting", USER_WAYS, ids=lambda s: s.name)
def test_one_direction_from_a_sub_table_or_an_override(setting):
    written = SAMPLES[setting.name][0]
    for way, other in (("to_device", "to_peer"), ("to_peer", "to_device")):
        spec = LinkSpec.from_preset({way: {setting.name: written}})
        assert field_of(spec, setting, way) == plain(setting.name)
        assert field_of(spec, setting, other) == setting.default
        assert spec == LinkSpec().override(**{f"{setting.name}_{way}": written})


def test_the_nics_settings_are_not_preset_keys_or_overrides():
    for s in NIC:
        with pytest.raises(NetreproError, match=f"unknown link preset key '{s.name}'"):
            LinkSpec.from_preset({s.name: SAMPLES[s.name][0]})
        with pytest.raises(NetreproError, match=f"unknown link setting '{s.name}'"):
            LinkSpec().override(**{s.name: SAMPLES[s.name][0]})


def test_rtt_and_unknown_keys():
    assert LinkSpec.from_preset({"rtt": "6ms", "to_peer": {"delay": "1ms"}}).to_device.delay_s == pytest.approx(5e-3)
    assert LinkSpec().override(rtt="6ms", delay_to_peer="1ms") == LinkSpec.from_preset(
        {"rtt": "6ms", "to_peer": {"delay": "1ms"}})
    with pytest.raises(NetreproError, match="rtt and delay"):
        LinkSpec.from_preset({"rtt": "6ms", "delay": "1ms"})
    with pytest.raises(NetreproError, match="unknown link key 'rate_to_peer' in the link preset's to_device"):
        LinkSpec.from_preset({"to_device": {"rate_to_peer": "1mbit"}})
    with pytest.raises(NetreproError, match="unknown link setting 'bandwidth'"):
        LinkSpec().override(bandwidth="1mbit")
    assert LinkSpec.from_preset({"note": "a note", "description": "words"}) == LinkSpec()


# ------------------------------------------------------------------ JSON


def test_json_keys_are_the_fields_and_round_trip():
    spec = every_setting()
    data = json.loads(json.dumps(spec.as_dict()))
    assert list(data) == JSON_LINK_KEYS
    for way in WAYS:
        assert list(data[way]) == JSON_DIRECTION_KEYS
        assert data[way]["ethernet_overhead_bytes"] == OVERHEAD
    assert data["rtt_s"] == pytest.approx(2 * SAMPLES["delay"][1])
    assert data["to_device"]["gemodel"] == {"p": 0.01, "r": 0.3, "1-h": 1.0, "1-k": 0.0}
    assert data["to_device"]["drop"] == ["data:3", "syn:1"]
    for s in LINK_SETTINGS:
        assert data[s.field] == SAMPLES[s.name][1]
    assert LinkSpec.from_dict(data) == spec
    assert LinkSpec.from_dict(LinkSpec().as_dict()) == LinkSpec()


# ------------------------------------------------------------------ the command line


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    p.add_argument("--link", default=None)
    add_link_args(p)
    return p


def test_cli_options_are_the_same_as_before():
    assert set(LINK_OPTIONS) == CLI_OPTIONS
    assert [o.key for o in cli_options()] == list(LINK_OPTIONS)
    assert all(LINK_OPTIONS.values())
    assert parser().parse_args(["--seed", "3"]).link_seed == 3  # an int, as argparse always gave it


@pytest.mark.parametrize("option", cli_options(), ids=lambda o: o.key)
def test_each_cli_option_is_its_preset_key(option):
    from harness.rig.platform import load_platform

    setting = next((s for s in SETTINGS if option.key in (s.name, *(f"{s.name}_{w}" for w in WAYS))), None)
    written = "5ms" if setting is None else SAMPLES[setting.name][0]
    args = parser().parse_args([f"--{option.key.replace('_', '-')}", written])
    spec = link_spec(args, load_platform("xbox"))
    way = option.key.rsplit("_to_", 1)
    preset = {f"to_{way[1]}": {way[0]: written}} if len(way) == 2 else {option.key: written}
    assert spec == LinkSpec.from_preset(preset) == LinkSpec().override(**{option.key: written})
    assert spec != LinkSpec()


# ------------------------------------------------------------------ the C link


def c_keys(spec_text: str) -> list[str]:
    return re.findall(r"(?:^|,)([a-z_]+)=", spec_text)


def test_the_c_command_line_has_every_setting(short_dir):
    spec = every_setting()
    assert c_keys(spec.to_device.cli()) == [s.name for s in DIRECTION_SETTINGS]
    link = Link(spec, short_dir / "d", short_dir / "q", short_dir / "run", peer_sock=short_dir / "p",
                peer_remote=short_dir / "r")
    cmd = link.command(Path("netrepro-link"))
    for s in LINK_SETTINGS:
        assert cmd[cmd.index(f"--{s.name}") + 1] == s.check.c_value(getattr(spec, s.field))
    assert "delay=0.003" in spec.to_device.cli() and "gemodel=0.01,0.3,1,0" in spec.to_device.cli()


def test_the_real_link_takes_every_setting(short_dir):
    spec = every_setting()
    link = Link(spec, short_dir / "d", short_dir / "q", short_dir / "run", peer_sock=short_dir / "p",
                peer_remote=short_dir / "r")
    with link:
        pass
    counters = link.counters_at_stop
    assert counters is not None and counters.to_device.overflow == "drop" and counters.to_peer.overflow == "hold"
    assert counters.to_device.sock_frames == SAMPLES["sock_frames"][1]


def bounded():
    """(setting, a value just outside its range) for every setting with a bound the C link must check too."""
    for s in SETTINGS:
        if isinstance(s.check, Whole) and s.check.hi is not None:
            yield s, s.check.hi + 1
        if isinstance(s.check, Whole) and s.check.lo > 0:
            yield s, s.check.lo - 1
        if isinstance(s.check, Real) and s.check.hi != float("inf"):
            yield s, s.check.hi * 2


@pytest.mark.parametrize(("setting", "value"), list(bounded()), ids=lambda v: getattr(v, "name", str(v)))
def test_ranges_in_python_and_in_the_c_link(setting, value, tmp_path):
    with pytest.raises(NetreproError, match=setting.field) as err:
        setting.check.validate(setting.field, value)
    assert "\n" not in str(err.value) and "give" in str(err.value)  # the problem and the fix, on one line
    base = [str(link_binary()), "--device-sock", str(tmp_path / "a"), "--device-remote", str(tmp_path / "b"),
            "--peer-sock", str(tmp_path / "c"), "--peer-remote", str(tmp_path / "d")]
    text = setting.check.c_value(value)
    arg = [f"--{setting.name}", text] if setting.scope == "link" else ["--to-device", f"{setting.name}={text}"]
    proc = subprocess.run(base + arg, capture_output=True, text=True, timeout=5)
    assert proc.returncode == 2 and setting.name in proc.stderr, proc.stderr


def test_sock_frames_range_errors():
    for bad in (1, 1001, -1, 2.5, True):
        with pytest.raises(NetreproError, match="sock_frames") as err:
            LinkSpec().overflowing_to_device("drop", bad)
        assert "\n" not in str(err.value)
    assert "from 2 to 1000, or 0" in str(err.value)
    for good in (0, 2, 1000):
        assert LinkSpec().overflowing_to_device("drop", good).to_device.sock_frames == good


def test_other_checks():
    with pytest.raises(NetreproError, match="delay_s"):
        LinkSpec().override(rtt="10800s")  # 5400 s each way: more than the table's 3600 s
    with pytest.raises(NetreproError, match="loss"):
        Direction(loss=1.5)
    with pytest.raises(NetreproError, match="rate_bps"):
        Direction(rate_bps=True)
    with pytest.raises(NetreproError, match="jitter_dist"):
        LinkSpec().override(jitter_dist="pareto")
    with pytest.raises(NetreproError, match="snaplen"):
        LinkSpec(snaplen=300_000)
    with pytest.raises(NetreproError, match="to_peer overflow"):
        LinkSpec(to_peer=Direction(overflow="drop"))  # the C link refuses it too
    assert Direction(reorder=1).reorder is True and Direction(drop="data:3 syn:1").drop == ("data:3", "syn:1")


def test_the_drop_lists_kinds_are_the_same_in_python_and_in_the_c_link(tmp_path):
    with pytest.raises(NetreproError, match="KIND one of " + ", ".join(DROP_KINDS)):
        parse_drop_list("packet:3")
    base = [str(link_binary()), "--device-sock", str(tmp_path / "a"), "--device-remote", str(tmp_path / "b"),
            "--peer-sock", str(tmp_path / "c"), "--peer-remote", str(tmp_path / "d")]
    proc = subprocess.run([*base, "--to-device", "drop=packet:3"], capture_output=True, text=True, timeout=5)
    assert proc.returncode == 2 and f"KIND one of {', '.join(DROP_KINDS)};" in proc.stderr, proc.stderr
