"""Platform descriptions: loading, validation and its one-line errors."""

from __future__ import annotations

import pytest

from harness.core.errors import NetreproError
from harness.rig.platform import load_platform, platform_names


def test_openmv_n6_description_has_the_board_facts(n6):
    assert n6.engine["machine"] == "mps3-an547"
    assert n6.nic["base"] == 0x41400000 and n6.nic["irq"] == 49
    assert n6.console["base"] == 0x49303000
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
