"""``CaptureAnalysis``: the facts of a capture with their verdict, as ``load_capture`` returns them.

It holds two immutable parts, ``facts`` (``facts.Facts``) and ``judgement``
(``verdict.Verdict``); its flat attributes (``device_mss``, ``rtt_ms``, ``verdict``...) read
them for the callers that use those names (tests, plots, the table). ``to_summary()`` gives
what a run records (``summary.AnalysisSummary``).

Sides are "device" and "peer". Times are seconds from the connection's first frame; windows
and in flight are bytes; rates are Mbit/s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.analysis.expect import ExpectMixin
from harness.analysis.facts import ConnectionFacts, Facts, WindowStats
from harness.analysis.frames import Connection, Endpoint
from harness.analysis.numbers import rounded
from harness.analysis.summary import (
    AnalysisSummary,
    ConnectionSummary,
    Evidence,
    IdleSummary,
    InFlightSummary,
    PauseSharesSummary,
    WindowSummary,
)
from harness.analysis.transfer import TransferFacts
from harness.analysis.verdict import Verdict

_NO_TRANSFER = TransferFacts()  # what a connection without payload shows of the data direction


def measured_evidence(transfer: TransferFacts | None) -> dict[str, Any]:
    """The facts recorded as evidence, in the order a run's JSON has always listed them."""
    if transfer is None:
        return {}
    out: dict[str, Any] = {"data_wire_bytes": transfer.data_wire_bytes}
    if transfer.window_release_ms is not None:
        out["window_release_ms"] = transfer.window_release_ms
    out.update(goodput_from=transfer.goodput_from, steady_goodput_mbps=transfer.steady_goodput_mbps,
               segments_at_window=transfer.segments_at_window, zero_window_s=transfer.zero_window_s)
    return out


