"""What the endpoint checks talk to: the target, its credentials, and three ways to reach it.

* :class:`EndpointTarget` is the ``acp check --url`` side of the options: the URL, the
  bearer token(s), extra headers, an allowed ``Origin``, a CA file, the transport the
  agent checks use and how long an idle stream may stay silent.
* :func:`raw_request` writes one HTTP/1.1 request by hand and reads the status line and
  headers. The security checks need that control: a ``Host`` that is not the URL's, a
  ``Content-Length`` whose body never comes, a WebSocket upgrade whose answer is all
  that matters.
* :class:`HttpConnection` is a strict client of the RFD's Streamable HTTP profile, as the
  RFD's revision of 2026-04-23 describes it: ``initialize`` POSTed without a connection
  id, then *one* GET stream for everything the server sends, every other message POSTed
  (``Acp-Session-Id`` on session-scoped ones), ``DELETE`` at the end. Each connection has
  its own cookie jar, returned on every request of the connection (the RFD's cookie rule).
  :class:`SseStream` reads a GET stream: events with their ``id``, comments, the end.

``httpx`` and ``websockets`` (the ``remote`` extra) are imported on first use.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ipaddress
import os
import secrets
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlsplit

import msgspec

from ..._waits import within
from ...transports.base import Transport
from ...transports.http import CONNECTION_HEADER, SESSION_HEADER
from ..agents.driver import Opener, client_info
from ..wire import as_dict, short

if TYPE_CHECKING:
    import httpx

__all__ = [
    "CREDENTIAL_HEADERS",
    "EndpointTarget",
    "HttpConnection",
    "RawAnswer",
    "SseEvent",
    "SseStream",
    "Via",
    "alpn_protocol",
    "h2c_answer",
    "httpx_module",
    "raw_request",
]

_T = TypeVar("_T")

Via = Literal["websocket", "http"]
"""The transport the agent checks use through the endpoint."""

INSTALL_HINT = "acp check --url needs the remote extra: pip install 'acpwire[remote]'"
CREDENTIAL_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization"})
"""Headers given with ``--header`` that count as credentials (left out without them)."""
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
"""What an HTTP/2 client sends first on a connection (RFC 9113 section 3.4)."""
SETTINGS_FRAME = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""An empty SETTINGS frame: the rest of the client's connection preface."""
HEAD_LIMIT = 64 * 1024
"""Bytes of an answer's head read at most by :func:`raw_request`."""


def httpx_module() -> Any:
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - the remote extra is a dev dependency
        raise ImportError(INSTALL_HINT) from exc
    return httpx


