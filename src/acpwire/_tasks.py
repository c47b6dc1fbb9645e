"""Background tasks with one owner: :class:`TaskSet`.

asyncio keeps only a weak reference to a task, so a task nobody holds can vanish
mid-run, and an exception nobody retrieves surfaces (if ever) as "Task exception was
never retrieved" when it is collected. Every owner of background work (a connection's
``$/cancel_request`` sends, the HTTP/2 client's flushes, the server's connection
terminations, ...) holds its tasks in a TaskSet, which enforces:

* A spawned task is referenced until it ends, and then forgotten.
* A task that ends with an exception is logged once, at error level, with the owner's
  logger and the task's name. A cancelled task is not an error.
* :meth:`TaskSet.aclose` cancels every task and waits for them, at most ``timeout``
  seconds (a task that swallows its cancellation is logged, not waited for forever);
  it may be called again. A task spawned while or after the set closes is cancelled
  before it runs.
* :meth:`TaskSet.wait` waits without cancelling, for owners whose tasks must run to
  their end (a terminal's kill and reap).
* Neither waits for the task it is called from.

When its set closes is each owner's decision (its ``close``/``aclose``); an owner
whose tasks end by themselves with what they serve may never close it, and says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

CLOSE_TIMEOUT = 5.0
"""How long :meth:`TaskSet.aclose` waits for cancelled tasks. Cancelled tasks normally
end at their next step; one still running after this holds on to its cancellation (a
shielded wait, a suppressed ``CancelledError``), and the owner's close must not hang on
it."""


class TaskSet:
    """The background tasks of one owner (see the module's rules)."""

    __slots__ = ("_closed", "_log", "_tasks")

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    def __len__(self) -> int:
        """How many tasks are running."""
        return len(self._tasks)

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        """The running tasks (a snapshot: the set may change while it is iterated)."""
        return iter(list(self._tasks))

    @property
    def closed(self) -> bool:
        return self._closed

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str | None = None) -> asyncio.Task[T]:
        """Run ``coro`` in a task of its own, named ``name`` (default: the coroutine's
        name); after :meth:`aclose` the task is cancelled before it runs."""
        name = name or getattr(coro, "__qualname__", None)
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        if self._closed:
            task.cancel()
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            self._log.error("background task %s failed", task.get_name(), exc_info=error)

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait, without cancelling, until every task has ended, those spawned meanwhile
        too, or ``timeout`` seconds passed (``None``: no bound). True when none is left."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        current = asyncio.current_task()
        while True:
            running = [t for t in self._tasks if t is not current and not t.done()]
            if not running:
                return True
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return False
            await asyncio.wait(running, timeout=remaining)

    async def aclose(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Cancel every task and wait for them, at most ``timeout`` seconds; from now
        on a spawned task is cancelled at once. Safe to call again."""
        self._closed = True
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        if not await self.wait(timeout):
            left = sorted(t.get_name() for t in self._tasks if t is not current and not t.done())
            self._log.warning(
                "background tasks still running %g s after being cancelled: %s",
                timeout,
                ", ".join(left),
            )
