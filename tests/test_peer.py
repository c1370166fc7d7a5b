"""The board on the network: the Linux peer reaches it through the link, and nothing is left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.core.errors import NetreproError
from harness.core.process import stop
from harness.link import LinkSpec, read_pcap
from harness.rig.build import FirmwareConfig, build_firmware
from harness.rig.engine import QemuEngine
from harness.rig.monitor import COMMAND_TIMEOUT_S
from harness.rig.profile import resolve_profile
from harness.rig.session import Session
from tests.conftest import children_named, interrupt_run, leftover_processes, socket_dirs

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def firmware(n6, tree):
    return build_firmware(FirmwareConfig(n6, resolve_profile(n6, "mp-n6-before"), tree))


def test_the_peer_pings_the_board_and_learns_its_mac(n6, firmware, tmp_path, no_leftovers):
    with Session(n6, firmware, tmp_path, LinkSpec()) as rig:
        assert [rig.ping() for _ in range(5)] == [True] * 5
        neigh = rig.namespace.run(["ip", "neigh", "show", rig.addresses.device]).stdout
        assert n6.nic.mac in neigh.lower()
        stats = rig.console.stats()
        assert stats["icmp.recv"] >= 5 and stats["etharp.recv"] >= 1
    frames = read_pcap(tmp_path / "capture.pcap")
    ethertypes = [frame[12:14] for _, frame in frames]
    assert b"\x08\x06" in ethertypes                        # ARP
    icmp = [f for _, f in frames if f[12:14] == b"\x08\x00" and f[23] == 1]
    assert sum(1 for f in icmp if f[34] == 8) >= 5 and sum(1 for f in icmp if f[34] == 0) >= 5
    assert rig.link_counters is not None
    assert rig.link_counters.total_frames_out == len(frames)


# a datagram to the board's discard port every millisecond, from the peer
_SENDER = ("import socket, sys, time\n"
           "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
           "while True:\n"
           "    s.sendto(bytes(18), (sys.argv[1], 9))\n"
           "    time.sleep(0.001)\n")


@pytest.mark.parametrize("platform", ["ethernut2", "openmv-n6"])
def test_frames_the_peer_sends_while_the_run_ends_are_not_counted_as_dropped(netrepro, platform, no_leftovers):
    """A peer still sending when the run ends (an ARP probe, a retransmitted FIN): the link stops before
    the board, so nothing reaches a board that is gone and the counters show no drop the run did not have
    (an Ethernut discard run once counted one unreachable ARP probe this way)."""
    with netrepro.board(platform, link="ethernet") as rig:
        assert rig.ping()
        sender = rig.namespace.popen([sys.executable, "-c", _SENDER, rig.addresses.device],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(0.5)
            assert sender.poll() is None
        except BaseException:
            stop(sender, grace_s=1.0)
            raise
    stop(sender, grace_s=1.0)
    counters = rig.link_counters
    assert counters is not None and counters.to_device.frames_out > 100, counters
    assert counters.to_device.dropped_total == 0, counters.to_device.dropped


def test_a_failure_inside_a_run_tears_everything_down(n6, firmware, tmp_path):
    before = leftover_processes()
    with pytest.raises(NetreproError, match="did not print"), Session(n6, firmware, tmp_path, LinkSpec()) as rig:
        rig.console.expect("this never appears", timeout=0.5)
    assert leftover_processes() - before == set()
    assert socket_dirs(os.getpid()) == set()
    assert (tmp_path / "console.log").read_text().count("netrepro firmware") == 1


def test_a_qemu_that_no_longer_answers_its_monitor_is_still_stopped(n6, firmware, tmp_path):
    """A QEMU whose monitor never answers (here stopped by SIGSTOP; seen with a faulted guest spinning
    with its interrupts off on a loaded host) is killed after its grace, not waited on forever."""
    before = leftover_processes()
    with Session(n6, firmware, tmp_path, LinkSpec()) as rig:
        qemu = rig.engine.pid
        os.kill(qemu, signal.SIGSTOP)
        began = time.monotonic()
    assert time.monotonic() - began < COMMAND_TIMEOUT_S + 10
    assert not Path(f"/proc/{qemu}").exists()
    assert leftover_processes() - before == set()
    assert socket_dirs(os.getpid()) == set()


def test_a_qemu_that_never_greets_on_its_monitor_is_a_one_line_error_within_its_timeout(n6, tmp_path):
    """QEMU opens its monitor socket and greets from its main loop; a main loop that never gets the CPU (seen: two
    busy guests at SCHED_FIFO holding both cores) must not hold the run forever. A socket that accepts and never
    greets stands in for it."""
    import socket

    import pexpect

    for listening, message in ((True, r"^QEMU did not answer on its monitor socket within 2 s"),
                               (False, r"^QEMU's monitor socket did not take a connection within 2 s: .*refused")):
        engine = QemuEngine(n6, tmp_path / "firmware.elf", tmp_path, tmp_path)
        engine.monitor_path.unlink(missing_ok=True)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(engine.monitor_path))
        if listening:  # else: the socket's file is there before QEMU listens on it (a loaded host): tried again
            server.listen(1)
        engine.child = pexpect.spawn("sleep", ["30"])
        began = time.monotonic()
        try:
            with pytest.raises(NetreproError, match=message):
                engine._connect_monitor(2.0)
        finally:
            engine.child.terminate(force=True)
            server.close()
        assert time.monotonic() - began < 5


@pytest.mark.parametrize("to_group", [False, True], ids=["signal-to-netrepro", "ctrl-c-to-terminal-group"])
def test_ctrl_c_during_a_run_stops_everything_and_keeps_the_folder(tmp_path, to_group):
    before = leftover_processes()
    stopped = interrupt_run(["run", "openmv-n6", "--workload", "rx", "--seconds", "60", "--out", str(tmp_path)],
                            "running rx", settle_s=2, to_group=to_group)
    assert stopped.code == 130, stopped
    assert leftover_processes() - before == set()
    assert socket_dirs(stopped.pid) == set()
    (run_dir,) = list(Path(tmp_path).iterdir())
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "interrupted"
    assert (run_dir / "console.log").stat().st_size > 0 and (run_dir / "capture.pcap").stat().st_size > 24


def test_a_child_started_where_sigint_is_blocked_still_hears_it():
    """A Ray worker's thread blocks SIGINT, and the block is inherited across exec: iperf then never heard
    the board's clock end its run. Every child netrepro starts gets its signals back."""
    import signal
    import time

    from harness.core.process import spawn, stop

    # here, not in a thread of its own: the child dies with the thread that started it (PR_SET_PDEATHSIG)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        child = spawn(["sleep", "60"])  # not Python: an interpreter unblocks its signals itself
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    try:
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        child.wait(timeout=10)
        assert child.returncode == -signal.SIGINT
    finally:
        stop(child, grace_s=1.0)


