"""MCP over ACP (unstable): a client offers MCP servers on the ACP connection itself,
and an agent uses them as tools, with the official ``mcp`` SDK on both ends.

Both roles run in this process on the in-memory transport pair; every message each
side sends is validated against ``schema.unstable.json``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp.server.mcpserver import MCPServer
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.agent.app import AgentApp, Turn
from acpwire.agent.connection import Agent, AgentSideConnection
from acpwire.agent.mcp import McpServerError, McpServers
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.client.mcp import McpCall, mcp_sdk_handler
from acpwire.protocol.errors import ErrorCode, RequestCancelled, RequestError
from acpwire.protocol.mcp_binding import (
    BACKEND_FAILED,
    MCP_PROTOCOL_VERSION,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    RESOURCE_LIMIT_EXCEEDED,
    SERVER_UNAVAILABLE,
    McpProtocolError,
)
from acpwire.schema.stability import UNSTABLE_MARK
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports import memory_pair

CAPS = s.AgentCapabilities(mcp_capabilities=s.McpCapabilities(acp=True))
ENVELOPE = {"_meta": {META_PROTOCOL_VERSION: MCP_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES: {}}}


def project_tools() -> MCPServer:
    server = MCPServer("project-tools")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def explode() -> str:
        """Always fails."""
        raise ValueError("the tool ran and failed")

    return server


class ToolUser(Agent):
    """Uses the session's MCP servers as tools: the prompt names a tool and its arguments."""

    unstable = True

    def __init__(self, capabilities: s.AgentCapabilities = CAPS) -> None:
        self.capabilities = capabilities
        self.servers: dict[str, list[s.McpServer]] = {}

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(protocol_version=1, agent_capabilities=self.capabilities)

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        self.servers["s1"] = list(params.mcp_servers)
        return s.NewSessionResponse(session_id="s1")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        block = params.prompt[0]
        assert isinstance(block, s.TextContent)
        server, tool, args = block.text.split(" ", 2)
        async with McpServers(
            self.servers[params.session_id], client=self.client, capabilities=self.capabilities
        ) as mcp:
            listed = ", ".join(t.name for t in mcp.tools(server))
            result = await mcp.call_tool(server, tool, json.loads(args))
        text = f"tools: {listed}; {tool}: {result.text} (error: {result.is_error})"
        await self.client.session_update(
            params.session_id, s.AgentMessageChunk(content=s.TextContent(text=text))
        )
        return s.PromptResponse(stop_reason="end_turn")


class ToolClient(Client):
    unstable = True

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def session_update(self, params: s.SessionNotification) -> None:
        update = params.update
        if isinstance(update, s.AgentMessageChunk) and isinstance(update.content, s.TextContent):
            self.texts.append(update.content.text)


@dataclass
class Pair:
    agent_side: AgentSideConnection
    conn: ClientSideConnection
    client: ToolClient
    agent_wire: WireLog
    client_wire: WireLog

    def validate(self, validator: SchemaValidator) -> None:
        validator.validate_conversation(self.agent_wire.sent, self.agent_wire.received)
        validator.validate_conversation(self.client_wire.sent, self.client_wire.received)

    def client_answers(self) -> list[dict[str, Any]]:
        return [m for m in self.client_wire.sent if "id" in m and "method" not in m]


@asynccontextmanager
async def pair(agent: Agent | None = None) -> AsyncIterator[Pair]:
    a, b = memory_pair()
    agent_wire, client_wire = WireLog(), WireLog()
    agent_side = AgentSideConnection(agent or ToolUser(), RecordingTransport(a, agent_wire))
    agent_side.start()
    client = ToolClient()
    conn = ClientSideConnection(client, RecordingTransport(b, client_wire))
    try:
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        yield Pair(agent_side, conn, client, agent_wire, client_wire)
    finally:
        await conn.close()
        await agent_side.close()


