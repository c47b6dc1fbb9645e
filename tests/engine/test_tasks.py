"""``TaskSet``, every owner's background tasks: errors logged once, close cancels and
waits (bounded), nothing spawned into a closed set runs."""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

import pytest

from acpwire._tasks import TaskSet
from acpwire._waits import within

log = logging.getLogger("tests.tasks")


async def test_an_exception_is_logged_once_with_the_owners_logger_and_the_tasks_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # What reaches the loop's exception handler ("Task exception was never retrieved").
    loop_errors: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: loop_errors.append(context))
    tasks = TaskSet(log)

    async def fails() -> None:
        raise ValueError("boom")

    with caplog.at_level(logging.ERROR, logger="tests.tasks"):
        task = tasks.spawn(fails(), name="the failing one")
        del task
        await tasks.wait(5)
        await asyncio.sleep(0)  # the done callback has run
        await tasks.aclose()
    gc.collect()
    records = [r for r in caplog.records if r.name == "tests.tasks"]
    assert len(records) == 1
    assert "the failing one" in records[0].getMessage()
    assert records[0].exc_info is not None and isinstance(records[0].exc_info[1], ValueError)
    assert not loop_errors  # retrieved: no "never retrieved" when it is collected
    assert len(tasks) == 0


async def test_a_cancelled_task_is_not_an_error(caplog: pytest.LogCaptureFixture) -> None:
    tasks = TaskSet(log)
    task = tasks.spawn(asyncio.Event().wait())
    await asyncio.sleep(0)
    task.cancel()
    await tasks.wait(5)
    assert not [r for r in caplog.records if r.name == "tests.tasks"]


async def test_aclose_cancels_every_task_and_waits_for_its_cleanup() -> None:
    tasks = TaskSet(log)
    cleaned: list[int] = []

    async def work(n: int) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # cleanup that takes a step of its own
            cleaned.append(n)

    for n in range(3):
        tasks.spawn(work(n))
    await asyncio.sleep(0)
    assert len(tasks) == 3
    await tasks.aclose()
    assert sorted(cleaned) == [0, 1, 2]
    assert len(tasks) == 0
    await tasks.aclose()  # again: nothing to do, no error


async def test_aclose_is_bounded_for_a_task_that_ignores_its_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = TaskSet(log)
    release = asyncio.Event()

    async def stubborn() -> None:
        while not release.is_set():
            try:
                await release.wait()
            except asyncio.CancelledError:
                continue

    task = tasks.spawn(stubborn(), name="stubborn")
    await asyncio.sleep(0)
    with caplog.at_level(logging.WARNING, logger="tests.tasks"):
        await tasks.aclose(timeout=0.05)
    assert not task.done()
    assert any("stubborn" in r.getMessage() for r in caplog.records if r.name == "tests.tasks")
    release.set()
    await task


async def test_a_task_spawned_while_or_after_the_set_closes_never_runs() -> None:
    tasks = TaskSet(log)
    ran: list[str] = []

    async def body(label: str) -> None:
        ran.append(label)

    async def spawns_on_cancel() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            late = tasks.spawn(body("during close"))
            spawned.append(late)
            raise

    spawned: list[asyncio.Task[None]] = []
    tasks.spawn(spawns_on_cancel())
    await asyncio.sleep(0)
    await tasks.aclose()
    assert len(spawned) == 1 and spawned[0].cancelled()  # aclose waited for it too
    after = tasks.spawn(body("after close"))
    with pytest.raises(asyncio.CancelledError):
        await after
    assert ran == []
    assert len(tasks) == 0


async def test_aclose_from_one_of_its_own_tasks_does_not_wait_for_itself(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = TaskSet(log)
    other = tasks.spawn(asyncio.Event().wait())

    async def closer() -> str:
        await tasks.aclose()
        return "closed"

    me = tasks.spawn(closer())
    assert await within(asyncio.shield(me), 5) == "closed"
    assert other.cancelled()
    assert not [r for r in caplog.records if r.name == "tests.tasks"]  # nothing left running


async def test_wait_does_not_cancel_and_waits_for_tasks_spawned_meanwhile() -> None:
    tasks = TaskSet(log)
    first_done = asyncio.Event()
    order: list[str] = []

    async def second() -> None:
        await asyncio.sleep(0)
        order.append("second")

    async def first() -> None:
        await first_done.wait()
        tasks.spawn(second())
        order.append("first")

    tasks.spawn(first())
    waiting = asyncio.ensure_future(tasks.wait(5))
    await asyncio.sleep(0)
    assert not waiting.done()
    first_done.set()
    assert await waiting is True
    assert order == ["first", "second"]
    assert await tasks.wait(0) is True
    assert not tasks.closed


async def test_wait_gives_up_after_its_timeout() -> None:
    tasks = TaskSet(log)
    task = tasks.spawn(asyncio.Event().wait())
    assert await tasks.wait(0.01) is False
    assert not task.done()
    await tasks.aclose()
    assert task.cancelled()
