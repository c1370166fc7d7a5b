"""The pytest plugin as a user's project meets it: a plain install, a test folder outside the repo."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parent.parent

USER_TESTS = '''
import pytest


@pytest.mark.parametrize("profile", ["mp-n6-before", "mp-n6-after"])
def test_window_per_profile(netrepro, profile):
    result = netrepro.run("openmv-n6", profile, workload="rx", seconds=2, rtt="2ms", rate="50mbit")
    capture = netrepro.capture(result)
    capture.expect_mss(device=1460)
    capture.expect_device_window({"mp-n6-before": 23360, "mp-n6-after": 46720}[profile])
    assert result.throughput_mbps > 1


def test_a_claim_that_fails_keeps_its_run(netrepro):
    result = netrepro.run("openmv-n6", "mp-n6-before", workload="rx", seconds=1, rtt="2ms", rate="50mbit")
    netrepro.capture(result).expect_device_window(46720)


def test_the_console_of_a_booted_board(netrepro):
    with netrepro.board("openmv-n6", "mp-n6-after", rtt="1ms") as rig:
        assert rig.console.opts()["TCP_WND"] == 46720
        ping = rig.namespace.run(["ping", "-c", "2", "-i", "0.2", rig.addresses.device])
        assert " 0% packet loss" in ping.stdout
'''


@pytest.fixture(scope="module")
def user_python(tmp_path_factory) -> Path:
    """A fresh virtualenv with netrepro installed from the checkout (not editable), as a user would."""
    venv = tmp_path_factory.mktemp("user-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # The dependencies come from this checkout's environment instead of the network.
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "netrepro-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(ROOT)],
                   check=True, timeout=300, capture_output=True)
    return python


def test_a_users_project_uses_the_plugin_after_a_plain_install(user_python, tmp_path):
    project = tmp_path / "my-firmware-tests"
    project.mkdir()
    (project / "test_stack.py").write_text(USER_TESTS)
    junit = project / "report.xml"
    env = {**os.environ, "CI": "true", "PYTHONPATH": ""}
    proc = subprocess.run([user_python, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--junitxml={junit}",
                           "--netrepro-runs", str(project / "runs"), "test_stack.py"],
                          cwd=project, capture_output=True, text=True, timeout=600, env=env)
    out = proc.stdout + proc.stderr
    where = subprocess.run([user_python, "-c", "import harness; print(harness.__file__)"], capture_output=True,
                           text=True, check=True, cwd=project, env=env).stdout
    assert str(ROOT) not in where, f"the user's venv must use its own install, not the checkout: {where}"
    assert re.search(r"1 failed, 3 passed", out), out

    # both parametrised results are in the JUnit XML, as properties of their own test case
    cases = {case.get("name"): case for case in ET.parse(junit).getroot().iter("testcase")}
    for profile, window in (("mp-n6-before", "23360"), ("mp-n6-after", "46720")):
        case = cases[f"test_window_per_profile[{profile}]"]
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props[f"{profile}.device_window"] in (window, f"{window}.0")
        assert float(props[f"{profile}.throughput_mbps"]) > 1

    # the failing claim names its run folder, which is kept; passing tests' folders are removed
    assert "device advertised 23360" in out and "expected 46720" in out
    kept = re.findall(r"(\S+/runs/\S+-openmv-n6-mp-n6-before-\S+)", out.split("netrepro run folders kept")[-1])
    assert kept and (Path(kept[0]) / "capture.pcap").is_file() and (Path(kept[0]) / "console.log").is_file()
    assert len(list((project / "runs").iterdir())) == 1


def test_parallel_workers_never_share_a_namespace_socket_or_build(tmp_path):
    env = {**os.environ, "CI": "true"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2",
                           "tests/test_peer.py::test_the_peer_pings_the_board_and_learns_its_mac",
                           "tests/test_workloads.py::test_iperf_over_the_link",
                           "tests/test_workloads.py::test_discard_sends_exactly_the_bytes_asked"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert re.search(r"4 passed", proc.stdout), proc.stdout + proc.stderr
