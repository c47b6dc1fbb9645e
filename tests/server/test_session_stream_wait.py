"""The first messages of a session just made, over HTTP (docs/remote.md, "Which stream a
session's messages take"): an agent often sends updates right after answering
``session/new`` (the demo sends its commands), before a client of the session-stream
model has had time to open the session's stream. They wait for it up to
``Limits.session_stream_wait``, then take the connection stream, in order."""

from __future__ import annotations

import json
from typing import Any

import pytest
from waiting import wait_until

from acpwire.server import Limits, asgi_app, serve_in_background
from acpwire.transports.base import Transport

from ._lanes import HttpLane, lane

TOKEN = "stream-wait-token-0123456789ab"
FIRST = 3


class EagerAgent:
    """Answers ``session/new``, then at once sends :data:`FIRST` updates for the new
    session; answers ``_x/ping`` with ``{}``."""

    async def serve(self, transport: Transport) -> None:
        made = 0
        while (line := await transport.receive()) is not None:
            assert isinstance(line, bytes)
            message = json.loads(line)
            rid, method = message.get("id"), message.get("method")
            if method == "initialize":
                await self._answer(transport, rid, {"protocolVersion": 1})
            elif method == "session/new":
                made += 1
                sid = f"made-{made}"
                await self._answer(transport, rid, {"sessionId": sid})
                for n in range(FIRST):
                    chunk = {"type": "text", "text": str(n)}
                    update = {"sessionUpdate": "agent_message_chunk", "content": chunk}
                    note = {"sessionId": sid, "update": update}
                    notification = {"jsonrpc": "2.0", "method": "session/update", "params": note}
                    await transport.send(json.dumps(notification).encode())
            elif method == "_x/ping":
                await self._answer(transport, rid, {})

    @staticmethod
    async def _answer(transport: Transport, rid: Any, result: dict[str, Any]) -> None:
        await transport.send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode())


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [
        m["params"]["update"]["content"]["text"]
        for m in messages
        if m.get("method") == "session/update"
    ]


async def arrived(messages: list[dict[str, Any]], count: int) -> None:
    """Wait until ``messages`` holds ``count`` updates."""
    await wait_until(lambda: len(texts(messages)) >= count, f"{count} updates arrive")


NEW = {"cwd": "/", "mcpServers": []}


@pytest.mark.parametrize("kind", ["http/1.1", "h2c"])
async def test_a_session_stream_opened_after_session_new_gets_its_first_updates(
    kind: str,
) -> None:
    # A wait far longer than the client needs: the test does not depend on its speed.
    limits = Limits(session_stream_wait=60.0)
    app = asgi_app(EagerAgent(), auth=[TOKEN], limits=limits)
    async with serve_in_background(app) as served, lane(kind, served, TOKEN) as client:
        assert isinstance(client, HttpLane)
        sid = (await client.call("session/new", NEW))["result"]["sessionId"]
        await client.open_stream(sid)
        await arrived(client.streams[sid], FIRST)
        await client.call("_x/ping", {})  # answered on the connection stream, after them
    assert texts(client.streams[sid]) == [str(n) for n in range(FIRST)]
    assert [m.get("id") for m in client.streams[None]] == [1000, 1001]  # the two answers


@pytest.mark.parametrize("kind", ["http/1.1", "h2c"])
async def test_a_session_stream_never_opened_leaves_its_updates_on_the_connection_stream(
    kind: str,
) -> None:
    limits = Limits(session_stream_wait=0.2)
    app = asgi_app(EagerAgent(), auth=[TOKEN], limits=limits)
    async with serve_in_background(app) as served, lane(kind, served, TOKEN) as client:
        (remote,) = served.app.host.connections.values()
        for _ in range(2):
            sid = (await client.call("session/new", NEW))["result"]["sessionId"]
            await arrived(client.streams[None], FIRST)
            assert texts(client.streams[None]) == [str(n) for n in range(FIRST)]
            assert client.streams[None][0]["result"] == {"sessionId": sid}  # answer first
            assert sid not in remote.sessions  # the stream nobody opened keeps no slot
            client.streams[None].clear()
