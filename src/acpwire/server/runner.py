"""Run an :class:`~.asgi.AcpAsgiApp` under uvicorn, blocking or in the background.

uvicorn (HTTP/1.1 and WebSocket) comes with the ``remote`` extra and is
imported only here. The listening socket is bound before uvicorn starts, so
``port=0`` picks a free port and :attr:`ServedApp.url` names the one chosen.

Slow clients (slowloris): uvicorn bounds the size of a request head
(``h11_max_incomplete_event_size``, 16 KiB) but not the time it may take, so a
socket that sends its head a byte at a time is held forever. The HTTP protocol
used here closes a connection whose request head is not complete
``header_timeout`` seconds after it opened (or after its previous response);
the body has its own deadline in the app (``Limits.body_timeout``).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from .asgi import AcpAsgiApp

INSTALL_HINT = "serving ACP remotely needs the remote extra: pip install 'acpwire[remote]'"

HEADER_TIMEOUT = 10.0
"""Seconds a client has to send a complete request head."""


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(INSTALL_HINT) from exc
    return uvicorn


def _guarded_h11(header_timeout: float) -> type[Any]:
    """uvicorn's h11 protocol with a deadline on each request head."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _head_deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._head_deadline = self.loop.call_later(header_timeout, self._head_too_slow)

        def _disarm(self) -> None:
            if self._head_deadline is not None:
                self._head_deadline.cancel()
                self._head_deadline = None

        def _head_too_slow(self) -> None:
            self._head_deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # a kept-alive connection waits for its next head

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return GuardedH11Protocol


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``0``: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    # Listening now lets clients queue in the backlog until uvicorn accepts them.
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _server(app: AcpAsgiApp, header_timeout: float = HEADER_TIMEOUT, **options: Any) -> Any:
    uvicorn = _uvicorn()
    settings: dict[str, Any] = {
        "lifespan": "on",
        "http": _guarded_h11(header_timeout),
        "ws": "websockets-sansio",
        "ws_max_size": app.host.limits.max_message_size,
        "log_level": "warning",
        "timeout_graceful_shutdown": 3,
        # Peer addresses in logs are the socket's, not what a client claims in
        # X-Forwarded-For; behind a proxy, pass proxy_headers=True and
        # forwarded_allow_ips=... explicitly.
        "proxy_headers": False,
    }
    settings.update(options)
    server = uvicorn.Server(uvicorn.Config(app, **settings))
    original_shutdown = server.shutdown

    async def shutdown(sockets: Any = None) -> None:
        # End the connections (and stop their agents) first: open SSE streams and
        # WebSockets would otherwise hold uvicorn's graceful wait to its timeout.
        await app.aclose()
        await original_shutdown(sockets=sockets)

    server.shutdown = shutdown
    return server


def url_of(sock: socket.socket, path: str, *, tls: bool = False) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"{'https' if tls else 'http'}://{shown}:{port}{path}"


@dataclass
class ServedApp:
    """A running server: :attr:`url` is ``http(s)://host:port/acp``; :attr:`ws_url` the same as ws(s)://."""

    app: AcpAsgiApp
    url: str

    @property
    def ws_url(self) -> str:
        scheme, rest = self.url.split("://", 1)
        return ("wss" if scheme == "https" else "ws") + "://" + rest


def tls_options(certfile: str | None, keyfile: str | None) -> dict[str, Any]:
    """uvicorn options for TLS; checked here so a bad file fails before listening."""
    if certfile is None:
        if keyfile is not None:
            raise ValueError("a key file needs a certificate file")
        return {}
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certfile, keyfile)  # raises on a bad pair
    return {"ssl_certfile": certfile, "ssl_keyfile": keyfile}


@contextlib.asynccontextmanager
async def serve_in_background(
    app: AcpAsgiApp, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> AsyncGenerator[ServedApp, None]:
    """Serve ``app`` in this event loop while the block runs; stop it afterwards.

    ``options`` go to uvicorn (``ssl_certfile``/``ssl_keyfile`` for TLS) or set
    ``header_timeout``.
    """
    sock = bind(host, port)
    server = _server(app, **options)
    started = asyncio.Event()
    original_startup = server.startup

    async def startup(sockets: Any = None) -> None:
        await original_startup(sockets=sockets)
        started.set()

    server.startup = startup
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        done, _ = await asyncio.wait(
            {task, asyncio.ensure_future(started.wait())}, return_when=asyncio.FIRST_COMPLETED
        )
        if task in done:
            task.result()
            raise RuntimeError("the server stopped while starting")
        tls = options.get("ssl_certfile") is not None
        yield ServedApp(app, url_of(sock, app.path, tls=tls))
    finally:
        await app.aclose()
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close()


async def serve(app: AcpAsgiApp, sock: socket.socket, **options: Any) -> None:
    """Serve ``app`` on an already bound socket until interrupted (SIGINT/SIGTERM).

    Shutdown ends every connection and stops every agent before the server exits.
    """
    server = _server(app, **options)
    await server.serve(sockets=[sock])
