"""The framework-neutral core of the remote ``/acp`` endpoint.

One :class:`RemoteConnection` per remote client connection, each with its own
agent connection (an :class:`~acpwire.agent.connection.Agent` from a factory,
an :class:`~acpwire.agent.app.AgentApp`, or a stdio bridge) on an in-memory
transport (:class:`_AgentSide`): the client's messages wait in a bounded queue
unless the agent's engine takes them at once; what the agent sends is routed to
the client's stream in the agent's own task. The HTTP and WebSocket adapters in
:mod:`.asgi` only move bytes; which stream a message belongs on, which status a
POST gets, who may use a connection or a session and when a connection ends are
decided here.
Who the caller is (the *principal*) was settled before, by
:mod:`.security`.

Rules (RFD streamable-http-websocket-transport; docs/remote.md lists what the
RFD leaves open and what we chose; docs/security.md the threat model):

* **Identity.** A connection id (``Acp-Connection-Id``) is 192 random bits
  made by ``initialize`` (HTTP) or by the upgrade (WebSocket), and belongs to
  the principal that opened it: to anyone else it does not exist (404).
* **One admission** (:meth:`RemoteConnection.admit`, and :meth:`~RemoteConnection.try_admit`
  when nothing has to wait). Every client message, on every lane, is read strictly
  (:mod:`.admission`) and admitted there; the agent's side takes only an
  :class:`Admitted` message, which nothing else makes.
* **Sessions belong to principals** (:mod:`.owners`). A client request or
  notification naming a session its principal may not use never reaches the
  agent: a request is answered here with "resource not found" (-32002), a
  notification is dropped. ``session/list`` answers are filtered to the
  caller's sessions (one that cannot be read is not forwarded), and an answer
  to an id no client request has is dropped. The same principal may attach a
  session from any of its connections (``session/load``, ``session/resume``).
* **Routing (HTTP).** Responses to session-opening requests go on the
  connection stream; responses to other requests go where the request was
  scoped; agent requests and notifications carrying ``sessionId`` go on that
  session's stream, the rest on the connection stream. Messages for a stream
  the client has not opened go on the connection stream (the RFD's single
  stream; clients demultiplex by ``sessionId``). A connection has at most
  ``max_sessions_per_connection`` session streams. Over a WebSocket every
  message goes to the one socket, in order.
* **Ordering.** Messages for one stream keep their order. The one cross-stream
  case that matters, ``session/load`` replay (session stream) before its
  response (connection stream), is kept by holding the response until the
  session's stream has written what came before it, for at most
  ``barrier_timeout`` seconds.
* **Bounded resources** (:class:`~.limits.Limits`). The agent starts on
  ``initialize``, not on the WebSocket upgrade; connections and running agents
  are capped globally and per principal; every queue is bounded in messages
  and bytes; requests in flight and client-named session streams per
  connection are capped. A client that does not read its streams slows its own
  agent down (back-pressure), never the server.
* **Only protocol reaches the client.** A line the agent writes that is not a
  JSON-RPC message is dropped, counted and logged, never forwarded.
* **Failure is never a clean end.** When the agent ends on its own, every
  client request it had not answered is answered here with an internal error
  (over HTTP on the connection stream, ahead of its end), then the streams end
  *broken* (WebSocket close 1011, SSE ``event: error``).
  An end the server chose (DELETE, client gone, idle timeout, shutdown) is
  clean.
* **Teardown.** Closing a connection closes the agent's input (so its pending
  turns are cancelled), waits ``close_timeout`` seconds for it to finish, then
  cancels it, and ends the connection's streams. An agent that takes no input
  for ``stall_timeout`` seconds while its queue is full has failed: its
  connection ends at once (this also bounds how long a handler can be kept
  from noticing that its client left).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast, runtime_checkable

import msgspec

from ..agent.connection import Agent, AgentSideConnection
from ..protocol.errors import ConnectionClosedError, ErrorCode
from ..protocol.framing import Oversize
from ..protocol.peek import SESSION_ATTACHING, SESSION_OPENING, NotAMessage, Peeked, peek
from ..store.base import NEW_SESSION_OWNER
from ..transports.base import Transport
from ..transports.queue import MessageQueue
from .admission import ClientMessage, Unreadable, read_client_message
from .limits import Limits
from .owners import SessionOwners

log = logging.getLogger("acpwire.server")

CONNECTION_HEADER = "acp-connection-id"
SESSION_HEADER = "acp-session-id"
RETRY_HEADER = "acp-retry"
"""Set by acpwire's HTTP client on a POST it sends again after a network failure: a
request whose id was answered a moment ago is then the same request, not a new one."""
ANSWERED_KEPT = 1024
"""Ids of answered client requests a connection remembers, to recognise retries."""

RequestId = str | int
Mode = Literal["http", "websocket"]
EndReason = Literal["closed", "client gone", "idle", "shutdown", "agent ended", "agent stalled"]
_FAILURES = ("agent ended", "agent stalled")

_CREATING = frozenset({"session/new", "session/fork"})
_BOOKKEEPING = _CREATING | SESSION_ATTACHING | {"session/delete", "session/list"}
"""Methods whose answers the endpoint records or filters on their way to the client."""


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


def _error_reply(status: int, message: str, code: int = ErrorCode.INVALID_REQUEST) -> Reply:
    body = msgspec.json.encode(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    )
    return Reply(status, body, "application/json")


def busy_reply(reason: str) -> Reply:
    """503 for a limit reached; ``Retry-After`` says the condition is temporary."""
    reply = _error_reply(503, reason, ErrorCode.INTERNAL_ERROR)
    reply.headers.append(("retry-after", "5"))
    return reply


def error_response(request_id: RequestId, code: int, message: str) -> bytes:
    """A JSON-RPC error response the endpoint answers in the agent's stead."""
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    )


