"""The framework-neutral core of the remote ``/acp`` endpoint.

One :class:`RemoteConnection` per remote client connection, each with its own
agent connection (an :class:`~acpwire.agent.connection.Agent` from a factory,
an :class:`~acpwire.agent.app.AgentApp`, or a stdio bridge) on a bounded
in-memory transport pair. The HTTP and WebSocket adapters in :mod:`.asgi` only
move bytes; which SSE stream a message belongs on, which status a POST gets
and when a connection ends are decided here.

Rules (RFD streamable-http-websocket-transport; docs/remote.md lists what the
RFD leaves open and what we chose):

* **Identity.** A connection id (``Acp-Connection-Id``) is a random UUID made
  by ``initialize`` (HTTP) or by the upgrade (WebSocket). A session becomes
  known to a connection when the agent's result to ``session/new``,
  ``session/load``, ``session/resume`` or ``session/fork`` names it, when the
  client sends ``session/load``/``session/resume`` for it, or when the agent
  sends something for it. A session this server has announced before (on any
  connection) may also have its stream opened ahead of ``session/load``.
* **Routing (HTTP).** Responses to session-opening requests go on the
  connection stream; responses to other requests go where the request was
  scoped; agent requests and notifications carrying ``sessionId`` go on that
  session's stream, the rest on the connection stream. Messages for a stream
  no client has opened yet wait in its bounded queue.
* **Ordering.** Messages for one stream keep their order. The one cross-stream
  case that matters, ``session/load`` replay (session stream) before its
  response (connection stream), is kept by holding the response until the
  session's stream has written what came before it, for at most
  ``barrier_timeout`` seconds.
* **Bounded memory.** Every queue is bounded; a client that does not read its
  streams slows its own agent down (back-pressure), never the server.
* **Teardown.** DELETE, a closed WebSocket, the idle timeout or the agent
  ending close the agent's transport (so its pending turns are cancelled),
  wait ``grace`` seconds for it to finish, then cancel it, and end the
  connection's streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import msgspec

from ..agent.connection import Agent, AgentSideConnection
from ..protocol.errors import ConnectionClosedError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE, Oversize
from ..protocol.peek import (
    SESSION_ATTACHING,
    SESSION_OPENING,
    BatchMessage,
    NotAMessage,
    Peeked,
    peek,
)
from ..transports.base import Transport
from ..transports.memory import MemoryTransport, memory_pair

log = logging.getLogger("acpwire.server")

CONNECTION_HEADER = "acp-connection-id"
SESSION_HEADER = "acp-session-id"


@runtime_checkable
class ConnectionServer(Protocol):
    """Anything that serves one ACP connection over a transport (an ``AgentApp`` does)."""

    async def serve(self, transport: Transport) -> None: ...


AgentTarget = ConnectionServer | Callable[[], Agent]
"""What the endpoint hosts: an ``AgentApp``/bridge (``.serve(transport)``) or an ``Agent`` factory."""


def _require_agent(agent: object) -> Agent:
    """Check at run time what a factory (user code, maybe untyped) returned."""
    if not isinstance(agent, Agent):
        raise TypeError(f"the agent factory returned {type(agent).__name__}, not an Agent")
    return agent


def _serve_function(target: AgentTarget) -> Callable[[Transport], Awaitable[None]]:
    if isinstance(target, ConnectionServer):
        return target.serve
    if callable(target):
        factory = target

        async def serve(transport: Transport) -> None:
            agent = _require_agent(factory())
            await AgentSideConnection(agent, transport).serve()

        return serve
    raise TypeError("expected an AgentApp, an object with serve(transport), or an Agent factory")


@dataclass(slots=True)
class Reply:
    """An HTTP answer, independent of any framework."""

    status: int
    body: bytes = b""
    content_type: str | None = None
    headers: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])


def _error_reply(status: int, message: str, code: int = -32600) -> Reply:
    body = msgspec.json.encode(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    )
    return Reply(status, body, "application/json")


class Outbox:
    """The bounded queue behind one SSE stream (connection- or session-scoped)."""

    def __init__(self, maxsize: int) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize)
        self.attached = False
        self._unsent = 0
        self._drained = asyncio.Event()
        self._drained.set()
        self.ended = False

    async def put(self, message: bytes) -> None:
        self._unsent += 1
        self._drained.clear()
        await self.queue.put(message)

    def sent(self) -> None:
        """The stream has written one message taken from the queue."""
        self._unsent -= 1
        if self._unsent <= 0:
            self._unsent = 0
            self._drained.set()

    async def wait_drained(self) -> None:
        await self._drained.wait()

    def end(self) -> None:
        if self.ended:
            return
        self.ended = True
        while True:
            try:
                self.queue.put_nowait(None)
                return
            except asyncio.QueueFull:
                self.queue.get_nowait()  # nobody will read it now


Mode = Literal["http", "websocket"]


class RemoteConnection:
    """One remote client's connection and the agent connection that serves it."""

    def __init__(self, host: RemoteHost, mode: Mode) -> None:
        self.host = host
        self.mode = mode
        self.id = str(uuid.uuid4())
        self.agent: MemoryTransport
        self.agent, agent_end = memory_pair(host.queue_size, max_message_size=host.max_message_size)
        loop = asyncio.get_running_loop()
        self.last_activity = loop.time()
        self.closed = asyncio.Event()
        self._terminating = False
        self._backend = asyncio.ensure_future(self._run_backend(agent_end))
        # HTTP mode state
        self.stream = Outbox(host.queue_size)
        self.sessions: dict[str, Outbox] = {}
        self._in_pending: dict[str | int, tuple[str | None, str]] = {}
        self._out_pending: dict[str | int, str | None] = {}
        self._init_waiters: dict[str | int, asyncio.Future[bytes]] = {}
        self._pump: asyncio.Task[None] | None = None
        if mode == "http":
            self._pump = asyncio.ensure_future(self._route_agent_messages())

    def touch(self) -> None:
        self.last_activity = asyncio.get_running_loop().time()

    async def _run_backend(self, transport: MemoryTransport) -> None:
        try:
            await self.host.serve(transport)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("agent for connection %s failed", self.id)
        finally:
            await transport.close()

    async def to_agent(self, message: bytes) -> None:
        """Hand one client message to the agent (waits while the agent is not reading)."""
        self.touch()
        await self.agent.send(message)

    async def from_agent(self) -> bytes | None:
        """The agent's next message (WebSocket mode); ``None`` when it has ended."""
        while True:
            message = await self.agent.receive()
            if isinstance(message, Oversize):
                log.warning("dropped an oversize message (%d bytes) from the agent", message.size)
                continue
            if message is not None:
                self.touch()
            return message

    # -- HTTP mode -------------------------------------------------------------------

    def session(self, session_id: str) -> Outbox:
        box = self.sessions.get(session_id)
        if box is None:
            box = self.sessions[session_id] = Outbox(self.host.queue_size)
            self.host.remember_session(session_id)
        return box

    def expect_initialize(self, request_id: str | int) -> asyncio.Future[bytes]:
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._init_waiters[request_id] = future
        return future

    async def _route_agent_messages(self) -> None:
        try:
            while True:
                message = await self.agent.receive()
                if message is None:
                    break
                if isinstance(message, Oversize):
                    log.warning(
                        "dropped an oversize message (%d bytes) from the agent", message.size
                    )
                    continue
                self.touch()
                await self._route(message)
        except ConnectionClosedError:
            pass
        finally:
            for future in self._init_waiters.values():
                if not future.done():
                    future.set_exception(ConnectionClosedError("the agent ended", broken=True))
            if not self._terminating:
                self.host.spawn(self.terminate())

    async def _route(self, message: bytes) -> None:
        try:
            p = peek(message)
        except NotAMessage:
            await self.stream.put(message)
            return
        if p.kind == "response":
            await self._route_response(p, message)
            return
        if p.kind == "request" and p.id is not None:
            self._out_pending[p.id] = p.session_id
        target = self.session(p.session_id) if p.session_id is not None else self.stream
        await target.put(message)

    async def _route_response(self, p: Peeked, message: bytes) -> None:
        if p.id is not None:
            waiter = self._init_waiters.pop(p.id, None)
            if waiter is not None:
                if not waiter.done():
                    waiter.set_result(message)
                return
        scope, method = self._in_pending.pop(p.id, (None, "")) if p.id is not None else (None, "")
        if method in SESSION_OPENING and p.session_id is not None:
            self.session(p.session_id)
        if method in SESSION_ATTACHING and scope is not None:
            box = self.sessions.get(scope)
            if box is not None and box.attached:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(box.wait_drained(), self.host.barrier_timeout)
            scope = None
        target = self.sessions.get(scope, self.stream) if scope is not None else self.stream
        await target.put(message)

    async def post(self, p: Peeked, body: bytes, session_header: str | None) -> Reply:
        """A client message POSTed to this connection (RFD "Unified Endpoint Routing")."""
        self.touch()
        if p.kind == "response":
            session = self._out_pending.get(p.id) if p.id is not None else None
        else:
            session = p.session_id
        if session is not None:
            if session_header is None:
                return _error_reply(400, f"{SESSION_HEADER} header required for this message")
            if session_header != session:
                return _error_reply(400, f"{SESSION_HEADER} does not match the message's session")
            if session not in self.sessions:
                if p.method in SESSION_ATTACHING:
                    self.session(session)
                else:
                    return _error_reply(404, "unknown session for this connection")
        if p.kind == "response" and p.id is not None:
            self._out_pending.pop(p.id, None)
        if p.kind == "request" and p.id is not None:
            self._in_pending[p.id] = (session, p.method or "")
        try:
            await self.to_agent(body)
        except ConnectionClosedError:
            return _error_reply(404, "connection has ended")
        return Reply(202)

    def outbox_for(self, session_id: str | None) -> Outbox | None:
        if session_id is None:
            return self.stream
        box = self.sessions.get(session_id)
        if box is None and self.host.announced(session_id):
            box = self.session(session_id)
        return box

    # -- teardown --------------------------------------------------------------------

    async def terminate(self) -> None:
        """End this connection: the agent's transport, its task, the streams. Idempotent."""
        if self._terminating:
            await self.closed.wait()
            return
        self._terminating = True
        self.host.connections.pop(self.id, None)
        try:
            await self.agent.close()
            try:
                await asyncio.wait_for(asyncio.shield(self._backend), self.host.grace)
            except (asyncio.TimeoutError, Exception):
                self._backend.cancel()
                with contextlib.suppress(BaseException):
                    await self._backend
            if self._pump is not None and not self._pump.done():
                self._pump.cancel()
                with contextlib.suppress(BaseException):
                    await self._pump
        finally:
            self.stream.end()
            for box in self.sessions.values():
                box.end()
            self.closed.set()


