"""Newline-delimited framing (sans-IO).

ACP over stdio carries one JSON-RPC message per line, terminated by ``\\n``
(transports.mdx). Only ``\\n`` ends a message: JSON text may legally contain
U+2028/U+2029 and ``\\r`` is whitespace to the JSON parser, so neither is
treated as a separator. A line longer than ``max_size`` bytes is skipped up to
its terminating newline and reported, so one oversize message costs that
message and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024
"""Default upper bound for one message, in bytes (64 MiB)."""


@dataclass(frozen=True, slots=True)
class Oversize:
    """A line that exceeded the size limit and was dropped; ``size`` is how much was seen."""

    size: int


class LineSplitter:
    """Feed bytes in, get complete lines (without the ``\\n``) out."""

    __slots__ = ("_buffer", "_discarded", "_discarding", "max_size")

    def __init__(self, max_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self.max_size = max_size
        self._buffer = bytearray()
        self._discarding = False
        self._discarded = 0

    def feed(self, data: bytes) -> list[bytes | Oversize]:
        """Add ``data``; return every message it completes, in order."""
        out: list[bytes | Oversize] = []
        start = 0
        if self._discarding:
            nl = data.find(b"\n")
            if nl < 0:
                self._discarded += len(data)
                return out
            out.append(Oversize(self._discarded + nl))
            self._discarding = False
            self._discarded = 0
            start = nl + 1
        buf = self._buffer
        if buf:
            nl = data.find(b"\n", start)
            if nl < 0:
                buf += data[start:] if start else data
                self._check_overflow(out)
                return out
            buf += data[start:nl]
            line = bytes(buf)
            buf.clear()
            self._emit(line, out)
            start = nl + 1
        last = data.rfind(b"\n")
        if last >= start:
            # Every complete line at once (a read holds hundreds of them): split in C,
            # and go line by line only for empty or oversize ones.
            lines = data[start:last].split(b"\n")
            if all(lines) and max(map(len, lines)) <= self.max_size:
                out += lines
            else:
                max_size = self.max_size
                for line in lines:
                    if len(line) > max_size:
                        out.append(Oversize(len(line)))
                    elif line:
                        out.append(line)
            start = last + 1
        if start < len(data):
            buf += data[start:]
            self._check_overflow(out)
        return out

    def _emit(self, line: bytes, out: list[bytes | Oversize]) -> None:
        if len(line) > self.max_size:
            out.append(Oversize(len(line)))
        elif line:
            out.append(line)

    def _check_overflow(self, out: list[bytes | Oversize]) -> None:
        if len(self._buffer) > self.max_size:
            self._discarding = True
            self._discarded = len(self._buffer)
            self._buffer.clear()

    def flush(self) -> list[bytes | Oversize]:
        """At end of input: a final unterminated line, if any, counts as a message."""
        out: list[bytes | Oversize] = []
        if self._discarding:
            out.append(Oversize(self._discarded))
        elif self._buffer.strip():
            self._emit(bytes(self._buffer), out)
        self._buffer.clear()
        self._discarding = False
        self._discarded = 0
        return out

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete line."""
        return len(self._buffer)
