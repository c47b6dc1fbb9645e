"""HTTP/1.1 POSTs for httpx without httpcore: one write and one read on a kept-alive socket.

Why: over Streamable HTTP every message the client sends is a POST, so a round
trip costs a POST. Through httpx's default transport (httpcore on anyio, h11) a
POST took about a millisecond of CPU on the benchmark machine, some 2,600 Python
calls, against a few dozen microseconds for the bytes themselves; that was most
of the HTTP/1.1 round trip (benchmarks/README.md, "bench_remote.py"). Here a POST
whose body is in hand (every ACP message is) is written in one piece on an idle
kept-alive connection and its answer read straight off the stream.

httpx stays in charge of everything around the bytes: default headers (the
token), cookies both ways, timeouts, and :class:`~.http.HttpTransport`'s retries,
which see the same ``httpx.TransportError`` classes as before. Every other
request (the SSE GETs, DELETE, a POST with a streamed body) goes to the
``fallback`` transport (httpx's own).

Scope: what an ACP POST needs. ``Content-Length`` or chunked answers, or one that
ends with the connection; keep-alive unless the server says ``Connection: close``;
TLS with the caller's ``verify``; a connection found closed while idle is not
reused. No ``Expect: 100-continue``, no pipelining, no proxies (httpx routes a
proxied origin to its own proxy transport before this one).
"""

from __future__ import annotations

import asyncio
import select
import ssl
from collections import deque
from typing import TYPE_CHECKING, Any

from .._waits import within
from ._tls import client_context

if TYPE_CHECKING:
    import httpx

_Origin = tuple[str, str, int]
_Pair = tuple[asyncio.StreamReader, asyncio.StreamWriter]

_MAX_IDLE = 20
"""Idle connections kept per origin (httpx's ``max_keepalive_connections`` too)."""
_HEAD_LIMIT = 64 * 1024
"""Bytes an answer's status line and headers may take."""


