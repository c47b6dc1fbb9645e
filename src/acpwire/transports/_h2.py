"""An HTTP/2 transport for httpx with one reader per TCP connection.

Why not httpx's own HTTP/2 (httpcore 1.0): every response stream reads the
socket itself, under one lock per connection. A task that queues for the lock
after another task has already received its frames cannot return until the
lock's next holder gets data; when that holder is an idle SSE stream (a session
nobody is talking to), the wait lasts until the server's next keep-alive. With
a few session streams open, a ``session/new`` answer sat in memory for 15 s
(tests/server/test_http2.py shows it). Here one task reads the socket and
hands each frame to its stream; a stream only waits on its own queue.

Scope: what the ACP client needs. h2 with TLS (ALPN) or h2c with prior
knowledge on ``http://``; request bodies sent whole (they are bounded
messages), with flow control; response bodies streamed, acknowledged to the
server as the caller consumes them (back-pressure); the server's
``MAX_CONCURRENT_STREAMS`` respected by waiting for a free stream; a broken
connection fails its streams and the next request opens a new one. No server
push, no priorities, no proxies.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from .._tasks import TaskSet
from .._waits import within
from ._tls import client_context

# httpx and h2 come with the remote extra: imported where used, so that this module
# (like every module outside the CLI) imports without it.
if TYPE_CHECKING:
    import h2.events
    import httpx

log = logging.getLogger("acpwire.transports.http")

_READ_SIZE = 65536
_CONNECTION_WINDOW = 16 * 1024 * 1024
"""Bytes the server may send ahead of what the client has consumed, over all streams."""
_STREAM_WINDOW = 1024 * 1024
"""The same per stream: a burst of session updates is not throttled at 64 KiB."""
_HOP_BY_HOP = frozenset(
    {b"host", b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"}
)


class _Stream:
    def __init__(self) -> None:
        self.headers: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = (
            asyncio.get_running_loop().create_future()
        )
        self.chunks: deque[tuple[bytes, int] | BaseException | None] = deque()
        self.readable = asyncio.Event()
        self.ended = False

    def push(self, item: tuple[bytes, int] | BaseException | None) -> None:
        self.chunks.append(item)
        self.readable.set()

    def fail(self, error: BaseException) -> None:
        if not self.headers.done():
            self.headers.set_exception(error)
            self.headers.exception()  # retrieved: nobody may be waiting
        self.push(error)


class _Connection:
    """One TCP connection: a reader task, the h2 state, and the streams on it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        import h2.config
        import h2.connection
        import h2.settings

        self._reader = reader
        self._writer = writer
        config = h2.config.H2Configuration(client_side=True, header_encoding=None)
        self._h2 = h2.connection.H2Connection(config=config)
        self._h2.local_settings = h2.settings.Settings(
            client=True,
            initial_values={
                h2.settings.SettingCodes.ENABLE_PUSH: 0,
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 100,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 65536,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: _STREAM_WINDOW,
            },
        )
        self._streams: dict[int, _Stream] = {}
        self._changed = asyncio.Event()
        """Set when windows, settings or the stream count change (senders re-check)."""
        self._settled = asyncio.Event()
        self._write_lock = asyncio.Lock()
        self.error: BaseException | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._flushes = TaskSet(log)
        """Flushes started where nothing may wait (a stream's cancel); cancelled on close."""

    async def start(self) -> None:
        self._h2.initiate_connection()
        self._h2.increment_flow_control_window(_CONNECTION_WINDOW - 65535)
        await self._flush()
        self._reader_task = asyncio.ensure_future(self._read_loop())
        # The server's SETTINGS (its stream limit) come first; wait for them so
        # that the first burst of requests respects the limit.
        await self._settled.wait()
        if self.error is not None:
            raise self.error

    @property
    def usable(self) -> bool:
        return self.error is None

    # -- the socket ------------------------------------------------------------------

    async def _flush(self) -> None:
        import httpx

        data = self._h2.data_to_send()
        if not data:
            return
        async with self._write_lock:
            try:
                self._writer.write(data)
                await self._writer.drain()
            except (OSError, RuntimeError) as exc:
                error = httpx.WriteError(f"HTTP/2 connection lost: {exc}")
                self._broken(error)
                raise error from exc

    async def _read_loop(self) -> None:
        import h2.exceptions
        import httpx

        try:
            while True:
                data = await self._reader.read(_READ_SIZE)
                if not data:
                    self._broken(httpx.RemoteProtocolError("the server closed the connection"))
                    return
                try:
                    events = self._h2.receive_data(data)
                except h2.exceptions.ProtocolError as exc:
                    self._broken(httpx.RemoteProtocolError(f"HTTP/2 protocol error: {exc}"))
                    return
                for event in events:
                    self._dispatch(event)
                await self._flush()
        except (OSError, httpx.TransportError) as exc:
            self._broken(httpx.ReadError(f"HTTP/2 connection lost: {exc}"))
        finally:
            self._settled.set()

    def _dispatch(self, event: h2.events.Event) -> None:
        import h2.events
        import httpx

        if isinstance(event, h2.events.ResponseReceived):
            stream = self._streams.get(event.stream_id)
            if stream is not None and not stream.headers.done():
                status = 0
                headers: list[tuple[bytes, bytes]] = []
                for name, value in event.headers or ():
                    if name == b":status":
                        status = int(value)
                    elif not name.startswith(b":"):
                        headers.append((name, value))
                stream.headers.set_result((status, headers))
        elif isinstance(event, h2.events.DataReceived):
            stream = self._streams.get(event.stream_id)
            if stream is not None:
                stream.push((event.data or b"", event.flow_controlled_length or 0))
            elif event.flow_controlled_length:
                self._h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            stream = self._streams.get(event.stream_id)
            if stream is not None:
                stream.push(None)
        elif isinstance(event, h2.events.StreamReset):
            stream = self._streams.pop(event.stream_id, None)
            if stream is not None:
                stream.fail(httpx.RemoteProtocolError(f"stream reset ({event.error_code})"))
            self._changed.set()
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            self._settled.set()
            self._changed.set()
        elif isinstance(event, h2.events.WindowUpdated):
            self._changed.set()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._broken(
                httpx.RemoteProtocolError(f"the server ended the connection ({event.error_code})")
            )

    def _broken(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        for stream in self._streams.values():
            stream.fail(error)
        self._streams.clear()
        self._changed.set()
        self._settled.set()
        with contextlib.suppress(Exception):
            self._writer.close()

    async def _changes(self) -> None:
        self._changed.clear()
        await self._changed.wait()
        if self.error is not None:
            raise self.error

    # -- requests --------------------------------------------------------------------

    async def request(self, request: httpx.Request) -> httpx.Response:
        import httpx

        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        body = await request.aread()
        while self._h2.open_outbound_streams >= self._h2.remote_settings.max_concurrent_streams:
            await self._changes()  # every stream is in use: wait for one to end
        if self.error is not None:
            raise self.error
        stream_id = self._h2.get_next_available_stream_id()
        stream = self._streams[stream_id] = _Stream()
        try:
            self._h2.send_headers(stream_id, _request_headers(request), end_stream=not body)
            await self._flush()
            await self._send_body(stream_id, body)
            status, headers = await within(asyncio.shield(stream.headers), timeouts.get("read"))
        except asyncio.TimeoutError:
            self.cancel(stream_id)
            raise httpx.ReadTimeout("no HTTP/2 response headers in time") from None
        except BaseException:
            self.cancel(stream_id)
            raise
        return httpx.Response(
            status,
            headers=headers,
            # An async iterator: httpx wraps it, and its aclose() ends the stream.
            content=_body(self, stream_id, stream, timeouts.get("read")),
            extensions={"http_version": b"HTTP/2", "stream_id": stream_id},
            request=request,
        )

    async def _send_body(self, stream_id: int, body: bytes) -> None:
        view = memoryview(body)
        while view:
            window = min(
                self._h2.local_flow_control_window(stream_id), self._h2.max_outbound_frame_size
            )
            if window <= 0:
                await self._changes()
                continue
            chunk, view = view[:window], view[window:]
            self._h2.send_data(stream_id, bytes(chunk), end_stream=not view)
            await self._flush()

    def cancel(self, stream_id: int) -> None:
        """Forget a stream the caller no longer reads; reset it if it is still open."""
        import h2.errors
        import h2.exceptions

        stream = self._streams.pop(stream_id, None)
        if stream is None:
            return
        self._changed.set()
        if self.error is not None:
            return
        # Data that arrived for it and was never read still counts against the
        # connection's window until acknowledged.
        unread = sum(item[1] for item in stream.chunks if isinstance(item, tuple))
        with contextlib.suppress(h2.exceptions.ProtocolError, KeyError):
            if unread:
                self._h2.acknowledge_received_data(unread, stream_id)
            if not stream.ended:
                self._h2.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
        self._spawn_flush()

    def _spawn_flush(self) -> None:
        async def flush() -> None:
            with contextlib.suppress(Exception):
                await self._flush()

        self._flushes.spawn(flush(), name="HTTP/2 flush")

    async def consumed(self, stream_id: int, amount: int) -> None:
        import h2.exceptions
        import httpx

        if amount and self.error is None:
            with contextlib.suppress(h2.exceptions.ProtocolError, KeyError):
                self._h2.acknowledge_received_data(amount, stream_id)
            with contextlib.suppress(httpx.TransportError):
                await self._flush()

    def finished(self, stream_id: int) -> None:
        self._streams.pop(stream_id, None)
        self._changed.set()

    async def aclose(self) -> None:
        import httpx

        if self.error is None:
            with contextlib.suppress(Exception):
                self._h2.close_connection()
                await self._flush()
        self._broken(httpx.ReadError("the HTTP/2 connection was closed"))
        if self._reader_task is not None:
            self._reader_task.cancel()
            with contextlib.suppress(BaseException):
                await self._reader_task
        await self._flushes.aclose()


def _origin(request: httpx.Request) -> tuple[str, str, int]:
    url = request.url
    return url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)


