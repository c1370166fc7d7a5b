"""The repository a bisect searches, read with git plumbing only (harness.studies.bisect): its commits, what
lies between two of them, git bisect's split, and a revision's tree unpacked into netrepro's cache."""

from __future__ import annotations

import contextlib
import fcntl
import os
import posixpath
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.core.cache import cache_dir
from harness.core.errors import NetreproError

GIT_TIMEOUT_S = 300
_GIT_ENV_DROP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE")
_SHA = re.compile(r"^([0-9a-f]{40,64})\b")


# ------------------------------------------------------------------ the repository (read-only)


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_DROP}
    env.update(LC_ALL="C", GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    return env


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return re.sub(r"^(fatal|error):\s*", "", lines[-1]) if lines else "no output"


@dataclass(frozen=True)
class Repo:
    """A git repository, read with plumbing only: nothing in it is written."""

    path: Path
    prefix: str = ""  # the given directory relative to the top of the work tree ("" at the top or bare)

    @classmethod
    def open(cls, path: str | Path) -> Repo:
        directory = Path(path).expanduser()
        if not directory.exists():
            raise NetreproError(f"repository {path} does not exist", "give --repo the directory of a git repository")
        if not directory.is_dir():
            raise NetreproError(f"repository {path} is not a directory",
                                "give --repo the directory of a git repository")
        directory = directory.resolve()
        proc = _run_git(directory, "rev-parse", "--is-bare-repository", "--show-prefix")
        if proc.returncode != 0:
            first = re.sub(r"^(fatal|error):\s*", "", (proc.stderr.strip().splitlines() or [""])[0])
            if "not a git repository" in first or not first:
                raise NetreproError(f"{path} is not a git repository",
                                    "give --repo a git checkout of your lwIP tree or project")
            raise NetreproError(f"git cannot read {path}: {first}", _last_line(proc.stderr))
        lines = proc.stdout.splitlines()
        prefix = lines[1].strip() if len(lines) > 1 and lines[0].strip() == "false" else ""
        return cls(directory, prefix.rstrip("/"))

    def git(self, *args: str) -> str:
        proc = _run_git(self.path, *args)
        if proc.returncode != 0:
            raise NetreproError(f"git {args[0]} failed in {self.path}: {_last_line(proc.stderr)}",
                                "check the repository with git fsck")
        return proc.stdout

    def commit(self, rev: str, role: str) -> str:
        """The full commit id of a revision the user named."""
        proc = _run_git(self.path, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}")
        if proc.returncode != 0 or not _SHA.match(proc.stdout.strip()):
            raise NetreproError(f"unknown revision '{rev}' (--{role}) in {self.path}",
                                "give a commit id, branch or tag of that repository (see git log --oneline)")
        return proc.stdout.strip()

    def is_ancestor(self, older: str, newer: str) -> bool:
        proc = _run_git(self.path, "merge-base", "--is-ancestor", older, newer)
        if proc.returncode not in (0, 1):
            raise NetreproError(f"git merge-base failed in {self.path}: {_last_line(proc.stderr)}")
        return proc.returncode == 0

    def in_repo(self, path: str) -> str:
        """A path given relative to --repo, as a path from the top of the repository ("" = the top)."""
        if Path(path).is_absolute():
            raise NetreproError(f"{path} is an absolute path", "give paths inside the repository, relative to --repo")
        joined = posixpath.normpath(posixpath.join(self.prefix, path))
        if joined == ".." or joined.startswith("../"):
            raise NetreproError(f"{path} is outside the repository", "give paths inside the repository")
        return "" if joined == "." else joined

    def entry(self, commit: str, path: str) -> tuple[str, str] | None:
        """(type, object id) of a path in a commit: blob, tree or commit (a submodule); None if absent."""
        if not path:
            return "tree", self.git("rev-parse", f"{commit}^{{tree}}").strip()
        for record in self.git("ls-tree", "-z", "--full-tree", commit, "--", path).split("\0"):
            meta, _, name = record.partition("\t")
            if name == path:
                _, kind, oid = meta.split()
                return kind, oid
        return None

    def subjects(self, good: str, bad: str) -> dict[str, str]:
        """Commit id -> subject for what lies between good and bad, oldest first."""
        out = self.git("log", "--topo-order", "--reverse", "--format=%H%x09%s", bad, f"^{good}")
        pairs = (line.split("\t", 1) for line in out.splitlines() if line)
        return {p[0]: (p[1] if len(p) > 1 else "") for p in pairs}

    def subject(self, commit: str) -> str:
        return self.git("log", "-1", "--format=%s", commit).strip()

    def bisect_all(self, bad: str, goods: list[str]) -> list[str]:
        """What is still open (bad and goods excluded from the goods' side), best split first."""
        out = self.git("rev-list", "--bisect-all", bad, *(f"^{g}" for g in goods))
        return [m.group(1) for m in map(_SHA.match, out.splitlines()) if m]

    def archive(self, tree_id: str, into: Path) -> None:
        """Unpack a tree object into a directory (git archive | tar -x)."""
        into.mkdir(parents=True, exist_ok=True)
        git = subprocess.Popen(["git", "-C", str(self.path), "archive", "--format=tar", tree_id],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_git_env())
        assert git.stdout is not None and git.stderr is not None
        try:
            tar = subprocess.run(["tar", "-x", "-C", str(into)], stdin=git.stdout, capture_output=True,
                                 timeout=GIT_TIMEOUT_S, check=False)
        finally:
            git.stdout.close()
            git_err = git.stderr.read().decode(errors="replace")
            git.stderr.close()
            git.wait()
        if git.returncode != 0 or tar.returncode != 0:
            detail = git_err if git.returncode != 0 else tar.stderr.decode(errors="replace")
            raise NetreproError(f"could not unpack tree {tree_id[:12]} of {self.path}: {_last_line(detail)}")


def _run_git(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False, env=_git_env())
    except FileNotFoundError:
        raise NetreproError("git is not installed", "install git (apt-get install git)") from None
    except subprocess.TimeoutExpired:
        raise NetreproError(f"git {args[0]} took over {GIT_TIMEOUT_S} s in {directory}") from None


@contextlib.contextmanager
def unpacked_tree(repo: Repo, kind: str, tree_id: str, subdir: str = "") -> Iterator[Path]:
    """A revision's tree unpacked at a place named by its tree id, for as long as the build needs it.

    The build cache keys on the files' contents and paths, so the same tree always landing at
    the same place is what makes a tree seen before a cache hit. The lock keeps two bisects
    of the same tree from unpacking over each other.
    """
    root = cache_dir("bisect", "trees")
    dest = root / f"{kind}-{tree_id}"
    with _locked(root / f"{kind}-{tree_id}.lock"):
        shutil.rmtree(dest, ignore_errors=True)  # what an interrupted step left
        try:
            repo.archive(tree_id, dest / subdir if subdir else dest)
            yield dest
        finally:
            shutil.rmtree(dest, ignore_errors=True)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock file, removed afterwards (a waiter that locked a removed file tries again)."""
    while True:
        lock = open(path, "w")  # noqa: SIM115 (closed below, after the unlink)
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.fstat(lock.fileno()).st_ino == os.stat(path).st_ino:
                break
        except FileNotFoundError:
            pass
        lock.close()
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        lock.close()
