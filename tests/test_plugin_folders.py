"""A passing test's run leaves no folder behind, its repeats at a slower D included (a busy host makes them)."""

from __future__ import annotations

from harness.pytest_plugin import _with_repeats
from harness.runs.disturbed import REPEAT_SUFFIX


def test_a_runs_folder_brings_its_repeats_and_no_other_run(tmp_path):
    run = tmp_path / "20261204-165727-openmv-n6-mp-n6-after-6mbb7q22"
    repeats = [tmp_path / (run.name + REPEAT_SUFFIX), tmp_path / (run.name + REPEAT_SUFFIX * 2)]
    other = tmp_path / "20261204-165727-openmv-n6-mp-n6-after-zzzzzzzz-slower"
    for folder in (run, *repeats, other):
        folder.mkdir()
    assert _with_repeats(run) == [run, *repeats]
