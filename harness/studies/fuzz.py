"""`netrepro fuzz` and `netrepro replay`: malformed frames at a booted board through its real NIC, liveness
probes between batches, and a minimised, replayable reproducer for what it finds.

A fuzz run boots the board (one Session: namespace, link, board), starts the peer-side injector
(harness.rig.inject) in the namespace, reads the leak check's baseline, then repeats until the frame or time
budget is spent: open a fresh connection to the board's echo service (the target of the established-connection
frames), send a batch of frames (harness.studies.fuzz_frames), probe. The probe is the board's console, a ping
and a round trip through the echo service; it is retried before the board is called hung. A finding is:

fault  the board printed its FAULT line (the fault handler; an lwIP assertion, compiled into every build)
       or its emulator exited
hang   the console, ping or the echo service did not answer within the probe timeout, three times
leak   after the last batch, the board did not get back what the frames took (harness.rig.leaks)

A fuzz stops at its first finding; with keep_going (`--keep-going`) it boots a fresh board and goes on with
the same seeded stream of frames until the budget is spent, counting a finding it has already made (the same
kind, and for a CPU fault the same exception, fault status and program counter) in that finding's `seen`
instead of keeping it again, so one early defect does not end the search.

For a fault or a hang the batch since the last good probe is kept as crash.pcap (with crash.json: the
finding, the build, and the connection its frames aimed at), then minimised by delta debugging: each trial
boots a fresh board, replays a subset and probes; crash-min.pcap is the smallest subset that still
reproduces. `replay` does one such trial: the connection's sequence numbers and port in the frames are moved
onto the connection it opens (incrementally, so a checksum that was wrong stays exactly as wrong).
"""

from __future__ import annotations

import contextlib
import json
import select
import struct
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.core.errors import NetreproError
from harness.core.process import stop
from harness.core.progress import Progress
from harness.link import LinkSpec, read_pcap
from harness.link.capture import write_pcap
from harness.rig.build import Firmware
from harness.rig.devicetime import DeviceTime
from harness.rig.leaks import LeakCheck
from harness.rig.peer import TAP_NAME
from harness.rig.platform import PROJECT_ROOT, Platform
from harness.rig.session import Session
from harness.studies.fuzz_frames import (
    Connection,
    Frame,
    FrameSource,
    History,
    Target,
    drop_families,
    paced,
    readdress,
)
from harness.studies.minimise import ddmin

ECHO_PORT = 7        # the board's echo service (firmware/apps/echo.c): listening from boot
PROBE_TRIES = 3      # a probe that fails this many times in a row is a hang
# lwIP frees an incomplete IP datagram's fragments IP_REASS_MAXAGE ticks of its 1 s reassembly timer after the
# first came (2.1.3's default 15); the leak check waits that long (board time) before it calls them a leak.
_REASS_MAXAGE = 15
_REASS_TICK_S = 1.0
_RECOVERY_SLACK_S = 5.0  # board seconds past reassembly's timeout a hung board has to answer again
_INJECT_START_S = 10.0


@dataclass(frozen=True)
class Outcome:
    """What a liveness probe found: alive, or a finding's kind and what showed it."""

    kind: str = ""   # "" (alive), "fault" or "hang"
    detail: str = ""

    @property
    def alive(self) -> bool:
        return not self.kind


@dataclass
class Finding:
    kind: str                    # fault, hang or leak
    detail: str
    frames: int                  # frames in the reproducer as kept
    kept_since: str = "probe"    # what they are: "probe", the batch since the last good probe; "reassembly",
                                 # every batch sent within IP reassembly's timeout (the batch alone did not do it)
    reproducer: str = ""         # crash.pcap
    minimised: str = ""          # crash-min.pcap
    minimised_frames: int | None = None
    trials: int = 0              # delta-debugging trials run
    minimise_complete: bool = False
    reproduced: bool | None = None  # whether the kept frames did it again on a fresh board
    frames_what: list[str] = field(default_factory=list)  # what is wrong in each minimised frame
    at_frame: int = 0            # frames sent in the whole fuzz when it was first found
    seen: int = 1                # times it happened (a fresh board each, with keep_going)
    folder: str = ""             # where its reproducer and minimising trials are kept
    held: str = ""               # a hang: what the board held above its baseline when it stopped answering
    answered_again_after_s: float | None = None  # a hang: board seconds until it answered a ping again (None: not
                                                 # within IP reassembly's timeout; it stays hung)


