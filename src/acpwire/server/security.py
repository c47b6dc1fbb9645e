"""Who may reach the ``/acp`` endpoint: Host and Origin allow-lists and authentication.

:class:`SecurityMiddleware` is a plain ASGI 3 middleware in front of the
endpoint (HTTP requests and WebSocket upgrades alike); :class:`SecuritySettings`
says what it enforces and knows nothing of ASGI. Every request passes three
checks, in this order, before the endpoint sees it:

1. **Host** (DNS rebinding). A web page whose host name an attacker re-points
   at 127.0.0.1 reaches a loopback server from the victim's browser with its
   own name in ``Host``. With ``allowed_hosts=None`` (the default) a server
   listening on a loopback address accepts only loopback names (``localhost``,
   ``127.0.0.1``, ``[::1]``, any port); a server on another address accepts any
   ``Host`` (authentication protects it). Refused: ``421 Misdirected Request``,
   as the MCP Python SDK answers.
2. **Origin** (cross-site pages). Browsers send ``Origin`` on cross-site
   requests and on every WebSocket upgrade, and a WebSocket is not protected by
   CORS. A request that carries ``Origin`` is refused (``403``) unless the
   origin is in ``allowed_origins`` (``"*"`` allows any); requests without it
   (every non-browser client) pass. With ``same_origin`` (``asgi_app(ui=True)``,
   which serves the web client at ``/``), the origin of the request itself, its
   scheme and ``Host``, is admitted too: the page's own.
3. **Authentication**. ``authenticate`` maps the request head to a principal
   name, or ``None`` to refuse: ``401`` with ``WWW-Authenticate: Bearer``; a
   WebSocket upgrade is refused with the same status before it is accepted.
   :class:`BearerTokens` is the built-in scheme (``Authorization: Bearer
   TOKEN``, each token its own principal, compared in constant time); a
   deployment behind a proxy that authenticates users passes its own hook
   (read the proxy's identity header, verify a JWT). ``authenticate=None``
   turns authentication off: every request is :data:`ANONYMOUS`.

   A browser cannot set ``Authorization`` on a WebSocket, so a WebSocket upgrade
   may carry the token in ``Sec-WebSocket-Protocol`` instead: the two protocols
   :data:`TOKEN_PROTOCOL` and ``TOKEN_PROTOCOL + "." + base64url(token)``
   (:func:`token_protocols`). The middleware turns that into ``Authorization:
   Bearer TOKEN`` for the hook, removes the token from the scope's
   ``subprotocols``, and accepts the socket with :data:`TOKEN_PROTOCOL` only (a
   browser fails a socket whose offered protocols get no answer; the token is
   never echoed). It changes nothing else: Host and Origin are checked first,
   so a foreign page that has the token is still refused.

A request that passes all three admits its TCP connection: the server that put the
:data:`ADMIT` extension in the scope (:mod:`.front`) stops counting the connection
among the unauthenticated ones it may shed.

The principal is stored in the ASGI scope under :data:`PRINCIPAL_KEY`; the
endpoint records it on each connection it opens and refuses the connection's
id to any other principal (see :mod:`.host`). The endpoint refuses requests
that did not pass through this middleware (no principal in the scope), so
the checks cannot be skipped by mistake.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, cast

log = logging.getLogger("acpwire.server")

PRINCIPAL_KEY = "acpwire.principal"
"""Where the middleware leaves the authenticated principal in the ASGI scope."""

ANONYMOUS = "anonymous"
"""The one principal of an endpoint without authentication."""

ADMIT = "acpwire.admit"
"""The ASGI scope extension ``{"admit": callable}`` a server may offer: called once a
request has passed every check, so the server knows its connection is no stranger's."""

TOKEN_PROTOCOL = "acpwire.bearer"
"""The WebSocket subprotocol offered beside the one carrying the token
(:func:`token_protocols`), and the one the server accepts the socket with."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class RequestHead:
    """What an authentication hook sees of a request: no body, no framework types."""

    kind: str
    """``"http"`` or ``"websocket"``."""
    method: str
    path: str
    headers: Mapping[str, str]
    """Lower-case names; repeated headers joined with ``", "``."""
    client: tuple[str, int] | None
    """The peer address as the ASGI server reports it."""


Authenticator = Callable[[RequestHead], Awaitable[str | None]]
"""An authentication hook: the principal's name, or ``None`` to refuse with 401."""


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def token_principal(token: str) -> str:
    """The principal name of a bare token: stable across restarts, and not the token."""
    return "token:" + hashlib.sha256(token.encode("utf-8")).hexdigest()[:16]


