"""An in-memory transport pair, for tests and for embedding both roles in one process."""

from __future__ import annotations

from ..protocol.errors import ConnectionClosedError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE, Oversize
from .queue import MessageQueue


class MemoryTransport:
    """One end of a :func:`memory_pair`. Bounded, so a slow reader slows the writer."""

    def __init__(
        self,
        inbox: MessageQueue,
        outbox: MessageQueue,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self.max_message_size = max_message_size
        self._inbox = inbox
        self._outbox = outbox

    async def send(self, message: bytes) -> None:
        """Waits while the peer's inbox is full; fails once this end is closed."""
        if not await self._outbox.put(message):
            raise ConnectionClosedError("memory transport is closed")

    async def receive(self) -> bytes | Oversize | None:
        item = await self._inbox.get()
        if item is not None and len(item) > self.max_message_size:
            return Oversize(len(item))
        return item

    async def close(self) -> None:
        """End what this side sends: the peer reads what is queued, then end of input.

        A :meth:`send` waiting for room on this end fails at once.
        """
        self._outbox.end()


def memory_pair(
    maxsize: int = 1024,
    *,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    max_bytes: int | None = None,
) -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected transports: what one sends, the other receives.

    ``maxsize`` bounds the messages in flight each way and ``max_bytes`` (if
    given) the bytes they hold; ``max_message_size`` applies the same
    per-message limit as the stream transports.
    """
    a_to_b = MessageQueue(maxsize, max_bytes)
    b_to_a = MessageQueue(maxsize, max_bytes)
    return (
        MemoryTransport(b_to_a, a_to_b, max_message_size),
        MemoryTransport(a_to_b, b_to_a, max_message_size),
    )
