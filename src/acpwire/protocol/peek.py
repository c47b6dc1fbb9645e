"""Look just far enough into a JSON-RPC message to route it (sans-IO, no asyncio).

The remote endpoint never re-encodes what passes through it; it only needs a
message's kind, id, method and the ``sessionId`` in its params or result to
pick an SSE stream (RFD streamable-http-websocket-transport, "Connection and
Session Model"). Unknown fields are skipped by the decoder.
"""

from __future__ import annotations

from typing import Any

import msgspec

# Responses to these carry a session id the connection did not have before; the
# RFD delivers them on the connection-scoped stream, since the client cannot have
# opened the session's stream yet.
SESSION_OPENING = frozenset({"session/new", "session/load", "session/resume", "session/fork"})
# Requests that bring an existing session into this connection (the client names it).
SESSION_ATTACHING = frozenset({"session/load", "session/resume"})


class _Scoped(msgspec.Struct):
    sessionId: Any = None  # the wire name


class _Peek(msgspec.Struct):
    id: Any = None
    method: Any = None
    params: msgspec.Raw = msgspec.Raw(b"null")
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


class Peeked(msgspec.Struct, frozen=True):
    """What routing needs to know about one message."""

    kind: str
    """``request``, ``notification`` or ``response``."""
    id: str | int | None
    method: str | None
    session_id: str | None
    """``params.sessionId`` of a request or notification, ``result.sessionId`` of a response."""
    is_error: bool = False
    """A response carrying ``error`` rather than ``result``."""


_decoder = msgspec.json.Decoder(_Peek)
_scoped = msgspec.json.Decoder(_Scoped)


class NotAMessage(ValueError):
    """Not a JSON object, or not shaped like a JSON-RPC message."""


class BatchMessage(NotAMessage):
    """A JSON array: a JSON-RPC batch, which the RFD answers with 501."""


def _session(raw: msgspec.Raw | msgspec.UnsetType) -> str | None:
    if isinstance(raw, msgspec.UnsetType) or bytes(memoryview(raw)[:1]) != b"{":
        return None
    try:
        sid = _scoped.decode(raw).sessionId
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return sid if isinstance(sid, str) else None


def peek(data: bytes) -> Peeked:
    """Classify ``data``; raises :class:`NotAMessage` (or :class:`BatchMessage`)."""
    stripped = data.lstrip()
    if stripped[:1] == b"[":
        raise BatchMessage("batch requests are not supported")
    try:
        raw = _decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise NotAMessage(str(exc)) from exc
    ident = raw.id if isinstance(raw.id, (str, int)) and not isinstance(raw.id, bool) else None
    if isinstance(raw.method, str):
        kind = "request" if ident is not None else "notification"
        return Peeked(kind, ident, raw.method, _session(raw.params))
    if not isinstance(raw.error, msgspec.UnsetType):
        return Peeked("response", ident, None, None, is_error=True)
    if not isinstance(raw.result, msgspec.UnsetType):
        return Peeked("response", ident, None, _session(raw.result))
    raise NotAMessage("neither a request, a notification nor a response")
