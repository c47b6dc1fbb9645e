"""What the endpoint answers in its own name: HTTP replies and JSON-RPC errors.

A :class:`Reply` is an HTTP answer independent of any framework (:mod:`.asgi`
writes it). An error the endpoint gives instead of the agent is a JSON-RPC
error response like any other, so a client handles it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from ..protocol.errors import ErrorCode


@dataclass(slots=True)
class Reply:
    """An HTTP answer, independent of any framework."""

    status: int
    body: bytes = b""
    content_type: str | None = None
    headers: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])


def error_response(request_id: str | int | None, code: int, message: str) -> bytes:
    """A JSON-RPC error response the endpoint answers in the agent's stead."""
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    )


def error_reply(status: int, message: str, code: int = ErrorCode.INVALID_REQUEST) -> Reply:
    """An HTTP answer carrying a JSON-RPC error that belongs to no request."""
    return Reply(status, error_response(None, code, message), "application/json")


def busy_reply(reason: str) -> Reply:
    """503 for a limit reached; ``Retry-After`` says the condition is temporary."""
    reply = error_reply(503, reason, ErrorCode.INTERNAL_ERROR)
    reply.headers.append(("retry-after", "5"))
    return reply
