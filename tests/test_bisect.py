"""`netrepro bisect`: the first bad commit of a repository holding an lwIP tree or a lwipopts.h.

The real-chain tests make small git repositories (lwIP 2.1.3's src/ with a few commits on
top, or a project with its own lwipopts.h), and bisect them on openmv-n6 over the `direct`
link with 2 s receive runs, judging by the window the device advertised.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.core.errors import NetreproError
from harness.rig.profile import resolve_profile
from harness.studies.bisect import (
    BisectResult,
    Criterion,
    LwipoptsSource,
    LwipTreeSource,
    Repo,
    Step,
    format_bisect,
    unknown_options,
)
from tests.conftest import assert_one_line_error, netrepro_cli

DEFAULT_WINDOW = 4 * 536  # the `default` profile sets no TCP options: lwIP's TCP_WND = 4 * TCP_MSS, TCP_MSS = 536
_ENV = {**os.environ, "CI": "true", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return netrepro_cli(*args, timeout=timeout, env=_ENV)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env=_ENV).stdout.strip()


def _commit(repo: Path, subject: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--no-verify", "-m", subject)
    return _git(repo, "rev-parse", "HEAD")


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


@pytest.fixture
def lwip_repo(tree, tmp_path):
    """lwIP 2.1.3's src/ in a fresh repository, and six commits on top; returns (repo, {name: commit})."""
    repo = tmp_path / "lwip"
    repo.mkdir()
    shutil.copytree(tree / "src", repo / "src")
    _git(repo, "init", "-q")
    commits = {"import": _commit(repo, "lwIP 2.1.3 as released")}
    _edit(repo / "src/core/tcp.c", " * Transmission Control Protocol for IP", " * Transmission Control Protocol (TCP)")
    commits["comment"] = _commit(repo, "tcp.c: a comment")
    (repo / "NOTES.md").write_text("notes outside src/\n")
    commits["notes"] = _commit(repo, "notes outside the source")
    _edit(repo / "src/core/tcp.c", "#include \"lwip/opt.h\"", "#include \"lwip/opt.h\"\nthis is not C;")
    commits["broken"] = _commit(repo, "tcp.c: broken on purpose")
    _edit(repo / "src/core/tcp.c", "\nthis is not C;", "")
    commits["fixed"] = _commit(repo, "tcp.c: fix the build")
    _edit(repo / "src/include/lwip/opt.h", "#define TCP_WND                         (4 * TCP_MSS)",
          "#define TCP_WND                         (2 * TCP_MSS)")
    commits["lowered"] = _commit(repo, "opt.h: default TCP_WND 2*TCP_MSS")
    _edit(repo / "src/core/udp.c", " * User Datagram Protocol module", " * User Datagram Protocol (UDP) module")
    commits["later"] = _commit(repo, "udp.c: a comment")
    return repo, commits


@pytest.fixture
def opts_repo(tmp_path):
    """A project with net/lwipopts.h and net/inc/tuning.h; returns (repo, {name: commit})."""
    repo = tmp_path / "proj"
    (repo / "net" / "inc").mkdir(parents=True)
    (repo / "net" / "inc" / "tuning.h").write_text("#define MY_SEGMENTS 4\n")
    opts = repo / "net" / "lwipopts.h"
    opts.write_text('#include "tuning.h"\n#define TCP_MSS 536\n#define TCP_WND (MY_SEGMENTS * TCP_MSS)\n')
    _git(repo, "init", "-q")
    commits = {"import": _commit(repo, "the project")}
    (repo / "README").write_text("a project\n")
    commits["readme"] = _commit(repo, "a README")
    _edit(opts, "#define TCP_WND (MY_SEGMENTS * TCP_MSS)", "#define TCP_WDN (2 * TCP_MSS)")
    commits["typo"] = _commit(repo, "lwipopts: two segments (misspelt)")
    _edit(opts, "#define TCP_WDN", "#define TCP_WND")
    commits["spelt"] = _commit(repo, "lwipopts: spell TCP_WND")
    (repo / "README").write_text("a project, with a small window\n")
    commits["later"] = _commit(repo, "README: say so")
    return repo, commits


# ------------------------------------------------------------------ bad input: one line, before anything runs


def _bisect_folders() -> set[Path]:
    return set((Path.cwd() / "runs").glob("*-openmv-n6-bisect-*"))


