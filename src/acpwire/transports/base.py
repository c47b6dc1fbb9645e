"""The transport contract: send a message, receive a message, close.

A message is one JSON text as bytes, without framing. :meth:`Transport.receive`
returns the next message, an :class:`~acpwire.protocol.framing.Oversize`
marker for a message that was too large and was dropped, or ``None`` at a
clean end of input. A transport that breaks raises
:class:`~acpwire.protocol.errors.ConnectionClosedError` with ``broken=True``.

Optional (:class:`ReadsAhead`): a transport that reads many messages at once (a
pipe read holds hundreds) may offer ``take_ready() -> list[bytes | Oversize]``,
the messages it holds already, in order, without waiting; the engine then takes
a burst in one step rather than one ``receive()`` each.

Optional (:class:`PushesMessages`): a transport whose messages come from a
producer in the same process may offer ``push_to(sink)``. The engine passes a
``sink(message) -> bool`` that takes a message synchronously (parse and
dispatch: a request's handler task is created, nothing awaits); the transport
may call it instead of queueing while nothing is queued, and queues the message
if it returns ``False`` (the engine is behind or closed). It saves the reader
task's event-loop turn.

Optional (:class:`NamesConnection`): a transport to a remote endpoint knows the
``Acp-Connection-Id`` its server gave the connection (``None`` before it has one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ..protocol.framing import Oversize


@runtime_checkable
class Transport(Protocol):
    async def send(self, message: bytes) -> None:
        """Send one message; waits while the peer is not reading (back-pressure)."""
        ...

    async def receive(self) -> bytes | Oversize | None:
        """The next message, an oversize marker, or ``None`` at end of input."""
        ...

    async def close(self) -> None:
        """Stop sending and release resources. Idempotent."""
        ...


@runtime_checkable
class ReadsAhead(Protocol):
    """A transport that holds messages it has read already (see the module docstring)."""

    def take_ready(self) -> list[bytes | Oversize]:
        """The messages held now, in order, without waiting (an empty list if none)."""
        ...


@runtime_checkable
class PushesMessages(Protocol):
    """A transport that may hand messages to the engine as they come (see the module
    docstring)."""

    def push_to(self, sink: Callable[[bytes], bool]) -> None:
        """From now on, offer each message to ``sink`` first while nothing is queued."""
        ...


@runtime_checkable
class NamesConnection(Protocol):
    """A transport to a remote endpoint, which knows its server connection's id (see the
    module docstring)."""

    @property
    def connection_id(self) -> str | None:
        """The server's ``Acp-Connection-Id`` for this connection, if it sent one."""
        ...
