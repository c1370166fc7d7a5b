"""Services the peer runs inside the namespace: `python -m harness.peer_services discard ...`.

The discard service (RFC 863, port 9) accepts one connection, reads it to EOF and writes what
it saw (bytes, per-second byte counts, first and last byte times) as JSON.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time


def discard(port: int, out: str, accept_timeout: float) -> int:
    listener = socket.create_server(("0.0.0.0", port), reuse_port=False)
    listener.settimeout(accept_timeout)
    print("LISTENING", flush=True)
    try:
        conn, peer = listener.accept()
    except TimeoutError:
        with open(out, "w") as fh:
            json.dump({"error": f"no connection within {accept_timeout:g} s"}, fh)
        return 1
    conn.settimeout(accept_timeout)
    accepted = time.monotonic()
    total, buckets, first, last = 0, [0], None, accepted
    with conn:
        while True:
            data = conn.recv(65536)
            now = time.monotonic()
            if not data:
                break
            first = first if first is not None else now
            last = now
            total += len(data)
            second = int(now - accepted)
            buckets.extend([0] * (second + 1 - len(buckets)))
            buckets[second] += len(data)
    report = {"peer": f"{peer[0]}:{peer[1]}", "bytes": total, "per_second_bytes": buckets,
              "first_byte_s": (first or accepted) - accepted, "last_byte_s": last - accepted,
              "eof_s": time.monotonic() - accepted}
    with open(out, "w") as fh:
        json.dump(report, fh)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.peer_services")
    sub = parser.add_subparsers(dest="service", required=True)
    d = sub.add_parser("discard")
    d.add_argument("--port", type=int, default=9)
    d.add_argument("--out", required=True)
    d.add_argument("--accept-timeout", type=float, default=60.0)
    args = parser.parse_args(argv)
    return discard(args.port, args.out, args.accept_timeout)


if __name__ == "__main__":
    sys.exit(main())
