"""The ``/acp`` endpoint as an ASGI 3 application: Streamable HTTP and WebSocket.

Only the HTTP surface lives here (methods, headers, content negotiation, SSE
framing, the ASGI websocket protocol); every decision about connections,
sessions and routing is made by :class:`~.core.RemoteHost`. Any ASGI server
can run it; :mod:`.runner` uses uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..protocol.errors import ConnectionClosedError
from .core import CONNECTION_HEADER, SESSION_HEADER, AgentTarget, Outbox, RemoteHost, Reply

log = logging.getLogger("acpwire.server")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _header(scope: Scope, name: str) -> str | None:
    key = name.encode("latin-1")
    for k, v in scope.get("headers", ()):
        if k.lower() == key:
            text: str = v.decode("latin-1").strip()
            return text or None
    return None


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


def _sse_event(message: bytes) -> bytes:
    # A JSON text may contain raw newlines between tokens; SSE joins data lines with \n.
    lines = message.split(b"\n")
    return b"event: message\n" + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"


class AcpAsgiApp:
    """ASGI app serving one ACP endpoint; see :func:`asgi_app`."""

    def __init__(self, host: RemoteHost, *, path: str = "/acp") -> None:
        self.host = host
        self.path = path

    async def aclose(self) -> None:
        """End every connection: its agent, its streams and its WebSocket."""
        await self.host.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope.get("path", "").rstrip("/") != self.path.rstrip("/"):
            if kind == "http":
                await _respond(send, Reply(404, b"not found", "text/plain"))
            elif kind == "websocket":
                await send({"type": "websocket.close", "code": 1008})
            return
        if kind == "websocket":
            await self._websocket(receive, send)
        elif kind == "http":
            method = scope.get("method", "GET")
            if method == "POST":
                await self._post(scope, receive, send)
            elif method == "GET":
                await self._get(scope, receive, send)
            elif method == "DELETE":
                reply = await self.host.delete(_header(scope, CONNECTION_HEADER))
                await _respond(send, reply)
            else:
                reply = Reply(405, b"method not allowed", "text/plain")
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

    async def _post(self, scope: Scope, receive: Receive, send: Send) -> None:
        if _media_type(_header(scope, "content-type")) != "application/json":
            await _respond(send, Reply(415, b"Content-Type must be application/json", "text/plain"))
            return
        limit = self.host.max_message_size
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > limit:
                await _respond(send, Reply(413, b"message too large", "text/plain"))
                return
            if not message.get("more_body", False):
                break
        reply = await self.host.post(
            bytes(body), _header(scope, CONNECTION_HEADER), _header(scope, SESSION_HEADER)
        )
        await _respond(send, reply)

    async def _get(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _accepts_event_stream(_header(scope, "accept")):
            await _respond(send, Reply(406, b"Accept must include text/event-stream", "text/plain"))
            return
        connection_id = _header(scope, CONNECTION_HEADER)
        if connection_id is None:
            await _respond(send, Reply(400, b"Acp-Connection-Id header required", "text/plain"))
            return
        conn = self.host.get(connection_id)
        if conn is None or conn.mode != "http":
            await _respond(send, Reply(404, b"unknown connection", "text/plain"))
            return
        box = conn.outbox_for(_header(scope, SESSION_HEADER))
        if box is None:
            await _respond(send, Reply(404, b"unknown session", "text/plain"))
            return
        if box.attached:
            await _respond(send, Reply(409, b"this stream is already open", "text/plain"))
            return
        box.attached = True
        conn.touch()
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream"),
                        (b"cache-control", b"no-store"),
                        (b"x-accel-buffering", b"no"),
                        (CONNECTION_HEADER.encode(), conn.id.encode()),
                    ],
                }
            )
            await self._stream(box, receive, send)
        finally:
            box.attached = False
            conn.touch()

    async def _stream(self, box: Outbox, receive: Receive, send: Send) -> None:
        async def client_gone() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        async def write() -> None:
            keepalive = self.host.keepalive
            # Opening bytes let the client see the stream is live before any event.
            await send({"type": "http.response.body", "body": b": open\n\n", "more_body": True})
            while True:
                try:
                    message = await asyncio.wait_for(box.queue.get(), keepalive)
                except asyncio.TimeoutError:
                    chunk = b": keepalive\n\n"
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    continue
                if message is None:
                    return
                await send(
                    {"type": "http.response.body", "body": _sse_event(message), "more_body": True}
                )
                box.sent()

        watcher = asyncio.ensure_future(client_gone())
        writer = asyncio.ensure_future(write())
        try:
            await asyncio.wait({watcher, writer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (watcher, writer):
                task.cancel()
            for task in (watcher, writer):
                with contextlib.suppress(BaseException):
                    await task
        if writer.done() and not writer.cancelled() and writer.exception() is None:
            with contextlib.suppress(Exception):
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _websocket(self, receive: Receive, send: Send) -> None:
        first = await receive()
        if first["type"] != "websocket.connect":
            return
        if self.host.full():
            await send({"type": "websocket.close", "code": 1013})
            return
        try:
            conn = self.host.open("websocket")
        except ConnectionClosedError:
            await send({"type": "websocket.close", "code": 1012})
            return
        await send(
            {
                "type": "websocket.accept",
                "headers": [(CONNECTION_HEADER.encode(), conn.id.encode())],
            }
        )

        async def from_client() -> None:
            while True:
                message = await receive()
                if message["type"] == "websocket.disconnect":
                    return
                if message["type"] != "websocket.receive":
                    continue
                text = message.get("text")
                if text is None:
                    continue  # binary frames are ignored (RFD)
                await conn.to_agent(text.encode("utf-8"))

        async def to_client() -> None:
            while True:
                message = await conn.from_agent()
                if message is None:
                    return
                await send({"type": "websocket.send", "text": message.decode("utf-8", "replace")})

        reader = asyncio.ensure_future(from_client())
        writer = asyncio.ensure_future(to_client())
        try:
            await asyncio.wait({reader, writer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reader, writer):
                task.cancel()
            for task in (reader, writer):
                with contextlib.suppress(BaseException):
                    await task
            await conn.terminate()
        if writer.done() and not writer.cancelled() and writer.exception() is None:
            # The agent ended: close the socket cleanly.
            with contextlib.suppress(Exception):
                await send({"type": "websocket.close", "code": 1000})


def asgi_app(
    agent: AgentTarget,
    *,
    path: str = "/acp",
    idle_timeout: float | None = 1800.0,
    max_message_size: int | None = None,
    queue_size: int = 256,
    keepalive: float | None = 15.0,
    max_connections: int = 1000,
) -> AcpAsgiApp:
    """An ASGI app serving ``agent`` on ``path`` over Streamable HTTP and WebSocket.

    ``agent`` is an :class:`~acpwire.agent.app.AgentApp`, anything with
    ``async serve(transport)`` (such as :class:`~.bridge.StdioBridge`), or a
    zero-argument factory returning an :class:`~acpwire.agent.connection.Agent`;
    every remote connection gets its own agent connection. A connection with no
    message either way for ``idle_timeout`` seconds is closed (``None``: never).
    """
    options: dict[str, Any] = {}
    if max_message_size is not None:
        options["max_message_size"] = max_message_size
    host = RemoteHost(
        agent,
        idle_timeout=idle_timeout,
        queue_size=queue_size,
        keepalive=keepalive,
        max_connections=max_connections,
        **options,
    )
    return AcpAsgiApp(host, path=path)
