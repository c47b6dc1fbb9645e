"""A transport wrapper that records every message in both directions."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from ..protocol.framing import Oversize
from ..transports.base import Transport

Direction = Literal["sent", "received"]


@dataclass
class WireLog:
    """Messages as JSON values, in the order they crossed the transport."""

    entries: list[tuple[Direction, Any]] = field(default_factory=list[tuple[Direction, Any]])

    @property
    def sent(self) -> list[Any]:
        return [m for d, m in self.entries if d == "sent"]

    @property
    def received(self) -> list[Any]:
        return [m for d, m in self.entries if d == "received"]


class RecordingTransport:
    """Wraps a transport and appends each message to :attr:`log` (undecodable ones as raw bytes)."""

    def __init__(self, inner: Transport, log: WireLog | None = None) -> None:
        self.inner = inner
        self.log = log if log is not None else WireLog()

    @staticmethod
    def _value(message: bytes) -> Any:
        try:
            return msgspec.json.decode(message)
        except msgspec.DecodeError:
            return message

    async def send(self, message: bytes) -> None:
        self.log.entries.append(("sent", self._value(message)))
        await self.inner.send(message)

    async def receive(self) -> bytes | Oversize | None:
        message = await self.inner.receive()
        if isinstance(message, bytes):
            self.log.entries.append(("received", self._value(message)))
        return message

    async def close(self) -> None:
        await self.inner.close()
