"""An in-memory transport pair, for tests and for embedding both roles in one process."""

from __future__ import annotations

import asyncio

from ..protocol.errors import ConnectionClosedError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE, Oversize

_EOF = None


class MemoryTransport:
    """One end of a :func:`memory_pair`. Bounded, so a slow reader slows the writer."""

    def __init__(
        self,
        inbox: asyncio.Queue[bytes | None],
        outbox: asyncio.Queue[bytes | None],
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self.max_message_size = max_message_size
        self._inbox = inbox
        self._outbox = outbox
        self._closed = False
        self._eof = False

    async def send(self, message: bytes) -> None:
        if self._closed:
            raise ConnectionClosedError("memory transport is closed")
        await self._outbox.put(message)

    async def receive(self) -> bytes | Oversize | None:
        if self._eof:
            return None
        item = await self._inbox.get()
        if item is None:  # _EOF
            self._eof = True
        elif len(item) > self.max_message_size:
            return Oversize(len(item))
        return item

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._outbox.put_nowait(_EOF)
        except asyncio.QueueFull:
            # The peer is not reading; make room for the end marker.
            self._outbox.get_nowait()
            self._outbox.put_nowait(_EOF)


def memory_pair(
    maxsize: int = 1024, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
) -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives.

    ``maxsize`` bounds the messages in flight each way; ``max_message_size``
    applies the same per-message limit as the stream transports.
    """
    a_to_b: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize)
    b_to_a: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize)
    return (
        MemoryTransport(b_to_a, a_to_b, max_message_size),
        MemoryTransport(a_to_b, b_to_a, max_message_size),
    )
