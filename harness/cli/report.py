"""`netrepro report check | new | from-capture | schema`: a user's own report file, checked or written."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.cli.exit_codes import ExitCode
from harness.core.errors import NetreproError
from harness.rig.workload import ONE_WAY
from harness.studies.report_check import check_report
from harness.studies.report_file import find_report
from harness.studies.report_from_capture import FromCapture, write_report_from_capture
from harness.studies.report_new import NewReport, Part, write_new_report
from harness.studies.report_schema import schema_text
from harness.studies.report_writer import relative_to

CHECK_FAILED_EXIT = ExitCode.FAILED  # report check: the file has errors


def add_report_parser(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser("report", help="check a report file, or write one from a few facts or from a capture",
                            description="Your own report: check it against the format (reports/report.schema.json), "
                                        "write one from a few facts, or from the capture of your real board.")
    verbs = report.add_subparsers(dest="verb", required=True)

    check = verbs.add_parser("check", help="validate a report file: one line per problem, exit 1 on an error")
    check.add_argument("report", metavar="PATH_OR_NAME", help="a report file, or a shipped report's name")
    check.add_argument("--json", action="store_true", help="print the problems as JSON")
    check.set_defaults(func=cmd_report_check)

    new = verbs.add_parser("new", help="write a report file from a few facts (two lwipopts.h, link, figures)")
    new.add_argument("path", type=Path, help="the report file to write (.toml)")
    new.add_argument("--platform", required=True, help="the emulated board nearest yours (netrepro platforms)")
    new.add_argument("--before", type=Path, required=True, metavar="FILE", help="the lwipopts.h before the change")
    new.add_argument("--after", type=Path, required=True, metavar="FILE", help="the lwipopts.h after the change")
    new.add_argument("--link", metavar="PRESET", help="the platform's link preset (default: ethernet, or direct "
                                                      "with --rtt/--rate)")
    new.add_argument("--rtt", metavar="TIME", help="the report's RTT, e.g. 0.4ms (a link of the report's own)")
    new.add_argument("--rate", metavar="RATE", help="the report's link rate, e.g. 100mbit")
    new.add_argument("--workload", default="rx", choices=ONE_WAY, help="what the board runs (default rx: iperf, "
                                                                       "peer -> device)")
    new.add_argument("--figure", action="append", default=[], metavar="CASE=VALUE",
                     help="the report's figure for a case in Mbit/s, e.g. before=40 or after=35-39 (repeatable)")
    _firmware_keys(new)
    new.add_argument("--part", help="your part, e.g. 'STM32F767 (Cortex-M7)': modelled on the platform's core")
    new.add_argument("--clock-mhz", type=float, help="--part's clock (with --ipc)")
    new.add_argument("--ipc", type=float, help="--part's instructions per cycle (with --clock-mhz)")
    new.add_argument("--mips", type=float, help="or --part's instruction rate")
    new.add_argument("--title", help="the report's title")
    new.add_argument("--force", action="store_true", help="replace the file if it exists")
    new.set_defaults(func=cmd_report_new)

    capture = verbs.add_parser("from-capture", help="write a report from the capture of your real board's transfer",
                               description="Read a capture (pcap or pcapng, taken at the board's side or the PC's) "
                                           "and write a report whose link, windows and figure are measured from it.")
    capture.add_argument("capture", type=Path, help="the capture of your board's TCP transfer")
    capture.add_argument("--platform", required=True, help="the emulated board nearest yours (netrepro platforms)")
    capture.add_argument("-o", "--out", type=Path, required=True, metavar="PATH", help="the report file to write")
    capture.add_argument("--lwip", type=Path, metavar="FILE",
                         help="your board's lwipopts.h (default: one is written beside the report with the MSS and "
                              "window the capture shows)")
    capture.add_argument("--device", metavar="IP", help="the board's address (default: the side that advertises "
                                                        "the smaller window)")
    capture.add_argument("--stream", type=int, metavar="N", help="the TCP stream of the transfer (tshark's "
                                                                 "tcp.stream), when the capture holds several")
    _firmware_keys(capture)
    capture.add_argument("--force", action="store_true", help="replace the files if they exist")
    capture.set_defaults(func=cmd_report_from_capture)

    schema = verbs.add_parser("schema", help="print the report format's JSON Schema")
    schema.set_defaults(func=cmd_report_schema)


def _firmware_keys(parser: argparse.ArgumentParser) -> None:
    """What a lwipopts.h of a port needs to build, written into the report (paths relative to it)."""
    parser.add_argument("-I", "--include", action="append", default=[], metavar="DIR",
                        help="an include folder your lwipopts.h needs (repeatable)")
    parser.add_argument("--stub-header", action="append", default=[], metavar="NAME",
                        help="a header it includes that is stood in by an empty one, e.g. py/mpconfig.h (repeatable)")
    parser.add_argument("--source", action="append", default=[], metavar="FILE.c",
                        help="a C file of your port to build in, e.g. what LWIP_RAND() calls (repeatable)")


def cmd_report_from_capture(args: argparse.Namespace) -> int:
    spec = FromCapture(args.capture, args.platform, args.out, args.lwip, args.device, args.stream,
                       _relative(args.include, args.out), tuple(args.stub_header), _relative(args.source, args.out))
    written = write_report_from_capture(spec, force=args.force)
    r = written.reading
    rate = f"{r.rate_bps / 1e6:.4g} Mbit/s ({r.rate_from})" if r.rate_bps else "unknown"
    print(f"read {r.name}: stream {r.stream}, device {r.device} ({r.direction}, captured at its {r.captured_at} "
          f"side); MSS {r.mss}, window {r.window_max}, RTT idle {r.idle_rtt_ms} ms / loaded {r.loaded_rtt_ms} ms, "
          f"rate {rate}, loss {_percent(r.loss)}, {r.retransmissions} retransmissions, {r.throughput_mbps} Mbit/s, "
          f"{r.verdict}")
    if written.lwipopts:
        print(f"wrote {written.lwipopts} (TCP_MSS and TCP_WND from the capture; the rest assumed)")
    print(f"wrote {written.report}")
    print(f"next: netrepro reproduce {written.report}")
    return 0


def _relative(paths: list[str], report: Path) -> tuple[str, ...]:
    """Paths given on the command line as the report writes them: relative to its folder."""
    return tuple(relative_to(Path(p), report.parent) for p in paths)


def _percent(fraction: float | None) -> str:
    return "unknown" if fraction is None else f"{fraction * 100:.2f} %"


def cmd_report_check(args: argparse.Namespace) -> int:
    try:
        path = find_report(args.report)
        problems = check_report(path)
    except NetreproError as exc:  # no such file, not text: the check's answer too, not a usage error
        print(f"netrepro: error: {exc}", file=sys.stderr)
        return CHECK_FAILED_EXIT
    errors = sum(p.severity == "error" for p in problems)
    if args.json:
        print(json.dumps({"file": str(path), "ok": not errors, "problems": [p.as_dict() for p in problems]},
                         indent=2))
    else:
        for problem in problems:
            print(problem.text())
        warnings = len(problems) - errors
        print(f"{path}: {'ok' if not errors else f'{errors} error' + ('s' if errors > 1 else '')}"
              f"{f', {warnings} warning' + ('s' if warnings > 1 else '') if warnings else ''}")
    return CHECK_FAILED_EXIT if errors else 0


def cmd_report_new(args: argparse.Namespace) -> int:
    figures = dict(_figure(text) for text in args.figure)
    spec = NewReport(args.path, args.platform, args.before, args.after, args.link, args.rtt, args.rate,
                     args.workload, figures, _relative(args.include, args.path), tuple(args.stub_header),
                     _relative(args.source, args.path), _part(args), args.title)
    path = write_new_report(spec, force=args.force)
    print(f"wrote {path}")
    print(f"next: fill in its empty sources, then netrepro report check {path} && netrepro reproduce {path}")
    return 0


def cmd_report_schema(args: argparse.Namespace) -> int:
    sys.stdout.write(schema_text())
    return 0


def _figure(text: str) -> tuple[str, str]:
    case, sep, value = text.partition("=")
    if not sep or not case.strip() or not value.strip():
        raise NetreproError(f"--figure '{text}' is not CASE=VALUE", "write e.g. --figure before=40")
    return case.strip(), value.strip()


def _part(args: argparse.Namespace) -> Part | None:
    speed = (args.clock_mhz, args.ipc, args.mips)
    if args.part is None:
        if any(v is not None for v in speed):
            raise NetreproError("--clock-mhz, --ipc and --mips describe --part", "give --part NAME too")
        return None
    if (args.mips is None) == (args.clock_mhz is None or args.ipc is None) or (
            args.mips is not None and (args.clock_mhz or args.ipc)):
        raise NetreproError("--part needs its speed: --clock-mhz and --ipc, or --mips", "give one of the two")
    if any(v is not None and v <= 0 for v in speed):
        raise NetreproError("--clock-mhz, --ipc and --mips are positive numbers", "e.g. --clock-mhz 216 --ipc 1")
    return Part(args.part, args.clock_mhz, args.ipc, args.mips)
