"""ACP over a WebSocket (client side): one JSON-RPC message per text frame.

RFD streamable-http-websocket-transport: a GET with ``Upgrade: websocket`` on
the ``/acp`` endpoint creates a connection, whose id comes back in the
``Acp-Connection-Id`` header of the 101 response; messages are text frames and
binary frames are ignored. ``initialize`` is still the first message.

Uses the ``websockets`` package (the ``remote`` extra), imported on first use.
"""

from __future__ import annotations

import ssl as ssl_module
from collections.abc import Mapping
from typing import Any

from ..protocol.errors import ConnectionClosedError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE, Oversize
from .http import auth_headers

INSTALL_HINT = "the WebSocket transport needs the remote extra: pip install 'acpwire[remote]'"

_TOO_BIG = 1009  # WebSocket close code: message too big


def _websockets() -> Any:
    try:
        import websockets.asyncio.client as client
        import websockets.exceptions as exceptions
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return client, exceptions


class WebSocketTransport:
    """A :class:`~acpwire.transports.base.Transport` over an open WebSocket."""

    def __init__(
        self, websocket: Any, *, connection_id: str | None = None, cookies: Any = None
    ) -> None:
        self._ws = websocket
        self.connection_id = connection_id
        """The server's ``Acp-Connection-Id`` for this connection, if it sent one."""
        self.cookies: Any = cookies
        """The cookie jar (``httpx.Cookies``) the upgrade answer's cookies went into."""
        self._closed = False
        _, self._errors = _websockets()

    def _ended(self, exc: Exception) -> ConnectionClosedError | None:
        """``None`` for a clean close; else the error to raise."""
        rcvd = getattr(exc, "rcvd", None)
        if isinstance(exc, self._errors.ConnectionClosedOK):
            return None
        code = getattr(rcvd, "code", None)
        sent = getattr(exc, "sent", None)
        if code == _TOO_BIG or getattr(sent, "code", None) == _TOO_BIG:
            return ConnectionClosedError("a message exceeded the size limit", broken=True)
        return ConnectionClosedError(f"websocket closed: {exc}", broken=True)

    async def send(self, message: bytes) -> None:
        if self._closed:
            raise ConnectionClosedError("transport is closed")
        try:
            await self._ws.send(message, text=True)
        except self._errors.ConnectionClosed as exc:
            error = self._ended(exc)
            raise error or ConnectionClosedError("the server closed the connection") from exc

    async def receive(self) -> bytes | Oversize | None:
        while True:
            try:
                frame = await self._ws.recv()
            except self._errors.ConnectionClosed as exc:
                error = self._ended(exc)
                if error is None:
                    return None
                raise error from exc
            if isinstance(frame, str):
                return frame.encode("utf-8")
            # Binary frames carry no ACP message (RFD): skip them.

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._ws.close()
        except Exception:  # the socket may already be gone
            pass


async def connect_websocket(
    url: str,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    open_timeout: float | None = 30.0,
    ssl: ssl_module.SSLContext | None = None,
    compression: bool = False,
    cookies: Any = None,
) -> WebSocketTransport:
    """Open ``url`` (``ws://host:port/acp`` or ``wss://``) and return its transport.

    ``token`` is sent as ``Authorization: Bearer TOKEN`` on the upgrade request
    (what ``acp serve`` expects); ``headers`` go there too (another scheme,
    say); ``ssl`` is a context trusting a private CA for ``wss://``.
    ``compression=True`` offers per-message deflate; it is off by default
    because it costs more CPU per ACP message than it saves on fast links.
    Cookies in ``cookies`` (an ``httpx.Cookies``, shared with a later upgrade
    to return what this one set) go on the upgrade request, and the cookies
    the server sets in its answer are added to it (RFD). Use the
    result with :class:`~acpwire.client.connection.ClientSideConnection` or
    ``ToolkitClient.connect(...)``; send ``initialize`` first.
    """
    client, errors = _websockets()
    options: dict[str, Any] = {} if ssl is None else {"ssl": ssl}
    jar = cookie_jar(cookies)
    upgrade = auth_headers(token, headers)
    cookie = cookie_header(jar, url)
    if cookie:
        upgrade["Cookie"] = cookie
    try:
        ws = await client.connect(
            url,
            additional_headers=upgrade,
            max_size=max_message_size,
            open_timeout=open_timeout,
            compression="deflate" if compression else None,
            **options,
        )
    except (OSError, TimeoutError, errors.InvalidHandshake) as exc:
        raise ConnectionClosedError(f"cannot connect to {url}: {exc}", broken=True) from exc
    response = ws.response
    connection_id = response.headers.get("Acp-Connection-Id") if response is not None else None
    if response is not None:
        keep_cookies(jar, url, response.headers.raw_items())
    return WebSocketTransport(ws, connection_id=connection_id, cookies=jar)


def _http_url(url: str) -> str:
    """The http(s) URL cookies are scoped to for a ws(s) URL (``wss`` is secure)."""
    scheme, _, rest = url.partition("://")
    return {"ws": "http", "wss": "https"}.get(scheme.lower(), scheme) + "://" + rest


def cookie_jar(cookies: Any = None) -> Any:
    """``cookies`` if given, else a new ``httpx.Cookies``."""
    import httpx

    return cookies if cookies is not None else httpx.Cookies()


def cookie_header(jar: Any, url: str) -> str | None:
    """The ``Cookie`` header ``jar`` sends to ``url`` (domain, path, expiry, Secure applied)."""
    import httpx

    request = httpx.Request("GET", _http_url(url))
    jar.set_cookie_header(request)
    value: str | None = request.headers.get("cookie")
    return value


def keep_cookies(jar: Any, url: str, headers: Any) -> None:
    """Add the cookies of an upgrade answer (its header pairs) to ``jar``."""
    import httpx

    request = httpx.Request("GET", _http_url(url))
    jar.extract_cookies(httpx.Response(101, headers=list(headers), request=request))