def test_a_namespace_that_fails_while_starting_leaves_no_holder(tmp_path, monkeypatch):
    """The caller of a start that raises has nothing to stop: the namespace stops its own holder, which
    would otherwise outlive the run as a zombie where the machine's init does not reap orphans."""
    from harness.rig.peer import Namespace

    def refuse(self, argv, timeout=10.0, check=True):
        raise NetreproError("'ip link set lo up' failed in the namespace: refused here", "see the run folder")

    monkeypatch.setattr(Namespace, "run", refuse)
    namespace = Namespace(tmp_path)
    before = children_named("sleep")
    with pytest.raises(NetreproError, match="refused here"):
        namespace.start()
    assert namespace.holder is None and children_named("sleep") - before == set()


def test_a_namespace_is_entered_only_once_its_holder_runs(tmp_path):
    """unshare writes a user namespace's uid map after making it: `ip` run in it before then is unmapped and
    gets EPERM. start() returns only once the holder is `sleep` in its own network namespace."""
    from harness.rig.peer import Namespace

    for _ in range(20):
        with Namespace(tmp_path) as namespace:
            holder = namespace.holder.pid
            assert Path(f"/proc/{holder}/comm").read_text().strip() == "sleep"
            assert os.readlink(f"/proc/{holder}/ns/net") != os.readlink("/proc/self/ns/net")
            assert namespace.run(["ip", "-o", "link", "show", "lo"]).stdout.count("UP") >= 1


def test_the_peers_programs_run_at_a_raised_priority_where_permitted(tmp_path):
    """The peer stands for a PC with its own CPU; here it shares two cores with the boards' emulators (nice -10)
    and links (real-time), and at normal priority its sender starved in wall time where a PC's would not."""
    from harness.rig.peer import Namespace

    ours = os.getpriority(os.PRIO_PROCESS, 0)
    with Namespace(tmp_path) as namespace:
        raised = namespace.popen(["sleep", "30"], stdin=subprocess.DEVNULL)
        plain = namespace.popen(["sleep", "30"], stdin=subprocess.DEVNULL, priority="normal")  # a caller's choice
        try:
            permitted = os.geteuid() == 0
            assert os.getpriority(os.PRIO_PROCESS, raised.pid) == (max(-20, ours - 10) if permitted else ours)
            assert os.getpriority(os.PRIO_PROCESS, plain.pid) == ours
        finally:
            stop(raised)
            stop(plain)
