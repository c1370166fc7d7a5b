"""The real chain of the foundation: lwIP firmware built, booted in QEMU, driven over its console."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from harness.cli.exit_codes import ExitCode
from harness.core.errors import NetreproError
from harness.rig.build import FirmwareConfig, build_firmware, firmware_key, lwip_tree
from harness.rig.engine import QemuEngine
from harness.rig.platform import load_platform
from harness.rig.profile import resolve_profile

pytestmark = pytest.mark.real


def _boot(platform, firmware, tmp_path):
    engine = QemuEngine(platform, firmware.elf, tmp_path, tmp_path)
    return engine, engine.start(timeout=60)


@pytest.mark.parametrize(("profile", "window"), [("mp-n6-before", 16 * 1460), ("mp-n6-after", 32 * 1460),
                                                  ("default", 4 * 536)])
def test_opts_reports_each_profiles_window(n6, tree, tmp_path, no_leftovers, profile, window):
    firmware = build_firmware(FirmwareConfig(n6, resolve_profile(n6, profile), tree))
    engine, console = _boot(n6, firmware, tmp_path)
    with engine:
        assert engine.status() == "running"
        assert console.banner.profile == profile and console.banner.lwip == "2.1.3"
        opts = console.opts()
        assert opts["TCP_WND"] == window
        assert opts["TCP_MSS"] == (536 if profile == "default" else 1460)
        assert opts["LWIP_WND_SCALE"] == 0 and opts["NO_SYS"] == 1
        stats = console.stats()
        assert stats["mem.err"] == 0 and "nic.rx_frames" in stats
        assert console.ip()["ip"] == "0.0.0.0"


def test_a_second_build_is_reused_and_an_override_is_a_new_build(n6, tree):
    profile = resolve_profile(n6, "mp-n6-before")
    first = build_firmware(FirmwareConfig(n6, profile, tree))
    again = build_firmware(FirmwareConfig(n6, profile, tree))
    assert not again.rebuilt and again.key == first.key
    assert again.elf.stat().st_mtime == first.elf.stat().st_mtime
    other = resolve_profile(n6, "mp-n6-before", overrides=["TCP_WND=20*TCP_MSS"], lwip_tree=tree)
    assert build_firmware(FirmwareConfig(n6, other, tree)).key != first.key


def test_an_override_reaches_the_firmware(n6, tree, tmp_path, no_leftovers):
    profile = resolve_profile(n6, "mp-n6-before", overrides=["TCP_WND=20*TCP_MSS"], lwip_tree=tree)
    engine, console = _boot(n6, build_firmware(FirmwareConfig(n6, profile, tree)), tmp_path)
    with engine:
        assert console.opts()["TCP_WND"] == 20 * 1460


def test_a_broken_profile_is_a_one_line_error_naming_the_option(n6, tree, tmp_path):
    opts = tmp_path / "lwipopts.h"
    opts.write_text("#define TCP_MSS 1460\n#define TCP_WND 70000  /* > 64 KiB without LWIP_WND_SCALE */\n")
    with pytest.raises(NetreproError) as err:
        build_firmware(FirmwareConfig(n6, resolve_profile(n6, str(opts)), tree))
    message = str(err.value)
    assert "option TCP_WND" in message and "u16_t" in message and "\n" not in message

    cli = subprocess.run([sys.executable, "-m", "harness.cli", "boot", "openmv-n6", "--lwip", str(opts)],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "CI": "true"})
    assert cli.returncode == ExitCode.COULD_NOT
    assert cli.stderr.count("\n") == 1 and "TCP_WND" in cli.stderr and "Traceback" not in cli.stderr


def test_a_users_lwipopts_with_its_own_include_dir(n6, tree, tmp_path, no_leftovers):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "my_tuning.h").write_text("#define MY_SEGMENTS 12\n")
    (tmp_path / "lwipopts.h").write_text('#include "my_tuning.h"\n#define TCP_MSS 1200\n'
                                         "#define TCP_WND (MY_SEGMENTS * TCP_MSS)\n")
    profile = resolve_profile(n6, str(tmp_path / "lwipopts.h"), [str(inc)])
    engine, console = _boot(n6, build_firmware(FirmwareConfig(n6, profile, tree)), tmp_path)
    with engine:
        opts = console.opts()
        assert (opts["TCP_MSS"], opts["TCP_WND"]) == (1200, 12 * 1200)


def test_cli_boot_json_on_a_warm_cache(n6, tree):
    build_firmware(FirmwareConfig(n6, resolve_profile(n6, None), tree))  # warm the cache
    env = {**os.environ, "CI": "true"}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "boot", "openmv-n6", "--json"],
                          capture_output=True, text=True, timeout=60, env=env)
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["platform"] == "openmv-n6" and result["profile"] == "mp-n6-before"
    assert result["options"]["TCP_MSS"] == 1460 and result["rebuilt"] is False
    assert 0 < result["boot_seconds"] < elapsed < 10


def test_a_users_own_lwip_tree_is_built_and_a_wrong_one_is_named(n6, tree, tmp_path, no_leftovers):
    fork = tmp_path / "lwip-fork"
    shutil.copytree(tree, fork, ignore=shutil.ignore_patterns("doc", "test", "contrib", "debian"))
    init_h = fork / "src" / "include" / "lwip" / "init.h"
    init_h.write_text(re.sub(r"(#define LWIP_VERSION_REVISION\s+)\d+", r"\g<1>9", init_h.read_text()))
    forked = FirmwareConfig(n6, resolve_profile(n6, "mp-n6-after"), lwip_tree(fork))
    firmware = build_firmware(forked)
    # its own image: a key of its own (a fork built before on this machine, wherever it was, is reused)
    stock = FirmwareConfig(n6, resolve_profile(n6, "mp-n6-after"), tree)
    assert firmware.lwip_version == "2.1.9" and firmware_key(forked) != firmware_key(stock)
    assert firmware.elf.parent.name == firmware_key(forked)
    engine, console = _boot(n6, firmware, tmp_path)
    with engine:
        assert console.banner.lwip == "2.1.9" and console.opts()["TCP_WND"] == 46720

    env = {**os.environ, "NETREPRO_LWIP_TREE": str(tmp_path), "CI": "true"}
    cli = subprocess.run([sys.executable, "-m", "harness.cli", "boot", "openmv-n6"], capture_output=True,
                         text=True, timeout=60, env=env)
    assert cli.returncode == ExitCode.COULD_NOT and "is not an lwIP source tree" in cli.stderr
    assert cli.stderr.count("\n") == 1


def test_a_boards_apps_come_from_its_make_variable(n6, tree):
    ethernut = load_platform("ethernut2")
    ethernut_firmware = build_firmware(FirmwareConfig(ethernut, resolve_profile(ethernut, "nutos-default"), tree))
    assert ethernut_firmware.apps == ("shell", "discard", "echo")
    n6_firmware = build_firmware(FirmwareConfig(n6, resolve_profile(n6, "mp-n6-before"), tree))
    assert n6_firmware.apps == ("shell", "iperf", "discard", "sockbench", "echo", "udp")


def test_a_nic_built_for_a_board_of_another_architecture_is_one_line(n6, tree):
    on_arm = dataclasses.replace(n6, firmware=dataclasses.replace(n6.firmware, nic="e1000"))
    with pytest.raises(NetreproError) as err:
        build_firmware(FirmwareConfig(on_arm, resolve_profile(n6, "default"), tree))
    message = str(err.value)
    assert "\n" not in message and "NIC e1000 needs an x86 board" in message and "ARCH 'cortex-m'" in message
