"""The headers of the ``/acp`` endpoint, and how a request's scope is read for them.

Names are the RFD's (streamable-http-websocket-transport) and acpwire's own
retry marker; ASGI gives header names in lower case, so they are kept so here.
"""

from __future__ import annotations

from .security import Scope

CONNECTION_HEADER = "acp-connection-id"
SESSION_HEADER = "acp-session-id"
RETRY_HEADER = "acp-retry"
"""Set by acpwire's HTTP client on a POST it sends again after a network failure: a
request whose id was answered a moment ago is then the same request, not a new one."""


KEEPALIVE_HEADER = "acp-keepalive"
"""(``--resumable``) On a GET or an upgrade: the keepalive interval the client asks for,
in seconds; on the answer: the interval the stream keeps (within :data:`KEEPALIVE_RANGE`)."""
KEEPALIVE_RANGE = (1.0, 300.0)


def header(scope: Scope, name: str) -> str | None:
    """The value of header ``name`` (lower case), stripped; ``None`` when absent or empty."""
    key = name.encode("latin-1")
    for k, v in scope.get("headers", ()):
        if k.lower() == key:
            text: str = v.decode("latin-1").strip()
            return text or None
    return None


def peer(scope: Scope) -> str:
    """``host:port`` of the client, for the log (``""`` when the server does not say)."""
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else ""


def last_event_id(scope: Scope) -> int | None:
    """The ``Last-Event-ID`` header as an event id; ``-1`` when it is not one."""
    value = header(scope, "last-event-id")
    if value is None:
        return None
    return int(value) if value.isdigit() and len(value) < 19 else -1


def keepalive_asked(scope: Scope, default: float | None) -> float | None:
    """The keepalive interval a stream keeps: what the client asked for with
    :data:`KEEPALIVE_HEADER`, within :data:`KEEPALIVE_RANGE`, else ``default``."""
    value = header(scope, KEEPALIVE_HEADER)
    try:
        asked = float(value) if value is not None else None
    except ValueError:
        asked = None
    if asked is None or asked != asked:  # absent, or NaN
        return default
    low, high = KEEPALIVE_RANGE
    return min(max(asked, low), high)
