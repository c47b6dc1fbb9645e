"""One remote client's connection to one agent.

A :class:`RemoteConnection` is made by the host (:mod:`.host`) for each client
connection (an HTTP ``initialize``, a WebSocket upgrade) and served by an agent
connection of its own. Its jobs each live in a module of their own, and meet
here: the admission (:mod:`.admission`), the agent's side (:mod:`.agent_side`),
the streams to the client (:mod:`.streams`, :mod:`.outbox`), the sessions its
principal owns (:mod:`.claims`) and its lifecycle (:mod:`.lifecycle`). The HTTP
and WebSocket adapters (:mod:`.asgi`, :mod:`.websocket`) only move bytes. Who
the caller is (the *principal*) was settled before, by :mod:`.security`.

Rules (RFD streamable-http-websocket-transport; docs/remote.md lists what the
RFD leaves open and what we chose; docs/security.md the threat model):

* **Identity.** A connection id (``Acp-Connection-Id``) is 192 random bits,
  and the connection belongs to the principal that opened it: to anyone else
  it does not exist (:meth:`~.host.RemoteHost.lookup`).
* **One admission.** Every client message, on every lane, comes in through
  :meth:`RemoteConnection.admit`: try now (:meth:`~RemoteConnection.try_admit`:
  its session's owner known, room with the agent), else wait (the owner looked
  up, the agent's queue). Either way it is judged by the same rules
  (:meth:`.admission.Admission.judge`) and reaches the agent only as an
  :class:`~.admission.Admitted` message.
* **Only protocol reaches the client.** A line the agent writes that is not a
  JSON-RPC message is dropped, counted and logged, never forwarded; an answer
  to an id no client request has is dropped (what it holds, a session list
  say, has not been through the checks), unless it is an error.
* **Failure is never a clean end.** When the agent ends on its own (or stalls,
  :mod:`.agent_side`), every client request it had not answered is answered
  here with an internal error (over HTTP on the connection stream, ahead of
  its end), then the streams end *broken* (WebSocket close 1011, SSE
  ``event: error``). An end the server chose (DELETE, client gone, idle
  timeout, shutdown) is clean.
* **Durable** (``acp serve --resumable``, :mod:`.resumable`). Every stream
  writes cursors, ``initialize`` advertises them, a resumed stream says where
  each turn is (:mod:`.turns`), and a connection outlives its streams: a
  WebSocket's for ``Limits.resume_timeout`` seconds, and an HTTP connection
  with no stream open is ended only after that grace period, never because a
  stream dropped.
* **Teardown** (:meth:`RemoteConnection.terminate`, idempotent). The
  connection leaves its host, the agent is stopped in bounded time
  (:meth:`.agent_side.AgentSide.stop`; at once for a stalled agent, which
  cannot see the end of its input), then its streams end.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from ..protocol.errors import ConnectionClosedError, ErrorCode
from ..protocol.peek import SESSION_ATTACHING, SESSION_OPENING, NotAMessage, Peeked, peek
from .admission import Admission, Admitted, ClientMessage, Pending, RequestId, Unreadable
from .agent_side import AgentSide, AgentStalled, ServeFunction
from .claims import CREATING, RECORDED, SessionClaims
from .headers import SESSION_HEADER
from .lifecycle import EndReason, Lifecycle
from .limits import Limits
from .outbox import Outbox, Replay
from .owners import SessionOwners
from .replies import Reply, error_reply, error_response
from .resumable import acknowledgment, advertise
from .retention import SharedRetention
from .streams import Mode, Streams
from .turns import TurnTracker

log = logging.getLogger("acpwire.server")

AGENT_ENDED = "the agent ended before answering"


class ConnectionHost(Protocol):
    """What a connection uses of the host that made it (:class:`~.host.RemoteHost`)."""

    limits: Limits
    owners: SessionOwners
    serve: ServeFunction
    resumable: bool
    keepalive: float | None
    retention: SharedRetention | None

    def spawn(self, work: Coroutine[Any, Any, None]) -> None: ...

    def forget(self, conn: RemoteConnection) -> None: ...


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

    def __init__(self, host: ConnectionHost, mode: Mode, principal: str, peer: str) -> None:
        self.host = host
        self.limits = host.limits
        self.mode = mode
        self.principal = principal
        self.peer = peer
        self.id = secrets.token_urlsafe(24)
        self._clock = asyncio.get_running_loop().time
        self.opened_at = self.last_activity = self._clock()
        self.life = Lifecycle()
        self.stats = Stats()
        self.admission = Admission(self.limits.max_pending_requests)
        self.turns = TurnTracker() if host.resumable else None
        """Where each session's turn is (``--resumable``): told to a resumed stream."""
        self.protocol_version = 1
        """What the agent's ``initialize`` answer chose."""
        keeping = host.resumable and host.retention is not None
        self.streams = Streams(
            mode,
            self.limits,
            stamping=host.resumable,
            on_written=self.turns.written if self.turns is not None else None,
            keeper=self._keeper if keeping else None,
        )
        self.stream = self.streams.main
        """The connection stream (HTTP), or everything for the socket (WebSocket)."""
        self.sessions = self.streams.sessions
        """Session streams (HTTP only)."""
        self.claims = SessionClaims(host.owners, principal, self.id)
        self.agent_side: AgentSide | None = None
        """The agent's transport, once ``initialize`` has started the agent."""
        self._init_waiters: dict[RequestId, asyncio.Future[bytes]] = {}
        self.resumable = host.resumable
        """A dropped stream may be resumed: the connection outlives it (always with
        ``--resumable``; a WebSocket whose client asked, otherwise)."""
        self._attached = 0
        """(HTTP) Streams a client holds open now."""
        self.frames_in = 0
        """(WebSocket) Client frames handed to the agent: where a resuming client restarts."""
        log.info("connection %s opened (%s) by %s from %s", self.id, mode, principal, peer or "?")
        if host.resumable and mode == "http":
            self.linger()  # until its client opens a stream

    @property
    def has_agent(self) -> bool:
        return self.agent_side is not None

    @property
    def ended(self) -> bool:
        """Teardown has begun: no client message is taken any more."""
        return self.life.ending

    @property
    def failed(self) -> bool:
        """The connection ended because its agent failed, not by anyone's choice."""
        return self.life.failed

    @property
    def end_reason(self) -> EndReason | None:
        return self.life.end_reason

    @property
    def closed(self) -> asyncio.Event:
        """Set once teardown is over."""
        return self.life.closed

    def touch(self) -> None:
        self.last_activity = self._clock()

    # -- the agent -------------------------------------------------------------------

    def start_agent(self) -> None:
        """Start the agent connection (on ``initialize``). Idempotent."""
        if self.agent_side is not None:
            return
        side = self.agent_side = AgentSide(self.id, self.limits, self.from_agent, self.agent_ended)
        side.start(self.host.serve, self.host.owners.new_session_owner(self.principal))

    def agent_ended(self) -> None:
        """The agent closed its side: the connection ends with it."""
        for future in self._init_waiters.values():
            if not future.done():
                future.set_exception(ConnectionClosedError("the agent ended", broken=True))
        if not self.life.ending:
            self.host.spawn(self.terminate("agent ended"))

    # -- admission: every client message, every lane -----------------------------------

    def try_admit(self, m: ClientMessage, *, retry: bool = False) -> bool:
        """:meth:`admit` when nothing in it has to wait: the message is admitted and the
        agent takes it now (its session's owner is known here, the agent's queue has
        room). ``False``, with nothing done, for anything else (a refusal, a drop, an
        owner to look up, a full queue): then :meth:`admit` handles it."""
        side = self.agent_side
        if side is None or self.life.ending or not side.has_room(len(m.body)):
            return False
        sid = m.session_id
        if sid is not None and self.host.owners.allows_now(self.principal, sid) is not True:
            return False
        if self.admission.judge(m, True, retry=retry) is not None:
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
        (see :data:`~.headers.RETRY_HEADER`). Raises :class:`ConnectionClosedError` once
        the connection has ended."""
        if self.try_admit(m, retry=retry):
            return
        if self.agent_side is None or self.life.ending:
            raise ConnectionClosedError("the connection has ended")
        sid = m.session_id
        allowed = sid is None or await self.host.owners.allows(self.principal, sid)
        verdict = self.admission.judge(m, allowed, retry=retry)
        if verdict is None:
            await self._hand_to_agent(self._admitted(m))
        elif isinstance(verdict, str):
            log.info("connection %s: dropped %s (%s)", self.id, m.method or "an answer", verdict)
        else:
            await self._answer_here(m, *verdict)

    def _admitted(self, m: ClientMessage) -> Admitted:
        if self.turns is not None:
            self.turns.client(m)
        self.touch()
        self.stats.messages_in += 1
        self.stats.bytes_in += len(m.body)
        return self.admission.admitted(m)

    async def refuse(self, unreadable: Unreadable) -> None:
        """(WebSocket) Answer a frame the endpoint cannot read; it never reaches the agent."""
        log.info("connection %s: refused a client message: %s", self.id, unreadable.message)
        await self.stream.put(unreadable.answer())

    async def _hand_to_agent(self, message: Admitted) -> None:
        """Hand one admitted message to the agent (waits while the agent is not reading)."""
        side = self.agent_side
        if side is None or self.life.ending:  # it may have ended while the owner was looked up
            raise ConnectionClosedError("the connection has ended")
        try:
            await side.hand(message)
        except AgentStalled:
            log.warning(
                "connection %s: the agent took no input for %.0f s; ending the connection",
                self.id,
                self.limits.stall_timeout,
            )
            self.host.spawn(self.terminate("agent stalled"))
            raise

    async def _answer_here(self, m: ClientMessage, code: int, text: str) -> None:
        if m.kind != "request" or m.id is None:
            log.info("connection %s: dropped %s (%s)", self.id, m.method, text)
            return
        pending = Pending(m.session_id, m.method or "")
        await self.streams.for_answer(pending).put(error_response(m.id, code, text))

    # -- to the client ---------------------------------------------------------------

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
            pending = self.admission.pending.get(p.id)
            if (
                pending is not None
                and pending.method in RECORDED
                and (self.host.owners.ledger is not None or self.mode == "http")
            ):
                # What this answer records (who owns a session, in a ledger; an HTTP
                # stream's replay barrier) must not stop halfway if the agent's request
                # task is cancelled meanwhile: it finishes in a task of its own. Without
                # a ledger, on a WebSocket, the recording never waits.
                await asyncio.shield(self._route(p, message))
                return
        await self._route(p, message)

    def _initialized(self, answer: bytes) -> bytes:
        """The agent answered ``initialize``: what the client gets (with ``--resumable``,
        the transport's capabilities added)."""
        if self.turns is None:
            return answer
        answer, self.protocol_version = advertise(answer, self.limits, self.host.keepalive)
        return answer

    def expect_initialize(self, request_id: RequestId) -> asyncio.Future[bytes]:
        """(HTTP) The answer to ``initialize`` goes in the POST's reply, not on a stream."""
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._init_waiters[request_id] = future
        return future

    async def _route(self, p: Peeked, message: bytes) -> None:
        if p.kind == "response":
            await self._route_response(p, message)
            return
        if p.kind == "request" and p.id is not None:
            self.admission.asked[p.id] = p.session_id
        await self.streams.for_message(p.session_id).put(message)

    async def _route_response(self, p: Peeked, message: bytes) -> None:
        if p.id is not None:
            waiter = self._init_waiters.pop(p.id, None)
            if waiter is not None:
                self.admission.pending.pop(p.id, None)
                if not waiter.done():
                    waiter.set_result(self._initialized(message))
                return
        pending = self.admission.answered(p.id) if p.id is not None else None
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
        answer = await self.claims.record(pending, p, message)
        if pending.method == "initialize":
            answer = self._initialized(answer)
        elif self.turns is not None and not p.is_error:
            self._follow(pending, p.session_id)
        if self.mode == "http":
            # (A session the agent named but another principal owns was refused above.)
            named = p.session_id if not p.is_error and answer is message else None
            if named is not None and pending.method in SESSION_OPENING:
                self.claims.known.add(named)
            if named is not None and pending.method in CREATING:
                self.streams.hold(named)
            if pending.method in SESSION_ATTACHING and pending.session is not None:
                await self.streams.after_attach(pending.session, failed=p.is_error)
        await self.streams.for_answer(pending).put(answer)

    def _follow(self, pending: Pending, named: str | None) -> None:
        """(``--resumable``) Keep the turn tracker's list of sessions up to date."""
        assert self.turns is not None
        if pending.method in SESSION_OPENING:
            session = named or pending.session
            if session is not None:
                self.turns.opened(session)
        elif pending.method in ("session/close", "session/delete") and pending.session:
            self.turns.forget(pending.session)

    def acknowledgment(self, box: Outbox, *, received: int | None = None) -> list[bytes]:
        """(``--resumable``) What stream ``box`` writes after a replay, before live
        messages: where the turn of each session it carries is (:mod:`.resumable`);
        ``received``: how many client frames the server took (a WebSocket's)."""
        if self.turns is None:
            return []
        sessions = self.streams.served_by(box, self.turns.sessions)
        own = next((sid for sid, b in self.sessions.items() if b is box), None)
        return acknowledgment(
            self.turns, sessions, self.protocol_version, session_stream=own, received=received
        )

    def _keeper(self, key: str, box: Outbox) -> Any:
        """(``--resumable`` on a shared store) What keeps stream ``key``'s messages there."""
        retention = self.host.retention
        assert retention is not None

        async def keep(entries: Replay) -> None:
            turns = self.turns
            states = {}
            if turns is not None:
                states = {
                    sid: turns.state(sid) for sid in self.streams.served_by(box, turns.sessions)
                }
            try:
                await retention.keep(
                    self.id,
                    key,
                    principal=self.principal,
                    mode=self.mode,
                    entries=entries,
                    turns=states,
                )
            except Exception as exc:  # the store failed: the stream goes on, unkept
                log.warning(
                    "connection %s: cannot keep its streams in the store (%s); "
                    "it cannot be resumed through another worker",
                    self.id,
                    str(exc) or type(exc).__name__,
                )
                self.streams.stop_keeping()

        return keep

    def stream_opened(self) -> None:
        """(HTTP) A client holds one more stream: the connection does not linger."""
        self._attached += 1
        self.life.resume()

    def stream_closed(self) -> None:
        """(HTTP) A stream's request ended; with ``--resumable`` the connection is ended
        once no stream has been open for ``resume_timeout`` seconds."""
        self._attached -= 1
        if self._attached == 0 and self.resumable and not self.life.ending:
            self.linger()

    # -- HTTP mode -------------------------------------------------------------------

    async def post(
        self, m: ClientMessage, session_header: str | None, *, retry: bool = False
    ) -> Reply:
        """A client message POSTed to this connection (RFD "Unified Endpoint Routing")."""
        self.touch()
        if m.kind == "response":
            session = self.admission.asked.get(m.id) if m.id is not None else None
        else:
            session = m.session_id
        if session is not None:
            if session_header is None:
                return error_reply(400, f"{SESSION_HEADER} header required for this message")
            if session_header != session:
                return error_reply(400, f"{SESSION_HEADER} does not match the message's session")
            # A session this connection does not know goes to the admission like any
            # other (RFD: forwarded, 202): another principal's is refused there, one the
            # caller may use is the agent's to answer for (it may not exist at all).
            if (
                m.method in SESSION_ATTACHING
                and session not in self.sessions
                and session not in self.claims.known
                and await self.host.owners.allows(self.principal, session)
            ):
                if self.streams.full:
                    return error_reply(429, "too many sessions on this connection")
                self.streams.session(session)
        try:
            await self.admit(m, retry=retry)
        except ConnectionClosedError:
            return error_reply(404, "connection has ended")
        return Reply(202)

    async def outbox_for(self, session_id: str | None) -> Outbox | None:
        """The stream a GET opens; a session this principal owns may be opened before
        ``session/load`` (the RFD's resume flow)."""
        if session_id is None:
            return self.stream
        box = self.sessions.get(session_id)
        if (
            box is None
            and not self.streams.full
            and (
                session_id in self.claims.known
                or await self.host.owners.owner(session_id) == self.principal
            )
        ):
            box = self.streams.session(session_id)
        return box

    # -- resuming ------------------------------------------------------------------------

    def linger(self) -> None:
        """No client holds a stream (its socket dropped; with ``--resumable``, its last SSE
        stream ended): wait ``resume_timeout`` for the client to resume, then end."""
        timeout = self.limits.resume_timeout

        async def not_resumed() -> None:
            log.info("connection %s: not resumed within %.0f s", self.id, timeout)
            await self.terminate("client gone")

        self.life.linger(timeout, not_resumed)

    def resumed(self) -> None:
        """A client re-attached a socket: the connection no longer waits to end."""
        self.life.resume()

    # -- teardown --------------------------------------------------------------------

    async def terminate(self, reason: EndReason = "closed") -> None:
        """End this connection: the agent's input, its task, the streams. Idempotent."""
        life = self.life
        if not life.begin_end(reason):
            await life.closed.wait()
            return
        self.host.forget(self)
        self.streams.stop_holds()
        if self.host.retention is not None and self.host.resumable:
            self.host.retention.forget(self.id)
        failed = life.failed
        # A stalled agent cannot see the end of its input: cancel it at once.
        grace = 0.0 if reason == "agent stalled" else self.limits.close_timeout
        try:
            if self.agent_side is not None:
                await self.agent_side.stop(grace)
            if failed:
                # On the connection stream, whatever the request's scope: it ends with
                # the broken marker right after them, so no client sees the end first.
                for request_id in self.admission.unanswered():
                    answer = error_response(request_id, ErrorCode.INTERNAL_ERROR, AGENT_ENDED)
                    self.stream.force(answer)
        finally:
            self.streams.end(broken=failed)
            life.finish()
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
