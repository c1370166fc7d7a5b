"""A tune: the Pareto frontier of throughput against lwIP's RAM, within a RAM budget, by Optuna.

Each trial is a configuration: the starting profile with the searched options set to values Optuna's
multi-objective TPE sampler picks (SAMPLER; maximise throughput, minimise lwIP RAM). It is built here first:

    does not compile  lwIP's sanity checks (#error in init.c) reject it: the trial is PRUNED, not slow
    over the budget   its lwIP RAM (the linked firmware's, harness.rig.lwip_ram) exceeds it: PRUNED
    else              it runs on Ray as `run` runs it; the trial's values are (throughput, RAM)

Trials are asked for in batches of as many runs as go at once, so Ray keeps every CPU busy. The
profiles named by `compare` (default: the platform's report profiles) run too and are marked on the
frontier's plot. The best configuration within the budget is written as lwipopts.h: the starting
profile's text and the chosen options after it, ready for `--lwip`.

    FOLDER/tune.json        the tuning as asked, every trial (options, state, RAM, throughput, verdict), the
                            frontier, the best; rewritten as each trial ends
    FOLDER/study.db         Optuna's storage (SQLite): every trial asked and told, so that an interrupted tune
                            resumes (resume=True) with what it learnt; a trial cut short is asked again, anew
    FOLDER/tune.txt         the frontier as a table
    FOLDER/frontier.png     throughput against RAM, the budget and the compared profiles marked
    FOLDER/lwipopts.h       the best configuration within the budget
    FOLDER/trial-NNN/, FOLDER/profile-NAME/   the run folders
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.progress import Progress
from harness.link import LinkSpec, parse_size
from harness.rig.build import build_firmware, lwip_tree
from harness.rig.devicetime import TimeChoice
from harness.rig.platform import Platform, load_platform
from harness.rig.workload import Workload
from harness.runs.plan import Configuration
from harness.studies.parallel import RunTask, TaskOutcome
from harness.studies.sweep_plots import plot_frontier


@dataclass(frozen=True)
class Knob:
    """One searchable option: an lwIP expression of one searched whole number n, low..high, or one
    of `choices`. The expressions are relative where lwIP's sanity rules relate options (queue
    lengths to the send buffer, pool pbufs to the window), so that few trials break them; those
    that still do are pruned when they fail to compile."""

    low: int = 0
    high: int = 0
    form: str = "{n}"
    choices: tuple[int, ...] = ()

    def suggest(self, trial: Any, name: str) -> str:
        if self.choices:
            return str(trial.suggest_categorical(name, list(self.choices)))
        return self.form.format(n=trial.suggest_int(name, self.low, self.high))


TUNABLE = {
    "TCP_MSS": Knob(choices=(536, 800, 1024, 1460)),
    "TCP_WND": Knob(2, 24, "{n}*TCP_MSS"),
    "TCP_SND_BUF": Knob(2, 24, "{n}*TCP_MSS"),
    "MEM_SIZE": Knob(2, 32, "{n}*1024"),
    "PBUF_POOL_SIZE": Knob(0, 8, "(TCP_WND/TCP_MSS+{n})"),        # lwIP: TCP_WND fits the pool's pbufs
    "TCP_SND_QUEUELEN": Knob(2, 4, "({n}*TCP_SND_BUF/TCP_MSS)"),  # lwIP: at least 2 * TCP_SND_BUF/TCP_MSS
    "MEMP_NUM_TCP_SEG": Knob(0, 16, "(TCP_SND_QUEUELEN+{n})"),    # lwIP: at least TCP_SND_QUEUELEN
}
DEFAULT_OPTIONS = tuple(TUNABLE)
MAX_TRIES = 10   # configurations tried per trial asked for, pruned ones included, before the search gives up
SAMPLER = "Optuna's TPE sampler, multi-objective"   # what make_sampler makes, as --help names it
STUDY_FILE = "study.db"
TUNE_FILE = "tune.json"


def parse_budget(text: str, platform: str, tree_path: str | None = None) -> int:
    """--ram-budget: a size (26.7KB, 27340; K is 1024 as in lwIP's own MEM_SIZE habits) or a profile's lwIP RAM."""
    if re.fullmatch(r"[A-Za-z][\w.-]*", text) and not re.fullmatch(r"\d", text[0]):
        board = load_platform(platform)
        if text not in board.profiles:
            raise NetreproError(f"bad --ram-budget '{text}': not a size nor a profile of {platform}",
                                f"give a size such as 26.7KB, or one of: {', '.join(board.profiles)}")
        tree = lwip_tree(tree_path)
        firmware = Configuration(text).build(board, tree)
        return int(firmware.lwip_ram.total) if firmware.lwip_ram else 0
    return parse_size(text.replace("KB", "k").replace("kB", "k").replace("MB", "m"), "RAM budget")


@dataclass(frozen=True)
class Tuning:
    """What the command line asked for."""

    platform: str
    budget: int
    options: tuple[str, ...] = DEFAULT_OPTIONS
    trials: int = 12
    link: str | None = None
    workload: Workload = field(default_factory=lambda: Workload("rx", seconds=3.0))
    lwip: str | None = None
    compare: tuple[str, ...] | None = None
    seed: int = 1
    time: TimeChoice = field(default_factory=TimeChoice)
    lwip_tree: str | None = None
    boot_timeout: float = 60.0

    def validate(self) -> None:
        unknown = [o for o in self.options if o not in TUNABLE]
        if unknown:
            raise NetreproError(f"tune cannot search {', '.join(unknown)}", f"search some of: {', '.join(TUNABLE)}")
        if self.trials < 1:
            raise NetreproError(f"bad --trials {self.trials}", "give 1 or more")
        if self.budget <= 0:
            raise NetreproError(f"bad RAM budget {self.budget} B", "give a positive size, e.g. 26.7KB")
        if self.workload.kind.two_way:
            raise NetreproError(f"workload {self.workload.name} measures two directions at once",
                                "tune for one direction: rx, tx, discard, sock-rx or sock-tx")
        platform = load_platform(self.platform)
        if self.link:
            platform.link_preset(self.link)
        for name in self.compare or ():
            Configuration(name).profile(platform, lwip_tree(self.lwip_tree))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Tuning:
        return cls(**{**data, "options": tuple(data["options"]), "workload": Workload(**data["workload"]),
                      "compare": None if data["compare"] is None else tuple(data["compare"]),
                      "time": TimeChoice(**data["time"])})


def load_tune(folder: Path) -> tuple[Tuning, list[dict[str, Any]]]:
    """An interrupted tune's folder: the tuning as asked, and its trials that ended (a trial cut short is dropped:
    it is asked again, as a new trial)."""
    path = Path(folder) / TUNE_FILE
    if not (path.is_file() and (Path(folder) / STUDY_FILE).is_file()):
        raise NetreproError(f"{folder} is not a tune's folder (no {TUNE_FILE} and {STUDY_FILE})",
                            "give the folder a tune printed (its first progress line names it)")
    data = json.loads(path.read_text())
    return Tuning.from_dict(data["tuning"]), [t for t in data["trials"] if t["state"] != "running"]


def make_sampler(tuning: Tuning, asked: int) -> Any:
    """The sampler, seeded past the trials a resumed study already asked, so it does not propose them again."""
    import optuna

    return optuna.samplers.TPESampler(seed=tuning.seed + asked, n_startup_trials=max(4, tuning.trials // 3))


def open_study(tuning: Tuning, folder: Path, resume: bool) -> Any:
    """The study in folder's SQLite storage: new, or the stored one with the trials cut short marked failed."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=f"sqlite:///{folder / STUDY_FILE}", study_name="tune",
                                directions=["maximize", "minimize"], load_if_exists=resume)
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        study.tell(trial.number, state=optuna.trial.TrialState.FAIL)
    study.sampler = make_sampler(tuning, len(study.trials))
    return study


