"""The kernel's stamp of a datagram's arrival at a socket (SO_TIMESTAMPNS): when the sender's write reached
it, not when this process woke up to read it, which a busy host delays. The stamp is on CLOCK_REALTIME."""

from __future__ import annotations

import socket
import struct

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux's asm-generic/socket.h; Python 3.11 does not name it
_ANCILLARY = socket.CMSG_SPACE(16)                      # one struct timespec


def stamp_arrivals(sock: socket.socket) -> socket.socket:
    """Have the kernel stamp each datagram `sock` receives."""
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    return sock


def recv_stamped(sock: socket.socket, size: int = 65536) -> tuple[bytes, int | None]:
    """One datagram and the kernel's realtime ns stamp of its arrival (None if the socket was not set to stamp)."""
    data, ancillary, _flags, _addr = sock.recvmsg(size, _ANCILLARY)
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", payload[:16])
            return data, sec * 1_000_000_000 + nsec
    return data, None
