"""The verdict: what limited the throughput, judged from the facts alone.

``judge(facts)`` is a pure function: it reads ``Facts`` and returns a ``Verdict`` (name, reason,
and the evidence it looked at beyond the facts); it changes nothing. The checks run in this
order, the first that holds decides: the link (or its WiFi chip's host bus), loss by timeouts, the
receiver, the window, the board's core (when its own load is known), the send buffer, loss, the
sender, unknown.

A send buffer (lwIP's TCP_SND_BUF) shows as in flight held at a flat ceiling below the
receiver's window. When the application refills the buffer the moment an ACK frees room, the
sender hardly pauses; the evidence is then that goodput = ceiling / RTT while the link could
carry more. A congestion window is not flat: it grows and varies, and is not called a send
buffer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.analysis.facts import Facts
from harness.analysis.numbers import plural, rounded
from harness.analysis.transfer import Plateau
from harness.core.ethernet import MAX_FRAME, wire_bytes

VERDICTS = ("window-limited", "send-buffer-limited", "link-limited", "bus-limited", "loss-limited",
            "receiver-limited", "cpu-limited", "sender-limited", "unknown")

# Thresholds of the verdict (fractions of the data-transfer time unless said otherwise).
LINK_BUSY = 0.85          # goodput >= 85 % of the payload rate the link can carry -> link-limited (bus-limited
                          # when that rate is the WiFi chip's host bus's, below the air's)
RTO_SHARE = 0.20          # stalls before timeout retransmissions >= 20 % -> loss-limited
ZERO_WINDOW_SHARE = 0.05  # receiver at zero window >= 5 % -> receiver-limited
SHRUNK_WINDOW = 0.75      # median advertised window <= 75 % of its largest (or its SYN's) = shrinking
BLOCKED_SHARE = 0.20      # sender paused at the window / waiting for ACKs >= 20 % of the time
SENDER_PACED_SHARE = 0.50  # paused by itself (no window, no ACK to wait for) most of the time: sender-limited
AT_WINDOW_SEGMENTS = 0.5  # or >= half the segments left less than a segment of window
BUFFER_BELOW_WINDOW = 0.8  # send buffer: in flight (p95) below 80 % of the window
PLATEAU_GOODPUT = (0.75, 1.25)  # and goodput within 75-125 % of ceiling / RTT (the pipe held the ceiling)
RETRANS_SHARE = 0.01      # >= 1 % of data segments retransmitted (and >= 3) -> loss-limited fallback
QUEUE_RTT_GROWTH = 1.5    # link rate unknown: RTT >= 1.5 x its minimum (a standing queue) and
SENDER_BUSY = 0.8         # the sender busy >= 80 % of the time -> link-limited
QUEUE_MIN_S = 1e-3        # and the RTT grew by at least 1 ms (and 3 full frames' time on the link)
MIN_DATA_SEGMENTS = 10    # fewer data segments are too little to judge
CPU_SATURATED = 0.90      # the board's core busy >= 90 % of the workload (its own measure) -> cpu-limited


@dataclass(frozen=True)
class Verdict:
    """What limited the throughput, why, and what was looked at beyond the facts (JSON-able values)."""

    name: str = "unknown"
    reason: str = ""
    evidence: Mapping[str, Any] = field(default_factory=dict)


Finding = tuple[str, str]  # (verdict name, reason) of one check


@dataclass(frozen=True)
class _Reading:
    """The facts as the checks read them: the receiver's window, the RTT, goodput and the sender's time."""

    receiver: str
    whose: str                    # "the device's"
    window: float | None          # the receiver's median advertised window
    window_text: str
    rtt: float | None             # seconds, median
    rtt_text: str
    base_rtt: float | None        # seconds, without a queue
    goodput: float                # Mbit/s
    span: float                   # seconds of data transfer
    busy: float                   # shares of the sending time
    blocked: float
    ack_wait: float
    paced: float
    at_window: float              # share of segments sent with under 2 segments of window left
    p95: float | None             # in flight
    data_segments: int
    queue: bool                   # the RTT grew over its base: a standing queue

    @property
    def held(self) -> str:
        return (f"{self.at_window:.0%} of segments left under 2 segments of window, sender paused at the window "
                f"{self.blocked:.0%} of the time")


def _standing_queue(rtt: float | None, base_rtt: float | None, link_rate_bps: float | None) -> bool:
    frame_time = (wire_bytes(MAX_FRAME) * 8 / link_rate_bps) if link_rate_bps else 0.0
    return bool(rtt is not None and base_rtt and rtt >= QUEUE_RTT_GROWTH * base_rtt
                and rtt - base_rtt >= max(QUEUE_MIN_S, 3 * frame_time))


def _reading(facts: Facts) -> _Reading:
    transfer, connection = facts.transfer, facts.connection
    assert transfer is not None and connection.receiver is not None
    receiver = connection.receiver
    window = connection.windows[receiver].median
    rtt = transfer.rtt_ms / 1e3 if transfer.rtt_ms else None
    shares = transfer.pause_shares
    stats = transfer.in_flight_stats
    return _Reading(
        receiver=receiver, whose=f"the {receiver}'s", window=window,
        window_text=f"{window:.0f} B" if window is not None else "unknown",
        rtt=rtt, rtt_text=f"{transfer.rtt_ms:.2f} ms" if transfer.rtt_ms else "unknown RTT",
        base_rtt=transfer.base_rtt_s, goodput=transfer.goodput_mbps or 0.0, span=transfer.transfer_s or 0.0,
        busy=shares.busy if shares else 0.0, blocked=shares.window if shares else 0.0,
        ack_wait=shares.ack_wait if shares else 0.0, paced=shares.sender_paced if shares else 0.0,
        at_window=transfer.segments_at_window or 0.0, p95=stats.p95 if stats else None,
        data_segments=transfer.data_segment_count,
        queue=_standing_queue(rtt, transfer.base_rtt_s, facts.link_rate_bps))


# ------------------------------------------------------------------ the checks, in order


def _link(facts: Facts, r: _Reading) -> Finding | None:
    """Goodput at the link's payload rate, or (rate unknown) a standing queue with the sender never idle."""
    transfer, link_payload = facts.transfer, facts.bounds.link_payload_mbps
    assert transfer is not None
    goodput, steady = r.goodput, transfer.steady_goodput_mbps
    best = max(goodput, steady or 0.0)  # the steady per-interval rate counts too: start and end are slower
    if link_payload and best >= LINK_BUSY * link_payload:
        per = f" ({steady:.1f} Mbit/s per {facts.interval_s:g} s, median)" if steady and steady > 1.02 * goodput else ""
        if facts.link_stage == "bus":
            return "bus-limited", (f"goodput {goodput:.1f} Mbit/s{per} = {best / link_payload:.0%} of the "
                                   f"{link_payload:.1f} Mbit/s of payload the WiFi chip's host bus carries (as a "
                                   f"{facts.link_rate_bps / 1e6:.1f} Mbit/s link, the ACKs crossing it too), less "
                                   f"than the air would; {r.whose} window {r.window_text}, RTT {r.rtt_text}")
        return "link-limited", (f"goodput {goodput:.1f} Mbit/s{per} = {best / link_payload:.0%} of the "
                                f"{link_payload:.1f} Mbit/s of payload the {facts.link_rate_bps / 1e6:g} Mbit/s link "
                                f"carries; {r.whose} window {r.window_text}, RTT {r.rtt_text}")
    at_receiver = facts.connection.capture_near == r.receiver
    if at_receiver and facts.link_rate_bps is None and r.busy >= SENDER_BUSY:
        return "link-limited", (f"data arrived back to back {r.busy:.0%} of the time at {goodput:.1f} Mbit/s: the "
                                "bottleneck upstream (the link, or a sender that cannot go faster) never went idle "
                                f"(link rate unknown); {r.whose} window {r.window_text}, RTT {r.rtt_text}")
    if r.queue and r.busy >= SENDER_BUSY:
        assert r.base_rtt is not None
        rate = "link rate unknown" if facts.link_rate_bps is None else f"link {facts.link_rate_bps / 1e6:g} Mbit/s"
        return "link-limited", (f"a queue stood at the bottleneck: RTT grew from {r.base_rtt * 1e3:.2f} ms to "
                                f"{r.rtt_text} (median) while the sender sent {r.busy:.0%} of the time without "
                                f"pausing; goodput {goodput:.1f} Mbit/s ({rate})")
    return None


