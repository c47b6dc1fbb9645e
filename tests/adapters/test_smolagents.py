"""smolagents agents served by acpwire.adapters.smolagents, their model a scripted callable
(a smolagents Model whose answers a test function writes): what a client sees of the
model's streamed thoughts, code steps, plans, tools asked about first, a file written
through the client, a cancelled run, a framework error and a conversation continued
after a restart."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("smolagents", reason="the smolagents extra is not installed")

from _app_harness import TestClient, wired
from smolagents import CodeAgent, Model, ToolCallingAgent, tool
from smolagents.models import (
    ChatMessage,
    ChatMessageStreamDelta,
    ChatMessageToolCallFunction,
    ChatMessageToolCallStreamDelta,
    MessageRole,
)
from waiting import TIMEOUT

from acpwire import schema
from acpwire.adapters.smolagents import STATE_KEY, agent_app
from acpwire.protocol.errors import RequestError
from acpwire.testing import SchemaValidator

Call = tuple[str, dict[str, Any]]
Reply = str | Call | list[Call]
"""Model output text, or tool calls (name, arguments) for a ToolCallingAgent."""


class ScriptedModel(Model):
    """A smolagents model answering each call with ``respond(messages)``, streamed word by
    word; ``seen`` keeps the text of each call's messages."""

    def __init__(self, respond: Callable[[list[Any]], Reply]) -> None:
        super().__init__(model_id="scripted")
        self.respond = respond
        self.seen: list[str] = []

    def _reply(self, messages: list[Any]) -> Reply:
        self.seen.append("\n".join(str(m.content) for m in messages))
        return self.respond(messages)

    def generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatMessage:
        reply = self._reply(messages)
        assert isinstance(reply, str)
        return ChatMessage(role=MessageRole.ASSISTANT, content=reply)

    def generate_stream(
        self, messages: list[Any], *args: Any, **kwargs: Any
    ) -> Iterator[ChatMessageStreamDelta]:
        reply = self._reply(messages)
        if not isinstance(reply, str):
            calls = [
                ChatMessageToolCallStreamDelta(
                    index=index,
                    id=f"call_{index}",
                    type="function",
                    function=ChatMessageToolCallFunction(name=name, arguments=json.dumps(args)),
                )
                for index, (name, args) in enumerate(reply if isinstance(reply, list) else [reply])
            ]
            yield ChatMessageStreamDelta(content="", tool_calls=calls)
            return
        words = reply.split(" ")
        for word in words[:-1]:
            yield ChatMessageStreamDelta(content=word + " ")
        yield ChatMessageStreamDelta(content=words[-1])


def script(*replies: Reply) -> ScriptedModel:
    """Answers in order, the last one again and again."""
    queue = list(replies)
    return ScriptedModel(lambda _: queue.pop(0) if len(queue) > 1 else queue[0])


def code(source: str) -> str:
    return f"Thought: I will run code.\n<code>\n{source}\n</code>"


def final_status(updates: list[dict[str, Any]], call_id: str) -> str | None:
    status = None
    for u in updates:
        if u["toolCallId"] == call_id and "status" in u:
            status = u["status"]
    return status


