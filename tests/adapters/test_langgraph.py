"""A compiled LangGraph graph served by acpwire.adapters.langgraph, its model one of
LangChain's fake chat models (GenericFakeChatModel, taught to stream tool calls): what a
client sees of streamed text, tool calls, interrupts answered as permission requests
and questions, a file written through the client, a cancelled run, a framework error
and a thread continued after a restart."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langgraph", reason="the langgraph extra is not installed (it needs Python 3.11+)"
)

from _app_harness import TestClient, wired
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt
from pydantic import Field
from waiting import TIMEOUT

from acpwire.adapters.langgraph import STATE_KEY, agent_app, client_tools
from acpwire.protocol.errors import RequestError
from acpwire.testing import SchemaValidator


class ScriptedChatModel(GenericFakeChatModel):
    """GenericFakeChatModel, whose stream drops tool calls, streaming them as one chunk;
    ``seen`` keeps the messages of each call."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _stream(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Iterator[Any]:
        self.seen.append(list(messages))
        message = next(self.messages)
        if isinstance(message, AIMessage) and message.tool_calls:
            chunk = AIMessageChunk(
                content="",
                tool_call_chunks=[
                    {"name": c["name"], "args": _json(c["args"]), "id": c["id"], "index": i}
                    for i, c in enumerate(message.tool_calls)
                ],
            )
            yield ChatGenerationChunk(message=chunk)
            return
        self.messages = iter([message, *self.messages])
        yield from super()._stream(messages, *args, **kwargs)


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


def tool_call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def react_graph(model: ScriptedChatModel, tools: list[Any], **compile: Any) -> Any:
    """model -> tools -> model ... until the model answers without a tool call."""

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(**compile)


def final_status(updates: list[dict[str, Any]], call_id: str) -> str | None:
    status = None
    for u in updates:
        if u["toolCallId"] == call_id and "status" in u:
            status = u["status"]
    return status


