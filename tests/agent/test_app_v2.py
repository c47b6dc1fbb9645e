"""AgentApp(v2=True): one app, written against v1, serves v2-draft clients in v2 and v1
clients in v1 on the same kind of transport. A v2 client sees the v2 prompt lifecycle
(the answer carries the user message's id once the prompt is accepted, the turn runs
between ``running`` and an ``idle`` state carrying the stop reason, chunks carry
``messageId``); every message is validated against the chosen version's schema. An app
that does not opt in answers 1 to a client offering 2, as before."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from waiting import TIMEOUT

from acpwire.agent.app import AgentApp, Choice, Command, Mode, Select, Toggle, Turn
from acpwire.client.permissions import AllowAll
from acpwire.client.state import MessageView
from acpwire.client.toolkit import ToolkitClient
from acpwire.protocol.errors import RequestError
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports import memory_pair


@dataclass
class Slow:
    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


def build_app(*, v2: bool = True, **options: Any) -> tuple[AgentApp, Slow]:
    """Prompt lines are commands: echo TEXT, think TEXT, plan, tool (asks permission),
    fail, refuse, slow (waits to be cancelled; the returned events say when it runs and
    when it was cancelled)."""
    app = AgentApp(
        "both",
        title="Both versions",
        modes=[Mode("ask", "Ask"), Mode("code", "Code")],
        default_mode="ask",
        options=[
            Select("model", "Model", [Choice("fast", "Fast"), Choice("smart", "Smart")]),
            Toggle("verbose", "Verbose"),
        ],
        commands=[Command("help", "Show help")],
        v2=v2,
        **options,
    )
    slow = Slow()

    @app.prompt
    async def handle(turn: Turn) -> str | None:
        for line in turn.text.splitlines():
            name, _, rest = line.partition(" ")
            if name == "echo":
                await turn.say(rest)
            elif name == "think":
                await turn.think(rest)
            elif name == "plan":
                await turn.plan("look", "change")
            elif name == "tool":
                async with turn.tool("Edit /x", kind="edit") as call:
                    permission = await call.request_permission()
                    await turn.say(f"permission {permission.option_id}")
            elif name == "fail":
                raise RuntimeError("the model is down")
            elif name == "refuse":
                return "refusal"
            elif name == "slow":
                slow.started.set()
                try:
                    await asyncio.Event().wait()
                finally:
                    slow.cancelled.set()
        return None

    return app, slow


@asynccontextmanager
async def connected(
    app: AgentApp, *, protocol: int = 2
) -> AsyncIterator[tuple[ToolkitClient, WireLog]]:
    a, b = memory_pair()
    wire = WireLog()
    side = app.connect(a)
    client = ToolkitClient(
        protocol=protocol,
        permissions=AllowAll(),
        read_files=False,
        write_files=False,
        terminals=False,
    )
    client.connect(RecordingTransport(b, wire))
    try:
        await asyncio.wait_for(client.initialize(), TIMEOUT)
        yield client, wire
    finally:
        await client.close()
        await side.close()


async def within(awaitable: Any) -> Any:
    return await asyncio.wait_for(awaitable, TIMEOUT)


def updates(wire: WireLog) -> list[dict[str, Any]]:
    return [m["params"]["update"] for m in wire.received if m.get("method") == "session/update"]


def validate(schema: dict[str, Any], wire: WireLog) -> None:
    SchemaValidator(schema).validate_conversation(wire.sent, wire.received)
    SchemaValidator(schema).validate_conversation(wire.received, wire.sent)


async def test_a_v2_client_gets_v2_initialize_with_info_and_session_capabilities(
    official_v2_schema: dict[str, Any],
) -> None:
    app, _ = build_app()
    async with connected(app) as (client, wire):
        answer = wire.received[0]["result"]
        assert answer["protocolVersion"] == 2
        assert answer["info"]["name"] == "both" and answer["info"]["title"] == "Both versions"
        assert "agentCapabilities" not in answer and "agentInfo" not in answer
        session = answer["capabilities"]["session"]
        assert session["mcp"]["stdio"] == {}  # v1 has stdio as baseline; v2 names it
        assert "delete" in session and "additionalDirectories" in session
        assert client.agent.initialize_response is not None
    validate(official_v2_schema, wire)


async def test_a_v2_prompt_is_answered_with_the_user_message_id_and_ends_with_an_idle_state(
    official_v2_schema: dict[str, Any],
) -> None:
    app, _ = build_app()
    async with connected(app) as (client, wire):
        state = await within(client.new_session("/tmp"))
        result = await within(client.prompt(state.session_id, "echo hello\nthink hm\nplan"))
        assert result.stop_reason == "end_turn"
        answer = next(
            m["result"] for m in wire.received if "result" in m and "messageId" in m["result"]
        )
        seen = updates(wire)
        kinds = [u["sessionUpdate"] for u in seen]
        # The user message (with the answer's id), running, the turn, idle with the reason.
        user = next(u for u in seen if u["sessionUpdate"] == "user_message")
        assert user["messageId"] == answer["messageId"]
        assert user["content"] == [{"type": "text", "text": "echo hello\nthink hm\nplan"}]
        states = [u for u in seen if u["sessionUpdate"] == "state_update"]
        assert [u["state"] for u in states] == ["running", "idle"]
        assert states[-1]["stopReason"] == "end_turn"
        assert kinds.index("user_message") < kinds.index("state_update")
        assert kinds[-1] == "state_update"
        chunks = [
            u for u in seen if u["sessionUpdate"] in ("agent_message_chunk", "agent_thought_chunk")
        ]
        assert chunks and all(isinstance(c["messageId"], str) and c["messageId"] for c in chunks)
        plan = next(u for u in seen if u["sessionUpdate"] == "plan_update")
        assert [e["content"] for e in plan["plan"]["entries"]] == ["look", "change"]
        # No v1-only update reaches a v2 client.
        assert not {"plan", "tool_call", "current_mode_update"} & set(kinds)
        texts = [(m.role, m.text) for m in state.transcript if isinstance(m, MessageView)]
        assert texts == [
            ("user", "echo hello\nthink hm\nplan"),
            ("agent", "hello"),
            ("thought", "hm"),
        ]
        # The commands and options arrive in their v2 shapes.
        commands = next(u for u in seen if u["sessionUpdate"] == "available_commands_update")
        assert commands["availableCommands"][0]["name"] == "help"
    validate(official_v2_schema, wire)


async def test_a_v2_tool_call_and_its_permission_request_use_v2_shapes_and_states(
    official_v2_schema: dict[str, Any],
) -> None:
    app, _ = build_app()
    async with connected(app) as (client, wire):
        state = await within(client.new_session("/tmp"))
        await within(client.prompt(state.session_id, "tool"))
        ask = next(m for m in wire.received if m.get("method") == "session/request_permission")
        assert ask["params"]["title"] == "Edit /x"
        assert ask["params"]["subject"]["type"] == "tool_call"
        seen = updates(wire)
        states = [u["state"] for u in seen if u["sessionUpdate"] == "state_update"]
        assert states == ["running", "requires_action", "running", "idle"]
        calls = [u for u in seen if u["sessionUpdate"] == "tool_call_update"]
        assert calls[0]["title"] == "Edit /x" and calls[-1]["status"] == "completed"
        texts = [m.text for m in state.transcript if isinstance(m, MessageView)]
        assert texts[-1] == "permission allow_once"
    validate(official_v2_schema, wire)


async def test_a_failing_handler_ends_the_v2_turn_idle_with_the_error(
    official_v2_schema: dict[str, Any],
) -> None:
    app, _ = build_app()
    async with connected(app) as (client, wire):
        state = await within(client.new_session("/tmp"))
        result = await within(client.prompt(state.session_id, "fail"))
        assert result.stop_reason == "error"
        idle = updates(wire)[-1]
        assert idle["state"] == "idle" and idle["stopReason"] == "error"
        assert idle["error"]["code"] == -32603 and "model is down" in idle["error"]["message"]
        # The session takes the next prompt.
        result = await within(client.prompt(state.session_id, "refuse"))
        assert result.stop_reason == "refusal"
    validate(official_v2_schema, wire)


async def test_a_v2_prompt_refused_before_acceptance_is_an_error_answer_and_no_turn(
    official_v2_schema: dict[str, Any],
) -> None:
    app, slow = build_app()
    async with connected(app) as (client, wire):
        state = await within(client.new_session("/tmp"))
        turn = asyncio.ensure_future(client.prompt(state.session_id, "slow"))
        await within(slow.started.wait())
        with pytest.raises(RequestError, match="already running"):
            await within(client.prompt(state.session_id, "echo again"))
        with pytest.raises(RequestError):
            await within(client.prompt("sess_unknown", "echo nobody"))
        await client.cancel(state.session_id)
        assert (await within(turn)).stop_reason == "cancelled"
        user_messages = [u for u in updates(wire) if u["sessionUpdate"] == "user_message"]
        assert len(user_messages) == 1  # the refused prompts were never inserted
    validate(official_v2_schema, wire)


async def test_v2_config_options_set_and_resume_with_replay(
    official_v2_schema: dict[str, Any],
) -> None:
    app, _ = build_app()
    async with connected(app) as (client, wire):
        state = await within(client.new_session("/tmp"))
        options = {o.id: o for o in state.config_options}
        assert set(options) == {"mode", "model", "verbose"}
        await within(client.set_config_option(state.session_id, "model", "smart"))
        await within(client.set_config_option(state.session_id, "verbose", True))
        await within(client.prompt(state.session_id, "echo kept"))
        sid = state.session_id
    async with connected(app) as (client, wire):
        # v2 resume is baseline: the in-memory store still holds the session.
        state = await within(client.load_session(sid, "/tmp"))
        texts = [(m.role, m.text) for m in state.transcript if isinstance(m, MessageView)]
        assert texts == [("user", "echo kept"), ("agent", "kept")]
        assert {o.id: o.current_value for o in state.config_options}["model"] == "smart"
        assert {"sessionUpdate": "state_update", "state": "idle"} in updates(wire)
    validate(official_v2_schema, wire)


async def test_a_v1_client_of_a_v2_app_gets_v1_as_before(official_schema: dict[str, Any]) -> None:
    app, _ = build_app()
    async with connected(app, protocol=1) as (client, wire):
        assert wire.received[0]["result"]["protocolVersion"] == 1
        state = await within(client.new_session("/tmp"))
        result = await within(client.prompt(state.session_id, "echo v1"))
        assert result.stop_reason == "end_turn"
        kinds = {u["sessionUpdate"] for u in updates(wire)}
        assert "state_update" not in kinds and "agent_message_chunk" in kinds
        prompt_answer = [m["result"] for m in wire.received if "stopReason" in m.get("result", {})]
        assert prompt_answer == [{"stopReason": "end_turn"}]
    SchemaValidator(official_schema).validate_conversation(wire.sent, wire.received)


async def test_an_app_that_does_not_opt_in_answers_1_to_a_client_offering_2(
    official_schema: dict[str, Any],
) -> None:
    app, _ = build_app(v2=False)
    async with connected(app, protocol=2) as (client, wire):
        assert wire.sent[0]["params"]["protocolVersion"] == 2
        answer = wire.received[0]["result"]
        assert answer["protocolVersion"] == 1 and "agentCapabilities" in answer
        state = await within(client.new_session("/tmp"))
        assert (await within(client.prompt(state.session_id, "echo v1"))).stop_reason == "end_turn"
    SchemaValidator(official_schema).validate_conversation(wire.sent, wire.received)


async def initialize_raw(app: AgentApp, version: int) -> dict[str, Any]:
    """The app's answer to a bare ``initialize`` asking for ``version``."""
    a, b = memory_pair()
    side = app.connect(a)
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}
    try:
        await b.send(json.dumps({**request, "params": {"protocolVersion": version}}).encode())
        reply = await within(b.receive())
    finally:
        await side.close()
    assert isinstance(reply, bytes)
    result: dict[str, Any] = json.loads(reply)["result"]
    return result


