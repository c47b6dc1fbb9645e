"""``within``, the server's bounded wait: a bound, and never a lost cancellation."""

from __future__ import annotations

import asyncio

import pytest

from acpwire._waits import within


async def test_a_wait_past_its_bound_raises_timeout_and_one_in_time_returns() -> None:
    with pytest.raises(asyncio.TimeoutError):
        await within(asyncio.Event().wait(), 0.01)
    done = asyncio.Event()
    done.set()
    assert await within(done.wait(), 1) is True


async def test_a_cancellation_that_meets_the_wait_completing_is_not_lost() -> None:
    # The SSE writer waits for its queue with within(); a resuming client cancels it. On
    # Python 3.10 asyncio.wait_for returned the result when the wait completed in the same
    # turn as the cancel, so the writer went on and never let go of its stream (every
    # resume then got 409).
    ready = asyncio.Event()

    async def writer() -> str:
        await within(ready.wait(), 10)
        return "went on writing"

    task = asyncio.ensure_future(writer())
    await asyncio.sleep(0)  # it waits
    ready.set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_on_timeout_what_was_awaited_has_cleaned_up_before_the_timeout_is_raised() -> None:
    # As asyncio.wait_for does: callers go on (close a pipe, terminate a process) only once
    # the cancelled work has let go of what it held, on every Python version.
    cleaned = []

    async def work() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # cleanup that takes a step of its own
            cleaned.append(True)

    with pytest.raises(asyncio.TimeoutError):
        await within(work(), 0.01)
    assert cleaned == [True]


async def test_work_that_ends_with_a_result_despite_the_timeout_returns_it() -> None:
    async def stubborn() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "finished anyway"
        return "unreachable"

    assert await within(stubborn(), 0.01) == "finished anyway"