def _timeouts(facts: Facts, r: _Reading) -> Finding | None:
    transfer = facts.transfer
    assert transfer is not None
    stalled = transfer.rto_stall_s
    if stalled < RTO_SHARE * r.span:
        return None
    return "loss-limited", (f"{plural(transfer.rto_retransmissions, 'retransmission')} after timeouts stalled "
                            f"the sender {stalled:.2f} s of {r.span:.2f} s ({stalled / r.span:.0%}); "
                            f"{plural(facts.connection.retransmissions, 'retransmission')} in all; "
                            f"goodput {r.goodput:.1f} Mbit/s")


def _window(facts: Facts, r: _Reading) -> Finding | None:
    """The receiver's window (zero, or shrinking as its application falls behind) or the window as configured."""
    transfer, connection = facts.transfer, facts.connection
    assert transfer is not None
    stats = connection.windows[r.receiver]
    largest = max(stats.max or 0, connection.handshake.syn_window[r.receiver] or 0)
    window_held = (r.blocked >= BLOCKED_SHARE and r.blocked >= r.ack_wait) or r.at_window >= AT_WINDOW_SEGMENTS
    shrunk = bool(largest) and r.window is not None and r.window <= SHRUNK_WINDOW * largest
    zero_s = transfer.zero_window_s
    if zero_s >= ZERO_WINDOW_SHARE * r.span:
        times = plural(connection.zero_windows[r.receiver], "time")
        return "receiver-limited", (f"{r.receiver} advertised a zero window {times}, closed {zero_s:.2f} s of "
                                    f"{r.span:.2f} s ({zero_s / r.span:.0%}); window {stats.min}-{stats.max} B, "
                                    f"median {r.window_text}; goodput {r.goodput:.1f} Mbit/s")
    if window_held and shrunk:
        return "receiver-limited", (f"sender held at {r.whose} window, which shrank: median {r.window_text} of "
                                    f"{largest} B (the receiving application is not keeping up); {r.held}; "
                                    f"goodput {r.goodput:.1f} Mbit/s")
    if window_held:
        bound = facts.bounds.window_bound_mbps
        bound_text = f"; window/RTT = {r.window_text} / {r.rtt_text} = {bound:.1f} Mbit/s" if bound else ""
        return "window-limited", (f"in flight sat at {r.whose} advertised window ({r.window_text}): {r.held}; "
                                  f"goodput {r.goodput:.1f} Mbit/s{bound_text}")
    return None


