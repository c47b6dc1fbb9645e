"""ToolkitClient(protocol=2): the same client whichever version the agent chose. Against
an in-process v2 agent its v1-shaped API works (prompt() returns the stop reason of the
idle state that ends the turn, the session state folds v2's updates); against a v1 agent
it falls back to v1. Every message is validated against the negotiated version's schema."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.agent.connection import Agent, AgentSideConnection
from acpwire.agent.v2 import AgentV2
from acpwire.client.permissions import AllowAll
from acpwire.client.state import MessageView, ToolCallView
from acpwire.client.toolkit import ToolkitClient
from acpwire.protocol.errors import RequestError, VersionMismatchError
from acpwire.schema import v2
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports import memory_pair


class ScriptedV2Agent(AgentV2):
    """Each prompt line is a command (as the interop peers): echo, think, tool, plan,
    permission, slow; the turn ends idle with end_turn (or cancelled)."""

    def __init__(self) -> None:
        self.cancel_event: dict[str, asyncio.Event] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.turns = 0

    async def initialize(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        return v2.InitializeResponse(
            protocol_version=2,
            info=v2.Implementation(name="scripted-v2", title="Scripted v2", version="1"),
            capabilities=v2.AgentCapabilities(
                session=v2.SessionCapabilities(
                    prompt=v2.PromptCapabilities(
                        embedded_context=v2.PromptEmbeddedContextCapabilities()
                    )
                )
            ),
            auth_methods=[v2.AuthMethodAgent(method_id="token", name="Token")],
        )

    async def new_session(self, params: v2.NewSessionRequest) -> v2.NewSessionResponse:
        return v2.NewSessionResponse(session_id="s2")

    async def prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        self.turns += 1
        message_id = f"user-{self.turns}"
        await self.client.session_update(
            params.session_id, v2.UserMessage(message_id=message_id, content=params.prompt)
        )
        task = asyncio.ensure_future(self.turn(params, self.turns))
        self.tasks.add(task)
        return v2.PromptResponse(message_id=message_id)

    async def turn(self, params: v2.PromptRequest, n: int) -> None:
        sid = params.session_id
        send = self.client.session_update
        cancelled = self.cancel_event.setdefault(sid, asyncio.Event())
        cancelled.clear()
        await send(sid, v2.SessionStateUpdate(state="running"))
        text = "".join(b.text for b in params.prompt if isinstance(b, v2.TextContent))
        for line in text.splitlines():
            name, _, rest = line.partition(" ")
            if name == "echo":
                await send(
                    sid, v2.AgentMessageChunk(message_id=f"a{n}", content=v2.TextContent(text=rest))
                )
            elif name == "replace":
                await send(
                    sid, v2.AgentMessage(message_id=f"a{n}", content=[v2.TextContent(text=rest)])
                )
            elif name == "think":
                await send(
                    sid, v2.AgentThoughtChunk(message_id=f"t{n}", content=v2.TextContent(text=rest))
                )
            elif name == "plan":
                await send(
                    sid,
                    v2.PlanUpdate(
                        plan=v2.PlanItems(
                            plan_id="p",
                            entries=[
                                v2.PlanEntry(content="step", priority="high", status="pending")
                            ],
                        )
                    ),
                )
            elif name == "tool":
                await send(
                    sid,
                    v2.ToolCallProgress(
                        tool_call_id="c1", title="Read", kind="read", status="pending"
                    ),
                )
                await send(
                    sid,
                    v2.ToolCallContentChunk(
                        tool_call_id="c1", content=v2.Content(content=v2.TextContent(text="data"))
                    ),
                )
                await send(
                    sid,
                    v2.ToolCallContentChunk(
                        tool_call_id="c1", content=v2.Diff(changes=[v2.DiffModify(path="/x")])
                    ),
                )
                await send(sid, v2.ToolCallProgress(tool_call_id="c1", status="completed"))
            elif name == "permission":
                await send(sid, v2.SessionStateUpdate(state="requires_action"))
                answer = await self.client.request_permission(
                    sid,
                    "Write /x?",
                    [v2.PermissionOption(option_id="ok", name="OK", kind="allow_once")],
                    subject=v2.ToolCallPermissionSubject(
                        tool_call=v2.ToolCallUpdate(tool_call_id="c1", title="Write")
                    ),
                )
                outcome = answer.outcome
                said = (
                    outcome.option_id if isinstance(outcome, v2.SelectedPermissionOutcome) else "no"
                )
                await send(sid, v2.SessionStateUpdate(state="running"))
                await send(
                    sid, v2.AgentMessageChunk(message_id=f"a{n}", content=v2.TextContent(text=said))
                )
            elif name == "slow":
                await cancelled.wait()
        stop = "cancelled" if cancelled.is_set() else "end_turn"
        await send(sid, v2.SessionStateUpdate(state="idle", stop_reason=stop))

    async def cancel(self, params: v2.CancelSessionNotification) -> None:
        self.cancel_event.setdefault(params.session_id, asyncio.Event()).set()


class PlainV1Agent(Agent):
    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id="s1")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        await self.client.session_update(
            params.session_id, s.AgentMessageChunk(content=s.TextContent(text="v1 here"))
        )
        return s.PromptResponse(stop_reason="end_turn")


@asynccontextmanager
async def toolkit(*, serve_v2: bool = True) -> AsyncIterator[tuple[ToolkitClient, WireLog]]:
    a, b = memory_pair()
    wire = WireLog()
    agent_side = AgentSideConnection(PlainV1Agent(), a, v2=ScriptedV2Agent() if serve_v2 else None)
    agent_side.start()
    client = ToolkitClient(
        protocol=2, permissions=AllowAll(), read_files=False, write_files=False, terminals=False
    )
    client.connect(RecordingTransport(b, wire))
    try:
        await asyncio.wait_for(client.initialize(), TIMEOUT)
        yield client, wire
    finally:
        await client.close()
        await agent_side.close()


async def within(awaitable: Any) -> Any:
    return await asyncio.wait_for(awaitable, TIMEOUT)


def texts(state: Any) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in state.transcript if isinstance(m, MessageView)]


async def test_a_v2_turn_returns_the_stop_reason_of_the_idle_state_and_the_state_reads_as_v1(
    official_v2_schema: dict[str, Any],
) -> None:
    async with toolkit() as (client, wire):
        answer = client.agent.initialize_response
        assert answer is not None and answer.protocol_version == 2
        assert (
            isinstance(answer.agent_info, s.Implementation)
            and answer.agent_info.title == "Scripted v2"
        )
        assert [m.id for m in answer.auth_methods] == ["token"]  # type: ignore[union-attr]
        assert client.supports("session/load") and client.supports("session/resume")
        state = await within(client.new_session("/tmp"))
        result = await within(client.prompt(state.session_id, "echo hello\nthink hm\nplan\ntool"))
        assert result.stop_reason == "end_turn"
        assert not state.turn_running and state.stop_reason == "end_turn"
        # The agent's echo of the prompt took over the local record: no double.
        assert texts(state) == [
            ("user", "echo hello\nthink hm\nplan\ntool"),
            ("agent", "hello"),
            ("thought", "hm"),
        ]
        assert state.messages[0].message_id == "user-1"
        assert [e.content for e in state.plan] == ["step"]
        call = state.tool_calls["c1"]
        assert isinstance(call, ToolCallView) and call.status == "completed" and call.kind == "read"
        assert isinstance(call.content[0], s.Content)
        assert isinstance(call.content[1], s.UnknownToolCallContent)  # a v2 diff, kept whole
        assert state.foreground == "idle"

        result = await within(client.prompt(state.session_id, "replace rewritten"))
        assert texts(state)[-1] == ("agent", "rewritten")
    SchemaValidator(official_v2_schema).validate_conversation(wire.sent, wire.received)
    SchemaValidator(official_v2_schema).validate_conversation(wire.received, wire.sent)


async def test_a_v2_permission_request_reaches_the_policy_as_a_tool_call_and_the_answer_goes_back_v2() -> (
    None
):
    async with toolkit() as (client, _):
        state = await within(client.new_session("/tmp"))
        await within(client.prompt(state.session_id, "permission"))
        assert texts(state)[-1] == ("agent", "ok")
        assert state.tool_calls["c1"].title == "Write"


async def test_cancelling_a_v2_turn_ends_it_cancelled() -> None:
    async with toolkit() as (client, _):
        state = await within(client.new_session("/tmp"))
        turn = asyncio.ensure_future(client.prompt(state.session_id, "slow"))
        await wait_until(lambda: state.foreground == "running", "the turn runs")
        await client.cancel(state.session_id)
        assert (await within(turn)).stop_reason == "cancelled"


async def test_what_v2_removed_is_refused_before_anything_is_sent() -> None:
    async with toolkit() as (client, wire):
        state = await within(client.new_session("/tmp"))
        sent = len(wire.sent)
        with pytest.raises(VersionMismatchError, match="session/set_mode is not part of ACP v2"):
            await client.set_mode(state.session_id, "code")
        assert len(wire.sent) == sent


async def test_offering_v2_to_a_v1_agent_falls_back_and_the_client_is_a_v1_client(
    official_schema: dict[str, Any],
) -> None:
    async with toolkit(serve_v2=False) as (client, wire):
        answer = client.agent.initialize_response
        assert answer is not None and answer.protocol_version == 1
        state = await within(client.new_session("/tmp"))
        result = await within(client.prompt(state.session_id, "hi"))
        assert result.stop_reason == "end_turn"
        assert texts(state) == [("user", "hi"), ("agent", "v1 here")]
    SchemaValidator(official_schema).validate_conversation(wire.sent, wire.received)


def test_a_protocol_other_than_1_or_2_is_refused() -> None:
    with pytest.raises(ValueError, match="protocol must be 1 or 2"):
        ToolkitClient(protocol=3)


def _replies(capture: Path) -> dict[str, list[dict[str, Any]]]:
    """What the captured agent sent after each client request, by method; the answer
    first (its id is the request's)."""
    out: dict[str, list[dict[str, Any]]] = {}
    current: list[dict[str, Any]] | None = None
    for line in capture.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        message = item.get("msg")
        if item.get("dir") == "client->agent" and isinstance(message, dict) and "id" in message:
            current = out.setdefault(message["method"], [])
        elif item.get("dir") == "agent->client" and current is not None:
            current.append(message)
    return out


async def _replay(transport: Any, replies: dict[str, list[dict[str, Any]]]) -> None:
    """A stand-in for the captured agent: answers each request with what the real one
    sent (ids rewritten), and ``initialize`` with protocol version 2 in v1's shape, as
    claude-agent-acp answers a client asking for a newer version."""
    while True:
        request = json.loads(await transport.receive())
        for message in replies.get(request.get("method"), []):
            out = dict(message)
            if "id" in out and "method" not in out:
                out["id"] = request["id"]
                if request["method"] == "initialize":
                    out["result"] = {**out["result"], "protocolVersion": 2}
            await transport.send(json.dumps(out).encode())


async def test_an_agent_answering_2_in_v1_shape_gets_a_clean_v1_session_up_to_authentication(
    captures_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    replies = _replies(captures_dir / "claude-agent-acp.jsonl")
    a, b = memory_pair()
    agent = asyncio.ensure_future(_replay(a, replies))
    client = ToolkitClient(protocol=2, permissions=AllowAll())
    client.connect(b)
    try:
        answer = await within(client.initialize())
        assert client.connection is not None and client.connection.version == 1
        assert isinstance(answer.agent_info, s.Implementation)
        assert answer.agent_info.name == "@agentclientprotocol/claude-agent-acp"
        assert [m.id for m in answer.auth_methods] == ["claude-ai-login", "console-login"]  # type: ignore[union-attr]
        assert "in v1's shape" in caplog.text
        state = await within(client.new_session("/home/dev/project"))
        assert state.current_mode_id == "auto" and state.available_modes
        with pytest.raises(RequestError) as refused:
            await within(client.prompt(state.session_id, "hello"))
        assert refused.value.code == -32000
    finally:
        agent.cancel()
        await client.close()
