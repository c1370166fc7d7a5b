"""Ethernet's framing, as every part of netrepro counts it (the link's rate, the analysis's wire bytes)."""

from __future__ import annotations

OVERHEAD = 24  # per frame on the wire beyond what is captured: preamble 8 + inter-frame gap 12 + FCS 4
MIN_FRAME = 60  # the shortest frame without its FCS; shorter ones are padded on the wire
MAX_FRAME = 1514  # the longest untagged frame without its FCS (MTU 1500 + header 14)


def wire_bytes(frame_len: int) -> int:
    """What one captured frame of `frame_len` bytes occupies on the wire."""
    return max(frame_len, MIN_FRAME) + OVERHEAD
