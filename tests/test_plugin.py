"""The pytest plugin as a user's project meets it: a plain install with the `pytest` extra, the README's
example as its test file in a folder outside the repo, a failing test's kept run folder."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import PACKAGE_SOURCES, copy_checkout
from readme_examples import README, readme_examples

from harness.pytest_plugin import RUN_FOLDERS_KEPT
from harness.runs.disturbed import REPEAT_SUFFIX

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parent.parent

# A test of the user's own that fails: its run folder is kept and named once.
FAILING_CLAIM = '''
def test_a_claim_that_fails_keeps_its_run(netrepro):
    result = netrepro.run("openmv-n6", "mp-n6-before", workload="rx", seconds=1, rtt="2ms", rate="50mbit")
    netrepro.capture(result).expect_largest_device_window(46720)
'''

# What the user's virtualenv may see of this checkout's: its dependencies, but neither pytest
# (the `pytest` extra must bring it) nor the checkout's own editable install.
NOT_SHARED = re.compile(r"^(_?pytest|py\.py|pluggy|iniconfig|xdist|sybil|ruff|netrepro|__editable__|harness)",
                        re.I)


@pytest.fixture(scope="module")
def user_python(tmp_path_factory) -> Path:
    """A fresh virtualenv with `pip install "NETREPRO[pytest]"` (not editable), as the README says, NETREPRO a copy of
    the checkout's package."""
    venv = tmp_path_factory.mktemp("user-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # The dependencies come from this checkout's environment instead of the network; pytest does not.
    deps = tmp_path_factory.mktemp("user-deps")
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        if not NOT_SHARED.match(entry.name):
            (deps / entry.name).symlink_to(entry)
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "netrepro-deps.pth").write_text(f"{deps}\n")
    assert subprocess.run([python, "-c", "import pytest"], capture_output=True).returncode != 0, \
        "pytest must not be there before the install"
    source = tmp_path_factory.mktemp("netrepro-source")  # a copy: pip builds in the folder it installs from
    copy_checkout(source, *PACKAGE_SOURCES)
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{source}[pytest]"],
                   check=True, timeout=600, capture_output=True)
    return python


def _run_pytest(python: Path, project: Path, *args: str) -> str:
    env = {**os.environ, "CI": "true", "PYTHONPATH": ""}
    env = {k: v for k, v in env.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([python, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args], cwd=project,
                          capture_output=True, text=True, timeout=600, env=env)
    return proc.stdout + proc.stderr


def test_the_readmes_pytest_example_passes_after_a_plain_install(user_python, tmp_path):
    # the extra brought pytest into the user's own environment
    where = subprocess.run([user_python, "-c", "import harness, pytest; print(harness.__file__, pytest.__file__)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path,
                           env={**os.environ, "PYTHONPATH": ""}).stdout.split()
    user_site = str(user_python.parent.parent)
    assert all(w.startswith(user_site) for w in where), f"harness and pytest must be the user venv's own: {where}"

    # the README's block, taken from README.md by the doc tests' own parser, as its test file
    (example,) = [e for e in readme_examples() if e.parsed.kind == "pytest"]
    text = README.read_text()
    assert f"```python\n{example.parsed.source}```" in text, "the block run must be the README's, verbatim"
    junit = tmp_path / "report.xml"
    example.namespace.update(python=user_python, project=tmp_path / "my-firmware-tests",
                             pytest_args=[f"--junitxml={junit}"])
    example.evaluate()
    project, proc = example.namespace["pytest_run"]
    assert str(ROOT) not in str(project) and re.search(r"\b3 passed\b", proc.stdout), proc.stdout

    # both parametrised results are in the JUnit XML, as properties of their own test case
    cases = {case.get("name"): case for case in ET.parse(junit).getroot().iter("testcase")}
    for profile, window in (("mp-n6-before", 23360), ("mp-n6-after", 46720)):
        props = {p.get("name"): p.get("value") for p in cases[f"test_receive_window[{profile}]"].iter("property")}
        assert float(props[f"{profile}.device_window_max"]) == window, props
        assert float(props[f"{profile}.device_mss"]) == 1460 and float(props[f"{profile}.throughput_mbps"]) > 1
        assert Path(props[f"{profile}.run_dir"]).parent == project / "runs", props  # where its run went
    # passing tests leave no run folder behind
    assert not any((project / "runs").iterdir())


def test_a_failing_claim_keeps_its_run_folder_and_names_it_once(user_python, tmp_path):
    project = tmp_path / "my-firmware-tests"
    project.mkdir()
    (project / "test_claim.py").write_text(FAILING_CLAIM)
    out = _run_pytest(user_python, project, "--netrepro-runs", str(project / "runs"), "test_claim.py")
    assert re.search(r"\b1 failed\b", out), out
    assert "largest window the device advertised was 23360" in out and "expected 46720" in out, out
    # the run, and its repeats at a slower D if the host disturbed it (harness.runs.disturbed): all kept, each named
    # once (a repeat's folder is its run's name and a suffix, so the run's path is also in each repeat's)
    folders = sorted(str(f) for f in (project / "runs").iterdir())
    assert all(f.startswith(folders[0] + REPEAT_SUFFIX) for f in folders[1:]), folders
    for kept in folders:
        assert (Path(kept) / "capture.pcap").is_file() and (Path(kept) / "console.log").is_file()
        named = sum(f.startswith(kept) for f in folders)
        assert out.count(kept) == named, f"the kept run folder must be named once:\n{out}"
    assert out.count(RUN_FOLDERS_KEPT) == 1, out


def test_parallel_workers_never_share_a_namespace_socket_or_build(tmp_path):
    # not this session's own options (PYTEST_ADDOPTS): its --basetemp would be the inner run's, and emptied by it
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}, "CI": "true"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2",
                           "tests/test_peer.py::test_the_peer_pings_the_board_and_learns_its_mac",
                           "tests/test_workloads.py::test_iperf_over_the_link",
                           "tests/test_workloads.py::test_discard_sends_exactly_the_bytes_asked"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert re.search(r"4 passed", proc.stdout), proc.stdout + proc.stderr
