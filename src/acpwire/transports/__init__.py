"""Transports: narrow adapters that move whole messages (see :mod:`.base`)."""

from .base import Transport
from .memory import MemoryTransport, memory_pair
from .stdio import stdio_transport
from .streams import StreamTransport
from .subprocess import AgentNotFoundError, SubprocessTransport, spawn

__all__ = [
    "AgentNotFoundError",
    "MemoryTransport",
    "StreamTransport",
    "SubprocessTransport",
    "Transport",
    "memory_pair",
    "spawn",
    "stdio_transport",
]
