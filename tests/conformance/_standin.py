"""A small ACP endpoint after the RFD's current revision, correct unless told to break a rule.

``acp check --url`` is measured on it: :class:`StandIn` serves acpwire's demo agent (in
this process, sessions in a store file) over Streamable HTTP with *one* GET stream per connection, as the RFD's revision
of 2026-04-23 describes it (acpwire's own server still routes session messages to
per-session streams), and over WebSocket, with what docs/security.md expects: bearer
tokens, Origin and Host checks, connections and sessions kept apart by principal. It also
does what the RFD leaves optional, so the checks of those have something to pass on:
SSE event ids with ``Last-Event-ID`` resumption, a cookie, keepalive comments.

Each name in :data:`DEFECTS` plants one defect. Sessions live in the agent, shared by every
connection, so only the endpoint keeps principals apart (as in ``acp serve``).
:func:`serve_asgi` runs any ASGI app under uvicorn (HTTP/1.1 and WebSocket) on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import uvicorn

from acpwire.demo import build_app
from acpwire.server.runner import bind
from acpwire.server.security import refuse
from acpwire.transports.memory import MemoryTransport, memory_pair

TOKEN = "alice-0123456789abcdef0123"
TOKEN2 = "bob-0123456789abcdef012345"
PATH = "/acp"
MAX_BODY = 1 << 20
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")

DEFECTS = {
    "no-auth": "serves anyone, without credentials",
    "any-token": "takes any bearer token (each its own principal)",
    "no-challenge": "answers 401 without WWW-Authenticate",
    "any-origin": "accepts requests from any Origin",
    "any-host": "accepts any Host (DNS rebinding)",
    "shared-connections": "lets any principal use any connection id",
    "shared-sessions": "lets any principal list, load and prompt any session",
    "counter-ids": "numbers connections 1, 2, 3",
    "owner-locked": "refuses to attach a session on any connection but the one that made it",
    "init-no-header": "answers initialize without the Acp-Connection-Id header",
    "stream-as-text": "serves the GET stream as text/plain",
    "accepted-200": "answers POSTs 200 instead of 202",
    "no-415": "takes POSTs of any Content-Type",
    "no-406": "opens the stream whatever the Accept header",
    "missing-id-404": "answers 404 instead of 400 when Acp-Connection-Id is missing",
    "unknown-id-400": "answers 400 instead of 404 for an unknown connection id",
    "no-session-header": "takes session-scoped POSTs without Acp-Session-Id",
    "batch-400": "answers batches 400 instead of 501",
    "session-streams": "sends session messages on per-session streams only",
    "delete-keeps-stream": "answers DELETE 202 but keeps the connection and its stream",
    "resume-repeats": "replays the whole stream whatever Last-Event-ID says",
    "bad-cookie": "sets its cookie for another path",
    "no-keepalive": "sends nothing on an idle stream",
    "ws-no-id": "upgrades without Acp-Connection-Id",
    "ws-binary-frames": "sends its messages as binary frames",
    "ws-answers-binary": "hands binary frames to the agent",
    "no-body-limit": "reads a body of any size",
    "no-cursor": "advertises transport.resumable but puts no cursor in its messages",
    "replay-new-cursors": "replays what a resume missed under new cursors",
    "unknown-cursor-live": "answers a resume from an unknown cursor with a live stream",
}

Scope = dict[str, Any]


def _headers(scope: Scope) -> dict[str, str]:
    return {k.decode().lower(): v.decode() for k, v in scope.get("headers", ())}


def _json(data: bytes | str) -> Any:
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None


def _session_of(message: dict[str, Any]) -> str | None:
    params = message.get("params")
    sid = params.get("sessionId") if isinstance(params, dict) else None
    return sid if isinstance(sid, str) else None


class Connection:
    """One client connection: its agent, and the log of what the agent sent back."""

    def __init__(self, endpoint: StandIn, connection_id: str, principal: str) -> None:
        self.endpoint = endpoint
        self.id = connection_id
        self.principal = principal
        ours, theirs = memory_pair()
        self.agent: MemoryTransport = ours
        self.serving = asyncio.ensure_future(endpoint.app.serve(theirs))
        self.log: list[bytes] = []
        """Everything for the connection's stream; an event's id is its index."""
        self.session_logs: dict[str, list[bytes]] = {}
        self.delivered = 0
        """Events of :attr:`log` written to a stream so far."""
        self.attached = False
        self.ended = False
        self.changed = asyncio.Event()
        self.asked: dict[Any, tuple[str, str | None]] = {}
        """Client requests in flight: id -> (method, session)."""
        self.agent_asked: dict[Any, str | None] = {}
        """Agent requests in flight: id -> session."""
        self.made: set[str] = set()
        """Sessions made on this connection."""
        self.websocket: Any = None
        self.pump = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        while (raw := await self.agent.receive()) is not None:
            assert isinstance(raw, bytes)
            message = _json(raw)
            if not isinstance(message, dict):
                continue
            raw = self.endpoint.outgoing(self, message, raw)
            if self.websocket is not None:
                with contextlib.suppress(Exception):
                    await self.deliver(raw)
                continue
            session = _session_of(message)
            if "method" not in message:
                session = self.asked.pop(message.get("id"), ("", None))[1]
            elif "id" in message:
                self.agent_asked[message["id"]] = session
            if "session-streams" in self.endpoint.defects and session is not None:
                self.session_logs.setdefault(session, []).append(raw)
            else:
                self.log.append(raw)
            self.changed.set()

    async def from_client(self, message: dict[str, Any], raw: bytes) -> None:
        if "method" in message and "id" in message:
            self.asked[message["id"]] = (message["method"], _session_of(message))
        refusal = self.endpoint.incoming(self, message)
        if refusal is not None:
            if "id" in message and "method" in message:
                self.asked.pop(message["id"], None)
                answer = {"jsonrpc": "2.0", "id": message["id"], "error": refusal}
                await self.deliver(msgspec.json.encode(answer))
            return
        await self.agent.send(raw)

    async def deliver(self, raw: bytes) -> None:
        if self.websocket is not None:
            if self.endpoint.has("ws-binary-frames"):
                await self.websocket({"type": "websocket.send", "bytes": raw})
            else:
                await self.websocket({"type": "websocket.send", "text": raw.decode()})
        else:
            self.log.append(raw)
            self.changed.set()

    async def end(self) -> None:
        self.ended = True
        self.changed.set()
        await self.agent.close()
        for task in (self.serving, self.pump):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


class StandIn:
    """The endpoint, as an ASGI app; ``defects`` are names of :data:`DEFECTS`."""

    def __init__(self, *defects: str, store: str | None = None, keepalive: float = 0.3) -> None:
        unknown = set(defects) - set(DEFECTS)
        assert not unknown, unknown
        self.defects = frozenset(defects)
        self.keepalive = keepalive
        self.app = build_app(store=store)
        self.connections: dict[str, Connection] = {}
        self.owners: dict[str, str] = {}
        self.numbers = itertools.count(1)

    def has(self, defect: str) -> bool:
        return defect in self.defects

    # -- who may do what

    def principal(self, headers: dict[str, str]) -> str | None:
        if self.has("no-auth"):
            return "anyone"
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        if self.has("any-token"):
            return f"token:{token}"
        return {TOKEN: "alice", TOKEN2: "bob"}.get(token.strip())

    def may_use(self, principal: str, session: str) -> bool:
        return self.has("shared-sessions") or self.owners.get(session, principal) == principal

    def incoming(self, conn: Connection, message: dict[str, Any]) -> dict[str, Any] | None:
        """The error for a client message naming a session its principal may not use."""
        session = _session_of(message)
        if "method" in message and session is not None:
            if not self.may_use(conn.principal, session):
                return {"code": -32002, "message": "Resource not found"}
            attaching = message["method"] in ("session/load", "session/resume")
            if attaching and self.has("owner-locked") and session not in conn.made:
                return {"code": -32002, "message": "Resource not found"}
        return None

    def outgoing(self, conn: Connection, message: dict[str, Any], raw: bytes) -> bytes:
        """Record who owns the sessions the agent's answers name; filter session/list."""
        method, session = conn.asked.get(message.get("id"), ("", None))
        if "method" in message or "result" not in message:
            return raw
        result = message["result"]
        if method == "session/new" and isinstance(result, dict):
            self.owners[str(result.get("sessionId"))] = conn.principal
            conn.made.add(str(result.get("sessionId")))
        elif method in ("session/load", "session/resume") and session is not None:
            self.owners.setdefault(session, conn.principal)
        elif method == "session/list" and isinstance(result, dict):
            sessions = result.get("sessions") or []
            result["sessions"] = [
                s for s in sessions if self.may_use(conn.principal, str(s.get("sessionId")))
            ]
            return msgspec.json.encode(message)
        return raw

    def open(self, principal: str) -> Connection:
        if self.has("counter-ids"):
            connection_id = str(next(self.numbers))
        else:
            connection_id = secrets.token_urlsafe(24)
        conn = self.connections[connection_id] = Connection(self, connection_id, principal)
        return conn

    def lookup(self, connection_id: str, principal: str) -> Connection | None:
        conn = self.connections.get(connection_id)
        if conn is None or (conn.principal != principal and not self.has("shared-connections")):
            return None
        return conn

    async def close(self) -> None:
        for conn in list(self.connections.values()):
            await conn.end()
        self.connections.clear()
        await self.app.aclose()

    # -- ASGI

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                event = await receive()
                if event["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await self.close()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        headers = _headers(scope)
        if scope.get("path") != PATH:
            return await refuse(scope, receive, send, 404, "not found")
        host = headers.get("host", "").rsplit(":", 1)[0]
        if host not in LOOPBACK and not self.has("any-host"):
            return await refuse(scope, receive, send, 421, "bad host")
        if "origin" in headers and not self.has("any-origin"):
            return await refuse(scope, receive, send, 403, "bad origin")
        principal = self.principal(headers)
        if principal is None:
            challenge = [] if self.has("no-challenge") else [("www-authenticate", "Bearer")]
            return await refuse(scope, receive, send, 401, "who are you", challenge)
        if scope["type"] == "websocket":
            return await self._websocket(receive, send, principal)
        method = scope["method"]
        if method == "POST":
            return await self._post(headers, receive, send, principal)
        connection_id = headers.get("acp-connection-id")
        if connection_id is None:
            status = 404 if self.has("missing-id-404") else 400
            return await _answer(send, status)
        conn = self.lookup(connection_id, principal)
        if conn is None:
            return await _answer(send, 400 if self.has("unknown-id-400") else 404)
        if method == "DELETE":
            if not self.has("delete-keeps-stream"):
                self.connections.pop(conn.id, None)
                await conn.end()
            return await _answer(send, 202)
        if method == "GET":
            return await self._stream(conn, headers, receive, send)
        return await _answer(send, 405)

    async def _post(self, headers: dict[str, str], receive: Any, send: Any, principal: str) -> None:
        if headers.get("content-type", "").split(";")[0] != "application/json":
            if not self.has("no-415"):
                return await _answer(send, 415)
        declared = int(headers.get("content-length") or 0)
        if declared > MAX_BODY and not self.has("no-body-limit"):
            return await _answer(send, 413)
        body = b""
        while True:
            event = await receive()
            if event["type"] == "http.disconnect":
                return
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        if body.lstrip().startswith(b"["):
            return await _answer(send, 400 if self.has("batch-400") else 501)
        message = _json(body)
        if not isinstance(message, dict):
            return await _answer(send, 400)
        connection_id = headers.get("acp-connection-id")
        if connection_id is None:
            if message.get("method") == "initialize":
                return await self._initialize(message, body, send, principal)
            return await _answer(send, 404 if self.has("missing-id-404") else 400)
        conn = self.lookup(connection_id, principal)
        if conn is None:
            return await _answer(send, 400 if self.has("unknown-id-400") else 404)
        if "method" in message:
            session = _session_of(message)
        else:
            session = conn.agent_asked.pop(message.get("id"), None)
        if session is not None and not self.has("no-session-header"):
            if headers.get("acp-session-id") != session:
                return await _answer(send, 400)
        await conn.from_client(message, body)
        if self.has("accepted-200"):
            return await _answer(send, 200, b"{}", "application/json")
        await _answer(send, 202)

    async def _initialize(
        self, message: dict[str, Any], body: bytes, send: Any, principal: str
    ) -> None:
        conn = self.open(principal)
        mark = len(conn.log)
        await conn.from_client(message, body)
        while len(conn.log) == mark:
            conn.changed.clear()
            await asyncio.wait_for(conn.changed.wait(), 10.0)
        answer = _resumable(conn.log.pop(mark))
        path = "/elsewhere" if self.has("bad-cookie") else PATH
        extra = [] if self.has("init-no-header") else [("acp-connection-id", conn.id)]
        extra += [
            ("set-cookie", f"acp-affinity={conn.id[:8]}; Path={path}; HttpOnly; SameSite=Strict"),
        ]
        await _answer(send, 200, answer, "application/json", extra)

    async def _stream(
        self, conn: Connection, headers: dict[str, str], receive: Any, send: Any
    ) -> None:
        if "text/event-stream" not in headers.get("accept", "") and not self.has("no-406"):
            return await _answer(send, 406)
        session = headers.get("acp-session-id")
        if self.has("session-streams") and session is not None:
            log = conn.session_logs.setdefault(session, [])
            return await self._write(conn, log, 0, receive, send, track=False)
        if conn.attached:
            return await _answer(send, 409)
        start = conn.delivered
        last = headers.get("last-event-id")
        if last is not None and (not last.isdigit() or int(last) >= len(conn.log)):
            if not self.has("unknown-cursor-live"):  # the durable draft's refusal
                body = b'{"reason":"unknown_cursor","message":"no such cursor"}'
                return await _answer(send, 409, body, "application/json")
        elif last is not None:
            start = 0 if self.has("resume-repeats") else int(last) + 1
        conn.attached = True
        try:
            await self._write(conn, conn.log, start, receive, send, track=True)
        finally:
            conn.attached = False

    async def _write(
        self,
        conn: Connection,
        log: list[bytes],
        position: int,
        receive: Any,
        send: Any,
        *,
        track: bool,
    ) -> None:
        media = b"text/plain" if self.has("stream-as-text") else b"text/event-stream"
        head = [(b"content-type", media), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": 200, "headers": head})
        await send({"type": "http.response.body", "body": b": open\n\n", "more_body": True})
        gone = asyncio.ensure_future(_disconnect(receive))
        fresh = conn.delivered if track else len(log)  # events before it are a replay
        try:
            while not gone.done():
                while position < len(log):
                    cursor = position
                    if position < fresh and self.has("replay-new-cursors"):
                        cursor += 1000
                    data = log[position]
                    if not self.has("no-cursor"):
                        data = _with_cursor(data, str(cursor))
                    event = b"id: %d\nevent: message\ndata: %s\n\n" % (cursor, data)
                    await send({"type": "http.response.body", "body": event, "more_body": True})
                    position += 1
                    if track:
                        conn.delivered = max(conn.delivered, position)
                if conn.ended:
                    break
                conn.changed.clear()
                waiting = asyncio.ensure_future(conn.changed.wait())
                done, _ = await asyncio.wait({waiting, gone}, timeout=self.keepalive)
                waiting.cancel()
                if not done and not self.has("no-keepalive"):
                    await send(
                        {
                            "type": "http.response.body",
                            "body": b": keepalive\n\n",
                            "more_body": True,
                        }
                    )
            with contextlib.suppress(Exception):
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            gone.cancel()

    async def _websocket(self, receive: Any, send: Any, principal: str) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        conn = self.open(principal)
        conn.websocket = send
        extra = [] if self.has("ws-no-id") else [(b"acp-connection-id", conn.id.encode())]
        await send({"type": "websocket.accept", "headers": extra})
        try:
            while True:
                event = await receive()
                if event["type"] == "websocket.disconnect":
                    return
                data = event.get("text")
                if data is None and self.has("ws-answers-binary"):
                    data = event.get("bytes")
                message = _json(data) if data is not None else None
                if isinstance(message, dict):
                    await conn.from_client(message, msgspec.json.encode(message))
        finally:
            self.connections.pop(conn.id, None)
            await conn.end()


def _resumable(answer: bytes) -> bytes:
    """The initialize answer, advertising the durable transport draft's resume."""
    message = _json(answer)
    result = message.get("result") if isinstance(message, dict) else None
    if not isinstance(result, dict):
        return answer
    capabilities = result.setdefault("agentCapabilities", {})
    capabilities["transport"] = {"resumable": {"retentionMessages": 100000}}
    return msgspec.json.encode(message)


def _with_cursor(data: bytes, cursor: str) -> bytes:
    """The message with its cursor in ``_meta["acp/cursor"]`` (of its params or result,
    else of the envelope)."""
    message = _json(data)
    if not isinstance(message, dict):
        return data
    if "method" in message:
        holder = message.setdefault("params", {})
    else:
        holder = message.get("result")
    if not isinstance(holder, dict):
        holder = message
    holder.setdefault("_meta", {})["acp/cursor"] = cursor
    return msgspec.json.encode(message)


async def _disconnect(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _answer(
    send: Any,
    status: int,
    body: bytes = b"",
    content_type: str | None = None,
    extra: list[tuple[str, str]] | None = None,
) -> None:
    headers = [(k.encode(), v.encode()) for k, v in extra or ()]
    if content_type is not None:
        headers.append((b"content-type", content_type.encode()))
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def serve_asgi(app: Any, **options: Any) -> AsyncIterator[str]:
    """Serve ``app`` under uvicorn on 127.0.0.1 while the block runs; yields its /acp URL.

    ``options`` go to uvicorn (``ssl_certfile``, ``ssl_keyfile``). An app with ``close()``
    has it awaited first on the way out, so open streams do not hold the shutdown.
    """
    sock = bind()
    config = uvicorn.Config(
        app,
        lifespan="on",
        ws="websockets-sansio",
        log_level="critical",  # uvicorn logs every refused upgrade as an error
        timeout_graceful_shutdown=2,
        **options,
    )
    server = uvicorn.Server(config)
    started = asyncio.Event()
    original_startup = server.startup

    async def startup(sockets: Any = None) -> None:
        await original_startup(sockets=sockets)
        started.set()

    server.startup = startup  # type: ignore[method-assign]
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        ready = asyncio.ensure_future(started.wait())
        await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if task.done():
            task.result()
            raise RuntimeError("the server stopped while starting")
        scheme = "https" if "ssl_certfile" in options else "http"
        yield f"{scheme}://127.0.0.1:{sock.getsockname()[1]}{PATH}"
    finally:
        close = getattr(app, "close", None)
        if close is not None:
            await close()
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close()