def test_bad_input_is_one_line(tmp_path, opts_repo):
    repo, commits = opts_repo
    folders_before = _bisect_folders()
    base = ["bisect", "openmv-n6", "--lwipopts", "net/lwipopts.h", "-I", "net/inc", "--window", "2144"]
    assert_one_line_error(_cli(*base, "--repo", str(tmp_path / "nowhere"), "--good", "HEAD~1", "--bad", "HEAD"),
                    "nowhere does not exist")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert_one_line_error(_cli(*base, "--repo", str(plain), "--good", "HEAD~1", "--bad", "HEAD"),
                    "is not a git repository")
    assert_one_line_error(_cli(*base, "--repo", str(repo), "--good", "v9.9-nope", "--bad", "HEAD"),
                    "unknown revision 'v9.9-nope' (--good)")
    assert_one_line_error(_cli(*base, "--repo", str(repo), "--good", "HEAD", "--bad", "HEAD~2"),
                    "is not an ancestor", "swapped")
    moved = [*base[:3], "net/lwipopts-old.h", *base[4:]]
    assert_one_line_error(_cli(*moved, "--repo", str(repo), "--good", commits["import"], "--bad", "HEAD"),
                    "net/lwipopts-old.h does not exist in the good revision")
    assert_one_line_error(_cli(*base, "--repo", str(repo), "--good", commits["import"], "--bad", "HEAD",
                              "--lwip", "mp-n6-after"), "--lwip")
    assert_one_line_error(_cli("bisect", "openmv-n6", "--lwip-tree-in-repo", "--window", "2144", "--repo", str(repo),
                              "--good", commits["import"], "--bad", "HEAD"), "no lwIP tree", "src/include/lwip/init.h")
    assert _bisect_folders() == folders_before  # nothing was started


def test_a_revision_without_the_options_file_is_a_one_line_skip_reason(n6, tree, tmp_path, opts_repo):
    repo_dir, commits = opts_repo
    (repo_dir / "net" / "lwipopts.h").unlink()
    gone = _commit(repo_dir, "lwipopts.h removed")
    source = LwipoptsSource("net/lwipopts.h", ("net/inc",), tree, "net")
    repo = Repo.open(repo_dir)
    source.check(repo, commits["import"])
    with pytest.raises(NetreproError) as err, source.prepare(repo, gone, n6):
        pass
    assert str(err.value).startswith(f"lwIP options file net/lwipopts.h does not exist in revision {gone[:10]}")
    assert "\n" not in str(err.value)


def test_an_lwip_tree_in_a_subdir_and_one_that_is_a_submodule(n6, tmp_path):
    repo_dir = tmp_path / "fw"
    (repo_dir / "lib" / "lwip" / "src" / "include" / "lwip").mkdir(parents=True)
    (repo_dir / "lib" / "lwip" / "src" / "include" / "lwip" / "init.h").write_text("/* lwIP */\n")
    _git(repo_dir, "init", "-q")
    _git(repo_dir, "add", "-A")
    _git(repo_dir, "update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},lib/sub")
    _git(repo_dir, "commit", "-q", "--no-verify", "-m", "firmware with lwIP in lib/ and a submodule")
    commit = _git(repo_dir, "rev-parse", "HEAD")
    repo = Repo.open(repo_dir / "lib")  # paths are taken relative to --repo, inside the repository
    assert repo.in_repo("lwip") == "lib/lwip" and repo.in_repo(".") == "lib"
    with pytest.raises(NetreproError, match="outside the repository"):
        repo.in_repo("../..")
    profile = resolve_profile(n6, "default")
    LwipTreeSource(repo.in_repo("lwip"), profile).check(repo, commit)
    with pytest.raises(NetreproError, match=r"^lib/sub is a git submodule in revision "):
        LwipTreeSource(repo.in_repo("sub"), profile).check(repo, commit)
    with pytest.raises(NetreproError, match=r"^no lwIP tree at lib in revision .*lib/src/include/lwip/init\.h"):
        LwipTreeSource(repo.in_repo("."), profile).check(repo, commit)


def test_a_misspelt_option_is_caught_and_helper_macros_are_not(tree, tmp_path):
    header = tmp_path / "lwipopts.h"
    header.write_text("#define MY_WND (8 * 1460)\n#define TCP_WND MY_WND\n#define TCP_SND_BUFF 4096\n"
                      "#define MY_SEGMENTS 4\n#define LWIP_PLATFORM_ASSERT(x) do {} while (0)\n#define MEM_SIZE 8000\n")
    assert unknown_options(header, tree) == [("TCP_SND_BUFF", "TCP_SND_BUF")]


