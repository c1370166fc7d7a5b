"""A long bulk TCP transfer written straight to a pcap file, frame by frame (millions of frames, little memory).

``captures_gen.simulate`` models a transfer event by event and holds every frame; this writer
holds none: the peer sends MSS-sized segments at a fixed rate, the device (the capture point)
ACKs every second one at once with a fixed window, both with timestamps. Frames are cut after
the TCP header (snap length 66 + 12 of timestamps): the file stays small while tshark still
reads every length from the IP header. Checksums are left at zero (netrepro's tshark preferences
do not check them).
"""

from __future__ import annotations

import struct
from pathlib import Path

from captures_gen import DEVICE_IP, DEVICE_MAC, PEER_IP, PEER_MAC, _ip, tcp_options

SNAPLEN = 78
_ACK, _SYN, _PSH = 0x10, 0x02, 0x08


def _frame(src: str, sport: int, dst: str, dport: int, seq: int, ack: int, flags: int, window: int,
           options: bytes, payload_len: int) -> tuple[bytes, int]:
    """The frame's headers (what the capture keeps) and its length on the wire."""
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, (20 + len(options)) // 4 << 4,
                      flags, window, 0, 0) + options
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + payload_len, 0, 0x4000, 64, 6, 0, _ip(src), _ip(dst))
    smac, dmac = (DEVICE_MAC, PEER_MAC) if src == DEVICE_IP else (PEER_MAC, DEVICE_MAC)
    frame = dmac + smac + b"\x08\x00" + ip + tcp
    return frame, max(60, len(frame) + payload_len)


def write_bulk(path: Path, frames: int, rate_bps: float = 100e6, rtt: float = 0.004, mss: int = 1448,
               window: int = 262144, start: float = 1.0) -> Path:
    """About `frames` frames of one transfer peer -> device, captured at the device (receiver)."""
    path = Path(path)
    dev, peer = (DEVICE_IP, 5001), (PEER_IP, 40000)
    scale = 7
    gap = (mss + 66 + 24) * 8 / rate_bps
    header = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, SNAPLEN, 1)
    with path.open("wb", buffering=1 << 20) as out:
        out.write(header)
        t = start

        def put(at: float, frame: tuple[bytes, int]) -> None:
            sec = int(at)
            kept = frame[0][:SNAPLEN]
            out.write(struct.pack("<IIII", sec, round((at - sec) * 1e9), len(kept), frame[1]) + kept)

        def ts(at: float) -> int:
            return int(at * 1000) + 1

        put(t, _frame(*peer, *dev, 1000, 0, _SYN, 64240, tcp_options(mss + 12, scale, True, (ts(t), 0)), 0))
        t += 30e-6
        put(t, _frame(*dev, *peer, 5000, 1001, _SYN | _ACK, 65160, tcp_options(mss + 12, scale, True,
                                                                                 (ts(t), ts(t - 30e-6))), 0))
        t += rtt
        put(t, _frame(*peer, *dev, 1001, 5001, _ACK, 502, tcp_options(timestamps=(ts(t), ts(t - rtt))), 0))
        seq, count, last_ack_ts = 1001, 3, ts(t)
        win = window >> scale
        while count < frames:
            t += gap
            data_ts = ts(t)
            put(t, _frame(*peer, *dev, seq, 5001, _ACK | _PSH, 502, tcp_options(timestamps=(data_ts, last_ack_ts)),
                          mss))
            seq += mss
            count += 1
            if count % 3 == 0:  # every second data segment: the device's ACK at once
                t += 20e-6
                last_ack_ts = ts(t - rtt / 2)
                put(t, _frame(*dev, *peer, 5001, seq, _ACK, win, tcp_options(timestamps=(ts(t), data_ts)), 0))
                count += 1
    return path