NOT_FOUND = (ErrorCode.RESOURCE_NOT_FOUND, "Resource not found")
AGENT_ENDED = "the agent ended before answering"


def _session_of(info: object) -> str:
    """The ``sessionId`` of one ``session/list`` entry (``""`` if it has none)."""
    if isinstance(info, dict):
        sid = cast("dict[str, Any]", info).get("sessionId")
        if isinstance(sid, str):
            return sid
    return ""


class ReplayBudget:
    """Bytes kept for resumes by all the streams of one connection (``Limits.resume_bytes``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0


class Outbox:
    """The bounded queue behind one outgoing stream (an SSE stream, or the WebSocket),
    and the log of what it wrote, for a client that resumes it.

    Every message taken off the queue to be written gets the next event id of the
    stream (1, 2, ...) and is kept in the log, the last ``resume_messages`` of them
    within the connection's :class:`ReplayBudget`. A client that comes back saying
    the last id it received gets the rest from the log; if the log no longer reaches
    back that far, the stream cannot be resumed (docs/remote.md, "Reconnect and resume").
    """

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

    async def put(self, message: bytes) -> None:
        """Queue ``message``, waiting for room (a message for an ended stream is dropped)."""
        write_now = self.write_now
        if write_now is not None and not self.queue and not self.queue.ended and write_now(message):
            return
        self._unsent += 1
        self._drained.clear()
        try:
            queued = await self.queue.put(message)
        except asyncio.CancelledError:
            self.sent()  # not queued: the sender was cancelled while the stream was full
            raise
        if not queued:
            self.sent()

    def force(self, message: bytes) -> None:
        """Queue ``message`` past the bounds: the last answers before a broken end."""
        self._unsent += 1
        self._drained.clear()
        self.queue.force(message)

    def take(self, message: bytes) -> int:
        """``message`` was taken off the queue to be written: its event id, and a log entry."""
        self.last_id += 1
        self._log.append((self.last_id, message))
        budget = self._budget
        budget.held += len(message)
        while self._log and (len(self._log) > self._log_limit or budget.held > budget.limit):
            _, old = self._log.popleft()
            budget.held -= len(old)
        return self.last_id

    def replay_after(self, last: int) -> list[tuple[int, bytes]] | None:
        """What was written after event ``last``; ``None`` when the log no longer has it all."""
        if last < 0 or last > self.last_id:
            return None
        if last == self.last_id:
            return []
        if not self._log or self._log[0][0] > last + 1:
            return None
        return [(event_id, message) for event_id, message in self._log if event_id > last]

    def sent(self) -> None:
        """The stream has written one message taken from the queue."""
        self._unsent -= 1
        if self._unsent <= 0:
            self._unsent = 0
            self._drained.set()

    async def wait_drained(self) -> None:
        await self._drained.wait()

    async def attach(self, *, take_over: bool, timeout: float) -> bool:
        """Claim the stream for one writer. A resuming client takes it over from a writer
        whose client is gone but not yet noticed; otherwise a second claim is refused."""
        if self.attached:
            if not take_over:
                return False
            self._take_over.set()
            try:
                await asyncio.wait_for(self._released.wait(), timeout)
            except asyncio.TimeoutError:
                return False
        self.attached = self.opened = True
        self._released.clear()
        self._take_over.clear()
        return True

    def detach(self) -> None:
        self.attached = False
        self._released.set()

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


@dataclass(slots=True)
class _Pending:
    """A client request the agent has not answered yet."""

    session: str | None
    """Its ``params.sessionId``: where its answer goes (HTTP), what it concerns."""
    method: str


_ADMISSION = object()
"""Held by :meth:`RemoteConnection._admitted` alone: no other code can make an :class:`Admitted`."""


class Admitted:
    """A client message the admission let through (:meth:`RemoteConnection.admit`): the only
    kind of message the agent's side of a connection takes, so a message that was not read
    strictly and checked cannot reach the agent by any path."""

    __slots__ = ("body",)

    def __init__(self, message: ClientMessage, key: object) -> None:
        if key is not _ADMISSION:
            raise TypeError("only the admission of a client message makes an Admitted")
        self.body = message.body
        """What the agent receives: the message as the endpoint read it."""


_Verdict = tuple[int, str] | str | None
"""Of :meth:`RemoteConnection._judge`: ``None`` admits; a string drops (why, for the
log); ``(code, text)`` is answered by the endpoint."""


@dataclass(slots=True)
class Stats:
    """What ``-v`` logs when a connection ends."""

    messages_in: int = 0
    messages_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    dropped: int = 0
    """Lines from the agent that were not JSON-RPC messages."""


class RemoteConnection:
    """One remote client's connection and the agent connection that serves it."""

    def __init__(self, host: RemoteHost, mode: Mode, principal: str, peer: str) -> None:
        self.host = host
        self.limits = host.limits
        self.mode = mode
        self.principal = principal
        self.peer = peer
        self.id = secrets.token_urlsafe(24)
        self._clock = asyncio.get_running_loop().time
        self.opened_at = self.last_activity = self._clock()
        self.closed = asyncio.Event()
        self.end_reason: EndReason | None = None
        self.stats = Stats()
        self.replay_budget = ReplayBudget(self.limits.resume_bytes)
        self.stream = Outbox(self.limits, self.replay_budget)
        """The connection stream (HTTP), or everything for the socket (WebSocket)."""
        self.sessions: dict[str, Outbox] = {}
        """Session streams (HTTP only)."""
        self._known: set[str] = set()
        """Sessions opened on this connection (new, load, resume, fork), stream or not."""
        self._pending: dict[RequestId, _Pending] = {}
        self._answered: dict[RequestId, None] = {}
        """The last :data:`ANSWERED_KEPT` client requests answered (ordered, oldest first)."""
        self._out_pending: dict[RequestId, str | None] = {}
        self._init_waiters: dict[RequestId, asyncio.Future[bytes]] = {}
        self._agent_input: MessageQueue | None = None
        """The client's messages to the agent, bounded; the agent reads them (:class:`_AgentSide`)."""
        self._agent_side: _AgentSide | None = None
        self._backend: asyncio.Task[None] | None = None
        self._terminating = False
        self.resumable = False
        """(WebSocket) The client tracks event ids: a dropped socket may be resumed."""
        self.frames_in = 0
        """(WebSocket) Client frames handed to the agent: where a resuming client restarts."""
        self._linger: asyncio.Task[None] | None = None
        self._holds: dict[str, asyncio.Task[None]] = {}
        """(HTTP) Sessions just made whose messages wait for the client to open their stream."""
        log.info("connection %s opened (%s) by %s from %s", self.id, mode, principal, peer or "?")

    @property
    def has_agent(self) -> bool:
        return self._backend is not None

    @property
    def failed(self) -> bool:
        """The connection ended because its agent failed, not by anyone's choice."""
        return self.end_reason in _FAILURES

    def touch(self) -> None:
        self.last_activity = self._clock()

    # -- the agent -------------------------------------------------------------------

    def start_agent(self) -> None:
        """Start the agent connection (on ``initialize``). Idempotent."""
        if self._backend is not None:
            return
        limits = self.limits
        self._agent_input = MessageQueue(limits.queue_messages, limits.queue_bytes)
        agent_side = self._agent_side = _AgentSide(self, self._agent_input, limits.max_message_size)
        self._backend = asyncio.ensure_future(self._run_backend(agent_side))

    async def _run_backend(self, transport: _AgentSide) -> None:
        # An agent in this process may write this principal's claim with the session
        # row it creates (one statement; see owners.py). This task's context is its own.
        NEW_SESSION_OWNER.set(self.host.owners.new_session_owner(self.principal))
        try:
            await self.host.serve(transport)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("agent for connection %s failed", self.id)
        finally:
            await transport.close()

    # -- admission: every client message, every lane -----------------------------------

    def _judge(self, m: ClientMessage, allowed: bool, *, retry: bool) -> _Verdict:
        """What becomes of client message ``m`` (``allowed``: its principal may use the
        session it names). The one place these rules are written; it changes nothing."""
        if m.kind == "response":
            if m.id is None or m.id not in self._out_pending:
                # Not an answer to anything the agent asked on this connection: most
                # likely a client's retry of an answer that did arrive (a POST whose
                # 202 was lost with the network).
                return "an answer to an unknown request"
            return None
        if m.kind == "request":
            if retry and m.id in self._answered:
                # Its first copy arrived and was answered (the answer is on its stream,
                # resumable); running it again would repeat its effects.
                return "a retry of an answered request"
            if m.id in self._pending:
                # The same id while the first is still in flight: a retry after a network
                # failure (ids of pending requests are unique, JSON-RPC), not a new request.
                return "a repeated request"
        if not allowed:
            return NOT_FOUND
        if m.kind == "request" and len(self._pending) >= self.limits.max_pending_requests:
            return (ErrorCode.INTERNAL_ERROR, "too many requests in flight on this connection")
        return None

    def _admitted(self, m: ClientMessage) -> Admitted:
        """Record what admitting ``m`` changes, and the message the agent may take."""
        if m.id is not None:
            if m.kind == "response":
                self._out_pending.pop(m.id, None)
            elif m.kind == "request":
                self._pending[m.id] = _Pending(m.session_id, m.method or "")
        self.touch()
        self.stats.messages_in += 1
        self.stats.bytes_in += len(m.body)
        return Admitted(m, _ADMISSION)

    def try_admit(self, m: ClientMessage, *, retry: bool = False) -> bool:
        """:meth:`admit` when nothing in it has to wait: the message is admitted and the
        agent takes it now (its session's owner is known here, the agent's queue has
        room). ``False``, with nothing done, for anything else (a refusal, a drop, an
        owner to look up, a full queue): then :meth:`admit` handles it."""
        side = self._agent_side
        if side is None or self._terminating or not side.has_room(len(m.body)):
            return False
        sid = m.session_id
        if sid is not None and self.host.owners.allows_now(self.principal, sid) is not True:
            return False
        if self._judge(m, True, retry=retry) is not None:
            return False
        side.offer(self._admitted(m))  # cannot fail: has_room said so
        return True

    async def admit(self, m: ClientMessage, *, retry: bool = False) -> None:
        """Admit one client message, read by :func:`~.admission.read_client_message`; every
        lane (a POST, a WebSocket frame, the socket's direct path) comes here or to
        :meth:`try_admit`. The message reaches the agent, or is answered here (its
        principal may not use the session it names: "resource not found"; too many
        requests in flight), or is dropped (a notification refused so, a repeat, an
        answer to nothing). ``retry``: the client sent it again after a network failure
        (see :data:`RETRY_HEADER`). Raises :class:`ConnectionClosedError` once the
        connection has ended."""
        if self.try_admit(m, retry=retry):
            return
        if self._agent_side is None or self._terminating:
            raise ConnectionClosedError("the connection has ended")
        sid = m.session_id
        allowed = sid is None or await self.host.owners.allows(self.principal, sid)
        verdict = self._judge(m, allowed, retry=retry)
        if verdict is None:
            await self._hand_to_agent(self._admitted(m))
        elif isinstance(verdict, str):
            log.info("connection %s: dropped %s (%s)", self.id, m.method or "an answer", verdict)
        else:
            await self._answer_here(m, *verdict)

    async def refuse(self, unreadable: Unreadable) -> None:
        """(WebSocket) Answer a frame the endpoint cannot read; it never reaches the agent."""
        log.info("connection %s: refused a client message: %s", self.id, unreadable.message)
        await self.stream.put(unreadable.answer())

    async def _hand_to_agent(self, message: Admitted) -> None:
        """Hand one admitted message to the agent (waits while the agent is not reading)."""
        queue, side = self._agent_input, self._agent_side
        if queue is None or side is None or self._terminating:
            raise ConnectionClosedError("the connection has ended")
        if side.offer(message):
            return  # the usual case: the agent takes it, or there is room, no timer needed
        try:
            accepted = await asyncio.wait_for(queue.put(message.body), self.limits.stall_timeout)
        except asyncio.TimeoutError:
            # Its queue is full and it took nothing for that long: the agent is stuck, and
            # waiting longer would also keep this connection from noticing its client leave.
            log.warning(
                "connection %s: the agent took no input for %.0f s; ending the connection",
                self.id,
                self.limits.stall_timeout,
            )
            self.host.spawn(self.terminate("agent stalled"))
            raise ConnectionClosedError("the agent stopped reading", broken=True) from None
        if not accepted:
            raise ConnectionClosedError("the connection has ended")

    async def from_agent(self, message: bytes) -> None:
        """One message the agent sent: routed to its stream here, in the agent's own task
        (waits while that stream is full: back-pressure on the agent)."""
        try:
            p = peek(message)
        except (NotAMessage, RecursionError):
            self.stats.dropped += 1
            log.info(
                "connection %s: dropped output of the agent that is not JSON-RPC: %.200r",
                self.id,
                message,
            )
            return
        self.touch()
        self.stats.messages_out += 1
        self.stats.bytes_out += len(message)
        if p.kind == "response" and p.id is not None:
            pending = self._pending.get(p.id)
            if (
                pending is not None
                and pending.method in _BOOKKEEPING
                and (self.host.owners.ledger is not None or self.mode == "http")
            ):
                # What this answer records (who owns a session, in a ledger; an HTTP
                # stream's replay barrier) must not stop halfway if the agent's request
                # task is cancelled meanwhile: it finishes in a task of its own. Without
                # a ledger, on a WebSocket, the recording never waits.
                await asyncio.shield(self._route(p, message))
                return
        await self._route(p, message)

    def agent_ended(self) -> None:
        """The agent closed its side: the connection ends with it."""
        for future in self._init_waiters.values():
            if not future.done():
                future.set_exception(ConnectionClosedError("the agent ended", broken=True))
        if not self._terminating:
            self.host.spawn(self.terminate("agent ended"))

    async def _answer_here(self, m: ClientMessage, code: int, text: str) -> None:
        if m.kind != "request" or m.id is None:
            log.info("connection %s: dropped %s (%s)", self.id, m.method, text)
            return
        pending = _Pending(m.session_id, m.method or "")
        await self._target(pending).put(error_response(m.id, code, text))

    # -- to the client ---------------------------------------------------------------

    def session(self, session_id: str) -> Outbox:
        box = self.sessions.get(session_id)
        if box is None:
            box = self.sessions[session_id] = Outbox(self.limits, self.replay_budget)
        return box

    def _stream_for(self, session_id: str) -> Outbox:
        """A session's messages go on its own stream once the client has opened it
        (GET with ``Acp-Session-Id``), else on the connection stream, where the client
        tells sessions apart by ``sessionId`` (the RFD's single-stream model). So a
        client need not open a stream per session, and neither an HTTP/2 stream limit
        nor ``max_sessions_per_connection`` strands a session. The first messages of a
        session just made wait for its stream a moment (:meth:`_hold`)."""
        box = self.sessions.get(session_id)
        if box is not None and (box.opened or session_id in self._holds):
            return box
        return self.stream

    def _hold(self, session_id: str) -> None:
        """(HTTP) ``session_id`` was just made: its messages wait in its stream's queue for
        up to ``session_stream_wait`` seconds. A client of the session-stream model opens
        that stream as soon as it has the id, and gets them all there (the agent's first
        updates often follow ``session/new`` at once); otherwise they go on the
        connection stream when the wait ends, in order (:meth:`_release`)."""
        wait = self.limits.session_stream_wait
        if (
            wait <= 0
            or session_id in self.sessions
            or len(self.sessions) >= self.limits.max_sessions_per_connection
        ):
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
                        await self.stream.put(message)
                finally:
                    box.sent()
        finally:
            self._holds.pop(session_id, None)
        if not box.opened and not len(box.queue) and self.sessions.get(session_id) is box:
            del self.sessions[session_id]  # a stream nobody opened keeps no slot

    def _target(self, pending: _Pending) -> Outbox:
        """Where the answer to a client request goes."""
        if self.mode == "websocket" or pending.session is None:
            return self.stream
        if pending.method in SESSION_ATTACHING:
            return self.stream
        return self._stream_for(pending.session)

    def expect_initialize(self, request_id: RequestId) -> asyncio.Future[bytes]:
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._init_waiters[request_id] = future
        return future

    async def _route(self, p: Peeked, message: bytes) -> None:
        if p.kind == "response":
            await self._route_response(p, message)
            return
        if p.kind == "request" and p.id is not None:
            self._out_pending[p.id] = p.session_id
        if self.mode == "http" and p.session_id is not None:
            await self._stream_for(p.session_id).put(message)
        else:
            await self.stream.put(message)

    async def _route_response(self, p: Peeked, message: bytes) -> None:
        if p.id is not None:
            waiter = self._init_waiters.pop(p.id, None)
            if waiter is not None:
                self._pending.pop(p.id, None)
                if not waiter.done():
                    waiter.set_result(message)
                return
        pending = self._pending.pop(p.id, None) if p.id is not None else None
        if pending is None:
            if not p.is_error:
                # The client asked nothing with this id: what the answer holds (a
                # session list, say) has not been through the checks below.
                log.warning(
                    "connection %s: dropped the agent's answer to unknown id %r", self.id, p.id
                )
                return
            await self.stream.put(message)  # the agent refusing something it could not read
            return
        if p.id is not None:
            answered = self._answered
            answered[p.id] = None
            if len(answered) > ANSWERED_KEPT:
                del answered[next(iter(answered))]
        answer = await self._keep_sessions_apart(pending, p, message)
        if self.mode == "http":
            # (A session the agent named but another principal owns was refused above.)
            named = p.session_id if not p.is_error and answer is message else None
            if named is not None and pending.method in SESSION_OPENING:
                self._known.add(named)
            if named is not None and pending.method in _CREATING:
                self._hold(named)
            if pending.method in SESSION_ATTACHING and pending.session is not None:
                box = self.sessions.get(pending.session)
                if box is not None and p.is_error and not box.attached and not len(box.queue):
                    del self.sessions[pending.session]  # a failed load keeps no stream
                elif box is not None:
                    # The client opens the session's stream after its POST was accepted,
                    # maybe after the agent has replayed; the answer waits for the replay
                    # to be written, however the two race.
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(box.wait_drained(), self.limits.barrier_timeout)
        await self._target(pending).put(answer)

    async def _keep_sessions_apart(self, pending: _Pending, p: Peeked, message: bytes) -> bytes:
        """Record who owns what the agent's answer names; filter ``session/list``."""
        if p.is_error or p.id is None:
            return message
        owners = self.host.owners
        method = pending.method
        if method in _CREATING and p.session_id is not None:
            if not await owners.claim(p.session_id, self.principal):
                log.warning(
                    "connection %s: the agent answered %s with session %s, which another "
                    "principal owns; refused",
                    self.id,
                    method,
                    p.session_id,
                )
                return error_response(
                    p.id, ErrorCode.INTERNAL_ERROR, "the agent reused an existing session id"
                )
        elif method in SESSION_ATTACHING and pending.session is not None:
            await owners.claim(pending.session, self.principal)
        elif method == "session/delete" and pending.session is not None:
            await owners.forget(pending.session)
            self._known.discard(pending.session)
        elif method == "session/list":
            return await self._visible_sessions(p.id, message)
        return message

    async def _visible_sessions(self, request_id: RequestId, message: bytes) -> bytes:
        """A ``session/list`` answer without the sessions this principal may not see; an
        answer that cannot be read so is not forwarded (fail closed)."""
        unreadable = error_response(
            request_id, ErrorCode.INTERNAL_ERROR, "the agent's session list could not be read"
        )
        try:
            document = msgspec.json.decode(message, type=dict[str, Any])
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return unreadable
        result = document.get("result")
        if not isinstance(result, dict):
            return unreadable
        result = cast("dict[str, Any]", result)
        listed: object = result.get("sessions")
        if not isinstance(listed, list):
            return unreadable
        entries = cast("list[object]", listed)
        ids = [_session_of(info) for info in entries]
        visible = await self.host.owners.visible(self.principal, ids)
        kept = [info for info, sid in zip(entries, ids, strict=True) if sid in visible]
        if len(kept) == len(entries):
            return message
        result["sessions"] = kept
        return msgspec.json.encode(document)

    # -- HTTP mode -------------------------------------------------------------------

    async def post(
        self, m: ClientMessage, session_header: str | None, *, retry: bool = False
    ) -> Reply:
        """A client message POSTed to this connection (RFD "Unified Endpoint Routing")."""
        self.touch()
        if m.kind == "response":
            session = self._out_pending.get(m.id) if m.id is not None else None
        else:
            session = m.session_id
        if session is not None:
            if session_header is None:
                return _error_reply(400, f"{SESSION_HEADER} header required for this message")
            if session_header != session:
                return _error_reply(400, f"{SESSION_HEADER} does not match the message's session")
            # A session this connection does not know goes to the admission like any
            # other (RFD: forwarded, 202): another principal's is refused there, one the
            # caller may use is the agent's to answer for (it may not exist at all).
            if (
                m.method in SESSION_ATTACHING
                and session not in self.sessions
                and session not in self._known
                and await self.host.owners.allows(self.principal, session)
            ):
                if len(self.sessions) >= self.limits.max_sessions_per_connection:
                    return _error_reply(429, "too many sessions on this connection")
                self.session(session)
        try:
            await self.admit(m, retry=retry)
        except ConnectionClosedError:
            return _error_reply(404, "connection has ended")
        return Reply(202)

    async def outbox_for(self, session_id: str | None) -> Outbox | None:
        """The stream a GET opens; a session this principal owns may be opened before
        ``session/load`` (the RFD's resume flow)."""
        if session_id is None:
            return self.stream
        box = self.sessions.get(session_id)
        if (
            box is None
            and len(self.sessions) < self.limits.max_sessions_per_connection
            and (
                session_id in self._known
                or await self.host.owners.owner(session_id) == self.principal
            )
        ):
            box = self.session(session_id)
        return box

    # -- resuming (WebSocket) ------------------------------------------------------------

    def linger(self) -> None:
        """The socket dropped: wait ``resume_timeout`` for the client to resume, then end."""
        if self._terminating or self._linger is not None:
            return

        async def wait_then_end() -> None:
            await asyncio.sleep(self.limits.resume_timeout)
            log.info(
                "connection %s: not resumed within %.0f s", self.id, self.limits.resume_timeout
            )
            self._linger = None
            await self.terminate("client gone")

        self._linger = asyncio.ensure_future(wait_then_end())

    def resumed(self) -> None:
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None

    @property
    def ended(self) -> bool:
        return self._terminating

    # -- teardown --------------------------------------------------------------------

    async def terminate(self, reason: EndReason = "closed") -> None:
        """End this connection: the agent's input, its task, the streams. Idempotent."""
        if self._terminating:
            await self.closed.wait()
            return
        self._terminating = True
        self.end_reason = reason
        self.host.forget(self)
        if self._linger is not None and self._linger is not asyncio.current_task():
            self._linger.cancel()
        for hold in list(self._holds.values()):
            hold.cancel()
        failed = self.failed
        # A stalled agent cannot see the end of its input: cancel it at once.
        grace = 0.0 if reason == "agent stalled" else self.limits.close_timeout
        try:
            if self._agent_input is not None:
                self._agent_input.end()
            if self._backend is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(self._backend), grace)
                except (asyncio.TimeoutError, Exception):
                    self._backend.cancel()
                    with contextlib.suppress(BaseException):
                        await self._backend
            if failed:
                # On the connection stream, whatever the request's scope: it ends with
                # the broken marker right after them, so no client sees the end first.
                for request_id in self._pending:
                    answer = error_response(request_id, ErrorCode.INTERNAL_ERROR, AGENT_ENDED)
                    self.stream.force(answer)
                self._pending.clear()
        finally:
            self.stream.end(broken=failed)
            for box in self.sessions.values():
                box.end(broken=failed)
            self.closed.set()
            self._log_end()

    def _log_end(self) -> None:
        stats = self.stats
        duration = asyncio.get_running_loop().time() - self.opened_at
        log.info(
            "connection %s ended (%s) after %.1f s: principal %s, peer %s, "
            "messages %d in / %d out, bytes %d in / %d out%s",
            self.id,
            self.end_reason,
            duration,
            self.principal,
            self.peer or "?",
            stats.messages_in,
            stats.messages_out,
            stats.bytes_in,
            stats.bytes_out,
            f", {stats.dropped} non-JSON-RPC lines dropped" if stats.dropped else "",
        )