async def test_an_agent_uses_the_tools_of_an_mcp_server_the_client_offers_over_acp(
    unstable_schema_validator: SchemaValidator,
) -> None:
    async with pair() as p:
        tools = p.conn.agent.offer_mcp_server("project-tools", project_tools())
        assert tools.name == "project-tools" and tools.server_id in p.conn.agent.mcp
        await p.conn.agent.new_session("/work", [tools])
        answer = await asyncio.wait_for(
            p.conn.agent.prompt("s1", 'project-tools add {"a": 2, "b": 3}'), TIMEOUT
        )
        assert answer.stop_reason == "end_turn"
        assert p.client.texts == ["tools: add, explode; add: 5 (error: False)"]
        asked = [m["params"] for m in p.agent_wire.sent if m.get("method") == "mcp/message"]
        assert [m["method"] for m in asked] == ["server/discover", "tools/list", "tools/call"]
        assert {m["serverId"] for m in asked} == {tools.server_id}
        assert all(
            m["params"]["_meta"][META_PROTOCOL_VERSION] == MCP_PROTOCOL_VERSION for m in asked
        )
        p.validate(unstable_schema_validator)


async def test_tool_failures_are_tool_errors_and_mcp_errors_stay_inside_the_acp_answer(
    unstable_schema_validator: SchemaValidator,
) -> None:
    async def refuses(call: McpCall) -> Any:
        if call.method == "tools/call":
            raise McpProtocolError(-32602, "bad arguments")
        return await sdk_tools(call)

    sdk_tools = mcp_sdk_handler(project_tools())
    async with pair() as p:
        tools = p.conn.agent.offer_mcp_server("project-tools", project_tools())
        picky = p.conn.agent.offer_mcp_server("picky", refuses)
        async with McpServers([tools, picky], client=p.agent_side.client, capabilities=CAPS) as mcp:
            assert mcp.servers == ["project-tools", "picky"]
            failed = await asyncio.wait_for(mcp.call_tool("project-tools", "explode"), TIMEOUT)
            assert failed.is_error and "explode" in failed.text
            unknown = await asyncio.wait_for(mcp.call_tool("project-tools", "nope"), TIMEOUT)
            assert unknown.is_error and "nope" in unknown.text
            with pytest.raises(McpServerError, match=r"tools/call 'add' failed: .*bad arguments"):
                await asyncio.wait_for(mcp.call_tool("picky", "add", {"a": 1}), TIMEOUT)
        # Each one answered with an MCP outcome inside a successful ACP answer.
        assert all("result" in m for m in p.client_answers())
        p.validate(unstable_schema_validator)


async def test_mcp_notifications_reach_the_request_they_belong_to_before_its_answer(
    unstable_schema_validator: SchemaValidator,
) -> None:
    finished: asyncio.Future[McpCall] = asyncio.get_running_loop().create_future()

    async def counter(call: McpCall) -> Any:
        for i in range(3):
            await call.notify("notifications/progress", {"progressToken": "t", "progress": i})
        finished.set_result(call)
        return {"counted": 3}

    async with pair() as p:
        server = p.conn.agent.offer_mcp_server("counter", counter)
        seen: list[tuple[str, Any]] = []

        async def listener(note: s.MessageMcpNotification) -> None:
            seen.append((note.method, note.params))

        answer = await asyncio.wait_for(
            p.agent_side.client.mcp_message(
                server.server_id, "tools/call", dict(ENVELOPE), on_notification=listener
            ),
            TIMEOUT,
        )
        assert answer.result == {"counted": 3}
        assert [params["progress"] for _, params in seen] == [0, 1, 2]
        # After its answer, a request's notifications are dropped, not sent.
        await (await finished).notify("notifications/progress", {"progressToken": "t"})
        notes = [m for m in p.client_wire.sent if m.get("method") == "mcp/message"]
        assert len(notes) == 3
        p.validate(unstable_schema_validator)


async def test_cancelling_an_mcp_request_cancels_the_tool_on_the_client(
    unstable_schema_validator: SchemaValidator,
) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def forever(call: McpCall) -> Any:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async with pair() as p:
        server = p.conn.agent.offer_mcp_server("slow", forever)
        call = asyncio.ensure_future(
            p.agent_side.client.mcp_message(server.server_id, "tools/call", dict(ENVELOPE))
        )
        await asyncio.wait_for(started.wait(), TIMEOUT)
        call.cancel()
        await asyncio.wait_for(cancelled.wait(), TIMEOUT)
        sent = [m for m in p.agent_wire.sent if m.get("method") == "$/cancel_request"]
        assert len(sent) == 1
        await wait_until(
            lambda: any("error" in m for m in p.client_answers()), "the call is answered"
        )
        assert [m["error"]["code"] for m in p.client_answers()] == [ErrorCode.REQUEST_CANCELLED]
        p.validate(unstable_schema_validator)


