"""The emulated network link between the device's NIC and the TCP peer.

The link itself is a small C program (its units in harness/link/c/, built on demand by
harness.core.native). It sits between QEMU's unix datagram netdev and a tap device (or,
in tests, a second unix datagram socket) and applies, per direction and in this order:

1. loss: a deterministic drop list (``data:3`` = the 3rd TCP segment with payload seen in
   that direction, retransmissions included; ``frame:12``; ``syn:1``; also ``fin``, ``rst``,
   ``ack`` (pure ACKs), ``udp``, and ranges such as ``data:3-5``), netem's Gilbert-Elliott
   model (``loss gemodel p r 1-h 1-k``) and independent random loss. All are seeded: the
   same frames in the same order with the same seed are dropped the same way.
2. a drop-tail queue of ``limit`` frames and/or ``limit_bytes`` bytes in front of
   the line. The frame on the line is not counted. Unlike netem's ``limit``, frames in the
   delay line are not counted either: this is the bottleneck's buffer.
3. the rate: serialisation at ``rate`` counting Ethernet's overhead on the wire
   (harness.core.ethernet: frames padded to 60 bytes, plus 24 bytes of preamble, gap and
   FCS). ``burst`` 0 means strict serialisation; B > 0 makes it a token bucket of B bytes (like tbf).
4. the one-way delay, plus jitter: uniform in [-jitter, +jitter] (netem's default without
   a distribution table) or ``jitter_dist="normal"`` (sigma = jitter, truncated at 4
   sigma). Frames keep their order unless ``reorder`` is true (then jitter may reorder
   them, as netem's time-sorted queue does).

Toward the device, frames are also handed over no faster than its NIC's wire (``pace``,
``pace_burst``), and when the device's socket cannot take a frame when it is due
(QEMU reads it only while the emulated NIC has a free RX descriptor), ``overflow="hold"``
(the default) keeps it until it can, while ``overflow="drop"`` drops it as ``device-full``,
as a real NIC loses what arrives while its RX ring is full. ``sock_frames`` N limits what the
socket toward the device holds unread to N full-size frames (through SO_SNDBUF; at least 2,
the kernel's minimum), so that what waits in front of the device is its NIC's ring and a
small FIFO rather than the kernel's socket queue (``net.unix.max_dgram_qlen``, 11 frames).

With ``medium="shared"`` (link-wide) step 3 is one radio channel instead of a line each way:
both directions take turns (TXOPs) that aggregate frames (802.11n's A-MPDU and block ack, with
DCF's channel access, fair turns, and an optional frame error rate with MAC retries; the
defaults are 802.11n at 2.4 GHz, each with its source in settings.py).

Everything else is per direction: ``to_device`` is peer -> device, ``to_peer`` device -> peer.
The capture is taken at the device side of the link by default: device -> peer frames are
stamped when they arrive from the device, peer -> device frames when they are handed to it.
Dropped frames are in the drops log, not in the capture (except a device -> peer frame lost
later, on the shared medium's air or because the peer socket could not take it, which only the
test socket mode can produce). ``Link(capture_at="peer")`` takes it at the peer side instead, as
a capture on the PC would: every peer -> device frame when it arrives from the peer (one the
link then drops too), device -> peer frames when they are handed to the peer.

Units follow tc's conventions (see ``parse_time``, ``parse_rate``, ``parse_size``,
``parse_percent``).

Modules: units (tc's units), settings (THE table: every setting's name, unit, default, range,
JSON key and C key, declared once), spec (Direction and LinkSpec, presets and overrides),
process (the Link process), counters (its stats), capture (reading its pcap and drops log).
"""

from harness.link.capture import CAPTURE_SIDES, capture_side, read_drops, read_pcap, read_pcap_ns
from harness.link.counters import DROP_REASONS, BoardClockCounters, DirectionCounters, LinkCounters
from harness.link.process import LINK_DIR, SUN_PATH_MAX, Link, link_binary
from harness.link.settings import OVERFLOW_MODES, SETTINGS, Setting
from harness.link.spec import Direction, LinkSpec
from harness.link.units import (
    DROP_KINDS,
    drop_entries,
    parse_count,
    parse_drop_list,
    parse_flag,
    parse_gemodel,
    parse_percent,
    parse_rate,
    parse_size,
    parse_time,
)

__all__ = [
    "CAPTURE_SIDES",
    "DROP_KINDS",
    "DROP_REASONS",
    "LINK_DIR",
    "OVERFLOW_MODES",
    "SETTINGS",
    "SUN_PATH_MAX",
    "BoardClockCounters",
    "Direction",
    "DirectionCounters",
    "Link",
    "LinkCounters",
    "LinkSpec",
    "Setting",
    "capture_side",
    "drop_entries",
    "link_binary",
    "parse_count",
    "parse_drop_list",
    "parse_flag",
    "parse_gemodel",
    "parse_percent",
    "parse_rate",
    "parse_size",
    "parse_time",
    "read_drops",
    "read_pcap",
    "read_pcap_ns",
]
