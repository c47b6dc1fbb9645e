"""``ReconnectingTransport`` before the first ``initialize`` was answered: there is no
connection to restore yet, so a failure is the application's to hear at once, not a
reason to reconnect (docs/remote.md, "Reconnect").

An agent behind ``acp serve`` that died at once closed the WebSocket before answering
``initialize``; ``acp chat`` then printed a reconnect warning and a "connection lost"
error instead of saying why. A refused token over HTTP (the 401 comes as the answer to
the first POST) waited 60 s for the initialize timeout.
"""

from __future__ import annotations

import asyncio

import pytest
from waiting import TIMEOUT

from acpwire.protocol.errors import ConnectionClosedError
from acpwire.protocol.framing import Oversize
from acpwire.transports.remote import ReconnectingTransport

INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'


class Failing:
    """A transport whose peer went away: sending fails with ``reason``, or receiving does."""

    def __init__(self, reason: str, *, on_send: bool) -> None:
        self.reason = reason
        self.on_send = on_send
        self.ended = asyncio.Event()

    async def send(self, message: bytes) -> None:
        if self.on_send:
            raise ConnectionClosedError(self.reason, broken=True)
        self.ended.set()

    async def receive(self) -> bytes | Oversize | None:
        await self.ended.wait()
        raise ConnectionClosedError(self.reason, broken=True)

    async def close(self) -> None:
        pass


def reconnecting(first: Failing) -> tuple[ReconnectingTransport, list[int]]:
    attempts: list[int] = []

    async def connect() -> Failing:
        attempts.append(1)
        return Failing("again", on_send=False)

    return ReconnectingTransport(connect, first), attempts


async def test_a_break_before_initialize_is_answered_ends_the_transport_with_its_reason() -> None:
    transport, attempts = reconnecting(Failing("the agent ended unexpectedly", on_send=False))
    await transport.send(INITIALIZE)
    with pytest.raises(ConnectionClosedError, match="the agent ended unexpectedly"):
        await asyncio.wait_for(transport.receive(), TIMEOUT)
    assert attempts == []
    await transport.close()


@pytest.mark.parametrize(
    "reason", ["initialize answered HTTP 401: Unauthorized", "initialize answered HTTP 502: x"]
)
async def test_a_first_initialize_that_cannot_be_sent_raises_at_once(reason: str) -> None:
    transport, attempts = reconnecting(Failing(reason, on_send=True))
    with pytest.raises(ConnectionClosedError, match="initialize answered HTTP"):
        await asyncio.wait_for(transport.send(INITIALIZE), TIMEOUT)
    assert attempts == []
    await transport.close()
