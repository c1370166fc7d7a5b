"""Services the peer runs inside the namespace: `python -m harness.rig.peer_services <service> ...`.

Each accepts one connection, prints LISTENING once bound (so the caller knows when to start the
board), and writes what it saw as JSON to --out.

discard  RFC 863 on port 9 (default): read to EOF.
sink     the same on any port: the far end of the board's `sock tx`.
source   send as fast as possible for --seconds or exactly --bytes, then close; the far end of
         the board's `sock rx`. Its per-second figures count bytes handed to the kernel, which
         runs ahead of the wire by what the socket buffer holds; the board measures the transfer.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
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
    """Byte counts per whole second since a start time."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.buckets = [0]

    def add(self, now: float, nbytes: int) -> None:
        second = int(now - self.start)
        self.buckets.extend([0] * (second + 1 - len(self.buckets)))
        self.buckets[second] += nbytes


def discard(port: int, out: str, accept_timeout: float) -> int:
    """Read one connection to EOF; report bytes, per-second bytes, first/last byte and EOF times."""
    accepted = _accept(port, out, accept_timeout)
    if accepted is None:
        return 1
    conn, peer = accepted
    start = time.monotonic()
    total, per_second, first, last = 0, _PerSecond(start), None, start
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


def source(port: int, out: str, accept_timeout: float, seconds: float | None, nbytes: int | None) -> int:
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
    per_second = _PerSecond(start)
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


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text}")
        return value
    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.rig.peer_services")
    sub = parser.add_subparsers(dest="service", required=True)
    for name, default_port in (("discard", 9), ("sink", None)):
        p = sub.add_parser(name)
        p.add_argument("--port", type=int, default=default_port, required=default_port is None)
        p.add_argument("--out", required=True)
        p.add_argument("--accept-timeout", type=float, default=60.0)
    s = sub.add_parser("source")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--accept-timeout", type=float, default=60.0)
    amount = s.add_mutually_exclusive_group(required=True)
    amount.add_argument("--seconds", type=_positive(float))
    amount.add_argument("--bytes", type=_positive(int))
    args = parser.parse_args(argv)
    if args.service == "source":
        return source(args.port, args.out, args.accept_timeout, args.seconds, args.bytes)
    return discard(args.port, args.out, args.accept_timeout)


if __name__ == "__main__":
    sys.exit(main())
