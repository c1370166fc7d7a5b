"""Assertion helpers for pytest (``capture.expect_device_window(46720)``): a failure says what the capture showed."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from harness.analysis.verdict import VERDICTS

if TYPE_CHECKING:
    from harness.analysis.facts import WindowStats


def _range(at_least: float | None, at_most: float | None) -> str:
    return " and ".join(x for x in (f">= {at_least}" if at_least is not None else "",
                                    f"<= {at_most}" if at_most is not None else "") if x)


class ExpectMixin:
    """The expect_* methods of ``CaptureAnalysis``; they raise AssertionError with the observed values."""

    if TYPE_CHECKING:  # what the methods read; CaptureAnalysis provides it
        path: str
        conn: int | None
        empty_reason: str | None
        syn_seen: bool
        device_mss: int | None
        peer_mss: int | None
        window_scale: dict[str, int | None]
        window_scaling: str
        verdict: str
        verdict_reason: str
        retransmissions: int
        fast_retransmissions: int
        rto_retransmissions: int
        goodput_mbps: float | None

        def window_of(self, side: str) -> WindowStats: ...

    def _need_connection(self) -> None:
        if self.conn is None:
            raise AssertionError(f"no connection to check in {self.path}: {self.empty_reason}")

    def expect_window(self, side: str, expected: int, min_share: float = 0.95) -> None:
        """The usual window: at least min_share of side's ACKs (SYNs and RSTs aside) advertised exactly
        `expected` bytes.

        The default leaves room for a few window updates (e.g. while the application closes);
        min_share=1.0 asks for every ACK. The window the stack was configured to offer (TCP_WND) is
        the largest one, expect_largest_window's: the two differ when the application gives the
        window back late (MicroPython's sockets: one MSS under TCP_WND).
        """
        self._need_connection()
        stats = self.window_of(side)
        if stats.count == 0:
            raise AssertionError(f"{side} sent no ACKs in connection {self.conn}, expected window {expected}")
        hits = stats.values.get(expected, 0)
        if hits >= math.ceil(min_share * stats.count) and hits > 0:
            return
        value, n = stats.most_common()
        others = ", ".join(f"{v} x{c}" for v, c in stats.values.most_common(4) if v != value)
        need = "all of them" if min_share >= 1 else f"at least {min_share:.0%} of them"
        msg = f"{side} advertised {value} in {n} of {stats.count} ACKs, expected {expected} in {need}"
        if hits and value != expected:
            msg += f" ({expected} in {hits})"
        if others:
            msg += f"; other values: {others}"
        if stats.unknown_scale:
            msg += "; window scale unknown (SYN not captured), values as sent"
        if stats.max is not None and stats.max != value:
            msg += (f"; this checks the usual window: the largest the {side} advertised was {stats.max} "
                    f"(expect_largest_{side}_window checks that one, the window as configured)")
        raise AssertionError(msg)

    def expect_device_window(self, expected: int, min_share: float = 0.95) -> None:
        """The device's usual window: exactly `expected` in at least min_share of its ACKs."""
        self.expect_window("device", expected, min_share)

    def expect_peer_window(self, expected: int, min_share: float = 0.95) -> None:
        """The peer's usual window: exactly `expected` in at least min_share of its ACKs."""
        self.expect_window("peer", expected, min_share)

    def expect_largest_window(self, side: str, expected: int) -> None:
        """The largest window side's ACKs (SYNs and RSTs aside) advertised is `expected` bytes: the window its
        stack was configured to offer (lwIP's TCP_WND), advertised while nothing waits unread."""
        self._need_connection()
        stats = self.window_of(side)
        if stats.count == 0:
            raise AssertionError(f"{side} sent no ACKs in connection {self.conn}, expected window {expected}")
        if stats.max == expected:
            return
        value, n = stats.most_common()
        msg = (f"the largest window the {side} advertised was {stats.max}, expected {expected} (its usual window: "
               f"{value} in {n} of {stats.count} ACKs)")
        if stats.unknown_scale:
            msg += "; window scale unknown (SYN not captured), values as sent"
        raise AssertionError(msg)

    def expect_largest_device_window(self, expected: int) -> None:
        self.expect_largest_window("device", expected)

    def expect_largest_peer_window(self, expected: int) -> None:
        self.expect_largest_window("peer", expected)

    def expect_mss(self, device: int | None = None, peer: int | None = None) -> None:
        self._need_connection()
        problems = []
        for side, want, got in (("device", device, self.device_mss), ("peer", peer, self.peer_mss)):
            if want is None or got == want:
                continue
            if got is None:
                why = "SYN not captured" if not self.syn_seen else "no MSS option in its SYN"
                problems.append(f"{side} MSS unknown ({why}), expected {want}")
            else:
                problems.append(f"{side} MSS option {got}, expected {want}")
        if problems:
            raise AssertionError("; ".join(problems))

    def expect_window_scale(self, device: int | None = None, peer: int | None = None) -> None:
        """The window-scale shift each side announced (None: do not check that side)."""
        self._need_connection()
        if not self.syn_seen:
            raise AssertionError("window scaling unknown: the SYN was not captured")
        problems = [f"{side} window scale {got if got is not None else 'absent'}, expected {want}"
                    for side, want, got in (("device", device, self.window_scale["device"]),
                                            ("peer", peer, self.window_scale["peer"]))
                    if want is not None and got != want]
        if problems:
            raise AssertionError("; ".join(problems) + f" (scaling {self.window_scaling})")

    def expect_no_window_scaling(self) -> None:
        self._need_connection()
        if not self.syn_seen:
            raise AssertionError("window scaling unknown: the SYN was not captured")
        if self.window_scaling != "not negotiated":
            raise AssertionError(f"window scaling negotiated: device shift {self.window_scale['device']}, "
                                 f"peer shift {self.window_scale['peer']}, expected no window scaling")

    def expect_verdict(self, expected: str) -> None:
        if expected not in VERDICTS:
            raise ValueError(f"unknown verdict {expected!r}; one of {', '.join(VERDICTS)}")
        if self.verdict != expected:
            raise AssertionError(f"verdict {self.verdict}, expected {expected}: {self.verdict_reason}")

    def expect_retransmissions(self, at_most: int | None = None, at_least: int | None = None) -> None:
        n = self.retransmissions
        if (at_most is not None and n > at_most) or (at_least is not None and n < at_least):
            raise AssertionError(f"{n} retransmissions ({self.fast_retransmissions} fast, "
                                 f"{self.rto_retransmissions} after a timeout), expected {_range(at_least, at_most)}")

    def expect_goodput(self, at_least: float | None = None, at_most: float | None = None) -> None:
        """Total goodput in Mbit/s."""
        self._need_connection()
        g = self.goodput_mbps
        if g is None or (at_least is not None and g < at_least) or (at_most is not None and g > at_most):
            shown = "none" if g is None else f"{g:.2f} Mbit/s"
            raise AssertionError(f"goodput {shown}, expected {_range(at_least, at_most)} "
                                 f"(verdict {self.verdict}: {self.verdict_reason})")
