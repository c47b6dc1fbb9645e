"""An OpenAI Agents SDK Agent served by acpwire.adapters.openai_agents, driven with the
SDK's own ScriptedModel (its Model interface, no network): what a client sees of text,
reasoning, tool calls with and without the user's approval, a handoff, a file written
through the client, a cancelled run, a framework error and a conversation continued
after a restart."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="the openai-agents extra is not installed")

from _app_harness import TestClient, wired
from agents import Agent, function_tool
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from openai.types.responses import (
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
    ResponseTextDeltaEvent,
)
from openai.types.responses.response_reasoning_item import Summary
from waiting import TIMEOUT

from acpwire.adapters.openai_agents import STATE_KEY, agent_app
from acpwire.protocol.errors import RequestError
from acpwire.testing import SchemaValidator


def final_status(updates: list[dict[str, Any]], call_id: str) -> str | None:
    status = None
    for u in updates:
        if u["toolCallId"] == call_id and "status" in u:
            status = u["status"]
    return status


def pieces(*texts: str) -> ResponseOutputMessage:
    """One assistant message in several parts: the scripted model streams one delta each."""
    return ResponseOutputMessage(
        id="m1",
        type="message",
        role="assistant",
        status="completed",
        content=[
            ResponseOutputText(text=t, type="output_text", annotations=[], logprobs=[])
            for t in texts
        ],
    )


async def test_text_and_reasoning_stream_as_message_and_thought_chunks(
    project: Path, schema_validator: SchemaValidator
) -> None:
    reasoning = ResponseReasoningItem(
        id="r1", type="reasoning", summary=[Summary(text="Let me think.", type="summary_text")]
    )
    model = ScriptedModel([[reasoning, pieces("Hello", ", world")]])
    client = TestClient(project)
    async with wired(agent_app(Agent("a", model=model)), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        result = await w.agent.prompt(sid, "hi")
    assert result.stop_reason == "end_turn"
    assert client.texts(sid, "agent_thought_chunk") == ["Let me think."]
    assert client.texts(sid) == ["Hello", ", world"]  # one chunk per delta, as they came


def approval_agent(ran: list[tuple[int, int]], model: ScriptedModel) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def add_numbers(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    return Agent("adder", model=model, tools=[add_numbers])


async def test_a_tool_needing_approval_runs_once_the_user_allows_it(
    project: Path, schema_validator: SchemaValidator
) -> None:
    ran: list[tuple[int, int]] = []
    model = ScriptedModel(
        [[function_call("add_numbers", {"a": 2, "b": 3}, call_id="c1")], [assistant_message("5")]]
    )
    client = TestClient(project, permission="allow_once")
    async with wired(agent_app(approval_agent(ran, model)), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        result = await w.agent.prompt(sid, "add")
    assert result.stop_reason == "end_turn"
    assert ran == [(2, 3)]
    updates = client.tool_updates(sid)
    starts = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert len(starts) == 1 and starts[0]["rawInput"] == {"a": 2, "b": 3}
    (asked,) = client.permission_requests
    assert asked.tool_call.tool_call_id == starts[0]["toolCallId"]
    assert final_status(updates, starts[0]["toolCallId"]) == "completed"
    assert updates[-1]["rawOutput"] == 5
    assert "".join(client.texts(sid)) == "5"


async def test_a_rejected_tool_does_not_run_and_the_model_is_told(
    project: Path, schema_validator: SchemaValidator
) -> None:
    ran: list[tuple[int, int]] = []
    model = ScriptedModel(
        [[function_call("add_numbers", {"a": 2, "b": 3}, call_id="c1")], [assistant_message("ok")]]
    )
    client = TestClient(project, permission="reject_once")
    async with wired(agent_app(approval_agent(ran, model)), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        result = await w.agent.prompt(sid, "add")
    assert result.stop_reason == "end_turn"
    assert ran == []
    updates = client.tool_updates(sid)
    assert final_status(updates, updates[0]["toolCallId"]) == "failed"
    assert model.last_call is not None
    outputs = [i for i in model.last_call.input if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == ["c1"]
    assert "rejected" in str(outputs[0]["output"])
    assert "".join(client.texts(sid)) == "ok"


async def test_a_handoff_is_shown_as_a_tool_call_naming_who_takes_over(
    project: Path, schema_validator: SchemaValidator
) -> None:
    expert_model = ScriptedModel([[assistant_message("expert here")]])
    expert = Agent("expert", model=expert_model, handoff_description="knows everything")
    triage_model = ScriptedModel([[function_call("transfer_to_expert", {}, call_id="h1")]])
    triage = Agent("triage", model=triage_model, handoffs=[expert])
    client = TestClient(project)
    async with wired(agent_app(triage), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "hard question")
    updates = client.tool_updates(sid)
    assert updates[0]["title"] == "Hand off: transfer_to_expert"
    assert final_status(updates, updates[0]["toolCallId"]) == "completed"
    assert updates[-1]["content"][-1]["content"]["text"] == "expert takes over."
    assert "".join(client.texts(sid)) == "expert here"


async def test_a_file_written_through_the_client_is_shown_as_a_diff_first(
    project: Path, schema_validator: SchemaValidator
) -> None:
    model = ScriptedModel(
        [
            [
                function_call(
                    "write_text_file", {"path": "notes.txt", "content": "new\n"}, call_id="w"
                )
            ],
            [assistant_message("written")],
        ]
    )
    client = TestClient(project, permission="allow_once")
    async with wired(agent_app(Agent("w", model=model)), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "edit")
    assert (project / "notes.txt").read_text() == "new\n"
    updates = client.tool_updates(sid)
    starts = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert [s["kind"] for s in starts] == ["edit"]  # reported once, by the tool itself
    diffs = [c for u in updates for c in u.get("content") or [] if c["type"] == "diff"]
    assert diffs[0]["oldText"] == "alpha\nbeta\n" and diffs[0]["newText"] == "new\n"
    (asked,) = client.permission_requests
    assert asked.tool_call.tool_call_id == starts[0]["toolCallId"]
    assert final_status(updates, starts[0]["toolCallId"]) == "completed"


async def test_cancel_stops_the_model_stream_and_the_turn_ends_cancelled(
    project: Path, schema_validator: SchemaValidator
) -> None:
    waiting, stopped = asyncio.Event(), asyncio.Event()

    async def stream(call: ModelCall) -> AsyncIterator[Any]:
        yield ResponseTextDeltaEvent(
            type="response.output_text.delta",
            item_id="m1",
            output_index=0,
            content_index=0,
            delta="thinking about it",
            logprobs=[],
            sequence_number=0,
        )
        try:
            waiting.set()
            await asyncio.Event().wait()  # a model that never finishes
        finally:
            stopped.set()

    model = ScriptedModel([ModelStep.stream(stream)])
    client = TestClient(project)
    async with wired(agent_app(Agent("slow", model=model)), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "go"))
        await asyncio.wait_for(waiting.wait(), TIMEOUT)
        await w.agent.cancel(sid)
        result = await asyncio.wait_for(prompt, TIMEOUT)
        assert result.stop_reason == "cancelled"
        await asyncio.wait_for(stopped.wait(), TIMEOUT)  # the SDK's run task was stopped too
    assert client.texts(sid) == ["thinking about it"]


async def test_a_framework_error_is_a_clear_error_answer_and_the_session_goes_on(
    project: Path, schema_validator: SchemaValidator
) -> None:
    model = ScriptedModel([ValueError("the model exploded"), [assistant_message("fine again")]])
    client = TestClient(project)
    async with wired(agent_app(Agent("e", model=model)), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        with pytest.raises(RequestError) as failure:
            await w.agent.prompt(sid, "go")
        assert failure.value.message == "openai-agents failed: ValueError: the model exploded"
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
    first = agent_app(
        Agent("m", model=ScriptedModel([[assistant_message("first answer")]])), store=store
    )
    async with wired(first, TestClient(project), schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "first question")
    await first.aclose()

    model = ScriptedModel([[assistant_message("second answer")]])
    second = agent_app(Agent("m", model=model), store=store)
    client = TestClient(project)
    async with wired(second, client, schema_validator) as w:
        if reopen == "load":
            await w.agent.load_session(sid, str(project))
            assert client.texts(sid) == ["first answer"]  # replayed
        else:  # resumed: nothing replayed, the model still sees it all
            await w.agent.resume_session(sid, str(project))
        await w.agent.prompt(sid, "second question")
    assert model.last_call is not None
    seen = model.last_call.input
    assert [i["content"] for i in seen if i.get("role") == "user"] == [
        "first question",
        "second question",
    ]
    assert "first answer" in str(seen)
    record = await second.store.get(sid)
    assert record is not None and len(record.meta["state"][STATE_KEY]) == 4
