"""netrepro's exit codes: the one definition (docs/cli.md, "Exit codes", is its table).

A script or CI job reads them to tell apart "the study ran and its answer is no" (1, 4, 5), "the command
line is wrong" (2), "netrepro could not do it here" (3), "netrepro broke" (70) and "stopped" (130).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1          # a negative verdict: a check failed, a case has no figure, a finding, a sweep point failed
    USAGE = 2           # argparse's own: the command line did not parse
    COULD_NOT = 3       # a NetreproError: netrepro could not do what was asked (its one line names the fix)
    LEAKS = 4           # run --check-leaks: the board did not get back what the run took
    SOAK_FAILED = 5     # run --minutes: the board died, a byte went missing or something leaked
    UNEXPECTED = 70     # an exception netrepro does not turn into one line (sysexits' EX_SOFTWARE): a bug
    INTERRUPTED = 130   # Ctrl-C or SIGTERM (128 + SIGINT, as a shell reports it)


def verdict(ok: bool) -> ExitCode:
    """A study's answer as its exit code."""
    return ExitCode.OK if ok else ExitCode.FAILED
