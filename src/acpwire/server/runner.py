"""Run an :class:`~.asgi.AcpAsgiApp` under hypercorn: HTTP/1.1, HTTP/2 and WebSocket on one port.

Why hypercorn (docs/remote.md compares the others): it is the one Python ASGI
server that speaks HTTP/1.1, HTTP/2 with TLS (ALPN ``h2``), HTTP/2 without TLS
(h2c, prior knowledge and ``Upgrade: h2c``) and WebSocket on the same socket,
runs inside the caller's asyncio loop
(so :func:`serve_in_background` can host an endpoint in a test or an
application), and supports the ASGI ``websocket.http.response`` extension the
security middleware uses to refuse an upgrade with 401. uvicorn speaks only
HTTP/1.1; daphne has no h2c; granian runs its own Rust runtime and workers.

The listening socket itself is served by :mod:`.front`: an HTTP/1.1 request with
``Upgrade: websocket`` is served there, on the ``websockets`` package's sans-I/O
protocol (fewer event-loop turns per frame than hypercorn's WebSocket path), and every
other connection goes to hypercorn's per-connection ``TCPServer`` with the bytes
already read; both call the same ASGI app, so one port still speaks all three.

Settings that matter to ACP, each with its reason:

* **Request heads** (slowloris). A head is at most 16 KiB
  (``h11_max_incomplete_size``), and a connection with no request in progress
  is closed ``header_timeout`` seconds after it opened or after its last
  response ended (hypercorn's idle timer, which data arriving does not reset,
  so a head sent a byte at a time is cut off there). A TLS handshake has the
  same ``header_timeout``. The body has its own deadline in the app
  (``Limits.body_timeout``).
* **Requests per connection.** hypercorn's default closes a connection after
  1,000 requests; over HTTP/2 that would take every open SSE stream of the
  connection with it after 1,000 POSTs. The bound here is the protocol's own:
  a client runs out of HTTP/2 stream ids after 2**30 requests.
* **Concurrent HTTP/2 streams** (``Limits.http2_max_streams``): one per SSE
  stream (the connection's and one per session) plus the POSTs in flight. The
  default leaves room for every session stream a connection may hold
  (``Limits.max_sessions_per_connection``) and 75 concurrent POSTs; httpx waits
  for a free stream beyond that.
* **WebSocket compression** is off unless asked for (``websocket_compression``):
  per-message deflate costs far more CPU per ACP message than it saves on
  loopback and LAN links, and hypercorn would otherwise accept it from any
  client that offers it (the front accepts it only when asked for, too).
* **No WebSocket pings from the server.** hypercorn's ping loop outlives a
  closed socket by up to its interval, holding the connection's task (and a
  clean shutdown) that long. Clients ping (the ``websockets`` library every
  20 s), which keeps proxies from timing idle sockets out.

The listening socket is bound before the server starts, so ``port=0`` picks
a free port and :attr:`ServedApp.url` names the one chosen.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import ssl
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from .asgi import AcpAsgiApp
from .front import ASGIApp, Front

INSTALL_HINT = "serving ACP remotely needs the remote extra: pip install 'acpwire[remote]'"

HEADER_TIMEOUT = 10.0
"""Seconds a client has to send a complete request head."""

MAX_REQUESTS_PER_CONNECTION = 2**30
"""Effectively unbounded: HTTP/2 runs out of client stream ids at 2**30 requests."""

BACKLOG = 2048
"""Connections the kernel queues for the server to accept. A full queue drops new
connection attempts, which clients retry only after a second or more."""

log = logging.getLogger("acpwire.server")


@dataclass(frozen=True)
class Tls:
    """A certificate and its key (PEM files), checked by :func:`tls_options`."""

    certfile: str
    keyfile: str | None


def tls_options(certfile: str | None, keyfile: str | None) -> Tls | None:
    """TLS settings, checked here so that a bad pair fails before listening."""
    if certfile is None:
        if keyfile is not None:
            raise ValueError("a key file needs a certificate file")
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certfile, keyfile)  # raises on a bad pair
    return Tls(certfile, keyfile)


def _hypercorn() -> Any:
    try:
        import hypercorn.config as config
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(INSTALL_HINT) from exc
    if not _hooked:
        _no_unasked_compression()
        _h2_early_answers()
        _no_websocket_over_h2()
        _h2_back_pressure()
        _no_full_queue_at_the_end()
        _hooked.append(True)
    return config


def _config(
    app: AcpAsgiApp, tls: Tls | None, header_timeout: float, websocket_compression: bool
) -> Any:
    hypercorn = _hypercorn()
    limits = app.host.limits
    config = hypercorn.Config()
    config.keep_alive_timeout = header_timeout
    config.h11_max_incomplete_size = 16 * 1024
    config.keep_alive_max_requests = MAX_REQUESTS_PER_CONNECTION
    config.h2_max_concurrent_streams = limits.http2_max_streams
    config.websocket_max_message_size = limits.max_message_size
    config.websocket_ping_interval = None
    config.graceful_timeout = 3.0
    config.errorlog = logging.getLogger("acpwire.server.http")
    config.accesslog = None
    if tls is not None:
        config.certfile = tls.certfile
        config.keyfile = tls.keyfile
    # Read by the hooks installed by _hypercorn(): other hypercorn configs keep
    # hypercorn's behaviour.
    config.acpwire_websocket_compression = websocket_compression
    config.acpwire_h2_drain_bytes = 4 * limits.max_message_size
    config.acpwire_no_websocket_over_h2 = True
    config.acpwire_h2_back_pressure = True
    config.acpwire_no_full_queue_at_the_end = True
    return config


_hooked: list[bool] = []


def _no_unasked_compression() -> None:
    """Make hypercorn's WebSocket handshake follow ``websocket_compression``.

    hypercorn always answers a client's ``permessage-deflate`` offer with
    acceptance and has no setting for it. The hook forgets the offer before
    the handshake is answered when the server's config (ours only: other
    hypercorn configs keep hypercorn's behaviour) has compression off.
    """
    from hypercorn.protocol import ws_stream

    stream_class: Any = ws_stream.WSStream
    accept: Callable[[Any, Any], Awaitable[None]] = stream_class._accept

    async def _accept(stream: Any, message: Any) -> None:
        if getattr(stream.config, "acpwire_websocket_compression", True) is False:
            stream.handshake.extensions = None
        await accept(stream, message)

    stream_class._accept = _accept


def _h2_early_answers() -> None:
    """Let an HTTP/2 request be answered before its body has come, as RFC 9113 8.1 allows.

    hypercorn 0.18 (the latest) forgets a stream once its answer is sent, and then takes
    a DATA frame the client still sends on it for a ``KeyError`` in the connection's
    read loop: the TCP connection ends, and every SSE stream on it. An early answer is
    what the endpoint gives a POST it refuses before reading the body (413 for a
    declared length, 415, 401). With the hook, the rest of such a body is read and
    dropped (flow control counts it, so the client can finish sending and then read the
    answer, as httpx does), up to ``config.acpwire_h2_drain_bytes`` per stream; past that
    the stream is reset with NO_ERROR, which asks the client to stop sending.
    """
    import h2.errors
    import h2.events
    import h2.exceptions
    from hypercorn.protocol import h2 as hypercorn_h2

    protocol_class: Any = hypercorn_h2.H2Protocol
    handle_events: Callable[[Any, list[Any]], Awaitable[None]] = protocol_class._handle_events

    def drop(protocol: Any, event: Any, budget: int) -> None:
        connection = protocol.connection
        connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        dropped: dict[int, int] = protocol.__dict__.setdefault("acpwire_dropped", {})
        total = dropped.get(event.stream_id, 0) + event.flow_controlled_length
        if event.stream_ended is not None:
            dropped.pop(event.stream_id, None)
        elif total > budget:
            dropped.pop(event.stream_id, None)
            with contextlib.suppress(h2.exceptions.ProtocolError):
                connection.reset_stream(event.stream_id, h2.errors.ErrorCodes.NO_ERROR)
        else:
            dropped[event.stream_id] = total

    async def _handle_events(protocol: Any, events: list[Any]) -> None:
        budget: int | None = getattr(protocol.config, "acpwire_h2_drain_bytes", None)
        if budget is None:
            await handle_events(protocol, events)
            return
        # One at a time: handling one event can answer and forget a stream the next is for.
        for event in events:
            if (
                isinstance(event, h2.events.DataReceived)
                and event.stream_id not in protocol.streams
            ):
                drop(protocol, event, budget)
            else:
                if isinstance(event, h2.events.StreamReset):
                    protocol.__dict__.get("acpwire_dropped", {}).pop(event.stream_id, None)
                await handle_events(protocol, [event])
        await protocol._flush()  # h2 may answer frames that made no event

    protocol_class._handle_events = _handle_events


def _no_websocket_over_h2() -> None:
    """Serve WebSockets on HTTP/1.1 only: do not offer RFC 8441 (extended CONNECT) on h2.

    hypercorn 0.18 answers a client's ping from its connection's read loop into a stream
    buffer that grows without bound while the client grants no flow-control window (a
    million pings: +31 MiB and counting), and making that write wait would stall the read
    loop that the client's window updates come through. The front's WebSockets bound
    what a client that does not read can cost (:data:`~.front.PONG_BUDGET`); no ACP client
    needs the HTTP/2 form (the ``websockets`` package, and browsers behind the proxy they
    need to send a token, use HTTP/1.1). A client that tries anyway is answered 400 by the
    front (:meth:`~.front.Front.app_for`).
    """
    import h2.settings
    from hypercorn.protocol import h2 as hypercorn_h2

    protocol_class: Any = hypercorn_h2.H2Protocol
    init: Callable[..., None] = protocol_class.__init__

    def __init__(protocol: Any, *args: Any, **kwargs: Any) -> None:
        init(protocol, *args, **kwargs)
        if getattr(protocol.config, "acpwire_no_websocket_over_h2", False):
            codes = h2.settings.SettingCodes
            values = dict(protocol.connection.local_settings.items())
            values.pop(codes.ENABLE_CONNECT_PROTOCOL, None)
            protocol.connection.local_settings = h2.settings.Settings(
                client=False, initial_values=values
            )

    protocol_class.__init__ = __init__


def _h2_back_pressure() -> None:
    """Make an HTTP/2 response wait while its stream's send buffer is full.

    hypercorn 0.18 means to pause a writer once a stream's buffer holds 32 KiB, until it
    is under 16 KiB; but its sender resumes writers whenever it takes less than 16 KiB
    out, also when flow control lets it take nothing. A client that grants no window
    then made the server keep everything its streams were sent (200,000 updates: +43 MiB,
    and on), past the endpoint's bounded queues. Here the writer resumes only once the
    buffer is under 16 KiB, so the endpoint's queues and the agent wait instead. Only
    the app's tasks write response bodies, never the connection's read loop (WebSockets
    are not served over HTTP/2), so the wait cannot hold up the window updates it needs.
    """
    from hypercorn.protocol import h2 as hypercorn_h2

    low_water = hypercorn_h2.BUFFER_LOW_WATER

    class Bounded(hypercorn_h2.StreamBuffer):
        async def pop(self, max_length: int) -> bytes:
            length = min(len(self.buffer), max_length)
            data = bytes(self.buffer[:length])
            del self.buffer[:length]
            if len(self.buffer) < low_water:
                await self._paused.set()
            if not self.buffer:
                await self._is_empty.set()
            return data

    protocol_class: Any = hypercorn_h2.H2Protocol
    create_stream: Callable[[Any, Any], Awaitable[None]] = protocol_class._create_stream

    async def _create_stream(protocol: Any, request: Any) -> None:
        await create_stream(protocol, request)
        if getattr(protocol.config, "acpwire_h2_back_pressure", False):
            protocol.stream_buffers[request.stream_id] = Bounded(protocol.context.event_class)

    protocol_class._create_stream = _create_stream


def _no_full_queue_at_the_end() -> None:
    """Let a request answered before its body was read end, whatever its body filled.

    hypercorn 0.18 tells the app its request has ended (``http.disconnect``) by putting
    that message in the app's receive queue, from the app's own last ``send``, and waits
    while the queue is full: the body chunks that filled it are the app's to read, and
    the app is waiting in that ``send``. A POST refused (413) with ten chunks of its body
    queued never got its answer (on Python 3.10 every time). The oldest chunk is dropped
    to make room: the app is done with the body, or the client is gone.
    """
    from hypercorn.protocol import http_stream
    from hypercorn.protocol.events import StreamClosed

    stream_class: Any = http_stream.HTTPStream
    handle: Callable[[Any, Any], Awaitable[None]] = stream_class.handle

    async def _handle(stream: Any, event: Any) -> None:
        if isinstance(event, StreamClosed) and getattr(
            stream.config, "acpwire_no_full_queue_at_the_end", False
        ):
            queue = getattr(getattr(stream, "app_put", None), "__self__", None)
            if isinstance(queue, asyncio.Queue) and queue.full():
                queue.get_nowait()
        await handle(stream, event)

    stream_class.handle = _handle


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``0``: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on
    # sockets that say they are TCP, and accepted sockets inherit the listener's proto.
    # With Nagle on, a response written in two parts (HTTP/2 HEADERS, then DATA) waits
    # for the client's delayed ACK: 40 ms per request.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    # Listening now lets clients queue in the backlog until the server accepts them.
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket, path: str, *, tls: bool = False) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}{path}"


@dataclass
class ServedApp:
    """A running server: :attr:`url` is ``http(s)://host:port/acp``; :attr:`ws_url` the same as ws(s)://."""

    app: AcpAsgiApp
    url: str
    front: Front | None = None
    """What accepts its connections (its WebSockets: ``front.sockets``)."""

    @property
    def ws_url(self) -> str:
        scheme, rest = self.url.split("://", 1)
        return ("wss" if scheme == "https" else "ws") + "://" + rest


