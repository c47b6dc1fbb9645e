"""A queue of messages bounded by count *and* by bytes, that can be ended.

``asyncio.Queue(maxsize)`` bounds how many messages wait, not how much memory
they hold: 256 messages of 64 MiB each is 16 GiB. :class:`MessageQueue` also
bounds the bytes held; one message larger than the byte bound is still
admitted when the queue is empty, so a single large message cannot wedge a
connection. Ending the queue wakes every waiter at once: waiting writers are
refused (``put`` returns ``False``) and readers drain what is left, then get
``None``.
"""

from __future__ import annotations

from collections import deque

from .._flag import Flag


class MessageQueue:
    """FIFO of ``bytes`` with two bounds (messages, bytes) and an end marker."""

    def __init__(self, max_messages: int, max_bytes: int | None = None) -> None:
        if max_messages < 1:
            raise ValueError("max_messages must be at least 1")
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self._items: deque[bytes] = deque()
        self._bytes = 0
        self._ended = False
        self._readable = Flag()
        self._writable = Flag()
        self._writable.set()

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        """Bytes held right now."""
        return self._bytes

    @property
    def ended(self) -> bool:
        return self._ended

    def _has_room(self, size: int) -> bool:
        if not self._items:
            return True
        if len(self._items) >= self.max_messages:
            return False
        return self.max_bytes is None or self._bytes + size <= self.max_bytes

    async def put(self, message: bytes) -> bool:
        """Append ``message``, waiting for room; ``False`` if the queue ended first."""
        while not self._ended and not self._has_room(len(message)):
            self._writable.clear()
            await self._writable.wait()
        if self._ended:
            return False
        self.force(message)
        return True

    def has_room(self, size: int) -> bool:
        """Whether :meth:`try_put` would take a message of ``size`` bytes now."""
        return not self._ended and self._has_room(size)

    def try_put(self, message: bytes) -> bool:
        """Append ``message`` if there is room now; ``False`` (nothing queued) if there is
        none or the queue has ended: then :meth:`put` waits or refuses."""
        if not self.has_room(len(message)):
            return False
        self.force(message)
        return True

    def force(self, message: bytes) -> None:
        """Append ``message`` now, past the bounds (for the few last words of an ending stream)."""
        self._items.append(message)
        self._bytes += len(message)
        self._readable.set()

    async def get(self) -> bytes | None:
        """The next message; ``None`` once the queue has ended and is empty. Cancel-safe."""
        while not self._items:
            if self._ended:
                return None
            self._readable.clear()
            await self._readable.wait()
        message = self._items.popleft()
        self._bytes -= len(message)
        self._writable.set()
        return message

    async def readable(self) -> None:
        """Wait until :meth:`get` would return at once (a message, or the end), taking
        nothing: unlike ``wait_for(get(), t)`` on Python < 3.12, a timeout or a cancel
        here never loses a message."""
        while not self._items and not self._ended:
            self._readable.clear()
            await self._readable.wait()

    def end(self) -> None:
        """No more messages: writers are refused, readers drain and then get ``None``."""
        self._ended = True
        self._readable.set()
        self._writable.set()
