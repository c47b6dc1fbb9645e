"""`acp serve` in front of agents that misbehave: one that stops reading, one that
crashes mid-turn, one that prints junk on stdout. Real subprocesses, real sockets."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

import httpx
import msgspec
import pytest
from waiting import TIMEOUT, wait_until

from acpwire.protocol.errors import ConnectionClosedError, ErrorCode
from acpwire.testing import SchemaValidator
from acpwire.transports.base import Transport
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket

from ._serve import HOSTILE, Serve, acp_serve, alive, children, stdin_full, wait_gone
from .hostile_agent import SECRET

pytestmark = pytest.mark.slow  # acp serve runs as a process, before misbehaving agents

KINDS = ["websocket", "http"]
CLOSE_BOUND = 10.0
"""Every close must finish within this, even with an agent that stopped reading (issue 8)."""


def request(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    )


INIT = request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})


async def open_transport(serve: Serve, kind: str) -> Transport:
    if kind == "websocket":
        return await connect_websocket(serve.ws_url, token=serve.token)
    return await connect_http(serve.url, token=serve.token)


class Wire:
    """Raw JSON-RPC over a transport, keeping both directions for schema validation."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.sent: list[Any] = []
        self.received: list[Any] = []

    async def call(self, message: bytes) -> Any:
        """Send a request; the first response (notifications before it are kept)."""
        self.sent.append(msgspec.json.decode(message))
        await self.transport.send(message)
        while True:
            reply = await asyncio.wait_for(self.transport.receive(), TIMEOUT)
            assert isinstance(reply, bytes)
            decoded = msgspec.json.decode(reply)
            self.received.append(decoded)
            if "id" in decoded and "method" not in decoded:
                return decoded

    async def new_session(self) -> str:
        """``initialize`` then ``session/new``; the new session's id."""
        await self.call(INIT)
        new = await self.call(request(1, "session/new", {"cwd": "/tmp", "mcpServers": []}))
        sid: str = new["result"]["sessionId"]
        return sid


@pytest.mark.parametrize("kind", KINDS)
async def test_an_agent_crash_answers_the_pending_prompt_with_an_error_and_breaks_the_connection(
    kind: str, schema_validator: SchemaValidator
) -> None:
    async with acp_serve("--", sys.executable, str(HOSTILE), "crash") as serve:
        wire = Wire(await open_transport(serve, kind))
        sid = await wire.new_session()
        prompt = request(
            2, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        )
        answer = await wire.call(prompt)
        assert answer["id"] == 2
        assert answer["error"]["code"] == ErrorCode.INTERNAL_ERROR

        async def only_updates_until_the_end() -> None:
            # Over HTTP the update comes on the session's stream, the answer on the POST's:
            # the update may arrive after the answer (nothing orders two streams).
            while True:
                late = await asyncio.wait_for(wire.transport.receive(), TIMEOUT)
                assert isinstance(late, bytes), late
                wire.received.append(msgspec.json.decode(late))
                assert wire.received[-1].get("method") == "session/update", late

        try:
            with pytest.raises(ConnectionClosedError) as info:
                await only_updates_until_the_end()
        finally:
            await wire.transport.close()
        assert info.value.broken  # WebSocket close 1011 / SSE `event: error`, not a clean end
        schema_validator.validate_conversation(wire.sent, wire.received)
        schema_validator.validate_conversation(wire.received, wire.sent)


@pytest.mark.parametrize("kind", KINDS)
async def test_non_json_agent_output_is_dropped_and_logged_never_forwarded(kind: str) -> None:
    async with acp_serve("-v", "--", sys.executable, str(HOSTILE), "noise") as serve:
        wire = Wire(await open_transport(serve, kind))
        assert (await wire.new_session()).startswith("hostile-")
        await wire.transport.close()
        assert SECRET not in repr(wire.received)
        await asyncio.wait_for(serve.wait_for_line(r"not JSON-RPC"), TIMEOUT)
        ended = await asyncio.wait_for(serve.wait_for_line(r"ended .* lines dropped"), TIMEOUT)
        assert "4 non-JSON-RPC lines dropped" in ended.string  # two per request


