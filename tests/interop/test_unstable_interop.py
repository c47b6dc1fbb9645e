"""Unstable ACP v1 against the official TypeScript SDK's ``/unstable`` entry point, both roles.

============================  ==================================  ==============================
pairing                       client                              agent
============================  ==================================  ==============================
ts-unstable->acpwire          peers/ts_unstable_client.mjs        peers/acpwire_unstable_agent.py
acpwire->ts-unstable          acpwire ClientSideConnection here   peers/ts_unstable_agent.mjs
ts-unstable->acpwire app      peers/ts_fork_client.mjs            peers/acpwire_demo_agent.py
============================  ==================================  ==============================

Covered: session/fork, archive, unarchive, status, set_title, providers/list|set|disable,
auth/status and auth/status_update, and MCP over ACP both ways (each SDK offers an MCP
server the other's agent uses, with request-scoped progress notifications, an inner MCP
error and the binding's -33001 for a withdrawn server). The same acpwire agent without
the opt-in answers every unstable method -32601 to the TypeScript client. Every message
acpwire sends is validated against ``schema.unstable.json`` when it opted in and
``schema.json`` when it did not. The high tier (the demo ``AgentApp`` with its SQLite
store) serves fork, archive, status and titles to the TypeScript client, and the replays
of ``session/load`` show that a fork and its parent went their own ways.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

try:  # tests/ as a package (rootdir-relative imports)
    from . import sdk_install
except ImportError:  # rootdir-less "prepend" import mode
    import sdk_install  # type: ignore[no-redef]

try:  # the MCP-over-ACP parts need the official mcp SDK
    from mcp.server.mcpserver import Context, MCPServer
except ImportError:  # pragma: no cover - depends on the environment
    Context = MCPServer = None  # type: ignore[assignment,misc]

from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.protocol.errors import UnstableMethodError
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports import spawn

pytestmark = pytest.mark.interop

PEERS = Path(__file__).resolve().parent / "peers"
UNSTABLE_STEPS = [
    "session/fork",
    "session/archive",
    "session/status archived",
    "session/unarchive",
    "session/status",
    "session/status unknown",
    "session/set_title",
    "providers/list",
    "providers/set",
    "providers/disable",
    "providers/list after",
    "auth/status",
]


@pytest.fixture(scope="module", autouse=True)
def _ts_sdk() -> None:
    reason = sdk_install.ts_skip_reason()
    if reason is not None:
        pytest.skip(f"TypeScript SDK peers unavailable: {reason}")


def read_wire(path: Path) -> WireLog:
    log = WireLog()
    for line in path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        log.entries.append(
            ("sent" if item["dir"] == "out" else "received", json.loads(item["line"]))
        )
    return log


def run_ts_client(tmp_path: Path, *agent_args: str) -> tuple[list[dict[str, Any]], WireLog]:
    pytest.importorskip("mcp")
    wire = tmp_path / "agent-wire.jsonl"
    agent = [sys.executable, str(PEERS / "acpwire_unstable_agent.py"), "--wire-log", str(wire)]
    cmd = [
        sdk_install.node_executable() or "node",
        str(PEERS / "ts_unstable_client.mjs"),
        "--agent",
        shlex.join([*agent, *agent_args]),
        "--cwd",
        str(tmp_path),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, f"ts_unstable_client failed:\n{proc.stderr}"
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert events and events[-1] == {"event": "done"}, proc.stdout + proc.stderr
    return events, read_wire(wire)


def answers(events: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["step"]: e for e in events if e["event"] in ("response", "error")}


def messages(events: list[dict[str, Any]]) -> list[Any]:
    texts = [e["update"]["content"]["text"] for e in events if e["event"] == "update"]
    return [json.loads(t) for t in texts]


def test_the_typescript_unstable_client_uses_every_unstable_method_of_an_acpwire_agent(
    tmp_path: Path, unstable_schema_validator: SchemaValidator
) -> None:
    events, wire = run_ts_client(tmp_path)
    steps = answers(events)
    caps = steps["initialize"]["result"]["agentCapabilities"]
    assert caps["sessionCapabilities"] == {"fork": {}, "archive": {}, "status": {}, "title": {}}
    assert caps["providers"] == {} and caps["auth"] == {"status": {}}
    assert caps["mcpCapabilities"] == {"acp": True}
    session = steps["session/new"]["result"]["sessionId"]
    assert steps["session/fork"]["result"]["sessionId"] not in (session, None)
    assert steps["session/status archived"]["result"] == {"status": "saved"}
    assert steps["session/status"]["result"] == {"status": "open"}
    assert steps["session/status unknown"]["error"]["code"] == -32002
    assert steps["session/set_title"]["result"] == {"title": "Interop"}
    assert steps["providers/list after"]["result"]["providers"] == [
        {
            "providerId": "gateway",
            "supported": ["openai"],
            "required": False,
            "current": {"apiType": "openai", "baseUrl": "https://gateway.example/v1"},
        }
    ]
    assert steps["auth/status"]["result"]["state"] == "authenticated"
    # MCP over ACP: the acpwire agent used the TypeScript client's server, through the
    # mcp SDK (discovery falls back: the TS server has no server/discover) and raw.
    served = [e["method"] for e in events if e["event"] == "mcp"]
    assert served == ["server/discover", "tools/list", "tools/call", "tools/call", "tools/call"]
    shout, count, boom, disposed = messages(events)
    assert shout == {"tools": ["shout", "count"], "text": "HI", "isError": False}
    assert [n["params"]["progress"] for n in count["notes"]] == [1, 2]
    assert count["outcome"]["result"]["content"][0]["text"] == "counted"
    assert boom["outcome"]["error"] == {
        "code": -32602,
        "message": "boom is not allowed",
        "data": {"tool": "boom"},
    }
    assert disposed["acpError"]["code"] == -33001
    notes = [e for e in events if e["event"] == "notification"]
    assert notes == [
        {
            "event": "notification",
            "method": "auth/status_update",
            "params": {"state": "unauthenticated"},
        }
    ]
    assert all(
        steps[name]["event"] == "response" for name in UNSTABLE_STEPS if "unknown" not in name
    )
    unstable_schema_validator.validate_conversation(wire.sent, wire.received)


def test_an_acpwire_agent_that_did_not_opt_in_answers_the_typescript_client_method_not_found(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    events, wire = run_ts_client(tmp_path, "--stable")
    steps = answers(events)
    caps = steps["initialize"]["result"]["agentCapabilities"]
    assert "providers" not in caps and "acp" not in caps.get("mcpCapabilities", {})
    assert caps.get("sessionCapabilities", {}) == {} and caps.get("auth", {}) == {}
    for name in UNSTABLE_STEPS:
        assert steps[name]["error"]["code"] == -32601, name
    assert [e for e in events if e["event"] in ("mcp", "notification")] == []
    failure, *refusals = messages(events)
    assert "the agent must opt in" in failure["failure"]
    assert all("did not opt in" in r["refused"] for r in refusals)
    schema_validator.validate_conversation(wire.sent, wire.received)


class Recorder(Client):
    unstable = True

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.auth: list[s.AuthStatusUpdateNotification] = []
        self.auth_seen = asyncio.Event()

    async def session_update(self, params: s.SessionNotification) -> None:
        update = params.update
        if isinstance(update, s.AgentMessageChunk) and isinstance(update.content, s.TextContent):
            self.texts.append(update.content.text)

    async def auth_status_update(self, params: s.AuthStatusUpdateNotification) -> None:
        self.auth.append(params)
        self.auth_seen.set()


def python_tools() -> Any:
    if MCPServer is None:
        pytest.skip("the mcp SDK is not installed")
    server = MCPServer("py-tools")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    async def count(n: int, ctx: Context) -> str:
        """Counts to n, reporting progress."""
        for i in range(1, n + 1):
            await ctx.report_progress(i, n)
        return f"counted to {n}"

    return server


async def test_an_acpwire_client_uses_every_unstable_method_of_the_typescript_agent(
    tmp_path: Path, unstable_schema_validator: SchemaValidator
) -> None:
    tools = python_tools()
    transport = await spawn(
        sdk_install.node_executable() or "node", [str(PEERS / "ts_unstable_agent.mjs")]
    )
    wire = WireLog()
    client = Recorder()
    async with ClientSideConnection(client, RecordingTransport(transport, wire)) as conn:
        agent = conn.agent
        init = await asyncio.wait_for(conn.initialize(), TIMEOUT)
        assert init.agent_capabilities.mcp_capabilities.acp is True
        offered = agent.offer_mcp_server("py-tools", tools)
        session = (await agent.new_session(str(tmp_path), [offered])).session_id
        fork = await agent.fork_session(session, str(tmp_path))
        assert fork.session_id != session
        await agent.archive_session(session)
        assert (await agent.session_status(session)).status == "saved"
        await agent.unarchive_session(session)
        assert (await agent.session_status(session)).status == "open"
        assert (await agent.set_session_title(session, " From Python ")).title == "From Python"
        await agent.set_provider("gateway", "openai", "https://gateway.example/v1")
        await agent.disable_provider("main")
        listed = await agent.list_providers()
        assert [p.provider_id for p in listed.providers] == ["gateway"]
        assert listed.providers[0].current.base_url == "https://gateway.example/v1"
        status = await agent.auth_status()
        assert status.state == "authenticated" and status.accounts[0].label == "ts"
        turn = "\n".join(
            [
                'mcp py-tools tools/call {"name": "add", "arguments": {"a": 2, "b": 40}}',
                'mcp py-tools tools/call {"name": "count", "arguments": {"n": 2},'
                ' "_meta": {"progressToken": "p1"}}',
                'mcp py-tools tools/call {"name": "nope"}',
                "auth unauthenticated",
            ]
        )
        answer = await asyncio.wait_for(agent.prompt(session, turn), TIMEOUT)
        assert answer.stop_reason == "end_turn"
        await asyncio.wait_for(client.auth_seen.wait(), TIMEOUT)
        added, counted, unknown = (json.loads(t) for t in client.texts)
        assert added["outcome"]["result"]["structuredContent"] == {"result": 42}
        assert counted["outcome"]["result"]["content"][0]["text"] == "counted to 2"
        progress = [n["params"] for n in counted["notes"]]
        assert [(p["progressToken"], p["progress"]) for p in progress] == [("p1", 1), ("p1", 2)]
        assert unknown["outcome"]["result"]["isError"] is True
        assert [a.state for a in client.auth] == ["unauthenticated"]
        # Withdrawn: the TypeScript caller gets the binding's -33001.
        agent.mcp.withdraw(offered.server_id)
        await asyncio.wait_for(agent.prompt(session, "mcp py-tools tools/list {}"), TIMEOUT)
        assert json.loads(client.texts[-1])["acpError"]["code"] == -33001
    unstable_schema_validator.validate_conversation(wire.sent, wire.received)


async def test_an_acpwire_client_that_did_not_opt_in_uses_only_stable_acp_with_it(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    transport = await spawn(
        sdk_install.node_executable() or "node", [str(PEERS / "ts_unstable_agent.mjs")]
    )
    wire = WireLog()
    async with ClientSideConnection(Client(), RecordingTransport(transport, wire)) as conn:
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        session = (await conn.agent.new_session(str(tmp_path))).session_id
        with pytest.raises(UnstableMethodError):
            await conn.agent.fork_session(session, str(tmp_path))
        with pytest.raises(UnstableMethodError):
            await conn.agent.auth_status()
        await asyncio.wait_for(conn.agent.prompt(session, "echo still stable"), TIMEOUT)
    sent = [m["method"] for m in wire.sent if "method" in m]
    assert sent == ["initialize", "session/new", "session/prompt"]
    schema_validator.validate_conversation(wire.sent, wire.received)


def test_the_typescript_unstable_client_forks_archives_and_retitles_sessions_of_an_acpwire_app(
    tmp_path: Path, unstable_schema_validator: SchemaValidator
) -> None:
    wire = tmp_path / "agent-wire.jsonl"
    agent = [sys.executable, str(PEERS / "acpwire_demo_agent.py"), "--unstable"]
    agent += ["--store", str(tmp_path / "sessions.db"), "--wire-log", str(wire)]
    cmd = [sdk_install.node_executable() or "node", str(PEERS / "ts_fork_client.mjs")]
    cmd += ["--agent", json.dumps(agent), "--cwd", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, f"ts_fork_client failed:\n{proc.stderr}"
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert events and events[-1] == {"event": "done"}, proc.stdout + proc.stderr
    steps = answers(events)
    caps = steps["initialize"]["result"]["agentCapabilities"]["sessionCapabilities"]
    assert {"fork", "archive", "status", "title"} <= set(caps)
    parent = steps["session/new"]["result"]["sessionId"]
    fork = steps["session/fork"]["result"]["sessionId"]
    assert fork != parent
    assert steps["session/set_title"]["result"] == {"title": "The fork"}
    listed = steps["session/list"]["result"]["sessions"]
    assert [(i["sessionId"], i["archived"]) for i in listed] == [(fork, False)]
    only = steps["session/list only"]["result"]["sessions"]
    assert [(i["sessionId"], i["archived"]) for i in only] == [(parent, True)]
    after = {i["sessionId"]: i for i in steps["session/list after"]["result"]["sessions"]}
    assert set(after) == {parent, fork} and after[fork]["title"] == "The fork"
    assert steps["session/status"]["result"] == {"status": "open"}
    assert steps["session/status unknown"]["error"]["code"] == -32002

    def said_by_user(session_id: str) -> list[str]:
        # What came after the last step before the loads: the replays.
        start = next(i for i, e in enumerate(events) if e.get("step") == "session/status unknown")
        return [
            e["update"]["content"]["text"]
            for e in events[start:]
            if e["event"] == "update"
            and e["sessionId"] == session_id
            and e["update"]["sessionUpdate"] == "user_message_chunk"
        ]

    assert said_by_user(fork) == ["shared words", "fork words"]
    assert said_by_user(parent) == ["shared words", "parent words"]
    log = read_wire(wire)
    unstable_schema_validator.validate_conversation(log.sent, log.received)
