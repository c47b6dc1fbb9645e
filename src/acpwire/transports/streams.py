"""Newline-delimited JSON over a pair of asyncio streams (pipes, sockets, stdio)."""

from __future__ import annotations

import asyncio
from collections import deque

from ..protocol.errors import ConnectionClosedError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE, LineSplitter, Oversize

READ_CHUNK = 256 * 1024
READ_LIMIT = 1024 * 1024
"""The ``limit`` of a stream's :class:`asyncio.StreamReader`: asyncio stops reading the
pipe once twice this much waits unread, so a connection that stopped reading (its
handlers are behind, see the engine's back-pressure) stops taking the peer's bytes
too, and the peer's writes wait. Only ``read()`` is used on it, so the limit bounds
no message: a longer line arrives in pieces, as any line may."""
WRITE_HIGH_WATER = 1024 * 1024
COALESCE_LIMIT = 64 * 1024
"""Bytes of a burst held back before they are handed to the OS in one write."""


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
        # Write coalescing: the first message of a loop iteration goes to the OS at
        # once (no added latency); the ones that follow it in the same iteration
        # (a burst of session/update, say) are joined here and handed over in one
        # write at the end of the iteration, or as soon as COALESCE_LIMIT bytes are
        # held, instead of one system call each. Order is kept: nothing is written
        # directly while bytes are held.
        self._held = bytearray()
        self._burst = False
        self._write_error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def send(self, message: bytes) -> None:
        if self._closed:
            raise ConnectionClosedError("transport is closed")
        if self._write_error is not None:
            raise ConnectionClosedError(f"write failed: {self._write_error}", broken=True)
        if self._burst:
            # The hot path of a stream: hold the message. A peer that stopped reading
            # is noticed when the held bytes are written (below, or by _end_burst).
            held = self._held
            held += message
            held += b"\n"
            if len(held) < COALESCE_LIMIT:
                return
            writer = self._writer
            if writer.is_closing():
                raise ConnectionClosedError("peer stopped reading", broken=True)
            writer.write(bytes(held))
            held.clear()
        else:
            writer = self._writer
            if writer.is_closing():
                raise ConnectionClosedError("peer stopped reading", broken=True)
            writer.write(message + b"\n")
            self._burst = True
            loop = self._loop
            if loop is None:  # cached: get_running_loop() costs a getpid() system call
                loop = self._loop = asyncio.get_running_loop()
            loop.call_soon(self._end_burst)
        if writer.transport.get_write_buffer_size() > WRITE_HIGH_WATER:
            try:
                await writer.drain()
            except (ConnectionError, RuntimeError) as exc:
                raise ConnectionClosedError(f"write failed: {exc}", broken=True) from exc

    def _end_burst(self) -> None:
        self._burst = False
        if self._held:
            data = bytes(self._held)
            self._held.clear()
            if self._writer.is_closing():
                self._write_error = ConnectionError("peer stopped reading")  # for the next send()
                return
            try:
                self._writer.write(data)
            except (ConnectionError, OSError, RuntimeError) as exc:
                self._write_error = exc  # raised by the next send()

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

    def take_ready(self) -> list[bytes | Oversize]:
        """The messages already read and split, without waiting (transports/base.py)."""
        ready = self._ready
        if not ready:
            return []
        taken = list(ready)
        ready.clear()
        return taken

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        writer = self._writer
        self._end_burst()
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
