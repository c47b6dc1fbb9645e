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
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, cast

from . import hypercorn_hooks
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
    hypercorn_hooks.install()
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
    hypercorn_hooks.configure(config, limits, websocket_compression=websocket_compression)
    return config


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
