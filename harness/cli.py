"""The `netrepro` command line."""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from harness.build import LWIP_TREE_ENV, build_firmware, lwip_tree
from harness.engine import QemuEngine
from harness.errors import NetreproError
from harness.platform import load_platform, platform_names
from harness.profile import resolve_profile
from harness.progress import Progress


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so every context manager tears its part down.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return int(args.func(args) or 0)
    except NetreproError as exc:
        print(f"netrepro: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("netrepro: interrupted; everything the run started has been stopped", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="netrepro", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    platforms = sub.add_parser("platforms", help="list platforms and their lwIP profiles")
    platforms.add_argument("--json", action="store_true")
    platforms.set_defaults(func=cmd_platforms)

    boot = sub.add_parser("boot", help="build, boot, print the banner and the effective lwIP options")
    boot.add_argument("platform")
    _firmware_args(boot)
    boot.add_argument("--json", action="store_true", help="print one JSON object")
    boot.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the boot banner")
    boot.add_argument("--quiet", action="store_true", help="no progress lines")
    boot.set_defaults(func=cmd_boot)
    return parser


def _firmware_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lwip", metavar="PROFILE_OR_PATH",
                        help="lwIP options: a profile name or the path of your lwipopts.h")
    parser.add_argument("-I", "--include", action="append", default=[], metavar="DIR",
                        help="include directory your lwipopts.h needs (repeatable)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="override one lwIP option after the profile (repeatable)")
    parser.add_argument("--lwip-tree", metavar="DIR",
                        help=f"lwIP source tree to build (default: ${LWIP_TREE_ENV}, else Debian's 2.1.3)")


def cmd_platforms(args: argparse.Namespace) -> int:
    platforms = [load_platform(name) for name in platform_names()]
    if args.json:
        print(json.dumps([{"name": p.name, "description": p.description, "engine": p.engine["kind"],
                           "machine": p.engine["machine"], "profiles": p.profiles,
                           "default_profile": p.default_profile, "links": sorted(p.links)}
                          for p in platforms], indent=2))
        return 0
    for p in platforms:
        print(f"{p.name}: {p.description}")
        print(f"  engine:   {p.engine['kind']} {p.engine['machine']} ({p.engine.get('cpu', '?')})")
        print(f"  profiles: {', '.join(p.profiles)} (default {p.default_profile})")
        print(f"  links:    {', '.join(sorted(p.links))}")
    return 0


def cmd_boot(args: argparse.Namespace) -> int:
    progress = Progress(quiet=args.quiet or args.json)
    platform = load_platform(args.platform)
    tree = lwip_tree(args.lwip_tree)
    profile = resolve_profile(platform, args.lwip, args.include, args.set, tree)
    firmware = build_firmware(platform, profile, tree, progress.step)
    run_dir = Path(tempfile.mkdtemp(prefix=f"netrepro-boot-{platform.name}-"))
    ok = False
    try:
        progress.step(f"booting {platform.name} on {platform.engine['kind']} {platform.engine['machine']}")
        with QemuEngine(platform, firmware.elf, run_dir, run_dir) as engine:
            console = engine.start(timeout=args.timeout)
            options = console.opts()
            banner_line = (f"netrepro firmware board={console.banner.board} nic={console.banner.nic} "
                           f"lwip={console.banner.lwip} profile={console.banner.profile}")
        result = {"platform": platform.name, "profile": profile.name, "lwip_version": firmware.lwip_version,
                  "firmware": str(firmware.elf), "rebuilt": firmware.rebuilt,
                  "boot_seconds": round(console.boot_seconds or 0.0, 3), "banner": banner_line,
                  "options": options}
        ok = True
    finally:
        if ok:
            shutil.rmtree(run_dir, ignore_errors=True)
        else:
            print(f"netrepro: the boot's console log and command line are kept in {run_dir}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(banner_line)
        print(f"booted in {result['boot_seconds']} s; firmware {firmware.elf}")
        for name, value in options.items():
            print(f"  {name:<26} {value}")
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
