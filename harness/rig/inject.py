"""The fuzzer's hands inside the peer's namespace: `python -m harness.rig.inject TAP BOARD_IP PORT`.

It runs where the tap is (the namespace's own, through the same nsenter prefix as every peer program), so
the frames it writes can only reach the run's own link and board. It reads one command a line on stdin
and answers each with one JSON line on stdout:

hello TIMEOUT      ping the board once and read its MAC from the kernel's ARP table: {"peer_mac", "board_mac"}
send HEX[,HEX...]  write these Ethernet frames on the tap (AF_PACKET): {"sent", "refused"}
ping TIMEOUT       one ICMP echo to the board (a raw socket): {"ok", "ms"}
echo TIMEOUT       a fresh connection to the board's echo service, 16 bytes there and back: {"ok", "error"}
open TIMEOUT       (re)open the connection the fuzzer's established-connection frames aim at: exchange 8
                   bytes with the echo service, then read the board's last segment of it off the tap:
                   {"ok", "sport", "peer_next", "board_next"} (the next sequence number of each side)
close              reset that connection at the board's end too: {"ok": the board says it is gone, "resets"}

Only the standard library: it must start fast and needs nothing of the harness.
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import sys
import time

_ETH_P_ALL = 0x0003
_ETH_P_IP = 0x0800
_PAYLOAD = b"netrepro"
_ACK, _RST = 0x10, 0x04
_CLOSE_TRIES = 4   # resets at the number the board gives, before giving up on closing its end
_ANSWER_S = 1.0    # wall seconds the board has to answer a segment on the connection


class Hands:
    def __init__(self, tap: str, board_ip: str, port: int) -> None:
        self.tap, self.board_ip, self.port = tap, board_ip, port
        self.packet = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(_ETH_P_ALL))
        self.packet.bind((tap, 0))
        self.conn: socket.socket | None = None
        self.opened: tuple[str, int] | None = None  # the connection's local address and port
        self.ping_id = os.getpid() & 0xFFFF
        self.ping_seq = 0

    def hello(self, timeout: float) -> dict:
        ping = self.ping(timeout)
        # the tap's own MAC from the socket bound to it (/sys shows the host's interfaces, not the namespace's)
        peer_mac = ":".join(f"{b:02x}" for b in self.packet.getsockname()[4])
        return {**ping, "peer_mac": peer_mac, "board_mac": self._board_mac()}

    def _board_mac(self) -> str:
        for line in _read("/proc/net/arp").splitlines()[1:]:
            fields = line.split()
            if fields and fields[0] == self.board_ip and fields[3] != "00:00:00:00:00:00":
                return fields[3]
        return ""

    def send(self, frames: str) -> dict:
        sent = refused = 0
        for text in frames.split(","):
            try:
                self.packet.send(bytes.fromhex(text))
                sent += 1
            except OSError:  # the kernel refuses a frame shorter than the Ethernet header
                refused += 1
        return {"sent": sent, "refused": refused}

    def ping(self, timeout: float) -> dict:
        self.ping_seq = (self.ping_seq + 1) & 0xFFFF
        body = struct.pack("!BBHHH", 8, 0, 0, self.ping_id, self.ping_seq) + _PAYLOAD
        body = body[:2] + struct.pack("!H", _checksum(body)) + body[4:]
        began = time.monotonic()
        with socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP) as sock:
            sock.sendto(body, (self.board_ip, 0))
            deadline = began + timeout
            while (left := deadline - time.monotonic()) > 0:
                if not select.select([sock], [], [], left)[0]:
                    break
                data, (source, _) = sock.recvfrom(2048)
                icmp = data[(data[0] & 0x0F) * 4:]
                if source == self.board_ip and icmp[:1] == b"\0" and icmp[4:8] == body[4:8]:
                    return {"ok": True, "ms": round((time.monotonic() - began) * 1000, 2)}
        return {"ok": False, "ms": None}

    def echo(self, timeout: float) -> dict:
        message = _PAYLOAD * 2
        try:
            with socket.create_connection((self.board_ip, self.port), timeout=timeout) as sock:
                sock.sendall(message)
                got = b""
                while len(got) < len(message):
                    chunk = sock.recv(64)
                    if not chunk:
                        break
                    got += chunk
            return {"ok": got == message, "error": "" if got == message else f"echoed {got!r}"}
        except OSError as exc:
            return {"ok": False, "error": str(exc) or type(exc).__name__}

    def open(self, timeout: float) -> dict:
        self.close()
        self._drain()
        try:
            self.conn = socket.create_connection((self.board_ip, self.port), timeout=timeout)
            self.conn.sendall(_PAYLOAD)
            got = b""
            while len(got) < len(_PAYLOAD):
                chunk = self.conn.recv(64)
                if not chunk:
                    return {"ok": False, "error": "the echo service closed the connection"}
                got += chunk
        except OSError as exc:
            return {"ok": False, "error": str(exc) or type(exc).__name__}
        self.opened = self.conn.getsockname()
        sport = self.opened[1]
        # the echo came in a segment the board sent; its ACK of our bytes may follow a moment later
        time.sleep(0.05)
        board_next = peer_next = None
        for frame in self._drain():
            segment = _tcp_from(frame, self.board_ip, self.port, sport)
            if segment is not None:
                board_next, peer_next, _flags = segment
        if board_next is None:
            return {"ok": False, "error": "no segment of the board's seen on the tap"}
        return {"ok": True, "sport": sport, "peer_next": peer_next, "board_next": board_next}

    def _drain(self) -> list[bytes]:
        frames = []
        while select.select([self.packet], [], [], 0)[0]:
            frames.append(self.packet.recv(65536))
        return frames

    def close(self) -> dict:
        if self.conn is None:
            return {"ok": True}
        sport = self.conn.getsockname()[1]
        # The fuzz may have moved the board's expected sequence number past the kernel's, and lwIP takes a reset
        # only at exactly that number. So a segment far outside its window asks the board for it (lwIP answers
        # with an ACK carrying it, or with a reset when the connection is already gone), and the reset is
        # written at that number, until the board says the connection is gone.
        gone, resets = False, 0
        for _ in range(_CLOSE_TRIES):
            self._drain()
            self.packet.send(self._segment(sport, 0x80000000, _ACK, b"?"))
            answer = self._answer_from_board(sport)
            if answer is None or answer[2] & _RST:
                gone = answer is not None
                break
            self.packet.send(self._segment(sport, answer[1], _RST))
            resets += 1
        self.conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.conn.close()
        self.conn = None
        return {"ok": gone, "resets": resets}

    def _answer_from_board(self, sport: int) -> tuple[int, int, int] | None:
        deadline = time.monotonic() + _ANSWER_S
        while (left := deadline - time.monotonic()) > 0:
            if select.select([self.packet], [], [], left)[0]:
                segment = _tcp_from(self.packet.recv(65536), self.board_ip, self.port, sport)
                if segment is not None:
                    return segment
        return None

    def _segment(self, sport: int, seq: int, flags: int, data: bytes = b"") -> bytes:
        """An Ethernet frame with a TCP segment from the peer's end of the connection (ACK field 0)."""
        assert self.opened is not None
        peer_ip, board_ip = socket.inet_aton(self.opened[0]), socket.inet_aton(self.board_ip)
        tcp = struct.pack("!HHIIBBHHH", sport, self.port, seq & 0xFFFFFFFF, 0, 5 << 4, flags, 8192, 0, 0) + data
        pseudo = peer_ip + board_ip + struct.pack("!BBH", 0, socket.IPPROTO_TCP, len(tcp))
        tcp = tcp[:16] + struct.pack("!H", _checksum(pseudo + tcp)) + tcp[18:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0, 64, socket.IPPROTO_TCP, 0, peer_ip, board_ip)
        ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
        board_mac = bytes.fromhex(self._board_mac().replace(":", ""))
        return board_mac + self.packet.getsockname()[4][:6] + struct.pack("!H", _ETH_P_IP) + ip + tcp

