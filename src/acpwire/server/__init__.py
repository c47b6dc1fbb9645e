"""The remote ``/acp`` endpoint: Streamable HTTP and WebSocket (RFD
streamable-http-websocket-transport), and the stdio->remote bridge.

``asgi_app(agent)`` is framework-neutral ASGI; :func:`serve_in_background`
runs it under uvicorn (the ``remote`` extra). See docs/remote.md.
"""

from .asgi import AcpAsgiApp, asgi_app
from .bridge import StdioBridge
from .core import CONNECTION_HEADER, SESSION_HEADER, RemoteConnection, RemoteHost
from .runner import ServedApp, serve, serve_in_background

__all__ = [
    "CONNECTION_HEADER",
    "SESSION_HEADER",
    "AcpAsgiApp",
    "RemoteConnection",
    "RemoteHost",
    "ServedApp",
    "StdioBridge",
    "asgi_app",
    "serve",
    "serve_in_background",
]