def _request_headers(request: httpx.Request) -> list[tuple[bytes, bytes]]:
    url = request.url
    headers = [
        (b":method", request.method.encode("ascii")),
        (b":authority", url.netloc),
        (b":scheme", url.scheme.encode("ascii")),
        (b":path", url.raw_path),
    ]
    for name, value in request.headers.raw:
        lowered = name.lower()
        if lowered not in _HOP_BY_HOP:
            headers.append((lowered, value))
    return headers


async def _body(
    connection: _Connection, stream_id: int, stream: _Stream, timeout: float | None
) -> AsyncIterator[bytes]:
    """A response body, chunk by chunk, each acknowledged to the server as it is taken."""
    import httpx

    try:
        while not stream.ended:
            while not stream.chunks:
                stream.readable.clear()
                try:
                    await within(stream.readable.wait(), timeout)
                except asyncio.TimeoutError:
                    raise httpx.ReadTimeout("no HTTP/2 data in time") from None
            item = stream.chunks.popleft()
            if item is None:
                stream.ended = True
                connection.finished(stream_id)
                return
            if isinstance(item, BaseException):
                stream.ended = True
                raise item
            data, amount = item
            await connection.consumed(stream_id, amount)
            if data:
                yield data
    finally:
        if not stream.ended:  # closed before its end: reset the stream
            stream.ended = True
            connection.cancel(stream_id)