@dataclass(frozen=True)
class EndpointTarget:
    """An endpoint to check and how to reach it (see ``acp check --url``)."""

    url: str
    token: str | None = None
    """Sent as ``Authorization: Bearer TOKEN`` on every request of the checker."""
    token2: str | None = None
    """A second principal's token, for the isolation checks (skipped without it)."""
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    """Sent on every request (``--header``); ``Authorization`` and ``Cookie`` among them
    count as credentials."""
    origin: str | None = None
    """An ``Origin`` the endpoint allows, sent on every request (browser-hosted clients)."""
    cafile: str | None = None
    """Certificates to trust for an ``https`` URL (a private CA)."""
    via: Via = "websocket"
    keepalive_wait: float = 20.0
    """Seconds an idle SSE stream may stay silent (0: do not check)."""

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {self.url!r}")

    @property
    def tls(self) -> bool:
        return urlsplit(self.url).scheme == "https"

    @property
    def hostname(self) -> str:
        return urlsplit(self.url).hostname or ""

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or (443 if self.tls else 80)

    @property
    def target_path(self) -> str:
        """The request target: path and query."""
        parts = urlsplit(self.url)
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    @property
    def host_header(self) -> str:
        """The ``Host`` a client sends for this URL."""
        return urlsplit(self.url).netloc.rsplit("@", 1)[-1]

    @property
    def ws_url(self) -> str:
        return ("wss" if self.tls else "ws") + self.url[self.url.index(":") :]

    @property
    def loopback(self) -> bool:
        """The URL names a loopback address: the case DNS rebinding attacks."""
        name = self.hostname
        if name == "localhost" or name.endswith(".localhost"):
            return True
        try:
            return ipaddress.ip_address(name).is_loopback
        except ValueError:
            return False

    @property
    def bearer(self) -> str | None:
        """The bearer token the checker sends: ``--token``, or one in an Authorization header."""
        if self.token is not None:
            return self.token
        for name, value in self.headers.items():
            scheme, _, rest = value.partition(" ")
            if name.lower() == "authorization" and scheme.lower() == "bearer":
                return rest.strip()
        return None

    def request_headers(
        self, *, credentials: bool = True, token: str | None = None
    ) -> dict[str, str]:
        """The headers of the checker's requests: ``--header`` values, ``Origin`` and the
        bearer token (``token`` instead of ``--token`` when given).

        Without ``credentials``: no token, and no Authorization or Cookie header.
        """
        out: dict[str, str] = {}
        for name, value in self.headers.items():
            if not credentials and name.lower() in CREDENTIAL_HEADERS:
                continue
            out[name] = value
        if self.origin is not None:
            out["Origin"] = self.origin
        bearer = token if token is not None else self.token
        if credentials and bearer is not None:
            for name in [n for n in out if n.lower() == "authorization"]:
                del out[name]
            out["Authorization"] = f"Bearer {bearer}"
        return out

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        return ssl.create_default_context(cafile=self.cafile)

    def opener(self, *, token: str | None = None, timeout: float = 30.0) -> Opener:
        """Opens acpwire's own client transport to the endpoint (``via``), as ``token``'s
        principal (``--token`` by default): what the agent checks run over."""
        headers = self.request_headers(token=token)

        async def open_transport() -> Transport:
            if self.via == "websocket":
                from ...transports.websocket import connect_websocket

                return await connect_websocket(
                    self.ws_url, headers=headers, ssl=self.ssl_context(), open_timeout=timeout
                )
            from ...transports.http import connect_http

            return await connect_http(self.url, headers=headers, verify=self.ssl_context() or True)

        return open_transport


# -- hand-written requests ------------------------------------------------------------


@dataclass(slots=True)
class RawAnswer:
    """The head of an answer (``status`` None when none came: ``problem`` says why)."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict[str, str])
    """Lower-case names; repeated headers joined with ``", "``."""
    problem: str | None = None
    set_cookies: list[str] = field(default_factory=list[str])

    def describe(self) -> str:
        return f"HTTP {self.status}" if self.status is not None else str(self.problem)


async def _open(target: EndpointTarget, timeout: float) -> tuple[asyncio.StreamReader, Any]:
    context = target.ssl_context()
    return await within(
        asyncio.open_connection(
            target.hostname,
            target.port,
            ssl=context,
            server_hostname=target.hostname if context is not None else None,
        ),
        timeout,
    )


def websocket_upgrade_headers() -> dict[str, str]:
    """The headers that make a GET a WebSocket upgrade (RFC 6455 section 4.1)."""
    return {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
        "Sec-WebSocket-Version": "13",
    }


async def raw_request(
    target: EndpointTarget,
    method: str,
    headers: Mapping[str, str],
    timeout: float,
    *,
    body: bytes = b"",
    declared_length: int | None = None,
) -> RawAnswer:
    """One HTTP/1.1 request written by hand; the answer's status line and headers.

    ``headers`` may name their own ``Host``. With ``declared_length`` the request
    announces that many body bytes and sends none: what matters is whether the server
    answers before the body comes. The connection is closed after the head is read.
    """
    names = {n.lower() for n in headers}
    lines = [f"{method} {target.target_path} HTTP/1.1"]
    if "host" not in names:
        lines.append(f"Host: {target.host_header}")
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if declared_length is not None:
        lines.append(f"Content-Length: {declared_length}")
        body = b""
    elif body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    if "connection" not in names:
        lines.append("Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    writer: Any = None
    try:
        reader, writer = await _open(target, timeout)
        writer.write(head + body)
        await writer.drain()
        data = await within(reader.readuntil(b"\r\n\r\n"), timeout)
        answer = _parse_head(data[:HEAD_LIMIT])
        await _read_body(reader, answer, timeout)
        return answer
    except asyncio.TimeoutError:
        return RawAnswer(problem=f"no answer within {timeout:g} s")
    except asyncio.IncompleteReadError as exc:
        got = exc.partial.split(b"\r\n", 1)[0].decode("latin-1", "replace")
        return RawAnswer(problem=f"connection closed without an answer{f' ({got})' if got else ''}")
    except asyncio.LimitOverrunError:
        return RawAnswer(problem="the answer's head is too large")
    except (OSError, ssl.SSLError) as exc:
        return RawAnswer(problem=f"cannot connect: {exc}")
    finally:
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await within(writer.wait_closed(), 1.0)


async def _read_body(reader: asyncio.StreamReader, answer: RawAnswer, timeout: float) -> None:
    """Read a short answer's body before hanging up, so the server sees it delivered."""
    length = answer.headers.get("content-length", "")
    if answer.status == 101 or not length.isdigit() or int(length) > HEAD_LIMIT:
        return
    with contextlib.suppress(asyncio.TimeoutError, asyncio.IncompleteReadError, OSError):
        await within(reader.readexactly(int(length)), timeout)