async def test_model_chunks_stream_as_message_and_thought_chunks(
    project: Path, schema_validator: SchemaValidator
) -> None:
    answer = AIMessage("Hello there, world", additional_kwargs={"reasoning_content": "Hmm."})
    model = ScriptedChatModel(messages=iter([answer]))
    client = TestClient(project)
    async with wired(agent_app(react_graph(model, [])), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        result = await w.agent.prompt(sid, "hi")
    assert result.stop_reason == "end_turn"
    assert client.texts(sid) == ["Hello", " ", "there,", " ", "world"]
    assert client.texts(sid, "agent_thought_chunk") == ["Hmm."]


async def test_a_tool_node_run_is_a_tool_call_with_its_result(
    project: Path, schema_validator: SchemaValidator
) -> None:
    @tool
    def add_numbers(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    model = ScriptedChatModel(
        messages=iter([tool_call("add_numbers", {"a": 2, "b": 3}, "c1"), "It is 5."])
    )
    client = TestClient(project)
    async with wired(agent_app(react_graph(model, [add_numbers])), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "add")
    updates = client.tool_updates(sid)
    assert updates[0]["title"] == "add_numbers" and updates[0]["rawInput"] == {"a": 2, "b": 3}
    assert final_status(updates, updates[0]["toolCallId"]) == "completed"
    assert updates[-1]["content"][-1]["content"]["text"] == "5"
    assert "".join(client.texts(sid)) == "It is 5."


def approval_graph(ran: list[str]) -> Any:
    """A node that asks before it acts, with interrupt()."""

    def deploy(state: MessagesState) -> dict[str, Any]:
        if interrupt({"name": "deploy", "title": "Deploy to production?"}):
            ran.append("deployed")
            return {"messages": [AIMessage(content="Deployed.")]}
        return {"messages": [AIMessage(content="Not deployed.")]}

    builder = StateGraph(MessagesState)
    builder.add_node("deploy", deploy)
    builder.add_edge(START, "deploy")
    builder.add_edge("deploy", END)
    return builder.compile()


@pytest.mark.parametrize(
    ("answer", "said"), [("allow_once", "Deployed."), ("reject_once", "Not deployed.")]
)
async def test_an_interrupt_asks_the_user_and_the_graph_resumes_with_the_answer(
    project: Path, schema_validator: SchemaValidator, answer: str, said: str
) -> None:
    ran: list[str] = []
    client = TestClient(project, permission=answer)
    async with wired(agent_app(approval_graph(ran)), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        result = await w.agent.prompt(sid, "ship it")
    assert result.stop_reason == "end_turn"
    assert ran == (["deployed"] if answer == "allow_once" else [])
    (asked,) = client.permission_requests
    assert asked.tool_call.title == "Deploy to production?"
    updates = client.tool_updates(sid)
    expected = "completed" if answer == "allow_once" else "failed"
    assert final_status(updates, updates[0]["toolCallId"]) == expected
    assert client.texts(sid) == [said]


@pytest.mark.parametrize(
    ("answer", "status"), [("allow_once", "completed"), ("reject_once", "failed")]
)
async def test_an_interrupt_inside_a_tool_is_asked_on_that_tools_own_call(
    project: Path, schema_validator: SchemaValidator, answer: str, status: str
) -> None:
    ran: list[str] = []

    @tool
    def deploy(service: str) -> str:
        """Deploy a service."""
        if not interrupt({"name": "deploy", "title": f"Deploy {service}?"}):
            return "rejected"
        ran.append(service)
        return "deployed"

    model = ScriptedChatModel(messages=iter([tool_call("deploy", {"service": "web"}, "d1"), "ok"]))
    client = TestClient(project, permission=answer)
    async with wired(agent_app(react_graph(model, [deploy])), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "ship")
    assert ran == (["web"] if answer == "allow_once" else [])
    updates = client.tool_updates(sid)
    assert len({u["toolCallId"] for u in updates}) == 1  # one call, asked about, run again
    assert [u.get("status") for u in updates] == (
        ["pending", None, "in_progress", "completed"]
        if answer == "allow_once"
        else ["pending", None, "failed"]
    )
    (asked,) = client.permission_requests
    assert asked.tool_call.title == "Deploy web?" and asked.tool_call.status == "pending"
    assert final_status(updates, updates[0]["toolCallId"]) == status


async def test_a_question_interrupt_is_asked_as_a_form_and_its_answer_resumes_the_graph(
    project: Path, schema_validator: SchemaValidator
) -> None:
    def ask(state: MessagesState) -> dict[str, Any]:
        name = interrupt("What is your name?")
        return {"messages": [AIMessage(content=f"Hello, {name}.")]}

    builder = StateGraph(MessagesState)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    client = TestClient(project, elicitation_answer={"answer": "Ada"})
    async with wired(agent_app(builder.compile()), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "greet me")
    assert client.texts(sid) == ["Hello, Ada."]


async def test_a_file_written_through_the_client_is_shown_as_a_diff_first(
    project: Path, schema_validator: SchemaValidator
) -> None:
    model = ScriptedChatModel(
        messages=iter(
            [tool_call("write_text_file", {"path": "notes.txt", "content": "new\n"}, "w"), "ok"]
        )
    )
    client = TestClient(project, permission="allow_once")
    graph = react_graph(model, client_tools())
    async with wired(agent_app(graph), client, schema_validator) as w:
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


async def test_cancel_stops_the_running_node_and_the_turn_ends_cancelled(
    project: Path, schema_validator: SchemaValidator
) -> None:
    waiting, stopped = asyncio.Event(), asyncio.Event()

    async def slow(state: MessagesState) -> dict[str, Any]:
        try:
            waiting.set()
            await asyncio.Event().wait()  # a node that never finishes
        finally:
            stopped.set()
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("slow", slow)
    builder.add_edge(START, "slow")
    builder.add_edge("slow", END)
    client = TestClient(project)
    async with wired(agent_app(builder.compile()), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "go"))
        await asyncio.wait_for(waiting.wait(), TIMEOUT)
        await w.agent.cancel(sid)
        result = await asyncio.wait_for(prompt, TIMEOUT)
        assert result.stop_reason == "cancelled"
        assert stopped.is_set()


async def test_a_framework_error_is_a_clear_error_answer_and_the_session_goes_on(
    project: Path, schema_validator: SchemaValidator
) -> None:
    failures = iter([True, False])

    def flaky(state: MessagesState) -> dict[str, Any]:
        if next(failures):
            raise ValueError("the node exploded")
        return {"messages": [AIMessage(content="fine again")]}

    builder = StateGraph(MessagesState)
    builder.add_node("flaky", flaky)
    builder.add_edge(START, "flaky")
    builder.add_edge("flaky", END)
    client = TestClient(project)
    async with wired(agent_app(builder.compile()), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        with pytest.raises(RequestError) as failure:
            await w.agent.prompt(sid, "go")
        assert failure.value.message == "langgraph failed: ValueError: the node exploded"
        result = await w.agent.prompt(sid, "again")
    assert result.stop_reason == "end_turn"
    assert client.texts(sid) == ["fine again"]


@pytest.mark.parametrize("own_saver", [False, True])
@pytest.mark.parametrize("reopen", ["load", "resume"])
async def test_the_thread_goes_on_after_a_restart(
    project: Path,
    tmp_path: Path,
    schema_validator: SchemaValidator,
    own_saver: bool,
    reopen: str,
) -> None:
    store = tmp_path / "sessions.sqlite3"
    saver: dict[str, Any] = {"checkpointer": InMemorySaver()} if own_saver else {}
    model = ScriptedChatModel(messages=iter(["first answer"]))
    first = agent_app(react_graph(model, [], **saver), store=store)
    async with wired(first, TestClient(project), schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "first question")
    await first.aclose()

    model = ScriptedChatModel(messages=iter(["second answer"]))
    second = agent_app(react_graph(model, []), store=store)  # a new process: a new saver
    client = TestClient(project)
    async with wired(second, client, schema_validator) as w:
        if reopen == "load":
            await w.agent.load_session(sid, str(project))
            assert "".join(client.texts(sid)) == "first answer"  # replayed
        else:  # resumed: nothing replayed, the model still sees it all
            await w.agent.resume_session(sid, str(project))
        await w.agent.prompt(sid, "second question")
    (seen,) = model.seen
    assert [m.text for m in seen] == ["first question", "first answer", "second question"]
    record = await second.store.get(sid)
    assert record is not None and record.meta["state"][STATE_KEY]["checkpoints"]
