"""The answer to a request we abandoned is expected: dropped quietly, not a warning.

A caller cancelled while awaiting (Ctrl-C, a closed stdout) makes the connection send
``$/cancel_request``; the peer still answers the request (the spec wants every request
answered), so that late answer must not be reported as a stray response.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from waiting import TIMEOUT

from acpwire.client.connection import Client, ClientSideConnection
from acpwire.transports import memory_pair
from acpwire.transports.memory import MemoryTransport


async def _next(peer: MemoryTransport) -> dict[str, Any]:
    line = await asyncio.wait_for(peer.receive(), TIMEOUT)
    assert isinstance(line, bytes)
    message = json.loads(line)
    assert isinstance(message, dict)
    return message


async def _answer(peer: MemoryTransport, request_id: Any) -> None:
    await peer.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {}}).encode())


async def test_a_late_answer_to_an_abandoned_request_is_dropped_without_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ours, peer = memory_pair()
    conn = ClientSideConnection(Client(), ours)
    try:
        call = asyncio.ensure_future(conn.connection.request("_test/slow", {}))
        slow = await _next(peer)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        cancel = await _next(peer)
        assert cancel["method"] == "$/cancel_request"
        assert cancel["params"] == {"requestId": slow["id"]}

        with caplog.at_level(logging.DEBUG, logger="acpwire.engine"):
            await _answer(peer, slow["id"])  # the peer answers anyway, as it must
            await _answer(peer, 9999)  # an id we never used: a real stray
            # Answers are handled in arrival order: once a later call has its answer,
            # both answers above have been seen.
            ping = asyncio.ensure_future(conn.connection.request("_test/ping", {}))
            await _answer(peer, (await _next(peer))["id"])
            assert await asyncio.wait_for(ping, TIMEOUT) == {}
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert warnings == ["client: response to unknown request id 9999"]
    finally:
        await conn.close()
        await peer.close()