@pytest.mark.parametrize("asked", [3, 65535])
async def test_a_v1_client_asking_a_later_version_of_a_v2_app_gets_v1(
    asked: int, official_schema: dict[str, Any]
) -> None:
    """INIT-009: the draft goes only to a client asking for exactly 2. A v1 client may ask
    for more than it speaks and expect the newest *supported* version: v1, in v1's shape."""
    answer = await initialize_raw(build_app()[0], asked)
    assert answer["protocolVersion"] == 1
    assert "agentCapabilities" in answer and "agentInfo" in answer and "info" not in answer
    SchemaValidator(official_schema).validate_conversation(
        [{"jsonrpc": "2.0", "id": 1, "result": answer}],
        [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}],
    )


async def test_an_app_that_made_v2_its_default_answers_2_to_a_later_version() -> None:
    """``v2_default=True`` is the author's explicit choice (needs ``v2=True``)."""
    answer = await initialize_raw(build_app(v2_default=True)[0], 65535)
    assert answer["protocolVersion"] == 2 and "info" in answer
    with pytest.raises(ValueError, match="v2_default"):
        AgentApp("x", v2_default=True)


@pytest.mark.slow  # a fresh Python process
def test_an_app_that_does_not_opt_in_never_loads_the_v2_models() -> None:
    code = (
        "import sys\n"
        "from acpwire.agent.app import AgentApp\n"
        "from acpwire.transports import memory_pair\n"
        "app = AgentApp('v1-only')\n"
        "a, _ = memory_pair()\n"
        "app.connection(app.agent(), a)\n"
        "print(sorted(m for m in sys.modules if m.startswith(('acpwire.schema.v2', 'acpwire.agent.app_v2', 'acpwire.agent.v2'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


async def test_a_running_v2_turn_is_cancelled_when_the_connection_ends() -> None:
    """The v2 turn outlives its prompt request: the connection's end still stops it."""
    app, slow = build_app()
    async with connected(app) as (client, _):
        state = await within(client.new_session("/tmp"))
        turn = asyncio.ensure_future(client.prompt(state.session_id, "slow"))
        await within(slow.started.wait())
    await within(slow.cancelled.wait())
    turn.cancel()