def _cpu(facts: Facts, r: _Reading) -> Finding | None:
    """The board's core saturated (its own measure of its time) while neither the window nor the link held it."""
    busy = facts.device_busy
    if busy is None or busy < CPU_SATURATED:
        return None
    link_payload = facts.bounds.link_payload_mbps
    room = f", {r.goodput / link_payload:.0%} of the link's payload rate" if link_payload else ""
    return "cpu-limited", (f"the board's core was busy {busy:.0%} of the workload with {r.whose} window "
                           f"{r.window_text} open and the link not full (goodput {r.goodput:.1f} Mbit/s{room}): "
                           "the board's CPU set the pace")


@dataclass(frozen=True)
class _Buffer:
    """In flight's ceiling when it stayed well below the window (None otherwise), and what it allows per RTT."""

    plateau: Plateau | None
    pipe_mbps: float | None       # ceiling / RTT

    @property
    def flat(self) -> bool:
        return bool(self.plateau and self.plateau.flat)

    def evidence(self, goodput: float) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.plateau:
            out.update(in_flight_ceiling=round(self.plateau.ceiling), in_flight_flat=self.flat,
                       in_flight_slice_peaks=list(self.plateau.slice_peaks))
        if self.pipe_mbps:
            out["goodput_per_ceiling_rtt"] = round(goodput / self.pipe_mbps, 3)
        return out


def _buffer(facts: Facts, r: _Reading) -> _Buffer:
    assert facts.transfer is not None
    below_window = r.p95 is not None and bool(r.window) and r.p95 < BUFFER_BELOW_WINDOW * r.window
    plateau = facts.transfer.plateau if below_window else None
    return _Buffer(plateau, plateau.ceiling * 8 / r.rtt / 1e6 if plateau and r.rtt else None)


def _send_buffer(facts: Facts, r: _Reading, buffer: _Buffer) -> Finding | None:
    """In flight at a flat ceiling well below the window, the sender waiting for ACKs to free room: either it sat
    idle for long, or (an application that refills the buffer the moment an ACK frees room) it hardly paused,
    and goodput = ceiling / RTT, below the link's rate."""
    pipe, plateau = buffer.pipe_mbps, buffer.plateau
    idle_for_acks = r.ack_wait >= BLOCKED_SHARE
    refilled = (pipe is not None and r.paced < BLOCKED_SHARE and not r.queue
                and PLATEAU_GOODPUT[0] <= r.goodput / pipe <= PLATEAU_GOODPUT[1])
    if not (buffer.flat and (idle_for_acks or refilled)):
        return None
    assert plateau is not None and facts.transfer is not None
    ceiling, goodput, link_payload = plateau.ceiling, r.goodput, facts.bounds.link_payload_mbps
    top = "p95 = max" if plateau.max == round(ceiling) else f"p95; max {plateau.max} B"
    if link_payload:
        room = f"below what the link carries ({goodput / link_payload:.0%} of {link_payload:.1f} Mbit/s)"
    elif not r.queue and r.base_rtt:
        room = f"with no standing queue (RTT {r.rtt_text}, base {r.base_rtt * 1e3:.2f} ms; link rate unknown)"
    else:
        room = "link rate unknown"
    law = (f" = {goodput / pipe:.0%} of in flight/RTT ({ceiling:.0f} B / {r.rtt_text} = {pipe:.1f} Mbit/s)"
           if pipe else "")
    slices = f", the same in all {plateau.slices} time slices" if plateau.slices > 1 else ""
    pauses = plural(len(facts.transfer.idle_gaps), "pause")
    return "send-buffer-limited", (f"in flight plateaued at {ceiling:.0f} B ({top}{slices}), below {r.whose} window "
                                   f"{r.window_text}, {room}; goodput {goodput:.1f} Mbit/s{law}; the sender waited "
                                   f"for ACKs {r.ack_wait:.0%} of the time ({pauses})")


