"""AgentApp + the client's MCP servers: connected when a session opens (or on demand),
tool calls, failures, lifetime."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from _app_harness import TestClient, wired
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.agent.app import AgentApp, Turn
from acpwire.client.connection import ClientSideConnection
from acpwire.testing import SchemaValidator
from acpwire.transports.memory import memory_pair

pytestmark = pytest.mark.slow  # MCP servers run as Python processes (importing the MCP SDK)

pytest.importorskip("mcp")

FIXTURE = str(Path(__file__).with_name("mcp_server_fixture.py"))


def fixture_server(name: str = "fx") -> s.McpServerStdio:
    return s.McpServerStdio(name=name, command=sys.executable, args=[FIXTURE], env=[])


def assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


class Seen:
    """What the prompt handler observed, per turn."""

    def __init__(self) -> None:
        self.tools: list[list[str]] = []
        self.results: list[Any] = []
        self.pids: list[int] = []


def mcp_app(seen: Seen, **kwargs: Any) -> AgentApp:
    """A prompt ``call SERVER`` lists tools and calls add(2, 3) then pid on SERVER; ``hi`` uses no MCP."""
    app = AgentApp("mcp-agent", mcp_startup_timeout=TIMEOUT, **kwargs)

    @app.prompt
    async def handle(turn: Turn) -> None:
        if not turn.text.startswith("call "):
            await turn.say("no MCP here")
            return
        server = turn.text.split()[1]
        mcp = await turn.mcp_servers()
        seen.tools.append([f"{t.server}/{t.name}" for t in mcp.tools()])
        result = await turn.call_mcp_tool(server, "add", {"a": 2, "b": 3})
        seen.results.append(result)
        await turn.say(f"{server}: {result.text}")
        if not result.is_error:
            pid = await turn.call_mcp_tool(server, "pid")
            seen.pids.append(int(pid.structured["result"]))

    return app


async def test_initialize_advertises_http_and_sse_when_mcp_is_on() -> None:
    for enabled in (True, False):
        async with wired(AgentApp("a", mcp=enabled), initialize=False) as w:
            result = await w.agent.initialize(w.client.capabilities())
        caps = s.to_json(result)["agentCapabilities"]["mcpCapabilities"]
        assert caps == {"http": enabled, "sse": enabled}


async def test_tool_call_is_reported_and_server_stops_on_close(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    seen = Seen()
    app = mcp_app(seen)
    async with wired(app, validator=schema_validator) as w:
        sid = (await w.agent.new_session(str(tmp_path), [fixture_server()])).session_id
        result = await asyncio.wait_for(w.agent.prompt(sid, "call fx"), TIMEOUT)
        assert result.stop_reason == "end_turn"

        assert {"fx/add", "fx/pid", "fx/cwd"} <= set(seen.tools[0])
        assert seen.results[0].text == "5" and seen.results[0].is_error is False
        assert w.client.texts(sid) == ["fx: 5"]

        updates = w.client.tool_updates(sid)
        start = updates[0]
        assert start["sessionUpdate"] == "tool_call"
        assert start["title"] == "fx: add"
        assert start["kind"] == "other"
        assert start["status"] == "pending"
        assert start["rawInput"] == {"a": 2, "b": 3}
        add_id = start["toolCallId"]
        add_updates = [u for u in updates if u["toolCallId"] == add_id]
        assert [u.get("status") for u in add_updates] == ["pending", "in_progress", "completed"]
        done = add_updates[-1]
        assert done["rawOutput"]["structuredContent"] == {"result": 5}
        assert done["rawOutput"]["isError"] is False
        assert done["content"] == [{"type": "content", "content": {"type": "text", "text": "5"}}]

        # Connected once per session: a second turn reuses the same server process.
        await asyncio.wait_for(w.agent.prompt(sid, "call fx"), TIMEOUT)
        assert len(seen.pids) == 2 and seen.pids[0] == seen.pids[1]
        os.kill(seen.pids[0], 0)  # alive while the session is open

        await w.agent.close_session(sid)
        assert_gone(seen.pids[0])
        assert app.mcp_support.live == set()


def live_session(app: AgentApp, session_id: str) -> Any:
    return next(a.sessions[session_id] for a in app.connections if session_id in a.sessions)


async def test_a_session_s_servers_are_connected_when_it_opens(tmp_path: Path) -> None:
    """SESS-027: the client gave the servers to be used. They are connected in the
    background once session/new is answered, before any prompt; the first turn uses them."""
    seen = Seen()
    app = mcp_app(seen)
    async with wired(app) as w:
        sid = (await w.agent.new_session(str(tmp_path), [fixture_server()])).session_id
        session = live_session(app, sid)
        await wait_until(lambda: session.mcp is not None, "the session's servers are connected")
        servers = session.mcp
        assert servers.failures == {} and app.mcp_support.live == {servers}
        pid = (await asyncio.wait_for(servers.call_tool("fx", "pid", {}), TIMEOUT)).structured
        await asyncio.wait_for(w.agent.prompt(sid, "call fx"), TIMEOUT)
        assert seen.pids == [int(pid["result"])]  # the same process: not started twice
        assert [u["title"] for u in w.client.tool_updates(sid) if "title" in u] == [
            "fx: add",
            "fx: pid",
        ]


async def test_servers_that_fail_are_told_as_notices_to_a_client_that_takes_them(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """With session.notices advertised, a server that cannot be used is reported at once,
    as a notice (no turn needed), and not again as a tool call of the next turn."""

    class NoticeClient(TestClient):
        def capabilities(self) -> s.ClientCapabilities:
            caps = super().capabilities()
            caps.session = s.ClientSessionCapabilities(notices=s.NoticeCapabilities())
            return caps

    missing = s.McpServerStdio(name="missing", command="/nonexistent/mcp-xyz", args=[], env=[])
    client = NoticeClient()
    async with wired(mcp_app(Seen()), client, validator=schema_validator) as w:
        sid = (await w.agent.new_session(str(tmp_path), [missing])).session_id
        await client.wait_for(lambda: "notice" in client.kinds(sid))
        notice = s.to_json(client.updates(sid)[client.kinds(sid).index("notice")])
        assert (
            notice["severity"] == "error"
            and notice["title"] == "MCP server missing could not be used"
        )
        assert "/nonexistent/mcp-xyz" in notice["description"]
        await asyncio.wait_for(w.agent.prompt(sid, "hi"), TIMEOUT)
        assert w.client.tool_updates(sid) == []


async def test_a_session_that_never_uses_mcp_starts_nothing_on_demand(tmp_path: Path) -> None:
    """``mcp_on_demand=True``: servers start on a session's first turn.mcp_servers()."""
    seen = Seen()
    app = mcp_app(seen, mcp_on_demand=True)
    async with wired(app) as w:
        sid = (await w.agent.new_session(str(tmp_path), [fixture_server()])).session_id
        await asyncio.wait_for(w.agent.prompt(sid, "hi"), TIMEOUT)
        assert app.mcp_support.live == set()
        assert w.client.tool_updates(sid) == []


