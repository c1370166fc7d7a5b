"""A block of tshark's lines read as numpy columns at once, not split into a list of strings per row.

Splitting a line into its 40 fields and converting each costs ~15 µs a row in Python; here a block (about
a megabyte, thousands of lines) is one byte array: the separators' offsets give every field's start and
end, and each numeric field is read for all lines at once from its digits. The numbers are the very ones
Python's ``int``/``float`` give on the same text: integers digit by digit, decimals as their digits
(an exact integer below 2**53) divided by a power of ten (exact too), one correctly rounded division, as
``float`` rounds the decimal text. Whatever is not a plain number (a sign, an exponent, too many digits)
makes ``Parsed.of`` say None, and the block is read row by row instead (``scan.CaptureScan.add``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.analysis.capture import COLUMN, FIELDS, Row

_PAD = 32  # zero bytes before the block: a field's digits are gathered right-aligned, up to this many before it
_DIGIT = np.full(256, 255, np.uint8)
_DIGIT[48:58] = np.arange(10)
_HEX = _DIGIT.copy()
_HEX[97:103] = np.arange(10, 16)
_HEX[65:71] = np.arange(10, 16)
_POW10 = np.array([float(10**k) for k in range(23)])  # exact
_MAX_DIGITS = 15  # below 2**53: an exact float
_C = COLUMN

_FLAGS = ("sack_perm", "tsval", "retrans", "fast", "spurious", "dupack", "zerowin", "winfull", "ooo", "lost",
          "keepalive", "zwp")  # one bit each: the field was present (non-empty)
# further bits: which side sent the frame, and what was in the frame besides the flags above; the TCP flags
# (12 bits) above those: one 4-byte column holds them all
SIDE, SCALE_UNKNOWN, HAS_TSECR, HAS_BIF, HAS_ACK_RTT = 1 << 12, 1 << 13, 1 << 14, 1 << 15, 1 << 16
FLAGS_SHIFT = 17
BIT = {name: 1 << k for k, name in enumerate(_FLAGS)}
FLAG_COLUMNS = tuple((COLUMN[name], 1 << k) for k, name in enumerate(_FLAGS))


@dataclass
class Lines:
    """A block of whole lines, each of ``len(FIELDS)`` fields: where each field starts and ends in ``buf``."""

    block: bytes
    buf: np.ndarray
    starts: np.ndarray  # (lines, fields) offsets in buf
    ends: np.ndarray

    @classmethod
    def of(cls, block: bytes) -> Lines | None:
        """The block's fields; None unless every line has them all (empty lines, a stray tab)."""
        buf = np.frombuffer(bytes(_PAD) + block, np.uint8)
        sep = np.flatnonzero((buf == 9) | (buf == 10))
        width = len(FIELDS)
        if not len(sep) or len(sep) % width or buf[-1] != 10:
            return None
        ends = sep.reshape(-1, width)
        if np.count_nonzero(buf[sep] == 10) != len(ends) or not np.all(buf[ends[:, -1]] == 10):
            return None
        starts = np.empty_like(ends)
        starts.flat[0] = _PAD
        starts.flat[1:] = sep[:-1] + 1
        return cls(block, buf, starts, ends)

    def __len__(self) -> int:
        return len(self.ends)

    def lengths(self, k: int, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        return self.ends[rows, k] - self.starts[rows, k]

    def present(self, k: int, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        return self.ends[rows, k] > self.starts[rows, k]

    def row(self, i: int) -> Row:
        """Line i as ``capture.block_rows`` splits it."""
        return self.block[self.starts[i, 0] - _PAD:self.ends[i, -1] - _PAD].decode("utf-8", "replace").split("\t")

    def text(self, i: int, k: int) -> str:
        return self.block[self.starts[i, k] - _PAD:self.ends[i, k] - _PAD].decode("utf-8", "replace")

    def _window(self, k: int, rows, width: int) -> tuple[np.ndarray, np.ndarray]:
        """The last `width` bytes up to each field's end, and which of them belong to the field."""
        pos = np.arange(width)
        chars = self.buf[self.ends[rows, k][:, None] - width + pos]
        return chars, pos >= (width - self.lengths(k, rows))[:, None]

    def number(self, k: int, rows=slice(None), hexadecimal: bool = False) -> np.ndarray | None:
        """``int(text)`` (``int(text, 16)`` of "0x..." text) of each field as int64, 0 where empty; None if a
        field is not plain digits."""
        lengths = self.lengths(k, rows)
        width = int(lengths.max()) if len(lengths) else 0
        if not width:
            return np.zeros(len(lengths), np.int64)
        if width > _MAX_DIGITS + 2 * hexadecimal:
            return None
        chars, inside = self._window(k, rows, width)
        table, base = (_HEX, 16) if hexadecimal else (_DIGIT, 10)
        if hexadecimal:  # "0x" then the digits
            head = np.minimum(self.starts[rows, k], len(self.buf) - 2)
            given = lengths > 0
            if np.any(given & ((lengths < 3) | (self.buf[head] != 48) | (self.buf[head + 1] != 120))):
                return None
            inside &= np.arange(width) >= (width - lengths + 2)[:, None]
        digits = table[chars]
        if np.any(inside & (digits == 255)):
            return None
        weights = base ** np.arange(width - 1, -1, -1, dtype=np.int64)
        return np.where(inside, digits, 0).astype(np.int64) @ weights

    def decimal(self, k: int, rows=slice(None)) -> np.ndarray | None:
        """``float(text)`` of each field ("123.456789"), NaN where empty; None if one is not of that form."""
        parts = self.decimal_parts(k, rows)
        if parts is None:
            return None
        mantissa, decimals, given = parts
        out = np.full(len(given), np.nan)
        out[given] = mantissa[given].astype(np.float64) / _POW10[decimals[given]]
        return out

    def nanoseconds(self, k: int, rows=slice(None)) -> np.ndarray | None:
        """Each field (a time) in whole nanoseconds where it has nine decimals, else -1; None as ``decimal``."""
        parts = self.decimal_parts(k, rows)
        if parts is None:
            return None
        mantissa, decimals, given = parts
        return np.where(given & (decimals == 9), mantissa, -1)

    def decimal_parts(self, k: int, rows=slice(None)) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Each field's digits as one integer (below 2**53), its number of decimals, and whether it is given."""
        lengths = self.lengths(k, rows)
        width = int(lengths.max()) if len(lengths) else 0
        if not width:
            zeros = np.zeros(len(lengths), np.int64)
            return zeros, zeros, zeros != 0
        if width > _MAX_DIGITS + 1:
            return None
        chars, inside = self._window(k, rows, width)
        dot = inside & (chars == 46)
        given = lengths > 0
        if np.any(np.count_nonzero(dot, axis=1) != given) or np.any(given & (lengths < 2)):
            return None  # one dot and a digit in each: what tshark writes for times
        digits = _DIGIT[chars]
        figures = inside & ~dot
        if np.any(figures & (digits == 255)):
            return None
        pos = np.arange(width)
        at = np.argmax(dot, axis=1)  # the dot's place in the window
        exponent = (width - 1 - pos)[None, :] - (pos[None, :] < at[:, None])
        mantissa = (np.where(figures, digits, 0).astype(np.int64) * 10 ** exponent).sum(axis=1)
        return mantissa, width - 1 - at, given

    def equals(self, k: int, text: str, rows: np.ndarray) -> np.ndarray:
        """Whether field k of each of `rows` is `text`."""
        want = np.frombuffer(text.encode(), np.uint8)
        same = self.lengths(k, rows) == len(want)
        if not len(want) or not same.any():
            return same
        at = np.minimum(self.starts[rows, k][:, None] + np.arange(len(want)), len(self.buf) - 1)
        return same & np.all(self.buf[at] == want, axis=1)


@dataclass
class Parsed:
    """The numeric fields the scan keeps, for every line of a block; 0 (NaN for times) where empty."""

    stream: np.ndarray
    has_stream: np.ndarray
    sport: np.ndarray
    caplen: np.ndarray
    flen: np.ndarray
    t: np.ndarray
    t_ns: np.ndarray         # the time in nanoseconds (-1 where it is not nine decimals)
    flags: np.ndarray
    seq: np.ndarray
    ack: np.ndarray
    len: np.ndarray          # TCP payload
    nxtseq: np.ndarray
    has_nxtseq: np.ndarray
    win: np.ndarray
    tsval: np.ndarray
    tsecr: np.ndarray
    bif: np.ndarray
    ack_rtt: np.ndarray
    bits: np.ndarray         # scan's bits, but the side's

    @classmethod
    def of(cls, lines: Lines) -> Parsed | None:
        names = ("stream", "sport", "caplen", "len", "seq", "ack", "tcplen", "nxtseq", "win", "tsval", "tsecr", "bif")
        ints = {name: lines.number(_C[name]) for name in names}
        flags = lines.number(_C["flags"], hexadecimal=True)
        t, ack_rtt = lines.decimal(_C["t"]), lines.decimal(_C["ack_rtt"])
        t_ns = lines.nanoseconds(_C["t"])
        if flags is None or t is None or t_ns is None or ack_rtt is None or any(v is None for v in ints.values()):
            return None
        if not np.all(lines.present(_C["len"])):
            return None  # a frame without its length: the rows' reading says what it makes of it
        bits = flags << FLAGS_SHIFT
        for column, bit in FLAG_COLUMNS:
            bits |= np.where(lines.present(column), bit, 0)
        bits |= np.where(lines.equals(_C["scale"], "-1", slice(None)), SCALE_UNKNOWN, 0)
        bits |= np.where(lines.present(_C["tsecr"]), HAS_TSECR, 0) | np.where(lines.present(_C["bif"]), HAS_BIF, 0)
        bits |= np.where(np.isnan(ack_rtt), 0, HAS_ACK_RTT)
        i = ints
        return cls(i["stream"], lines.present(_C["stream"]), i["sport"], i["caplen"], i["len"], t, t_ns, flags,
                   i["seq"], i["ack"], i["tcplen"], i["nxtseq"], lines.present(_C["nxtseq"]), i["win"], i["tsval"],
                   i["tsecr"], i["bif"], ack_rtt, bits)

    def first_rows(self, rows: np.ndarray) -> np.ndarray:
        """Of `rows` (in order), the first of each stream."""
        _, first = np.unique(self.stream[rows], return_index=True)
        return rows[first]


def icmp_rows(lines: Lines) -> np.ndarray:
    """Lines with "icmp" anywhere (its protocols, a TCP header inside an ICMP error): read row by row."""
    found, at = [], lines.block.find(b"icmp")
    while at >= 0:
        found.append(at + _PAD)
        at = lines.block.find(b"icmp", at + 1)
    return np.unique(np.searchsorted(lines.ends[:, -1], np.array(found, np.int64)))
