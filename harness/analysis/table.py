"""The analysis as text: a short table for ``netrepro inspect``."""

from __future__ import annotations

from typing import Any

from harness.analysis.capture_analysis import CaptureAnalysis
from harness.analysis.facts import WindowStats


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return str(v)


def _window(w: WindowStats) -> str:
    if not w.count:
        return "-"
    s = f"{w.min}/{_cell(w.median)}/{w.max} ({w.count} ACKs)"
    return s + " scale?" if w.unknown_scale else s


def _header(a: CaptureAnalysis) -> list[str]:
    """Which connection, its ends, and where the capture was taken."""
    conn = next(k for k in a.connections if k.stream == a.conn)
    lines = [f"conn {a.conn}    {conn.a} -> {conn.b}, {conn.frames} frames, {a.duration_s:.3f} s "
             f"({a.conn_chosen_by})"]
    if len(a.connections) > 1:
        others = ", ".join(f"{k.stream}: {k.a}->{k.b} {k.payload_bytes} B" for k in a.connections
                           if k.stream != a.conn)[:200]
        lines.append(f"others    {others}")
    lines.append(f"device    {a.device}: {a.device_identified_by}")
    lines.append(f"peer      {a.peer}; capture next to the {a.capture_near}; data {a.data_direction or 'none'}")
    return lines


def _sides(a: CaptureAnalysis) -> list[str]:
    """Device and peer side by side: options, windows, duplicate ACKs, zero windows."""
    rows = [
        ("", "device", "peer"),
        ("MSS option", _cell(a.device_mss), _cell(a.peer_mss)),
        ("window scale", _cell(a.window_scale["device"]) if a.syn_seen else "?",
         _cell(a.window_scale["peer"]) if a.syn_seen else "?"),
        ("SACK / timestamps", f"{_cell(a.sack_permitted['device'])} / {_cell(a.timestamps['device'])}",
         f"{_cell(a.sack_permitted['peer'])} / {_cell(a.timestamps['peer'])}"),
        ("window min/med/max", _window(a.device_window), _window(a.peer_window)),
        ("dup ACKs", _cell(a.dup_acks["device"]), _cell(a.dup_acks["peer"])),
        ("zero windows", _cell(a.zero_windows["device"]), _cell(a.zero_windows["peer"])),
        ("segments per ACK", _cell(a.segments_per_ack["device"]), _cell(a.segments_per_ack["peer"])),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    return [f"  {r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]}" for r in rows]


def _data_direction(a: CaptureAnalysis) -> list[str]:
    """Goodput, RTT, in flight, retransmissions, pauses and the bounds of the sender's data."""
    per = " ".join(f"{v:.1f}" for _, v in a.goodput[:12]) + (" ..." if len(a.goodput) > 12 else "")
    goodput = f"{a.goodput_mbps:.2f} Mbit/s" if a.goodput_mbps is not None else "-"
    lines = [f"goodput   {goodput} over {a.transfer_s:.3f} s ({a.payload_bytes} B); per {a.interval_s:g} s: {per}"]
    rtt = f"{a.rtt_ms:.2f} ms median of {a.rtt_sample_count}" if a.rtt_ms is not None else "-"
    irtt = f", handshake {a.initial_rtt_ms:.2f} ms" if a.initial_rtt_ms is not None else ""
    lines.append(f"RTT       {rtt}{irtt}")
    flight = a.in_flight_stats
    if flight.get("median") is not None:
        lines.append(f"in flight median {flight['median']:.0f} B, p95 {flight['p95']:.0f} B, max {flight['max']} B "
                     f"({a.in_flight_source})")
    lines.append(f"retrans   {a.retransmissions} ({a.fast_retransmissions} fast, {a.rto_retransmissions} after "
                 f"timeouts, {a.spurious_retransmissions} spurious); out of order {a.out_of_order}; "
                 f"window full {a.window_full}")
    idle = sum(g for _, g in a.idle_gaps)
    shares = ", ".join(f"{k} {v:.0%}" for k, v in a.pause_shares.items() if v >= 0.005)
    lines.append(f"pauses    {len(a.idle_gaps)} >= {a.idle_threshold_s * 1e3:.2f} ms, {idle:.3f} s in all; "
                 f"time: {shares}")
    if a.bound_mbps is not None:
        window_bound = f"{a.window_bound_mbps:.1f}" if a.window_bound_mbps else "?"
        stage = "bus" if a.facts.link_stage == "bus" else "link"  # the WiFi chip's host bus, when it is the lower
        lines.append(f"bound     {a.bound_mbps:.1f} Mbit/s = min({stage} {a.link_rate_bps / 1e6:g}, "
                     f"window/RTT {window_bound})")
    elif a.window_bound_mbps is not None:
        lines.append(f"bound     window/RTT {a.window_bound_mbps:.1f} Mbit/s (link rate unknown)")
    return lines


def format_table(analysis: CaptureAnalysis) -> str:
    """A short table for ``netrepro inspect``."""
    a = analysis
    lines = [f"capture   {a.path}: {a.frames} frames, {a.tcp_frames} TCP, {len(a.connections)} connection(s)"]
    if a.conn is None:
        lines.append(f"nothing to analyse: {a.empty_reason}")
        lines += [f"warning   {w}" for w in a.warnings]
        return "\n".join(lines)
    lines += _header(a)
    lines += _sides(a)
    lines.append(f"scaling   {a.window_scaling}")
    if a.sender is not None:
        lines += _data_direction(a)
    lines.append(f"verdict   {a.verdict}: {a.verdict_reason}")
    lines += [f"warning   {w}" for w in a.warnings]
    return "\n".join(lines)
