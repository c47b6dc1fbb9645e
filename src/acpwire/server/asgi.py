"""The ``/acp`` endpoint as an ASGI 3 application: Streamable HTTP and WebSocket.

Only the HTTP surface lives here (methods, headers, content negotiation, body
reading, SSE framing; a WebSocket upgrade goes to :mod:`.websocket`); who may
call is decided by :mod:`.security` before a request gets here, and every
decision about connections, sessions and routing by :class:`~.host.RemoteHost`
and its connections. Any ASGI server can run it; :mod:`.runner` uses hypercorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import warnings
from collections.abc import Iterable, Mapping
from typing import cast

from .._waits import within
from ..protocol.cursors import (
    CONNECTION_GONE,
    OUTSIDE_RETENTION,
    RESUME_FAILED,
    STREAM_IN_USE,
    TURN_STATES,
    UNKNOWN_CURSOR,
    control,
)
from ..store.base import OwnerLedger
from ..store.streams import StreamLog
from .agent_side import AgentTarget
from .headers import (
    CONNECTION_HEADER,
    KEEPALIVE_HEADER,
    RETRY_HEADER,
    SESSION_HEADER,
    header,
    keepalive_asked,
    last_event_id,
    peer,
)
from .host import RemoteHost
from .limits import Limits
from .outbox import Outbox, Replay
from .owners import SessionOwners
from .replies import Reply, busy_reply
from .resumable import refusal
from .retention import SharedRetention
from .security import (
    ANONYMOUS,
    PRINCIPAL_KEY,
    Authenticator,
    BearerTokens,
    Message,
    Receive,
    Scope,
    SecurityMiddleware,
    SecuritySettings,
    Send,
    refuse,
)
from .ui import UI_PATHS, UiFiles
from .websocket import serve_websocket

log = logging.getLogger("acpwire.server")

Auth = Authenticator | Iterable[str] | Mapping[str, str] | None
"""``asgi_app(auth=...)``: a hook, bearer tokens (or token -> principal), or ``None``."""

_SSE_BROKEN = (
    b'event: error\ndata: {"message":"the agent ended unexpectedly; the connection is closed"}\n\n'
)
"""The last event of a stream whose agent failed (docs/remote.md): not a JSON-RPC
message, so a client that ignores event types cannot take it for one."""
_SSE_GONE = (
    b'event: error\ndata: {"message":"the worker that served this connection is gone",'
    b'"reason":"connection_gone"}\n\n'
)
"""The last event of a dead worker's stream replayed by another (:mod:`.retention`)."""


_COOKIE = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+=[!#-+\--:<-\[\]-~]*$")


def check_cookie(cookie: str) -> str:
    """``NAME=VALUE`` for ``Set-Cookie``, checked against RFC 6265's syntax."""
    if not _COOKIE.match(cookie):
        raise ValueError(f"not a NAME=VALUE cookie (RFC 6265): {cookie!r}")
    return cookie


_SSE_BATCH_BYTES = 64 * 1024
"""Queued events joined into one write, up to about this size."""


class NoAuthenticationWarning(UserWarning):
    """``asgi_app(auth=None)``: anyone who can reach the endpoint runs the agent."""


def _media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


def _accepts_event_stream(value: str | None) -> bool:
    if value is None:
        return False
    for part in value.split(","):
        media = _media_type(part)
        if media in ("text/event-stream", "text/*", "*/*"):
            return True
    return False


async def _respond(send: Send, reply: Reply) -> None:
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers]
    if reply.content_type is not None:
        headers.append((b"content-type", reply.content_type.encode("latin-1")))
    headers.append((b"content-length", str(len(reply.body)).encode()))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body})


def _text(status: int, text: str) -> Reply:
    return Reply(status, text.encode(), "text/plain")


def _sse_event(message: bytes, event_id: int | None) -> bytes:
    # A JSON text may contain raw newlines between tokens; SSE joins data lines with \n.
    lines = message.split(b"\n")
    data = b"".join(b"data: " + line + b"\n" for line in lines)
    if event_id is None:  # not a position in the stream (a resume's acknowledgment)
        return b"event: message\n%s\n" % data
    return b"id: %d\nevent: message\n%s\n" % (event_id, data)


_LEGACY_REFUSALS = {
    UNKNOWN_CURSOR: (410, "this stream can no longer be resumed from there"),
    OUTSIDE_RETENTION: (410, "this stream can no longer be resumed from there"),
    CONNECTION_GONE: (404, "unknown connection"),
    STREAM_IN_USE: (409, "this stream is already open"),
}
"""What a resume is refused with when the endpoint is not ``--resumable`` (acpwire's
own resume, before the durable transport draft)."""