Runner = Callable[[Sequence[RunTask], Callable[[TaskOutcome], None]], Any]


def tune(tuning: Tuning, folder: Path, runner: Runner, progress: Progress | None = None,
         jobs: int = 1, resume: bool = False) -> dict[str, Any]:
    """Search (`jobs` trials at a time) until `tuning.trials` have run, run the compared profiles, and write
    tune.json, the plot and lwipopts.h into folder. resume: go on with the tune stored in folder (load_tune)."""
    import optuna

    progress = progress or Progress(quiet=True)
    platform = load_platform(tuning.platform)
    tree = lwip_tree(tuning.lwip_tree)
    link = LinkSpec.from_preset(platform.link_preset(tuning.link) if tuning.link else {})
    study = open_study(tuning, folder, resume)
    trials: list[dict[str, Any]] = load_tune(folder)[1] if resume else []
    ran, tried = sum(t["state"] != "pruned" for t in trials), len(trials)
    if resume:
        progress.step(f"resuming: {ran} of {tuning.trials} trials ran ({tried - ran} pruned)")
    while ran < tuning.trials and tried < MAX_TRIES * tuning.trials:
        batch = []
        while len(batch) < jobs and ran + len(batch) < tuning.trials and tried < MAX_TRIES * tuning.trials:
            tried += 1
            trial = study.ask()
            record = _prepare(trial, tuning, platform, tree, link, folder, progress)
            trials.append(record)
            if record["state"] == "pruned":
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            else:
                batch.append((trial, record))
        _save(folder, tuning, trials, [])   # the pruned ones too, for a resume
        by_key = {r["key"]: (t, r) for t, r in batch}

        def told(outcome: TaskOutcome, by_key: dict = by_key) -> None:
            trial, record = by_key[outcome.task.key]
            record.update(_figures(outcome))
            if record["throughput_mbps"] is None:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, [record["throughput_mbps"], record["lwip_ram"]])
            progress.step(f"trial {record['number']}: {record['throughput_mbps'] or record['state']} Mbit/s, "
                          f"lwIP RAM {record['lwip_ram']} B ({_options_text(record['options'])})")
            _save(folder, tuning, trials, [])

        runner([r["task"] for _, r in batch], told)
        ran += len(batch)
    marks = _compared(tuning, platform, tree, link, folder, runner, progress)
    return _finish(folder, tuning, trials, marks, tree, platform)