@dataclass
class FuzzResult:
    platform: str
    profile: str
    seed: int
    run_dir: str
    frames_sent: int = 0
    batches: int = 0
    probes: int = 0
    probes_answered: int = 0
    seconds: float = 0.0         # the whole run: boot, fuzzing, leak check, minimising
    fuzz_seconds: float = 0.0    # sending frames and probing only
    frames_per_s: float = 0.0    # frames sent per second of fuzz_seconds
    families: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    leaks: str = ""
    options: dict[str, int] = field(default_factory=dict)  # the board's effective lwIP options
    boots: int = 0               # boards booted for fuzzing (more than one only with keep_going)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def save(self) -> None:
        (Path(self.run_dir) / "fuzz.json").write_text(json.dumps(self.as_dict(), indent=2) + "\n")


@dataclass(frozen=True)
class FuzzPlan:
    platform: Platform
    firmware: Firmware
    seed: int = 0
    frames: int | None = 1000       # stop after this many frames (None: only the time budget)
    minutes: float | None = None    # stop after this many wall minutes
    batch: int = 25                 # frames between two probes
    probe_timeout: float = 2.0      # wall seconds for each probe's answer
    max_trials: int = 40            # delta-debugging trials at most
    keep_going: bool = False        # after a finding, boot a fresh board and spend the rest of the budget
    boot_timeout: float = 60.0
    time: DeviceTime = field(default_factory=lambda: DeviceTime("host"))

    def session(self, run_dir: Path, progress: Progress | None = None) -> Session:
        return Session(self.platform, self.firmware, run_dir, LinkSpec.from_preset({}), progress=progress,
                       boot_timeout=self.boot_timeout, time=self.time)


