"""Where netrepro keeps what it builds or fetches, and content hashes for cache keys."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """The cache root ($NETREPRO_CACHE or ~/.cache/netrepro), or a folder in it, created."""
    root = Path(os.environ.get("NETREPRO_CACHE") or Path.home() / ".cache" / "netrepro")
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def content_hash(files: Iterable[Path], extra: Iterable[str] = (), roots: Iterable[Path] = ()) -> str:
    """A hash of the files' names and contents and of extra strings (flags, versions). A file under one of
    `roots` is named by its path inside it, so that a checkout elsewhere (a fresh clone) finds the same key."""
    digest = hashlib.sha256()
    bases = [Path(r) for r in roots]
    for path in sorted(Path(f) for f in files):
        digest.update(name_in(path, bases).encode() + b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    for item in extra:
        digest.update(item.encode() + b"\0")
    return digest.hexdigest()[:16]


def name_in(path: Path, roots: Iterable[Path]) -> str:
    """A path as content_hash names it: inside the first of `roots` that holds it, else as it is."""
    for number, root in enumerate(roots):
        if Path(path).is_relative_to(root):
            return f"<{number}>/{Path(path).relative_to(root)}"
    return str(path)


def file_sha256(path: Path) -> str:
    """A file's SHA-256, as `sha256sum` prints it (a report names the capture it was measured from by it)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def tree_files(root: Path, suffixes: tuple[str, ...] = (".c", ".h", ".S", ".ld", ".mk")) -> list[Path]:
    """Every source file under root that a build could read."""
    names = {"Makefile"}
    return sorted(p for p in root.rglob("*") if p.is_file() and (p.suffix in suffixes or p.name in names))