def _parse_head(data: bytes) -> RawAnswer:
    text = data.decode("latin-1")
    status_line, _, rest = text.partition("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        return RawAnswer(problem=f"not an HTTP answer: {short(status_line, 60)!r}")
    answer = RawAnswer(status=int(parts[1]))
    for line in rest.split("\r\n"):
        name, sep, value = line.partition(":")
        if not sep:
            continue
        key, value = name.strip().lower(), value.strip()
        if key == "set-cookie":
            answer.set_cookies.append(value)
        answer.headers[key] = f"{answer.headers[key]}, {value}" if key in answer.headers else value
    return answer


async def h2c_answer(target: EndpointTarget, timeout: float) -> str | None:
    """Whether the server speaks HTTP/2 to a client with prior knowledge (cleartext).

    Sends the HTTP/2 connection preface and reads the first frame of the answer: an
    HTTP/2 server's preface is a SETTINGS frame on stream 0. ``None`` when it is, else
    what came instead.
    """
    writer: Any = None
    try:
        reader, writer = await _open(target, timeout)
        writer.write(HTTP2_PREFACE + SETTINGS_FRAME)
        await writer.drain()
        head = await within(reader.readexactly(9), timeout)
    except asyncio.TimeoutError:
        return f"no answer to the HTTP/2 preface within {timeout:g} s"
    except asyncio.IncompleteReadError as exc:
        first = exc.partial.split(b"\r\n", 1)[0].decode("latin-1", "replace")
        return f"answered the HTTP/2 preface with {first!r}" if first else "closed the connection"
    except (OSError, ssl.SSLError) as exc:
        return f"cannot connect: {exc}"
    finally:
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await within(writer.wait_closed(), 1.0)
    frame_type, stream = head[3], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
    if frame_type == 0x4 and stream == 0:
        return None
    if head.startswith(b"HTTP/"):
        line = head.decode("latin-1", "replace")
        return f"answered the HTTP/2 preface with HTTP/1 ({line.strip()!r}...)"
    return f"answered the HTTP/2 preface with frame type {frame_type} on stream {stream}"


async def alpn_protocol(target: EndpointTarget, timeout: float) -> tuple[str | None, str | None]:
    """(protocol the TLS server chose among h2 and http/1.1, problem)."""
    context = target.ssl_context()
    assert context is not None
    context.set_alpn_protocols(["h2", "http/1.1"])
    writer: Any = None
    try:
        _, writer = await within(
            asyncio.open_connection(
                target.hostname, target.port, ssl=context, server_hostname=target.hostname
            ),
            timeout,
        )
        ssl_object = writer.get_extra_info("ssl_object")
        return (ssl_object.selected_alpn_protocol() if ssl_object else None), None
    except asyncio.TimeoutError:
        return None, f"no TLS handshake within {timeout:g} s"
    except (OSError, ssl.SSLError) as exc:
        return None, f"cannot connect: {exc}"
    finally:
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await within(writer.wait_closed(), 1.0)


# -- SSE --------------------------------------------------------------------------------


@dataclass(slots=True)
class SseEvent:
    """One event of a stream: its type, data, ``id`` (if it had one), place and arrival time."""

    event: str
    data: str
    id: str | None
    index: int
    at: float

    @property
    def message(self) -> dict[str, Any] | None:
        """The JSON-RPC message in a ``message`` event's data (None for anything else)."""
        if self.event != "message":
            return None
        try:
            return as_dict(msgspec.json.decode(self.data))
        except msgspec.DecodeError:
            return None


def is_response_to(request_id: str) -> Callable[[SseEvent], bool]:
    def matches(event: SseEvent) -> bool:
        m = event.message
        return m is not None and "method" not in m and m.get("id") == request_id

    return matches


class SseStream:
    """Reads one GET stream in the background: events, comment lines, the end."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.events: list[SseEvent] = []
        self.opened_at = time.monotonic()
        self.line_times: list[float] = []
        """When each line (event field or comment) arrived."""
        self.last_event_id: str | None = None
        self.ended = asyncio.Event()
        self.broke: str | None = None
        self._changed = asyncio.Event()
        self._task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        lib = httpx_module()
        data: list[str] = []
        event, event_id = "message", None
        try:
            async for line in self.response.aiter_lines():
                self.line_times.append(time.monotonic())
                if not line:
                    if data:
                        if event_id is not None:
                            self.last_event_id = event_id
                        self.events.append(
                            SseEvent(
                                event,
                                "\n".join(data),
                                event_id,
                                len(self.events),
                                time.monotonic(),
                            )
                        )
                    data, event, event_id = [], "message", None
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if name == "data":
                        data.append(value)
                    elif name == "event":
                        event = value
                    elif name == "id":
                        event_id = value
                self._changed.set()
        except lib.HTTPError as exc:
            self.broke = str(exc) or type(exc).__name__
        finally:
            self.ended.set()
            self._changed.set()

    async def _until(self, found: Callable[[], _T | None], timeout: float) -> _T | None:
        """``found()`` once it is not None, asked again at each new line, within ``timeout``
        (None when the time is up or the stream ended without it)."""
        deadline = time.monotonic() + timeout
        while True:
            value = found()
            remaining = deadline - time.monotonic()
            if value is not None or remaining <= 0 or self.ended.is_set():
                return value
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self._changed.wait(), remaining)

    async def wait_for(
        self, predicate: Callable[[SseEvent], bool], timeout: float, since: int = 0
    ) -> SseEvent | None:
        """The first event from index ``since`` on (read or still to come) that matches,
        within ``timeout``."""
        return await self._until(
            lambda: next((e for e in self.events[since:] if predicate(e)), None), timeout
        )

    async def wait_line(self, after: int, timeout: float) -> bool:
        """Whether a line beyond the first ``after`` arrives within ``timeout``."""
        return await self._until(lambda: len(self.line_times) > after or None, timeout) is True

    async def wait_end(self, timeout: float) -> bool:
        with contextlib.suppress(asyncio.TimeoutError):
            await within(self.ended.wait(), timeout)
        return self.ended.is_set()

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(BaseException):
            await self._task
        with contextlib.suppress(Exception):
            await self.response.aclose()


# -- a strict Streamable HTTP client ----------------------------------------------------


def rpc(method: str, params: Any = None, request_id: str | None = None) -> bytes:
    """A JSON-RPC request (or, without ``request_id``, a notification)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return msgspec.json.encode(message)


def initialize_request(request_id: str = "acp-check-init") -> bytes:
    params = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": client_info()}
    return rpc("initialize", params, request_id)


JSON = {"content-type": "application/json"}
EVENT_STREAM = "text/event-stream"


class HttpConnection:
    """One Streamable HTTP connection of the checker, as a strict RFD client.

    Its own ``httpx`` client (HTTP/1.1 unless ``http2``), so its own cookie jar and
    sockets. Requests never raise for transport errors: they return ``None`` and
    :attr:`problem` says why.
    """

    def __init__(
        self,
        target: EndpointTarget,
        timeout: float,
        *,
        token: str | None = None,
        http2: bool = False,
    ) -> None:
        lib = httpx_module()
        self.target = target
        self.timeout = timeout
        self.headers = target.request_headers(token=token)
        self.client: httpx.AsyncClient = lib.AsyncClient(
            http1=not http2,
            http2=http2,
            verify=target.ssl_context() or True,
            timeout=lib.Timeout(timeout),
            follow_redirects=False,
        )
        self.id: str | None = None
        self.problem: str | None = None
        self.set_cookies: list[str] = []
        """Every Set-Cookie the endpoint sent on this connection."""
        self.streams: list[SseStream] = []

    async def request(
        self,
        method: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        connection: bool = True,
    ) -> httpx.Response | None:
        """One request with the connection's headers (and its id, unless ``connection`` is
        False); None when it failed (:attr:`problem`)."""
        lib = httpx_module()
        merged = dict(self.headers)
        if connection and self.id is not None:
            merged[CONNECTION_HEADER] = self.id
        merged.update(headers or {})
        try:
            response = await self.client.request(
                method, self.target.url, headers=merged, content=content
            )
        except lib.HTTPError as exc:
            self.problem = f"{method} failed: {exc or type(exc).__name__}"
            return None
        self.set_cookies += response.headers.get_list("set-cookie")
        return response

    async def initialize(self, request_id: str = "acp-check-init") -> httpx.Response | None:
        response = await self.request(
            "POST", headers=JSON, content=initialize_request(request_id), connection=False
        )
        if response is not None and response.status_code == 200:
            self.id = response.headers.get(CONNECTION_HEADER) or None
        return response

    async def post(self, message: bytes, session: str | None = None) -> httpx.Response | None:
        headers = dict(JSON)
        if session is not None:
            headers[SESSION_HEADER] = session
        return await self.request("POST", headers=headers, content=message)

    async def open_stream(
        self,
        *,
        accept: str = EVENT_STREAM,
        last_event_id: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[httpx.Response | None, SseStream | None]:
        """GET the connection's stream: (the response, a reader when it is a 200 event stream)."""
        lib = httpx_module()
        merged = dict(self.headers)
        if self.id is not None:
            merged[CONNECTION_HEADER] = self.id
        merged["accept"] = accept
        if last_event_id is not None:
            merged["last-event-id"] = last_event_id
        merged.update(headers or {})
        request = self.client.build_request(
            "GET",
            self.target.url,
            headers=merged,
            timeout=lib.Timeout(self.timeout, read=None),
        )
        try:
            response = await self.client.send(request, stream=True)
        except lib.HTTPError as exc:
            self.problem = f"GET failed: {exc or type(exc).__name__}"
            return None, None
        self.set_cookies += response.headers.get_list("set-cookie")
        content_type = response.headers.get("content-type", "")
        if response.status_code != 200 or not content_type.startswith(EVENT_STREAM):
            if response.status_code == 409:  # a refusal's reason (the durable draft)
                with contextlib.suppress(lib.HTTPError, asyncio.TimeoutError):
                    await within(response.aread(), self.timeout)
            await response.aclose()
            return response, None
        stream = SseStream(response)
        self.streams.append(stream)
        return response, stream

    async def delete(self) -> httpx.Response | None:
        return await self.request("DELETE")

    async def close(self) -> None:
        """End the connection (DELETE, best effort) and release sockets."""
        if self.id is not None:
            with contextlib.suppress(Exception):
                await within(self.delete(), self.timeout)
        for stream in self.streams:
            await stream.close()
        with contextlib.suppress(Exception):
            await self.client.aclose()


def random_id() -> str:
    """A connection id no server has issued."""
    return "acp-check-" + secrets.token_hex(16)
