"""tools/bootstrap installs what the command's boards need: the base, then each board's packages as its
platforms/<board>.toml [host] table declares them (read through `tools/bootstrap --print`, which installs nothing)."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BOOTSTRAP = ROOT / "tools" / "bootstrap"
PLATFORMS = sorted(p.stem for p in (ROOT / "platforms").glob("*.toml"))
OTHER_ARCHES = ("arm", "i686", "x86", "i386")


def _print(*args: str, cwd: Path = ROOT) -> list[str]:
    proc = subprocess.run([BOOTSTRAP, "--print", *args], capture_output=True, text=True, timeout=60, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def _declared(platform: str) -> list[str]:
    return tomllib.loads((ROOT / "platforms" / f"{platform}.toml").read_text())["host"]["packages"]


def _with(base: list[str], *extra: list[str]) -> list[str]:
    out = list(base)
    for packages in extra:
        out += [p for p in packages if p not in out]
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_board_gets_the_base_and_what_its_toml_declares(platform):
    base = _print()
    assert _print(platform) == _with(base, _declared(platform))
    assert not set(base) & set(_declared(platform)), "a board's table repeats the base"


def test_ethernut2_needs_no_arm_or_x86_toolchain_nor_the_tests_browser():
    packages = _print("ethernut2")
    assert not [p for p in packages if any(arch in p for arch in OTHER_ARCHES)], packages
    assert "chromium" not in packages and "gcc-avr" in packages and "libsimavr-dev" in packages


def test_all_is_every_board_and_the_tests_browser():
    assert _print("--all") == _with(_print(), ["chromium"], *map(_declared, PLATFORMS))


def test_a_command_line_brings_the_boards_it_names(tmp_path):
    base = _print()
    assert _print("--for", "platforms") == base
    run = _print("--for", "run", "openmv-rt1060", "--lwip", "mp-rt1060-after")
    assert run == _with(base, _declared("openmv-rt1060"))
    # a report, shipped or the user's own, brings the board its `platform` names
    shipped = tomllib.loads((ROOT / "reports" / "xbox.toml").read_text())["platform"]
    assert _print("--for", "reproduce", "xbox") == _with(base, _declared(shipped))
    (tmp_path / "mine.toml").write_text('platform = "ethernut2"\n')
    assert _print("--for", "reproduce", "mine.toml", cwd=tmp_path) == _with(base, _declared("ethernut2"))


def test_an_unknown_board_is_one_line_naming_the_known_ones():
    proc = subprocess.run([BOOTSTRAP, "--print", "no-such-board"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "no-such-board" in proc.stderr
    assert all(p in proc.stderr for p in PLATFORMS), proc.stderr


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_declared_packages_are_the_ones_that_ship_the_boards_tools(platform):
    """Where this machine has the board's compiler and emulator, dpkg names the package each came from."""
    data = tomllib.loads((ROOT / "platforms" / f"{platform}.toml").read_text())
    tools = [f"{data['firmware']['toolchain']}gcc"]
    if data["engine"]["kind"] == "qemu":
        tools.append(data["engine"]["binary"])
    needed = _print(platform)
    for tool in tools:
        path = shutil.which(tool)
        if path is None or shutil.which("dpkg") is None:
            pytest.skip(f"{tool} is not installed here")
        owner = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, check=True).stdout
        assert owner.split(":")[0] in needed, f"{tool} comes from {owner.strip()}, not declared for {platform}"
