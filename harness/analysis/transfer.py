"""The facts of the data direction: RTT, in flight, goodput, pauses, timeouts, zero windows (their types;
``flow_transfer`` measures them).

The sender's view. Whether the sender was window-limited is a question about what the sender
knew when it sent each segment. At the sender's side of the link (device transmits) that is
what the capture shows, and tshark's ``tcp.analysis.bytes_in_flight`` is used as it is. At the
receiver's side (device receives) the sender learnt of each ACK about one round trip after the
capture saw it: in flight is then the data's right edge minus the receiver's ACK the sender had
seen. Which ACK that was comes from TCP timestamps when both sides use them (the data's TSecr
names it); without them (lwIP's default) from the window release delay, the time between the
ACK that first allowed a segment and the segment's arrival, which is the RTT when the sender
waits for the window. ``rtt_source`` and ``in_flight_source`` say which was used.

Goodput counts payload once (retransmissions excluded): first arrivals at the receiver's side,
the receiver's cumulative ACKs at the sender's side (there the capture sees data before the
link's queue).

The RTT without a queue (``base_rtt_s``, against which the verdict judges a standing queue) is
the lowest median of three consecutive RTT samples, not the lowest sample: a capture point that
stalls stamps a data segment late, and that one segment's data->ACK time falls below the path's
round trip.

A send buffer (lwIP's TCP_SND_BUF) shows as in flight held at a flat ceiling: the same peak in
every time slice, never exceeded (``Plateau``). A congestion window is not flat: it grows and
varies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

PLATEAU_SLICES = 10  # in flight's ceiling is looked for in each of up to 10 time slices (50+ segments each)
HEADERS = 54  # Ethernet, IPv4 and TCP headers without options, in front of a segment's payload


@dataclass(frozen=True)
class FlightStats:
    """Bytes in flight over the sender's data segments (sender's view)."""

    min: int | None
    median: float | None
    p95: float | None
    max: int | None

    def as_dict(self) -> dict[str, float | None]:
        return {"min": self.min, "median": self.median, "p95": self.p95, "max": self.max}


@dataclass(frozen=True)
class PauseShares:
    """Shares of the sending time: back to back, paused at the window, waiting for ACKs, paused by itself."""

    busy: float
    window: float
    ack_wait: float
    sender_paced: float

    def as_dict(self) -> dict[str, float]:
        return {"busy": self.busy, "window": self.window, "ack_wait": self.ack_wait,
                "sender_paced": self.sender_paced}


@dataclass(frozen=True)
class Plateau:
    """In flight's ceiling (its 95th percentile) and whether in flight was held at it.

    Flat: in flight never went more than a segment above it, and in each time slice of the
    transfer it came within a segment of it. lwIP's TCP_SND_BUF is a byte count that in flight
    meets again and again; a congestion window grows and varies between slices.
    """

    flat: bool
    ceiling: float
    max: int
    slices: int
    slice_peaks: tuple[int, ...]
    at_ceiling: float  # share of segments sent with in flight within a segment of the ceiling


@dataclass(frozen=True)
class TransferFacts:
    """Everything measured on the sender's data and the receiver's ACKs. Times are seconds from the
    connection's first frame; series are tuples of (time, value...)."""

    mss_used: int | None = None               # largest payload of a sender segment
    # the series behind the figures (left out of repr: thousands of entries)
    data_segments: tuple[tuple[float, int, int, bool], ...] = field(default=(), repr=False)  # t, seq, end, resent
    receiver_acks: tuple[tuple[float, int, int], ...] = field(default=(), repr=False)  # t, ack, window
    in_flight: tuple[tuple[float, int], ...] = field(default=(), repr=False)  # t, in flight in the sender's view
    in_flight_window: tuple[tuple[float, int], ...] = field(default=(), repr=False)  # t, the window it knew then
    rtt_samples: tuple[tuple[float, float], ...] = field(default=(), repr=False)  # t, seconds
    delivered: tuple[tuple[float, int], ...] = field(default=(), repr=False)  # t, new bytes (behind goodput)
    # the series are thinned to series.LIMIT points for a long capture (``series.thin``); their full counts:
    data_segment_count: int = 0
    resent_segment_count: int = 0             # data segments tshark flags as retransmissions
    rtt_sample_count: int = 0
    data_wire_bytes: int = 0                  # the data frames on the wire (Ethernet)
    in_flight_source: str = ""
    in_flight_stats: FlightStats | None = None
    segments_at_window: float | None = None   # share of segments sent with under 2 segments of window left
    rtt_ms: float | None = None
    rtt_source: str = ""
    window_release_ms: float | None = None    # the release delay when it was too long to be the RTT
    base_rtt_s: float | None = None           # the RTT without a queue
    payload_bytes: int = 0                    # first transmissions only
    retransmitted_bytes: int = 0
    goodput_from: str = ""
    goodput: tuple[tuple[float, float], ...] = ()  # (interval start, Mbit/s)
    goodput_mbps: float | None = None
    steady_goodput_mbps: float | None = None  # median of the intervals inside the transfer
    transfer_s: float | None = None           # first data segment to last delivery
    idle_gaps: tuple[tuple[float, float], ...] = ()  # sender pauses: (start, length)
    idle_threshold_s: float | None = None
    pause_shares: PauseShares | None = None
    rto_retransmissions: int = 0              # retransmissions after a stall (estimated timeouts)
    rto_stall_s: float = 0.0
    zero_window_s: float = 0.0                # time the receiver's window was zero
    plateau: Plateau | None = None
    warnings: tuple[str, ...] = ()


def base_rtt(samples: Sequence[tuple[float, float]]) -> float:
    """The RTT without a queue: the lowest median of three consecutive samples (in time order).

    Not the lowest sample: a capture point that stalls stamps the frames it then reads late, and
    a data segment stamped late gives one data->ACK time below the path's own round trip (seen:
    2.94 ms on a 5.5 ms path, the segment stamped with the ACK read in the same batch after a
    22 ms stall). Such samples come one at a time; three in a row are the path.
    """
    values = [v for _, v in samples]
    if len(values) < 3:
        return min(values)
    return min(sorted(values[i:i + 3])[1] for i in range(len(values) - 2))


