"""Transports: narrow adapters that move whole messages (see :mod:`.base`).

Submodules load on first use, so an agent serving stdio does not import the
subprocess, WebSocket or HTTP machinery.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from .base import Transport

if TYPE_CHECKING:
    from .http import connect_http
    from .memory import MemoryTransport, memory_pair
    from .stdio import stdio_transport
    from .streams import StreamTransport
    from .subprocess import AgentNotFoundError, SubprocessTransport, spawn
    from .websocket import connect_websocket

_LAZY = {
    "AgentNotFoundError": "subprocess",
    "MemoryTransport": "memory",
    "StreamTransport": "streams",
    "SubprocessTransport": "subprocess",
    "connect_http": "http",
    "connect_websocket": "websocket",
    "memory_pair": "memory",
    "spawn": "subprocess",
    "stdio_transport": "stdio",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "AgentNotFoundError",
    "MemoryTransport",
    "StreamTransport",
    "SubprocessTransport",
    "Transport",
    "connect_http",
    "connect_websocket",
    "memory_pair",
    "spawn",
    "stdio_transport",
]
