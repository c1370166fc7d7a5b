"""A port's own lwipopts.h, as it is: its config header, its hook macros, newer options, app pools.

The option files here have the shape real ports' have (MicroPython's ports/*/lwip_inc/lwipopts.h
and extmod/lwip-include/lwipopts_common.h): they include the port's configuration header, point
LWIP_RAND() at a hardware RNG function, define SYS_ARCH_PROTECT for their own locking, set options
only newer lwIP releases know and size pools for mDNS, DHCP and IGMP. Each is built for real and
either builds, with what netrepro stood in named, or fails with one line naming the missing
header or symbol and the fix; the options that build are checked on the booted board.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli.exit_codes import ExitCode
from harness.core.errors import NetreproError
from harness.rig.build import FirmwareConfig, build_firmware, firmware_key
from harness.rig.engine import make_engine
from harness.rig.profile import resolve_profile
from tests.conftest import netrepro_cli

pytestmark = pytest.mark.real

MSS = 1460

# MicroPython-style: config header, no-op protection macros, LWIP_RAND() -> trng_random_u32,
# LWIP_DHCP_DOES_ACD_CHECK (lwIP 2.2), mDNS/DHCP/IGMP on with pools sized for the responder.
PORT_OPTS = """\
#ifndef MICROPY_INCLUDED_MIMXRT_LWIP_LWIPOPTS_H
#define MICROPY_INCLUDED_MIMXRT_LWIP_LWIPOPTS_H

#include <stdint.h>
#include "py/mpconfig.h"

// This protection is not needed, instead protect lwIP code with flags
#define SYS_ARCH_DECL_PROTECT(lev) do { } while (0)
#define SYS_ARCH_PROTECT(lev) do { } while (0)
#define SYS_ARCH_UNPROTECT(lev) do { } while (0)

#define NO_SYS                          1
#define SYS_LIGHTWEIGHT_PROT            1
#define MEM_ALIGNMENT                   4

#define LWIP_CHKSUM_ALGORITHM           3
#define LWIP_CHECKSUM_CTRL_PER_NETIF    1
#define LWIP_ARP                        1
#define LWIP_ETHERNET                   1
#define LWIP_RAW                        1
#define LWIP_NETCONN                    0
#define LWIP_SOCKET                     0
#define LWIP_STATS                      0
#define LWIP_NETIF_HOSTNAME             1

#define LWIP_DHCP                       1
#define LWIP_DHCP_DOES_ACD_CHECK        0 // to speed DHCP up
#define LWIP_DNS                        1
#define LWIP_DNS_SUPPORT_MDNS_QUERIES   1
#define LWIP_MDNS_RESPONDER             1
#define LWIP_IGMP                       1

#define LWIP_NUM_NETIF_CLIENT_DATA      LWIP_MDNS_RESPONDER
#define MEMP_NUM_UDP_PCB                (4 + LWIP_MDNS_RESPONDER)
#define MEMP_NUM_SYS_TIMEOUT            (LWIP_NUM_SYS_TIMEOUT_INTERNAL + 8 * LWIP_MDNS_RESPONDER)

#define SO_REUSE                        1
#define TCP_LISTEN_BACKLOG              1

extern uint32_t trng_random_u32(void);
#define LWIP_RAND() trng_random_u32()

#ifndef MICROPY_LWIP_TCP_WND_SEGMENTS
#define MICROPY_LWIP_TCP_WND_SEGMENTS   4
#endif
#define TCP_MSS                         (1460)
#define TCP_WND                         (MICROPY_LWIP_TCP_WND_SEGMENTS * TCP_MSS)
#define TCP_SND_BUF                     (6 * TCP_MSS)
#define TCP_SND_QUEUELEN                (2 * (TCP_SND_BUF / TCP_MSS))
#define MEM_SIZE                        (13 * 1024)

typedef uint32_t sys_prot_t;

#endif
"""

# Its own locking (SYS_ARCH_PROTECT through port functions), port hooks only the port's C file
# has, and PPP on: an app whose code lwIP's core calls but the firmware does not build.
LOCKING_OPTS = """\
#include <stdint.h>
#include "port_config.h"

