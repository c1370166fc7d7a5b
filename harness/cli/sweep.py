"""`netrepro sweep` and `netrepro tune` on the command line: their options, Ray, and their output."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness.cli.exit_codes import verdict
from harness.cli.link_args import size_arg
from harness.cli.progress_args import add_quiet, command_progress
from harness.cli.time_args import add_time_args, time_choice
from harness.core.errors import NetreproError
from harness.core.machine import machine_cpus
from harness.rig.session import make_run_dir
from harness.rig.workload import ONE_WAY, Workload
from harness.studies.parallel import RUN_CPUS, RayRunner, ray_session
from harness.studies.sweep import Axis, Sweep, SweepSpec, check_sweep, format_sweep, run_sweep
from harness.studies.sweep_plots import plot_sweep
from harness.studies.tune import (
    DEFAULT_OPTIONS,
    SAMPLER,
    STUDY_FILE,
    TUNABLE,
    Tuning,
    format_tune,
    load_tune,
    parse_budget,
    tune,
)


def add_sweep_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `sweep` to the `netrepro` subcommands (argparse's add_subparsers() object)."""
    parser = subparsers.add_parser(
        "sweep", help="run every combination of a few lwIP options' values over a few links (on Ray)",
        description="Build each configuration of the grid (those lwIP rejects are listed with its message), run "
                    "each configuration over each link as run does (capture, analysis, verdict), in parallel on "
                    "Ray, and write a table, a CSV, sweep.json and plots into the sweep's folder.")
    parser.add_argument("platform", nargs="?", help="the platform (not with --resume)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=V1,V2,...",
                        help="an lwIP option and its values to sweep (repeatable; one value fixes it)")
    parser.add_argument("--lwip", metavar="PROFILE_OR_PATH", help="the options the sweep starts from "
                                                                 "(default: the platform's profile)")
    parser.add_argument("-I", "--include", action="append", default=[], metavar="DIR",
                        help="include directory your lwipopts.h needs (repeatable)")
    parser.add_argument("--link", type=_list, default=None, metavar="PRESET[,PRESET...]",
                        help="the platform's link presets (default: direct)")
    parser.add_argument("--rtt", type=_list, default=None, metavar="A,B,...", help="round-trip times to sweep")
    parser.add_argument("--rate", type=_list, default=None, metavar="A,B,...", help="link rates to sweep")
    _run_args(parser, resume="run the points of an interrupted sweep that did not pass (its grid as stored)",
              json='print {"points": [...], "rejected": [...]}')
    parser.set_defaults(func=cmd_sweep)
    return parser


