"""Rootless, first class: the whole chain as an unprivileged user, with the figures the root tests pin.

Run as root (CI is), the module makes a system user `netrepro-ci` (once) and gives it what a new
user has after `git clone`: its own copy of this checkout (the working tree, as git lists it), a
HOME, TMPDIR and cache of its own and no sudo. As that user (setpriv) it runs `./tools/bootstrap`
(the .venv and the build in the user's space), `./netrepro run` and the pytest plugin in a project
of the user's: the peer lives in a user namespace, the link makes its tap there, and QEMU and the
link run without real-time priority. Run as any other user, every real test of the suite already
runs rootless, so this module is skipped.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from harness.cli.exit_codes import ExitCode
from harness.link.process import TUN_DEVICE
from harness.runs.disturbed import REPEAT_SUFFIX
from tests.conftest import copy_checkout, socket_dirs

pytestmark = pytest.mark.real

ROOT = Path(__file__).resolve().parent.parent
USER = "netrepro-ci"
RUN = ["run", "openmv-n6", "--lwip", "mp-n6-after", "--link", "wifi", "--workload", "sock-rx", "--seconds", "2"]
MSS, WINDOW = 1460, 46720  # what openmv-n6's mp-n6-after puts in its SYN and its largest ACK window, as root

# A test of the user's own project: the plugin comes from the user's .venv (the checkout's entry point).
USER_PROJECT_TEST = f'''
def test_receive_window(netrepro):
    result = netrepro.run("openmv-n6", "mp-n6-after", link="wifi", workload="sock-rx", seconds=2)
    capture = netrepro.capture(result)
    capture.expect_mss(device={MSS})
    capture.expect_largest_device_window({WINDOW})
'''

# The packages the user's .venv may share with this one (no network): not this checkout's own install.
NOT_SHARED = ("netrepro", "__editable__", "harness", "__pycache__")


class Unprivileged:
    """The user, its folder (home, tmp, checkout) and how to run a command as it."""

    def __init__(self, base: Path) -> None:
        entry = pwd.getpwnam(USER)
        self.uid, self.gid = entry.pw_uid, entry.pw_gid
        self.base = base
        self.home, self.tmp, self.checkout = base / "home", base / "tmp", base / "checkout"
        self.env = {"HOME": str(self.home), "TMPDIR": str(self.tmp), "USER": USER, "LOGNAME": USER,
                    "LANG": "C.UTF-8", "CI": "true", "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
                    **{k: v for k, v in os.environ.items() if k.startswith("PIP_")}}  # the machine's pip setup

    def run(self, argv: list[str], cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--",
                               *argv], cwd=cwd or self.checkout, env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)

    def socket_dirs(self) -> set[Path]:
        """The user's own /tmp/nr-* (others may run beside this test)."""
        mine = set()
        for path in socket_dirs():
            try:
                if path.lstat().st_uid == self.uid:
                    mine.add(path)
            except OSError:
                pass
        return mine

    def processes(self) -> list[str]:
        out = subprocess.run(["ps", "-u", str(self.uid), "-o", "pid=,args="], capture_output=True, text=True)
        return out.stdout.splitlines()


def _share_packages(user: Unprivileged) -> None:
    """The user's .venv, made as bootstrap makes it, sees this one's packages (no network), not its netrepro."""
    python = shutil.which("python3", path=user.env["PATH"])
    version = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                             text=True, check=True).stdout.strip()
    if version != str(tuple(sys.version_info[:2])):
        return  # another Python: bootstrap installs the packages itself
    deps = user.base / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        if not entry.name.startswith(NOT_SHARED):
            (deps / entry.name).symlink_to(entry)
    made = user.run(["python3", "-m", "venv", ".venv"])
    assert made.returncode == 0, made.stderr
    (site,) = (user.checkout / ".venv" / "lib").glob("python3*/site-packages")
    (site / "netrepro-deps.pth").write_text(f"{deps}\n")


