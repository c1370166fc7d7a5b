"""The shared medium's airtime arithmetic, as the link schedules it (harness/link/c/air.h, "medium=shared").

One turn (TXOP) of a direction costs channel access (SIFS + aifsn slots + the mean backoff of
cwmin/2 slots), the PPDU (preamble + the A-MPDU's bytes at the PHY rate + signal extension) and
the response (SIFS + block ack + signal extension). On the air a frame is mpdu_overhead bytes longer
than on Ethernet, padded to 4 bytes. A turn carries at most agg_frames frames, agg_bytes bytes and
an agg_time PPDU, and always at least one frame.

What the analysis needs from it is the air's capacity in one direction with every turn full: the
rate a wire would need to carry the same frames, so that a bound, a verdict or a table can treat
the air as the link's rate.

With `bus_rate` > 0 the WiFi chip's host bus (SDIO or SPI) is a stage of its own on the board's side of
the air (harness/link/c/bus.h, "the WiFi chip's host bus"): every frame crosses it once, taking bus_cost +
its bytes * 8 / bus_rate, one transfer at a time for both directions. A one-way flood then gets the
slower of the two stages; for TCP the bus also carries the ACKs coming the other way (one per two
segments), which the air's capacity here does not count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from harness.core.ethernet import MAX_FRAME, wire_bytes

ACK_FRAME = 14 + 20 + 20   # a bare TCP ACK on Ethernet (lwIP sends no timestamps): what the bus carries of it
ACKS_PER_SEGMENT = 0.5     # delayed ACKs: one for every two full segments


def air_bytes(spec: Any, size: int) -> int:
    """An Ethernet frame of `size` bytes as an A-MPDU subframe: plus the MPDU's overhead, padded to 4 bytes."""
    return -(-(size + spec.mpdu_overhead_bytes) // 4) * 4


def access_s(spec: Any) -> float:
    """Channel access before a turn: SIFS, aifsn slots (DIFS with 2) and the mean backoff."""
    return spec.sifs_s + spec.aifsn * spec.slot_s + spec.cwmin / 2 * spec.slot_s


def turn_s(spec: Any, sizes: Sequence[int]) -> float:
    """One turn carrying Ethernet frames of these sizes: channel access, the PPDU, the block ack."""
    ppdu = spec.preamble_s + sum(air_bytes(spec, n) for n in sizes) * 8 / spec.phy_rate_bps + spec.signal_ext_s
    return access_s(spec) + ppdu + spec.sifs_s + spec.blockack_s + spec.signal_ext_s


def frames_per_turn(spec: Any, size: int = MAX_FRAME) -> int:
    """How many frames of `size` bytes one full turn carries under the aggregation limits (at least one)."""
    each = air_bytes(spec, size)
    count = min(int(spec.agg_frames), int(spec.agg_bytes) // each)
    if spec.agg_time_s > 0:
        count = min(count, int((spec.agg_time_s - spec.preamble_s) * spec.phy_rate_bps / 8 // each))
    return max(1, count)


def saturated_rate_bps(spec: Any, size: int = MAX_FRAME) -> float:
    """The air's capacity one way with every turn full of `size`-byte frames, as the Ethernet rate
    (frames and their wire overhead, bit/s) that carries the same frames in the same time."""
    count = frames_per_turn(spec, size)
    return count * wire_bytes(size) * 8 / turn_s(spec, [size] * count)


def bus_s(spec: Any, size: int) -> float:
    """One frame of `size` bytes across the WiFi chip's host bus: bus_cost + its bytes at bus_rate (0: no bus)."""
    if not spec.bus_rate_bps:
        return 0.0
    return spec.bus_cost_s + size * 8 / spec.bus_rate_bps


def bus_rate_bps(spec: Any, size: int = MAX_FRAME, acks: float = 0.0, ack: int = ACK_FRAME) -> float:
    """The host bus's capacity for `size`-byte frames one way, as the Ethernet rate (frames and their wire
    overhead, bit/s) that carries the same frames in the same time, with `acks` frames of `ack` bytes crossing
    it the other way for each (TCP: ACKS_PER_SEGMENT); infinite without a bus."""
    per_frame = bus_s(spec, size) + acks * bus_s(spec, ack)
    return wire_bytes(size) * 8 / per_frame if per_frame > 0 else math.inf


def capacity_bps(spec: Any, size: int = MAX_FRAME, acks: float = 0.0) -> tuple[float, str]:
    """The one-way capacity (Ethernet-equivalent bit/s) of the air and the bus in series, and the stage that sets
    it: "air", or "bus" when the bus (with `acks` frames the other way for each, see bus_rate_bps) is slower."""
    air, bus = saturated_rate_bps(spec, size), bus_rate_bps(spec, size, acks)
    return (bus, "bus") if bus < air else (air, "air")


def tcp_capacity_bps(spec: Any, size: int = MAX_FRAME) -> tuple[float, str]:
    """The data direction's capacity for TCP: the air's, or the bus's with the ACKs crossing it too, the lower."""
    return capacity_bps(spec, size, ACKS_PER_SEGMENT)


def udp_goodput_bps(spec: Any, frame: int, payload: int) -> float:
    """The UDP payload one direction carries with every turn full of `frame`-byte datagrams: the air's or, with a
    host bus slower than it, the bus's (a one-way flood: the bus carries nothing else)."""
    return capacity_bps(spec, frame)[0] * payload / wire_bytes(frame)


def bus_udp_goodput_bps(spec: Any, frame: int, payload: int) -> float:
    """The most UDP payload the host bus alone carries one way (infinite without a bus)."""
    return bus_rate_bps(spec, frame) * payload / wire_bytes(frame)


def phy_rate_for(spec: Any, goodput_bps: float, frame: int, payload: int) -> int:
    """The PHY rate (bit/s) at which the air, its other timings as `spec` has them, carries `goodput_bps`
    of UDP payload: the same question `netrepro calibrate-medium` answers with floods through the link,
    answered from the arithmetic (the capacity grows with the rate, so a bisection finds it). With a host
    bus the end-to-end figure is the slower stage's: a bus that cannot carry the target alone is a ValueError."""
    bus = bus_udp_goodput_bps(spec, frame, payload)
    if bus < goodput_bps:
        raise ValueError(f"the bus carries at most {bus / 1e6:.3f} Mbit/s of UDP (bus_rate "
                         f"{spec.bus_rate_bps / 1e6:g} Mbit/s, bus_cost {spec.bus_cost_s * 1e6:g} us), less than "
                         f"{goodput_bps / 1e6:g}: no PHY rate carries it; give a faster bus_rate or a smaller bus_cost")
    low, high = 1_000, 10_000_000_000
    if udp_goodput_bps(spec.override(phy_rate=high), frame, payload) < goodput_bps:
        raise ValueError(f"no PHY rate carries {goodput_bps / 1e6:g} Mbit/s of UDP with these timings")
    while high - low > 1_000:
        middle = (low + high) // 2
        if udp_goodput_bps(spec.override(phy_rate=middle), frame, payload) < goodput_bps:
            low = middle
        else:
            high = middle
    return high
