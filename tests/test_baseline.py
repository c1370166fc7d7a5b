"""Baselines: the comparison on synthetic results, the store, and one real save-then-regress via the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.analysis import AnalysisSummary
from harness.cli.exit_codes import ExitCode
from harness.core.errors import NetreproError
from harness.link import LinkSpec
from harness.rig.platform import PROJECT_ROOT
from harness.runs.result import RunResult
from harness.studies.baseline import (
    BASELINES_ENV,
    baseline_store,
    compare_to_baseline,
    load_baseline,
    parse_fraction,
    save_baseline,
)

LINK = LinkSpec.from_preset({"rtt": "5.5ms", "rate": "43mbit"}).paced_to_device(100_000_000, 1)
OPTIONS = {"TCP_MSS": 1460, "TCP_WND": 46720, "TCP_SND_BUF": 23360, "MEM_SIZE": 65536}


def result(mbps=40.7, mss=1460, window_max=46720, options=None, verdict="link-limited", **changes):
    run = RunResult(platform="openmv-n6", profile="mp-n6-after", lwip_version="2.1.3", link=LINK,
                    workload={"name": "sock-rx", "seconds": 3.0, "bytes": None, "chunk": 1460, "warmup_s": 0.0},
                    run_dir="/runs/x", capture="/runs/x/capture.pcap", console_log="/runs/x/console.log",
                    device="10.77.0.2",
                    status="passed", options=dict(options or OPTIONS), throughput_mbps=mbps,
                    analysis=AnalysisSummary.from_dict({"device_mss": mss, "verdict": verdict, "rtt_ms": 8.5,
                                                        "device_window": {"min": 40880, "median": 45260.0,
                                                                          "max": window_max}}))
    for key, value in changes.items():
        setattr(run, key, value)
    return run


@pytest.fixture
def baseline(tmp_path):
    save_baseline(result(), "n6-after", tmp_path, link_name="wifi")
    return load_baseline("n6-after", tmp_path)


def test_the_same_figures_match(baseline):
    assert compare_to_baseline(result(), baseline) == []
    assert compare_to_baseline(result(mbps=35.0), baseline) == []          # 14% down: within 15%
    assert compare_to_baseline(result(mbps=60.0), baseline) == []          # faster is not a regression
    assert compare_to_baseline(json.loads(json.dumps(result().as_dict())), baseline) == []   # a result.json


def test_a_throughput_drop_beyond_max_drop_fails(baseline):
    failures = compare_to_baseline(result(mbps=27.0, verdict="window-limited"), baseline)
    assert failures == ["throughput 27.00 Mbit/s is 33.7% below the baseline's 40.70 Mbit/s (allowed 15%); "
                        "verdict window-limited, baseline link-limited"]
    assert compare_to_baseline(result(mbps=27.0), baseline, max_drop=0.4) == []
    assert len(compare_to_baseline(result(mbps=37.0), baseline, max_drop=0.05)) == 1


def test_a_window_change_fails_with_the_option_named(baseline):
    failures = compare_to_baseline(result(window_max=23360, options={**OPTIONS, "TCP_WND": 23360}), baseline)
    assert failures == ["device window (max advertised) 23360 B, baseline 46720 B",
                        "option TCP_WND 23360, baseline 46720"]


def test_an_mss_change_fails(baseline):
    failures = compare_to_baseline(result(mss=1200, options={**OPTIONS, "TCP_MSS": 1200}), baseline)
    assert failures == ["device MSS 1200, baseline 1460", "option TCP_MSS 1200, baseline 1460"]
    assert compare_to_baseline(result(mss=None), baseline) == ["device MSS unknown, baseline 1460"]


def test_another_setup_is_named(baseline):
    link = LINK.override(rate_to_device="20mbit")
    failures = compare_to_baseline(result(link=link, platform="openmv-rt1060"), baseline)
    assert failures == ["platform openmv-rt1060, baseline openmv-n6",
                        "link to_device.rate_bps 20000000, baseline 43000000"]


def test_the_store_and_its_one_line_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(BASELINES_ENV, raising=False)
    assert baseline_store() == tmp_path / ".netrepro" / "baselines"
    path = save_baseline(result(), "first")
    assert path == tmp_path / ".netrepro" / "baselines" / "first.json"
    saved = json.loads(path.read_text())
    assert (saved["throughput_mbps"], saved["device_mss"], saved["device_window"], saved["options"]) == \
        (40.7, 1460, {"median": 45260.0, "max": 46720}, OPTIONS)
    save_baseline(result(), "second")
    with pytest.raises(NetreproError) as err:
        load_baseline("third")
    assert str(err.value) == f"no baseline 'third' in {tmp_path / '.netrepro' / 'baselines'}; known: first, second"
    monkeypatch.setenv(BASELINES_ENV, str(tmp_path / "elsewhere"))
    with pytest.raises(NetreproError, match="elsewhere; none saved there yet"):
        load_baseline("first")
    with pytest.raises(NetreproError, match="bad baseline name"):
        save_baseline(result(), "../escape")


def test_max_drop_is_a_fraction_or_a_percentage():
    assert parse_fraction("0.15") == 0.15 and parse_fraction("20%") == 0.2
    for bad in ("1.5", "-0.1", "lots", "100%"):
        with pytest.raises(NetreproError):
            parse_fraction(bad)


@pytest.mark.real
def test_n6_before_fails_against_an_after_baseline(tmp_path, no_leftovers):
    env = {**os.environ, "CI": "true"}
    common = ["--link", "wifi", "--workload", "sock-rx", "--seconds", "3", "--out", str(tmp_path / "runs"),
              "--baseline-dir", str(tmp_path / "store")]

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "harness.cli", "run", "openmv-n6", *args, *common],
                              capture_output=True, text=True, timeout=300, cwd=PROJECT_ROOT, env=env)

    saved = cli("--lwip", "mp-n6-after", "--save-baseline", "n6-after")
    assert saved.returncode == 0, saved.stderr
    assert (tmp_path / "store" / "n6-after.json").is_file() and "baseline n6-after saved" in saved.stdout

    against = cli("--lwip", "mp-n6-before", "--against", "n6-after")
    assert against.returncode == ExitCode.FAILED, against.stdout + against.stderr
    lines = against.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("baseline n6-after:"))
    run_dir = next(line for line in lines if line.startswith("  folder")).split()[-1]
    assert f"run folder {run_dir}" in lines[head]
    failures = [line.strip() for line in lines[head + 1:]]
    assert all(line.startswith("FAIL ") for line in failures), failures
    assert "FAIL option TCP_WND 23360, baseline 46720" in failures
    assert "FAIL device window (max advertised) 23360 B, baseline 46720 B" in failures
    check = json.loads((tmp_path / "runs" / run_dir.rsplit("/", 1)[1] / "baseline-check.json").read_text())
    assert check["matches"] is False and check["failures"] == [f.removeprefix("FAIL ") for f in failures]

    unknown = cli("--lwip", "mp-n6-before", "--against", "nope")
    assert unknown.returncode == ExitCode.COULD_NOT and unknown.stderr.count("\n") == 1
    assert str(tmp_path / "store") in unknown.stderr and "known: n6-after" in unknown.stderr