def _readable(writer: asyncio.StreamWriter) -> bool:
    """Whether the socket under ``writer`` has bytes or its end waiting (what httpcore asks)."""
    sock = writer.get_extra_info("socket")
    if sock is None:
        return False
    try:
        if hasattr(select, "poll"):  # any descriptor number (select stops at FD_SETSIZE)
            poller = select.poll()
            poller.register(sock.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        ready, _, _ = select.select([sock.fileno()], [], [], 0)
    except (OSError, ValueError):  # closed meanwhile
        return True
    return bool(ready)


class _Timer:
    """Aborts a connection when an exchange outlives its read timeout (no task per POST)."""

    def __init__(self, writer: asyncio.StreamWriter, timeout: float | None) -> None:
        self.fired = False
        self._writer = writer
        self._handle = (
            None if timeout is None else asyncio.get_running_loop().call_later(timeout, self._fire)
        )

    def _fire(self) -> None:
        self.fired = True
        transport = self._writer.transport
        transport.abort()

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()


class Http1Transport:
    """An httpx transport: POSTs over acpwire's own HTTP/1.1 connections, the rest to ``fallback``."""

    def __init__(
        self,
        fallback: httpx.AsyncBaseTransport,
        *,
        verify: bool | ssl.SSLContext = True,
        max_body: int = 64 * 1024 * 1024,
    ) -> None:
        self._fallback = fallback
        self._verify = verify
        self._max_body = max_body
        self._idle: dict[_Origin, deque[_Pair]] = {}
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """The httpx transport interface (duck-typed: httpx calls only this and aclose)."""
        import httpx

        if request.method != "POST":
            return await self._fallback.handle_async_request(request)
        try:
            body = request.content
        except httpx.RequestNotRead:
            return await self._fallback.handle_async_request(request)
        url = request.url
        key = url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        reader, writer = self._take(key) or await self._open(key, timeouts.get("connect"))
        timer = _Timer(writer, timeouts.get("read"))
        keep = False
        try:
            writer.write(_head(request) + body)
            status, reason, headers, content, keep = await self._answer(reader)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            if timer.fired:
                raise httpx.ReadTimeout("no answer to the POST in time") from exc
            raise httpx.ReadError(f"the POST's connection broke: {exc}") from exc
        finally:
            timer.cancel()
            if keep and not self._closed:
                self._put(key, reader, writer)
            else:
                writer.close()
        return httpx.Response(
            status,
            headers=headers,
            content=content,
            request=request,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason},
        )

    def _take(self, key: _Origin) -> _Pair | None:
        idle = self._idle.get(key)
        while idle:
            reader, writer = idle.pop()
            # A server closes idle connections (hypercorn after its keep-alive timeout).
            # The loop may not have read that end yet, so the socket itself is asked too:
            # an idle connection has nothing to read, unless it is closed (or broken).
            if (
                reader.at_eof()
                or reader.exception() is not None
                or writer.is_closing()
                or _readable(writer)
            ):
                writer.close()
                continue
            return reader, writer
        return None

    def _put(
        self, key: _Origin, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        idle = self._idle.setdefault(key, deque())
        idle.append((reader, writer))
        while len(idle) > _MAX_IDLE:
            _, old = idle.popleft()
            old.close()

    async def _open(self, key: _Origin, timeout: float | None) -> _Pair:
        import httpx

        scheme, host, port = key
        context = client_context(self._verify) if scheme == "https" else None
        try:
            return await within(
                asyncio.open_connection(
                    host,
                    port,
                    ssl=context,
                    server_hostname=host if context else None,
                    limit=_HEAD_LIMIT,
                ),
                timeout,
            )
        except asyncio.TimeoutError:
            raise httpx.ConnectTimeout(f"cannot connect to {host}:{port} in time") from None
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {exc}") from exc

    async def _answer(
        self, reader: asyncio.StreamReader
    ) -> tuple[int, bytes, list[tuple[bytes, bytes]], bytes, bool]:
        """(status, reason, headers, body, keep the connection) of the next answer."""
        import httpx

        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head[:-4].split(b"\r\n")
            version, _, rest = lines[0].partition(b" ")
            code, _, reason = rest.partition(b" ")
            if not version.startswith(b"HTTP/1.") or not code.isdigit():
                raise httpx.RemoteProtocolError(f"not an HTTP/1.1 answer: {lines[0][:80]!r}")
            status = int(code)
            if status >= 200 or status == 101:
                break  # 1xx interim answers are skipped
        headers: list[tuple[bytes, bytes]] = []
        length: int | None = None
        chunked = False
        keep = version == b"HTTP/1.1"
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon:
                raise httpx.RemoteProtocolError("a malformed header line in the answer")
            value = value.strip()
            headers.append((name, value))
            lowered = name.lower()
            if lowered == b"content-length":
                if not value.isdigit():
                    raise httpx.RemoteProtocolError("a malformed Content-Length in the answer")
                length = int(value)
            elif lowered == b"transfer-encoding":
                chunked = value.lower().endswith(b"chunked")
            elif lowered == b"connection":
                keep = keep and b"close" not in value.lower()
        if status in (101, 204, 304):
            return status, reason, headers, b"", keep and status != 101
        if chunked:
            body = await self._chunks(reader)
        elif length is not None:
            if length > self._max_body:
                raise httpx.RemoteProtocolError(f"an answer of {length} bytes is too large")
            body = await reader.readexactly(length)
        else:
            body = await self._until_closed(reader)
            keep = False
        return status, reason, headers, body, keep

    async def _until_closed(self, reader: asyncio.StreamReader) -> bytes:
        """A body without a length: it ends with the connection."""
        import httpx

        parts: list[bytes] = []
        size = 0
        while data := await reader.read(65536):
            size += len(data)
            if size > self._max_body:
                raise httpx.RemoteProtocolError("an answer without a length is too large")
            parts.append(data)
        return b"".join(parts)

    async def _chunks(self, reader: asyncio.StreamReader) -> bytes:
        import httpx

        parts: list[bytes] = []
        size = 0
        while True:
            line = await reader.readuntil(b"\r\n")
            digits = line.split(b";", 1)[0].strip()
            try:
                n = int(digits, 16)
            except ValueError:
                raise httpx.RemoteProtocolError("a malformed chunk size in the answer") from None
            if n == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":
                    pass  # trailers, ignored
                return b"".join(parts)
            size += n
            if size > self._max_body:
                raise httpx.RemoteProtocolError("a chunked answer is too large")
            chunk = await reader.readexactly(n + 2)
            parts.append(chunk[:-2])

    async def __aenter__(self) -> Http1Transport:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for _, writer in connections:
                writer.close()
        await self._fallback.aclose()


def _head(request: httpx.Request) -> bytes:
    """The request line and headers (httpx has set Host, Content-Length and the rest)."""
    import httpx

    lines = [b"POST " + request.url.raw_path + b" HTTP/1.1"]
    for name, value in request.headers.raw:
        if b"\r" in value or b"\n" in value or b"\r" in name or b"\n" in name:
            raise httpx.LocalProtocolError("a header name or value with a line break")
        lines.append(name + b": " + value)
    lines.append(b"\r\n")
    return b"\r\n".join(lines)
