"""Protocol version negotiation (initialization.mdx, "Protocol version").

The client sends the latest version it supports. An agent that supports it
answers with the same number; otherwise it answers with the latest version it
does support, and a client that cannot speak that version should close.
"""

from __future__ import annotations

PROTOCOL_VERSION = 1
"""The ACP version this library speaks."""

SUPPORTED_VERSIONS: frozenset[int] = frozenset({1})


def negotiate(requested: int) -> int:
    """The version an agent answers when a client asks for ``requested``."""
    if requested in SUPPORTED_VERSIONS:
        return requested
    return PROTOCOL_VERSION
