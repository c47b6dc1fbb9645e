"""MCP over ACP (unstable ``mcp/message``): the binding's facts, without I/O.

A client (or proxy) offers an MCP server over the ACP connection by listing it in
``mcpServers`` as ``{"type": "acp", "name": ..., "serverId": ...}``; an agent that
advertised ``mcpCapabilities.acp`` then sends every MCP request for it as an
``mcp/message`` request (``serverId``, a caller-chosen ``requestId``, the inner
``method`` and ``params``), and the client answers with the inner outcome,
``{"result": ...}`` or ``{"error": {...}}``. MCP notifications that belong to a
request in flight (progress, ...) come back as ``mcp/message`` notifications
carrying the same ``serverId`` and ``requestId``. Nothing else flows: there is no
MCP ``initialize`` handshake, each request carries its MCP protocol version,
client capabilities and client info in ``params._meta`` (MCP 2026-07-28, the only
MCP revision the binding carries), and cancelling the outer ACP request
(``$/cancel_request``) cancels the inner one.

Source: the schema's ``MessageMcpRequest``/``MessageMcpResponse``/
``MessageMcpNotification`` definitions. The outer error codes below are not in the
schema; they are the ones the official TypeScript SDK 2.4.0 answers with, so that
both implementations fail the same way.
"""

from __future__ import annotations

from typing import Any, cast

from .errors import RequestError

__all__ = [
    "BACKEND_FAILED",
    "MCP_PROTOCOL_VERSION",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_PROTOCOL_VERSION",
    "RESOURCE_LIMIT_EXCEEDED",
    "SERVER_UNAVAILABLE",
    "McpProtocolError",
    "binding_error",
    "check_envelope",
]

MCP_PROTOCOL_VERSION = "2026-07-28"
"""The MCP revision carried over ACP: stateless, one request per exchange."""

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
"""Keys of the inner ``params._meta`` envelope every MCP 2026-07-28 request carries."""

RESOURCE_LIMIT_EXCEEDED = -33000
"""Outer error: too many MCP requests active for one server."""
SERVER_UNAVAILABLE = -33001
"""Outer error: no MCP server with that ``serverId`` is offered on this connection."""
BACKEND_FAILED = -33002
"""Outer error: the MCP server failed without producing an MCP outcome."""

UNSUPPORTED_PROTOCOL_VERSION = -32022
"""Inner MCP error for a request of another MCP revision (MCP's own code)."""


class McpProtocolError(Exception):
    """Raised by an MCP handler to answer with an inner MCP error (not an ACP error)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def binding_error(code: int, message: str, data: Any = None) -> RequestError:
    """An outer ACP error of the binding (one of the codes above, or -32602)."""
    return RequestError(message, data, code=code)


def check_envelope(params: dict[str, Any] | None) -> McpProtocolError | None:
    """What is wrong with an inner request's MCP envelope, as the inner error to answer.

    The provider answers such requests itself: a request without the version or
    the client capabilities is invalid MCP, and one of another revision is refused
    with the versions this binding supports.
    """
    raw: object = (params or {}).get("_meta")
    meta = cast("dict[str, Any]", raw) if isinstance(raw, dict) else {}
    version = meta.get(META_PROTOCOL_VERSION)
    if not isinstance(version, str):
        return McpProtocolError(-32602, f"Invalid params: missing {META_PROTOCOL_VERSION}")
    if version != MCP_PROTOCOL_VERSION:
        return McpProtocolError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": [MCP_PROTOCOL_VERSION], "requested": version},
        )
    if not isinstance(meta.get(META_CLIENT_CAPABILITIES), dict):
        return McpProtocolError(-32602, f"Invalid params: missing {META_CLIENT_CAPABILITIES}")
    return None
