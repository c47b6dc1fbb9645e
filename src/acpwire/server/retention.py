"""Streams kept in the store every worker shares, so a client resumes through another worker.

``acp serve --resumable`` on a store that implements
:class:`~acpwire.store.streams.StreamLog` (PostgreSQL; docs/scale-out.md): the
workers behind one load balancer share their streams' retention. Rules:

* **Kept before written.** A stream writes a batch of messages to the store,
  with their cursors and the turn state of its sessions, *before* it writes
  them to the client (:meth:`SharedRetention.keep`): whatever a client has
  received, the store has. A store that fails or is slow (more than
  :data:`KEEP_TIMEOUT`) does not stop the stream: that connection stops being
  kept (logged), and a resume through another worker is then refused rather
  than served with a gap.
* **Only a dead worker's streams are served elsewhere.** A resume for a
  connection this worker does not have is looked up in the store
  (:meth:`SharedRetention.orphan`): it must be the caller's (another principal's is
  ``connection_gone``, as for a connection that never existed), of the same
  binding, and its worker must be dead (a worker holds a lock in the database
  for as long as its process lives). Then what the client missed is replayed,
  with the original cursors, and the resume is refused all the same
  (``stream/resume_failed``, ``connection_gone``): the agent that served the
  connection is gone, so no live stream can follow. Turns that were running are
  reported ``idle`` with ``stopReason: cancelled``. The client falls back to
  ``session/resume`` / ``session/load`` on a new connection.
* **Cleaned up.** A connection's rows go when it ends; rows nothing was
  written to for :data:`SWEEP_AFTER` seconds (a dead worker's, whose client
  never came back) are swept by any worker, at most every :data:`SWEEP_EVERY`.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from typing import Any

import msgspec

from .._tasks import TaskSet
from .._waits import within
from ..protocol.cursors import CONNECTION_GONE, OUTSIDE_RETENTION, UNKNOWN_CURSOR
from ..store.streams import StreamLog
from .outbox import Replay

log = logging.getLogger("acpwire.server")

KEEP_TIMEOUT = 5.0
"""Seconds a batch may take to reach the store before the connection stops being kept."""
SWEEP_AFTER = 3600.0
"""Streams nothing was written to for this long are removed from the store."""
SWEEP_EVERY = 600.0

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(dict[str, Any]).decode


def interrupted(turns: dict[str, Any]) -> dict[str, Any]:
    """Turn states as a dead worker left them: a turn that was going on ended with it."""
    ended = {"state": "idle", "stopReason": "cancelled"}
    return {
        sid: ended if isinstance(state, dict) and state.get("state") != "idle" else state
        for sid, state in turns.items()
    }


class SharedRetention:
    """This worker's side of a :class:`~acpwire.store.streams.StreamLog`."""

    def __init__(self, store: StreamLog, *, keep: int) -> None:
        self.store = store
        self.keep_messages = keep
        self.worker = secrets.token_hex(12)
        """This process's name in the store (random: a restarted worker is another)."""
        self._started = False
        self._next_sweep = 0.0
        self._tasks = TaskSet(log)
        """Writes to the store that nobody waits for (their failures are logged)."""

    async def keep(
        self,
        connection_id: str,
        stream: str,
        *,
        principal: str,
        mode: str,
        entries: Replay,
        turns: dict[str, Any],
    ) -> None:
        """Write a batch to the store before it goes to the client; raises on failure."""
        if not self._started:
            await within(self.store.worker_started(self.worker), KEEP_TIMEOUT)
            self._started = True
        await within(
            self.store.keep_stream(
                connection_id,
                stream,
                principal=principal,
                worker=self.worker,
                mode=mode,
                entries=entries,
                turns=_encode(turns).decode(),
                keep=self.keep_messages,
            ),
            KEEP_TIMEOUT,
        )
        loop = asyncio.get_running_loop()
        if loop.time() >= self._next_sweep:
            self._next_sweep = loop.time() + SWEEP_EVERY
            self._spawn(self.store.sweep_streams(SWEEP_AFTER), "sweep old streams")

    def forget(self, connection_id: str) -> None:
        """The connection ended here: its streams leave the store (in the background)."""
        self._spawn(self.store.forget_connection(connection_id), "forget a connection")

    async def orphan(
        self, connection_id: str, stream: str, principal: str, mode: str, after: int
    ) -> tuple[Replay, dict[str, Any]] | str:
        """A dead worker's stream, after cursor ``after``: what to replay and the turn
        states to report; or why not (one of the cursor module's reasons)."""
        try:
            stored = await self.store.stored_stream(connection_id, stream)
            if stored is None or stored.principal != principal or stored.mode != mode:
                return CONNECTION_GONE
            if stored.worker == self.worker or await self.store.worker_alive(stored.worker):
                return CONNECTION_GONE  # alive: its client must reach it, not us
            if after < 0 or after > stored.high:
                return UNKNOWN_CURSOR
            replay = await self.store.stream_after(connection_id, stream, after)
        except Exception as exc:  # any driver error: refuse, never replay with a gap
            log.warning("cannot read stream %s of connection %s: %s", stream, connection_id, exc)
            return CONNECTION_GONE
        if [seq for seq, _ in replay] != list(range(after + 1, stored.high + 1)):
            return OUTSIDE_RETENTION
        try:
            turns = _decode(stored.turns)
        except (msgspec.DecodeError, msgspec.ValidationError):
            turns = {}
        log.info(
            "replaying %d message(s) of connection %s (stream %r) whose worker is gone",
            len(replay),
            connection_id,
            stream,
        )
        return replay, interrupted(turns)

    def _spawn(self, work: Any, what: str) -> None:
        async def run() -> None:
            try:
                await within(work, KEEP_TIMEOUT * 4)
            except Exception as exc:
                log.warning("could not %s in the store: %s", what, exc)

        self._tasks.spawn(run(), name=f"store: {what}")