def _retransmissions(facts: Facts, r: _Reading) -> Finding | None:
    """Frequent retransmissions with the window open."""
    transfer = facts.transfer
    assert transfer is not None
    resent = transfer.resent_segment_count
    if resent < 3 or resent < RETRANS_SHARE * r.data_segments:
        return None
    return "loss-limited", (f"{resent} of {r.data_segments} data segments retransmitted "
                            f"({facts.connection.fast_retransmissions} fast, {transfer.rto_retransmissions} after "
                            f"timeouts) with the window open; goodput {r.goodput:.1f} Mbit/s")


def _otherwise(facts: Facts, r: _Reading, buffer: _Buffer) -> Finding:
    """The sender (its own pace most of the time), or unknown with what was seen."""
    goodput, p95 = r.goodput, r.p95 or 0
    plateau = buffer.plateau
    if plateau and not buffer.flat and r.ack_wait >= BLOCKED_SHARE:
        peaks = plateau.slice_peaks
        return "unknown", (f"the sender waited for ACKs {r.ack_wait:.0%} of the time with in flight (p95 "
                           f"{r.p95:.0f} B) below {r.whose} window {r.window_text}, but in flight had no fixed "
                           f"ceiling (peak per time slice {min(peaks)}-{max(peaks)} B, max {plateau.max} B): a "
                           f"congestion window or the application, not a fixed send buffer; goodput {goodput:.1f} "
                           "Mbit/s")
    if r.paced >= SENDER_PACED_SHARE:
        return "sender-limited", (f"the sender paused {r.paced:.0%} of the time with the window open and no ACK it "
                                  f"was waiting for: its CPU, application or memory set the pace; in flight p95 "
                                  f"{p95:.0f} B of {r.window_text}; goodput {goodput:.1f} Mbit/s")
    if r.paced >= BLOCKED_SHARE:
        return "unknown", (f"the sender paused {r.paced:.0%} of the time with the window open and not waiting for "
                           f"ACKs (application, CPU or memory pacing); in flight p95 {p95:.0f} B of "
                           f"{r.window_text}; goodput {goodput:.1f} Mbit/s")
    if facts.link_rate_bps is None:
        return "unknown", (f"the sender was busy {r.busy:.0%} of the time with in flight (p95 {p95:.0f} B) below "
                           f"{r.whose} window {r.window_text} and no standing queue; link rate unknown (give it to "
                           f"test for link-limited); goodput {goodput:.1f} Mbit/s")
    link_share = goodput / (facts.bounds.link_payload_mbps or 1)
    return "unknown", (f"goodput {goodput:.1f} Mbit/s is {link_share:.0%} of the link's payload rate, in flight (p95 "
                       f"{p95:.0f} B) below {r.whose} window {r.window_text}, sender busy {r.busy:.0%} of the time "
                       "(congestion control or pacing)")


def judge(facts: Facts) -> Verdict:
    """The verdict on the facts; reads them only."""
    transfer = facts.transfer
    if transfer is None:
        return Verdict("unknown", facts.empty_reason or "")
    r = _reading(facts)
    goodput = transfer.goodput_mbps
    evidence: dict[str, Any] = {"base_rtt_ms": rounded(r.base_rtt * 1e3 if r.base_rtt else None),
                                "goodput_mbps": rounded(goodput)}
    if r.data_segments < MIN_DATA_SEGMENTS or not r.span or goodput is None:
        return Verdict("unknown", f"too little data to judge ({r.data_segments} data segments)", evidence)
    if facts.device_busy is not None:
        evidence["device_busy"] = rounded(facts.device_busy)
    found = _link(facts, r) or _timeouts(facts, r) or _window(facts, r) or _cpu(facts, r)
    if found:
        return Verdict(*found, evidence)
    buffer = _buffer(facts, r)
    evidence.update(buffer.evidence(goodput))  # what the send-buffer check looked at, whatever it found
    name, reason = _send_buffer(facts, r, buffer) or _retransmissions(facts, r) or _otherwise(facts, r, buffer)
    return Verdict(name, reason, evidence)
