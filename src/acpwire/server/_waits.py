"""Bounded waits without an extra task.

``asyncio.wait_for`` wraps what it waits for in a task of its own before Python
3.12: one more turn of the event loop, and a task made and dropped, every time.
On a path taken for every message (the SSE writer waiting for its queue, a POST
body being read) that was a measurable part of a round trip. ``asyncio.timeout``
(3.11+) bounds the wait in the caller's own task instead.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float | None) -> T:
    """``await awaitable``, raising ``asyncio.TimeoutError`` after ``seconds`` (``None``: no bound)."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await awaitable
    return await asyncio.wait_for(awaitable, seconds)
