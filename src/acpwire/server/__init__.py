"""The remote ``/acp`` endpoint: Streamable HTTP and WebSocket (RFD
streamable-http-websocket-transport), and the stdio->remote bridge.

``asgi_app(agent, auth=...)`` is framework-neutral ASGI behind a security
middleware (Host/Origin checks, authentication); :func:`serve_in_background`
runs it under hypercorn (HTTP/1.1, HTTP/2, WebSocket; the ``remote`` extra). See docs/remote.md and
docs/security.md.
"""

from .asgi import AcpAsgiApp, Auth, NoAuthenticationWarning, asgi_app
from .bridge import StdioBridge
from .connection import RemoteConnection
from .headers import CONNECTION_HEADER, SESSION_HEADER
from .host import RemoteHost
from .limits import Limits
from .owners import SessionOwners
from .runner import ServedApp, serve, serve_in_background
from .security import (
    ANONYMOUS,
    Authenticator,
    BearerTokens,
    RequestHead,
    SecurityMiddleware,
    SecuritySettings,
    token_principal,
)

__all__ = [
    "ANONYMOUS",
    "CONNECTION_HEADER",
    "SESSION_HEADER",
    "AcpAsgiApp",
    "Auth",
    "Authenticator",
    "BearerTokens",
    "Limits",
    "NoAuthenticationWarning",
    "RemoteConnection",
    "RemoteHost",
    "RequestHead",
    "SecurityMiddleware",
    "SecuritySettings",
    "ServedApp",
    "SessionOwners",
    "StdioBridge",
    "asgi_app",
    "serve",
    "serve_in_background",
    "token_principal",
]
