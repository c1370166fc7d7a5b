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

Runs at once (--jobs N, reproduce's pool: harness.studies.plan_pool): a bisect is sequential by nature, each
step chosen by the last one's verdict, so what runs at once is speculative. Each round tries the revision one
at a time would try and, beside it, the revisions the search would try next were that one bad or good, breadth
first: 2 jobs add the bad side's next step (the range shrinks to a half or a quarter a round, 1.5 halvings on
average), 3 jobs both sides' (a quarter every round), 7 two levels (an eighth). The round's revisions are built
here one after the other, run at once, then judged in order: each good one joins the goods, the lowest bad one
becomes the bad. Under a criterion that holds up to one commit and fails from it on (and revisions that
build), the revisions one at a time would try are among them and the first bad commit is the one at a
time's, found in fewer rounds; a speculative run on the side the search leaves is spent for nothing.
bisect.json records `jobs` and the `schedule` (which runs shared the machine).

Reuse: the build cache is keyed by the content (and place) of the inputs, and a revision is
unpacked at a place named by its git tree id, so a revision whose tree was seen before (here
or in an earlier bisect) is not rebuilt; one whose firmware equals an earlier step's is not
run again either.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import json
import posixpath
import re
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec
from harness.rig.build import Firmware, FirmwareConfig, build_firmware, lwip_tree
from harness.rig.devicetime import DeviceTime
from harness.rig.platform import Platform
from harness.rig.profile import Profile, known_options, lwip_identifiers, resolve_profile
from harness.rig.session import make_run_dir
from harness.rig.workload import Workload
from harness.runs.plan import RunPlan
from harness.runs.result import RunResult
from harness.studies.bisect_repo import Repo, unpacked_tree
from harness.studies.plan_pool import PlanPool

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
        with unpacked_tree(repo, "src", self._src_tree(repo, commit), "src") as dest:
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
        with unpacked_tree(repo, "root", root[1]) as dest:
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
    jobs: int = 1                                 # revisions tried at once, each round
    schedule: list[dict[str, Any]] | None = None  # with jobs > 1: which runs shared the machine (PlanPool.schedule)

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
    jobs: int = 1                                 # runs at once (plan_pool): revisions tried per round

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
            bad={"commit": self.bad, "subject": subjects.get(self.bad, "")}, revisions=len(subjects), jobs=self.jobs)
        pool = PlanPool(self.jobs, self.progress) if self.jobs > 1 else None
        with pool.session() if pool else contextlib.nullcontext():  # one Ray instance for every round
            return self._search(result, subjects, pool)

    def _search(self, result: BisectResult, subjects: dict[str, str], pool: PlanPool | None) -> BisectResult:
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
            picks = self._picks(bad, goods, skipped, testable[0]) if pool else testable[:1]
            trying = ", ".join(f"{c[:10]} {subjects.get(c, '')}".strip() for c in picks)
            self.progress.step(f"bisect: {len(open_)} revision{'s' if len(open_) != 1 else ''} open; trying {trying}"
                               + (f" ({len(picks)} at once)" if len(picks) > 1 else ""))
            first = len(result.steps) + 1
            steps = (self._round(picks, subjects, first, seen, pool) if pool else
                     [self._try(picks[0], subjects.get(picks[0]) or self.repo.subject(picks[0]), first, seen)])
            for step in steps:
                result.steps.append(step)
                result.schedule = pool.schedule() if pool else None
                result.save()
                self.on_step(step)
                if step.verdict == "good":
                    goods.append(step.commit)
                elif step.verdict == "bad":
                    # every pick lies below the round's bad: the lowest bad of the round bounds the search
                    bad = step.commit if self.repo.is_ancestor(step.commit, bad) else bad
                else:
                    skipped.add(step.commit)

    def _picks(self, bad: str, goods: list[str], skipped: set[str], first: str) -> list[str]:
        """The revisions of one round, at most `jobs`: `first` (the step one at a time takes), then the steps the
        search would take next, breadth first, were `first` bad or good (3 jobs: both; 7: two levels)."""
        picks = [first]
        following = [(first, goods), (bad, [*goods, first])]  # the search's state after `first`: bad, good
        while following and len(picks) < self.jobs:
            top, below = following.pop(0)
            nxt = [c for c in self.repo.bisect_all(top, below) if c != top and c not in skipped and c not in picks]
            if nxt:
                picks.append(nxt[0])
                following += [(nxt[0], below), (top, [*below, nxt[0]])]
        return picks

    def _try(self, commit: str, subject: str, number: int, seen: dict[str, Step]) -> Step:
        """One revision built, run and judged here (one at a time)."""
        step, firmware = self._built(commit, subject, seen)
        if firmware is None:
            return step
        plan, run_dir = self._plan(step, firmware, number), Path(step.run_dir or "")
        return self._judged(step, lambda: plan.execute(run_dir, self.progress), seen)

    def _round(self, picks: list[str], subjects: dict[str, str], first: int, seen: dict[str, Step],
               pool: PlanPool) -> list[Step]:
        """Several revisions built here one after the other, then run at once on the pool, then judged in order;
        one whose firmware equals another's of the round takes that one's judgement, as `seen` would give it."""
        steps: list[Step] = []
        runs: list[tuple[Step, Future[RunResult]]] = []
        twins: dict[int, Step] = {}
        planned: dict[str, Step] = {}  # firmware key -> the step of this round that runs it
        for i, commit in enumerate(picks):
            step, firmware = self._built(commit, subjects.get(commit) or self.repo.subject(commit), seen)
            steps.append(step)
            if firmware is not None and firmware.key in planned:
                twins[i] = planned[firmware.key]
            elif firmware is not None:
                planned[firmware.key] = step
                runs.append((step, pool.submit(self._plan(step, firmware, first + i), Path(step.run_dir or ""))))
        pool.run()
        for step, future in runs:
            self._judged(step, future.result, seen)
        for i, earlier in twins.items():
            _reuse(steps[i], earlier)
        return steps

    def _built(self, commit: str, subject: str, seen: dict[str, Step]) -> tuple[Step, Firmware | None]:
        """The revision's step and firmware; no firmware when there is nothing to run: it did not build
        (skipped), or an earlier step ran the same firmware (that judgement reused)."""
        step = Step(commit, subject, "skipped")
        try:
            with self.source.prepare(self.repo, commit, self.platform) as (tree, profile):
                firmware = build_firmware(FirmwareConfig(self.platform, profile, tree), self.progress.step)
        except NetreproError as exc:
            step.reason, step.error = exc.problem, str(exc)
            return step, None
        step.firmware, step.rebuilt = firmware.key, firmware.rebuilt
        earlier = seen.get(firmware.key)
        if earlier is not None:  # the same image (e.g. a revert): its judgement stands
            _reuse(step, earlier)
            return step, None
        return step, firmware

    def _plan(self, step: Step, firmware: Firmware, number: int) -> RunPlan:
        """The step's run, its folder made."""
        assert self.folder is not None
        run_dir = self.folder / f"step{number:02d}-{step.commit[:10]}"
        run_dir.mkdir(parents=True, exist_ok=True)
        step.run_dir = str(run_dir)
        return RunPlan(self.platform, firmware, self.link, self.workload, boot_timeout=self.boot_timeout,
                       time=self.time)

    def _judged(self, step: Step, run: Callable[[], RunResult], seen: dict[str, Step]) -> Step:
        """The step's run (`run()`: executed, or the pool's result) judged by the criterion."""
        try:
            result = run()
        except NetreproError as exc:
            step.reason, step.error = f"run failed: {exc.problem}", str(exc)
            return step
        except Exception as exc:  # one revision's odd failure must not end a long search
            step.reason = step.error = f"run failed: {type(exc).__name__}: {exc}".splitlines()[0]
            return step
        step.throughput_mbps, step.device_window = result.throughput_mbps, device_window(result)
        step.verdict, step.reason = self.criterion.judge(result)
        if step.verdict != "skipped":  # a failed run is tried again on an identical image, a judged one is not
            seen[step.firmware or ""] = step
        return step


def _reuse(step: Step, earlier: Step) -> None:
    """A step whose firmware an earlier step ran: that step's judgement stands for it."""
    step.verdict, step.run_dir = earlier.verdict, earlier.run_dir
    step.throughput_mbps, step.device_window = earlier.throughput_mbps, earlier.device_window
    step.reason = f"same firmware as {earlier.commit[:10]}: its run reused"


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