class Injector:
    """The host's end of harness.rig.inject: one command a line, one JSON answer a line, each with a timeout."""

    def __init__(self, rig: Session) -> None:
        assert rig.namespace is not None
        self.board_ip = rig.addresses.device
        self.proc = rig.namespace.popen(
            [_python(), "-m", "harness.rig.inject", TAP_NAME, self.board_ip, str(ECHO_PORT)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=str(PROJECT_ROOT))
        self._answer(_INJECT_START_S, "start")

    def ask(self, command: str, timeout: float) -> dict[str, Any]:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise NetreproError("the fuzzer's injector in the namespace stopped", self._stderr()) from None
        return self._answer(timeout, command.split(" ", 1)[0])

    def _answer(self, timeout: float, what: str) -> dict[str, Any]:
        assert self.proc.stdout is not None
        if not select.select([self.proc.stdout], [], [], timeout)[0]:
            raise NetreproError(f"the fuzzer's injector did not answer '{what}' within {timeout:g} s", self._stderr())
        line = self.proc.stdout.readline()
        if not line:
            raise NetreproError("the fuzzer's injector in the namespace stopped", self._stderr())
        answer = json.loads(line)
        if "error" in answer and what in ("send", "start"):
            raise NetreproError(f"the fuzzer's injector could not {what}: {answer['error']}", self._stderr())
        return answer

    def _stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return "see the run folder"
        return (self.proc.stderr.read().strip().splitlines() or ["see the run folder"])[-1]

    def send(self, frames: list[bytes]) -> None:
        for start in range(0, len(frames), 16):  # keep a line well under the pipe's buffer
            self.ask("send " + ",".join(f.hex() for f in frames[start:start + 16]), 10.0)

    def target(self, rig: Session, timeout: float) -> Target:
        hello = self.ask(f"hello {timeout}", timeout + 5)
        if not hello.get("board_mac"):
            raise NetreproError("the board did not answer the fuzzer's first ping (no ARP entry for it)",
                                f"see the console log in {rig.run_dir}")
        return Target(hello["peer_mac"], hello["board_mac"], rig.addresses.peer, rig.addresses.device,
                      ECHO_PORT, None)

    def open(self, timeout: float) -> Connection | None:
        answer = self.ask(f"open {timeout}", timeout + 5)
        if not answer.get("ok"):
            return None
        return Connection(answer["sport"], answer["peer_next"], answer["board_next"])

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(NetreproError):
                self.ask("quit", 1.0)
        stop(self.proc, grace_s=1.0)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


def probe(rig: Session, injector: Injector, timeout: float) -> Outcome:
    """Console, ping, echo; retried PROBE_TRIES times before a board that does not answer is called hung."""
    assert rig.console is not None
    failed = ""
    for _ in range(PROBE_TRIES):
        try:
            rig.console.command("uptime", timeout=timeout)
        except NetreproError as exc:
            if "fault" in exc.problem or "exited" in exc.problem:
                return Outcome("fault", exc.problem)
            failed = f"the console: {exc.problem}"
            continue
        ping = injector.ask(f"ping {timeout}", timeout + 5)
        echo = injector.ask(f"echo {timeout}", timeout + 5) if ping.get("ok") else {}
        if ping.get("ok") and echo.get("ok"):
            return Outcome()
        failed = ("no answer to a ping" if not ping.get("ok")
                  else f"the echo service: {echo.get('error') or 'no answer'}")
    return Outcome("hang", f"no liveness within {timeout:g} s, {PROBE_TRIES} times: {failed}")


def fuzz(plan: FuzzPlan, run_dir: Path, progress: Progress | None = None) -> FuzzResult:
    """Fuzz the board until the budget is spent or something is found (with keep_going: on a fresh board each
    time, until the budget is spent); then minimise each distinct finding."""
    progress = progress or Progress(quiet=True)
    result = FuzzResult(plan.platform.name, plan.firmware.profile.name, plan.seed, str(run_dir))
    stream = Stream(FrameSource(plan.seed), time.monotonic())
    kept: list[tuple[Finding, Kept]] = []
    try:
        while True:
            found = fuzz_one_board(plan, _boot_dir(run_dir, result.boots), stream, result, progress)
            result.boots += 1
            if found is None:
                break
            finding, batch = found
            same = next((f for f, _ in kept if signature(f) == signature(finding)), None)
            if same is not None:
                same.seen += 1
            else:
                finding.folder = str(run_dir if not kept else run_dir / f"finding-{len(kept) + 1}")
                result.findings.append(finding)
                kept.append((finding, batch))
            if not plan.keep_going or _spent(plan, result.frames_sent, stream.began):
                break
            progress.step(f"going on with a fresh board ({result.frames_sent} frames sent)")
    finally:
        result.seconds = round(time.monotonic() - stream.began, 2)
        result.families = dict(sorted(stream.families.items()))
        result.save()
    for finding, batch in kept:
        folder = Path(finding.folder)
        folder.mkdir(parents=True, exist_ok=True)
        keep_and_minimise(plan, finding, batch, folder, progress)
        result.save()
    return result


# What names a fault's kind and place in the board's FAULT line (Cortex-M: exception, fault status, pc; x86:
# vector, error code, eip); the other registers hold whatever the faulting code was working on.
_FAULT_WHERE = ("exc", "CFSR", "HFSR", "pc", "vector", "error", "eip")


def signature(finding: Finding) -> str:
    """What makes two findings the same one: the kind, and for a CPU fault where and why it faulted (an lwIP
    assertion's message and line, or a hang's, stand whole)."""
    if "FAULT" not in finding.detail or "=" not in finding.detail:
        return f"{finding.kind}: {finding.detail}"
    head, _, fields = finding.detail.partition("FAULT")
    where = [part for part in fields.split() if part.split("=", 1)[0] in _FAULT_WHERE or "=" not in part]
    return f"{finding.kind}: {head}FAULT {' '.join(where)}"


def _boot_dir(run_dir: Path, boot: int) -> Path:
    """The first board's folder is the run's; a fresh board after a finding gets boots/NN inside it."""
    if boot == 0:
        return run_dir
    folder = run_dir / "boots" / f"{boot:02d}"
    folder.mkdir(parents=True)
    return folder


@dataclass
class Stream:
    """The seeded frames of one fuzz, continued across the boards it boots, and when it began."""

    source: FrameSource
    began: float
    families: Counter[str] = field(default_factory=Counter)


def fuzz_one_board(plan: FuzzPlan, run_dir: Path, stream: Stream, result: FuzzResult,
                   progress: Progress) -> tuple[Finding, Kept] | None:
    """Boot a board and fuzz it: a finding and its batch, or None when the budget was spent (then the leak
    check has run on this board)."""
    with plan.session(run_dir, progress) as rig:
        injector = Injector(rig)
        try:
            target = injector.target(rig, plan.probe_timeout)
            assert rig.console is not None
            result.options = rig.console.opts()
            leak_check = LeakCheck.start(rig.console, rig.time.wall_s)
            if not result.boots:
                progress.step(f"fuzzing with seed {plan.seed}: {_budget(plan)}, a probe every {plan.batch} frames")
            found = fuzz_batches(plan, rig, injector, target, stream, result, progress)
            if found is not None and found[0].kind == "hang":
                diagnose_hang(found[0], rig, leak_check, _reassembly_s(result.options), progress)
            if found is None:
                injector.ask("close", plan.probe_timeout)
                progress.step(f"leak check: waiting up to {_reassembly_s(result.options):g} s of the board's "
                              "time for what it frees by itself (IP reassembly's timeout)")
                report = leak_check.finish(settle_board_s=_reassembly_s(result.options))
                result.leaks = report.summary()
                if report.leaks:
                    result.findings.append(Finding("leak", report.short(), result.frames_sent,
                                                   reproducer=str(run_dir / "capture.pcap"),
                                                   at_frame=result.frames_sent, folder=str(run_dir)))
            return found
        finally:
            injector.close()


def diagnose_hang(finding: Finding, rig: Session, leak_check: LeakCheck, reassembly_s: float,
                  progress: Progress) -> None:
    """What the board held when it stopped answering, and whether it answers again once the longest that lwIP
    keeps unfinished input by itself (IP reassembly's timeout) has run: a hang that ends by itself is an outage."""
    with contextlib.suppress(NetreproError):
        finding.held = leak_check.above_baseline()
    finding.answered_again_after_s = rig.answer_s(reassembly_s + _RECOVERY_SLACK_S)
    again = ("not again" if finding.answered_again_after_s is None
             else f"again after {finding.answered_again_after_s:g} s of its time")
    progress.step(f"the hung board held {finding.held or 'an unknown amount (no console)'} above its baseline; "
                  f"it answered {again}")


@dataclass(frozen=True)
class Kept:
    """The frames since the last good probe and the connection they aimed at; and the frames of the batches
    before it that the board may still hold state of (sent within IP reassembly's timeout)."""

    frames: list[Frame]
    connection: Connection | None
    earlier: list[Frame] = field(default_factory=list)
    board_mac: str = ""   # where the frames were sent (a replay on another board's NIC moves them to its MAC)


def fuzz_batches(plan: FuzzPlan, rig: Session, injector: Injector, target: Target, stream: Stream,
                 result: FuzzResult, progress: Progress) -> tuple[Finding, Kept] | None:
    """Batches of frames, each on a freshly opened connection and followed by a probe, until the budget is
    spent (None) or a probe finds something (the finding and its batch); the counts go into result as they
    happen."""
    began = time.monotonic()
    history = History(rig.time.wall_s(_reassembly_s(result.options)), rig.time.dilation)
    try:
        while not _spent(plan, result.frames_sent, stream.began):
            connection = injector.open(plan.probe_timeout)
            aim = replace(target, connection=connection)
            batch = [stream.source.next(aim) for _ in range(_batch_size(plan, result.frames_sent))]
            history.add(time.monotonic(), batch)
            injector.send([f.data for f in batch])
            result.frames_sent += len(batch)
            result.batches += 1
            stream.families.update(f.family for f in batch)
            outcome = probe(rig, injector, plan.probe_timeout)
            result.probes += 1
            if not outcome.alive:
                progress.step(f"{outcome.kind} after {result.frames_sent} frames: {outcome.detail}")
                return (Finding(outcome.kind, outcome.detail, len(batch), at_frame=result.frames_sent),
                        Kept(history.last(), connection, history.before_last(), target.board_mac))
            result.probes_answered += 1
        return None
    finally:
        result.fuzz_seconds = round(result.fuzz_seconds + time.monotonic() - began, 2)
        result.frames_per_s = round(result.frames_sent / result.fuzz_seconds, 1) if result.fuzz_seconds else 0.0


def keep_and_minimise(plan: FuzzPlan, finding: Finding, kept: Kept, run_dir: Path, progress: Progress) -> None:
    """crash.pcap (+ .json), whether it reproduces on a fresh board, and crash-min.pcap by delta debugging.

    The frames since the last good probe are tried first; when they do not do it again, the frames of the
    batches sent within IP reassembly's timeout before them are added (state that built up over batches)."""
    frames, connection = kept.frames, kept.connection
    finding.reproducer = str(save_reproducer(run_dir / "crash.pcap", frames, connection, finding, plan,
                                                 kept.board_mac))
    trial_root = run_dir / "trials"

    def reproduces(subset: list[Frame]) -> bool:
        trial_dir = trial_root / f"{len(list(trial_root.glob('*'))) if trial_root.exists() else 0:03d}"
        trial_dir.mkdir(parents=True)
        return replay_frames(plan, [f.data for f in subset], connection, trial_dir, board_mac=kept.board_mac,
                             times=[f.at for f in subset]).kind == finding.kind

    progress.step(f"replaying the {len(frames)} frames since the last good probe on a fresh board")
    finding.reproduced = reproduces(frames)
    finding.trials = 1
    if not finding.reproduced and kept.earlier:
        frames = kept.earlier + frames
        progress.step(f"not again: replaying the {len(frames)} frames sent within IP reassembly's timeout")
        finding.reproduced = reproduces(frames)
        finding.trials += 1
        finding.frames, finding.kept_since = len(frames), "reassembly"
        finding.reproducer = str(save_reproducer(run_dir / "crash.pcap", frames, connection, finding, plan,
                                                 kept.board_mac))
    if not finding.reproduced:
        progress.warn("the kept frames did not do it again on a fresh board: nothing to minimise")
        return
    tried = 0
    if len(frames) > plan.batch:
        progress.step(f"dropping whole families of frames the finding does not need ({len(frames)} frames)")
        frames, tried = drop_families(frames, reproduces, plan.max_trials)
    progress.step(f"minimising {len(frames)} frames by delta debugging (at most {plan.max_trials - tried} "
                  "trials, a fresh board each)")
    smallest = ddmin(frames, reproduces, max_trials=plan.max_trials - tried)
    finding.trials += tried + smallest.trials
    finding.minimise_complete = smallest.complete
    finding.minimised_frames = len(smallest.items)
    finding.frames_what = [f"{f.family}: {f.what}" for f in smallest.items]
    finding.minimised = str(save_reproducer(run_dir / "crash-min.pcap", smallest.items, connection, finding, plan,
                                            kept.board_mac))


def save_reproducer(path: Path, frames: list[Frame], connection: Connection | None, finding: Finding,
                    plan: FuzzPlan, board_mac: str = "") -> Path:
    """The frames as a pcap, and beside it (same name, .json) what replay needs to aim them again."""
    start = frames[0].at if frames else 0.0
    write_pcap(path, [f.data for f in frames], times=[f.at - start for f in frames])
    profile = plan.firmware.profile
    path.with_suffix(".json").write_text(json.dumps({
        "finding": {"kind": finding.kind, "detail": finding.detail}, "platform": plan.platform.name,
        "lwip": profile.name, "set": [f"{k}={v}" for k, v in profile.overrides], "seed": plan.seed,
        "connection": connection.as_dict() if connection else None, "board_mac": board_mac,
        "frames": [f.as_dict() for f in frames]}, indent=2) + "\n")
    return path


def load_reproducer(path: Path) -> tuple[list[bytes], Connection | None, dict[str, Any]]:
    """The frames of a reproducer pcap and, when its .json is beside it, the connection they aimed at."""
    if not path.is_file():
        raise NetreproError(f"no reproducer at {path}", "give the crash.pcap a fuzz run kept in its folder")
    frames = [data for _, data in read_pcap(path)]
    meta_path = path.with_suffix(".json")
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    conn = meta.get("connection")
    return frames, Connection(**conn) if conn else None, meta


def replay_frames(plan: FuzzPlan, frames: list[bytes], connection: Connection | None, run_dir: Path,
                  progress: Progress | None = None, board_mac: str = "", times: list[float] | None = None) -> Outcome:
    """Boot a fresh board, open a connection as the fuzz run had, send the frames moved onto it, probe.
    `board_mac`: the MAC of the board the frames were sent to; frames sent to it go to this board's instead
    (another platform's NIC would filter them out). `times`: when the fuzz sent each (board seconds); the
    frames go at that pace (what builds up over time, like fragments held for reassembly, needs it)."""
    with plan.session(run_dir, progress) as rig:
        injector = Injector(rig)
        try:
            here = injector.target(rig, plan.probe_timeout).board_mac
            now = injector.open(plan.probe_timeout) if connection is not None else None
            if connection is not None and now is None:
                return probe(rig, injector, plan.probe_timeout)
            moved = [readdress(retarget(f, connection, now, rig.addresses.device), board_mac, here) for f in frames]
            began = time.monotonic()
            for at, group in paced(moved, times):
                time.sleep(max(0.0, began + rig.time.wall_s(at) - time.monotonic()))
                injector.send(group)
            return probe(rig, injector, plan.probe_timeout)
        finally:
            injector.close()


def retarget(frame: bytes, was: Connection | None, now: Connection | None, board_ip: str) -> bytes:
    """A frame aimed at connection `was` moved onto `now`: its source port, sequence and ACK numbers shifted by
    the difference, its checksum updated incrementally (RFC 1624) so it stays as right or wrong as it was."""
    if was is None or now is None or len(frame) < 34 or frame[12:14] != b"\x08\x00" or frame[23] != 6:
        return frame
    tcp = 14 + (frame[14] & 0x0F) * 4
    if len(frame) < tcp + 18 or frame[30:34] != bytes(map(int, board_ip.split("."))):
        return frame
    sport, dport, seq, ack = struct.unpack("!HHII", frame[tcp:tcp + 12])
    if sport != was.sport or dport != ECHO_PORT:
        return frame
    new = struct.pack("!HHII", now.sport, dport, (seq + now.peer_next - was.peer_next) & 0xFFFFFFFF,
                      (ack + now.board_next - was.board_next) & 0xFFFFFFFF)
    checksum = struct.unpack("!H", frame[tcp + 16:tcp + 18])[0]
    checksum = _checksum_update(checksum, frame[tcp:tcp + 12], new)
    out = bytearray(frame)
    out[tcp:tcp + 12] = new
    out[tcp + 16:tcp + 18] = struct.pack("!H", checksum)
    return bytes(out)


def _checksum_update(checksum: int, old: bytes, new: bytes) -> int:
    """RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m') over each 16-bit word that changed."""
    total = ~checksum & 0xFFFF
    for (a,), (b,) in zip(struct.iter_unpack("!H", old), struct.iter_unpack("!H", new), strict=True):
        total += (~a & 0xFFFF) + b
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _reassembly_s(options: dict[str, int]) -> float:
    """How long the board may keep a fragment it cannot reassemble (board seconds), plus a tick."""
    return (options.get("IP_REASS_MAXAGE", _REASS_MAXAGE) + 1) * _REASS_TICK_S


def _spent(plan: FuzzPlan, sent: int, began: float) -> bool:
    if plan.frames is not None and sent >= plan.frames:
        return True
    return plan.minutes is not None and time.monotonic() - began >= plan.minutes * 60


def _batch_size(plan: FuzzPlan, sent: int) -> int:
    return plan.batch if plan.frames is None else max(1, min(plan.batch, plan.frames - sent))


def _budget(plan: FuzzPlan) -> str:
    parts = ([f"{plan.frames} frames"] if plan.frames is not None else []) + \
            ([f"{plan.minutes:g} min"] if plan.minutes is not None else [])
    return " or ".join(parts)


def _python() -> str:
    return sys.executable


def format_fuzz(result: FuzzResult) -> str:
    """A short human summary."""
    boards = f", {result.boots} boards" if result.boots > 1 else ""
    lines = [f"{result.platform} / {result.profile} / seed {result.seed}: {result.frames_sent} frames in "
             f"{result.fuzz_seconds:g} s ({result.frames_per_s:g}/s; {result.seconds:g} s in all{boards}), "
             f"{result.probes_answered} of {result.probes} probes answered",
             "  frames   " + ", ".join(f"{k} {v}" for k, v in result.families.items())]
    if result.leaks:
        lines.append(f"  leaks    {result.leaks}")
    for f in result.findings:
        again = f" (seen {f.seen} times, a fresh board each)" if f.seen > 1 else ""
        lines.append(f"  FOUND    {f.kind} after {f.at_frame} frames{again}: {f.detail}")
        if f.kind == "hang":
            lines.append(f"  held     {f.held or 'unknown (no console)'} above the baseline; " + (
                "no answer again within IP reassembly's timeout" if f.answered_again_after_s is None
                else f"answered again after {f.answered_again_after_s:g} s of the board's time (an outage)"))
        if f.reproducer:
            since = " (every batch within IP reassembly's timeout)" if f.kept_since == "reassembly" else ""
            lines.append(f"  kept     {f.frames} frames{since}: {f.reproducer}"
                         + ("" if f.reproduced is None else f" (reproduced on a fresh board: {f.reproduced})"))
        if f.minimised:
            done = "" if f.minimise_complete else ", trial budget spent"
            lines.append(f"  minimal  {f.minimised_frames} frames in {f.trials} trials{done}: {f.minimised}")
            lines += [f"           {what}" for what in f.frames_what]
    if not result.findings:
        lines.append("  nothing found")
    lines.append(f"  folder   {result.run_dir}")
    return "\n".join(lines)