async def test_delete_of_a_connection_whose_agent_stopped_reading_answers_and_kills_it() -> None:
    async with acp_serve("--", sys.executable, str(HOSTILE), "wedge") as serve:
        headers = {"authorization": f"Bearer {serve.token}", "content-type": "application/json"}
        async with httpx.AsyncClient(timeout=TIMEOUT, headers=headers) as http:
            init = await http.post(serve.url, content=INIT)
            assert init.status_code == 200
            ids = {"acp-connection-id": init.headers["acp-connection-id"]}
            (agent_pid,) = children(serve.proc.pid)
            # Messages the agent never reads: its stdin pipe and our queues fill up.
            pad = {"pad": "x" * (1024 * 1024)}
            posts = [
                asyncio.ensure_future(
                    http.post(serve.url, content=request(n, "_fill", pad), headers=ids)
                )
                for n in range(1, 13)
            ]
            await wait_until(lambda: stdin_full(agent_pid), "the agent's stdin fills up")
            assert not all(post.done() for post in posts)  # some are stuck behind the agent
            deleted = await asyncio.wait_for(http.delete(serve.url, headers=ids), CLOSE_BOUND)
            assert deleted.status_code == 202
            assert not alive(agent_pid)
            statuses = [
                r.status_code for r in await asyncio.wait_for(asyncio.gather(*posts), TIMEOUT)
            ]
            assert set(statuses) <= {202, 404}  # answered, none left hanging


async def test_closing_a_websocket_whose_agent_stopped_reading_kills_the_agent() -> None:
    async with acp_serve("--", sys.executable, str(HOSTILE), "wedge") as serve:
        transport = await connect_websocket(serve.ws_url, token=serve.token)
        await transport.send(INIT)
        assert isinstance(await asyncio.wait_for(transport.receive(), TIMEOUT), bytes)
        (agent_pid,) = children(serve.proc.pid)
        big = request(1, "_fill", {"pad": "x" * (1024 * 1024)})
        sender = asyncio.ensure_future(_send_forever(transport, big))
        await wait_until(lambda: stdin_full(agent_pid), "the agent's stdin fills up")
        await transport.close()
        await asyncio.wait_for(wait_gone(agent_pid), CLOSE_BOUND)
        sender.cancel()
        with pytest.raises((asyncio.CancelledError, ConnectionClosedError)):
            await sender


async def _send_forever(transport: Transport, message: bytes) -> None:
    while True:
        await transport.send(message)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
async def test_stopping_acp_serve_leaves_no_agent_process(sig: signal.Signals) -> None:
    async with acp_serve("--", sys.executable, str(HOSTILE), "wedge") as serve:
        ws = await connect_websocket(serve.ws_url, token=serve.token)
        await ws.send(INIT)
        await asyncio.wait_for(ws.receive(), TIMEOUT)
        http = await connect_http(serve.url, token=serve.token)
        await asyncio.wait_for(http.send(INIT), TIMEOUT)
        agents = children(serve.proc.pid)
        assert len(agents) == 2
        serve.proc.send_signal(sig)
        await asyncio.wait_for(serve.proc.wait(), CLOSE_BOUND + 5)
        assert not [pid for pid in agents if alive(pid)]
        await ws.close()
        await http.close()


async def test_verbose_logs_each_connection_with_principal_peer_and_counts() -> None:
    async with acp_serve(
        "-v", "--token", "a-long-enough-test-token", "--", sys.executable, str(HOSTILE), "noise"
    ) as serve:
        serve.token = "a-long-enough-test-token"
        transport = await open_transport(serve, "websocket")
        await transport.send(INIT)
        await asyncio.wait_for(transport.receive(), TIMEOUT)
        await transport.close()
        line = (
            await asyncio.wait_for(serve.wait_for_line(r"connection \S+ ended"), TIMEOUT)
        ).string
        assert "principal token:" in line and "peer 127.0.0.1:" in line
        assert "messages 1 in / 1 out" in line and "bytes" in line
        assert "a-long-enough-test-token" not in "\n".join(serve.lines)
