"""A pydantic-ai Agent served by acpwire.adapters.pydantic_ai, driven with pydantic-ai's
own FunctionModel (a scripted, streaming model): what a client sees of text, thinking,
tool calls with and without the user's permission, a file written through the client,
a cancelled run, a framework error and a conversation continued after a restart."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "pydantic_ai", reason="the pydantic-ai extra is not installed (it needs Python 3.11+)"
)

from _app_harness import TestClient, wired
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall
from pydantic_ai.models.function import FunctionModel as PydanticFunctionModel
from waiting import TIMEOUT

from acpwire.adapters.pydantic_ai import STATE_KEY, agent_app
from acpwire.protocol.errors import RequestError
from acpwire.testing import SchemaValidator

Script = list[Any]
"""Per model request, what it streams: text, DeltaThinkingPart or DeltaToolCall dicts."""


def model(*responses: Script, seen: list[list[ModelMessage]] | None = None) -> Any:
    """A FunctionModel answering the n-th request of each run with ``responses[n]``."""

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        if seen is not None:
            seen.append(list(messages))
        last_request = max(i for i, m in enumerate(messages) if _is_user_prompt(m))
        step = sum(isinstance(m, ModelResponse) for m in messages[last_request:])
        for item in responses[min(step, len(responses) - 1)]:
            yield item

    return PydanticFunctionModel(stream_function=stream)


def _is_user_prompt(message: ModelMessage) -> bool:
    return isinstance(message, ModelRequest) and any(
        p.part_kind == "user-prompt" for p in message.parts
    )


def call(name: str, args: str, call_id: str) -> dict[int, DeltaToolCall]:
    return {0: DeltaToolCall(name=name, json_args=args, tool_call_id=call_id)}


def tool_updates(client: TestClient, sid: str) -> list[dict[str, Any]]:
    return client.tool_updates(sid)


def final_status(updates: list[dict[str, Any]], call_id: str) -> str | None:
    status = None
    for u in updates:
        if u["toolCallId"] == call_id and "status" in u:
            status = u["status"]
    return status


async def test_text_and_thinking_stream_as_message_and_thought_chunks(
    project: Path, schema_validator: SchemaValidator
) -> None:
    agent = Agent(
        model(
            [
                {0: DeltaThinkingPart(content="Let me ")},
                {0: DeltaThinkingPart(content="think.")},
                "Hello",
                ", world",
            ]
        )
    )
    client = TestClient(project)
    async with wired(agent_app(agent), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        result = await w.agent.prompt(sid, "hi")
    assert result.stop_reason == "end_turn"
    assert client.texts(sid, "agent_thought_chunk") == ["Let me ", "think."]
    assert "".join(client.texts(sid)) == "Hello, world"
    assert len(client.texts(sid)) >= 2  # streamed, not sent as one piece at the end
    kinds = [k for k in client.kinds(sid) if k.startswith("agent_")]
    assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk")


def approval_agent(ran: list[tuple[int, int]], seen: list[list[ModelMessage]]) -> Agent[None, str]:
    agent = Agent(
        model([call("add_numbers", '{"a": 2, "b": 3}', "c1")], ["done"], seen=seen),
    )

    @agent.tool_plain(requires_approval=True)
    def add_numbers(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    return agent


async def test_a_tool_needing_approval_runs_once_the_user_allows_it(
    project: Path, schema_validator: SchemaValidator
) -> None:
    ran: list[tuple[int, int]] = []
    seen: list[list[ModelMessage]] = []
    client = TestClient(project, permission="allow_once")
    async with wired(agent_app(approval_agent(ran, seen)), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        result = await w.agent.prompt(sid, "add")
    assert result.stop_reason == "end_turn"
    assert ran == [(2, 3)]
    updates = tool_updates(client, sid)
    start = updates[0]
    assert start["sessionUpdate"] == "tool_call" and start["status"] == "pending"
    assert start["rawInput"] == {"a": 2, "b": 3}
    (asked,) = client.permission_requests
    assert asked.tool_call.tool_call_id == start["toolCallId"]  # asked on the call's own report
    assert final_status(updates, start["toolCallId"]) == "completed"
    assert updates[-1]["content"] == [{"type": "content", "content": {"type": "text", "text": "5"}}]
    assert updates[-1]["rawOutput"] == 5


async def test_a_rejected_tool_does_not_run_and_the_model_is_told_it_was_denied(
    project: Path, schema_validator: SchemaValidator
) -> None:
    ran: list[tuple[int, int]] = []
    seen: list[list[ModelMessage]] = []
    client = TestClient(project, permission="reject_once")
    async with wired(agent_app(approval_agent(ran, seen)), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        result = await w.agent.prompt(sid, "add")
    assert result.stop_reason == "end_turn"
    assert ran == []
    updates = tool_updates(client, sid)
    assert final_status(updates, updates[0]["toolCallId"]) == "failed"
    returns = [
        p
        for m in seen[-1]
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]
    assert [(r.tool_name, r.outcome) for r in returns] == [("add_numbers", "denied")]
    assert "".join(client.texts(sid)) == "done"  # the turn went on


async def test_a_file_written_through_the_client_is_shown_as_a_diff_first(
    project: Path, schema_validator: SchemaValidator
) -> None:
    agent = Agent(
        model(
            [call("write_text_file", '{"path": "notes.txt", "content": "alpha\\ngamma\\n"}', "w1")],
            ["written"],
        )
    )
    client = TestClient(project, permission="allow_once")
    async with wired(agent_app(agent), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "edit notes")
    assert (project / "notes.txt").read_text() == "alpha\ngamma\n"
    updates = tool_updates(client, sid)
    (start,) = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert start["kind"] == "edit"
    diffs = [c for u in updates for c in u.get("content") or [] if c["type"] == "diff"]
    assert diffs[0] == {
        "type": "diff",
        "path": str(project / "notes.txt"),
        "oldText": "alpha\nbeta\n",
        "newText": "alpha\ngamma\n",
    }
    (asked,) = client.permission_requests
    assert asked.tool_call.tool_call_id == start["toolCallId"]
    assert final_status(updates, start["toolCallId"]) == "completed"


async def test_a_rejected_write_leaves_the_file_and_tells_the_model(
    project: Path, schema_validator: SchemaValidator
) -> None:
    seen: list[list[ModelMessage]] = []
    agent = Agent(
        model(
            [call("write_text_file", '{"path": "notes.txt", "content": "x"}', "w1")],
            ["ok"],
            seen=seen,
        )
    )
    client = TestClient(project, permission="reject_once")
    async with wired(agent_app(agent), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "edit notes")
    assert (project / "notes.txt").read_text() == "alpha\nbeta\n"
    (ret,) = [p for p in seen[-1][-1].parts if isinstance(p, ToolReturnPart)]
    assert "rejected" in str(ret.content)


async def test_cancel_stops_the_run_where_it_waits_and_the_turn_ends_cancelled(
    project: Path, schema_validator: SchemaValidator
) -> None:
    waiting, stopped = asyncio.Event(), asyncio.Event()

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        yield "thinking about it"
        try:
            waiting.set()
            await asyncio.Event().wait()  # a model that never finishes
        finally:
            stopped.set()
        yield "never"

    client = TestClient(project)
    app = agent_app(Agent(PydanticFunctionModel(stream_function=stream)))
    async with wired(app, client, schema_validator) as w:
        sid = await w.new_session(str(project))
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "go"))
        await asyncio.wait_for(waiting.wait(), TIMEOUT)
        await w.agent.cancel(sid)
        result = await asyncio.wait_for(prompt, TIMEOUT)
        assert result.stop_reason == "cancelled"
        assert stopped.is_set()  # the model's own wait was interrupted
        assert client.texts(sid) == ["thinking about it"]


async def test_a_framework_error_is_a_clear_error_answer_and_the_session_goes_on(
    project: Path, schema_validator: SchemaValidator
) -> None:
    calls = 0

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ValueError("the model exploded")
        yield "fine again"

    client = TestClient(project)
    app = agent_app(Agent(PydanticFunctionModel(stream_function=stream)))
    async with wired(app, client, schema_validator) as w:
        sid = await w.new_session(str(project))
        with pytest.raises(RequestError) as failure:
            await w.agent.prompt(sid, "go")
        assert failure.value.message == "pydantic-ai failed: ValueError: the model exploded"
        result = await w.agent.prompt(sid, "again")
    assert result.stop_reason == "end_turn"
    assert client.texts(sid) == ["fine again"]


@pytest.mark.parametrize("reopen", ["load", "resume"])
async def test_the_conversation_goes_on_after_a_restart(
    project: Path,
    tmp_path: Path,
    schema_validator: SchemaValidator,
    reopen: str,
) -> None:
    store = tmp_path / "sessions.sqlite3"
    seen: list[list[ModelMessage]] = []
    agent = Agent(model(["first answer"], seen=seen))
    first = agent_app(agent, store=store)
    async with wired(first, TestClient(project), schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "first question")
    await first.aclose()

    second = agent_app(agent, store=store)  # a new process would build the same app
    client = TestClient(project)
    async with wired(second, client, schema_validator) as w:
        listed = await w.agent.list_sessions()
        assert [x.session_id for x in listed.sessions] == [sid]
        if reopen == "load":
            await w.agent.load_session(sid, str(project))
            assert client.texts(sid) == ["first answer"]  # replayed
        else:  # resumed: nothing replayed, the model still sees it all
            await w.agent.resume_session(sid, str(project))
        await w.agent.prompt(sid, "second question")
    prompts = [
        p.content
        for m in seen[-1]
        if isinstance(m, ModelRequest)
        for p in m.parts
        if p.part_kind == "user-prompt"
    ]
    assert prompts == ["first question", "second question"]
    assert any(isinstance(m, ModelResponse) and "first answer" in str(m.parts) for m in seen[-1])


async def test_history_is_kept_as_json_in_the_session_state(project: Path) -> None:
    seen: list[list[ModelMessage]] = []
    app = agent_app(Agent(model(["one"], seen=seen)), store="memory:")
    async with wired(app, TestClient(project)) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "q")
    record = await app.store.get(sid)
    assert record is not None
    saved = record.meta["state"][STATE_KEY]
    assert [m["kind"] for m in saved] == ["request", "response"]


@pytest.mark.parametrize("tools", [True, False])
async def test_the_client_tools_are_offered_only_when_asked_and_advertised(
    project: Path, tools: bool
) -> None:
    offered: list[str] = []

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        offered.extend(t.name for t in info.function_tools)
        yield "ok"

    app = agent_app(Agent(PydanticFunctionModel(stream_function=stream)), offer_client_tools=tools)
    async with wired(app, TestClient(project, terminal=False)) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "q")
    assert offered == (["read_text_file", "write_text_file"] if tools else [])
