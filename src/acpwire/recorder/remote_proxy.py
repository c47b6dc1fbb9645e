"""The remote recording proxy behind ``acp record --url URL``: a local endpoint that
forwards to a remote ACP endpoint and records what crosses (``pip install
'acpwire[remote]'``).

The client connects to the proxy as it would to the remote endpoint (the same path),
over HTTP/1.1, HTTP/2 without TLS (h2c, prior knowledge or upgrade) or WebSocket: the
proxy is an ASGI app under hypercorn, as ``acp serve`` is. Upstream it speaks
HTTP/1.1 (httpx; each SSE stream its own TCP connection, which avoids httpx's HTTP/2
stream lock, see docs/remote.md) or WebSocket (the ``websockets`` package).

What it records, before passing it on (so records are in wire order):

* each JSON-RPC message, ``from`` the side that sent it, with ``transport``: ``via``
  (``http`` for a POST body, ``http-response`` for an answer in a response body,
  ``sse`` for an event of a stream, ``websocket``), the HTTP version and request line,
  the ``Acp-Connection-Id`` and ``Acp-Session-Id`` it named, the stream an SSE event
  came on (``connection`` or ``session:ID``) and its event id (``cursor``), the
  request's headers (through redaction: ``Authorization`` and cookies never reach the
  file);
* an ``http-response`` event per request (status, response headers), and
  ``websocket-opened``/``websocket-closed`` events.

Bytes are forwarded unchanged, except hop-by-hop headers (``Connection``, ``Upgrade``,
``Transfer-Encoding``, ...), which belong to each leg, and ``Accept-Encoding``, which
is set to ``identity`` upstream so that what is recorded is the JSON itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

from .cassette import CassetteWriter

__all__ = ["RecordingProxy", "SseParser", "serve_recording_proxy"]

log = logging.getLogger("acpwire.recorder")

INSTALL_HINT = "acp record --url needs the remote extra: pip install 'acpwire[remote]'"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "http2-settings",
        "host",
        "content-length",
        "accept-encoding",
    }
)
WEBSOCKET_OWN = frozenset(
    {
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-accept",
    }
)


class SseParser:
    """Server-sent events out of a byte stream: (event id, event type, data) per event."""

    def __init__(self) -> None:
        self._buffer = b""
        self._id: str | None = None
        self._event: str | None = None
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[tuple[str | None, str | None, bytes]]:
        self._buffer += chunk
        events: list[tuple[str | None, str | None, bytes]] = []
        while True:
            nl = self._buffer.find(b"\n")
            if nl < 0:
                return events
            line, self._buffer = self._buffer[:nl].rstrip(b"\r"), self._buffer[nl + 1 :]
            if not line:
                if self._data:
                    events.append((self._id, self._event, b"\n".join(self._data)))
                self._event, self._data = None, []
                continue
            name, _, value = line.partition(b":")
            value = value[1:] if value.startswith(b" ") else value
            if name == b"data":
                self._data.append(value)
            elif name == b"id":
                self._id = value.decode("utf-8", "replace")
            elif name == b"event":
                self._event = value.decode("utf-8", "replace")


def _headers(scope: Scope) -> list[tuple[str, str]]:
    return [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope["headers"]]


def _named(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in headers if k == name), None)


def _messages(body: bytes) -> list[bytes]:
    """The JSON-RPC messages of a body: one object, or each of a batch (kept whole if it
    is not JSON, to be recorded as a raw line)."""
    import msgspec

    body = body.strip()
    if not body:
        return []
    if body.startswith(b"["):
        try:
            items = msgspec.json.decode(body, type=list[msgspec.Raw])
        except msgspec.DecodeError:
            return [body]
        return [bytes(item) for item in items]
    return [body]


class RecordingProxy:
    """The ASGI app of the proxy (see the module docstring)."""

    def __init__(self, upstream: str, writer: CassetteWriter, *, verify: Any = True) -> None:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(INSTALL_HINT) from exc
        parts = urlsplit(upstream)
        if parts.scheme in ("ws", "wss"):
            parts = parts._replace(scheme="https" if parts.scheme == "wss" else "http")
        self.upstream = urlunsplit(parts._replace(query="", fragment=""))
        ws_scheme = "wss" if parts.scheme == "https" else "ws"
        self.ws_upstream = urlunsplit(parts._replace(scheme=ws_scheme, query="", fragment=""))
        self.path = parts.path or "/"
        self.writer = writer
        self.verify = verify
        self.http = httpx.AsyncClient(timeout=None, verify=verify, http2=False)
        self._sockets = 0

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        elif scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})

    def _url(self, scope: Scope, base: str) -> str:
        parts = urlsplit(base)
        query = scope.get("query_string", b"").decode("latin-1")
        return urlunsplit(parts._replace(path=scope["path"], query=query))

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        body = b""
        while True:
            event = await receive()
            if event["type"] == "http.disconnect":
                return
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        request = f"{scope['method']} {scope['path']}"
        details: dict[str, Any] = {
            "via": "http",
            "http": scope.get("http_version"),
            "request": request,
        }
        for name, key in (("acp-connection-id", "connection"), ("acp-session-id", "session")):
            value = _named(headers, name)
            if value is not None:
                details[key] = value
        lines = _messages(body) if scope["method"] == "POST" else []
        self.writer.messages("client", lines, transport={**details, "headers": headers})
        if not lines:
            self.writer.event("http-request", transport={**details, "headers": headers})
        forwarded = [(k, v) for k, v in headers if k not in HOP_BY_HOP]
        forwarded.append(("accept-encoding", "identity"))
        try:
            upstream_request = self.http.build_request(
                scope["method"], self._url(scope, self.upstream), headers=forwarded, content=body
            )
            response = await self.http.send(upstream_request, stream=True)
        except Exception as exc:
            self.writer.event("upstream-failed", request=request, error=str(exc))
            await _plain(send, 502, f"acp record: the remote endpoint failed: {exc}\n")
            return
        try:
            await self._relay(response, details, send)
        finally:
            await response.aclose()

    async def _relay(self, response: Any, details: dict[str, Any], send: Send) -> None:
        out_headers = [
            (k.lower(), v) for k, v in response.headers.multi_items() if k.lower() not in HOP_BY_HOP
        ]
        self.writer.event(
            "http-response",
            request=details["request"],
            status=response.status_code,
            transport={"headers": out_headers},
        )
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in out_headers],
            }
        )
        connection = response.headers.get("acp-connection-id") or details.get("connection")
        kind = response.headers.get("content-type", "")
        if kind.startswith("text/event-stream"):
            session = details.get("session")
            stream = f"session:{session}" if session else "connection"
            parser = SseParser()
            async for chunk in response.aiter_raw():
                for event_id, _, data in parser.feed(chunk):
                    where: dict[str, Any] = {"via": "sse", "stream": stream}
                    if event_id is not None:
                        where["cursor"] = event_id
                    if connection:
                        where["connection"] = connection
                    self.writer.messages("agent", _messages(data), transport=where)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        body = await response.aread()
        if kind.startswith("application/json"):
            where = {"via": "http-response", "request": details["request"]}
            if connection:
                where["connection"] = connection
            self.writer.messages("agent", _messages(body), transport=where)
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed, InvalidStatus

        if (await receive())["type"] != "websocket.connect":
            return
        headers = _headers(scope)
        self._sockets += 1
        number = self._sockets
        forwarded = [(k, v) for k, v in headers if k not in HOP_BY_HOP and k not in WEBSOCKET_OWN]
        where: dict[str, Any] = {"via": "websocket", "socket": number}
        try:
            upstream = await connect(
                self._url(scope, self.ws_upstream),
                additional_headers=forwarded,
                max_size=None,
                compression=None,
                ping_interval=None,
                ssl=self.verify if not isinstance(self.verify, bool) else None,
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            self.writer.event("websocket-refused", socket=number, status=status)
            await send({"type": "websocket.close", "code": 1008 if status in (401, 403) else 1011})
            return
        except Exception as exc:
            self.writer.event("upstream-failed", socket=number, error=str(exc))
            await send({"type": "websocket.close", "code": 1011})
            return
        response_headers = list(upstream.response.headers.raw_items()) if upstream.response else []
        connection = next(
            (v for k, v in response_headers if k.lower() == "acp-connection-id"), None
        )
        if connection:
            where["connection"] = connection
        self.writer.event(
            "websocket-opened", socket=number, transport={"headers": headers, **where}
        )
        await send(
            {
                "type": "websocket.accept",
                "headers": [
                    (k.lower().encode("latin-1"), v.encode("latin-1"))
                    for k, v in response_headers
                    if k.lower() in ("acp-connection-id", "set-cookie")
                ],
            }
        )

        async def client_to_agent() -> None:
            while True:
                event = await receive()
                if event["type"] == "websocket.disconnect":
                    self.writer.event("websocket-closed", socket=number, by="client")
                    await upstream.close()
                    return
                data = event.get("text")
                raw = data.encode() if data is not None else event.get("bytes") or b""
                self.writer.messages("client", (raw,), transport=where)
                await upstream.send(data if data is not None else raw)

        async def agent_to_client() -> None:
            try:
                async for message in upstream:
                    raw = message.encode() if isinstance(message, str) else message
                    self.writer.messages("agent", (raw,), transport=where)
                    if isinstance(message, str):
                        await send({"type": "websocket.send", "text": message})
                    else:
                        await send({"type": "websocket.send", "bytes": message})
            except ConnectionClosed:
                pass
            code = upstream.close_code or 1000
            self.writer.event("websocket-closed", socket=number, by="agent", code=code)
            with contextlib.suppress(Exception):
                await send({"type": "websocket.close", "code": code})

        tasks = [asyncio.ensure_future(client_to_agent()), asyncio.ensure_future(agent_to_client())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await upstream.close()


async def _plain(send: Send, status: int, text: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8")],
        }
    )
    await send({"type": "http.response.body", "body": text.encode(), "more_body": False})


@dataclass(frozen=True)
class ServedProxy:
    url: str
    """``http://HOST:PORT/PATH``: give it to the client instead of the remote URL."""

    @property
    def ws_url(self) -> str:
        return "ws" + self.url[4:]