#define SYS_LIGHTWEIGHT_PROT 1
extern uint32_t port_enter_critical(void);
extern void port_exit_critical(uint32_t state);
#define SYS_ARCH_DECL_PROTECT(lev) uint32_t lev
#define SYS_ARCH_PROTECT(lev) lev = port_enter_critical()
#define SYS_ARCH_UNPROTECT(lev) port_exit_critical(lev)

#define LWIP_DHCP 1
#define LWIP_DHCP_GET_NTP_SRV 1
extern int port_route_hook(const void *src, const void *dest);
#define LWIP_HOOK_IP4_ROUTE_SRC(src, dest) ((struct netif *)(port_route_hook(src, dest) ? 0 : 0))

#define PPP_SUPPORT 1
#define PPPOS_SUPPORT 1
#define MEMP_NUM_PPP_PCB 2

#define TCP_MSS PORT_TCP_MSS
#define TCP_WND (4 * TCP_MSS)
"""

PORT_HOOKS_C = """\
#include "lwip/opt.h"
#include "lwip/ip_addr.h"
#include "lwip/dhcp.h"

void dhcp_set_ntp_servers(u8_t num_ntp_servers, const ip4_addr_t *ntp_server_addrs)
{
  (void)num_ntp_servers;
  (void)ntp_server_addrs;
}

int port_route_hook(const void *src, const void *dest)
{
  (void)src;
  (void)dest;
  return 0;
}
"""


@pytest.fixture
def port(tmp_path) -> Path:
    """A port's tree: ports/mimxrt/lwip_inc/lwipopts.h and the config header in py/."""
    opts = tmp_path / "ports" / "mimxrt" / "lwip_inc" / "lwipopts.h"
    opts.parent.mkdir(parents=True)
    opts.write_text(PORT_OPTS)
    (tmp_path / "py").mkdir()
    (tmp_path / "py" / "mpconfig.h").write_text("#define MICROPY_LWIP_TCP_WND_SEGMENTS 7\n")
    return opts


@pytest.fixture
def locking_port(tmp_path) -> Path:
    opts = tmp_path / "locking" / "lwipopts.h"
    (tmp_path / "locking" / "inc").mkdir(parents=True)
    opts.write_text(LOCKING_OPTS)
    (opts.parent / "inc" / "port_config.h").write_text("#define PORT_TCP_MSS 1200\n")
    (opts.parent / "port_hooks.c").write_text(PORT_HOOKS_C)
    return opts


def _boot_opts(platform, firmware, run_dir: Path) -> tuple[dict[str, int], list[str]]:
    with make_engine(platform, firmware.elf, run_dir, run_dir) as engine:
        console = engine.start(timeout=60)
        return console.opts(), console.forced_options()


def test_a_missing_port_header_is_one_line_offering_include_or_stub(n6, tree, port):
    with pytest.raises(NetreproError) as err:
        build_firmware(FirmwareConfig(n6, resolve_profile(n6, str(port)), tree))
    message = str(err.value)
    assert "\n" not in message, message
    assert "lwipopts.h:5 includes py/mpconfig.h, which the build cannot find" in message, message
    assert "-I DIR" in message and "--stub-header py/mpconfig.h" in message, message

    # Every missing header at once, each with its #include's line.
    port.write_text(port.read_text().replace('#include "py/mpconfig.h"', '#include "py/mpconfig.h"\n#include "irq.h"'))
    cli = netrepro_cli("boot", "openmv-n6", "--lwip", str(port), timeout=300)
    assert cli.returncode == ExitCode.COULD_NOT, cli.stderr
    assert cli.stderr.count("\n") == 1 and "Traceback" not in cli.stderr, cli.stderr
    assert "py/mpconfig.h" in cli.stderr and "lwipopts.h:6 includes irq.h" in cli.stderr, cli.stderr
    assert "--stub-header py/mpconfig.h --stub-header irq.h" in cli.stderr, cli.stderr