async def test_the_binding_refuses_unknown_servers_overload_duplicates_and_hides_crashes(
    unstable_schema_validator: SchemaValidator,
) -> None:
    gate = asyncio.Event()
    entered = asyncio.Event()

    async def held(call: McpCall) -> Any:
        entered.set()
        await gate.wait()
        return {}

    async def crashes(call: McpCall) -> Any:
        raise RuntimeError("secret internals")

    async def refuses(call: McpCall) -> Any:
        raise McpProtocolError(-32602, "bad arguments", {"field": "a"})

    async with pair() as p:
        client = p.agent_side.client
        busy = p.conn.agent.offer_mcp_server("busy", held, max_active=1)
        broken = p.conn.agent.offer_mcp_server("broken", crashes)
        picky = p.conn.agent.offer_mcp_server("picky", refuses)

        with pytest.raises(RequestError) as unknown:
            await client.mcp_message("nobody", "tools/list", dict(ENVELOPE))
        assert unknown.value.code == SERVER_UNAVAILABLE
        assert unknown.value.data == {"serverId": "nobody"}

        first = asyncio.ensure_future(
            client.mcp_message(busy.server_id, "tools/call", dict(ENVELOPE), request_id="r1")
        )
        await asyncio.wait_for(entered.wait(), TIMEOUT)
        with pytest.raises(RequestError) as overload:
            await client.mcp_message(busy.server_id, "tools/call", dict(ENVELOPE))
        assert overload.value.code == RESOURCE_LIMIT_EXCEEDED
        gate.set()
        assert (await asyncio.wait_for(first, TIMEOUT)).result == {}

        with pytest.raises(RequestError) as crash:
            await client.mcp_message(broken.server_id, "tools/call", dict(ENVELOPE))
        assert crash.value.code == BACKEND_FAILED
        assert "secret" not in json.dumps(p.client_wire.sent)

        refused = await client.mcp_message(picky.server_id, "tools/call", dict(ENVELOPE))
        assert refused.result is s.UNSET and refused.error.code == -32602
        assert refused.error.data == {"field": "a"}

        bare = await client.mcp_message(picky.server_id, "tools/list", None)
        assert bare.error.code == -32602 and META_PROTOCOL_VERSION in bare.error.message
        old = {"_meta": {**ENVELOPE["_meta"], META_PROTOCOL_VERSION: "2025-06-18"}}
        other_revision = await client.mcp_message(picky.server_id, "tools/list", old)
        assert other_revision.error.code == -32022
        assert other_revision.error.data == {
            "supported": [MCP_PROTOCOL_VERSION],
            "requested": "2025-06-18",
        }
        p.validate(unstable_schema_validator)


async def test_a_withdrawn_server_cancels_its_running_requests_and_refuses_new_ones(
    unstable_schema_validator: SchemaValidator,
) -> None:
    entered = asyncio.Event()

    async def forever(call: McpCall) -> Any:
        entered.set()
        await asyncio.Event().wait()

    async with pair() as p:
        client = p.agent_side.client
        server = p.conn.agent.offer_mcp_server("going", forever)
        running = asyncio.ensure_future(
            client.mcp_message(server.server_id, "tools/call", dict(ENVELOPE))
        )
        await asyncio.wait_for(entered.wait(), TIMEOUT)
        p.conn.agent.mcp.withdraw(server.server_id)
        with pytest.raises(RequestCancelled):
            await asyncio.wait_for(running, TIMEOUT)
        with pytest.raises(RequestError) as gone:
            await client.mcp_message(server.server_id, "tools/list", dict(ENVELOPE))
        assert gone.value.code == SERVER_UNAVAILABLE
        with pytest.raises(ValueError, match="already offered"):
            p.conn.agent.offer_mcp_server("again", forever, server_id=server.server_id)
        p.validate(unstable_schema_validator)


async def test_servers_over_acp_need_the_opt_in_and_the_acp_capability() -> None:
    declared = s.McpServerAcp(name="tools", server_id="tools-1")
    async with pair(ToolUser(capabilities=s.AgentCapabilities())) as p:
        async with McpServers(
            [declared], client=p.agent_side.client, capabilities=s.AgentCapabilities()
        ) as mcp:
            assert mcp.servers == []
            assert "mcpCapabilities.acp" in mcp.failures["tools"]
    async with McpServers([declared]) as mcp:
        assert "the agent must opt in" in mcp.failures["tools"]