class NotHttp2(Exception):
    """The server does not speak HTTP/2 (no ALPN ``h2``, or h2c prior knowledge refused)."""


class Http2Transport:
    """An httpx transport speaking HTTP/2 (h2c on ``http://``, ALPN ``h2`` on ``https://``).

    One TCP connection per origin, opened on the first request and again after
    it broke. With ``fallback`` (an HTTP/1.1 transport), an origin that turns
    out not to speak HTTP/2 is served by it from then on; without, such a
    request raises :class:`NotHttp2`.
    """

    def __init__(
        self,
        *,
        verify: bool | ssl.SSLContext = True,
        fallback: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._verify = verify
        self._fallback = fallback
        self._http1: set[tuple[str, str, int]] = set()
        self._connections: dict[tuple[str, str, int], _Connection] = {}
        self._opening = asyncio.Lock()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """The httpx transport interface (duck-typed: httpx calls only this and aclose)."""
        import httpx

        if self._fallback is not None and _origin(request) in self._http1:
            return await self._fallback.handle_async_request(request)
        try:
            connection = await self._connection(request)
        except NotHttp2 as exc:
            if self._fallback is None:
                raise httpx.ConnectError(str(exc)) from exc
            self._http1.add(_origin(request))
            return await self._fallback.handle_async_request(request)
        return await connection.request(request)

    async def _connection(self, request: httpx.Request) -> _Connection:
        key = _origin(request)
        _, host, port = key
        url = request.url
        async with self._opening:
            connection = self._connections.get(key)
            if connection is not None and connection.usable:
                return connection
            timeouts: dict[str, Any] = request.extensions.get("timeout", {})
            connection = await self._open(url.scheme, host, port, timeouts.get("connect"))
            self._connections[key] = connection
            return connection

    async def _open(self, scheme: str, host: str, port: int, timeout: float | None) -> _Connection:
        import httpx

        context: ssl.SSLContext | None = None
        if scheme == "https":
            context = client_context(self._verify)
            context.set_alpn_protocols(["h2"])
        try:
            reader, writer = await within(
                asyncio.open_connection(
                    host, port, ssl=context, server_hostname=host if context else None
                ),
                timeout,
            )
        except asyncio.TimeoutError:
            raise httpx.ConnectTimeout(f"cannot connect to {host}:{port} in time") from None
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {exc}") from exc
        if context is not None:
            ssl_object = writer.get_extra_info("ssl_object")
            if ssl_object is None or ssl_object.selected_alpn_protocol() != "h2":
                writer.close()
                raise NotHttp2(f"{host}:{port} does not offer HTTP/2 (ALPN h2)")
        connection = _Connection(reader, writer)
        try:
            await within(connection.start(), timeout)
        except asyncio.TimeoutError:
            await connection.aclose()
            raise httpx.ConnectTimeout(f"{host}:{port} did not start HTTP/2 in time") from None
        except httpx.TransportError as exc:
            await connection.aclose()
            raise NotHttp2(f"{host}:{port} does not speak HTTP/2: {exc}") from exc
        return connection

    async def aclose(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        for connection in connections:
            await connection.aclose()
        if self._fallback is not None:
            await self._fallback.aclose()

    @property
    def connections(self) -> int:
        """Open TCP connections (for tests and diagnostics)."""
        return sum(c.usable for c in self._connections.values())
