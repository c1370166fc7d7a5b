"""The command line's conventions (docs/cli.md, "Conventions"): progress on stderr unless --quiet, with --json
too; one exit code for each way a command ends; an unexpected exception is one line and a log file."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.cli.exit_codes import ExitCode
from harness.cli.main import build_parser
from harness.core.paths import PROJECT_ROOT
from tests.conftest import assert_one_line_error, netrepro_cli

# A study faked in the netrepro process, so that main() and the command's own lines run as they do for a user:
# `reproduce` answers at once (its progress shown, one case with the figure MBPS) or waits a minute.
_FAKE = """
import importlib, sys, time
m = importlib.import_module("harness.cli.main")  # the module: harness.cli's `main` is its function
def fake(report, progress, **_):
    progress.step("case one: run 1 of 1")
    if {wait}:
        time.sleep(60)
    return {{"report": report, "cases": [{{"case": "one", "median_mbps": {mbps}}}]}}
m.reproduce = fake
m.format_report = lambda document: "the table"
sys.exit(m.main(sys.argv[1:]))
"""


def _fake_args(mbps: float | None = 12.0, wait: bool = False) -> list[str]:
    return [sys.executable, "-c", _FAKE.format(mbps=mbps, wait=wait), "reproduce", "xbox"]


def _fake_reproduce(*args: str, mbps: float | None = 12.0, ci: str = "", cache: Path | None = None
                    ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CI": ci, **({"NETREPRO_CACHE": str(cache)} if cache else {})}
    return subprocess.run([*_fake_args(mbps), *args], capture_output=True, text=True, timeout=120, env=env,
                          check=False)


def test_json_keeps_the_progress_on_stderr_and_stdout_holds_only_the_json():
    proc = _fake_reproduce("--json")
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert json.loads(proc.stdout)["cases"][0]["median_mbps"] == 12.0
    assert re.search(r"^\[\s*\d+\.\ds\] case one: run 1 of 1$", proc.stderr, re.M), proc.stderr


@pytest.mark.parametrize(("args", "ci"), [(["--json", "--quiet"], ""), (["--quiet"], ""), (["--json"], "true")],
                         ids=["json-quiet", "quiet", "ci"])
def test_quiet_or_ci_silences_the_progress(args, ci):
    proc = _fake_reproduce(*args, ci=ci)
    assert proc.returncode == ExitCode.OK and proc.stderr == "", proc.stderr


def test_every_command_with_progress_takes_quiet():
    commands = build_parser()._subparsers._group_actions[0].choices  # argparse keeps its subparsers here
    with_progress = ["boot", "run", "compare", "reproduce", "calibrate", "calibrate-medium", "calibrate-rtt",
                     "sweep", "tune", "fuzz", "replay", "bisect"]
    assert [c for c in with_progress if "--quiet" not in commands[c].format_help()] == []


def test_a_negative_verdict_exits_1():
    proc = _fake_reproduce("--json", mbps=None)  # a case without a figure
    assert proc.returncode == ExitCode.FAILED == 1, proc.stderr


def test_a_command_line_that_does_not_parse_exits_2():
    proc = netrepro_cli("run", "openmv-n6", "--seconds", "ten", timeout=60)
    assert proc.returncode == ExitCode.USAGE == 2 and "argument --seconds: invalid float value" in proc.stderr


def test_what_netrepro_cannot_do_exits_3_with_one_line():
    assert_one_line_error(netrepro_cli("boot", "no-such-board", timeout=60), "unknown platform 'no-such-board'")
    assert ExitCode.COULD_NOT == 3


def test_an_unexpected_exception_is_one_line_and_its_traceback_in_a_log(tmp_path):
    (tmp_path / "a-file").write_text("")
    page = tmp_path / "a-file" / "page.html"  # its folder is a file: an OSError netrepro does not expect
    proc = _fake_reproduce("--html", str(page), cache=tmp_path / "cache")
    assert proc.returncode == ExitCode.UNEXPECTED == 70, proc.stderr
    (line,) = proc.stderr.splitlines()[-1:]
    assert proc.stderr.count("netrepro:") == 1 and "Traceback" not in proc.stderr, proc.stderr
    (log,) = (tmp_path / "cache" / "logs").glob("crash-*.log")
    assert line.startswith("netrepro: unexpected error: ") and line.endswith(f"{log} (please report it)"), line
    text = log.read_text()
    assert text.startswith(f"netrepro reproduce xbox --html {page}\n") and "Traceback" in text
    assert "write_report_page" in text


def test_sigint_exits_130():
    proc = subprocess.Popen(_fake_args(wait=True), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CI": ""})
    try:
        assert "case one" in proc.stderr.readline()  # waiting now
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == ExitCode.INTERRUPTED == 130 and time.monotonic() - sent < 10
    assert err.strip() == "netrepro: interrupted; everything the run started has been stopped" and out == ""


def test_the_docs_table_is_the_exit_codes():
    text = (PROJECT_ROOT / "docs" / "cli.md").read_text()
    section = text[text.index("### Exit codes"):]
    rows = re.findall(r"^\| (\d+) \| `(\w+)` \|", section, re.M)
    assert [(int(code), name) for code, name in rows] == [(c.value, c.name) for c in ExitCode]


@pytest.mark.real
def test_a_real_run_with_json_shows_its_progress_on_stderr(tmp_path, no_leftovers):
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "run", "openmv-n6", "--seconds", "1", "--json",
                           "--out", str(tmp_path)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CI": ""}, check=False)
    assert proc.returncode == ExitCode.OK, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["throughput_mbps"] > 0
    steps = re.findall(r"^\[\s*\d+\.\ds\] (.*)$", proc.stderr, re.M)
    assert any(s.startswith("booting openmv-n6") for s in steps), proc.stderr
    assert any(s.startswith("starting the peer namespace") for s in steps), proc.stderr


def test_a_command_that_draws_nothing_does_not_load_matplotlib():
    """matplotlib (about half a CPU second to import) is loaded on the first plot, not at the command's start."""
    probe = ("import sys, contextlib, io\nfrom harness.cli.main import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    code = main(['platforms'])\n"
             "print(code, sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'PIL')))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=PROJECT_ROOT,
                          timeout=120)
    assert proc.stdout.split("\n")[0] == "0 []", (proc.stdout, proc.stderr)