async def _run(
    app: AcpAsgiApp,
    sock: socket.socket,
    stop: asyncio.Event,
    *,
    tls: Tls | None,
    header_timeout: float,
    websocket_compression: bool,
    started: asyncio.Future[Front] | None = None,
) -> None:
    """Serve until ``stop`` is set: WebSocket upgrades on :mod:`.front`, the rest on hypercorn."""
    _hypercorn()
    from hypercorn.app_wrappers import ASGIWrapper
    from hypercorn.asyncio.tcp_server import TCPServer
    from hypercorn.asyncio.worker_context import WorkerContext

    config = _config(app, tls, header_timeout, websocket_compression)
    loop = asyncio.get_running_loop()
    context = WorkerContext(None)
    state: dict[str, Any] = {}

    class Served(TCPServer):
        async def _read_data(self) -> None:
            await super()._read_data()
            # Nothing more can come (end of stream or a read error): let go of the socket
            # now, not when the keep-alive timer would have.
            await self.idle_task.stop()

    async def hypercorn_serves(
        served: ASGIApp, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        asgi: Any = ASGIWrapper(cast("Any", served))  # hypercorn's types are stricter
        await Served(asgi, loop, config, context, state, reader, writer)

    limits = app.host.limits
    front = Front(
        app,
        hypercorn_serves,
        header_timeout=header_timeout,
        max_message_size=limits.max_message_size,
        compression=websocket_compression,
        max_waiting=limits.max_waiting_connections,
        max_waiting_per_address=limits.max_waiting_per_address,
    )
    server = await loop.create_server(
        front.protocol,
        sock=sock,
        backlog=BACKLOG,  # create_server listens again, with this
        ssl=config.create_ssl_context() if tls is not None else None,
        ssl_handshake_timeout=header_timeout if tls is not None else None,
    )
    try:
        if started is not None:
            started.set_result(front)
        await stop.wait()
    finally:
        # End the connections (and stop their agents) first: open SSE streams and
        # WebSockets would otherwise hold the graceful wait to its timeout.
        await app.aclose()
        await context.terminated.set()  # hypercorn's connections close when idle
        server.close()
        await front.wait_closed(config.graceful_timeout)


@contextlib.asynccontextmanager
async def serve_in_background(
    app: AcpAsgiApp,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    tls: Tls | None = None,
    header_timeout: float = HEADER_TIMEOUT,
    websocket_compression: bool = False,
) -> AsyncGenerator[ServedApp, None]:
    """Serve ``app`` in this event loop while the block runs; stop it afterwards.

    HTTP/1.1, HTTP/2 (h2c on plain TCP; ALPN with ``tls``) and WebSocket on one
    port. ``tls`` comes from :func:`tls_options`.
    """
    sock = bind(host, port)
    stop = asyncio.Event()
    started: asyncio.Future[Front] = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(
        _run(
            app,
            sock,
            stop,
            tls=tls,
            header_timeout=header_timeout,
            websocket_compression=websocket_compression,
            started=started,
        )
    )
    try:
        pending: set[asyncio.Future[Any]] = {task, started}
        await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        if not started.done():
            task.result()
            raise RuntimeError("the server stopped while starting")
        yield ServedApp(app, url_of(sock, app.path, tls=tls is not None), started.result())
    finally:
        stop.set()
        await app.aclose()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close()


async def serve(
    app: AcpAsgiApp,
    sock: socket.socket,
    *,
    tls: Tls | None = None,
    header_timeout: float = HEADER_TIMEOUT,
    websocket_compression: bool = False,
) -> None:
    """Serve ``app`` on an already bound socket until SIGINT or SIGTERM.

    Shutdown ends every connection and stops every agent before the server exits.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await _run(
            app,
            sock,
            stop,
            tls=tls,
            header_timeout=header_timeout,
            websocket_compression=websocket_compression,
        )
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
