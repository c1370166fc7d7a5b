"""Platform descriptions: loading, validation and its one-line errors."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from harness.cli.main import cmd_platforms
from harness.core.errors import NetreproError
from harness.rig import engine as engine_module
from harness.rig.build import generated_files
from harness.rig.engine import NicBackend, make_engine
from harness.rig.platform import _SCHEMA, Nic, load_platform, platform_names


def test_openmv_n6_description_has_the_board_facts(n6):
    assert n6.engine.machine == "mps3-an547"
    assert n6.nic.base == 0x41400000 and n6.nic.irq == 49
    assert n6.console.base == 0x49303000
    assert n6.memory["code"].origin == 0 and n6.memory["data"].origin == 0x20000000
    assert {"wifi", "ethernet"} <= set(n6.links)
    assert n6.default_profile in n6.profiles
    assert "openmv-n6" in platform_names()


def test_unknown_platform_names_the_known_ones():
    with pytest.raises(NetreproError, match=r"unknown platform 'nope'.*openmv-n6"):
        load_platform("nope")


def _write(tmp_path, text):
    path = tmp_path / "board.toml"
    path.write_text(text)
    return str(path)


@pytest.fixture
def n6_text(n6):
    return n6.path.read_text()


def test_unknown_key_is_a_one_line_error(tmp_path, n6_text):
    bad = n6_text.replace('machine = "mps3-an547"', 'machine = "mps3-an547"\nmachnie = "typo"')
    with pytest.raises(NetreproError) as err:
        load_platform(_write(tmp_path, bad))
    assert "unknown key 'engine.machnie'" in str(err.value) and "\n" not in str(err.value)


def test_missing_field_is_named(tmp_path, n6_text):
    bad = n6_text.replace("irq = 49", "")
    with pytest.raises(NetreproError, match=r"missing key 'nic.irq'"):
        load_platform(_write(tmp_path, bad))


def test_missing_section_is_named(tmp_path, n6_text):
    bad = n6_text.replace("[console]", "[consolx]")
    with pytest.raises(NetreproError, match=r"unknown key 'consolx'|missing section \\[console\\]"):
        load_platform(_write(tmp_path, bad))


def test_bad_toml_and_bad_link_preset(tmp_path, n6):
    with pytest.raises(NetreproError, match="not valid TOML"):
        load_platform(_write(tmp_path, "name = "))
    with pytest.raises(NetreproError, match=r"no link preset 'lte'.*wifi"):
        n6.link_preset("lte")


# What the descriptions turned into before their sections were typed: `netrepro platforms --json`, each board's
# board_config.h and memory.ld, and QEMU's arguments (computed once from the dict-based loader; the monitor since
# moved from QMP to the human monitor, harness/rig/monitor.py).
_OUTPUTS = json.loads((Path(__file__).parent / "platform_outputs.json").read_text())


def test_platforms_json_is_unchanged(capsys, monkeypatch):
    monkeypatch.delenv("NETREPRO_PLATFORMS", raising=False)
    assert cmd_platforms(argparse.Namespace(json=True)) == 0
    assert json.loads(capsys.readouterr().out) == _OUTPUTS["platforms_json"]


@pytest.mark.parametrize("name", sorted(_OUTPUTS["boards"]))
def test_firmware_config_and_engine_args_are_unchanged(name, monkeypatch):
    expected, platform = _OUTPUTS["boards"][name], load_platform(name)
    assert generated_files(platform) == expected["generated"]
    if "engine_args" in expected:
        monkeypatch.setattr(engine_module.shutil, "which", lambda binary: f"/usr/bin/{binary}")
        nic = NicBackend(local=Path("/tmp/l"), remote=Path("/tmp/r"))
        argv = make_engine(platform, Path("/tmp/fw.elf"), Path("/tmp"), Path("/tmp/sock"), nic).argv()
        assert argv[1:] == expected["engine_args"]


def test_sections_are_typed_and_their_keys_are_their_fields(n6):
    assert isinstance(n6.nic, Nic) and n6.nic.overflow_frames == 2 and n6.nic.rx_overflow == "hold"
    assert n6.host is not None and "qemu-system-arm" in n6.host.packages
    assert {f.name for f in dataclasses.fields(Nic)} == set(_SCHEMA["nic"])
    assert n6.with_nic(rx_burst_frames=4).nic.overflow_frames == 4 and n6.nic.rx_burst_frames == 0


def test_a_value_of_the_wrong_type_is_named(tmp_path, n6_text):
    bad = n6_text.replace("irq = 49", 'irq = "49"')
    with pytest.raises(NetreproError, match=r"nic.irq '49' is not a whole number") as err:
        load_platform(_write(tmp_path, bad))
    assert "\n" not in str(err.value)
