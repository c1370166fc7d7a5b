"""lwIP option profiles: names, user headers, overrides and their errors."""

from __future__ import annotations

import pytest

from harness.core.errors import NetreproError
from harness.rig.profile import profile_names, resolve_profile


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


def test_missing_paths_are_one_line_errors(n6, tmp_path):
    with pytest.raises(NetreproError, match="does not exist"):
        resolve_profile(n6, str(tmp_path / "nope.h"))
    with pytest.raises(NetreproError, match="include directory"):
        resolve_profile(n6, "default", [str(tmp_path / "nodir")])
