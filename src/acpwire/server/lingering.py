"""A lingering close for connections served as stream pairs (hypercorn's).

When hypercorn closes a connection whose client is still sending (a body refused with
413 or 401 before it was read), a plain close would send a reset, which can destroy the
answer before the client reads it. Here the socket is half-closed instead, and what
still comes in is read and dropped until the client closes too, for at most
:data:`LINGER` seconds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

LINGER = 2.0
"""Seconds a closed connection whose client is still sending is read (and what is read
dropped) before its socket closes; Apache's lingering close waits as long."""


class LingeringStream(asyncio.StreamReaderProtocol):
    """A connection served as a stream pair (by hypercorn); closed by lingering (see
    :class:`Lingering`). ``gone`` is called once the socket is."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        socket: asyncio.Transport,
        serve: Callable[[asyncio.StreamReader, asyncio.StreamWriter], None],
        gone: Callable[[], None],
    ) -> None:
        super().__init__(reader, serve)
        self.socket = socket
        self._gone = gone
        self.lingering = False
        self.client_done = False
        """The client has sent its end of stream."""
        self._timer: asyncio.TimerHandle | None = None

    def linger(self) -> None:
        """Close the connection once the client has stopped sending (LINGER s at most)."""
        socket = self.socket
        if self.lingering or socket.is_closing():
            return
        if self.client_done:
            socket.close()
            return
        self.lingering = True
        if socket.can_write_eof():  # TLS cannot half-close: it only reads on
            socket.write_eof()
        socket.resume_reading()
        self._timer = asyncio.get_running_loop().call_later(LINGER, socket.close)

    def data_received(self, data: bytes) -> None:
        if not self.lingering:
            super().data_received(data)

    def eof_received(self) -> bool:
        self.client_done = True
        if self.lingering:
            return False  # the transport closes
        return bool(super().eof_received())

    def connection_lost(self, exc: Exception | None) -> None:
        self.socket.close()  # hypercorn may not: its client went first (Python 3.10's TLS
        # transport then does not say it is closing, and lingering on it would raise)
        if self._timer is not None:
            self._timer.cancel()
        self._gone()
        super().connection_lost(exc)


class Lingering(asyncio.Transport):
    """The socket as hypercorn sees it: the same, except that closing it lingers.

    Closing a socket that still has unread data in it sends a reset instead of the end
    of stream, and a reset can reach the client before it has read the answer (a 413
    for a body it is still sending looked like a network error). So ``close`` sends the
    end of stream after what was written, then reads and drops what the client still
    sends until it closes too, for at most :data:`LINGER` seconds.
    """

    def __init__(self, socket: asyncio.Transport, stream: LingeringStream) -> None:
        super().__init__()
        self._socket = socket
        self._stream = stream

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._socket.get_extra_info(name, default)

    def is_closing(self) -> bool:
        return self._stream.lingering or self._socket.is_closing()

    def close(self) -> None:
        self._stream.linger()

    def abort(self) -> None:
        self._socket.abort()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._socket.write(data)

    def writelines(self, list_of_data: Any) -> None:
        self._socket.writelines(list_of_data)

    def write_eof(self) -> None:
        self._socket.write_eof()

    def can_write_eof(self) -> bool:
        return self._socket.can_write_eof()

    def is_reading(self) -> bool:
        return self._socket.is_reading()

    def pause_reading(self) -> None:
        if not self._stream.lingering:
            self._socket.pause_reading()

    def resume_reading(self) -> None:
        self._socket.resume_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._socket.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._socket.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._socket.get_write_buffer_limits()