class RemoteHost:
    """Every live remote connection of one endpoint, and the agent they are served by."""

    def __init__(
        self,
        target: AgentTarget,
        *,
        idle_timeout: float | None = 1800.0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        queue_size: int = 256,
        keepalive: float | None = 15.0,
        grace: float = 5.0,
        barrier_timeout: float = 5.0,
        initialize_timeout: float = 60.0,
        max_connections: int = 1000,
    ) -> None:
        self.serve = _serve_function(target)
        self.idle_timeout = idle_timeout
        self.max_message_size = max_message_size
        self.queue_size = queue_size
        self.keepalive = keepalive
        self.grace = grace
        self.barrier_timeout = barrier_timeout
        self.initialize_timeout = initialize_timeout
        self.max_connections = max_connections
        self.connections: dict[str, RemoteConnection] = {}
        self._announced: OrderedDict[str, None] = OrderedDict()
        self._reaper: asyncio.Task[None] | None = None
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in the background, keeping a reference until it is done."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def remember_session(self, session_id: str) -> None:
        self._announced[session_id] = None
        self._announced.move_to_end(session_id)
        while len(self._announced) > 10_000:
            self._announced.popitem(last=False)

    def announced(self, session_id: str) -> bool:
        return session_id in self._announced

    def open(self, mode: Mode) -> RemoteConnection:
        """A new connection with its own agent."""
        if self._closing:
            raise ConnectionClosedError("the server is shutting down")
        conn = RemoteConnection(self, mode)
        self.connections[conn.id] = conn
        if self.idle_timeout is not None and (self._reaper is None or self._reaper.done()):
            self._reaper = asyncio.ensure_future(self._reap_idle(self.idle_timeout))
        return conn

    def get(self, connection_id: str) -> RemoteConnection | None:
        return self.connections.get(connection_id)

    def full(self) -> bool:
        return len(self.connections) >= self.max_connections

    async def _reap_idle(self, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        while self.connections:
            await asyncio.sleep(min(timeout / 4, 30.0))
            now = loop.time()
            for conn in list(self.connections.values()):
                if now - conn.last_activity > timeout:
                    log.info("connection %s idle for %.0f s: closing it", conn.id, timeout)
                    self.spawn(conn.terminate())

    async def initialize(self, p: Peeked, body: bytes) -> Reply:
        """POST ``initialize`` without a connection id: a new connection, answered with 200."""
        if self.full():
            return _error_reply(503, "too many connections")
        conn = self.open("http")
        assert p.id is not None
        waiter = conn.expect_initialize(p.id)
        try:
            await conn.to_agent(body)
            answer = await asyncio.wait_for(waiter, self.initialize_timeout)
        except (ConnectionClosedError, asyncio.TimeoutError):
            await conn.terminate()
            return _error_reply(502, "the agent did not answer initialize", -32603)
        return Reply(200, answer, "application/json", [(CONNECTION_HEADER, conn.id)])

    async def post(self, body: bytes, connection_id: str | None, session_id: str | None) -> Reply:
        """Route one POSTed JSON-RPC message (after content-type and size checks)."""
        try:
            p = peek(body)
        except BatchMessage:
            return _error_reply(501, "batch requests are not supported")
        except NotAMessage:
            return _error_reply(400, "not a JSON-RPC message", -32700)
        if connection_id is None:
            if p.kind == "request" and p.method == "initialize":
                return await self.initialize(p, body)
            return _error_reply(400, f"{CONNECTION_HEADER} header required")
        conn = self.connections.get(connection_id)
        if conn is None or conn.mode != "http":
            return _error_reply(404, "unknown connection")
        return await conn.post(p, body, session_id)

    async def delete(self, connection_id: str | None) -> Reply:
        if connection_id is None:
            return _error_reply(400, f"{CONNECTION_HEADER} header required")
        conn = self.connections.get(connection_id)
        if conn is None:
            return _error_reply(404, "unknown connection")
        await conn.terminate()
        return Reply(202)

    async def aclose(self) -> None:
        """End every connection (server shutdown)."""
        self._closing = True
        conns = list(self.connections.values())
        await asyncio.gather(*(c.terminate() for c in conns), return_exceptions=True)
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(BaseException):
                await self._reaper