def add_tune_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `tune` to the `netrepro` subcommands."""
    parser = subparsers.add_parser(
        "tune", help="search lwIP options for the most throughput within a RAM budget (Optuna, on Ray)",
        description=f"A search ({SAMPLER}) for the Pareto frontier of throughput against "
                    "lwIP's RAM within the budget. Configurations that do not compile, or need more RAM than "
                    "the budget, are pruned without a run. Writes the frontier, its plot and the best "
                    f"lwipopts.h within the budget (ready for --lwip). The study is stored in the folder "
                    f"({STUDY_FILE}, SQLite): --resume FOLDER finishes an interrupted tune.")
    parser.add_argument("platform", nargs="?", help="the platform (not with --resume)")
    parser.add_argument("--ram-budget", metavar="SIZE_OR_PROFILE",
                        help="lwIP RAM allowed: a size (26.7KB = 26.7 KiB, 27340) or a profile whose RAM it is "
                             "(required, but not with --resume)")
    parser.add_argument("--options", type=_list, default=None, metavar="A,B,...",
                        help=f"the options to search (of {', '.join(TUNABLE)}; default all)")
    parser.add_argument("--trials", type=int, default=None,
                        help="configurations to run; pruned ones do not count (default 12)")
    parser.add_argument("--lwip", metavar="PROFILE_OR_PATH", help="the options the search starts from "
                                                                 "(default: the platform's profile)")
    parser.add_argument("--compare", action="append", default=None, metavar="PROFILE",
                        help="a profile to run too and mark on the plot (repeatable; default: the report's "
                             "profiles of the platform)")
    parser.add_argument("--seed", type=int, default=None, help="the sampler's seed (default 1)")
    parser.add_argument("--link", default=None, metavar="PRESET", help="the platform's link preset (default: direct)")
    _run_args(parser, resume="finish an interrupted tune: its trials that ended are kept, not run again",
              json="print the frontier and every trial as JSON")
    parser.set_defaults(func=cmd_tune)
    return parser


def _run_args(parser: argparse.ArgumentParser, resume: str, json: str) -> None:
    """What every run of a sweep or tune shares: workload, time, Ray, folders, and the two options whose words
    differ (`--resume FOLDER`, `--json`)."""
    parser.add_argument("--resume", type=Path, default=None, metavar="FOLDER", help=resume)
    parser.add_argument("--json", action="store_true", help=json)
    parser.add_argument("--workload", default=None, choices=ONE_WAY, help="the workload (default rx)")
    parser.add_argument("--seconds", type=float, default=None, help="duration of each run (default 3)")
    parser.add_argument("--chunk", type=size_arg, default=None, help="discard and sock-*: bytes per write or read")
    add_time_args(parser)
    parser.add_argument("--lwip-tree", metavar="DIR", help="lwIP source tree to build")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help=f"runs at once (default: this machine's cores / {RUN_CPUS}, or the cluster's CPUs)")
    parser.add_argument("--ray-address", default=None, metavar="ADDRESS",
                        help="a running Ray cluster whose workers have netrepro installed (default: a local "
                             "instance sized to this machine, started and stopped here)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR", help="the folder goes here (default ./runs)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each boot banner")
    add_quiet(parser)


def _list(text: str) -> list[str]:
    items = [t.strip() for t in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(f"bad list '{text}': write it as A,B,...")
    return items


def _workload(args: argparse.Namespace) -> Workload:
    return Workload(args.workload or "rx", seconds=args.seconds or 3.0, chunk=args.chunk or 1460)


def sweep_spec(args: argparse.Namespace) -> SweepSpec:
    """The grid the command line gives (one-line errors for what is missing or malformed)."""
    if not args.platform:
        raise NetreproError("sweep needs a platform", "give it first, e.g. netrepro sweep openmv-n6 --set ...")
    return SweepSpec(platform=args.platform, axes=tuple(Axis.parse(s) for s in args.set),
                     links=tuple(args.link or [None]), rtts=tuple(args.rtt or ()), rates=tuple(args.rate or ()),
                     workload=_workload(args), lwip=args.lwip,
                     include=tuple(str(Path(d).resolve()) for d in args.include),
                     time=time_choice(args), lwip_tree=args.lwip_tree, boot_timeout=args.timeout)


def _resume_conflicts(args: argparse.Namespace) -> list[str]:
    given = {"PLATFORM": args.platform, "--set": args.set, "--lwip": args.lwip, "--link": args.link,
             "--rtt": args.rtt, "--rate": args.rate, "--workload": args.workload, "--seconds": args.seconds}
    return [name for name, value in given.items() if value]


def jobs(args: argparse.Namespace, ray: Any) -> int:
    """Runs at once: --jobs, else as many as the Ray instance's CPUs hold."""
    if args.jobs is not None:
        if args.jobs < 1:
            raise NetreproError(f"bad --jobs {args.jobs}", "give 1 or more")
        return args.jobs
    cpus = ray.cluster_resources().get("CPU", machine_cpus())
    return max(1, int(cpus // RUN_CPUS))


def cmd_sweep(args: argparse.Namespace) -> int:
    progress = command_progress(args)
    if args.resume is not None:
        if conflicts := _resume_conflicts(args):
            raise NetreproError(f"--resume takes the sweep as stored in {args.resume}; "
                                f"{', '.join(conflicts)} given too",
                                "leave them out, or start a new sweep without --resume")
        spec, folder = Sweep.load(args.resume).spec, args.resume.resolve()
    else:
        spec = sweep_spec(args)
        check_sweep(spec)
        folder = make_run_dir(args.out, f"sweep-{spec.platform}", "-".join(a.name for a in spec.axes)[:60])
    progress.step(f"sweep folder {folder}")
    with ray_session(args.ray_address, None if args.ray_address else machine_cpus()) as ray:
        runner = RayRunner(ray, jobs(args, ray), progress)
        try:
            sweep = run_sweep(spec, folder, runner.run, progress)
        except KeyboardInterrupt:
            print(f"netrepro: sweep interrupted; what finished is in {folder}; resume with "
                  f"netrepro sweep --resume {folder}", file=sys.stderr)
            raise
    document = sweep.document()
    document["plots"] = [str(p) for p in plot_sweep(document, folder / "plots")]
    (folder / "sweep.json").write_text(json.dumps(document, indent=2) + "\n")
    print(json.dumps(document, indent=2) if args.json else format_sweep(document))
    return verdict(all(p["status"] == "passed" for p in document["points"]))


def tuning_from_args(args: argparse.Namespace) -> Tuning:
    """The tune the command line asks for (one-line errors for what is missing or malformed)."""
    if not args.platform or not args.ram_budget:
        raise NetreproError("tune needs a platform and --ram-budget",
                            "e.g. netrepro tune openmv-rt1060 --ram-budget 26.7KB (or --resume FOLDER)")
    tuning = Tuning(platform=args.platform, budget=parse_budget(args.ram_budget, args.platform, args.lwip_tree),
                    options=tuple(args.options or DEFAULT_OPTIONS), trials=12 if args.trials is None else args.trials,
                    link=args.link, workload=_workload(args), lwip=args.lwip,
                    compare=tuple(args.compare) if args.compare else None, seed=1 if args.seed is None else args.seed,
                    time=time_choice(args), lwip_tree=args.lwip_tree, boot_timeout=args.timeout)
    tuning.validate()
    return tuning


def _tune_resume_conflicts(args: argparse.Namespace) -> list[str]:
    given = {"PLATFORM": args.platform, "--ram-budget": args.ram_budget, "--options": args.options,
             "--trials": args.trials, "--lwip": args.lwip, "--compare": args.compare, "--seed": args.seed,
             "--link": args.link, "--workload": args.workload, "--seconds": args.seconds, "--chunk": args.chunk}
    return [name for name, value in given.items() if value is not None]


def cmd_tune(args: argparse.Namespace) -> int:
    progress = command_progress(args)
    if args.resume is not None:
        if conflicts := _tune_resume_conflicts(args):
            raise NetreproError(f"--resume takes the tune as stored in {args.resume}; {', '.join(conflicts)} given too",
                                "leave them out, or start a new tune without --resume")
        tuning, folder = load_tune(args.resume)[0], args.resume.resolve()
    else:
        tuning = tuning_from_args(args)
        folder = make_run_dir(args.out, f"tune-{args.platform}", f"{tuning.budget}B")
    progress.step(f"tune folder {folder}")
    with ray_session(args.ray_address, None if args.ray_address else machine_cpus()) as ray:
        runner = RayRunner(ray, jobs(args, ray), progress)
        try:
            document = tune(tuning, folder, runner.run, progress, jobs=runner.jobs, resume=args.resume is not None)
        except KeyboardInterrupt:
            print(f"netrepro: tune interrupted; the trials that ended are in {folder}; resume with "
                  f"netrepro tune --resume {folder}", file=sys.stderr)
            raise
    print(json.dumps(document, indent=2) if args.json else format_tune(document))
    return verdict(document["best"] is not None)   # trial 0 may be the best
