"""lwIP option profiles: names, user headers, overrides and their errors."""

from __future__ import annotations

import pytest

from harness.core.errors import NetreproError
from harness.rig.profile import (
    Macro,
    known_options,
    macros_calling,
    parse_macro_dump,
    profile_names,
    resolve_profile,
    unknown_options,
)


def test_named_profiles_resolve(n6):
    assert {"default", "mp-n6-before", "mp-n6-after"} <= set(profile_names())
    assert resolve_profile(n6, None).name == n6.default_profile
    assert resolve_profile(n6, "mp-n6-after").header.name == "mp-n6-after.h"


def test_unknown_profile_lists_the_known_ones(n6):
    with pytest.raises(NetreproError, match=r"unknown lwIP profile 'mp-n7'.*mp-n6-after"):
        resolve_profile(n6, "mp-n7")


def test_user_lwipopts_by_path_brings_its_directory(n6, tmp_path):
    (tmp_path / "lwipopts.h").write_text("#define TCP_MSS 1200\n")
    extra = tmp_path / "inc"
    extra.mkdir()
    profile = resolve_profile(n6, str(tmp_path / "lwipopts.h"), [str(extra)])
    assert profile.header == tmp_path / "lwipopts.h"
    assert profile.include_dirs == (tmp_path, extra)


def test_overrides_are_checked_against_lwip(n6, tree):
    profile = resolve_profile(n6, "default", overrides=["TCP_WND=8*TCP_MSS"], lwip_tree=tree)
    assert "#undef TCP_WND\n#define TCP_WND (8*TCP_MSS)" in profile.overlay()
    with pytest.raises(NetreproError, match="unknown lwIP option TCP_WNDD; did you mean TCP_WND"):
        resolve_profile(n6, "default", overrides=["TCP_WNDD=1"], lwip_tree=tree)
    with pytest.raises(NetreproError, match="bad lwIP option setting"):
        resolve_profile(n6, "default", overrides=["TCP_WND"], lwip_tree=tree)


def test_netrepros_own_options_are_the_ones_base_h_documents(n6, tree):
    profile = resolve_profile(n6, "default", overrides=["NR_APP_API=2", "NR_NIC_RX_THREAD=0"], lwip_tree=tree)
    assert "#define NR_APP_API (2)" in profile.overlay()
    with pytest.raises(NetreproError, match="unknown lwIP option NR_APP_APII; did you mean NR_APP_API"):
        resolve_profile(n6, "default", overrides=["NR_APP_APII=2"], lwip_tree=tree)


def test_missing_paths_are_one_line_errors(n6, tmp_path):
    with pytest.raises(NetreproError, match="does not exist"):
        resolve_profile(n6, str(tmp_path / "nope.h"))
    with pytest.raises(NetreproError, match="include directory"):
        resolve_profile(n6, "default", [str(tmp_path / "nodir")])


def test_a_ports_sources_and_stub_headers_are_checked(n6, tmp_path):
    source = tmp_path / "rng.c"
    source.write_text("int x;\n")
    profile = resolve_profile(n6, "default", sources=[str(source)], stub_headers=["py/mpconfig.h", "py/mpconfig.h"])
    assert profile.sources == (source,) and profile.stub_headers == ("py/mpconfig.h",)
    assert source in profile.input_files()
    with pytest.raises(NetreproError, match=r"--source .*nope.c is not a C file"):
        resolve_profile(n6, "default", sources=[str(tmp_path / "nope.c")])
    for bad in ("../up.h", "/abs/x.h", "noext"):
        with pytest.raises(NetreproError, match="is not a header name; give it as the #include writes it"):
            resolve_profile(n6, "default", stub_headers=[bad])


def test_the_headers_a_users_file_includes_are_its_inputs(n6, tmp_path):
    (tmp_path / "inc" / "py").mkdir(parents=True)
    (tmp_path / "inc" / "py" / "mpconfig.h").write_text('#include "mpconfigport.h"\n')
    (tmp_path / "inc" / "py" / "mpconfigport.h").write_text("#define X 1\n")
    (tmp_path / "lwipopts.h").write_text('#include <stdint.h>\n#include "py/mpconfig.h"\n')
    profile = resolve_profile(n6, str(tmp_path / "lwipopts.h"), [str(tmp_path / "inc")])
    assert {tmp_path / "inc" / "py" / "mpconfig.h", tmp_path / "inc" / "py" / "mpconfigport.h"} <= set(
        profile.input_files())


def test_options_of_lwips_apps_are_known_options(tree):
    known = known_options(tree)
    assert {"TCP_WND", "LWIP_MDNS_RESPONDER", "PPP_SUPPORT", "LWIP_SNMP", "SNTP_SERVER_DNS"} <= known


def test_the_preprocessors_macro_dump_gives_each_macro_its_file_and_line():
    dump = "\n".join([
        '# 0 "<built-in>"', "#define __GNUC__ 12",
        '# 1 "/port/lwipopts.h"', "", "#define TCP_MSS 1460",
        '# 1 "/port/py/mpconfig.h" 1', "#define MICROPY_X 1", "#define GONE 1",
        '# 3 "/port/lwipopts.h" 2', "#undef GONE", "#define LWIP_RAND() trng_random_u32()",
        "#define SYS_ARCH_PROTECT(lev) lev = port_lock()"])
    macros = parse_macro_dump(dump)
    assert "GONE" not in macros and macros["__GNUC__"].file == "<built-in>"
    assert (macros["TCP_MSS"].where, macros["MICROPY_X"].where) == ("lwipopts.h:2", "mpconfig.h:1")
    assert macros["LWIP_RAND"].where == "lwipopts.h:4" and macros["LWIP_RAND"].signature == "LWIP_RAND()"
    assert macros["SYS_ARCH_PROTECT"].body == "lev = port_lock()"
    assert [m.name for m in macros_calling("trng_random_u32", macros)] == ["LWIP_RAND"]


def test_unknown_options_are_lwip_named_macros_this_lwip_never_reads(tree):
    macros = {name: Macro(name, None, "0", "/port/lwipopts.h", n)
              for n, name in enumerate(("LWIP_DHCP_DOES_ACD_CHECK", "TCP_MSS", "MICROPY_PY_LWIP", "LWIP_ACD"))}
    assert [m.name for m in unknown_options(macros, tree)] == ["LWIP_DHCP_DOES_ACD_CHECK", "LWIP_ACD"]
