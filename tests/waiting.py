"""How the suite waits: one bound for every wait, and one helper for conditions nothing signals.

A test waits for what it needs to have happened (an ``asyncio.Event``, a reply, a process's
exit, a line in a log) and bounds that wait by :data:`TIMEOUT`; it never sleeps and hopes.
A sleep used as a barrier passes on an idle machine and, on a loaded one, can let a test
pass without reaching the case it is about. Where nothing signals the condition (a process's
open descriptors, a file another process writes), :func:`wait_until` polls it, under the
same bound.

``TIMEOUT`` only turns a hang into a failure with a message: no test asserts that anything
took less than it, so a slow machine may raise it (``ACPWIRE_TEST_TIMEOUT=120 bin/test``)
without changing what passes. The few bounds that differ on purpose say why where they are
set. (``pytest-timeout``'s 180 s per test, in pyproject.toml, is the last resort above it.)
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from acpwire._waits import within

T = TypeVar("T")

TIMEOUT = float(os.environ.get("ACPWIRE_TEST_TIMEOUT", "30"))
"""Seconds any one wait may take before the test fails (``$ACPWIRE_TEST_TIMEOUT``)."""

POLL = 0.01
"""Seconds between two looks at a condition: nothing next to TIMEOUT, and the loop stays free."""


async def wait_until(condition: Callable[[], T | Awaitable[T]], what: str) -> T:
    """Look at ``condition()`` (a value, or an awaitable of one) every POLL seconds until
    it is true, and return it; after TIMEOUT the test fails, naming ``what`` it waited for."""

    async def poll() -> T:
        while True:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            await asyncio.sleep(POLL)

    try:
        return await within(poll(), TIMEOUT)
    except asyncio.TimeoutError:
        pass
    pytest.fail(f"gave up after {TIMEOUT:g} s waiting for: {what}")
