"""`netrepro bisect`: the first commit of a git repository that makes a run fail a criterion.

The repository holds either an lwIP source tree (each revision's tree is built with a netrepro
profile) or a project with its own lwipopts.h (each revision's options are built against
netrepro's lwIP tree). Given a good and a bad revision, each revision the search picks is
built, run on the platform over the link with the workload, and judged: good when the
throughput reaches --min-mbps, or when the largest window the device advertised is exactly
--window. The search is git bisect's (`git rev-list --bisect-all` over what is still open,
best split first), driven here so the user's working tree, index and HEAD are never touched:
each revision is read with `git archive` into netrepro's cache. A revision that does not
build, does not have the files, or whose run fails is skipped, as `git bisect skip` would;
if only skipped revisions are left, the first bad commit is one of them.

Reuse: the build cache is keyed by the content (and place) of the inputs, and a revision is
unpacked at a place named by its git tree id, so a revision whose tree was seen before (here
or in an earlier bisect) is not rebuilt; one whose firmware equals an earlier step's is not
run again either.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import fcntl
import json
import os
import posixpath
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.core.cache import cache_dir
from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.rig.build import FirmwareConfig, build_firmware, lwip_tree
from harness.rig.devicetime import DeviceTime
from harness.rig.platform import Platform
from harness.rig.profile import Profile, known_options, lwip_identifiers, resolve_profile
from harness.rig.session import make_run_dir
from harness.rig.workload import Workload
from harness.runs.plan import RunPlan
from harness.runs.result import RunResult

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
def _unpacked(repo: Repo, kind: str, tree_id: str, subdir: str = "") -> Iterator[Path]:
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


# ------------------------------------------------------------------ what a revision gives the build


@dataclass(frozen=True)
class LwipTreeSource:
    """The repository is an lwIP tree (src/ under `subdir`); each revision is built with one profile."""

    subdir: str
    profile: Profile

    def describe(self) -> dict[str, Any]:
        return {"kind": "lwip-tree", "subdir": self.subdir or ".", "profile": self.profile.name}

    def check(self, repo: Repo, commit: str, which: str = "") -> None:
        self._src_tree(repo, commit, which)

    @contextlib.contextmanager
    def prepare(self, repo: Repo, commit: str, platform: Platform) -> Iterator[tuple[Path, Profile]]:
        with _unpacked(repo, "src", self._src_tree(repo, commit), "src") as dest:
            yield lwip_tree(dest), self.profile

    def _src_tree(self, repo: Repo, commit: str, which: str = "") -> str:
        where, revision = self.subdir or "the top of the repository", f"{which or 'revision'} {commit[:10]}"
        if self.subdir:
            top = repo.entry(commit, self.subdir)
            if top and top[0] == "commit":
                raise NetreproError(f"{self.subdir} is a git submodule in {revision}",
                                    "bisect the lwIP repository itself (give its checkout as --repo)")
        src = posixpath.join(self.subdir, "src") if self.subdir else "src"
        found = repo.entry(commit, src)
        if not found or found[0] != "tree" or not repo.entry(commit, f"{src}/include/lwip/init.h"):
            raise NetreproError(f"no lwIP tree at {where} in {revision} "
                                f"({src}/include/lwip/init.h missing)",
                                "give --lwip-tree-in-repo the folder that holds lwIP's src/")
        return found[1]


@dataclass(frozen=True)
class LwipoptsSource:
    """The repository holds a lwipopts.h (and include dirs); each revision's is built against one lwIP tree."""

    path: str
    include_dirs: tuple[str, ...]
    tree: Path
    name: str

    def describe(self) -> dict[str, Any]:
        return {"kind": "lwipopts", "lwipopts": self.path, "include_dirs": list(self.include_dirs),
                "lwip_tree": str(self.tree), "profile": self.name}

    def check(self, repo: Repo, commit: str, which: str = "") -> None:
        revision = f"{which or 'revision'} {commit[:10]}"
        found = repo.entry(commit, self.path)
        if not found or found[0] != "blob":
            raise NetreproError(f"lwIP options file {self.path} does not exist in {revision}",
                                "give --lwipopts the path of the lwipopts.h inside the repository")
        for directory in self.include_dirs:
            found = repo.entry(commit, directory)
            if not found or found[0] != "tree":
                raise NetreproError(f"include directory {directory or '.'} does not exist in {revision}",
                                    "give -I directories inside the repository")

    @contextlib.contextmanager
    def prepare(self, repo: Repo, commit: str, platform: Platform) -> Iterator[tuple[Path, Profile]]:
        self.check(repo, commit)
        root = repo.entry(commit, "")
        assert root is not None
        with _unpacked(repo, "root", root[1]) as dest:
            header = dest / self.path
            misspelt = unknown_options(header, self.tree)
            if misspelt:
                name, close = misspelt[0]
                raise NetreproError(f"unknown lwIP option {name} in {self.path} (did you mean {close}?)",
                                    "lwIP ignores it; correct the name")
            profile = resolve_profile(platform, str(header), [str(dest / d) for d in self.include_dirs])
            yield self.tree, dataclasses.replace(profile, name=self.name)


