"""Which stream each message to a remote client goes on.

Over a WebSocket every message goes to the one socket, in order (the
connection's :attr:`Streams.main` outbox). Over HTTP (RFD
streamable-http-websocket-transport, "Unified Endpoint Routing"):

* **Routing.** Responses to session-opening requests go on the connection
  stream; responses to other requests go where the request was scoped; agent
  requests and notifications carrying ``sessionId`` go on that session's
  stream, the rest on the connection stream. Messages for a stream the client
  has not opened go on the connection stream (the RFD's single stream; clients
  tell sessions apart by ``sessionId``), so a client need not open a stream per
  session, and neither an HTTP/2 stream limit nor the cap strands a session.
* **A session just made waits a moment for its stream.** The first messages of
  a session created on the connection (``session/new``, ``session/fork``) wait
  in its stream for up to ``Limits.session_stream_wait`` seconds: a client
  that opens the stream as soon as it has the id gets them there; otherwise
  they go on the connection stream, in order, and the unopened stream gives its
  slot back (:meth:`Streams.hold`).
* **Bounded.** A connection has at most ``max_sessions_per_connection``
  session streams.
* **Ordering.** Messages for one stream keep their order (:mod:`.outbox`).
  The one cross-stream case that matters, ``session/load`` replay (session
  stream) before its response (connection stream), is kept by holding the
  response until the session's stream has written what came before it, for
  at most ``barrier_timeout`` seconds (:meth:`Streams.after_attach`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Literal

from .._waits import within
from ..protocol.peek import SESSION_ATTACHING
from .admission import Pending
from .limits import Limits
from .outbox import Outbox, Replay, ReplayBudget

Keeper = Callable[[str, Outbox], Callable[[Replay], Awaitable[None]] | None]
"""Given a stream's key (``""`` or a session id) and its outbox, what keeps its messages
in a shared store (:attr:`.outbox.Outbox.keep`), if anything."""

Mode = Literal["http", "websocket"]


class Streams:
    """The outboxes of one connection: the connection stream (everything, over a
    WebSocket) and the session streams (HTTP), and the rules that pick one."""

    def __init__(
        self,
        mode: Mode,
        limits: Limits,
        *,
        stamping: bool = False,
        on_written: Callable[[bytes], None] | None = None,
        keeper: Keeper | None = None,
    ) -> None:
        self._mode = mode
        self._limits = limits
        self._budget = ReplayBudget(limits.resume_bytes)
        self._stamping = stamping
        self._on_written = on_written
        self._keeper = keeper
        self.main = self._outbox("")
        """The connection stream (HTTP), or everything for the socket (WebSocket)."""
        self.sessions: dict[str, Outbox] = {}
        """Session streams (HTTP only)."""
        self._holds: dict[str, asyncio.Task[None]] = {}
        """Sessions just made whose messages wait for the client to open their stream."""

    def _outbox(self, key: str) -> Outbox:
        box = Outbox(self._limits, self._budget)
        box.stamping = self._stamping
        box.on_written = self._on_written
        if self._keeper is not None:
            box.keep = self._keeper(key, box)
        return box

    def stop_keeping(self) -> None:
        """Keep no stream in the shared store any more (it failed)."""
        self._keeper = None
        for box in (self.main, *self.sessions.values()):
            box.keep = None

    @property
    def full(self) -> bool:
        """No room for another session stream (``max_sessions_per_connection``)."""
        return len(self.sessions) >= self._limits.max_sessions_per_connection

    def session(self, session_id: str) -> Outbox:
        """The stream of ``session_id``, made if it has none yet."""
        box = self.sessions.get(session_id)
        if box is None:
            box = self.sessions[session_id] = self._outbox(session_id)
        return box

    def for_session(self, session_id: str) -> Outbox:
        """A session's messages go on its own stream once the client has opened it (GET
        with ``Acp-Session-Id``) or while it waits to be (:meth:`hold`), else on the
        connection stream."""
        box = self.sessions.get(session_id)
        if box is not None and (box.opened or session_id in self._holds):
            return box
        return self.main

    def for_message(self, session_id: str | None) -> Outbox:
        """Where an agent request or notification naming ``session_id`` goes."""
        if self._mode == "http" and session_id is not None:
            return self.for_session(session_id)
        return self.main

    def for_answer(self, pending: Pending) -> Outbox:
        """Where the answer to a client request goes."""
        if self._mode == "websocket" or pending.session is None:
            return self.main
        if pending.method in SESSION_ATTACHING:
            return self.main
        return self.for_session(pending.session)

    def hold(self, session_id: str) -> None:
        """(HTTP) ``session_id`` was just made: its messages wait in its stream's queue for
        up to ``session_stream_wait`` seconds. A client of the session-stream model opens
        that stream as soon as it has the id, and gets them all there (the agent's first
        updates often follow ``session/new`` at once); otherwise they go on the
        connection stream when the wait ends, in order (:meth:`_release`)."""
        wait = self._limits.session_stream_wait
        if wait <= 0 or session_id in self.sessions or self.full:
            return
        box = self.session(session_id)
        self._holds[session_id] = asyncio.ensure_future(self._release(session_id, box, wait))

    async def _release(self, session_id: str, box: Outbox, wait: float) -> None:
        try:
            await asyncio.sleep(wait)
            # Not opened: what waits goes on the connection stream, in order; what the
            # agent sends meanwhile still queues behind it until the queue is empty.
            while not box.opened and len(box.queue):
                message = await box.queue.get()  # at once: it is not empty
                try:
                    if message is not None:
                        await self.main.put(message)
                finally:
                    box.mark_written()
        finally:
            self._holds.pop(session_id, None)
        if not box.opened and not len(box.queue) and self.sessions.get(session_id) is box:
            del self.sessions[session_id]  # a stream nobody opened keeps no slot

    async def after_attach(self, session_id: str, *, failed: bool) -> None:
        """(HTTP) The agent answered ``session/load`` or ``session/resume`` of
        ``session_id``: a failed attach keeps no stream; otherwise the answer waits for
        the session's replay to be written."""
        box = self.sessions.get(session_id)
        if box is None:
            return
        if failed and not box.attached and not len(box.queue):
            del self.sessions[session_id]
            return
        # The client opens the session's stream after its POST was accepted, maybe
        # after the agent has replayed; the answer waits for the replay to be written,
        # however the two race.
        with contextlib.suppress(asyncio.TimeoutError):
            await within(box.wait_drained(), self._limits.barrier_timeout)

    def served_by(self, box: Outbox, sessions: list[str]) -> list[str]:
        """Which of ``sessions`` have their messages on stream ``box`` now."""
        if box is self.main:
            return [sid for sid in sessions if self.for_message(sid) is box]
        return [sid for sid, b in self.sessions.items() if b is box and sid in sessions]

    def stop_holds(self) -> None:
        """Stop every wait of :meth:`hold` (the connection is ending)."""
        for hold in list(self._holds.values()):
            hold.cancel()

    def end(self, *, broken: bool) -> None:
        """End every stream (``broken``: because the agent failed)."""
        self.main.end(broken=broken)
        for box in self.sessions.values():
            box.end(broken=broken)