class BearerTokens:
    """``Authorization: Bearer TOKEN`` against a fixed set of tokens.

    ``tokens`` is an iterable of tokens (each becomes its own principal, named
    by :func:`token_principal`) or a mapping of token to principal name.
    Comparison is by SHA-256 digest with :func:`hmac.compare_digest` against
    every token, so neither the time taken nor an early exit tells an attacker
    how much of a guess was right.
    """

    def __init__(self, tokens: Iterable[str] | Mapping[str, str]) -> None:
        if isinstance(tokens, Mapping):
            named = cast("Mapping[str, str]", tokens)
            pairs = [(token, named[token]) for token in named]
        else:
            pairs = [(token, token_principal(token)) for token in tokens]
        if not pairs:
            raise ValueError("BearerTokens needs at least one token")
        for token, _ in pairs:
            if not token or token != token.strip() or any(c.isspace() for c in token):
                raise ValueError("a token must be non-empty and contain no whitespace")
        self._tokens = [(_digest(t), p) for t, p in pairs]

    @property
    def principals(self) -> frozenset[str]:
        return frozenset(p for _, p in self._tokens)

    async def __call__(self, request: RequestHead) -> str | None:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        offered = _digest(value.strip())
        found: str | None = None
        for digest, principal in self._tokens:
            if hmac.compare_digest(digest, offered):
                found = principal
        return found


def token_protocols(token: str) -> list[str]:
    """The ``Sec-WebSocket-Protocol`` values that carry ``token`` (for a browser's
    ``new WebSocket(url, protocols)``): base64url without padding, since a protocol
    name is an HTTP token and cannot hold every character a token may have."""
    encoded = base64.urlsafe_b64encode(token.encode("utf-8")).rstrip(b"=").decode("ascii")
    return [TOKEN_PROTOCOL, f"{TOKEN_PROTOCOL}.{encoded}"]


def _protocol_token(subprotocols: list[str]) -> tuple[str | None, list[str]]:
    """The token a WebSocket offered as a subprotocol, and the other protocols."""
    prefix = TOKEN_PROTOCOL + "."
    carried = [p for p in subprotocols if p.startswith(prefix)]
    rest = [p for p in subprotocols if not p.startswith(prefix) and p != TOKEN_PROTOCOL]
    if TOKEN_PROTOCOL not in subprotocols or len(carried) != 1:
        return None, rest
    encoded = carried[0][len(prefix) :]
    try:
        token = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        return None, rest
    return token, rest


def _host_name(value: str) -> str:
    """``Host`` header value without its port, lower-case, IPv6 brackets removed."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"


@dataclass(frozen=True)
class SecuritySettings:
    """What :class:`SecurityMiddleware` enforces (see the module docstring)."""

    authenticate: Authenticator | None
    """The authentication hook; ``None`` turns authentication off."""
    allowed_hosts: frozenset[str] | None = None
    """``Host`` values accepted (``name`` for any port, ``name:port`` for one);
    ``None``: loopback names when the server listens on loopback, else any."""
    allowed_origins: frozenset[str] = field(default_factory=frozenset[str])
    """``Origin`` values accepted (``scheme://host[:port]``); ``"*"``: any."""
    same_origin: bool = False
    """Also accept the request's own origin (its scheme and ``Host``): the web
    client's page, served by the same app, connecting back to it."""

    def host_allowed(self, host: str | None, server: tuple[str, int] | None) -> bool:
        """Whether a request with this ``Host`` header may reach a server bound to ``server``."""
        if self.allowed_hosts is None:
            if server is None or not _is_loopback(server[0]):
                return True
            return host is not None and _is_loopback(_host_name(host))
        if host is None:
            return False
        value = host.strip().lower()
        return value in self.allowed_hosts or _host_name(value) in self.allowed_hosts

    def origin_allowed(self, origin: str | None, own: str | None = None) -> bool:
        """Whether a request carrying ``origin`` may pass; ``own`` is the request's
        own origin (:func:`own_origin`), accepted when :attr:`same_origin` is on."""
        if origin is None:
            return True
        value = _normal_origin(origin)
        if self.same_origin and own is not None and value == _normal_origin(own):
            return True
        return "*" in self.allowed_origins or value in {
            _normal_origin(o) for o in self.allowed_origins
        }


_DEFAULT_PORTS = {"http": "80", "https": "443"}


def _normal_origin(origin: str) -> str:
    """``scheme://host[:port]`` lower-case, without a trailing ``/`` or a default port."""
    value = origin.strip().lower().rstrip("/")
    scheme, sep, rest = value.partition("://")
    port = _DEFAULT_PORTS.get(scheme)
    if sep and port is not None and rest.endswith(":" + port):
        rest = rest[: -len(port) - 1]
    return f"{scheme}{sep}{rest}"


def own_origin(scope: Scope, host: str | None) -> str | None:
    """The origin a page served by this request's server has: its scheme (``ws`` is
    ``http``'s, ``wss`` ``https``'s) and ``Host``. Behind a proxy that ends TLS the
    scheme differs from the browser's: name that origin with ``allowed_origins``."""
    if host is None:
        return None
    scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", ""), scope.get("scheme"))
    if scheme not in ("http", "https"):
        return None
    return f"{scheme}://{host.strip()}"


def _head(scope: Scope) -> RequestHead:
    headers: dict[str, str] = {}
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    client = scope.get("client")
    return RequestHead(
        kind=scope["type"],
        method=scope.get("method", "GET"),
        path=scope.get("path", ""),
        headers=headers,
        client=(str(client[0]), int(client[1])) if client else None,
    )


async def refuse(
    scope: Scope,
    receive: Receive,
    send: Send,
    status: int,
    text: str,
    headers: Iterable[tuple[str, str]] = (),
) -> None:
    """Answer ``status`` to an HTTP request, or refuse a WebSocket upgrade with it."""
    body = text.encode("utf-8")
    raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    raw_headers += [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
    ]
    if scope["type"] == "websocket":
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        if "websocket.http.response" in scope.get("extensions", {}):
            await send(
                {"type": "websocket.http.response.start", "status": status, "headers": raw_headers}
            )
            await send({"type": "websocket.http.response.body", "body": body})
        else:  # the server answers 403 on its own
            await send({"type": "websocket.close", "code": 1008})
        return
    if scope.get("http_version") in ("1.0", "1.1") and _may_have_body(scope):
        # Answered before its body was read: HTTP/1.x cannot go on with the next request
        # (the server closes the connection), so the client must not reuse it.
        raw_headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


def _may_have_body(scope: Scope) -> bool:
    """Whether an HTTP request's head announces a body (a length other than 0, or chunks)."""
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() != b"0"):
            return True
    return False