def _prepare(trial: Any, tuning: Tuning, platform: Platform, tree: Path, link: LinkSpec, folder: Path,
             progress: Progress) -> dict[str, Any]:
    """The trial's configuration built; pruned if lwIP rejects it or it is over the budget, else a task."""
    options = {name: TUNABLE[name].suggest(trial, name) for name in tuning.options}
    configuration = Configuration(tuning.lwip, (), tuple(f"{k}={v}" for k, v in options.items()))
    key = f"trial-{trial.number:03d}"
    record: dict[str, Any] = {"number": trial.number, "key": key, "options": options, "state": "pruned",
                              "lwip_ram": None, "throughput_mbps": None, "verdict": None, "reason": None,
                              "run_dir": None}
    try:
        firmware = build_firmware(configuration.resolve(platform, tree))
    except NetreproError as exc:
        record["reason"] = f"does not compile: {exc.problem}"
        progress.step(f"trial {trial.number}: pruned, {record['reason']}")
        return record
    record["lwip_ram"] = firmware.lwip_ram.total if firmware.lwip_ram else None
    if record["lwip_ram"] is None or record["lwip_ram"] > tuning.budget:
        record["reason"] = f"lwIP RAM {record['lwip_ram']} B is over the budget of {tuning.budget} B"
        progress.step(f"trial {trial.number}: pruned, {record['reason']}")
        return record
    run_dir = folder / key
    record.update(state="running", run_dir=str(run_dir),
                  task=RunTask(key, platform.name, configuration, link, tuning.workload, tuning.time, str(run_dir),
                               tuning.lwip_tree, tuning.boot_timeout))
    return record


