"""`acp serve -- AGENT` as a real subprocess: each remote connection gets its own stdio agent
process, and a client that goes away takes its agent process with it."""

from __future__ import annotations

import asyncio
import sys

import pytest
from engine.test_behaviour import RecordingClient

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.testing import RecordingTransport, SchemaValidator
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket

from ._serve import PROGRAM, TIMEOUT, acp_serve, children, wait_gone


@pytest.mark.parametrize("kind", ["websocket", "http"])
async def test_a_stdio_agent_is_served_remotely_and_stopped_when_the_client_leaves(
    kind: str, schema_validator: SchemaValidator
) -> None:
    async with acp_serve("--", sys.executable, str(PROGRAM)) as serve:
        if kind == "websocket":
            inner = await connect_websocket(serve.ws_url, token=serve.token)
        else:
            inner = await connect_http(serve.url, token=serve.token)
        transport = RecordingTransport(inner)
        handler = RecordingClient()
        conn = ClientSideConnection(handler, transport)
        init = await asyncio.wait_for(conn.initialize(), TIMEOUT)
        assert init.agent_info is not None and init.agent_info.name == "engine-test-agent"
        (agent_pid,) = children(serve.proc.pid)
        sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
        result = await asyncio.wait_for(
            conn.agent.prompt(sid, [s.TextContent(text="stream 5")]), TIMEOUT
        )
        assert result.stop_reason == "end_turn"
        assert handler.texts() == [f"chunk {i}" for i in range(5)]
        result = await asyncio.wait_for(
            conn.agent.prompt(sid, [s.TextContent(text="ask")]), TIMEOUT
        )
        assert handler.texts()[-1] == "yes"
        await conn.close()
        await asyncio.wait_for(wait_gone(agent_pid), TIMEOUT)
        assert serve.proc.returncode is None  # the server keeps serving
        log = transport.log
        schema_validator.validate_conversation(log.sent, log.received)
        schema_validator.validate_conversation(log.received, log.sent)