class SecurityMiddleware:
    """ASGI middleware: Host, Origin, then authentication; passes the principal on in the scope."""

    def __init__(self, app: ASGIApp, settings: SecuritySettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        head = _head(scope)
        settings = self.settings
        server = scope.get("server")
        host = head.headers.get("host")
        if not settings.host_allowed(host, server):
            log.info("refused %s: Host %r", head.client, host)
            await refuse(scope, receive, send, 421, "Invalid Host header")
            return
        if not settings.origin_allowed(head.headers.get("origin"), own_origin(scope, host)):
            log.info("refused %s: Origin %r", head.client, head.headers.get("origin"))
            await refuse(scope, receive, send, 403, "Origin not allowed")
            return
        if scope["type"] == "websocket":
            scope, head, send = _token_from_protocols(scope, head, send)
        if settings.authenticate is None:
            principal: str | None = ANONYMOUS
        else:
            try:
                principal = await settings.authenticate(head)
            except Exception:
                log.exception("the authentication hook failed")
                await refuse(scope, receive, send, 500, "authentication failed")
                return
        if principal is None:
            challenge = 'Bearer realm="acp"'
            if "authorization" in head.headers:
                challenge += ', error="invalid_token"'
            log.info("refused %s: not authenticated", head.client)
            await refuse(
                scope, receive, send, 401, "Unauthorized", [("www-authenticate", challenge)]
            )
            return
        admit = (scope.get("extensions") or {}).get(ADMIT, {}).get("admit")
        if admit is not None:
            admit()
        await self.app({**scope, PRINCIPAL_KEY: principal}, receive, send)


def _token_from_protocols(
    scope: Scope, head: RequestHead, send: Send
) -> tuple[Scope, RequestHead, Send]:
    """A WebSocket upgrade's subprotocol token as ``Authorization`` (module docstring):
    the scope without it, the head with it, and a ``send`` that accepts the socket with
    :data:`TOKEN_PROTOCOL`."""
    token, rest = _protocol_token(list(scope.get("subprotocols") or ()))
    if token is None:
        return scope, head, send
    scope = {**scope, "subprotocols": rest}
    if "authorization" not in head.headers:  # a header the client set wins
        headers = {**head.headers, "authorization": f"Bearer {token}"}
        head = RequestHead(head.kind, head.method, head.path, headers, head.client)

    async def accept_with_protocol(message: Message) -> None:
        if message["type"] == "websocket.accept":
            message = {**message, "subprotocol": TOKEN_PROTOCOL}
        await send(message)

    return scope, head, accept_with_protocol