class _ClientGone(Exception):
    """The client disconnected while its request body was being read."""


class _BodyRefused(Exception):
    def __init__(self, reply: Reply) -> None:
        self.reply = reply


class AcpAsgiApp:
    """ASGI app serving one ACP endpoint behind :class:`~.security.SecurityMiddleware`;
    see :func:`asgi_app`."""

    def __init__(
        self,
        host: RemoteHost,
        security: SecuritySettings,
        *,
        path: str = "/acp",
        cookie: str | None = None,
        ui: bool = False,
    ) -> None:
        self.host = host
        self.security = security
        self.path = path
        self.cookie = check_cookie(cookie) if cookie is not None else None
        """``NAME=VALUE`` set on every answer of the endpoint (RFD: clients return
        cookies; a load balancer keeps a client on the worker its cookie names)."""
        self._guarded = SecurityMiddleware(self._endpoint, security)
        self.ui = UiFiles() if ui else None
        """The web client's files at ``/`` (:mod:`.ui`), or ``None``."""

    async def aclose(self) -> None:
        """End every connection: its agent, its streams and its WebSocket."""
        await self.host.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        path = scope.get("path", "")
        if path.rstrip("/") != self.path.rstrip("/"):
            ui = self.ui
            if ui is None or kind != "http" or not ui.serves(path):
                await refuse(scope, receive, send, 404, "not found")
            elif not self.security.host_allowed(header(scope, "host"), scope.get("server")):
                await refuse(scope, receive, send, 421, "Invalid Host header")
            else:
                await ui(scope, receive, send)
            return
        await self._guarded(scope, receive, send)

    def _with_cookie(self, scope: Scope, send: Send) -> Send:
        if self.cookie is None:
            return send
        secure = "; Secure" if scope.get("scheme") in ("https", "wss") else ""
        value = f"{self.cookie}; Path={self.path}; HttpOnly; SameSite=Strict{secure}"
        header = (b"set-cookie", value.encode("latin-1"))

        async def send_with_cookie(message: Message) -> None:
            if message["type"] in ("http.response.start", "websocket.accept"):
                message = {**message, "headers": [*message.get("headers", ()), header]}
            await send(message)

        return send_with_cookie

    async def _endpoint(self, scope: Scope, receive: Receive, send: Send) -> None:
        principal = scope.get(PRINCIPAL_KEY)
        if not isinstance(principal, str):  # not through the middleware: fail closed
            await refuse(scope, receive, send, 401, "Unauthorized")
            return
        send = self._with_cookie(scope, send)
        if scope["type"] == "websocket":
            await serve_websocket(self.host, scope, receive, send, principal)
            return
        method = scope.get("method", "GET")
        if method == "POST":
            await self._post(scope, receive, send, principal)
        elif method == "GET":
            await self._get(scope, receive, send, principal)
        elif method == "DELETE":
            reply = await self.host.delete(header(scope, CONNECTION_HEADER), principal)
            await _respond(send, reply)
        else:
            reply = _text(405, "method not allowed")
            reply.headers.append(("allow", "GET, POST, DELETE"))
            await _respond(send, reply)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.host.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- POST --------------------------------------------------------------------------

    async def _post(self, scope: Scope, receive: Receive, send: Send, principal: str) -> None:
        if _media_type(header(scope, "content-type")) != "application/json":
            await self._refuse_unread(
                scope, receive, send, _text(415, "Content-Type must be application/json")
            )
            return
        host = self.host
        held = 0
        try:
            body = await self._read_body(scope, receive)
            held = len(body)
            reply = await host.post(
                body,
                header(scope, CONNECTION_HEADER),
                header(scope, SESSION_HEADER),
                principal,
                peer(scope),
                retry=header(scope, RETRY_HEADER) is not None,
            )
        except _BodyRefused as refused:
            reply = refused.reply
            if scope.get("http_version") in ("1.0", "1.1"):
                await self._refuse_unread(scope, receive, send, reply)
                return
        except _ClientGone:
            return
        finally:
            host.body_bytes_in_flight -= held
        await _respond(send, reply)

    async def _refuse_unread(
        self, scope: Scope, receive: Receive, send: Send, reply: Reply
    ) -> None:
        """Answer a POST whose body was not (wholly) read.

        Over HTTP/1.x the rest of the body is not kept: the answer says ``connection:
        close`` (a client that reused the connection would get no answer to its next
        request: the server closes it rather than wait for the body), and what the client
        still sends is read and dropped. HTTP/2 ends just this stream; the header is not
        allowed there.
        """
        if scope.get("http_version") in ("1.0", "1.1"):
            reply.headers.append(("connection", "close"))
            await _respond(send, reply)
            await self._discard_body(receive)
        else:
            await _respond(send, reply)

    async def _discard_body(self, receive: Receive) -> None:
        """Read and drop what is left of a refused body, for a bounded time and size.

        Closing a socket with unread data in it sends a reset, which can reach the
        client before it has read the refusal (a 413 then looks like a network error);
        a client still sending gets to finish first. An idle or endless one is cut off.
        """
        limits = self.host.limits

        async def drain() -> None:
            budget = 4 * limits.max_message_size
            while budget > 0:
                message = await receive()
                if message["type"] != "http.request" or not message.get("more_body"):
                    return
                budget -= len(message.get("body", b""))

        with contextlib.suppress(asyncio.TimeoutError):
            await within(drain(), limits.close_timeout)

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        """The whole body, within the size limit, the time limit and the endpoint's budget.

        Bytes read count against ``host.body_bytes_in_flight`` until the caller
        releases them (after the agent has taken the message).
        """
        host, limits = self.host, self.host.limits
        declared = header(scope, "content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_message_size:
            raise _BodyRefused(_text(413, "message too large"))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limits.body_timeout
        body = bytearray()
        try:
            while True:
                remaining = deadline - loop.time()
                try:
                    message = await within(receive(), max(remaining, 0.0))
                except asyncio.TimeoutError:
                    raise _BodyRefused(_text(408, "request body too slow")) from None
                if message["type"] == "http.disconnect":
                    raise _ClientGone
                chunk = message.get("body", b"")
                if len(body) + len(chunk) > limits.max_message_size:
                    raise _BodyRefused(_text(413, "message too large"))
                if host.body_bytes_in_flight + len(chunk) > limits.max_body_bytes_in_flight:
                    raise _BodyRefused(busy_reply("too much request data in flight"))
                body += chunk
                host.body_bytes_in_flight += len(chunk)
                if not message.get("more_body", False):
                    return bytes(body)
        except BaseException:
            host.body_bytes_in_flight -= len(body)
            raise

    # -- GET (SSE) ---------------------------------------------------------------------

    async def _get(self, scope: Scope, receive: Receive, send: Send, principal: str) -> None:
        if not _accepts_event_stream(header(scope, "accept")):
            await _respond(send, _text(406, "Accept must include text/event-stream"))
            return
        connection_id = header(scope, CONNECTION_HEADER)
        if connection_id is None:
            await _respond(send, _text(400, "Acp-Connection-Id header required"))
            return
        durable = self.host.resumable
        last = last_event_id(scope)
        if last == -1:
            if durable:
                await self._refuse_resume(send, UNKNOWN_CURSOR, "not a cursor of this endpoint")
            else:
                await _respond(send, _text(400, "Last-Event-ID must be an event id of this stream"))
            return
        conn = self.host.lookup(connection_id, principal)
        if conn is None and last is not None and self.host.retention is not None:
            # Not here: maybe a dead worker's, kept in the store (.retention).
            stream = header(scope, SESSION_HEADER) or ""
            orphan = await self.host.retention.orphan(
                connection_id, stream, principal, "http", last
            )
            if isinstance(orphan, str):
                await self._refuse_resume(send, orphan, "cannot resume from there")
            else:
                await self._replay_orphan(send, *orphan)
            return
        if conn is None or conn.mode != "http":
            if last is not None:
                await self._refuse_resume(send, CONNECTION_GONE, "unknown connection")
            else:
                await _respond(send, _text(404, "unknown connection"))
            return
        box = await conn.outbox_for(header(scope, SESSION_HEADER))
        if box is None:
            if last is not None and durable:
                await self._refuse_resume(
                    send, UNKNOWN_CURSOR, "this connection has no such stream"
                )
            else:
                await _respond(send, _text(404, "unknown session"))
            return
        if last is not None:
            found = box.resume_from(last)
            if isinstance(found, str):
                await self._refuse_resume(send, found, "cannot resume from there")
                return
        # A client that resumes takes the stream over from a request whose client is gone
        # but not yet noticed; a second plain GET is refused.
        if not await box.attach(take_over=last is not None, timeout=self.host.limits.close_timeout):
            if last is not None:
                await self._refuse_resume(send, STREAM_IN_USE, "the stream is still in use")
            else:
                await _respond(send, _text(409, "this stream is already open"))
            return
        replay: list[tuple[int, bytes]] = []
        if last is not None:
            # Read once the old request has let go: until then its writer may still have
            # taken messages off the queue and written them to the broken socket.
            found = box.resume_from(last)
            if isinstance(found, str):
                box.detach()
                await self._refuse_resume(send, found, "cannot resume from there")
                return
            replay = found
        conn.touch()
        conn.stream_opened()
        keepalive = keepalive_asked(scope, self.host.keepalive) if durable else self.host.keepalive
        headers = [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-store"),
            (b"x-accel-buffering", b"no"),
            (CONNECTION_HEADER.encode(), conn.id.encode()),
        ]
        if durable and keepalive is not None:
            headers.append((KEEPALIVE_HEADER.encode(), b"%g" % keepalive))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            after = conn.acknowledgment(box) if last is not None else []
            await self._stream(box, receive, send, replay, after, keepalive)
        finally:
            box.detach()
            conn.stream_closed()
            conn.touch()

    async def _replay_orphan(self, send: Send, replay: Replay, turns: dict[str, object]) -> None:
        """A dead worker's stream (:mod:`.retention`): what the client missed, then the
        refusal to go on (``stream/resume_failed``, ``connection_gone``: no agent serves
        the connection any more), then the end of the stream, broken."""
        params = {
            "reason": CONNECTION_GONE,
            "message": "the worker that served this connection is gone; what it wrote was replayed",
            "_meta": {TURN_STATES: turns},
        }
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        body = [b": open\n\n", *(_sse_event(message, n) for n, message in replay)]
        body += [_sse_event(control(RESUME_FAILED, params), None), _SSE_GONE]
        await send({"type": "http.response.body", "body": b"".join(body), "more_body": False})

    async def _refuse_resume(self, send: Send, reason: str, text: str) -> None:
        """A resume that cannot be served: 409 with the reason (``--resumable``), else
        acpwire's earlier answers (404, 409, 410)."""
        if self.host.resumable:
            body = refusal(reason, text)
            await _respond(send, Reply(409, body, "application/json"))
        else:
            status, legacy = _LEGACY_REFUSALS[reason]
            await _respond(send, _text(status, legacy))

    async def _stream(
        self,
        box: Outbox,
        receive: Receive,
        send: Send,
        replay: list[tuple[int, bytes]],
        after: list[bytes],
        keepalive: float | None,
    ) -> None:
        async def client_gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        async def write() -> None:
            # Opening bytes let the client see the stream is live before any event.
            await send({"type": "http.response.body", "body": b": open\n\n", "more_body": True})
            for start in range(0, len(replay), 256):
                body = b"".join(_sse_event(old, n) for n, old in replay[start : start + 256])
                await send({"type": "http.response.body", "body": body, "more_body": True})
            if after:
                body = b"".join(_sse_event(message, None) for message in after)
                await send({"type": "http.response.body", "body": body, "more_body": True})
            queue = box.queue
            while not box.claimed:
                if not len(queue):
                    try:
                        # Wait without taking: a message taken inside a wait_for that is
                        # then cancelled (a take-over) would be lost on Python < 3.12.
                        await within(queue.readable(), keepalive)
                    except asyncio.TimeoutError:
                        chunk = b": keepalive\n\n"
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                        continue
                message = await queue.get()  # at once: it is readable
                if message is None:
                    if box.broken:
                        await send(
                            {"type": "http.response.body", "body": _SSE_BROKEN, "more_body": True}
                        )
                    return
                # Whatever else is already queued goes out in the same write: one ASGI
                # message and one socket write for a burst of updates, not one each.
                taken = [box.take(message)]
                events = [_sse_event(taken[0][1], taken[0][0])]
                size = len(events[0])
                while len(queue) and size < _SSE_BATCH_BYTES:
                    more = await queue.get()
                    if more is None:
                        break
                    taken.append(box.take(more))
                    events.append(_sse_event(taken[-1][1], taken[-1][0]))
                    size += len(events[-1])
                await box.kept(taken)  # in the shared store before the client has it
                body = b"".join(events)
                await send({"type": "http.response.body", "body": body, "more_body": True})
                for _ in events:
                    box.mark_written()

        async with box.writing(client_gone(), write()) as (_, writer, _):
            pass
        if writer.done() and not writer.cancelled() and writer.exception() is None:
            with contextlib.suppress(Exception):
                await send({"type": "http.response.body", "body": b"", "more_body": False})


def _authenticator(auth: Auth) -> Authenticator | None:
    if auth is None:
        return None
    if isinstance(auth, (str, bytes)):
        raise TypeError("auth= takes a list of tokens, not one string: auth=[token]")
    if isinstance(auth, Mapping):
        return BearerTokens(cast("Mapping[str, str]", auth))
    if callable(auth):
        return auth
    return BearerTokens(auth)


def asgi_app(
    agent: AgentTarget,
    *,
    auth: Auth,
    path: str = "/acp",
    allowed_hosts: Iterable[str] | None = None,
    allowed_origins: Iterable[str] = (),
    limits: Limits | None = None,
    owners: SessionOwners | None = None,
    keepalive: float | None = 15.0,
    cookie: str | None = None,
    resumable: bool = False,
    ui: bool = False,
) -> AcpAsgiApp:
    """An ASGI app serving ``agent`` on ``path`` over Streamable HTTP and WebSocket.

    ``agent`` is an :class:`~acpwire.agent.app.AgentApp`, anything with
    ``async serve(transport)`` (such as :class:`~.bridge.StdioBridge`), or a
    zero-argument factory returning an :class:`~acpwire.agent.connection.Agent`;
    every remote connection gets its own agent connection.

    ``auth`` has no default, so that an endpoint is never open by accident: a
    list of bearer tokens (each its own principal), a mapping of token to
    principal name, an async hook ``(RequestHead) -> principal | None``
    (docs/security.md), or ``None`` for no authentication at all (warns with
    :class:`NoAuthenticationWarning`). ``allowed_hosts``/``allowed_origins``
    are the DNS-rebinding and cross-site checks of :class:`~.security.SecuritySettings`;
    ``limits`` every resource bound; ``owners`` the session ownership map
    (default: in memory, and in the agent's store when ``agent`` is an
    ``AgentApp`` whose store is an :class:`~acpwire.store.OwnerLedger`, so
    that workers sharing the store enforce each other's claims; with one
    principal, sessions it has not seen yet are that principal's). ``cookie``
    (``NAME=VALUE``) is set on every answer, for load balancers that keep a
    client on one worker by cookie. ``resumable=True`` serves the durable transport
    draft (RFD durable-resumable-http-transport, docs/remote.md): a cursor on every
    message, resume by cursor on both bindings, the turn state after a resume. ``ui=True`` serves the web client at ``/``
    (:mod:`.ui`) and admits its origin, the endpoint's own, on ``path``.
    """
    if ui and path.rstrip("/") in UI_PATHS:
        raise ValueError(f"asgi_app(ui=True) serves its page at /: path={path!r} would hide it")
    authenticate = _authenticator(auth)
    if authenticate is None:
        warnings.warn(
            "asgi_app(auth=None): the ACP endpoint has no authentication; anyone who can "
            "reach it can run the agent, with its access to files and commands",
            NoAuthenticationWarning,
            stacklevel=2,
        )
    security = SecuritySettings(
        authenticate,
        allowed_hosts=None
        if allowed_hosts is None
        else frozenset(h.lower() for h in allowed_hosts),
        allowed_origins=frozenset(allowed_origins),
        same_origin=ui,
    )
    if owners is None:
        store: object = getattr(agent, "store", None)
        owners = SessionOwners(
            ledger=store if isinstance(store, OwnerLedger) else None,
            default_owner=_sole_principal(authenticate),
        )
    retention = None
    if resumable:
        # Workers sharing the agent's store share their streams too (docs/scale-out.md).
        shared: object = getattr(agent, "store", None)
        if isinstance(shared, StreamLog):
            retention = SharedRetention(shared, keep=(limits or Limits()).resume_messages)
    host = RemoteHost(
        agent,
        limits=limits,
        owners=owners,
        keepalive=keepalive,
        resumable=resumable,
        retention=retention,
    )
    return AcpAsgiApp(host, security, path=path, cookie=cookie, ui=ui)


def _sole_principal(authenticate: Authenticator | None) -> str | None:
    """The one principal an endpoint can have, if it can have only one."""
    if authenticate is None:
        return ANONYMOUS
    if isinstance(authenticate, BearerTokens) and len(authenticate.principals) == 1:
        (principal,) = authenticate.principals
        return principal
    return None