def _tcp_from(frame: bytes, source_ip: str, sport: int, dport: int) -> tuple[int, int, int] | None:
    """(the sender's next sequence number, its ACK, the flags) of a TCP segment source_ip:sport -> :dport."""
    if len(frame) < 34 or struct.unpack("!H", frame[12:14])[0] != _ETH_P_IP or frame[23] != socket.IPPROTO_TCP:
        return None
    ihl = (frame[14] & 0x0F) * 4
    total = struct.unpack("!H", frame[16:18])[0]
    tcp = frame[14 + ihl:14 + total]
    if socket.inet_ntoa(frame[26:30]) != source_ip or len(tcp) < 20:
        return None
    src, dst, seq, ack = struct.unpack("!HHII", tcp[:12])
    if (src, dst) != (sport, dport):
        return None
    flags = tcp[13]
    length = len(tcp) - (tcp[12] >> 4) * 4 + (flags & 0x02 and 1) + (flags & 0x01)
    return (seq + length) & 0xFFFFFFFF, ack, flags


def _checksum(data: bytes) -> int:
    data += b"\0" * (len(data) % 2)
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    return ~(total + (total >> 16)) & 0xFFFF


def _read(path: str) -> str:
    with open(path) as fh:
        return fh.read().strip()


def main(argv: list[str]) -> int:
    hands = Hands(argv[0], argv[1], int(argv[2]))
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command, _, rest = line.strip().partition(" ")
        if command == "quit":
            break
        try:
            if command in ("hello", "ping", "echo", "open"):
                answer = getattr(hands, command)(float(rest or 1.0))
            elif command == "send":
                answer = hands.send(rest)
            elif command == "close":
                answer = hands.close()
            else:
                answer = {"error": f"unknown command {command!r}"}
        except OSError as exc:
            answer = {"error": str(exc)}
        print(json.dumps(answer), flush=True)
    hands.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
