"""`netrepro bisect` on the command line: its options, checked into a Bisection, and its output."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from harness.cli.exit_codes import verdict
from harness.cli.link_args import add_link_args, link_spec, size_arg
from harness.cli.progress_args import add_quiet, command_progress
from harness.cli.time_args import add_time_args, time_choice
from harness.core.errors import NetreproError
from harness.rig.build import lwip_tree
from harness.rig.platform import load_platform
from harness.rig.profile import resolve_profile
from harness.rig.session import make_run_dir
from harness.rig.workload import WORKLOADS, Workload
from harness.studies.bisect import (
    Bisection,
    Criterion,
    LwipoptsSource,
    LwipTreeSource,
    Repo,
    format_bisect,
)
from harness.studies.parallel import RUN_CPUS
from harness.studies.plan_pool import planned_jobs


def add_bisect_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `bisect` to the `netrepro` subcommands (argparse's add_subparsers() object)."""

    parser = subparsers.add_parser(
        "bisect", help="find the commit of a git repository (your lwIP tree or lwipopts.h) that made a run fail",
        description="Build and run each revision git bisect picks between --good and --bad and name the first "
                    "bad commit. The repository is an lwIP tree (--lwip-tree-in-repo) or a project with a "
                    "lwipopts.h (--lwipopts). Its working tree and HEAD are never touched.")
    parser.add_argument("platform")
    parser.add_argument("--repo", required=True, type=Path, metavar="DIR", help="the git repository")
    parser.add_argument("--good", required=True, metavar="REV", help="a revision that passes")
    parser.add_argument("--bad", required=True, metavar="REV", help="a later revision that fails")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--lwip-tree-in-repo", nargs="?", const=".", default=None, metavar="SUBDIR",
                        help="the repository is an lwIP tree; SUBDIR holds its src/ (default: the top)")
    source.add_argument("--lwipopts", metavar="PATH_IN_REPO",
                        help="the repository holds this lwipopts.h, built against netrepro's lwIP tree")
    parser.add_argument("-I", "--include", action="append", default=[], metavar="DIR_IN_REPO",
                        help="with --lwipopts: an include directory it needs (repeatable)")
    parser.add_argument("--lwip", metavar="PROFILE",
                        help="with --lwip-tree-in-repo: the profile to build each revision with "
                             "(default: the platform's)")
    parser.add_argument("--lwip-tree", metavar="DIR",
                        help="with --lwipopts: the lwIP tree to build against (default: as for run)")
    parser.add_argument("--link", default=None, metavar="PRESET", help="the platform's link preset (default: direct)")
    add_link_args(parser)
    add_time_args(parser)
    parser.add_argument("--workload", default="rx", choices=WORKLOADS)
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each run (default 3)")
    parser.add_argument("--bytes", type=size_arg, default=None, help="byte-count variant (discard: default 8 MiB)")
    parser.add_argument("--chunk", type=size_arg, default=1460, help="discard/sock-*: bytes per write")
    criterion = parser.add_mutually_exclusive_group(required=True)
    criterion.add_argument("--min-mbps", type=float, metavar="X", help="good if the throughput is at least X")
    criterion.add_argument("--window", type=int, metavar="N",
                           help="good if the largest window the device advertised is exactly N bytes")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="the bisect's folder goes here (default ./runs)")
    parser.add_argument("--json", action="store_true", help="print the steps and the result as one JSON document")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for each boot banner")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help=f"revisions run at once each round on a local Ray pool (default: this machine's cores / "
                             f"{RUN_CPUS}): the step one at a time takes and, beside it, the steps it would take "
                             "next; 1: one at a time")
    add_quiet(parser)
    parser.set_defaults(func=cmd_bisect)
    return parser


def bisection_from_args(args: argparse.Namespace) -> Bisection:
    """Check everything the command line gives (one-line errors) and set up the search."""
    progress = command_progress(args)
    platform = load_platform(args.platform)
    repo = Repo.open(args.repo)
    good, bad = repo.commit(args.good, "good"), repo.commit(args.bad, "bad")
    source: LwipTreeSource | LwipoptsSource
    if args.lwipopts is not None:
        if args.lwip:
            raise NetreproError("--lwip picks a profile for an lwIP tree in the repository",
                                "with --lwipopts the options are the repository's own; drop --lwip")
        path = repo.in_repo(args.lwipopts)
        tree = lwip_tree(args.lwip_tree)
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", (Path(path).stem if Path(path).name != "lwipopts.h"
                                                 else Path(path).parent.name) or repo.path.name)
        source = LwipoptsSource(path, tuple(repo.in_repo(d) for d in args.include), tree, name)
    else:
        if args.include or args.lwip_tree:
            raise NetreproError("-I and --lwip-tree go with --lwipopts",
                                "with --lwip-tree-in-repo the lwIP tree is the repository's; pick options with --lwip")
        source = LwipTreeSource(repo.in_repo(args.lwip_tree_in_repo), resolve_profile(platform, args.lwip))
    link = link_spec(args, platform)
    workload = Workload(args.workload, seconds=args.seconds, bytes=args.bytes, chunk=args.chunk)
    criterion = Criterion(min_mbps=args.min_mbps, window=args.window)
    bisection = Bisection(repo, good, bad, platform, source, link, workload, criterion, progress=progress,
                          time=platform.time(time_choice(args)),
                          boot_timeout=args.timeout)
    open_revisions = len(bisection.validate()) - 1  # the bad one is known
    bisection.jobs = planned_jobs(args.jobs, max(1, open_revisions))
    bisection.folder = make_run_dir(args.out, platform.name, "bisect")
    return bisection


def cmd_bisect(args: argparse.Namespace) -> int:
    bisection = bisection_from_args(args)
    if not args.json:
        subjects = bisection.repo.subjects(bisection.good, bisection.bad)
        count = len(subjects) - 1
        print(f"bisecting {count} revision{'s' if count != 1 else ''} between good {bisection.good[:10]} and bad "
              f"{bisection.bad[:10]} (about {max(count, 1).bit_length()} steps"
              f"{f', up to {bisection.jobs} at once' if bisection.jobs > 1 else ''}) on {bisection.platform.name}: "
              f"{bisection.criterion.describe()}", flush=True)
        out = sys.stdout  # the steps' lines go here even while Ray holds stdout (--jobs: on stderr, parallel.py)
        bisection.on_step = lambda step: print(step.line(), file=out, flush=True)
    result = bisection.run()
    print(json.dumps(result.document(), indent=2) if args.json else format_bisect(result, steps=False))
    return verdict(result.exact)
