"""The web client's files, served at ``/`` by ``asgi_app(..., ui=True)`` (``acp serve --ui``).

The page is plain HTML, CSS and one ES module shipped in this package (no build
step, nothing fetched from anywhere else). Rules this module enforces:

* **Only the files named in** :data:`FILES`, for ``GET`` and ``HEAD``; any other
  path is ``404``, any other method ``405``. Nothing is read from a path the
  request names.
* **A strict Content-Security-Policy** on every answer (:data:`CSP`): scripts and
  styles from this origin only, no inline script, no plugins, no framing, and
  connections back to this origin only (the ``/acp`` WebSocket). With
  ``nosniff``, ``no-referrer`` and ``no-store``.
* The Host check of :mod:`..security` runs before (DNS rebinding); the page needs
  no token: it asks the person for it and sends it on the WebSocket itself.
"""

from __future__ import annotations

from importlib import resources

from ..security import Receive, Scope, Send

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""The page's Content-Security-Policy (CSP 3 ``'self'`` covers ``ws:``/``wss:`` to the
same host)."""

FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/app.css": ("app.css", "text/css; charset=utf-8"),
}
"""URL path -> (file in this package, Content-Type)."""

UI_PATHS = frozenset({"", *FILES})
"""Paths the endpoint cannot have with the page on (``""``: ``/`` without its slash)."""


def _headers(content_type: str, length: int) -> list[tuple[bytes, bytes]]:
    return [
        (b"content-type", content_type.encode()),
        (b"content-length", str(length).encode()),
        (b"content-security-policy", CSP.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"referrer-policy", b"no-referrer"),
        (b"x-frame-options", b"DENY"),
        (b"cache-control", b"no-store"),
    ]


class UiFiles:
    """The ASGI answer for the page's paths; the files are read once, at start."""

    def __init__(self) -> None:
        package = resources.files(__name__)
        self._files = {
            path: ((package / name).read_bytes(), kind) for path, (name, kind) in FILES.items()
        }

    def serves(self, path: str) -> bool:
        return path in self._files

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope.get("method", "GET")
        found = self._files.get(scope.get("path", ""))
        if found is None:
            status, body, kind = 404, b"not found", "text/plain; charset=utf-8"
        elif method not in ("GET", "HEAD"):
            status, body, kind = 405, b"method not allowed", "text/plain; charset=utf-8"
        else:
            status, (body, kind) = 200, found
        headers = _headers(kind, len(body))
        if status == 405:
            headers.append((b"allow", b"GET, HEAD"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})