def unknown_options(header: Path, tree: Path) -> list[tuple[str, str]]:
    """Options a lwipopts.h sets that lwIP never reads but that look like a misspelt lwIP option.

    Conservative on purpose: a name lwIP mentions anywhere, a function-like macro, a name the
    header uses again (a helper macro) or one like no lwIP option is left alone.
    """
    text = header.read_text(errors="replace")
    known = sorted(known_options(tree))
    found = []
    for name in dict.fromkeys(re.findall(r"^\s*#\s*define\s+([A-Z][A-Z0-9_]*)\b(?!\()", text, re.M)):
        if name in lwip_identifiers(tree) or len(re.findall(rf"\b{name}\b", text)) > 1:
            continue
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        if close:
            found.append((name, close[0]))
    return found


# ------------------------------------------------------------------ judging a run


@dataclass(frozen=True)
class Criterion:
    """Good when the throughput reaches min_mbps, or when the device's largest advertised window is `window`."""

    min_mbps: float | None = None
    window: int | None = None

    def __post_init__(self) -> None:
        if (self.min_mbps is None) == (self.window is None):
            raise NetreproError("a bisect needs one pass criterion", "give --min-mbps X or --window N")
        if (self.min_mbps is not None and self.min_mbps <= 0) or (self.window is not None and self.window <= 0):
            raise NetreproError("the pass criterion must be positive", "fix --min-mbps or --window")

    def describe(self) -> str:
        if self.window is not None:
            return f"good if the device's largest advertised window == {self.window}"
        return f"good if throughput >= {self.min_mbps:g} Mbit/s"

    def judge(self, result: RunResult) -> tuple[str, str | None]:
        if self.window is not None:
            window = device_window(result)
            if window is None:
                return "skipped", "the capture shows no window advertised by the device"
            return ("good" if window == self.window else "bad"), None
        assert self.min_mbps is not None
        value = result.throughput_mbps
        figures = list(value.values()) if isinstance(value, dict) else [value]
        if not figures or any(not isinstance(f, int | float) for f in figures):
            return "skipped", "the run measured no throughput"
        return ("good" if all(f >= self.min_mbps for f in figures) else "bad"), None


def device_window(result: RunResult) -> int | None:
    value = result.analysis.device_window.max if result.analysis else None
    return int(value) if isinstance(value, int | float) else None


# ------------------------------------------------------------------ the search


@dataclass
class Step:
    """One revision the search tried."""

    commit: str
    subject: str
    verdict: str                                  # good | bad | skipped
    reason: str | None = None                     # why skipped, or what was reused
    throughput_mbps: float | dict[str, float] | None = None
    device_window: int | None = None
    firmware: str | None = None                   # build cache key
    rebuilt: bool | None = None
    run_dir: str | None = None
    error: str | None = None                      # the whole error (problem; fix) when skipped by one

    def line(self) -> str:
        """`rev 1a2b3c4d5e subject: 27.3 Mbit/s window 23360 -> good`"""
        text = f"rev {self.commit[:10]} {self.subject}: {self.figure()} -> {self.verdict}"
        return f"{text} ({self.reason})" if self.reason else text

    def figure(self) -> str:
        if self.throughput_mbps is None and self.device_window is None:
            return "no run" if self.firmware else "not built"
        value = self.throughput_mbps
        if isinstance(value, dict):
            mbps = ", ".join(f"{k} {v:.1f}" for k, v in value.items()) + " Mbit/s"
        else:
            mbps = f"{value:.1f} Mbit/s" if isinstance(value, int | float) else "- Mbit/s"
        return f"{mbps} window {self.device_window if self.device_window is not None else '-'}"


