"""lwIP's RAM of a build (harness/rig/lwip_ram.py), checked against nm, the map file and the profiles' options."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.link import LinkSpec
from harness.rig.build import Firmware, FirmwareConfig, build_firmware
from harness.rig.lwip_ram import RAM_FILE, LwipSymbol, cached_lwip_ram, ram_line, tally
from harness.rig.platform import PROJECT_ROOT, load_platform
from harness.rig.profile import resolve_profile
from harness.runs.result import RunResult
from harness.studies.cases import CaseResult, summarise_runs

PROFILES = [("openmv-n6", "mp-n6-before"), ("openmv-n6", "mp-n6-after"), ("xbox", "nxdk-nvnetdrv")]
PROFILE_DIR = PROJECT_ROOT / "firmware" / "profiles"
STRUCT_PBUF = 16          # sizeof(struct pbuf) on these 32-bit targets
TCP_IP_HEADERS = 40       # PBUF_IP_HLEN + PBUF_TRANSPORT_HLEN
ETH_HEADER = 14           # PBUF_LINK_HLEN without ETH_PAD_SIZE


# ------------------------------------------------------------------ the pure parts


def test_tally_splits_heap_pools_and_other():
    symbols = [LwipSymbol("ram_heap", 0x100, 1000, "core/mem.o"), LwipSymbol("ram", 0x10, 4, "core/mem.o"),
               LwipSymbol("memp_memory_PBUF_POOL_base", 0x500, 3000, "core/memp.o"),
               LwipSymbol("memp_tab_PBUF_POOL", 0x20, 4, "core/memp.o"),
               LwipSymbol("memp_stats_PBUF_POOL", 0x24, 20, "core/memp.o"),
               LwipSymbol("memp_memory_TCP_SEG_base", 0x1100, 300, "core/memp.o"),
               LwipSymbol("arp_table", 0x40, 240, "core/ipv4/etharp.o")]
    ram = tally(symbols)
    assert ram.summary() == {"total": 4568, "heap": 1000, "pools": {"PBUF_POOL": 3024, "TCP_SEG": 300}, "other": 244}
    assert [s.address for s in ram.symbols] == sorted(s.address for s in symbols)
    assert ram_line(ram.summary()) == "lwIP RAM 4.5 KiB: heap 1000, pools 3324 (PBUF_POOL 3024, TCP_SEG 300), other 244"


def test_a_case_carries_the_lwip_ram_total_of_its_runs():
    run = RunResult("openmv-n6", "mp-n6-before", "2.1.3", LinkSpec.from_preset({"to_device": {"rate": "43mbit"}}),
                    {"name": "sock-rx"}, "runs/x", "runs/x/capture.pcap", "runs/x/console.log", "10.77.0.2",
                    throughput_mbps=30.0, lwip_ram={"total": 118600, "heap": 65563, "pools": {}, "other": 53037})
    case = CaseResult("c", "openmv-n6", "mp-n6-before", "wifi", "sock-rx", None)
    summarise_runs(case, [run])
    assert case.lwip_ram_total == 118600 and run.as_dict()["lwip_ram"]["heap"] == 65563


# ------------------------------------------------------------------ real builds


@pytest.fixture(scope="module")
def builds(tree):
    made: dict[tuple[str, ...], Firmware] = {}

    def build(platform_name: str, profile_name: str, *overrides: str) -> Firmware:
        key = (platform_name, profile_name, *overrides)
        if key not in made:
            platform = load_platform(platform_name)
            profile = resolve_profile(platform, profile_name, overrides=list(overrides), lwip_tree=tree)
            made[key] = build_firmware(FirmwareConfig(platform, profile, tree))
        return made[key]
    return build


def _nm(platform: str, *paths: Path) -> list[tuple[int, int, str, str]]:
    """(address, size, type, name) of every sized symbol nm lists, read here apart from lwip_ram.py."""
    toolchain = load_platform(platform).firmware.toolchain
    out = subprocess.run([f"{toolchain}nm", "-S", *map(str, paths)], capture_output=True, text=True, check=True,
                         timeout=60).stdout
    rows = [line.split() for line in out.splitlines()]
    return [(int(r[0], 16), int(r[1], 16), r[2], r[3]) for r in rows if len(r) == 4]


def _object_in_map(map_text: list[str], symbol: LwipSymbol) -> str:
    """The object file the map file puts the symbol in: its own input section (.bss.NAME, -fdata-sections)
    with the path on that line or the next, or else the input section above its address line (.bulk)."""
    own = re.compile(rf"^ \.(?:bss|data|bulk)\.{re.escape(symbol.name)}\b")
    address = re.compile(rf"\b0x0*{symbol.address:x}\b")
    listed = re.compile(rf"^\s+0x0*{symbol.address:x}\s+{re.escape(symbol.name)}$")
    for i, line in enumerate(map_text):
        both = line + " " + map_text[i + 1]
        if own.match(line) and address.search(both):
            return next(t for t in both.split() if t.endswith(".o"))
        if listed.match(line):
            return next(t for above in reversed(map_text[:i]) for t in above.split()[-1:] if t.endswith(".o"))
    return ""


def _option(profile: str, name: str, default: int | None = None) -> int:
    """An option's value as the profile header defines it (an integer expression of numbers and TCP_MSS)."""
    text = (PROFILE_DIR / f"{profile}.h").read_text()
    found = re.search(rf"^#define\s+{name}\s+(.+?)\s*(?:/\*.*)?$", text, re.M)
    if found is None:
        assert default is not None, f"{profile}.h does not define {name}"
        return default
    expression = found[1]
    if "TCP_MSS" in expression:
        expression = expression.replace("TCP_MSS", str(_option(profile, "TCP_MSS")))
    assert re.fullmatch(r"[\d\s()*+-]+", expression), f"{name} = {found[1]} is not plain arithmetic"
    return int(eval(expression))  # digits, spaces, parentheses and + - * only (checked just above)