async def test_servers_that_fail_to_start_are_reported_without_hanging(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    seen = Seen()
    dies = s.McpServerStdio(
        name="dies",
        command=sys.executable,
        args=["-c", "import sys; print('no config file', file=sys.stderr); sys.exit(3)"],
        env=[],
    )
    missing = s.McpServerStdio(name="missing", command="/nonexistent/mcp-xyz", args=[], env=[])
    async with wired(mcp_app(seen), validator=schema_validator) as w:
        sid = (await w.agent.new_session(str(tmp_path), [missing, dies])).session_id
        result = await asyncio.wait_for(w.agent.prompt(sid, "call missing"), TIMEOUT)
        assert result.stop_reason == "end_turn"

        assert seen.tools == [[]]
        failed = seen.results[0]
        assert failed.is_error and "missing" in failed.text and "not found" in failed.text
        assert w.client.texts(sid) == [f"missing: {failed.text}"]

        finals = [u for u in w.client.tool_updates(sid) if u.get("status") == "failed"]
        by_title: dict[str, Any] = {}
        for u in w.client.tool_updates(sid):
            if u["sessionUpdate"] == "tool_call":
                by_title[u["title"]] = u["toolCallId"]
        texts = {
            u["toolCallId"]: " ".join(c["content"]["text"] for c in u["content"]) for u in finals
        }
        # Each server that could not start is reported once, naming it and the reason...
        assert "/nonexistent/mcp-xyz" in texts[by_title["MCP server missing: unavailable"]]
        assert "no config file" in texts[by_title["MCP server dies: unavailable"]]
        # ...and the call on it fails with the reason.
        assert "'missing' is unavailable" in texts[by_title["missing: add"]]

        # Reported once per session, not on every turn.
        before = len(w.client.tool_updates(sid))
        await asyncio.wait_for(w.agent.prompt(sid, "call dies"), TIMEOUT)
        new = w.client.tool_updates(sid)[before:]
        assert [u["title"] for u in new if u["sessionUpdate"] == "tool_call"] == ["dies: add"]


async def test_load_and_resume_reconnect_with_their_own_servers(tmp_path: Path) -> None:
    seen = Seen()
    app = mcp_app(seen, store=tmp_path / "sessions.sqlite3")
    try:
        async with wired(app) as w:
            sid = (await w.agent.new_session(str(tmp_path), [fixture_server("one")])).session_id
            await asyncio.wait_for(w.agent.prompt(sid, "call one"), TIMEOUT)

            await w.agent.load_session(sid, str(tmp_path), [fixture_server("two")])
            assert_gone(seen.pids[0])  # the old servers stopped before the answer
            await asyncio.wait_for(w.agent.prompt(sid, "call two"), TIMEOUT)
            assert {t.split("/")[0] for t in seen.tools[1]} == {"two"}

            await w.agent.resume_session(sid, str(tmp_path), [])
            assert_gone(seen.pids[1])
            await asyncio.wait_for(w.agent.prompt(sid, "call two"), TIMEOUT)
            assert seen.tools[2] == []  # resume brought no servers
            assert seen.results[2].is_error and "no MCP server named 'two'" in seen.results[2].text
            await w.agent.delete_session(sid)
    finally:
        await app.aclose()


async def test_servers_stop_when_the_connection_ends(tmp_path: Path) -> None:
    seen = Seen()
    app = mcp_app(seen)
    a, b = memory_pair()
    serving = asyncio.ensure_future(app.serve(a))
    client = ClientSideConnection(TestClient(), b)
    try:
        await client.initialize()
        sid = (await client.agent.new_session(str(tmp_path), [fixture_server()])).session_id
        await asyncio.wait_for(client.agent.prompt(sid, "call fx"), TIMEOUT)
        os.kill(seen.pids[0], 0)
    finally:
        await client.close()
        await asyncio.wait_for(serving, TIMEOUT)
    assert_gone(seen.pids[0])
    assert app.mcp_support.live == set()


async def test_app_shutdown_stops_every_connection_s_servers(tmp_path: Path) -> None:
    seen = Seen()
    app = mcp_app(seen)
    async with wired(app) as w:
        sid = (await w.agent.new_session(str(tmp_path), [fixture_server()])).session_id
        await asyncio.wait_for(w.agent.prompt(sid, "call fx"), TIMEOUT)
        await app.aclose()
        assert_gone(seen.pids[0])


async def test_mcp_off_refuses_turn_mcp(tmp_path: Path) -> None:
    app = AgentApp("off", mcp=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        try:
            await turn.mcp_servers()
        except RuntimeError as exc:
            await turn.say(str(exc))

    async with wired(app) as w:
        sid = (await w.agent.new_session(str(tmp_path), [fixture_server()])).session_id
        await asyncio.wait_for(w.agent.prompt(sid, "x"), TIMEOUT)
        assert "mcp=False" in w.client.texts(sid)[0]
