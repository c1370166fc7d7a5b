"""benchmarks/suite_bench.py's account of where the suite's time went: the board runs it finds, and only those."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from suite_bench import file_account, outside_account, run_account, with_workers


def _run(folder: Path, platform: str, wall_s: float, seconds: float | dict, dilation: float | None,
         console: bool = True, workload: dict | None = None) -> None:
    folder.mkdir(parents=True)
    log = folder / "console.log"
    if console:
        log.write_text("booted\n")
    result = folder / "result.json"
    result.write_text(json.dumps({"platform": platform, "lwip_version": "2.1.3", "started": "2026-12-06T20:00:00+0000",
                                  "seconds": seconds, "console_log": str(log),
                                  "time": {"effective_dilation": dilation}, "workload": workload}))
    started = 1796587200.0  # 2026-12-06T20:00:00Z
    os.utime(result, (started + wall_s, started + wall_s))


def test_the_account_sums_the_board_runs_per_platform_and_leaves_out_hand_made_results(tmp_path):
    _run(tmp_path / "popen-gw0" / "a", "openmv-n6", 12.0, 2.0, 5.0)
    _run(tmp_path / "popen-gw1" / "b", "openmv-n6", 18.0, 3.0, 6.0)
    _run(tmp_path / "popen-gw1" / "c", "ethernut2", 60.0, 10.0, None)
    _run(tmp_path / "popen-gw1" / "d", "xbox", 30.0, {"rx": 4.0, "tx": 3.5}, 3.0)  # two-way: seconds per direction
    _run(tmp_path / "popen-gw0" / "fake", "p", 500.0, 1.0, 2.0, console=False)  # a test's hand-made result
    account = run_account(tmp_path)  # two workers' folders
    assert account.splitlines() == [
        "- board runs: 4, 2.0 min of wall time together: on 2 workers, the board runs alone (boot to result) take "
        "1.0 min of the suite",
        "  - ethernut2: 1 runs, 1.0 min, 10 board s measured",
        "  - openmv-n6: 2 runs, 0.5 min, 5 board s measured, D kept (median) 5.50",
        "  - xbox: 1 runs, 0.5 min, 4 board s measured, D kept (median) 3.00",
        "- repeats of runs the host disturbed (each at twice D): 0, 0.0 min of wall time",
        "- runs with the inputs of another run (platform, profile, options, apps, link, workload): 1 in 1 sets, "
        "0.2 min of wall time beyond one run a set; the largest sets' tests:",
        "  - 2 runs: a, b",  # asked the same: the longer kept, the shorter beyond
    ]
    (tmp_path / "popen-gw2").mkdir()  # a third worker that left no run
    assert run_account(tmp_path).splitlines()[0].endswith("on 3 workers, the board runs alone (boot to result) take "
                                                         "0.7 min of the suite")
    assert "on 1 workers" in run_account(tmp_path, workers=1)


def test_runs_asked_for_different_inputs_are_not_counted_as_the_same(tmp_path):
    _run(tmp_path / "popen-gw0" / "a", "openmv-n6", 12.0, 2.0, 5.0)
    _run(tmp_path / "popen-gw0" / "b", "openmv-n6", 18.0, 3.0, 6.0, workload={"name": "iperf-tx"})
    assert "0 in 0 sets, 0.0 min" in run_account(tmp_path)


def test_no_board_run_is_said_so(tmp_path):
    assert run_account(tmp_path) == "- board runs: none found under the basetemp\n"


def test_the_file_account_sums_pytests_times_per_file_costliest_first(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text('<testsuites><testsuite name="pytest">'
                     '<testcase classname="tests.test_a" name="test_one" time="30.25"/>'
                     '<testcase classname="tests.test_b" name="test_two" time="100"/>'
                     '<testcase classname="tests.test_a.TestGroup" name="test_three" time="40"/>'
                     '</testsuite></testsuites>')
    assert file_account(junit) == ("- time per test file: 2.8 min of tests together in 2 files; the 2 costliest (s): "
                                   "test_b 100, test_a 70\n")
    assert file_account(tmp_path / "none.xml") == "- time per test file: no JUnit XML\n"


def test_a_trial_sets_the_clones_test_command_to_n_workers_and_refuses_a_command_it_cannot_read(tmp_path):
    test = tmp_path / "test"
    test.write_text("set -e\nworkers=(-n 3)\nfor arg in \"$@\"; do :; done\n")
    with_workers(test, 4)
    assert test.read_text() == "set -e\nworkers=(-n 4)\nfor arg in \"$@\"; do :; done\n"
    own = (Path(__file__).resolve().parent.parent / "test").read_text()  # the repository's own test command
    test.write_text(own)
    with_workers(test, 97)  # a count no default has: the trial's own clone may already say 4
    changed = [(a, b) for a, b in zip(own.splitlines(), test.read_text().splitlines(), strict=True) if a != b]
    assert [b for _, b in changed] == ["workers=(-n 97)"], changed
    test.write_text("exec pytest -n auto\n")
    with pytest.raises(SystemExit, match="no `workers=\\(-n N\\)` line"):
        with_workers(test, 4)


def test_runs_the_netrepro_fixture_made_are_named_by_the_test_the_junit_xml_says_made_them(tmp_path):
    runs = tmp_path / "popen-gw0" / "netrepro-runs0"
    _run(runs / "20261207-n6-a", "openmv-n6", 12.0, 2.0, 5.0)
    _run(runs / "20261207-n6-a-slower", "openmv-n6", 14.0, 2.0, 5.0)  # its repeat at twice D
    _run(runs / "20261207-report" / "after-1", "openmv-n6", 13.0, 2.0, 5.0)  # a netrepro.reproduce's run
    _run(runs / "20261207-n6-b", "openmv-n6", 11.0, 2.0, 5.0)  # a run no property names
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite><testcase classname="tests.test_x" name="test_window">'
        f'<properties><property name="mp-n6-before.run_dir" value="{runs / "20261207-n6-a-slower"}"/></properties>'
        '</testcase><testcase classname="tests.test_y" name="test_report">'
        f'<properties><property name="reproduce.run_dir" value="{runs / "20261207-report"}"/></properties>'
        '</testcase></testsuite></testsuites>')
    assert run_account(tmp_path, junit=junit).splitlines()[-1] == \
        "  - 4 runs: netrepro-runs0, test_report, test_window"
    assert run_account(tmp_path).splitlines()[-1] == "  - 4 runs: netrepro-runs0"  # without the XML: the folder


def test_runs_that_started_before_the_suite_are_not_its_own(tmp_path):
    _run(tmp_path / "popen-gw0" / "a", "openmv-n6", 12.0, 2.0, 5.0)  # started 2026-12-06T20:00:00Z
    _run(tmp_path / "popen-gw0" / "b", "xbox", 18.0, 3.0, 6.0)
    started = 1796587200.0
    assert run_account(tmp_path, since=started).startswith("- board runs: 2,")
    assert run_account(tmp_path, since=started + 60) == "- board runs: none found under the basetemp\n"


def test_a_repeat_of_a_run_made_in_its_tests_own_folder_is_named_by_that_test(tmp_path):
    _run(tmp_path / "popen-gw0" / "test_a_followed_run0", "openmv-n6", 12.0, 2.0, 5.0)
    _run(tmp_path / "popen-gw0" / "test_a_followed_run0-slower", "openmv-n6", 14.0, 2.0, 9.0)  # its repeat
    lines = run_account(tmp_path).splitlines()
    assert lines[-1] == "  - 2 runs: test_a_followed_run0"
    assert "- repeats of runs the host disturbed (each at twice D): 1, 0.2 min of wall time" in lines


def test_the_time_outside_board_runs_is_each_tests_time_less_its_runs(tmp_path):
    _run(tmp_path / "popen-gw0" / "test_a_long_name_cut_at_thirty0", "openmv-n6", 12.0, 2.0, 5.0)
    _run(tmp_path / "popen-gw0" / "test_a_long_name_cut_at_thirty0-slower", "openmv-n6", 14.0, 2.0, 9.0)
    runs = tmp_path / "popen-gw1" / "netrepro-runs0"
    _run(runs / "20261207-n6-a", "openmv-n6", 10.0, 2.0, 5.0)
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite>'
        '<testcase classname="tests.test_x" name="test_a_long_name_cut_at_thirty_characters[one]" time="40.0"/>'
        '<testcase classname="tests.test_y" name="test_window" time="15.5">'
        f'<properties><property name="mp-n6-before.run_dir" value="{runs / "20261207-n6-a"}"/></properties>'
        '</testcase><testcase classname="tests.test_z" name="test_no_board" time="30.0"/>'
        '</testsuite></testsuites>')
    assert outside_account(tmp_path, junit).splitlines() == [
        "- time outside board runs: 0.8 of the tests' 1.4 worker-minutes (runs outside the basetemp not found: "
        "their tests' time all counts); the 3 tests (by folder name) with the most (s, outside / in all):",
        "  - test_no_board: 30 / 30",
        "  - test_a_long_name_cut_at_thirty: 14 / 40",
        "  - test_window: 6 / 16"]
    assert outside_account(tmp_path, tmp_path / "missing.xml") == "- time outside board runs: no JUnit XML\n"
