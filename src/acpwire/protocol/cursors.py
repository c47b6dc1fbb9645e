"""Stream cursors of the durable remote transport, both sides (sans-IO).

RFD durable-resumable-http-transport (a draft; every name here is provisional):
each message a server writes on a stream carries an opaque cursor, monotonic
within that stream, as the SSE ``id:`` and inside the message as
``_meta["acp/cursor"]``, so that a WebSocket, which has no SSE fields, carries
it too. What this module keeps:

* **Where the cursor goes** (:func:`stamp`). In the ``_meta`` of the message's
  payload object: ``params`` of a request or notification (made ``{}`` when it
  had none), ``result`` of an answer, ``error.data`` of an error (made ``{}``
  when absent). ``_meta`` is placed first in that object and the cursor first
  in ``_meta``; members the sender put in ``_meta`` are kept. A payload that is
  not an object (a ``null`` result, a string as error data) leaves no room: the
  cursor then goes in a ``_meta`` member of the envelope itself.
* **Reading one** (:func:`cursor_of`) looks in the same places and nowhere
  else; a message without a cursor (a resume acknowledgment, a snapshot of the
  turn state) is not a position in the stream.
* **The control messages** a resume uses: ``stream/resume`` (the first frame
  of a WebSocket that resumes), ``stream/resumed`` (the acknowledgment, after
  the replay and before live messages, with the turn state) and
  ``stream/resume_failed`` (a refusal, with one of :data:`REASONS`).
"""

from __future__ import annotations

from typing import Any, Final, cast

import msgspec

CURSOR: Final = "acp/cursor"
"""The ``_meta`` key of a message's cursor."""
TURN_STATE: Final = "acp/turnState"
"""The ``_meta`` key of a session's turn state on a resume acknowledgment (v1's shim)."""
TURN_STATES: Final = "acp/turnStates"
"""acpwire's: the turn state of every session a connection stream carries, by session id."""

RESUME: Final = "stream/resume"
RESUMED: Final = "stream/resumed"
RESUME_FAILED: Final = "stream/resume_failed"

UNKNOWN_CURSOR: Final = "unknown_cursor"
"""The cursor names no message this stream wrote."""
OUTSIDE_RETENTION: Final = "outside_retention"
"""The stream no longer keeps every message after the cursor."""
CONNECTION_GONE: Final = "connection_gone"
"""The server has no such connection (ended, never existed, or another principal's)."""
STREAM_IN_USE: Final = "stream_in_use"
"""The request or socket the network broke under still holds the stream: try again."""
REASONS: Final = frozenset({UNKNOWN_CURSOR, OUTSIDE_RETENTION, CONNECTION_GONE, STREAM_IN_USE})

_Raw = msgspec.Raw
_objects = msgspec.json.Decoder(dict[str, _Raw])
_encode = msgspec.json.Encoder().encode


def _is_object(raw: _Raw) -> bool:
    return bytes(memoryview(raw)[:1]) == b"{"


def _with_meta(payload: dict[str, _Raw], key: str, value: _Raw) -> dict[str, _Raw]:
    """``payload`` with ``value`` first under ``_meta[key]``, ``_meta`` first."""
    meta: dict[str, _Raw] = {key: value}
    old = payload.get("_meta")
    if old is not None and _is_object(old):
        meta.update((k, v) for k, v in _objects.decode(old).items() if k != key)
    return {"_meta": cast("_Raw", meta), **{k: v for k, v in payload.items() if k != "_meta"}}


def stamp(message: bytes, cursor: str) -> bytes:
    """``message`` carrying ``cursor`` as ``_meta["acp/cursor"]`` (see the module docstring).
    Raises :class:`msgspec.DecodeError` when it is not a JSON object."""
    envelope = _objects.decode(message)
    value = _Raw(_encode(cursor))
    if "method" in envelope:
        params = envelope.get("params")
        if params is None or bytes(params) == b"null":
            params = _Raw(b"{}")
        if _is_object(params):
            envelope["params"] = _Raw(_encode(_with_meta(_objects.decode(params), CURSOR, value)))
            return _encode(envelope)
    elif "result" in envelope and _is_object(envelope["result"]):
        result = _objects.decode(envelope["result"])
        envelope["result"] = _Raw(_encode(_with_meta(result, CURSOR, value)))
        return _encode(envelope)
    elif "error" in envelope and _is_object(envelope["error"]):
        error = _objects.decode(envelope["error"])
        data = error.get("data")
        if data is None or _is_object(data):
            inner = _objects.decode(data) if data is not None else {}
            error["data"] = _Raw(_encode(_with_meta(inner, CURSOR, value)))
            envelope["error"] = _Raw(_encode(error))
            return _encode(envelope)
    return _encode(_with_meta(envelope, CURSOR, value))


_NULL = _Raw(b"null")


class _Slots(msgspec.Struct):
    params: _Raw = _NULL
    result: _Raw = _NULL
    error: _Raw = _NULL
    meta: Any = msgspec.field(default=None, name="_meta")


class _Error(msgspec.Struct):
    data: _Raw = _NULL


class _Meta(msgspec.Struct):
    meta: Any = msgspec.field(default=None, name="_meta")


_slots = msgspec.json.Decoder(_Slots)
_error = msgspec.json.Decoder(_Error)
_meta_of = msgspec.json.Decoder(_Meta)


def _cursor_in(meta: object) -> str | None:
    if isinstance(meta, dict):
        value = cast("dict[str, Any]", meta).get(CURSOR)
        if isinstance(value, str) and value:
            return value
    return None


def _from_payload(raw: _Raw) -> str | None:
    if not _is_object(raw):
        return None
    return _cursor_in(_meta_of.decode(raw).meta)


def cursor_of(message: bytes) -> str | None:
    """The cursor a message carries (see :func:`stamp`), ``None`` if it has none."""
    try:
        slots = _slots.decode(message)
        found = _from_payload(slots.params) or _from_payload(slots.result)
        if found is None and _is_object(slots.error):
            found = _from_payload(_error.decode(slots.error).data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return found or _cursor_in(slots.meta)


def control(method: str, params: dict[str, Any]) -> bytes:
    """A control notification (``stream/resumed``, ``stream/resume_failed``, ...)."""
    return _encode({"jsonrpc": "2.0", "method": method, "params": params})