async def test_an_agent_app_that_opted_in_calls_the_tools_a_client_offers_over_acp(
    tmp_path: Path, unstable_schema_validator: SchemaValidator
) -> None:
    app = AgentApp("app-tools", unstable=True)

    @app.prompt
    async def handle(turn: Turn) -> None:
        result = await turn.call_mcp_tool("project-tools", "add", {"a": 20, "b": 22})
        await turn.say(f"sum: {result.text}")

    assert AgentApp("stable-app").agent_capabilities().mcp_capabilities.acp is s.UNSET
    a, b = memory_pair()
    agent_wire, client_wire = WireLog(), WireLog()
    side = app.connect(RecordingTransport(a, agent_wire))
    client = ToolClient()
    conn = ClientSideConnection(client, RecordingTransport(b, client_wire))
    try:
        init = await asyncio.wait_for(conn.initialize(), TIMEOUT)
        assert init.agent_capabilities.mcp_capabilities.acp is True
        tools = conn.agent.offer_mcp_server("project-tools", project_tools())
        session = (await conn.agent.new_session(str(tmp_path), [tools])).session_id
        answer = await asyncio.wait_for(conn.agent.prompt(session, "add them"), TIMEOUT)
        assert answer.stop_reason == "end_turn"
        assert client.texts == ["sum: 42"]
    finally:
        await conn.close()
        await side.close()
        await app.aclose()
    Pair(side, conn, client, agent_wire, client_wire).validate(unstable_schema_validator)


@pytest.mark.parametrize(
    ("capabilities", "told"),
    [
        ({}, False),  # a stable client: nothing says it reads unstable ACP
        ({"_meta": {"other": True}}, False),
        ({"_meta": {UNSTABLE_MARK: True}}, True),  # what acpwire's clients that opt in send
        ({"plan": {}}, True),  # a field only the unstable schema defines
    ],
)
async def test_an_app_tells_mcp_over_acp_only_to_a_client_that_reads_unstable_acp(
    tmp_path: Path, capabilities: dict[str, Any], told: bool
) -> None:
    """INIT-017, EXT-002: the stable schema's mcpCapabilities holds http and sse only, so
    a client that never said it reads unstable ACP gets no ``acp`` in them; the session
    capability markers stay. Such a client's acp-type MCP server is then refused."""
    app = AgentApp("app-tools", unstable=True)

    @app.prompt
    async def handle(turn: Turn) -> None:
        mcp = await turn.mcp_servers()
        await turn.say(json.dumps(mcp.failures))

    a, b = memory_pair()
    side = app.connect(a)
    client = ToolClient()
    conn = ClientSideConnection(client, b)
    try:
        raw = await asyncio.wait_for(
            conn.connection.request(
                "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities}
            ),
            TIMEOUT,
        )
        caps = raw["agentCapabilities"]
        assert ("acp" in caps["mcpCapabilities"]) is told
        assert "fork" in caps["sessionCapabilities"]
        conn.agent.adopt_answer(raw)
        tools = s.McpServerAcp(name="project-tools", server_id="tools-1")
        session = (await conn.agent.new_session(str(tmp_path), [tools])).session_id
        await asyncio.wait_for(conn.agent.prompt(session, "which failed?"), TIMEOUT)
        failures = json.loads(client.texts[-1])
        assert ("mcpCapabilities.acp" in failures.get("project-tools", "")) is not told
    finally:
        await conn.close()
        await side.close()
        await app.aclose()


async def test_an_acpwire_client_that_opts_in_says_so_in_initialize() -> None:
    """ACP does not negotiate its unstable surface: acpwire's clients mark the opt-in."""
    a, b = memory_pair()
    unstable, stable = ClientSideConnection(ToolClient(), b), ClientSideConnection(Client(), a)
    try:
        assert unstable.agent.own_capabilities(None) == s.ClientCapabilities(
            meta={UNSTABLE_MARK: True}
        )
        assert stable.agent.own_capabilities(s.ClientCapabilities()) == s.ClientCapabilities()
    finally:
        await unstable.close()
        await stable.close()