@dataclass
class BisectResult:
    repo: str
    platform: str
    source: dict[str, Any]
    criterion: dict[str, Any]
    link: dict[str, Any]
    workload: dict[str, Any]
    folder: str
    good: dict[str, str]
    bad: dict[str, str]
    revisions: int                                # commits in good..bad (bad included): what was open at the start
    steps: list[Step] = field(default_factory=list)
    candidates: list[dict[str, str]] = field(default_factory=list)   # one: the first bad commit
    status: str = "running"

    @property
    def exact(self) -> bool:
        return self.status == "done" and len(self.candidates) == 1

    @property
    def first_bad(self) -> dict[str, str] | None:
        return self.candidates[0] if self.exact else None

    def document(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["result"] = {"first_bad": self.first_bad, "exact": self.exact, "candidates": self.candidates}
        return doc

    def save(self) -> Path:
        path = Path(self.folder) / "bisect.json"
        path.write_text(json.dumps(self.document(), indent=2) + "\n")
        return path


@dataclass
class Bisection:
    """Everything a bisect needs; `run()` does the search."""

    repo: Repo
    good: str
    bad: str
    platform: Platform
    source: LwipTreeSource | LwipoptsSource
    link: LinkSpec
    workload: Workload
    criterion: Criterion
    folder: Path | None = None                    # the bisect's folder (default: a new one under ./runs)
    progress: Progress = field(default_factory=lambda: Progress(quiet=True))
    boot_timeout: float = 60.0
    time: DeviceTime = field(default_factory=lambda: DeviceTime("host"))
    on_step: Callable[[Step], None] = lambda _: None

    def validate(self) -> dict[str, str]:
        """One-line errors for what makes the search meaningless; commit id -> subject of what lies between."""
        if self.good == self.bad:
            raise NetreproError(f"good and bad are the same commit ({self.good[:10]})",
                                "give a good revision from before the problem")
        if not self.repo.is_ancestor(self.good, self.bad):
            swapped = self.repo.is_ancestor(self.bad, self.good)
            raise NetreproError(f"good revision {self.good[:10]} is not an ancestor of bad revision {self.bad[:10]}",
                                "they look swapped: give the older one as --good" if swapped
                                else "give a --good revision from the --bad one's history")
        self.source.check(self.repo, self.good, "the good revision")
        return self.repo.subjects(self.good, self.bad)

    def run(self) -> BisectResult:
        subjects = self.validate()
        self.folder = self.folder or make_run_dir(None, self.platform.name, "bisect")
        result = BisectResult(
            repo=str(self.repo.path), platform=self.platform.name, source=self.source.describe(),
            criterion={**asdict(self.criterion), "text": self.criterion.describe()}, link=self.link.as_dict(),
            workload=self.workload.describe(),
            folder=str(self.folder), good={"commit": self.good, "subject": self.repo.subject(self.good)},
            bad={"commit": self.bad, "subject": subjects.get(self.bad, "")}, revisions=len(subjects))
        goods, bad, skipped = [self.good], self.bad, set()
        seen: dict[str, Step] = {}  # firmware key -> the step that ran it
        result.save()
        while True:
            open_ = [c for c in self.repo.bisect_all(bad, goods) if c != bad]
            testable = [c for c in open_ if c not in skipped]
            if not testable:
                order = list(subjects)
                remaining = sorted([*open_, bad], key=lambda c: order.index(c) if c in order else len(order))
                result.candidates = [{"commit": c, "subject": subjects.get(c) or self.repo.subject(c)}
                                     for c in remaining]
                result.status = "done"
                result.save()
                return result
            commit = testable[0]
            self.progress.step(f"bisect: {len(open_)} revision{'s' if len(open_) != 1 else ''} open; "
                               f"trying {commit[:10]} {subjects.get(commit, '')}")
            step = self._try(commit, subjects.get(commit) or self.repo.subject(commit), len(result.steps) + 1, seen)
            result.steps.append(step)
            result.save()
            self.on_step(step)
            if step.verdict == "good":
                goods.append(commit)
            elif step.verdict == "bad":
                bad = commit
            else:
                skipped.add(commit)

    def _try(self, commit: str, subject: str, number: int, seen: dict[str, Step]) -> Step:
        step = Step(commit, subject, "skipped")
        try:
            with self.source.prepare(self.repo, commit, self.platform) as (tree, profile):
                firmware = build_firmware(FirmwareConfig(self.platform, profile, tree), self.progress.step)
        except NetreproError as exc:
            step.reason, step.error = exc.problem, str(exc)
            return step
        step.firmware, step.rebuilt = firmware.key, firmware.rebuilt
        earlier = seen.get(firmware.key)
        if earlier is not None:  # the same image (e.g. a revert): its judgement stands
            step.verdict, step.run_dir = earlier.verdict, earlier.run_dir
            step.throughput_mbps, step.device_window = earlier.throughput_mbps, earlier.device_window
            step.reason = f"same firmware as {earlier.commit[:10]}: its run reused"
            return step
        assert self.folder is not None
        run_dir = self.folder / f"step{number:02d}-{commit[:10]}"
        run_dir.mkdir(parents=True, exist_ok=True)
        step.run_dir = str(run_dir)
        try:
            run = RunPlan(self.platform, firmware, self.link, self.workload, boot_timeout=self.boot_timeout,
                          time=self.time).execute(run_dir, self.progress)
        except NetreproError as exc:
            step.reason, step.error = f"run failed: {exc.problem}", str(exc)
            return step
        except Exception as exc:  # one revision's odd failure must not end a long search
            step.reason = step.error = f"run failed: {type(exc).__name__}: {exc}".splitlines()[0]
            return step
        step.throughput_mbps, step.device_window = run.throughput_mbps, device_window(run)
        step.verdict, step.reason = self.criterion.judge(run)
        if step.verdict != "skipped":  # a failed run is tried again on an identical image, a judged one is not
            seen[firmware.key] = step
        return step


def format_bisect(result: BisectResult, steps: bool = True) -> str:
    """The step lines (unless already printed) and the outcome."""
    lines = [s.line() for s in result.steps] if steps else []
    if result.exact:
        first = result.candidates[0]
        lines.append(f"first bad commit: {first['commit']} {first['subject']}")
    elif result.candidates:
        lines.append(f"first bad commit is one of these {len(result.candidates)} "
                     "(only skipped revisions are left between the last good and the first bad):")
        lines += [f"  {c['commit']} {c['subject']}" for c in result.candidates]
    lines.append(f"steps and run folders: {result.folder}")
    return "\n".join(lines)
