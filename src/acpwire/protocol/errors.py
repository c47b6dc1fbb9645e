"""Errors, by layer.

Three families, never mixed:

* :class:`RequestError` and its subclasses are JSON-RPC error objects. A handler
  raises one to answer a request with that error; awaiting a request whose peer
  answered with an error raises one (``from_peer`` is then true).
* :class:`LocalProtocolError` is misuse on this side: calling a method the peer
  did not advertise, sending before ``initialize``, a bad argument. Nothing was
  sent.
* :class:`ConnectionClosedError` means the transport ended (cleanly or not)
  before an answer arrived. Every pending call fails with it at once.

Error codes are JSON-RPC 2.0's plus ACP's (schema ``ErrorCode``).
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, cast


class ErrorCode(IntEnum):
    """Well-known error codes. Any other integer is allowed on the wire."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    REQUEST_CANCELLED = -32800
    AUTH_REQUIRED = -32000
    RESOURCE_NOT_FOUND = -32002
    UNSUPPORTED_PROTOCOL_VERSION = -32022
    """v2 draft (``ErrorCode`` of schema/v2): no version served at or below the requested one."""
    CONNECTION_LOST = -32099
    """acpwire's own, from the implementation-defined range: a reconnecting client
    transport answers a request that was in flight when the connection broke
    (transports/remote.py). Never sent to an agent."""


class AcpError(Exception):
    """Base of every exception acpwire raises on purpose."""


class RequestError(AcpError):
    """A JSON-RPC error: ``code``, ``message`` and optional ``data``."""

    default_code: int = ErrorCode.INTERNAL_ERROR
    default_message: str = "Internal error"

    def __init__(
        self,
        message: str | None = None,
        data: Any = None,
        *,
        code: int | None = None,
        from_peer: bool = False,
    ) -> None:
        self.code: int = self.default_code if code is None else code
        self.message: str = self.default_message if message is None else message
        self.data: Any = data
        self.from_peer: bool = from_peer
        super().__init__(self.message)

    def __str__(self) -> str:
        text = f"{self.message} (code {self.code})"
        if self.data is not None:
            text += f": {self.data!r}"
        return text

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code}, message={self.message!r}, data={self.data!r})"
        )

    def to_wire(self) -> dict[str, Any]:
        """The error object as it goes into a JSON-RPC response."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @staticmethod
    def from_wire(error: Any, *, from_peer: bool = True) -> RequestError:
        """Build the most specific subclass for an error object received from a peer."""
        if not isinstance(error, dict):
            return InternalError(
                "peer sent a malformed error object", data=error, from_peer=from_peer
            )
        fields = cast("dict[str, Any]", error)  # a JSON object
        code = fields.get("code")
        message = fields.get("message")
        if not isinstance(code, int) or isinstance(code, bool):
            code = ErrorCode.INTERNAL_ERROR
        if not isinstance(message, str):
            message = ""
        cls = _BY_CODE.get(code, RequestError)
        return cls(message, fields.get("data"), code=code, from_peer=from_peer)


class ParseError(RequestError):
    default_code = ErrorCode.PARSE_ERROR
    default_message = "Parse error"


class InvalidRequest(RequestError):
    default_code = ErrorCode.INVALID_REQUEST
    default_message = "Invalid request"


class MethodNotFound(RequestError):
    default_code = ErrorCode.METHOD_NOT_FOUND
    default_message = "Method not found"


class InvalidParams(RequestError):
    default_code = ErrorCode.INVALID_PARAMS
    default_message = "Invalid params"


class InternalError(RequestError):
    default_code = ErrorCode.INTERNAL_ERROR
    default_message = "Internal error"


class RequestCancelled(RequestError):
    default_code = ErrorCode.REQUEST_CANCELLED
    default_message = "Request cancelled"


class AuthRequired(RequestError):
    default_code = ErrorCode.AUTH_REQUIRED
    default_message = "Authentication required"


class ResourceNotFound(RequestError):
    default_code = ErrorCode.RESOURCE_NOT_FOUND
    default_message = "Resource not found"


class UnsupportedProtocolVersion(RequestError):
    """v2 draft: ``initialize`` asked for a version below every one this side serves;
    ``data`` holds ``requested`` and ``supported`` (schema/v2
    ``UnsupportedProtocolVersionErrorData``)."""

    default_code = ErrorCode.UNSUPPORTED_PROTOCOL_VERSION
    default_message = "Unsupported protocol version"


class ConnectionLost(RequestError):
    """The connection broke while this request was in flight; a reconnecting transport
    answered it. ``data["sessionReattached"]`` says whether its session is attached
    again (then the next request on it goes to the agent as usual); what the agent did
    with the request itself is unknown."""

    default_code = ErrorCode.CONNECTION_LOST
    default_message = "connection lost"


_BY_CODE: dict[int, type[RequestError]] = {
    cls.default_code: cls
    for cls in (
        ParseError,
        InvalidRequest,
        MethodNotFound,
        InvalidParams,
        InternalError,
        RequestCancelled,
        AuthRequired,
        ResourceNotFound,
        UnsupportedProtocolVersion,
        ConnectionLost,
    )
}


class LocalProtocolError(AcpError):
    """This side tried something the protocol does not allow; nothing was sent."""


class CapabilityError(LocalProtocolError):
    """The peer did not advertise the capability a call needs."""


class UnstableMethodError(LocalProtocolError):
    """An unstable ACP method was called on a connection that did not opt in to unstable ACP."""


class VersionMismatchError(LocalProtocolError):
    """The peer answered ``initialize`` with a protocol version this side does not speak,
    or this side called a method of the version the connection did not negotiate."""


class ConnectionClosedError(AcpError):
    """The connection ended before the operation could complete.

    ``broken`` is true when it ended abnormally (peer died, transport error)
    rather than by an orderly close.
    """

    def __init__(self, message: str = "connection closed", *, broken: bool = False) -> None:
        super().__init__(message)
        self.broken = broken
