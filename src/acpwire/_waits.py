"""Bounded waits: :func:`within`, the package's one way to put a time limit on an await
(a test fails if ``asyncio.wait_for`` comes back into ``src/``).

``asyncio.wait_for`` wraps what it waits for in a task of its own before Python
3.12: one more turn of the event loop, and a task made and dropped, every time.
On a path taken for every message (the SSE writer waiting for its queue, a POST
body being read) that was a measurable part of a round trip. ``asyncio.timeout``
(3.11+) bounds the wait in the caller's own task instead.

On 3.10 ``asyncio.wait_for`` also loses a cancellation that arrives as the awaited
thing completes (it returns the result instead; bpo-42130): an SSE writer taken over
by a resuming client then went on writing to the dead socket and never let go of its
stream, so every resume was answered 409. 3.10 therefore waits with ``asyncio.wait``,
which lets the cancellation through.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float | None) -> T:
    """``await awaitable``, raising ``asyncio.TimeoutError`` after ``seconds`` (``None``: no bound).

    On timeout what was awaited is cancelled, and its cleanup has run when the
    ``TimeoutError`` is raised (as with ``asyncio.wait_for``); if it ends with a result
    all the same, that result is returned.
    """
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    task = asyncio.ensure_future(awaitable)
    timed_out = False
    try:
        done, _ = await asyncio.wait((task,), timeout=seconds)
        if not done:
            timed_out = task.cancel()
            await asyncio.wait((task,))
    except BaseException:  # cancelled: so is what it waited for, whether or not it is done
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: its outcome is dropped with the cancelled caller
        task.cancel()
        raise
    if timed_out and task.cancelled():
        raise asyncio.TimeoutError
    return task.result()