def test_a_ports_file_builds_with_the_stand_ins_named_and_its_values_reach_the_firmware(n6, tree, port,
                                                                                     tmp_path, no_leftovers):
    profile = resolve_profile(n6, str(port), stub_headers=["py/mpconfig.h"])
    firmware = build_firmware(FirmwareConfig(n6, profile, tree))
    assert firmware.stand_ins == ("py/mpconfig.h -> empty header", "trng_random_u32 -> board RNG")
    assert len(firmware.warnings) == 1, firmware.warnings
    line = next(n for n, text in enumerate(PORT_OPTS.splitlines(), 1) if "LWIP_DHCP_DOES_ACD_CHECK" in text)
    assert f"LWIP_DHCP_DOES_ACD_CHECK (lwipopts.h:{line})" in firmware.warnings[0]
    assert "lwIP 2.1.3" in firmware.warnings[0] and "--lwip-tree" in firmware.warnings[0]
    assert firmware.apps == ("shell", "iperf", "discard", "sockbench", "echo", "udp")
    # The stand-in is what the build says: trng_random_u32 defined by netrepro, calling the board's.
    stand_in = (firmware.build_dir / "gen" / "netrepro_stand_ins.c").read_text()
    assert "uint32_t trng_random_u32(void)" in stand_in and "netrepro_rand()" in stand_in

    # LWIP_RAND() runs at boot (tcp_init picks the first local port with it), so booting is the check.
    opts, forced = _boot_opts(n6, firmware, tmp_path)
    assert (opts["TCP_MSS"], opts["TCP_WND"], opts["TCP_SND_BUF"]) == (MSS, 4 * MSS, 6 * MSS)
    assert (opts["TCP_SND_QUEUELEN"], opts["MEM_SIZE"], opts["LWIP_STATS"]) == (12, 13 * 1024, 0)
    assert opts["SYS_LIGHTWEIGHT_PROT"] == 1 and forced == []


def test_the_ports_own_config_header_is_used_when_its_directory_is_given(n6, tree, port, tmp_path, no_leftovers):
    profile = resolve_profile(n6, str(port), include_dirs=[str(tmp_path)])
    firmware = build_firmware(FirmwareConfig(n6, profile, tree))
    assert firmware.stand_ins == ("trng_random_u32 -> board RNG",)
    opts, _ = _boot_opts(n6, firmware, tmp_path)
    assert opts["TCP_WND"] == 7 * MSS  # MICROPY_LWIP_TCP_WND_SEGMENTS from the port's py/mpconfig.h


def test_a_port_function_netrepro_cannot_stand_in_is_one_line_naming_it_its_macro_and_the_fix(n6, tree,
                                                                                              locking_port):
    profile = resolve_profile(n6, str(locking_port), include_dirs=[str(locking_port.parent / "inc")])
    with pytest.raises(NetreproError) as err:
        build_firmware(FirmwareConfig(n6, profile, tree))
    message = str(err.value)
    assert "\n" not in message and "does not link" in message, message
    assert "port_route_hook (LWIP_HOOK_IP4_ROUTE_SRC(src,dest) -> port_route_hook, lwipopts.h:14)" in message
    assert "dhcp_set_ntp_servers (LWIP_DHCP_GET_NTP_SRV -> dhcp_set_ntp_servers, lwipopts.h:12" in message
    assert "--source FILE.c" in message, message
    # The locking functions are stood in, so they are not among the missing; PPP is forced off.
    assert "port_enter_critical" not in message and "ppp_init" not in message, message


def test_a_ports_source_file_completes_the_build_and_its_locking_is_stood_in(n6, tree, locking_port, tmp_path,
                                                                             no_leftovers):
    profile = resolve_profile(n6, str(locking_port), include_dirs=[str(locking_port.parent / "inc")],
                              sources=[str(locking_port.parent / "port_hooks.c")])
    firmware = build_firmware(FirmwareConfig(n6, profile, tree))
    assert firmware.stand_ins == ("port_enter_critical -> board interrupt mask",
                                  "port_exit_critical -> board interrupt restore")
    assert firmware.warnings == ()
    opts, forced = _boot_opts(n6, firmware, tmp_path)
    assert (opts["TCP_MSS"], opts["TCP_WND"]) == (1200, 4 * 1200)
    assert forced == ["PPP_SUPPORT"]