def _align(size: int, alignment: int) -> int:
    return (size + alignment - 1) // alignment * alignment


@pytest.mark.real
@pytest.mark.parametrize(("platform", "profile"), PROFILES)
def test_the_total_is_the_sum_of_the_symbols_it_names_as_nm_and_the_map_list_them(builds, platform, profile):
    firmware = builds(platform, profile)
    ram = firmware.lwip_ram
    assert ram is not None and ram.symbols
    nm = {(address, name): (size, kind) for address, size, kind, name in _nm(platform, firmware.elf)}
    listed = [nm[(s.address, s.name)] for s in ram.symbols]
    assert [size for size, _ in listed] == [s.size for s in ram.symbols]
    assert {kind for _, kind in listed} <= set("bBdD")  # writable data only
    assert ram.total == sum(size for size, _ in listed) == ram.heap + sum(ram.pools.values()) + ram.other
    map_text = (firmware.build_dir / "firmware.map").read_text().split("Linker script and memory map")[1].splitlines()
    objects = {s.name: _object_in_map(map_text, s) for s in ram.symbols}
    assert all("/obj/lwip/" in path and path.endswith(s.object) for s in ram.symbols
               for path in [objects[s.name]]), objects
    # and none left out: every data symbol of the ELF that only lwIP's objects define is named
    lwip_objects = sorted((firmware.build_dir / "obj" / "lwip").rglob("*.o"))
    others = sorted(set((firmware.build_dir / "obj").rglob("*.o")) - set(lwip_objects))
    lwip_names = {name for _, _, kind, name in _nm(platform, *lwip_objects) if kind in "bBdD"}
    other_names = {name for _, _, kind, name in _nm(platform, *others) if kind in "bBdD"}
    linked = {name for (_, name), (_, kind) in nm.items() if kind in "bBdD"}
    assert (lwip_names - other_names) & linked <= {s.name for s in ram.symbols}


