"""One outgoing stream of a remote connection: its bounded queue and the log of what it wrote.

An :class:`Outbox` is behind each SSE stream (the connection stream and each
session stream) and behind a connection's WebSocket. What it keeps:

* **Bounded, with back-pressure.** Its queue holds at most
  ``Limits.queue_messages`` messages and ``queue_bytes`` bytes. A sender (the
  agent, in its own task) waits while it is full: a client that does not read
  its stream slows its own agent down, never the server. Only the last answers
  before a broken end go past the bounds (:meth:`Outbox.force`).
* **Try now, else wait**, as anyio builds ``send`` on ``send_nowait``:
  :meth:`Outbox.try_put` takes a message without waiting (written at once by a
  writer that can, :attr:`Outbox.write_now`, while nothing is queued; else
  queued if there is room), and :meth:`Outbox.put` and :meth:`Outbox.force`
  are that first, then a wait or a place past the bounds. A message is written
  at once only while nothing waits in the queue, so none overtakes another.
* **Event ids and resume.** Every message taken to be written gets the stream's
  next event id (1, 2, ...) and is kept in a log, the last ``resume_messages``
  of them within the connection's :class:`ReplayBudget` (``resume_bytes`` for
  all its streams). A client that comes back saying the last id it received
  gets the rest from the log; if the log no longer reaches back that far, the
  stream cannot be resumed (docs/remote.md, "Reconnect and resume").
* **Cursors** (``acp serve --resumable``, :attr:`Outbox.stamping`). The event
  id is then also the message's cursor, written into it as
  ``_meta["acp/cursor"]`` when it is taken (:mod:`acpwire.protocol.cursors`),
  so the log keeps, and a replay writes, each message exactly as it was first
  written. A resume names the reason it cannot be served
  (:meth:`Outbox.resume_from`).
* **One writer at a time.** A second client claiming a stream is refused,
  unless it resumes: then it takes the stream over from a writer whose client
  is gone but not yet noticed (:meth:`Outbox.attach`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

import msgspec

from .._waits import within
from ..protocol.cursors import OUTSIDE_RETENTION, UNKNOWN_CURSOR, stamp
from ..transports.queue import MessageQueue
from .limits import Limits

Replay = list[tuple[int, bytes]]
"""Messages to write again, with their event ids."""


class ReplayBudget:
    """Bytes kept for resumes by all the streams of one connection (``Limits.resume_bytes``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0


class Outbox:
    """The bounded queue behind one outgoing stream (an SSE stream, or the WebSocket),
    and the log of what it wrote, for a client that resumes it (see the module docstring)."""

    def __init__(self, limits: Limits, budget: ReplayBudget) -> None:
        self.queue = MessageQueue(limits.queue_messages, limits.queue_bytes)
        self.attached = False
        self.opened = False
        """A client has opened this stream: its session's messages come here from now on."""
        self.broken = False
        """The stream ended because the agent failed, not by choice."""
        self.last_id = 0
        """Event id of the last message taken for writing."""
        self._unsent = 0
        self._drained = asyncio.Event()
        self._drained.set()
        self._log: deque[tuple[int, bytes]] = deque()
        self._log_limit = limits.resume_messages
        self._budget = budget
        self._released = asyncio.Event()
        self._released.set()
        self._take_over = asyncio.Event()
        self.write_now: Callable[[bytes], bool] | None = None
        """Set by a writer that can write without waiting: a message put while nothing
        is queued goes to it at once (it returns ``False`` when it cannot: then queued)."""
        self.stamping = False
        """Write each message's cursor into it (``acp serve --resumable``)."""
        self.on_written: Callable[[bytes], None] | None = None
        """Told of each message taken to be written (the connection's turn tracker)."""
        self.keep: Callable[[Replay], Awaitable[None]] | None = None
        """Writes taken messages to a store every worker shares, before they are written
        to the client (:mod:`.retention`); writers call :meth:`kept`."""

    def try_put(self, message: bytes) -> bool:
        """Take ``message`` without waiting: written at once by :attr:`write_now` while
        nothing is queued, else queued if there is room. ``False``, with nothing done,
        when the queue is full or has ended."""
        queue, write_now = self.queue, self.write_now
        if write_now is not None and not queue and not queue.ended and write_now(message):
            return True
        if not queue.try_put(message):
            return False
        self._count_unsent()
        return True

    async def put(self, message: bytes) -> None:
        """:meth:`try_put`, else wait for room (a message for an ended stream is dropped)."""
        if self.try_put(message):
            return
        self._count_unsent()
        try:
            queued = await self.queue.put(message)
        except asyncio.CancelledError:
            self.mark_written()  # not queued: the sender was cancelled while the stream was full
            raise
        if not queued:
            self.mark_written()

    def force(self, message: bytes) -> None:
        """:meth:`try_put`, else queued past the bounds: the last answers before a broken end."""
        if self.try_put(message):
            return
        self._count_unsent()
        self.queue.force(message)

    def _count_unsent(self) -> None:
        self._unsent += 1
        self._drained.clear()

    def take(self, message: bytes) -> tuple[int, bytes]:
        """``message`` was taken off the queue to be written: its event id, a log entry, and
        the message to write (carrying its cursor when :attr:`stamping`)."""
        self.last_id += 1
        if self.stamping:
            with contextlib.suppress(msgspec.DecodeError):
                message = stamp(message, str(self.last_id))
        if self.on_written is not None:
            self.on_written(message)
        self._log.append((self.last_id, message))
        budget = self._budget
        budget.held += len(message)
        while self._log and (len(self._log) > self._log_limit or budget.held > budget.limit):
            _, old = self._log.popleft()
            budget.held -= len(old)
        return self.last_id, message

    async def kept(self, entries: Replay) -> None:
        """Before ``entries`` (just taken) are written: into the shared store, if any."""
        if self.keep is not None and entries:
            await self.keep(entries)

    def untake(self) -> None:
        """The message :meth:`take` just took could not be written after all: it stays
        queued and is taken again, with the same event id."""
        if self._log and self._log[-1][0] == self.last_id:
            _, message = self._log.pop()
            self._budget.held -= len(message)
        self.last_id -= 1

    def replay_after(self, last: int) -> Replay | None:
        """What was written after event ``last``; ``None`` when the log no longer has it all."""
        found = self.resume_from(last)
        return None if isinstance(found, str) else found

    def resume_from(self, last: int) -> Replay | str:
        """What was written after event ``last``, or why it cannot be had: the cursor
        names nothing written (:data:`~acpwire.protocol.cursors.UNKNOWN_CURSOR`), or the
        log no longer reaches back to it (``OUTSIDE_RETENTION``)."""
        if last < 0 or last > self.last_id:
            return UNKNOWN_CURSOR
        if last == self.last_id:
            return []
        if not self._log or self._log[0][0] > last + 1:
            return OUTSIDE_RETENTION
        return [(event_id, message) for event_id, message in self._log if event_id > last]

    def mark_written(self) -> None:
        """The stream has written one message taken from the queue."""
        self._unsent -= 1
        if self._unsent <= 0:
            self._unsent = 0
            self._drained.set()

    async def wait_drained(self) -> None:
        """Until every message queued so far has been written (or the stream ended)."""
        await self._drained.wait()

    async def attach(self, *, take_over: bool, timeout: float) -> bool:
        """Claim the stream for one writer. A resuming client takes it over from a writer
        whose client is gone but not yet noticed; otherwise a second claim is refused."""
        if self.attached:
            if not take_over:
                return False
            self._take_over.set()
            try:
                await within(self._released.wait(), timeout)
            except asyncio.TimeoutError:
                return False
        self.attached = self.opened = True
        self._released.clear()
        self._take_over.clear()
        return True

    def detach(self) -> None:
        self.attached = False
        self._released.set()

    @contextlib.asynccontextmanager
    async def writing(
        self, client: Coroutine[Any, Any, None], writer: Coroutine[Any, Any, None]
    ) -> AsyncIterator[tuple[asyncio.Task[None], asyncio.Task[None], asyncio.Task[None]]]:
        """Run ``client`` (it reads or watches the stream's client) and ``writer`` (it
        writes this stream) until one of them ends or another client takes the stream over
        (:meth:`taken_over`). Yields the three tasks, so that the caller sees which ended;
        on the way out all three are cancelled and waited for."""
        tasks = (
            asyncio.ensure_future(client),
            asyncio.ensure_future(writer),
            asyncio.ensure_future(self.taken_over()),
        )
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            yield tasks
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task

    async def taken_over(self) -> None:
        """Returns when another client has claimed the stream (the writer must stop)."""
        await self._take_over.wait()

    @property
    def claimed(self) -> bool:
        """Another client is taking the stream over: the writer stops at its next message
        even if the cancellation :meth:`taken_over` leads to never reached it."""
        return self._take_over.is_set()

    def end(self, *, broken: bool = False) -> None:
        if self.queue.ended:
            return
        self.broken = broken
        self.queue.end()
        self._drained.set()
