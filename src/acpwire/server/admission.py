"""How the remote endpoint reads a client message: strictly, once, for every lane.

The endpoint decides who may use which session by reading ``params.sessionId``;
the agent behind it reads the same message with its own parser. Where the two
readings can differ, a message the endpoint judged harmless is another one to
the agent: a frame the endpoint could not parse used to reach the agent without
the ownership check, and a lenient agent (Python's ``json`` reads ``NaN``,
``Infinity``, ``1e400`` and lone surrogate escapes) then served another
principal's session. So a client message is read here, and only what is read
here is ever handed on (:class:`Admitted`):

* **Strict JSON** (RFC 8259): ``NaN``, ``Infinity``, numbers out of a double's
  range, lone surrogate escapes, invalid UTF-8, control characters in strings,
  anything after the value, and nesting deeper than :data:`MAX_DEPTH` are a
  parse error (-32700). The depth bound is ours, so that every lane and Python
  version gives the same verdict (msgspec's own bound depends on the stack).
* **One JSON-RPC 2.0 message**: an object (an array is a batch, which the RFD
  does not support: HTTP 501), ``"jsonrpc": "2.0"``, a string ``method``, an
  ``id`` that is a string or a 64-bit integer (a request) or absent (a
  notification), a ``params.sessionId`` that is a string if present; an answer
  has ``result`` or ``error`` and the id of a request. Anything else is an
  invalid request (-32600), answered by the endpoint, as acpwire's engine
  would answer it.
* **What the agent receives is what the endpoint read**: the message is
  encoded again from the values read (:attr:`ClientMessage.body`). A member
  named twice reaches the agent once, with the value the endpoint checked (a
  parser that keeps the first of two ``sessionId`` cannot see another session
  than the endpoint did); escapes are resolved; and the message is one line,
  so a stdio agent cannot be handed two messages where the endpoint saw one
  (raw newlines between tokens are legal JSON).

A message read is then judged, once, by the connection's :class:`Admission`,
on every lane: a POST, a WebSocket frame, and the socket's direct path all go
through :meth:`~.connection.RemoteConnection.admit` (try now, else wait: its
:meth:`~.connection.RemoteConnection.try_admit` when nothing has to wait):

* **Sessions belong to principals** (:mod:`.owners`). A request or
  notification naming a session its principal may not use never reaches the
  agent: a request is answered by the endpoint with "resource not found"
  (-32002), a notification is dropped.
* **Each request once.** A request whose id is still in flight is a repeat
  (a retry after a network failure), and a retry (:data:`~.headers.RETRY_HEADER`)
  of a request answered a moment ago ran already: both are dropped, not run
  twice. An answer to no request the agent asked on this connection is dropped.
* **Bounded.** Beyond ``Limits.max_pending_requests`` requests in flight, a
  request is answered by the endpoint with an internal error.
* **Only what was admitted reaches the agent.** The agent's side of a
  connection takes only an :class:`Admitted` message, which only
  :meth:`Admission.admitted` makes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

import msgspec

from ..protocol.errors import ErrorCode

MAX_DEPTH = 128
"""Objects and arrays nested deeper than this in a client message are a parse error:
far beyond what an ACP message needs, and below the depth at which common parsers
give up (Python's ``json``: about 1,000)."""

Kind = Literal["request", "notification", "response"]
_INT64 = 1 << 63
_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


class Unreadable(Exception):
    """A client message the endpoint refuses to read: answered with ``code``, never forwarded."""

    def __init__(
        self, code: int, message: str, request_id: str | int | None = None, *, status: int = 400
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.status = status
        """The HTTP status of a POST carrying it."""

    def answer(self) -> bytes:
        """The JSON-RPC error response that refuses it."""
        error = {"code": self.code, "message": self.message}
        return _encode({"jsonrpc": "2.0", "id": self.request_id, "error": error})


class ClientMessage(msgspec.Struct, frozen=True, gc=False):
    """One client message as the endpoint read it (only :func:`read_client_message` makes one)."""

    kind: Kind
    id: str | int | None
    method: str | None
    session_id: str | None
    """``params.sessionId`` of a request or notification (``None`` for an answer)."""
    body: bytes
    """The message encoded again from what was read: what the agent receives."""


def _invalid(message: str, request_id: str | int | None = None) -> Unreadable:
    return Unreadable(ErrorCode.INVALID_REQUEST, message, request_id)


def _is_id(value: object) -> bool:
    if isinstance(value, str):
        return True
    return type(value) is int and -_INT64 <= value < _INT64


def _deeper_than(value: object, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` levels deep."""
    level: list[object] = [value]
    for _ in range(limit):
        below: list[object] = []
        for item in level:
            children = (
                cast("dict[str, object]", item).values()
                if isinstance(item, dict)
                else cast("list[object]", item)
            )
            below += [c for c in children if isinstance(c, (dict, list))]
        if not below:
            return False
        level = below
    return True


def read_client_message(body: bytes) -> ClientMessage:
    """Read one client message (see the module docstring); raises :class:`Unreadable`."""
    try:
        value: object = _decode(body)
    except msgspec.DecodeError as exc:
        raise Unreadable(ErrorCode.PARSE_ERROR, f"not valid JSON: {exc}") from None
    except RecursionError:
        raise Unreadable(ErrorCode.PARSE_ERROR, "not valid JSON: nested too deeply") from None
    if isinstance(value, list):
        raise Unreadable(ErrorCode.INVALID_REQUEST, "batch requests are not supported", status=501)
    if not isinstance(value, dict):
        raise _invalid("a message must be a JSON object")
    # Only a body with more brackets than the bound can be nested that deep.
    if body.count(b"{") + body.count(b"[") > MAX_DEPTH and _deeper_than(value, MAX_DEPTH):
        raise Unreadable(ErrorCode.PARSE_ERROR, f"nested more than {MAX_DEPTH} levels deep")
    message = cast("dict[str, Any]", value)
    has_id = "id" in message
    rid = message.get("id")
    if not _is_id(rid):
        rid = None
    if "method" in message:
        method = message["method"]
        if message.get("jsonrpc") != "2.0":
            raise _invalid('"jsonrpc" must be "2.0"', rid)
        if not isinstance(method, str):
            raise _invalid('"method" must be a string', rid)
        if has_id and rid is None:
            raise _invalid('"id" must be a string or a 64-bit integer')
        session_id: str | None = None
        params = message.get("params")
        if isinstance(params, dict) and "sessionId" in params:
            sid = cast("dict[str, Any]", params)["sessionId"]
            if not isinstance(sid, str):
                raise Unreadable(ErrorCode.INVALID_PARAMS, '"sessionId" must be a string', rid)
            session_id = sid
        kind: Kind = "request" if has_id else "notification"
        return ClientMessage(kind, rid, method, session_id, _encode(message))
    if ("result" in message) == ("error" in message):
        raise _invalid("neither a request, a notification nor a response", rid)
    if rid is None and "result" in message:
        raise _invalid("an answer must carry the id of a request")
    return ClientMessage("response", rid, None, None, _encode(message))


RequestId = str | int
NOT_FOUND = (ErrorCode.RESOURCE_NOT_FOUND, "Resource not found")
ANSWERED_KEPT = 1024
"""Ids of answered client requests a connection remembers, to recognise retries."""

Verdict = tuple[int, str] | str | None
"""Of :meth:`Admission.judge`: ``None`` admits; a string drops (why, for the log);
``(code, text)`` is answered by the endpoint."""


@dataclass(slots=True)
class Pending:
    """A client request the agent has not answered yet."""

    session: str | None
    """Its ``params.sessionId``: where its answer goes (HTTP), what it concerns."""
    method: str


_KEY = object()
"""Held by :meth:`Admission.admitted` alone: no other code can make an :class:`Admitted`."""


class Admitted:
    """A client message the admission let through: the only kind of message the agent's
    side of a connection takes, so a message that was not read strictly and checked
    cannot reach the agent by any path."""

    __slots__ = ("body",)

    def __init__(self, message: ClientMessage, key: object) -> None:
        if key is not _KEY:
            raise TypeError("only the admission of a client message makes an Admitted")
        self.body = message.body
        """What the agent receives: the message as the endpoint read it."""


class Admission:
    """One connection's admission: the rules every client message is judged by, and the
    requests in flight, both ways, that they are judged against."""

    def __init__(self, max_pending: int) -> None:
        self.pending: dict[RequestId, Pending] = {}
        """Client requests the agent has not answered yet."""
        self.asked: dict[RequestId, str | None] = {}
        """Agent requests the client has not answered yet, with the session each names."""
        self._answered: dict[RequestId, None] = {}
        """The last :data:`ANSWERED_KEPT` client requests answered (ordered, oldest first)."""
        self._max_pending = max_pending

    def judge(self, m: ClientMessage, allowed: bool, *, retry: bool) -> Verdict:
        """What becomes of client message ``m`` (``allowed``: its principal may use the
        session it names). The one place these rules are written; it changes nothing."""
        if m.kind == "response":
            if m.id is None or m.id not in self.asked:
                # Not an answer to anything the agent asked on this connection: most
                # likely a client's retry of an answer that did arrive (a POST whose
                # 202 was lost with the network).
                return "an answer to an unknown request"
            return None
        if m.kind == "request":
            if retry and m.id in self._answered:
                # Its first copy arrived and was answered (the answer is on its stream,
                # resumable); running it again would repeat its effects.
                return "a retry of an answered request"
            if m.id in self.pending:
                # The same id while the first is still in flight: a retry after a network
                # failure (ids of pending requests are unique, JSON-RPC), not a new request.
                return "a repeated request"
        if not allowed:
            return NOT_FOUND
        if m.kind == "request" and len(self.pending) >= self._max_pending:
            return (ErrorCode.INTERNAL_ERROR, "too many requests in flight on this connection")
        return None

    def admitted(self, m: ClientMessage) -> Admitted:
        """Record what admitting ``m`` changes, and make the message the agent may take."""
        if m.id is not None:
            if m.kind == "response":
                self.asked.pop(m.id, None)
            elif m.kind == "request":
                self.pending[m.id] = Pending(m.session_id, m.method or "")
        return Admitted(m, _KEY)

    def answered(self, request_id: RequestId) -> Pending | None:
        """The agent answered client request ``request_id``: what it was (``None`` if no
        such request is in flight), remembered a while for :meth:`judge`."""
        pending = self.pending.pop(request_id, None)
        if pending is not None:
            answered = self._answered
            answered[request_id] = None
            if len(answered) > ANSWERED_KEPT:
                del answered[next(iter(answered))]
        return pending

    def unanswered(self) -> list[RequestId]:
        """The client requests still in flight, forgotten (the agent will answer none)."""
        ids = list(self.pending)
        self.pending.clear()
        return ids