@dataclass(frozen=True)
class CaptureAnalysis(ExpectMixin):
    """What a capture shows about one TCP connection, plus the list of all connections."""

    facts: Facts
    judgement: Verdict

    # ---------------------------------------------------------- the capture

    @property
    def path(self) -> str:
        return self.facts.path

    @property
    def frames(self) -> int:
        return self.facts.capture.frames

    @property
    def tcp_frames(self) -> int:
        return self.facts.capture.tcp_frames

    @property
    def connections(self) -> list[Connection]:
        return list(self.facts.capture.connections)

    @property
    def conn(self) -> int | None:
        return self.facts.capture.conn

    @property
    def conn_chosen_by(self) -> str:
        return self.facts.capture.conn_chosen_by

    @property
    def empty_reason(self) -> str | None:
        return self.facts.empty_reason

    @property
    def warnings(self) -> list[str]:
        return list(self.facts.warnings)

    @property
    def truncated_frames(self) -> int:
        return self.facts.capture.truncated_frames

    @property
    def truncated(self) -> bool:
        return self.truncated_frames > 0

    @property
    def snaplen(self) -> int | None:
        return self.facts.capture.snaplen

    @property
    def interval_s(self) -> float:
        return self.facts.interval_s

    @property
    def link_rate_bps(self) -> float | None:
        return self.facts.link_rate_bps

    # ---------------------------------------------------------- the connection, per side

    @property
    def _connection(self) -> ConnectionFacts:
        return self.facts.connection

    @property
    def device(self) -> Endpoint | None:
        return self._connection.device

    @property
    def peer(self) -> Endpoint | None:
        return self._connection.peer

    @property
    def device_identified_by(self) -> str:
        return self._connection.device_identified_by

    @property
    def capture_near(self) -> str | None:
        return self._connection.capture_near

    @property
    def sender(self) -> str | None:
        return self._connection.sender

    @property
    def receiver(self) -> str | None:
        return self._connection.receiver

    @property
    def data_direction(self) -> str | None:
        return self._connection.data_direction

    @property
    def syn_seen(self) -> bool:
        return self._connection.handshake.syn_seen

    @property
    def device_mss(self) -> int | None:
        return self._connection.handshake.mss.device

    @property
    def peer_mss(self) -> int | None:
        return self._connection.handshake.mss.peer

    @property
    def window_scale(self) -> dict[str, int | None]:
        return self._connection.handshake.window_scale.as_dict()

    @property
    def window_scaling(self) -> str:
        return self._connection.handshake.window_scaling

    @property
    def sack_permitted(self) -> dict[str, bool | None]:
        return self._connection.handshake.sack_permitted.as_dict()

    @property
    def syn_window(self) -> dict[str, int | None]:
        return self._connection.handshake.syn_window.as_dict()

    @property
    def timestamps(self) -> dict[str, bool | None]:
        return self._connection.handshake.timestamps.as_dict()

    def window_of(self, side: str) -> WindowStats:
        return self._connection.windows[side]

    @property
    def device_window(self) -> WindowStats:
        return self._connection.windows.device

    @property
    def peer_window(self) -> WindowStats:
        return self._connection.windows.peer

    @property
    def device_windows(self) -> tuple[tuple[float, int], ...]:
        return self._connection.window_series.device

    @property
    def peer_windows(self) -> tuple[tuple[float, int], ...]:
        return self._connection.window_series.peer

    @property
    def initial_rtt_ms(self) -> float | None:
        return self._connection.initial_rtt_ms

    @property
    def duration_s(self) -> float | None:
        return self._connection.duration_s

    @property
    def retransmissions(self) -> int:
        return self._connection.retransmissions

    @property
    def fast_retransmissions(self) -> int:
        return self._connection.fast_retransmissions

    @property
    def spurious_retransmissions(self) -> int:
        return self._connection.spurious_retransmissions

    @property
    def window_full(self) -> int:
        return self._connection.window_full

    @property
    def out_of_order(self) -> int:
        return self._connection.out_of_order

    @property
    def lost_segments(self) -> int:
        return self._connection.lost_segments

    @property
    def dup_acks(self) -> dict[str, int]:
        return self._connection.dup_acks.as_dict()

    @property
    def zero_windows(self) -> dict[str, int]:
        return self._connection.zero_windows.as_dict()

    @property
    def segments_per_ack(self) -> dict[str, float | None]:
        return self._connection.segments_per_ack.as_dict()

    # ---------------------------------------------------------- the data direction

    @property
    def _transfer(self) -> TransferFacts:
        return self.facts.transfer or _NO_TRANSFER

    @property
    def mss_used(self) -> int | None:
        return self._transfer.mss_used

    @property
    def data_segments(self) -> tuple[tuple[float, int, int, bool], ...]:
        return self._transfer.data_segments

    @property
    def receiver_acks(self) -> tuple[tuple[float, int, int], ...]:
        return self._transfer.receiver_acks

    @property
    def in_flight(self) -> tuple[tuple[float, int], ...]:
        return self._transfer.in_flight

    @property
    def in_flight_window(self) -> tuple[tuple[float, int], ...]:
        return self._transfer.in_flight_window

    @property
    def in_flight_source(self) -> str:
        return self._transfer.in_flight_source

    @property
    def in_flight_stats(self) -> dict[str, float | None]:
        stats = self._transfer.in_flight_stats
        return stats.as_dict() if stats else {}

    @property
    def rtt_samples(self) -> tuple[tuple[float, float], ...]:
        return self._transfer.rtt_samples

    @property
    def rtt_sample_count(self) -> int:
        """All the RTT samples (``rtt_samples`` keeps at most series.LIMIT of them for the plots)."""
        return self._transfer.rtt_sample_count

    @property
    def data_segment_count(self) -> int:
        return self._transfer.data_segment_count

    @property
    def rtt_ms(self) -> float | None:
        return self._transfer.rtt_ms

    @property
    def rtt_source(self) -> str:
        return self._transfer.rtt_source

    @property
    def goodput(self) -> tuple[tuple[float, float], ...]:
        return self._transfer.goodput

    @property
    def delivered(self) -> tuple[tuple[float, int], ...]:
        return self._transfer.delivered

    @property
    def goodput_mbps(self) -> float | None:
        return self._transfer.goodput_mbps

    @property
    def payload_bytes(self) -> int:
        return self._transfer.payload_bytes

    @property
    def retransmitted_bytes(self) -> int:
        return self._transfer.retransmitted_bytes

    @property
    def transfer_s(self) -> float | None:
        return self._transfer.transfer_s

    @property
    def rto_retransmissions(self) -> int:
        return self._transfer.rto_retransmissions

    @property
    def rto_stall_s(self) -> float:
        return self._transfer.rto_stall_s

    @property
    def idle_gaps(self) -> tuple[tuple[float, float], ...]:
        return self._transfer.idle_gaps

    @property
    def idle_threshold_s(self) -> float | None:
        return self._transfer.idle_threshold_s

    @property
    def pause_shares(self) -> dict[str, float]:
        shares = self._transfer.pause_shares
        return shares.as_dict() if shares else {}

    @property
    def link_payload_mbps(self) -> float | None:
        return self.facts.bounds.link_payload_mbps

    @property
    def window_bound_mbps(self) -> float | None:
        return self.facts.bounds.window_bound_mbps

    @property
    def bound_mbps(self) -> float | None:
        return self.facts.bounds.bound_mbps

    # ---------------------------------------------------------- the verdict

    @property
    def verdict(self) -> str:
        return self.judgement.name

    @property
    def verdict_reason(self) -> str:
        return self.judgement.reason

    @property
    def evidence(self) -> dict[str, Any]:
        """The facts the verdict rests on and what it looked at (JSON-able)."""
        return {**measured_evidence(self.facts.transfer), **self.judgement.evidence}

    # ---------------------------------------------------------- what a run records

    def to_summary(self) -> AnalysisSummary:
        """What a run records of this analysis (result.json's ``analysis``), rounded for it."""
        return AnalysisSummary(**self._identity(), **self._handshake(), **self._data_direction(),
                               **self._events(), **self._outcome())

    def summary(self) -> dict[str, Any]:
        """The JSON-able ``analysis`` object of a run's result: ``to_summary().as_dict()``."""
        return self.to_summary().as_dict()

    def _identity(self) -> dict[str, Any]:
        conn = next((c for c in self.connections if c.stream == self.conn), None)
        return dict(capture=self.path, frames=self.frames, tcp_frames=self.tcp_frames,
                    connections=len(self.connections), conn=self.conn, conn_chosen_by=self.conn_chosen_by,
                    empty_reason=self.empty_reason, device=str(self.device) if self.device else None,
                    peer=str(self.peer) if self.peer else None, device_identified_by=self.device_identified_by,
                    capture_near=self.capture_near, data_direction=self.data_direction,
                    truncated_frames=self.truncated_frames, snaplen=self.snaplen,
                    connection=ConnectionSummary.from_dict(conn.as_dict()) if conn else None)

    def _handshake(self) -> dict[str, Any]:
        handshake = self._connection.handshake
        return dict(syn_seen=handshake.syn_seen, device_mss=handshake.mss.device, peer_mss=handshake.mss.peer,
                    window_scale=handshake.window_scale, window_scaling=handshake.window_scaling,
                    sack_permitted=handshake.sack_permitted, syn_window=handshake.syn_window,
                    timestamps=handshake.timestamps,
                    device_window=WindowSummary.from_dict(self.device_window.as_dict()),
                    peer_window=WindowSummary.from_dict(self.peer_window.as_dict()))

    def _data_direction(self) -> dict[str, Any]:
        t = self._transfer
        return dict(mss_used=t.mss_used, in_flight=InFlightSummary(**self.in_flight_stats, source=t.in_flight_source),
                    rtt_ms=rounded(t.rtt_ms), rtt_source=t.rtt_source, rtt_samples=t.rtt_sample_count,
                    initial_rtt_ms=rounded(self.initial_rtt_ms), goodput_mbps=rounded(t.goodput_mbps),
                    goodput_interval_s=self.interval_s,
                    goodput_per_interval_mbps=tuple(rounded(v) for _, v in t.goodput),
                    payload_bytes=t.payload_bytes, retransmitted_bytes=t.retransmitted_bytes,
                    transfer_s=rounded(t.transfer_s, 6), duration_s=rounded(self.duration_s, 6))

    def _events(self) -> dict[str, Any]:
        t, c = self._transfer, self._connection
        gaps = [g for _, g in t.idle_gaps]
        shares = t.pause_shares
        return dict(retransmissions=c.retransmissions, fast_retransmissions=c.fast_retransmissions,
                    spurious_retransmissions=c.spurious_retransmissions, rto_retransmissions=t.rto_retransmissions,
                    rto_stall_s=rounded(t.rto_stall_s, 6), dup_acks=c.dup_acks, zero_windows=c.zero_windows,
                    window_full=c.window_full, out_of_order=c.out_of_order, lost_segments=c.lost_segments,
                    segments_per_ack=c.segments_per_ack.map(rounded),
                    idle=IdleSummary(len(gaps), rounded(sum(gaps), 6), rounded(max(gaps, default=None), 6),
                                     rounded(None if t.idle_threshold_s is None else t.idle_threshold_s * 1e3)),
                    pause_shares=PauseSharesSummary(*(rounded(v) for v in shares.as_dict().values()))
                    if shares else None)

    def _outcome(self) -> dict[str, Any]:
        link_rate = self.link_rate_bps
        return dict(link_rate_mbps=rounded(None if link_rate is None else link_rate / 1e6),
                    link_payload_mbps=rounded(self.link_payload_mbps),
                    window_bound_mbps=rounded(self.window_bound_mbps), bound_mbps=rounded(self.bound_mbps),
                    verdict=self.verdict, verdict_reason=self.verdict_reason,
                    evidence=Evidence.from_dict(self.evidence), warnings=tuple(self.warnings))