class _AgentSide:
    """The agent's transport on a remote connection.

    It reads the client's messages from the connection's bounded queue; an agent on
    acpwire's engine takes them straight from the producer while nothing is queued
    (``push_to``, transports/base.py). What it sends is routed to the client's stream
    right here, in the sending task: no queue and pump task between the agent and that
    stream. Each saves an event-loop turn per message. A send waits while that stream
    is full (the stream's bounds are the back-pressure), and sends go out one at a
    time, in order.
    """

    def __init__(self, conn: RemoteConnection, inbox: MessageQueue, max_message_size: int) -> None:
        self._conn = conn
        self._inbox = inbox
        self.max_message_size = max_message_size
        self._sending = asyncio.Lock()
        self._closed = False
        self._sink: Callable[[bytes], bool] | None = None
        self._pushing = False

    def push_to(self, sink: Callable[[bytes], bool]) -> None:
        self._sink = sink

    def has_room(self, size: int) -> bool:
        """Whether :meth:`offer` would take a message of ``size`` bytes now."""
        return self._inbox.has_room(size)

    def offer(self, admitted: Admitted) -> bool:
        """Hand an admitted message to the agent without waiting: to its engine when
        nothing is queued, else into the queue if there is room; ``False`` if neither."""
        message = admitted.body
        inbox, sink = self._inbox, self._sink
        if (
            sink is not None
            and not inbox
            and not inbox.ended
            and not self._pushing
            and len(message) <= self.max_message_size
        ):
            self._pushing = True
            try:
                if sink(message):
                    return True
            finally:
                self._pushing = False
        return inbox.try_put(message)

    async def receive(self) -> bytes | Oversize | None:
        item = await self._inbox.get()
        if item is not None and len(item) > self.max_message_size:
            return Oversize(len(item))
        return item

    async def send(self, message: bytes) -> None:
        if self._closed:
            raise ConnectionClosedError("the agent's side of the connection is closed")
        if len(message) > self.max_message_size:
            log.warning(
                "connection %s: dropped an oversize message (%d bytes) from the agent",
                self._conn.id,
                len(message),
            )
            return
        async with self._sending:
            await self._conn.from_agent(message)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._conn.agent_ended()