def _figures(outcome: TaskOutcome) -> dict[str, Any]:
    result = outcome.result or {}
    analysis = result.get("analysis") or {}
    return {"state": "complete" if outcome.passed else "failed",
            "throughput_mbps": result.get("throughput_mbps") if outcome.passed else None,
            "verdict": analysis.get("verdict"), "reason": outcome.error,
            "effective_options": result.get("options", {}), "attempts": list(outcome.attempts),
            "run_dir": outcome.standing_run_dir}


def _compared(tuning: Tuning, platform: Platform, tree: Path, link: LinkSpec, folder: Path, runner: Runner,
              progress: Progress) -> list[dict[str, Any]]:
    """The compared profiles, run as the trials are: {"label", "ram", "throughput_mbps", "verdict", "run_dir",
    "error"} (error: why the profile's last attempt failed, else None)."""
    names = tuning.compare if tuning.compare is not None else tuple(p for p in platform.profiles if p != "default")
    marks, tasks = [], []
    for name in names:
        firmware = Configuration(name).build(platform, tree)
        run_dir = folder / f"profile-{name}"
        marks.append({"label": name, "ram": firmware.lwip_ram.total if firmware.lwip_ram else None,
                      "throughput_mbps": None, "verdict": None, "run_dir": str(run_dir), "error": None})
        tasks.append(RunTask(f"profile-{name}", platform.name, Configuration(name), link, tuning.workload,
                             tuning.time, str(run_dir), tuning.lwip_tree, tuning.boot_timeout))

    def done(outcome: TaskOutcome) -> None:
        mark = next(m for m in marks if m["run_dir"] == outcome.task.run_dir)
        figures = _figures(outcome)
        mark.update(throughput_mbps=figures["throughput_mbps"], verdict=figures["verdict"],
                    error=None if outcome.passed else figures["reason"], run_dir=figures["run_dir"])
        progress.step(f"profile {mark['label']}: {mark['throughput_mbps']} Mbit/s, lwIP RAM {mark['ram']} B")

    if tasks:
        runner(tasks, done)
    return marks


