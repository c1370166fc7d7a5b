"""Services the peer runs inside the namespace: `python -m harness.rig.peer_services '{"service": ...}'`.

Each accepts one connection, prints LISTENING once bound (so the caller knows when to start the
board), and writes what it saw as JSON to `out`.

discard  RFC 863 on port 9 (default): read to EOF.
sink     the same on any port: the far end of the board's `sock tx`.
source   send as fast as possible for `seconds` or exactly `bytes`, then close; the far end of
         the board's `sock rx`. Its per-second figures count bytes handed to the kernel, which
         runs ahead of the wire by what the socket buffer holds; the board measures the transfer.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

_SEND_CHUNK = 64 * 1024


def _accept(port: int, out: str, accept_timeout: float) -> tuple[socket.socket, str] | None:
    """Listen, say LISTENING, accept one connection; on timeout write the error and return None."""
    listener = socket.create_server(("0.0.0.0", port), reuse_port=False)
    listener.settimeout(accept_timeout)
    print("LISTENING", flush=True)
    try:
        with listener:
            conn, peer = listener.accept()
    except TimeoutError:
        _write(out, {"error": f"no connection within {accept_timeout:g} s"})
        return None
    conn.settimeout(accept_timeout)
    return conn, f"{peer[0]}:{peer[1]}"


def _write(out: str, report: dict[str, Any]) -> None:
    with open(out, "w") as fh:
        json.dump(report, fh)


class _PerSecond:
    """Byte counts per second of the board's time (`bucket_s` wall seconds) since a start time."""

    def __init__(self, start: float, bucket_s: float = 1.0) -> None:
        self.start = start
        self.bucket_s = bucket_s
        self.buckets = [0]

    def add(self, now: float, nbytes: int) -> None:
        second = int((now - self.start) / self.bucket_s)
        self.buckets.extend([0] * (second + 1 - len(self.buckets)))
        self.buckets[second] += nbytes


def discard(port: int, out: str, accept_timeout: float, bucket_s: float = 1.0) -> int:
    """Read one connection to EOF; report bytes, per-second bytes, first/last byte and EOF times."""
    accepted = _accept(port, out, accept_timeout)
    if accepted is None:
        return 1
    conn, peer = accepted
    start = time.monotonic()
    total, per_second, first, last = 0, _PerSecond(start, bucket_s), None, start
    with conn:
        while True:
            data = conn.recv(65536)
            now = time.monotonic()
            if not data:
                break
            first = first if first is not None else now
            last = now
            total += len(data)
            per_second.add(now, len(data))
    _write(out, {"peer": peer, "bytes": total, "per_second_bytes": per_second.buckets,
                 "first_byte_s": (first or start) - start, "last_byte_s": last - start,
                 "eof_s": time.monotonic() - start})
    return 0


def source(port: int, out: str, accept_timeout: float, seconds: float | None, nbytes: int | None,
           bucket_s: float = 1.0) -> int:
    """Send for `seconds` or exactly `nbytes`, half-close, wait for the board to close too.

    A board that stops reading and closes early resets the connection; that ends the sending
    and is reported as "reset": true, not as a failure.
    """
    accepted = _accept(port, out, accept_timeout)
    if accepted is None:
        return 1
    conn, peer = accepted
    payload = os.urandom(_SEND_CHUNK)
    start = time.monotonic()
    per_second = _PerSecond(start, bucket_s)
    reset, sent_s = False, None
    with conn:
        try:
            _send(conn, payload, per_second, seconds, nbytes)
            sent_s = time.monotonic() - start
            conn.shutdown(socket.SHUT_WR)
            while conn.recv(65536):  # the board sends nothing; wait for its FIN
                pass
        except (ConnectionResetError, BrokenPipeError):
            reset = True
    _write(out, {"peer": peer, "bytes": sum(per_second.buckets), "per_second_bytes": per_second.buckets,
                 "sent_s": sent_s if sent_s is not None else time.monotonic() - start,
                 "closed_s": time.monotonic() - start, "reset": reset})
    return 0


def _send(conn: socket.socket, payload: bytes, per_second: _PerSecond,
          seconds: float | None, nbytes: int | None) -> None:
    """Blocking sends of up to 64 KiB until the time is up or nbytes are sent (counted in per_second)."""
    view, total = memoryview(payload), 0
    while seconds is None or time.monotonic() - per_second.start < seconds:
        want = len(payload) if nbytes is None else min(len(payload), nbytes - total)
        if want <= 0:
            return
        sent = conn.send(view[:want])
        total += sent
        per_second.add(time.monotonic(), sent)


@dataclass(frozen=True)
class PeerService:
    """One service to start in the namespace; it travels to the child as one JSON argument."""

    service: str                    # "discard", "sink" or "source"
    out: str                        # where the service writes what it saw
    port: int = 9
    accept_timeout: float = 60.0
    seconds: float | None = None    # source: send for this long ...
    bytes: int | None = None        # ... or exactly this many bytes
    bucket_s: float = 1.0           # wall seconds per reported second (one second of the board's time)

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "harness.rig.peer_services", json.dumps(asdict(self))]

    def serve(self) -> int:
        if self.service == "source":
            return source(self.port, self.out, self.accept_timeout, self.seconds, self.bytes, self.bucket_s)
        return discard(self.port, self.out, self.accept_timeout, self.bucket_s)


def main(argv: list[str]) -> int:
    return PeerService(**json.loads(argv[0])).serve()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