class RemoteHost:
    """Every live remote connection of one endpoint, and the agent they are served by."""

    def __init__(
        self,
        target: AgentTarget,
        *,
        limits: Limits | None = None,
        owners: SessionOwners | None = None,
        keepalive: float | None = 15.0,
    ) -> None:
        self.serve = _serve_function(target)
        self.limits = limits or Limits()
        self.owners = owners if owners is not None else SessionOwners()
        self.keepalive = keepalive
        self.connections: dict[str, RemoteConnection] = {}
        self.body_bytes_in_flight = 0
        self._reaper: asyncio.Task[None] | None = None
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in the background, keeping a reference until it is done."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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
            answer = await asyncio.wait_for(waiter, self.limits.initialize_timeout)
        except (ConnectionClosedError, asyncio.TimeoutError):
            await conn.terminate()
            return _error_reply(
                502, "the agent did not answer initialize", ErrorCode.INTERNAL_ERROR
            )
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
        ``retry`` when it came with :data:`RETRY_HEADER`."""
        try:
            m = read_client_message(body)
        except Unreadable as exc:
            return Reply(exc.status, exc.answer(), "application/json")
        if connection_id is None:
            if m.kind == "request" and m.method == "initialize":
                return await self.initialize(m, principal, peer)
            return _error_reply(400, f"{CONNECTION_HEADER} header required")
        conn = self.lookup(connection_id, principal)
        if conn is None or conn.mode != "http":
            return _error_reply(404, "unknown connection")
        return await conn.post(m, session_id, retry=retry)

    async def delete(self, connection_id: str | None, principal: str) -> Reply:
        if connection_id is None:
            return _error_reply(400, f"{CONNECTION_HEADER} header required")
        conn = self.lookup(connection_id, principal)
        if conn is None:
            return _error_reply(404, "unknown connection")
        await conn.terminate()
        return Reply(202)

    async def aclose(self) -> None:
        """End every connection (server shutdown). Idempotent."""
        self._closing = True
        conns = list(self.connections.values())
        await asyncio.gather(*(c.terminate("shutdown") for c in conns), return_exceptions=True)
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(BaseException):
                await self._reaper
        self.owners.close()
