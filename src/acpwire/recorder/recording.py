"""Recording in process: :func:`record_to` puts a cassette under a connection or transport.

The wrapper is a :class:`~acpwire.transports.base.Transport` that hands every message
it carries to a :class:`~acpwire.recorder.cassette.CassetteWriter` before passing it
on: what it sends before the send, what it receives as it is received. It keeps the
inner transport's optional abilities (``take_ready``, ``push_to``, ``connection_id``)
so that the engine's fast paths, and so the cost of recording, stay what they were; a
message handed to the engine through ``push_to`` is recorded once the engine took it
(one it refused comes back through ``receive`` and is recorded there).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ..engine.connection import Connection
from ..protocol.framing import Oversize
from ..transports.base import NamesConnection, PushesMessages, ReadsAhead, Transport
from .cassette import CassetteWriter, Sender
from .redaction import RedactionSettings

__all__ = ["CassetteTransport", "record_to"]


def _other(side: Sender) -> Sender:
    return "agent" if side == "client" else "client"


class CassetteTransport:
    """A transport that records what crosses ``inner`` into ``writer``.

    ``side`` is the role of this end: what it sends is from ``side``, what it receives
    from the other role. Closing it closes ``inner`` and, if ``owns_writer``, the writer.
    """

    def __init__(
        self,
        inner: Transport,
        writer: CassetteWriter,
        *,
        side: Sender,
        owns_writer: bool = True,
    ) -> None:
        self.inner = inner
        self.writer = writer
        self.side: Sender = side
        self.peer: Sender = _other(side)
        self.owns_writer = owns_writer
        self._take_ready = inner.take_ready if isinstance(inner, ReadsAhead) else None

    async def send(self, message: bytes) -> None:
        self.writer.messages(self.side, (message,))
        await self.inner.send(message)

    async def receive(self) -> bytes | Oversize | None:
        message = await self.inner.receive()
        if isinstance(message, bytes):
            self.writer.messages(self.peer, (message,))
        elif isinstance(message, Oversize):
            self.writer.oversize(self.peer, message.size)
        return message

    def take_ready(self) -> list[bytes | Oversize]:
        if self._take_ready is None:
            return []
        ready = self._take_ready()
        if ready:
            lines = [m for m in ready if isinstance(m, bytes)]
            if len(lines) == len(ready):
                self.writer.messages(self.peer, lines)
            else:
                for m in ready:
                    if isinstance(m, bytes):
                        self.writer.messages(self.peer, (m,))
                    else:
                        self.writer.oversize(self.peer, m.size)
        return ready

    def push_to(self, sink: Callable[[bytes], bool]) -> None:
        if not isinstance(self.inner, PushesMessages):
            return
        record, peer = self.writer.messages, self.peer

        def recorded(message: bytes) -> bool:
            taken = sink(message)
            if taken:
                record(peer, (message,))
            return taken

        self.inner.push_to(recorded)

    @property
    def connection_id(self) -> str | None:
        return self.inner.connection_id if isinstance(self.inner, NamesConnection) else None

    async def close(self) -> None:
        try:
            await self.inner.close()
        finally:
            if self.owns_writer:
                self.writer.close()

    def __getattr__(self, name: str) -> Any:
        # What else the inner transport offers (a subprocess's pid, returncode ...).
        return getattr(self.inner, name)


def _connection_of(target: object) -> Connection | None:
    if isinstance(target, Connection):
        return target
    inner = getattr(target, "connection", None)
    return inner if isinstance(inner, Connection) else None


def _side_of(target: object, connection: Connection | None) -> Sender | None:
    # ClientSideConnection names its engine connection "client", AgentSideConnection "agent".
    for name in (type(target).__name__, connection.name if connection else ""):
        if name.startswith("Client") or name == "client":
            return "client"
        if name.startswith("Agent") or name == "agent":
            return "agent"
    return None


def record_to(
    target: Any,
    path: str | os.PathLike[str],
    *,
    side: Sender | None = None,
    redaction: RedactionSettings | None = None,
    command: Sequence[str] | None = None,
) -> CassetteTransport:
    """Record everything ``target`` sends and receives into the cassette at ``path``.

    ``target`` is a transport (``side`` then says which role this end plays; the
    default is ``client``) or an engine :class:`~acpwire.engine.connection.Connection`
    that has not started yet (its transport is then replaced by the recording one).
    Role connections start reading as they are made, so record their transport::

        conn = ClientSideConnection(client, record_to(await spawn(...), "run.jsonl"))

    Returns the recording transport, to use in place of the one given. The cassette
    is closed when the transport closes (or with ``.writer.close()``).
    """
    connection = _connection_of(target)
    if connection is not None:
        if connection.loop is not None:
            raise RuntimeError(
                "record_to: this connection is running already (role connections start "
                "when they are made): record its transport instead, "
                "ClientSideConnection(client, record_to(transport, FILE))"
            )
        inner = connection.transport
    elif isinstance(target, Transport):
        inner = target
    else:
        raise TypeError(f"record_to needs a connection or a transport, not {type(target)!r}")
    found = side or _side_of(target, connection) or "client"
    writer = CassetteWriter(
        path, mode="in-process", side=found, redaction=redaction, command=command
    )
    transport = CassetteTransport(inner, writer, side=found)
    if connection is not None:
        connection.transport = transport
    return transport
