"""The ACP v2 draft against the official TypeScript SDK's ``/experimental/v2`` entry point.

==================================  ==================================  ==============================
pairing                             client                              agent
==================================  ==================================  ==============================
acpwire->ts-v2                      acpwire ClientSideConnection here   peers/ts_v2_agent.mjs
acpwire->ts-router (v2 and v1)      acpwire ClientSideConnection here   peers/ts_v2_agent.mjs --router
ts-v2->acpwire-demo                 peers/ts_v2_client.mjs              peers/acpwire_demo_v2_agent.py
                                                                        (the demo AgentApp, v2=True)
==================================  ==================================  ==============================

Every message on the wire, both directions, is validated against the schema of the
version the connection chose (``v2/schema.json`` or ``v1/schema.json``).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

try:  # tests/ as a package (rootdir-relative imports)
    from . import sdk_install
except ImportError:  # rootdir-less "prepend" import mode
    import sdk_install  # type: ignore[no-redef]

from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.client.toolkit import ToolkitClient, open_agent
from acpwire.client.v2 import ClientV2
from acpwire.protocol.errors import ErrorCode, RequestError
from acpwire.schema import v2
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports import spawn

pytestmark = pytest.mark.interop

PEERS = Path(__file__).resolve().parent / "peers"
INFO = v2.Implementation(name="acpwire-interop", version="1")


@pytest.fixture(scope="module", autouse=True)
def _ts_sdk() -> None:
    reason = sdk_install.ts_skip_reason()
    if reason is not None:
        pytest.skip(f"TypeScript SDK peers unavailable: {reason}")


class Recorder(ClientV2):
    """Keeps every v2 update; answers permission requests with ``allow``."""

    def __init__(self) -> None:
        self.updates: list[v2.SessionUpdate] = []
        self.idle = asyncio.Event()
        self.permission_requests: list[v2.RequestPermissionRequest] = []

    async def session_update(self, params: v2.UpdateSessionNotification) -> None:
        self.updates.append(params.update)
        if isinstance(params.update, v2.SessionStateUpdate) and params.update.state == "idle":
            self.idle.set()

    async def request_permission(
        self, params: v2.RequestPermissionRequest
    ) -> v2.RequestPermissionResponse:
        self.permission_requests.append(params)
        return v2.RequestPermissionResponse(outcome=v2.SelectedPermissionOutcome(option_id="allow"))

    async def turn(self, conn: ClientSideConnection, session_id: str, text: str) -> str:
        """Prompt and wait for the idle state that ends the turn; the stop reason."""
        assert conn.agent_v2 is not None
        self.idle.clear()
        start = len(self.updates)
        answer = await within(conn.agent_v2.prompt(session_id, text))
        await within(self.idle.wait())
        inserted = [u for u in self.updates[start:] if isinstance(u, v2.UserMessage)]
        assert [u.message_id for u in inserted] == [answer.message_id]
        last = self.updates[-1]
        assert isinstance(last, v2.SessionStateUpdate)
        return str(last.stop_reason)


class V1Recorder(Client):
    def __init__(self) -> None:
        self.updates: list[s.SessionUpdate] = []

    async def session_update(self, params: s.SessionNotification) -> None:
        self.updates.append(params.update)


async def within(awaitable: Any) -> Any:
    return await asyncio.wait_for(awaitable, TIMEOUT)


@asynccontextmanager
async def ts_agent(
    *args: str, v2_client: ClientV2 | None = None
) -> AsyncIterator[tuple[ClientSideConnection, WireLog, V1Recorder]]:
    wire = WireLog()
    transport = await spawn(
        sdk_install.node_executable() or "node", [str(PEERS / "ts_v2_agent.mjs"), *args]
    )
    v1 = V1Recorder()
    async with ClientSideConnection(v1, RecordingTransport(transport, wire), v2=v2_client) as conn:
        yield conn, wire, v1


def validate(wire: WireLog, schema: dict[str, Any]) -> None:
    """Both directions: what acpwire sent and what the SDK sent."""
    SchemaValidator(schema).validate_conversation(wire.sent, wire.received)
    SchemaValidator(schema).validate_conversation(wire.received, wire.sent)


@pytest.mark.parametrize("router", [False, True], ids=["v2-agent", "router"])
async def test_an_acpwire_v2_client_runs_turns_on_the_typescript_v2_agent(
    router: bool, official_v2_schema: dict[str, Any]
) -> None:
    client = Recorder()
    async with ts_agent(*(["--router"] if router else []), v2_client=client) as (conn, wire, _):
        assert await within(conn.negotiate(info=INFO)) == 2
        assert conn.agent_v2 is not None and conn.agent_v2.initialize_response is not None
        assert conn.agent_v2.initialize_response.info.name == "acpwire-ts-v2-agent"
        session = await within(conn.agent_v2.new_session(str(Path.cwd())))
        stop = await client.turn(
            conn, session.session_id, "echo hello\nstream 3\nthink hmm\nplan\ntool"
        )
        assert stop == "end_turn"
        kinds = [type(u).__name__ for u in client.updates]
        assert kinds[:2] == ["UserMessage", "SessionStateUpdate"]
        chunks = [u for u in client.updates if isinstance(u, v2.AgentMessageChunk)]
        assert [c.content.text for c in chunks] == ["hello", "chunk 0", "chunk 1", "chunk 2"]  # type: ignore[union-attr]
        assert {c.message_id for c in chunks} == {"agent-1"}
        assert any(isinstance(u, v2.PlanUpdate) for u in client.updates)
        assert any(isinstance(u, v2.ToolCallContentChunk) for u in client.updates)
        statuses = [u.status for u in client.updates if isinstance(u, v2.ToolCallProgress)]
        assert statuses == ["pending", "in_progress", "completed"]

        assert await client.turn(conn, session.session_id, "permission") == "end_turn"
        assert client.permission_requests[0].title == "May I?"
        said = [u.content.text for u in client.updates if isinstance(u, v2.AgentMessageChunk)]  # type: ignore[union-attr]
        assert said[-1] == "permission: allow"
        states = [u.state for u in client.updates if isinstance(u, v2.SessionStateUpdate)]
        assert "requires_action" in states

        assert await client.turn(conn, session.session_id, "refuse") == "refusal"

        client.idle.clear()
        await within(conn.agent_v2.prompt(session.session_id, "slow"))
        await conn.agent_v2.cancel(session.session_id)
        await within(client.idle.wait())
        last = client.updates[-1]
        assert isinstance(last, v2.SessionStateUpdate) and last.stop_reason == "cancelled"

        listed = await within(conn.agent_v2.list_sessions())
        assert [i.session_id for i in listed.sessions] == [session.session_id]
        await within(conn.agent_v2.close_session(session.session_id))
    validate(wire, official_v2_schema)


async def test_the_typescript_router_gives_a_v1_client_v1(official_schema: dict[str, Any]) -> None:
    async with ts_agent("--router") as (conn, wire, v1):
        answer = await within(conn.initialize())
        assert answer.protocol_version == 1
        session = await within(conn.agent.new_session(str(Path.cwd())))
        result = await within(conn.agent.prompt(session.session_id, "echo old friend"))
        assert result.stop_reason == "end_turn"
        assert v1.updates == [s.AgentMessageChunk(content=s.TextContent(text="old friend"))]
    validate(wire, official_schema)


async def test_an_acpwire_client_offering_v2_to_the_typescript_router_without_a_v2_handler_asks_v1(
    official_schema: dict[str, Any],
) -> None:
    """negotiate() without a v2 handler is a v1 initialize: nothing of v2 goes out."""
    async with ts_agent("--router") as (conn, wire, _):
        assert await within(conn.negotiate(info=INFO)) == 1
        assert wire.sent[0]["params"]["protocolVersion"] == 1
    validate(wire, official_schema)


async def test_the_typescript_v2_only_agent_refuses_a_v1_client_with_the_versions_it_serves() -> (
    None
):
    async with ts_agent() as (conn, _, _):
        with pytest.raises(RequestError) as caught:
            await within(conn.initialize())
        assert caught.value.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION
        assert caught.value.data == {"requested": 1, "supported": [2]}


async def test_the_toolkit_client_offering_v2_chats_with_the_typescript_v2_agent() -> None:
    """ToolkitClient(protocol=2), as `acp chat --protocol 2` uses it: a v2 turn reads as v1."""
    client = ToolkitClient(protocol=2)
    async with open_agent(
        [sdk_install.node_executable() or "node", str(PEERS / "ts_v2_agent.mjs")], client=client
    ):
        answer = client.agent.initialize_response
        assert answer is not None and answer.protocol_version == 2
        state = await within(client.new_session(str(Path.cwd())))
        result = await within(client.prompt(state.session_id, "echo hi there\ntool"))
        assert result.stop_reason == "end_turn"
        assert [(m.role, m.text) for m in state.messages] == [
            ("user", "echo hi there\ntool"),
            ("agent", "hi there"),
        ]
        assert [v.status for v in state.tool_calls.values()] == ["completed"]


def run_ts_v2_client(tmp_path: Path, *args: str) -> tuple[list[dict[str, Any]], WireLog]:
    """The TypeScript SDK's v2 client against the demo agent; its events and the wire as
    acpwire saw it."""
    wire_path = tmp_path / "agent-wire.jsonl"
    agent = [sys.executable, str(PEERS / "acpwire_demo_v2_agent.py"), "--wire-log", str(wire_path)]
    cmd = [
        sdk_install.node_executable() or "node",
        str(PEERS / "ts_v2_client.mjs"),
        "--agent",
        shlex.join(agent),
        "--cwd",
        str(tmp_path),
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, f"ts_v2_client failed:\n{proc.stderr}"
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert events and events[-1] == {"event": "done"}, proc.stdout + proc.stderr
    wire = WireLog()
    for line in wire_path.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        direction = "sent" if item["dir"] == "out" else "received"
        wire.entries.append((direction, json.loads(item["line"])))
    return events, wire


def test_the_typescript_v2_client_runs_turns_on_the_acpwire_demo_agent(
    tmp_path: Path, official_v2_schema: dict[str, Any]
) -> None:
    events, wire = run_ts_v2_client(
        tmp_path,
        "--prompt",
        "think hmm",
        "--prompt",
        "write notes.txt from ts",
        "--cancel",
        "slow 20",
        "--set",
        "model=smart",
    )
    steps = {e["step"]: e for e in events if e["event"] in ("response", "error")}
    assert all(e["event"] == "response" for e in steps.values()), steps
    init = steps["initialize"]["result"]
    assert init["protocolVersion"] == 2 and init["info"]["name"] == "acpwire-demo"
    assert "session" in init["capabilities"]
    stops = {e["step"]: e["stopReason"] for e in events if e["event"] == "stop"}
    assert stops == {
        "prompt 1": "end_turn",
        "prompt 2": "end_turn",
        "prompt cancelled": "cancelled",
    }
    updates = [e["update"] for e in events if e["event"] == "update"]
    # Each prompt's answer names the user message the agent then inserts.
    inserted = [u["messageId"] for u in updates if u["sessionUpdate"] == "user_message"]
    answered = [steps[f"prompt {i}"]["result"]["messageId"] for i in (1, 2)]
    assert inserted[:2] == answered
    assert any(u["sessionUpdate"] == "agent_thought_chunk" and u["messageId"] for u in updates)
    permission = next(e["params"] for e in events if e["event"] == "permission")
    assert permission["subject"]["type"] == "tool_call" and permission["title"]
    assert (tmp_path / "notes.txt").read_text() == "from ts\n"
    options = steps["session/set_config_option"]["result"]["configOptions"]
    assert {o["configId"]: o["currentValue"] for o in options}["model"] == "smart"
    assert [x["sessionId"] for x in steps["session/list"]["result"]["sessions"]] == [
        steps["session/new"]["result"]["sessionId"]
    ]
    validate(wire, official_v2_schema)
