"""JSON-RPC 2.0 messages (sans-IO): bytes in, typed events out, and back.

:func:`parse` turns one line into exactly one of :class:`Request`,
:class:`Notification`, :class:`Response` or :class:`Invalid`. Parameters and
results stay as raw JSON (:class:`msgspec.Raw`) so the engine decodes them
once, straight into the model the method table names. Malformed input is a
value (:class:`Invalid` carrying the error to answer with), never an exception.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..schema._base import enc_hook
from .errors import InvalidRequest, ParseError, RequestError

RequestId = int | str

_UNSET = msgspec.UNSET
_NULL = msgspec.Raw(b"null")
_EMPTY = msgspec.Raw(b"{}")


class _Envelope(msgspec.Struct, gc=False):  # short-lived, nothing can refer back to it
    jsonrpc: Any = None
    id: Any = msgspec.UNSET
    method: Any = msgspec.UNSET
    params: msgspec.Raw = _NULL
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: Any = msgspec.UNSET


_envelope_decoder = msgspec.json.Decoder(_Envelope)


# Frozen msgspec Structs rather than frozen dataclasses: one of these is built per
# incoming message, and a Struct is several times cheaper to construct. Request
# and Notification hold only str/int/Raw values, so they can never be part of a
# reference cycle and skip the garbage collector's tracking (gc=False).


class Request(msgspec.Struct, frozen=True, gc=False):
    id: RequestId
    method: str
    params: msgspec.Raw


class Notification(msgspec.Struct, frozen=True, gc=False):
    method: str
    params: msgspec.Raw


class Response(msgspec.Struct, frozen=True):
    """A response; exactly one of ``result`` and ``error`` is set."""

    id: RequestId | None
    result: msgspec.Raw | None
    error: RequestError | None


class Invalid(msgspec.Struct, frozen=True):
    """Input that is not a valid message; answer with ``error`` when ``respond`` is true."""

    id: RequestId | None
    error: RequestError
    respond: bool


Message = Request | Notification | Response | Invalid


def _valid_id(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def parse(line: bytes) -> Message:
    """Parse one line of input into a message or an :class:`Invalid` value."""
    try:
        env = _envelope_decoder.decode(line)
    except msgspec.ValidationError:
        # Valid JSON but not an object (or a batch, which ACP v1 does not use).
        return Invalid(None, InvalidRequest("message must be a JSON object"), True)
    except msgspec.DecodeError:
        return Invalid(None, ParseError("malformed JSON"), True)
    has_id = env.id is not _UNSET
    method = env.method
    if method is not _UNSET:
        if env.jsonrpc != "2.0":
            rid = env.id if has_id and _valid_id(env.id) else None
            return Invalid(rid, InvalidRequest('"jsonrpc" must be "2.0"'), has_id)
        if not isinstance(method, str):
            rid = env.id if has_id and _valid_id(env.id) else None
            return Invalid(rid, InvalidRequest('"method" must be a string'), has_id)
        if not has_id:
            return Notification(method, env.params)
        if not _valid_id(env.id):
            return Invalid(None, InvalidRequest('"id" must be a string or an integer'), True)
        return Request(env.id, method, env.params)
    # A response.
    rid = env.id if has_id and _valid_id(env.id) else None
    result = env.result
    if isinstance(result, msgspec.Raw):
        return Response(rid, result, None)
    if env.error is not _UNSET:
        return Response(rid, None, RequestError.from_wire(env.error))
    return Invalid(
        rid, InvalidRequest("message is neither a request, a notification nor a response"), False
    )


_encoder = msgspec.json.Encoder(enc_hook=enc_hook)
_encode = _encoder.encode


class _RequestOut(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: Any
    method: str
    params: Any


class _NotificationOut(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    method: str
    params: Any


class _ResultOut(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: Any
    result: Any


class _ErrorOut(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: Any
    error: Any


def encode_request(request_id: RequestId, method: str, params: Any) -> bytes:
    """One request line (without the newline). ``None`` params are sent as ``{}``."""
    return _encode(
        _RequestOut(id=request_id, method=method, params=_EMPTY if params is None else params)
    )


def encode_notification(method: str, params: Any) -> bytes:
    return _encode(_NotificationOut(method=method, params=_EMPTY if params is None else params))


def encode_result(request_id: RequestId, result: Any) -> bytes:
    """A success response; a handler that returned ``None`` answers ``{}``."""
    return _encode(_ResultOut(id=request_id, result=_EMPTY if result is None else result))


def encode_error(request_id: RequestId | None, error: RequestError) -> bytes:
    return _encode(_ErrorOut(id=request_id, error=error.to_wire()))
