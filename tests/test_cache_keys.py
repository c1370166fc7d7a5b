"""A build's cache key names its files inside the checkout and the lwIP tree: a fresh clone elsewhere reuses the
builds of the same sources, and any change of a file's content or name still builds anew."""

from __future__ import annotations

from pathlib import Path

from harness.core.cache import content_hash


def _tree(root: Path, text: str = "int x;\n", name: str = "a.c") -> list[Path]:
    (root / "src").mkdir(parents=True)
    (root / "src" / name).write_text(text)
    (root / "src" / "a.h").write_text("#define A 1\n")
    return sorted((root / "src").iterdir())


def test_the_same_sources_in_two_checkouts_give_one_key(tmp_path):
    one, two = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    assert content_hash(one, ["cc"], roots=[tmp_path / "one"]) == content_hash(two, ["cc"], roots=[tmp_path / "two"])
    # without the roots a file is named by where it is
    assert content_hash(one, ["cc"]) != content_hash(two, ["cc"])


def test_a_changed_content_name_or_flag_changes_the_key(tmp_path):
    base = content_hash(_tree(tmp_path / "base"), ["cc"], roots=[tmp_path / "base"])
    assert content_hash(_tree(tmp_path / "text", "int y;\n"), ["cc"], roots=[tmp_path / "text"]) != base
    assert content_hash(_tree(tmp_path / "name", name="b.c"), ["cc"], roots=[tmp_path / "name"]) != base
    assert content_hash(_tree(tmp_path / "flag"), ["cc", "-O0"], roots=[tmp_path / "flag"]) != base
