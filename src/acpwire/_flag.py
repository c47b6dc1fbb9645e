"""A cheaper :class:`asyncio.Event` for the paths every message takes."""

from __future__ import annotations

import asyncio


class Flag:
    """:class:`asyncio.Event`'s ``set``/``clear``/``is_set``/``wait``, bound to the loop
    of its first wait.

    ``asyncio.Event.wait`` looks the running loop up each time, and before Python 3.12
    that lookup is a ``getpid`` system call (it checks the loop belongs to this
    process). The engine and the message queues wait once per message or burst, so
    those waits use this; like ``asyncio.Event`` it must stay on one loop.
    """

    __slots__ = ("_loop", "_value", "_waiters")

    def __init__(self) -> None:
        self._value = False
        self._waiters: list[asyncio.Future[None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def is_set(self) -> bool:
        return self._value

    def set(self) -> None:
        if not self._value:
            self._value = True
            for waiter in self._waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def clear(self) -> None:
        self._value = False

    async def wait(self) -> None:
        if self._value:
            return
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            self._waiters.remove(waiter)