def test_step_lines_and_the_outcome():
    good = Step("a" * 40, "tcp.c: a comment", "good", throughput_mbps=27.31, device_window=23360, firmware="k1")
    skipped = Step("b" * 40, "broken", "skipped", reason="profile default does not compile: a setting: x (tcp.c:40)")
    assert good.line() == "rev aaaaaaaaaa tcp.c: a comment: 27.3 Mbit/s window 23360 -> good"
    assert skipped.line() == ("rev bbbbbbbbbb broken: not built -> skipped "
                              "(profile default does not compile: a setting: x (tcp.c:40))")
    result = BisectResult(repo="r", platform="p", source={}, criterion={}, link={}, workload={}, folder="/f",
                          good={}, bad={}, revisions=3, steps=[good, skipped], status="done",
                          candidates=[{"commit": "c" * 40, "subject": "lower it"}])
    assert result.exact and format_bisect(result).splitlines()[2] == f"first bad commit: {'c' * 40} lower it"
    result.candidates.insert(0, {"commit": "b" * 40, "subject": "broken"})
    text = format_bisect(result, steps=False)
    assert not result.exact and text.startswith("first bad commit is one of these 2")
    assert result.document()["result"] == {"first_bad": None, "exact": False, "candidates": result.candidates}
    with pytest.raises(NetreproError):
        Criterion()


# ------------------------------------------------------------------ the real chain


@pytest.mark.real
def test_bisect_names_the_commit_that_lowered_the_window(lwip_repo, tmp_path, no_leftovers):
    repo, commits = lwip_repo
    head_before, status_before = _git(repo, "rev-parse", "HEAD"), _git(repo, "status", "--porcelain")
    proc = _cli("bisect", "openmv-n6", "--repo", str(repo), "--good", commits["import"], "--bad", "HEAD",
                     "--lwip-tree-in-repo", "--lwip", "default", "--link", "direct", "--workload", "rx",
                     "--seconds", "2", "--window", str(DEFAULT_WINDOW), "--out", str(tmp_path / "runs"), "--json",
                     timeout=600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["result"]["exact"] is True
    assert doc["result"]["first_bad"] == {"commit": commits["lowered"], "subject": "opt.h: default TCP_WND 2*TCP_MSS"}
    by_commit = {s["commit"]: s for s in doc["steps"]}
    # six open revisions: the broken one is the best split, so the search meets it first and skips it
    assert doc["steps"][0]["commit"] == commits["broken"] and doc["steps"][0]["verdict"] == "skipped"
    assert "does not compile" in doc["steps"][0]["reason"] and "tcp.c" in doc["steps"][0]["reason"]
    assert by_commit[commits["lowered"]]["verdict"] == "bad"
    assert by_commit[commits["lowered"]]["device_window"] == 2 * 536
    for name in ("comment", "notes", "fixed"):
        if commits[name] in by_commit:
            assert by_commit[commits[name]]["verdict"] == "good"
            assert by_commit[commits[name]]["device_window"] == DEFAULT_WINDOW
    for step in doc["steps"]:
        if step["verdict"] != "skipped":
            assert step["throughput_mbps"] > 1 and Path(step["run_dir"], "result.json").is_file()
    # the bisect's folder has the whole record; the user's repository is as it was
    assert json.loads(Path(doc["folder"], "bisect.json").read_text())["result"] == doc["result"]
    assert _git(repo, "rev-parse", "HEAD") == head_before and _git(repo, "status", "--porcelain") == status_before
    assert _git(repo, "for-each-ref", "refs/bisect") == "" and _git(repo, "worktree", "list").count("\n") == 0


@pytest.mark.real
def test_bisect_of_a_lwipopts_history_with_a_misspelt_option(opts_repo, tmp_path, no_leftovers):
    repo, commits = opts_repo
    proc = _cli("bisect", "openmv-n6", "--repo", str(repo), "--good", commits["import"], "--bad", "HEAD",
                     "--lwipopts", "net/lwipopts.h", "-I", "net/inc", "--rtt", "1ms", "--rate", "50mbit",
                     "--workload", "rx", "--seconds", "2", "--window", str(DEFAULT_WINDOW),
                     "--out", str(tmp_path / "runs"), timeout=600)
    lines = proc.stdout.splitlines()
    # the misspelt revision is skipped, so the first bad is it or the one that spelt the name right
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert lines[0].startswith("bisecting 3 revisions between good ")
    typo = next(ln for ln in lines if ln.startswith(f"rev {commits['typo'][:10]} "))
    assert typo.endswith("-> skipped (unknown lwIP option TCP_WDN in net/lwipopts.h (did you mean TCP_WND?))")
    spelt = next(ln for ln in lines if ln.startswith(f"rev {commits['spelt'][:10]} "))
    assert spelt.endswith(" window 1072 -> bad")
    at = lines.index(next(ln for ln in lines if ln.startswith("first bad commit is one of these 2")))
    assert lines[at + 1: at + 3] == [f"  {commits['typo']} lwipopts: two segments (misspelt)",
                                     f"  {commits['spelt']} lwipopts: spell TCP_WND"]