@pytest.mark.real
@pytest.mark.parametrize(("platform", "profile"), PROFILES)
def test_the_heap_and_the_pbuf_pool_are_the_profiles_sizes_as_lwip_places_them(builds, platform, profile):
    ram = builds(platform, profile).lwip_ram
    size, alignment = _option(profile, "MEM_SIZE"), _option(profile, "MEM_ALIGNMENT", 4)
    width = 4 if size > 64000 else 2                       # mem_size_t (mem.h)
    struct_mem = _align(_align(2 * width + 1, width), alignment)  # next, prev, used
    assert ram.heap == _align(size, alignment) + 2 * struct_mem + alignment - 1
    count, mss = _option(profile, "PBUF_POOL_SIZE"), _option(profile, "TCP_MSS")
    pbuf = _align(STRUCT_PBUF, alignment) + _align(mss + TCP_IP_HEADERS + ETH_HEADER + 2, alignment)  # ETH_PAD_SIZE 2
    storage = next(s.size for s in ram.symbols if s.name == "memp_memory_PBUF_POOL_base")
    assert storage == count * pbuf + alignment - 1
    assert ram.pools["PBUF_POOL"] > storage and max(ram.pools, key=ram.pools.get) == "PBUF_POOL"


@pytest.mark.real
def test_the_n6_profiles_differ_in_tcp_wnd_alone_which_sizes_no_static_ram(builds):
    before, after = builds("openmv-n6", "mp-n6-before").lwip_ram, builds("openmv-n6", "mp-n6-after").lwip_ram
    assert _option("mp-n6-after", "TCP_WND") == 2 * _option("mp-n6-before", "TCP_WND")
    for name in ("TCP_SND_BUF", "MEM_SIZE", "PBUF_POOL_SIZE", "MEMP_NUM_TCP_SEG"):
        assert _option("mp-n6-after", name) == _option("mp-n6-before", name)
    assert after.summary() == before.summary()  # the window is a counter; what fills it comes from PBUF_POOL


@pytest.mark.real
def test_larger_tcp_pools_are_larger_by_their_elements(builds):
    before = builds("openmv-n6", "mp-n6-after").lwip_ram
    bigger = builds("openmv-n6", "mp-n6-after", "PBUF_POOL_SIZE=48", "MEMP_NUM_TCP_SEG=96").lwip_ram
    old, new = ({s.name: s.size for s in ram.symbols} for ram in (before, bigger))
    for pool, count, more in (("PBUF_POOL", 32, 16), ("TCP_SEG", 64, 32)):
        name = f"memp_memory_{pool}_base"
        element = (old[name] - 3) // count  # the storage is count elements and MEM_ALIGNMENT - 1
        assert (old[name] - 3) % count == 0 and new[name] - old[name] == more * element > 0
        assert bigger.pools[pool] - before.pools[pool] == more * element
    assert (bigger.heap, bigger.other) == (before.heap, before.other)
    assert {p: s for p, s in bigger.pools.items() if p not in ("PBUF_POOL", "TCP_SEG")} == \
        {p: s for p, s in before.pools.items() if p not in ("PBUF_POOL", "TCP_SEG")}


@pytest.mark.real
def test_the_measure_is_kept_with_the_build(builds, tree):
    firmware = builds("openmv-n6", "mp-n6-before")
    kept = firmware.build_dir / RAM_FILE
    assert json.loads(kept.read_text()) == firmware.lwip_ram.as_dict()
    kept.unlink()  # a build from before lwip_ram.json: measured on its next use
    again = build_firmware(FirmwareConfig(load_platform("openmv-n6"), firmware.profile, tree))
    assert not again.rebuilt and again.lwip_ram == firmware.lwip_ram and kept.is_file()
    assert cached_lwip_ram(firmware.build_dir, "no-such-toolchain-") == firmware.lwip_ram  # read, not measured


@pytest.mark.real
def test_boot_json_carries_lwip_ram(builds, no_leftovers):
    firmware = builds("openmv-n6", "mp-n6-before")  # the platform's default profile
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "boot", "openmv-n6", "--json"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "CI": "true"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["lwip_ram"] == firmware.lwip_ram.summary()