@pytest.fixture(scope="module")
def user(tree):
    if os.geteuid() != 0:
        pytest.skip("already unprivileged: every real test of this suite runs rootless")
    for tool in ("setpriv", "useradd", "git"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} not found; install util-linux, passwd and git")
    # what ./test does first as root: packages, and the tun device opened to every user
    subprocess.run([ROOT / "tools" / "bootstrap", "--all"], check=True, env={**os.environ, "CI": "true"}, timeout=600)
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", USER], check=True)
    # not under pytest's own tmp folders (0700, root's); not /tmp/nr-* (the runs' socket folders)
    base = Path(tempfile.mkdtemp(prefix="netrepro-rootless-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        person = Unprivileged(base)
        for folder in (person.home, person.tmp, person.checkout):
            folder.mkdir()
        copy_checkout(person.checkout)
        # bootstrap's lwIP fetch (apt-get source, no root) needs the network: this session's tree stands in
        shutil.copytree(tree, person.home / ".cache" / "netrepro" / "lwip" / "lwip-2.1.3", symlinks=True)
        subprocess.run(["chown", "-R", f"{person.uid}:{person.gid}", str(base)], check=True)
        _share_packages(person)
        boot = person.run(["./tools/bootstrap"])
        assert boot.returncode == 0, f"bootstrap as {USER}: {boot.stderr}"
        assert (person.checkout / ".venv" / "bin" / "netrepro").is_file()
        yield person
        assert person.processes() == [] and person.socket_dirs() == set(), f"{USER} left something behind"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_run_as_an_unprivileged_user_gives_the_roots_figures(user, no_leftovers):
    runs = user.base / "runs"
    proc = user.run(["./netrepro", *RUN, "--out", str(runs)])
    assert proc.returncode == 0, proc.stderr
    # progress only: the missing real-time priority is no failure (the link notes it in link.log); a busy host
    # may make the run repeat at a slower D, which it says, and then the repeat's folder is the run that stands
    said = [line for line in proc.stderr.splitlines() if not line.startswith("[")]
    assert [line for line in said if "; repeating at D" not in line] == []

    *repeated, run_dir = sorted(runs.iterdir())
    assert all(run_dir.name == d.name + REPEAT_SUFFIX * (len(repeated) - k) for k, d in enumerate(repeated)), repeated
    assert run_dir.stat().st_uid == user.uid and (run_dir / "capture.pcap").stat().st_uid == user.uid
    result = json.loads((run_dir / "result.json").read_text())
    analysis, counters = result["analysis"], result["link_counters"]
    assert result["status"] == "passed" and result["time"]["realtime_priority"] is False
    assert analysis["device_mss"] == MSS and analysis["syn_window"]["device"] == WINDOW
    assert analysis["device_window"]["max"] == WINDOW
    # the peer's minimum RTO in the board's time, set in the user namespace's netns without privilege
    timers, dilation = result["peer_timers"], result["time"]["dilation"]
    assert timers["dilation"] == dilation and timers["rto_min"]["scaled"] is (dilation != 1.0), timers
    assert timers["rto_min"]["board_ms"] == 200 and "tcp_rto_min_us" in timers["rto_min"]["how"], timers
    print(f"as {USER}: {result['throughput_mbps']} Mbit/s, MSS {analysis['device_mss']}, largest window "
          f"{analysis['device_window']['max']}, board {result['bytes']} B, capture {analysis['payload_bytes']} B, "
          f"frames {analysis['frames']}")
    # byte counts agree: the board's count, the capture's payload, what the peer sent, what the link moved
    assert 0 < result["bytes"] <= analysis["payload_bytes"]
    peer = json.loads((run_dir / "peer-sock-rx.json").read_text())
    assert peer["bytes"] >= analysis["payload_bytes"]
    assert counters["to_device"]["frames_out"] + counters["to_peer"]["frames_out"] == analysis["frames"]
    for way in ("to_device", "to_peer"):
        c = counters[way]
        assert c["frames_in"] == c["frames_out"] + sum(c["dropped"].values()) + c["in_flight"]
    # nothing left: processes (no_leftovers, and none of the user's at all), namespaces with them, sockets
    assert user.processes() == [] and user.socket_dirs() == set()


def test_the_pytest_plugin_in_a_users_project(user, no_leftovers):
    project = user.home / "my-firmware-tests"
    project.mkdir()
    (project / "test_window.py").write_text(USER_PROJECT_TEST)
    shutil.chown(project, user.uid, user.gid)
    shutil.chown(project / "test_window.py", user.uid, user.gid)
    python = user.checkout / ".venv" / "bin" / "python"
    proc = user.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_window.py"], cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
    assert user.processes() == [] and user.socket_dirs() == set()


def test_a_closed_tun_device_is_one_line_naming_the_sudo_command(user, no_leftovers):
    """Where /dev/net/tun is 0600 (no udev), the user's run stops at once and says the one root step."""
    mode = stat.S_IMODE(os.stat(TUN_DEVICE).st_mode)
    try:
        os.chmod(TUN_DEVICE, 0o600)
        proc = user.run(["./netrepro", *RUN, "--out", str(user.base / "closed"), "--quiet"])
    finally:
        os.chmod(TUN_DEVICE, mode)
    assert proc.returncode == ExitCode.COULD_NOT
    (line,) = proc.stderr.splitlines()
    assert line.startswith("netrepro: error: /dev/net/tun is not usable without root here (mode 0600")
    assert line.endswith("run once: sudo chmod 0666 /dev/net/tun")
    assert user.processes() == [] and user.socket_dirs() == set()