def pareto_front(trials: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The completed trials no other beats on both throughput (higher) and RAM (lower), by RAM."""
    done = [t for t in trials if t.get("throughput_mbps") is not None and t.get("lwip_ram") is not None]
    front = [t for t in done if not any(_dominates(o, t) for o in done)]
    return sorted(front, key=lambda t: (t["lwip_ram"], -t["throughput_mbps"]))


def _dominates(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return (a["throughput_mbps"] >= b["throughput_mbps"] and a["lwip_ram"] <= b["lwip_ram"]
            and (a["throughput_mbps"] > b["throughput_mbps"] or a["lwip_ram"] < b["lwip_ram"]))


def lwipopts_text(tuning: Tuning, platform: Platform, tree: Path, best: dict[str, Any]) -> str:
    """The best configuration as one lwipopts.h: the starting profile's text, then the chosen options."""
    profile = Configuration(tuning.lwip, (), tuple(f"{k}={v}" for k, v in best["options"].items())).profile(
        platform, tree)
    head = (f"/* netrepro tune {platform.name}: best of {best['search_trials']} trials within {tuning.budget} B of "
            f"lwIP RAM: {best['throughput_mbps']} Mbit/s with {best['lwip_ram']} B ({best['verdict']}).\n"
            f" * The starting profile {profile.name} ({profile.header.name}), then the options the search chose. */\n")
    return head + profile.header.read_text() + "\n" + profile.overlay() + "\n"


def _finish(folder: Path, tuning: Tuning, trials: list[dict[str, Any]], marks: list[dict[str, Any]], tree: Path,
            platform: Platform) -> dict[str, Any]:
    front = pareto_front(trials)
    best = max(front, key=lambda t: t["throughput_mbps"], default=None)
    document = _save(folder, tuning, trials, front, marks, best)
    if best is not None:
        best = {**best, "search_trials": len([t for t in trials if t["state"] != "pruned"])}
        path = folder / "lwipopts.h"
        path.write_text(lwipopts_text(tuning, platform, tree, best))
        document["lwipopts"] = str(path)
    title = (f"tune {platform.name}: throughput against lwIP RAM ({tuning.workload.name} over "
             f"{tuning.link or 'direct'}, {len(trials)} configurations tried)")
    document["plots"] = [str(p) for p in plot_frontier(trials, front, marks, tuning.budget, folder / "frontier", title)]
    (folder / TUNE_FILE).write_text(json.dumps(document, indent=2) + "\n")
    (folder / "tune.txt").write_text(format_tune(document) + "\n")
    return document


def _save(folder: Path, tuning: Tuning, trials: list[dict[str, Any]], front: list[dict[str, Any]],
          marks: list[dict[str, Any]] | None = None, best: dict[str, Any] | None = None) -> dict[str, Any]:
    document = {"tuning": tuning.as_dict(), "platform": tuning.platform, "folder": str(folder),
                "budget": tuning.budget,
                "options": list(tuning.options), "link": tuning.link or "direct",
                "workload": tuning.workload.describe(), "time": tuning.time.mode,
                "trials": [{k: v for k, v in t.items() if k != "task"} for t in trials],
                "frontier": [t["number"] for t in front], "best": best["number"] if best else None,
                "compared": marks or [], "lwipopts": None}
    (folder / TUNE_FILE).write_text(json.dumps(document, indent=2) + "\n")
    return document


def format_tune(document: dict[str, Any]) -> str:
    """The frontier (options, RAM, throughput, verdict), the compared profiles and where the best went."""
    trials = {t["number"]: t for t in document["trials"]}
    ran = [t for t in document["trials"] if t["state"] != "pruned"]
    pruned = len(document["trials"]) - len(ran)
    names = document["options"]
    lines = [f"tune on {document['platform']}: {document['workload']['name']} over {document['link']}, lwIP RAM "
             f"budget {document['budget']} B ({document['budget'] / 1024:.1f} KiB); {len(ran)} trials run, "
             f"{pruned} pruned (do not compile or over the budget); folder {document['folder']}", "",
             "Pareto frontier (most throughput for the RAM; the options' effective values):"]
    widths = [max(len(n), *(len(str(_effective(trials[i], n))) for i in document["frontier"])) if document["frontier"]
              else len(n) for n in names]
    header = "  ".join(f"{n:<{w}}" for n, w in zip(names, widths, strict=True)) + \
        f"  {'RAM B':>7} {'Mbit/s':>7}  verdict"
    lines += [header, "-" * len(header)]
    for number in document["frontier"]:
        t = trials[number]
        best = "  <- best" if number == document["best"] else ""
        lines.append("  ".join(f"{_effective(t, n)!s:<{w}}" for n, w in zip(names, widths, strict=True))
                     + f"  {t['lwip_ram']:>7} {t['throughput_mbps']:>7.2f}  {t['verdict'] or '-'}{best}")
    if document["compared"]:
        lines += ["", "profiles compared:",
                  *(f"  {m['label']:<20} RAM {m['ram']} B, {_mbps(m['throughput_mbps'])}, {m['verdict'] or '-'}"
                    + (f" ({m['error']})" if m.get("error") else "") for m in document["compared"])]
    lines += ["", f"best within the budget: {document['lwipopts']} (use it with --lwip)" if document["lwipopts"]
              else "no configuration within the budget ran: raise the budget or the trials"]
    return "\n".join(lines)


def _effective(trial: dict[str, Any], name: str) -> Any:
    """The option's value as the firmware reported it, else as the search wrote it."""
    return trial.get("effective_options", {}).get(name, trial["options"][name])


def _mbps(value: float | None) -> str:
    return "failed" if value is None else f"{value:.2f} Mbit/s"


def _options_text(options: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in options.items())
