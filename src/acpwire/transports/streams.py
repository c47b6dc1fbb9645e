"""Newline-delimited JSON over a pair of asyncio streams (pipes, sockets, stdio)."""

from __future__ import annotations

import asyncio
from collections import deque

from ..protocol.errors import ConnectionClosedError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE, LineSplitter, Oversize

READ_CHUNK = 256 * 1024
WRITE_HIGH_WATER = 1024 * 1024


class StreamTransport:
    """A :class:`~acpwire.transports.base.Transport` over an asyncio reader/writer pair."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._splitter = LineSplitter(max_message_size)
        self._ready: deque[bytes | Oversize] = deque()
        self._eof = False
        self._closed = False

    async def send(self, message: bytes) -> None:
        if self._closed:
            raise ConnectionClosedError("transport is closed")
        writer = self._writer
        if writer.is_closing():
            raise ConnectionClosedError("peer stopped reading", broken=True)
        writer.write(message + b"\n")
        transport = writer.transport
        if transport.get_write_buffer_size() > WRITE_HIGH_WATER:
            try:
                await writer.drain()
            except (ConnectionError, RuntimeError) as exc:
                raise ConnectionClosedError(f"write failed: {exc}", broken=True) from exc

    async def receive(self) -> bytes | Oversize | None:
        ready = self._ready
        while not ready:
            if self._eof:
                return None
            try:
                chunk = await self._reader.read(READ_CHUNK)
            except (ConnectionError, OSError) as exc:
                raise ConnectionClosedError(f"read failed: {exc}", broken=True) from exc
            if not chunk:
                self._eof = True
                ready.extend(self._splitter.flush())
            else:
                ready.extend(self._splitter.feed(chunk))
        return ready.popleft()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        writer = self._writer
        try:
            if not writer.is_closing():
                await writer.drain()
        except (ConnectionError, RuntimeError, OSError):
            pass
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, RuntimeError, OSError):
            pass