@contextlib.asynccontextmanager
async def serve_recording_proxy(
    upstream: str,
    writer: CassetteWriter,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    verify: Any = True,
) -> AsyncGenerator[ServedProxy, None]:
    """Serve the proxy while the block runs (HTTP/1.1, h2c and WebSocket on one port)."""
    try:
        import hypercorn.config
        from hypercorn.app_wrappers import ASGIWrapper
        from hypercorn.asyncio.tcp_server import TCPServer
        from hypercorn.asyncio.worker_context import WorkerContext
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(INSTALL_HINT) from exc
    from ..server.runner import bind, url_of

    app = RecordingProxy(upstream, writer, verify=verify)
    config = hypercorn.config.Config()
    config.websocket_ping_interval = None
    config.errorlog = log
    config.accesslog = None
    config.graceful_timeout = 1.0
    loop = asyncio.get_running_loop()
    context = WorkerContext(None)
    state: dict[str, Any] = {}
    asgi: Any = ASGIWrapper(cast("Any", app))
    connections: set[asyncio.Task[None]] = set()

    async def serve_one(reader: asyncio.StreamReader, stream: asyncio.StreamWriter) -> None:
        task = cast("asyncio.Task[None]", asyncio.current_task())
        connections.add(task)
        try:
            await TCPServer(asgi, loop, config, context, state, reader, stream)
        finally:
            connections.discard(task)

    sock = bind(host, port)
    server = await asyncio.start_server(serve_one, sock=sock)
    try:
        yield ServedProxy(url_of(sock, app.path))
    finally:
        server.close()
        for task in list(connections):
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)
        await app.aclose()
        sock.close()
