"""A run the host disturbed (it could not keep up with the board): one policy, judged and applied in one place,
for every command (`run`, `compare`, `bisect`, `reproduce`, `sensitivity`, `sweep`, the pytest plugin: they
all run a plan through RunPlan.execute or RunPlan.start, which come here).

The policy: a run the host disturbed (`disturbance`) is repeated at twice D, in RUN_DIR-slower, up to
`DisturbedPolicy.tries` runs in all; the last run stands, still marked if the host disturbed it too (result.json
`disturbed`). The result that stands records the policy and every run it repeated (`disturbed_policy`,
`repeats`). A device-time run is disturbed when
- its figures are at risk by its time (DeviceTime.figures_at_risk: the board's clock fell behind while the link
  ran on wall / D, the link handed frames over late in the board's own time, or the host held the board longer
  than the peer's shortest retransmission timeout);
- the peer is the bulk TCP sender over a link that dropped nothing toward the board, and
  - the board's NIC lost frames it never counted (the link handed them over, the driver neither received
    them nor counted them dropped: a device model's loss, seen with QEMU's LAN9118 on a host busy
    elsewhere) and the peer resent data: a recovery no modelled link caused; or
  - over a wire, with nothing resent, the peer's sender paused on its own for more than SENDER_PACED_SHARE
    of the transfer: the peer's application runs in wall time, and a host that starves it makes gaps the
    board's link never had (harness.analysis pause shares, `sender_paced`; the air's turns make their own).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from harness.core.progress import Progress
from harness.link.counters import DirectionCounters
from harness.rig.devicetime import BOARD_STALL_MS, LINK_LATE_MS, DeviceTime
from harness.rig.workload import KINDS
from harness.runs.analyse import MeasuredRun
from harness.runs.result import RunResult

REPEAT_SUFFIX = "-slower"  # a repeat's folder: its run's folder with this added, once per repeat
# the share of a transfer the peer's sender may pause on its own before its starving is the host's: runs the host
# left alone read 0.0-1.4 % (five repeated at 1.1-1.4 % read their figure again within 1.4 %, 2026-12-06), starved
# senders 3.0 % (89.8 Mbit/s against 94.8) and 9 % (75.7)
SENDER_PACED_SHARE = 0.02
# the driver's counters of frames the NIC received or dropped where it could count them (firmware/drivers)
NIC_COUNTED = ("nic.rx_frames", "nic.rx_no_pbuf", "nic.rx_dropped_fifo")


class Measurable(Protocol):
    """What the policy needs of a plan: its time, and one run of it (RunPlan.measure)."""

    time: DeviceTime

    def measure(self, run_dir: Path, progress: Progress | None = None) -> MeasuredRun: ...


@dataclass(frozen=True)
class DisturbedPolicy:
    """How many runs a disturbed run may take in all (the first one included), each at twice the last's D."""

    tries: int = 2

    def as_dict(self) -> dict[str, Any]:
        return {"repeat_when": "disturbed", "repeat_at": "twice D", "tries": self.tries}

    def measure(self, plan: Measurable, run_dir: Path, progress: Progress | None = None) -> MeasuredRun:
        """The plan's runs under this policy, the one that stands not yet analysed; it records the runs it
        repeated (RunResult.repeats) and the last of them (RunResult.replaced, which reproduce's table lists)."""
        progress = progress or Progress(quiet=True)
        repeats: list[dict[str, Any]] = []
        measured = plan.measure(run_dir, progress)
        why = disturbance(measured)
        while why and len(repeats) + 1 < self.tries:
            slower = plan.time.slower()
            progress.warn(f"{why} at D = {plan.time.dilation:g}; repeating at D = {slower.dilation:g}")
            disturbed = measured.analysed()  # the disturbed run's folder keeps its analysis too
            repeats.append({"run_dir": disturbed.run_dir, "figure": disturbed.throughput_mbps,
                            "dilation": plan.time.dilation, "why": why})
            plan, run_dir = replace(plan, time=slower), run_dir.with_name(run_dir.name + REPEAT_SUFFIX)
            run_dir.mkdir()
            measured = plan.measure(run_dir, progress)
            why = disturbance(measured)
        # the run that stands says what it stands in for, so that no table replaces a figure silently
        measured.result.disturbed_policy, measured.result.repeats = self.as_dict(), repeats
        measured.result.disturbed = why
        measured.result.replaced = repeats[-1] if repeats else None
        measured.result.save()
        return measured