@tool
def add_numbers(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    ADDED.append((a, b))
    return a + b


ADDED: list[tuple[int, int]] = []


@pytest.fixture(autouse=True)
def _forget_additions() -> None:
    ADDED.clear()


async def test_thoughts_stream_code_runs_as_a_tool_call_and_the_answer_is_the_message(
    project: Path, schema_validator: SchemaValidator
) -> None:
    model = script(code("print('counting')\nx = 6 * 7"), code("final_answer(f'It is {x}.')"))
    agent = CodeAgent(tools=[], model=model, verbosity_level=0)
    client = TestClient(project)
    async with wired(agent_app(agent), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        result = await w.agent.prompt(sid, "what is six times seven?")
    assert result.stop_reason == "end_turn"
    thoughts = client.texts(sid, "agent_thought_chunk")
    assert len(thoughts) > 2 and "".join(thoughts).startswith("Thought: I will run code.")
    assert client.texts(sid) == ["It is 42."]
    updates = client.tool_updates(sid)
    first = updates[0]
    assert (first["title"], first["kind"]) == ("Run Python code", "execute")
    assert first["rawInput"] == {"code": "print('counting')\nx = 6 * 7"}
    assert final_status(updates, first["toolCallId"]) == "completed"
    logs = next(u for u in updates if u["toolCallId"] == first["toolCallId"] and "content" in u)
    assert "counting" in logs["content"][-1]["content"]["text"]


@pytest.mark.parametrize(("answer", "added"), [("allow_once", [(2, 3)]), ("reject_once", [])])
async def test_a_tool_named_in_ask_before_runs_only_if_the_user_allows_it(
    project: Path, schema_validator: SchemaValidator, answer: str, added: list[tuple[int, int]]
) -> None:
    model = script(code("x = add_numbers(a=2, b=3)\nprint(x)"), code("final_answer('done')"))
    agent = CodeAgent(tools=[add_numbers], model=model, verbosity_level=0)
    client = TestClient(project, permission=answer)
    app = agent_app(agent, ask_before=["add_numbers"])
    async with wired(app, client, schema_validator) as w:
        sid = await w.new_session(str(project))
        result = await w.agent.prompt(sid, "add")
    assert result.stop_reason == "end_turn"
    assert added == ADDED
    updates = client.tool_updates(sid)
    (asked,) = client.permission_requests
    call = next(u for u in updates if u.get("title") == "add_numbers")
    assert asked.tool_call.tool_call_id == call["toolCallId"]
    assert call["rawInput"] == {"a": 2, "b": 3}
    status = "completed" if answer == "allow_once" else "failed"
    assert final_status(updates, call["toolCallId"]) == status
    if answer == "reject_once":  # the code saw the rejection as the tool's output
        assert "The user rejected this tool call." in model.seen[-1]


async def test_parallel_calls_of_a_tool_named_in_ask_before_are_each_asked_on_their_own_call(
    project: Path, schema_validator: SchemaValidator
) -> None:
    model = script(
        [("add_numbers", {"a": 1, "b": 2}), ("add_numbers", {"a": 3, "b": 4})],
        ("final_answer", {"answer": "added"}),
    )
    agent = ToolCallingAgent(tools=[add_numbers], model=model, verbosity_level=0)
    client = TestClient(project)
    async with wired(agent_app(agent, ask_before=["add_numbers"]), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "add twice")
    assert sorted(ADDED) == [(1, 2), (3, 4)]
    updates = client.tool_updates(sid)
    starts = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert sorted(s["rawInput"]["a"] for s in starts) == [1, 3]  # two calls, no third
    asked = sorted(a.tool_call.tool_call_id for a in client.permission_requests)
    assert asked == sorted(s["toolCallId"] for s in starts)
    for start in starts:  # each call ended with the result of its own arguments
        (end,) = [u for u in updates if u["toolCallId"] == start["toolCallId"] and "rawOutput" in u]
        assert (end["status"], end["rawOutput"]) == ("completed", sum(start["rawInput"].values()))


def test_ask_before_must_name_tools_the_agent_has() -> None:
    agent = CodeAgent(tools=[], model=script("x"), verbosity_level=0)
    with pytest.raises(ValueError, match="deploy"):
        agent_app(agent, ask_before=["deploy"])


async def test_a_file_written_through_the_client_is_shown_as_a_diff_first(
    project: Path, schema_validator: SchemaValidator
) -> None:
    model = script(
        ("write_text_file", {"path": "notes.txt", "content": "new\n"}),
        ("final_answer", {"answer": "written"}),
    )
    agent = ToolCallingAgent(tools=[], model=model, verbosity_level=0)
    client = TestClient(project, permission="allow_once")
    async with wired(agent_app(agent), client, schema_validator) as w:
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
    assert client.texts(sid) == ["written"]


async def test_code_runs_a_command_in_a_client_terminal_shown_in_its_own_call(
    project: Path, schema_validator: SchemaValidator
) -> None:
    argv = ["-c", "print('from the terminal')"]
    model = script(
        code(f"print(run_command(command={sys.executable!r}, args={argv!r}))"),
        code("final_answer('ran')"),
    )
    agent = CodeAgent(tools=[], model=model, verbosity_level=0)
    client = TestClient(project, permission="allow_once")
    async with wired(agent_app(agent), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "run it")
    updates = client.tool_updates(sid)
    starts = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    # the code step, the command it ran (its own call), the final answer's code step
    assert [(s["kind"], s["title"]) for s in starts] == [
        ("execute", "Run Python code"),
        ("execute", shlex.join([sys.executable, *argv])),
        ("execute", "Run Python code"),
    ]
    command = starts[1]["toolCallId"]
    (asked,) = client.permission_requests
    assert asked.tool_call.tool_call_id == command
    shown = [c for u in updates if u["toolCallId"] == command for c in u.get("content") or []]
    assert any(c["type"] == "terminal" for c in shown)
    assert final_status(updates, command) == "completed"
    # the command's output reached the code, whose logs the model read
    assert "from the terminal" in model.seen[-1] and "[exit code 0]" in model.seen[-1]


@pytest.mark.slow  # the MCP server is a Python process importing the MCP SDK
async def test_the_sessions_mcp_tools_are_the_agents_tools_reported_as_server_calls(
    project: Path, schema_validator: SchemaValidator
) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    fixture = Path(__file__).resolve().parents[1] / "agent" / "mcp_server_fixture.py"
    server = schema.McpServerStdio(name="fx", command=sys.executable, args=[str(fixture)], env=[])
    model = script(("fx__add", {"a": 2, "b": 3}), ("final_answer", {"answer": "added"}))
    agent = ToolCallingAgent(tools=[], model=model, verbosity_level=0)
    client = TestClient(project)
    app = agent_app(agent, mcp_startup_timeout=TIMEOUT)
    async with wired(app, client, schema_validator) as w:
        sid = (await w.agent.new_session(str(project), [server])).session_id
        await w.agent.prompt(sid, "add")
    updates = client.tool_updates(sid)
    (start,) = [u for u in updates if u["sessionUpdate"] == "tool_call"]  # reported once
    assert (start["title"], start["rawInput"]) == ("fx: add", {"a": 2, "b": 3})
    assert final_status(updates, start["toolCallId"]) == "completed"
    assert "5" in model.seen[-1]  # the server's answer reached the model
    assert client.texts(sid) == ["added"]


async def test_a_planning_step_is_the_turns_plan(
    project: Path, schema_validator: SchemaValidator
) -> None:
    model = script("1. Look around\n2. Answer", code("final_answer('ok')"))
    agent = CodeAgent(tools=[], model=model, verbosity_level=0, planning_interval=5)
    client = TestClient(project)
    async with wired(agent_app(agent), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "plan it")
    plans = [u for u in client.updates(sid) if type(u).__name__ == "PlanUpdate"]
    assert [[e.content for e in p.entries] for p in plans] == [["Look around", "Answer"]]


async def test_cancel_ends_the_turn_at_once_and_the_agent_stops_after_its_step(
    project: Path, schema_validator: SchemaValidator
) -> None:
    started, release = threading.Event(), threading.Event()
    calls = 0

    def respond(_: list[Any]) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            started.set()
            release.wait(TIMEOUT)  # a model that takes its time, in the agent's thread
            return code("add_numbers(a=1, b=1)")
        return code("final_answer('next turn')")

    agent = CodeAgent(tools=[add_numbers], model=ScriptedModel(respond), verbosity_level=0)
    client = TestClient(project)
    async with wired(agent_app(agent), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "go"))
        await asyncio.to_thread(started.wait, TIMEOUT)
        await w.agent.cancel(sid)
        result = await asyncio.wait_for(prompt, TIMEOUT)  # answered while the model still runs
        assert result.stop_reason == "cancelled"
        release.set()
        result = await w.agent.prompt(sid, "again")  # waits for the stopped run to leave
    assert result.stop_reason == "end_turn"
    assert client.texts(sid) == ["next turn"]
    assert calls == 2  # the stopped run took no step after the cancel
    assert ADDED == []  # and the code its model wrote then did not run


async def test_a_framework_error_is_a_clear_error_answer_and_the_session_goes_on(
    project: Path, schema_validator: SchemaValidator
) -> None:
    replies = iter([ValueError("the model exploded"), code("final_answer('fine again')")])

    def respond(_: list[Any]) -> str:
        reply = next(replies)
        if isinstance(reply, Exception):
            raise reply
        return reply

    agent = CodeAgent(tools=[], model=ScriptedModel(respond), verbosity_level=0)
    client = TestClient(project)
    async with wired(agent_app(agent), client, schema_validator) as w:
        sid = await w.new_session(str(project))
        with pytest.raises(RequestError) as failure:
            await w.agent.prompt(sid, "go")
        assert failure.value.message.startswith("smolagents failed: AgentGenerationError: ")
        result = await w.agent.prompt(sid, "again")
    assert result.stop_reason == "end_turn"
    assert client.texts(sid) == ["fine again"]


async def test_an_agent_out_of_steps_answers_and_each_step_is_kept_once(
    project: Path, tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    model = script(code("print('still working')"), "My best answer.")
    agent = CodeAgent(tools=[], model=model, verbosity_level=0, max_steps=1)
    client = TestClient(project)
    app = agent_app(agent, store=tmp_path / "sessions.sqlite3")
    async with wired(app, client, schema_validator) as w:
        sid = await w.new_session(str(project))
        result = await w.agent.prompt(sid, "go")
    record = await app.store.get(sid)
    assert record is not None
    (kept,) = record.meta["state"][STATE_KEY]
    assert result.stop_reason == "end_turn"
    assert client.texts(sid) == ["My best answer."]
    assert len(kept["steps"]) == 1  # the last step, yielded twice, is kept once


@pytest.mark.parametrize("reopen", ["load", "resume"])
async def test_the_conversation_goes_on_after_a_restart(
    project: Path,
    tmp_path: Path,
    schema_validator: SchemaValidator,
    reopen: str,
) -> None:
    store = tmp_path / "sessions.sqlite3"
    first_agent = CodeAgent(
        tools=[], model=script(code("final_answer('the first answer')")), verbosity_level=0
    )
    first = agent_app(first_agent, store=store)
    async with wired(first, TestClient(project), schema_validator) as w:
        sid = await w.new_session(str(project))
        await w.agent.prompt(sid, "the first question")
    await first.aclose()

    model = script(code("final_answer('the second answer')"))
    second = agent_app(CodeAgent(tools=[], model=model, verbosity_level=0), store=store)
    client = TestClient(project)
    async with wired(second, client, schema_validator) as w:
        if reopen == "load":
            await w.agent.load_session(sid, str(project))
            assert client.texts(sid) == ["the first answer"]  # replayed
        else:  # resumed: nothing replayed, the model still sees it all
            await w.agent.resume_session(sid, str(project))
        await w.agent.prompt(sid, "the second question")
    (seen,) = model.seen
    assert seen.index("the first question") < seen.index("the first answer")
    assert seen.index("the first answer") < seen.index("the second question")
    record = await second.store.get(sid)
    assert record is not None
    assert [t["task"] for t in record.meta["state"][STATE_KEY]] == [
        "the first question",
        "the second question",
    ]
