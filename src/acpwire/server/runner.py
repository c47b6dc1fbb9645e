"""Run an :class:`~.asgi.AcpAsgiApp` under uvicorn, blocking or in the background.

uvicorn (HTTP/1.1 and WebSocket) comes with the ``remote`` extra and is
imported only here. The listening socket is bound before uvicorn starts, so
``port=0`` picks a free port and :attr:`ServedApp.url` names the one chosen.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from .asgi import AcpAsgiApp

INSTALL_HINT = "serving ACP remotely needs the remote extra: pip install 'acpwire[remote]'"


def _uvicorn() -> Any:
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(INSTALL_HINT) from exc
    return uvicorn


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


def _server(app: AcpAsgiApp, **options: Any) -> Any:
    uvicorn = _uvicorn()
    settings: dict[str, Any] = {
        "lifespan": "on",
        "ws": "websockets-sansio",
        "ws_max_size": app.host.max_message_size,
        "log_level": "warning",
        "timeout_graceful_shutdown": 3,
    }
    settings.update(options)
    return uvicorn.Server(uvicorn.Config(app, **settings))


def url_of(sock: socket.socket, path: str) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


@dataclass
class ServedApp:
    """A running server: :attr:`url` is ``http://host:port/acp``; :attr:`ws_url` the same as ws://."""

    app: AcpAsgiApp
    url: str

    @property
    def ws_url(self) -> str:
        return "ws://" + self.url.removeprefix("http://")


@contextlib.asynccontextmanager
async def serve_in_background(
    app: AcpAsgiApp, host: str = "127.0.0.1", port: int = 0, **options: Any
) -> AsyncGenerator[ServedApp, None]:
    """Serve ``app`` in this event loop while the block runs; stop it afterwards."""
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
        yield ServedApp(app, url_of(sock, app.path))
    finally:
        await app.aclose()
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close()


async def serve(app: AcpAsgiApp, sock: socket.socket, **options: Any) -> None:
    """Serve ``app`` on an already bound socket until interrupted (SIGINT/SIGTERM)."""
    server = _server(app, **options)
    await server.serve(sockets=[sock])