def measure_trusted(plan: Measurable, run_dir: Path, progress: Progress | None = None) -> MeasuredRun:
    """The plan's runs under the one policy (DisturbedPolicy), the one that stands not yet analysed."""
    return DisturbedPolicy().measure(plan, run_dir, progress)


def disturbance(measured: MeasuredRun) -> str | None:
    """Why the host disturbed a run, in the user's words (None: it did not, or the run is in host time, whose
    figures are the host's anyway); the capture is analysed here only where its figures are needed."""
    result = measured.result
    if figures_at_risk(result.time):
        return risk_text(result.time)
    if not result.time or result.time.get("mode") != "device" or not peer_sends_over_a_lossless_link(result):
        return None
    measured.capture_analysis()
    analysis = result.analysis
    if analysis is None:
        return None
    lost = unseen_frames(result)
    if lost and analysis.retransmissions:  # a frame still on its way when the board's counters were read is not
        return (f"the board's NIC lost {lost} frame{'s' if lost > 1 else ''} the link handed it and counted none of "
                f"them dropped, and the peer resent {analysis.retransmissions} segments the link never lost (the "
                "device model's loss)")
    shares = analysis.pause_shares
    if (result.link.medium == "wire" and shares is not None and shares.sender_paced > SENDER_PACED_SHARE
            and not analysis.retransmissions):
        return (f"the host starved the peer's sender: it paused on its own {shares.sender_paced:.1%} of the "
                f"transfer (more than {SENDER_PACED_SHARE:.0%})")
    return None


def unseen_frames(result: RunResult) -> int:
    """Frames the link handed to the device that its driver neither received nor counted as dropped (0 where the
    driver keeps no counters)."""
    handed = result.link_counters.get("to_device", {}).get("frames_out")
    if handed is None or NIC_COUNTED[0] not in result.device_stats:
        return 0
    return max(0, handed - sum(result.device_stats.get(key, 0) for key in NIC_COUNTED))


def peer_sends_over_a_lossless_link(result: RunResult) -> bool:
    """The peer is the bulk TCP sender, over a link that dropped nothing on the way to the device: what the peer
    resends, or pauses, is then not the link's doing."""
    kind = KINDS.get(result.workload.get("name", ""))
    toward = result.link_counters.get("to_device")
    return (kind is not None and not kind.device_sends and not kind.two_way and not kind.udp and toward is not None
            and not DirectionCounters.from_dict(toward).dropped_total)


def still_disturbed(result: RunResult) -> bool:
    """The run that stood was disturbed too (`disturbance`; a result.json from before it was recorded: by its
    time alone)."""
    return bool(result.disturbed) or figures_at_risk(result.time)


def figures_at_risk(time: dict[str, Any]) -> bool:
    """DeviceTime.figures_at_risk of a result's `time` object (empty: the run never got that far)."""
    return bool(time) and DeviceTime.from_dict(time).figures_at_risk


def risk_text(time: dict[str, Any]) -> str:
    """What put a run's figures at risk (figures_at_risk), in the user's words."""
    if time.get("link_late"):
        return (f"the host stalled the link: a frame reached the other side {time['link_late_ms']:g} ms of the "
                f"board's time late (more than {LINK_LATE_MS:g} ms)")
    if time.get("board_stalled"):
        return (f"the host held the board {time['board_stall_ms']:g} ms of wall time during its workload (longer "
                f"than the peer's shortest retransmission timeout, {BOARD_STALL_MS:g} ms)")
    return f"the host fell behind the board by {time['max_lag_ms']:g} ms"
