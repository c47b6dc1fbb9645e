"""Write-behind history: what turns send is recorded in memory and committed in batches.

Writing each ``session/update`` to the store as it is sent costs a store round
trip per update (with SQLite, a hop to its worker thread and a transaction;
with PostgreSQL, a network round trip), far more than sending it. So an app's
sessions record their updates into one :class:`HistoryWriter`, which commits
them behind the conversation:

* **Batches.** Everything recorded is committed at most a window of
  :data:`WRITE_BEHIND_WINDOW` (50 ms) after it was recorded, together, all sessions in
  one :meth:`~acpwire.store.SessionStore.extend_many` call, which is one
  transaction. 50 ms is short next to how fast people read and long next to a
  commit (well under a millisecond for SQLite in WAL mode or a local
  PostgreSQL), so a streaming agent commits at most about 20 times a second
  whatever its chunk rate.
* **One update per message.** A run of text chunks of one message is merged
  into one record as it is recorded (:class:`~acpwire.agent.chunks.ChunkRun`).
  A message still streaming when a batch is committed is written as far as it
  got, and the rest continues as a new record with the same ``messageId``;
  replay merges them again (:func:`~acpwire.agent.chunks.coalesce`).
* **What a crash loses.** A process killed outright (SIGKILL, power loss of a
  PostgreSQL client) loses what was recorded in the last window plus the
  commit then in progress: at most about 50 ms of conversation when the store
  keeps up. It never loses or corrupts anything committed before: each batch
  is one transaction, so the store holds a prefix of what was sent.
* **Flush points.** :meth:`HistoryWriter.flush` commits everything pending and
  returns when it is committed. The runtime calls it when a turn ends (before
  the prompt is answered), on ``session/close`` and ``session/delete``, before
  any history is read (``session/load`` sees everything recorded so far in
  this process: read-your-writes) and before ``session/list``, and when the
  app closes.
* **Bounded.** At most :data:`MAX_PENDING` records wait; the one that reaches
  the bound waits for a commit (back-pressure on a store that cannot keep up,
  never an unbounded queue).
* **Failures.** A batch the store refuses (disk full, database gone) is logged
  and dropped, so a broken store never breaks the conversation; the session's
  record is still saved on its next save.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any, Final

from .chunks import ChunkRun, RunKey, run_key

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = ["MAX_PENDING", "WRITE_BEHIND_WINDOW", "HistoryWriter"]

log = logging.getLogger("acpwire.agent")

WRITE_BEHIND_WINDOW: Final = 0.05
"""Seconds between the first pending update and the commit of its batch (module docstring)."""

MAX_PENDING: Final = 10_000
"""Records that may wait for a commit before recording waits for one."""


class HistoryWriter:
    """Records sessions' updates and commits them to ``store`` in batches (module docstring)."""

    def __init__(
        self,
        store: SessionStore,
        *,
        window: float = WRITE_BEHIND_WINDOW,
        max_pending: int = MAX_PENDING,
    ) -> None:
        if not window > 0:
            raise ValueError(f"the write-behind window must be positive seconds, got {window!r}")
        self.store = store
        self.window = window
        self.max_pending = max_pending
        self._pending: dict[str, list[dict[str, Any]]] = {}  # finished records, in order
        self._runs: dict[str, ChunkRun] = {}  # the message each session is streaming
        self._count = 0
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None  # the flush the timer started
        self._lock = asyncio.Lock()  # one batch at a time keeps each session's order
        self._loop: asyncio.AbstractEventLoop | None = None  # the timer, task and lock's loop
        self._missing: set[str] = set()  # sessions reported gone from the store

    @property
    def pending(self) -> int:
        """Records (and streaming messages) not committed yet."""
        return self._count + len(self._runs)

    async def record(self, session_id: str, update: dict[str, Any]) -> None:
        """Queue one update (wire form) of a session for the next batch.

        Returns at once, unless :data:`MAX_PENDING` records are waiting: then
        it waits for them to be committed.
        """
        key = run_key(update)
        if key is not None and self.join(session_id, key, str(update["content"]["text"])):
            return
        run = self._runs.get(session_id)
        if run is not None:
            self._queue(session_id, run.merged())
        if key is None:
            self._runs.pop(session_id, None)
            self._queue(session_id, update)
        else:
            self._runs[session_id] = ChunkRun(update, key)
        self._schedule()
        if self._count >= self.max_pending:
            await self.flush()

    def join(self, session_id: str, key: RunKey, text: str) -> bool:
        """Add a chunk's text to the message the session is streaming, if it continues it.

        ``key`` is the chunk's :func:`~acpwire.agent.chunks.run_key`. True when
        taken; otherwise the chunk must go through :meth:`record`. The hot path of
        a streaming turn: no wire form, no coroutine, no system call.
        """
        run = self._runs.get(session_id)
        if run is None or not run.add(key, text):
            return False
        if self._timer is None:  # (normally running since the run began)
            self._schedule()
        return True

    def _bind(self) -> None:
        """Follow the running event loop: an app may be served by one loop after another
        (tests, ``asyncio.run`` twice). What is pending is plain data and carries over."""
        if self._loop is not None and self._loop.is_running():
            return  # (get_running_loop() costs a system call on Python 3.11)
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop = loop
            self._timer, self._task, self._lock = None, None, asyncio.Lock()

    def _queue(self, session_id: str, update: dict[str, Any]) -> None:
        self._pending.setdefault(session_id, []).append(update)
        self._count += 1

    def _schedule(self) -> None:
        self._bind()
        if self._timer is None:
            assert self._loop is not None
            self._timer = self._loop.call_later(self.window, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        if not self._count and not self._runs:
            return  # a flush took the batch (the timer outlives flushes: see flush())
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._flush_in_background())
        else:  # the previous batch is still being written: try again a window later
            self._schedule()

    async def _flush_in_background(self) -> None:
        try:
            await self.flush()
        except Exception:  # pragma: no cover - flush logs store failures itself
            log.exception("writing session history failed")

    async def flush(self) -> None:
        """Commit everything recorded so far; returns once it is committed (or failed and logged)."""
        self._bind()
        if not self._count and not self._runs and not self._lock.locked():
            return  # nothing recorded, nothing being written
        async with self._lock:
            # The timer stays armed: what is recorded next is committed when it fires,
            # sooner than a window after, and a turn that flushes at its end does not
            # cancel one timer and arm another per prompt.
            batch = self._take()
            if batch:
                await self._write(batch)

    def _take(self) -> dict[str, list[dict[str, Any]]]:
        batch, self._pending, self._count = self._pending, {}, 0
        for session_id, run in self._runs.items():
            batch.setdefault(session_id, []).append(run.merged())
        self._runs.clear()  # a message still streaming goes on in a new record
        return batch

    async def _write(self, batch: dict[str, list[dict[str, Any]]]) -> None:
        try:
            missing = await self.store.extend_many(batch)
        except Exception:  # a full disk or a lost database must not break the conversation
            count = sum(len(records) for records in batch.values())
            log.exception("could not record %d updates of %d sessions", count, len(batch))
            return
        for session_id in missing - self._missing:
            log.warning("session %s is no longer in the store; its updates are dropped", session_id)
        if len(self._missing) > 1000:  # only there to say it once per session; keep it small
            self._missing.clear()
        self._missing |= missing

    async def aclose(self) -> None:
        """Commit what is pending and stop the timer (the store stays open)."""
        self._bind()
        task = self._task
        if task is not None and not task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.flush()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
