"""TOML netrepro writes into files people keep: by a TOML library, text given by a user read back as given, and
the files' comments kept (calibrate-medium / calibrate-rtt --record, report new)."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from harness.core.paths import PROJECT_ROOT
from harness.link.ping import Ping
from harness.rig.platform import load_platform
from harness.studies.medium import MediumCalibration, record_input, record_phy_rate
from harness.studies.report_writer import toml_key, toml_value
from harness.studies.rtt import RttCalibration, record_base_delay

AWKWARD = 'PR 19629: "43 Mbit/s" \\ C:\\path\nsecond line, naïve µs ✓\t\x7f'


def _comments(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("#")]


def _copy(tmp_path: Path, name: str) -> Path:
    path = tmp_path / Path(name).name
    path.write_text((PROJECT_ROOT / name).read_text())
    return path


def test_a_source_with_quotes_backslashes_a_newline_and_non_ascii_reads_back_as_given(tmp_path):
    report = _copy(tmp_path, "reports/openmv-rt1060.toml")
    before = report.read_text()
    medium = MediumCalibration(40e6, 43_495_000, 39.996e6, [(43_495_000, 39.996e6)], "openmv-rt1060", "wifi")
    rtt = RttCalibration("openmv-rt1060", "wifi", 3.3e-3, 1.5e-3, 3.3e-3, [Ping(3.3e-3, 0.0)])
    record_input(report, medium.input_toml(AWKWARD))                  # replaces the entry of that name, in place
    record_input(report, rtt.input_toml("a new RTT ✓", AWKWARD))      # no entry of that name: at the end
    inputs = {i["name"]: i for i in tomllib.loads(report.read_text())["inputs"]}
    assert inputs["wifi UDP goodput (calibrates the shared medium)"]["source"] == AWKWARD
    assert inputs["a new RTT ✓"]["source"] == AWKWARD and inputs["a new RTT ✓"]["calibrated"]["pings"] == 1
    assert _comments(report.read_text()) == _comments(before)
    assert len(inputs) == len(tomllib.loads(before)["inputs"]) + 1


def test_recording_into_a_platform_file_keeps_its_comments(tmp_path):
    path = _copy(tmp_path, "platforms/openmv-rt1060.toml")
    before = path.read_text()
    platform = dataclasses.replace(load_platform("openmv-rt1060"), path=path)
    record_phy_rate(platform, "wifi", 44_000_000)
    record_base_delay(platform, RttCalibration("openmv-rt1060", "wifi", 3.3e-3, 1.5e-3, 3.3e-3, [Ping(3.3e-3, 0.0)]))
    after = path.read_text()
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b]
    assert [b for _, b in changed] == ['rtt = "1.500ms"   # netrepro calibrate-rtt: an idle ping reads 3.3 ms',
                                       'phy_rate = "44.000mbit"   # netrepro calibrate-medium']
    assert tomllib.loads(after)["links"]["wifi"]["phy_rate"] == "44.000mbit"


@pytest.mark.parametrize("text", [AWKWARD, "", "'single' and \"double\"", "\\u0041 is not A"])
def test_report_writer_strings_and_keys_read_back_as_given(text):
    assert tomllib.loads(f"{toml_key(text or 'k')} = {toml_value(text)}") == {text or "k": text}