def test_cli_boot_json_shows_the_options_the_stand_ins_the_warnings_and_the_apps(n6, tree, port):
    cli = netrepro_cli("boot", "openmv-n6", "--lwip", str(port), "--stub-header", "py/mpconfig.h", "--json",
                       timeout=300)
    assert cli.returncode == 0, cli.stderr
    result = json.loads(cli.stdout)
    assert result["profile"] == "lwip_inc" and result["options"]["TCP_WND"] == 4 * MSS
    assert result["stand_ins"] == ["py/mpconfig.h -> empty header", "trng_random_u32 -> board RNG"]
    assert len(result["warnings"]) == 1 and "LWIP_DHCP_DOES_ACD_CHECK" in result["warnings"][0]
    assert result["apps"] == ["shell", "iperf", "discard", "sockbench", "echo", "udp"] and result["forced"] == []


def _port_key(n6, tree, opts: Path, inc: str = "inc", **extra: list[str]) -> str:
    """The firmware key of the port's lwipopts.h `opts`, with its folder's `inc` as its include folder."""
    profile = resolve_profile(n6, str(opts), include_dirs=[str(opts.parent / inc)], **extra)
    return firmware_key(FirmwareConfig(n6, profile, tree))


def test_the_cache_key_follows_the_sources_the_stub_headers_and_the_included_headers(n6, tree, locking_port):
    source = locking_port.parent / "port_hooks.c"

    def key(**extra: list[str]) -> str:
        return _port_key(n6, tree, locking_port, **extra)

    plain = key()
    with_source = key(sources=[str(source)])
    assert with_source != plain and key(stub_headers=["extra.h"]) != plain
    source.write_text(PORT_HOOKS_C + "\n/* edited */\n")
    assert key(sources=[str(source)]) != with_source
    (locking_port.parent / "inc" / "port_config.h").write_text("#define PORT_TCP_MSS 1000\n")
    assert key() != plain


def test_the_same_files_in_another_folder_are_the_same_build(n6, tree, locking_port, tmp_path):
    """A copy of the user's folder (a test's temporary folder, a second checkout) finds the first one's build;
    what a file is named inside its folder, and every file's content, still count."""
    def key(opts: Path, inc: str = "inc") -> str:
        return _port_key(n6, tree, opts, inc, sources=[str(opts.parent / "port_hooks.c")])

    copy = tmp_path / "elsewhere" / "deeper" / "locking"
    shutil.copytree(locking_port.parent, copy)
    assert key(copy / "lwipopts.h") == key(locking_port)
    (copy / "port_hooks.c").write_text(PORT_HOOKS_C + "\n/* edited */\n")
    assert key(copy / "lwipopts.h") != key(locking_port)
    (copy / "port_hooks.c").write_text(PORT_HOOKS_C)
    (copy / "inc" / "port_config.h").write_text("#define PORT_TCP_MSS 1000\n")
    assert key(copy / "lwipopts.h") != key(locking_port)
    (copy / "inc" / "port_config.h").write_text("#define PORT_TCP_MSS 1200\n")
    assert key(copy / "lwipopts.h") == key(locking_port)
    (copy / "inc").rename(copy / "include")  # the same header, found in a folder of another name
    assert key(copy / "lwipopts.h", "include") != key(locking_port)


def test_run_and_compare_take_a_ports_file_as_it_is(port, tmp_path, no_leftovers):
    """The worked example: the port's file with `run`, then beside a report profile with `compare`."""
    out = tmp_path / "runs"
    run = netrepro_cli("run", "openmv-n6", "--lwip", str(port), "--stub-header", "py/mpconfig.h", "--link", "wifi",
                    "--workload", "sock-rx", "--seconds", "2", "--out", str(out), "--json", timeout=300)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert "trng_random_u32 -> board RNG" in result["stand_ins"]
    assert result["options"]["TCP_WND"] == 4 * MSS and result["analysis"]["device_window"]["max"] == 4 * MSS
    compare = netrepro_cli("compare", "openmv-n6", "--lwip", str(port), "--stub-header", "py/mpconfig.h",
                        "--lwip", "mp-n6-after", "--link", "wifi", "--workload", "sock-rx", "--seconds", "2",
                        "--repeats", "1", "--out", str(out), "--json", timeout=300)
    assert compare.returncode == 0, compare.stderr
    document = json.loads(compare.stdout)
    differing = {d["name"]: (d["a"], d["b"]) for d in document["differing_options"]}
    assert differing["TCP_WND"] == (4 * MSS, 32 * MSS)
    assert [c["verdict"] for c in document["configurations"]] == ["window-limited", "link-limited"]
