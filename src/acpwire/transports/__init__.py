"""Transports: narrow adapters that move whole messages (see :mod:`.base`)."""

from .base import Transport
from .http import connect_http
from .memory import MemoryTransport, memory_pair
from .stdio import stdio_transport
from .streams import StreamTransport
from .subprocess import AgentNotFoundError, SubprocessTransport, spawn
from .websocket import connect_websocket

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
