"""Every live remote connection of one endpoint, and the way in for each request.

A :class:`RemoteHost` holds the connections of one ``/acp`` endpoint and the
agent they are served by (:mod:`.agent_side`); the ASGI app (:mod:`.asgi`,
:mod:`.websocket`) calls it for everything it decides. Rules it keeps:

* **Identity.** A connection id is made by ``initialize`` (HTTP) or by the
  upgrade (WebSocket), and belongs to the principal that opened it: to anyone
  else it does not exist (404, :meth:`RemoteHost.lookup`).
* **Bounded resources** (:class:`~.limits.Limits`). The agent starts on
  ``initialize``, not on the WebSocket upgrade; connections and running agents
  are capped globally and per principal (:meth:`RemoteHost.refusal`: 503 over
  HTTP, close 1013 over a WebSocket). A connection with no message either way
  for ``idle_timeout`` seconds is closed.
* **Strict reading first.** A POSTed body is read by
  :func:`~.admission.read_client_message` before anything else is decided: one
  it cannot read is answered here and reaches no agent.
* **Shutdown** (:meth:`RemoteHost.aclose`) ends every connection cleanly and
  refuses new ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

from .._tasks import TaskSet
from .._waits import within
from ..protocol.errors import ConnectionClosedError, ErrorCode
from .admission import ClientMessage, Unreadable, read_client_message
from .agent_side import AgentTarget, serve_function
from .connection import RemoteConnection
from .headers import CONNECTION_HEADER
from .limits import Limits
from .owners import SessionOwners
from .replies import Reply, busy_reply, error_reply
from .retention import SharedRetention
from .streams import Mode

log = logging.getLogger("acpwire.server")


class RemoteHost:
    """Every live remote connection of one endpoint, and the agent they are served by."""

    def __init__(
        self,
        target: AgentTarget,
        *,
        limits: Limits | None = None,
        owners: SessionOwners | None = None,
        keepalive: float | None = 15.0,
        resumable: bool = False,
        retention: SharedRetention | None = None,
    ) -> None:
        self.serve = serve_function(target)
        self.limits = limits or Limits()
        self.owners = owners if owners is not None else SessionOwners()
        self.keepalive = keepalive
        """Seconds between keepalives on a silent stream (SSE comments; WebSocket pings with
        ``resumable``); ``None``: none."""
        self.resumable = resumable
        """Resume by cursor (RFD durable-resumable-http-transport): :mod:`.resumable`."""
        self.retention = retention
        """(``resumable``) Streams kept in a store the workers share: :mod:`.retention`."""
        self.connections: dict[str, RemoteConnection] = {}
        self.body_bytes_in_flight = 0
        self._reaper: asyncio.Task[None] | None = None
        self._closing = False
        self._tasks = TaskSet(log)

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` (a connection's end) in the background; :meth:`aclose` waits for it."""
        self._tasks.spawn(work)

    # -- admission ---------------------------------------------------------------------

    def refusal(self, principal: str, *, agent: bool) -> str | None:
        """Why a new connection (``agent=False``) or a new agent cannot start now."""
        if self._closing:
            return "the server is shutting down"
        limits = self.limits
        conns = list(self.connections.values())
        if agent:
            if sum(c.has_agent for c in conns) >= limits.max_agents:
                return "too many agents running"
            if (
                sum(c.has_agent for c in conns if c.principal == principal)
                >= limits.max_agents_per_principal
            ):
                return "too many agents running for this principal"
            return None
        if len(conns) >= limits.max_connections:
            return "too many connections"
        if sum(c.principal == principal for c in conns) >= limits.max_connections_per_principal:
            return "too many connections for this principal"
        return None

    def open(self, mode: Mode, principal: str, peer: str = "") -> RemoteConnection:
        """A new connection (its agent starts later, on ``initialize``)."""
        if self._closing:
            raise ConnectionClosedError("the server is shutting down")
        conn = RemoteConnection(self, mode, principal, peer)
        self.connections[conn.id] = conn
        idle = self.limits.idle_timeout
        if idle is not None and (self._reaper is None or self._reaper.done()):
            self._reaper = asyncio.ensure_future(self._reap_idle(idle))
        return conn

    def lookup(self, connection_id: str, principal: str) -> RemoteConnection | None:
        """The connection, if it exists *and* belongs to ``principal``."""
        conn = self.connections.get(connection_id)
        if conn is None or conn.principal != principal:
            return None
        return conn

    def forget(self, conn: RemoteConnection) -> None:
        self.connections.pop(conn.id, None)

    async def _reap_idle(self, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        while self.connections:
            await asyncio.sleep(min(timeout / 4, 30.0))
            now = loop.time()
            for conn in list(self.connections.values()):
                if now - conn.last_activity > timeout:
                    log.info("connection %s idle for %.0f s: closing it", conn.id, timeout)
                    self.spawn(conn.terminate("idle"))

    # -- HTTP ----------------------------------------------------------------------------

    async def initialize(self, m: ClientMessage, principal: str, peer: str) -> Reply:
        """POST ``initialize`` without a connection id: a new connection, answered with 200."""
        refusal = self.refusal(principal, agent=False) or self.refusal(principal, agent=True)
        if refusal is not None:
            return busy_reply(refusal)
        conn = self.open("http", principal, peer)
        conn.start_agent()
        assert m.id is not None
        waiter = conn.expect_initialize(m.id)
        try:
            await conn.admit(m)
            answer = await within(waiter, self.limits.initialize_timeout)
        except (ConnectionClosedError, asyncio.TimeoutError):
            await conn.terminate()
            return error_reply(502, "the agent did not answer initialize", ErrorCode.INTERNAL_ERROR)
        return Reply(200, answer, "application/json", [(CONNECTION_HEADER, conn.id)])

    async def post(
        self,
        body: bytes,
        connection_id: str | None,
        session_id: str | None,
        principal: str,
        peer: str = "",
        *,
        retry: bool = False,
    ) -> Reply:
        """Route one POSTed JSON-RPC message (after content-type and size checks);
        ``retry`` when it came with :data:`~.headers.RETRY_HEADER`."""
        try:
            m = read_client_message(body)
        except Unreadable as exc:
            return Reply(exc.status, exc.answer(), "application/json")
        if connection_id is None:
            if m.kind == "request" and m.method == "initialize":
                return await self.initialize(m, principal, peer)
            return error_reply(400, f"{CONNECTION_HEADER} header required")
        conn = self.lookup(connection_id, principal)
        if conn is None or conn.mode != "http":
            return error_reply(404, "unknown connection")
        return await conn.post(m, session_id, retry=retry)

    async def delete(self, connection_id: str | None, principal: str) -> Reply:
        if connection_id is None:
            return error_reply(400, f"{CONNECTION_HEADER} header required")
        conn = self.lookup(connection_id, principal)
        if conn is None:
            return error_reply(404, "unknown connection")
        await conn.terminate()
        return Reply(202)

    async def aclose(self) -> None:
        """End every connection (server shutdown). Idempotent."""
        self._closing = True
        conns = list(self.connections.values())
        await asyncio.gather(*(c.terminate("shutdown") for c in conns), return_exceptions=True)
        # Connections whose end began before (idle, stalled, agent ended): not cancelled,
        # a cancelled teardown could leave its agent running; each is bounded by its grace.
        await self._tasks.wait()
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(BaseException):
                await self._reaper
        self.owners.close()
