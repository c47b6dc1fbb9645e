"""AgentApp turns as a client sees them: messages, plans, tool calls, permission, files, terminals."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import pytest
from _app_harness import TestClient, kind, wired

from acpwire import schema as s
from acpwire.agent.app import AgentApp, Command, ToolError, Turn, location
from acpwire.protocol.errors import CapabilityError, ErrorCode, RequestError
from acpwire.protocol.version import PROTOCOL_VERSION
from acpwire.testing import SchemaValidator

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def echo_app(**kwargs: object) -> AgentApp:
    app = AgentApp("echo", **kwargs)  # type: ignore[arg-type]

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.say(f"You said: {turn.text}")

    return app


@pytest.mark.parametrize("asked", [1, 2, 65535])
async def test_initialize_answers_version_1_whatever_was_asked(
    asked: int, schema_validator: SchemaValidator
) -> None:
    """INIT-003, INIT-008, INIT-009: asked 1, 2 or 65535 -> answers 1."""
    async with wired(echo_app(), validator=schema_validator, initialize=False) as w:
        result = await w.agent.initialize(w.client.capabilities(), protocol_version=asked)
    assert result.protocol_version == PROTOCOL_VERSION == 1


async def test_initialize_states_every_capability_and_agent_info(
    schema_validator: SchemaValidator,
) -> None:
    """INIT-004, INIT-005, INIT-017: explicit capabilities; in-memory store does not promise load/resume."""
    async with wired(echo_app(), validator=schema_validator, initialize=False) as w:
        result = await w.agent.initialize(w.client.capabilities())
    wire = s.to_json(result)
    caps = wire["agentCapabilities"]
    assert caps["loadSession"] is False
    assert caps["promptCapabilities"] == {"image": False, "audio": False, "embeddedContext": False}
    assert set(caps["sessionCapabilities"]) == {"list", "delete", "close", "additionalDirectories"}
    assert wire["agentInfo"]["name"] == "echo"


async def test_echo_replies_with_a_message_chunk_carrying_a_message_id(
    schema_validator: SchemaValidator,
) -> None:
    """INIT-015, PROMPT-003: the reply streams as agent_message_chunk, then the turn ends."""
    async with wired(echo_app(), validator=schema_validator) as w:
        sid = await w.new_session()
        result = await w.agent.prompt(sid, "hello")
        assert result.stop_reason == "end_turn"
        assert w.client.texts(sid) == ["You said: hello"]
        chunk = next(u for u in w.client.updates(sid) if kind(u) == "agent_message_chunk")
        assert isinstance(chunk, s.AgentMessageChunk) and chunk.message_id


async def test_message_ids_are_distinct_uuid4_text_across_turns() -> None:
    """Ids are drawn 64 at a time (one getrandom() per 64): every turn still gets its own."""
    import uuid

    async with wired(echo_app(auto_title=False)) as w:
        sid = await w.new_session()
        for n in range(70):  # past one batch of 64
            await w.agent.prompt(sid, f"prompt {n}")
        said = [u.message_id for u in w.client.updates(sid) if isinstance(u, s.AgentMessageChunk)]
    assert len(said) == 70 and len(set(said)) == 70
    assert all(str(uuid.UUID(str(i))) == i and uuid.UUID(str(i)).version == 4 for i in said)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_process_never_hands_out_the_message_ids_its_parent_holds_in_reserve() -> None:
    """A pre-forking server's workers draw their own ids, not copies of the parent's reserve."""
    from acpwire.agent.turn import new_message_id

    parent = [new_message_id()]  # the reserve now holds ids drawn before the fork
    read, write = os.pipe()
    with warnings.catch_warnings():  # 3.12+ warns about fork with threads (none used here)
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, "\n".join(new_message_id() for _ in range(64)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        child = pipe.read().split("\n")
    os.waitpid(pid, 0)
    parent += [new_message_id() for _ in range(64)]
    assert len(child) == 64 and not set(child) & set(parent)


async def test_session_gets_a_title_from_the_first_prompt(
    schema_validator: SchemaValidator,
) -> None:
    async with wired(echo_app(), validator=schema_validator) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "fix the parser\nplease")
        info = [u for u in w.client.updates(sid) if isinstance(u, s.SessionInfoUpdate)]
        assert [i.title for i in info] == ["fix the parser"]
        listed = await w.agent.list_sessions()
        assert listed.sessions[0].title == "fix the parser"


async def test_chunks_of_one_message_share_an_id_and_thoughts_get_their_own(
    schema_validator: SchemaValidator,
) -> None:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.think("let me see")
        await turn.say("Hello ")
        await turn.say("world")
        async with turn.tool("look", kind="search"):
            pass
        await turn.say("after the tool")

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "hi")
        chunks = [u for u in w.client.updates(sid) if isinstance(u, s.ContentChunk)]
        thought, first, second, after = chunks
        assert isinstance(thought, s.AgentThoughtChunk)
        assert first.message_id == second.message_id != thought.message_id
        assert after.message_id != first.message_id


async def test_plan_updates_always_carry_the_complete_list(
    schema_validator: SchemaValidator,
) -> None:
    """PLAN-001..004."""
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        plan = await turn.plan("Read", "Edit")
        await plan.start(0)
        await plan.complete(0)

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "go")
        plans = [s.to_json(u)["entries"] for u in w.client.updates(sid) if kind(u) == "plan"]
        assert [[e["status"] for e in p] for p in plans] == [
            ["pending", "pending"],
            ["in_progress", "pending"],
            ["completed", "pending"],
        ]


async def test_usage_and_commands_reach_the_client(schema_validator: SchemaValidator) -> None:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.report_usage(1200, 200000, cost=0.02)
        await turn.set_commands([Command("test", "Run the tests", hint="filter")])

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "go")
        wire = [s.to_json(u) for u in w.client.updates(sid)]
        assert wire[0] == {
            "sessionUpdate": "usage_update",
            "used": 1200,
            "size": 200000,
            "cost": {"amount": 0.02, "currency": "USD"},
        }
        assert wire[1]["availableCommands"] == [
            {"name": "test", "description": "Run the tests", "input": {"hint": "filter"}}
        ]


async def test_declared_commands_are_published_after_session_new_and_routed(
    schema_validator: SchemaValidator,
) -> None:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.say("plain prompt")

    @app.command("review", "Review the diff", hint="path")
    async def review(turn: Turn) -> None:
        assert turn.command is not None
        await turn.say(f"reviewing {turn.command[1]}")

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        await w.client.wait_for(lambda: "available_commands_update" in w.client.kinds(sid))
        await w.agent.prompt(sid, "/review src/x.py")
        await w.agent.prompt(sid, "hello")
        assert w.client.texts(sid) == ["reviewing src/x.py", "plain prompt"]


# ---------------------------------------------------------------------------- tool calls


async def test_tool_call_goes_pending_in_progress_completed_with_only_changed_fields(
    schema_validator: SchemaValidator,
) -> None:
    """TOOL-001, TOOL-002, OVR-002: tool_call first, then updates with changed fields only."""
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        async with turn.tool(
            "Read a.py", kind="read", locations=[location("/work/project/a.py", 3)]
        ) as call:
            await call.add("first lines")
            await call.update(raw_output={"lines": 3})

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "go")
        start, progress, output, done = w.client.tool_updates(sid)
    call_id = start["toolCallId"]
    assert start == {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": "Read a.py",
        "kind": "read",
        "status": "pending",
        "locations": [{"path": "/work/project/a.py", "line": 3}],
    }
    assert progress == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "in_progress",
        "content": [{"type": "content", "content": {"type": "text", "text": "first lines"}}],
    }
    assert output == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "rawOutput": {"lines": 3},
    }
    assert done == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "completed",
    }


async def test_a_tool_error_marks_the_call_failed_and_the_turn_goes_on(
    schema_validator: SchemaValidator,
) -> None:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        async with turn.tool("Read missing.txt", kind="read"):
            raise ToolError("no such file")
        await turn.say("carried on")

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        result = await w.agent.prompt(sid, "go")
        last = w.client.tool_updates(sid)[-1]
        assert last["status"] == "failed"
        assert last["content"][-1]["content"]["text"] == "no such file"
        assert result.stop_reason == "end_turn"
        assert w.client.texts(sid) == ["carried on"]


async def test_a_crashing_handler_fails_its_tool_call_and_answers_an_internal_error(
    schema_validator: SchemaValidator,
) -> None:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        async with turn.tool("Compute", kind="think"):
            raise KeyError("boom")

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        with pytest.raises(RequestError) as caught:
            await w.agent.prompt(sid, "go")
        assert caught.value.code == ErrorCode.INTERNAL_ERROR
        assert "boom" not in caught.value.message
        assert w.client.tool_updates(sid)[-1]["status"] == "failed"


async def test_diff_content_carries_old_and_new_text(schema_validator: SchemaValidator) -> None:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        async with turn.tool("Edit", kind="edit") as call:
            await call.diff("a.txt", "new\n", "old\n")
            await call.diff("/work/project/b.txt", "created\n")

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session("/work/project")
        await w.agent.prompt(sid, "go")
        content = [u for u in w.client.tool_updates(sid) if "content" in u][-1]["content"]
    assert content == [
        {"type": "diff", "path": "/work/project/a.txt", "oldText": "old\n", "newText": "new\n"},
        {"type": "diff", "path": "/work/project/b.txt", "oldText": None, "newText": "created\n"},
    ]


# ---------------------------------------------------------------------------- permission


def permission_app() -> AgentApp:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        async with turn.tool("Edit a.txt", kind="edit") as call:
            await call.require_permission()
            await call.add("edited")

    return app


async def test_permission_offers_the_four_kinds_and_a_grant_moves_to_in_progress(
    schema_validator: SchemaValidator,
) -> None:
    """PROMPT-004, TOOL-005: unique option ids of all four kinds; granted -> in_progress -> completed."""
    async with wired(permission_app(), validator=schema_validator) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "go")
        (request,) = w.client.permission_requests
        assert [o.kind for o in request.options] == [
            "allow_once",
            "allow_always",
            "reject_once",
            "reject_always",
        ]
        assert len({o.option_id for o in request.options}) == 4
        statuses = [u.get("status") for u in w.client.tool_updates(sid)]
        assert statuses == ["pending", "in_progress", None, "completed"]
        assert request.tool_call.tool_call_id == w.client.tool_updates(sid)[0]["toolCallId"]


async def test_a_rejected_permission_fails_the_tool_call(schema_validator: SchemaValidator) -> None:
    async with wired(permission_app(), TestClient(permission="reject_once"), schema_validator) as w:
        sid = await w.new_session()
        result = await w.agent.prompt(sid, "go")
        assert result.stop_reason == "end_turn"
        statuses = [u.get("status") for u in w.client.tool_updates(sid)]
        assert statuses == ["pending", "failed"]


async def test_allow_always_is_remembered_for_the_session(
    schema_validator: SchemaValidator,
) -> None:
    async with wired(
        permission_app(), TestClient(permission="allow_always"), schema_validator
    ) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "one")
        await w.agent.prompt(sid, "two")
        assert len(w.client.permission_requests) == 1
        assert [u.get("status") for u in w.client.tool_updates(sid)].count("completed") == 2


# ---------------------------------------------------------------------------- files


def files_app(fallback: bool = False) -> AgentApp:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        text = await turn.read_file("notes.txt", line=2, limit=1, fallback=fallback)
        await turn.write_file("out.txt", text.upper(), fallback=fallback)
        await turn.say(text)

    return app


async def test_files_are_read_and_written_through_the_client(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """FS-001, FS-003, OVR-001: relative paths resolve against cwd; line is 1-based."""
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    async with wired(files_app(), TestClient(tmp_path), schema_validator) as w:
        sid = await w.new_session(str(tmp_path))
        await w.agent.prompt(sid, "go")
        assert w.client.texts(sid) == ["two\n"]
    assert (tmp_path / "out.txt").read_text() == "TWO\n"


async def test_without_fs_capability_reads_raise_a_clear_capability_error(tmp_path: Path) -> None:
    """FS-002: nothing is sent; the handler's error names the missing capability."""
    seen: list[BaseException] = []
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        assert not turn.can_read_files
        try:
            await turn.read_file("notes.txt")
        except CapabilityError as exc:
            seen.append(exc)

    async with wired(app, TestClient(tmp_path, fs=False)) as w:
        sid = await w.new_session(str(tmp_path))
        await w.agent.prompt(sid, "go")
    assert "fs.readTextFile" in str(seen[0]) and "fallback=True" in str(seen[0])
    assert not any(m.get("method", "").startswith("fs/") for m in w.log.sent)


async def test_fallback_uses_the_agents_disk_inside_the_session_roots(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    async with wired(
        files_app(fallback=True), TestClient(tmp_path, fs=False), schema_validator
    ) as w:
        sid = await w.new_session(str(tmp_path))
        await w.agent.prompt(sid, "go")
        assert w.client.texts(sid) == ["two\n"]
    assert (tmp_path / "out.txt").read_text() == "TWO\n"


# ---------------------------------------------------------------------------- terminals


def run_app(*args: str, fallback: bool = False) -> AgentApp:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        result = await turn.run(sys.executable, ["-c", *args], fallback=fallback)
        await turn.say(f"{result.exit_code}:{result.output.strip()}")

    return app


async def test_run_embeds_the_terminal_and_returns_output_and_exit_status(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """TERM-001, TERM-004: the terminal shows in an execute tool call and is released."""
    script = "import sys; print('built'); sys.exit(3)"
    async with wired(run_app(script), TestClient(tmp_path), schema_validator) as w:
        sid = await w.new_session(str(tmp_path))
        await w.agent.prompt(sid, "go")
        assert w.client.texts(sid) == ["3:built"]
        calls = w.client.tool_updates(sid)
        assert calls[0]["kind"] == "execute"
        assert calls[1]["content"][0]["type"] == "terminal"
        assert calls[-1]["status"] == "completed"
        assert w.client.terminals.terminal_ids(sid) == []


async def test_without_terminal_capability_run_can_fall_back_to_a_local_process(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """TERM-002: no terminal/* call is sent; the output is shown as text."""
    app = run_app("print('local')", fallback=True)
    async with wired(app, TestClient(tmp_path, terminal=False), schema_validator) as w:
        sid = await w.new_session(str(tmp_path))
        await w.agent.prompt(sid, "go")
        assert w.client.texts(sid) == ["0:local"]
        assert "local" in w.client.tool_updates(sid)[-2]["content"][0]["content"]["text"]
    assert not any(m.get("method", "").startswith("terminal/") for m in w.log.sent)


async def test_a_terminal_opened_in_async_with_is_released_when_the_block_ends(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """TERM-004: ``async with await turn.open_terminal(...)`` releases it on the way out,
    before the turn goes on (not only at the turn's end)."""
    released_after_block: list[bool] = []
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        async with await turn.open_terminal(sys.executable, ["-c", "print('hi')"]) as term:
            await term.wait()
        released_after_block.append(term.released)
        await turn.say("after the block")

    async with wired(app, TestClient(tmp_path), schema_validator) as w:
        sid = await w.new_session(str(tmp_path))
        await w.agent.prompt(sid, "go")
        assert released_after_block == [True]
        sent = [m.get("method") for m in w.log.sent]
        assert sent.count("terminal/release") == 1
        after = [
            i
            for i, m in enumerate(w.log.sent)
            if m.get("method") == "session/update"
            and m["params"]["update"].get("content", {}).get("text") == "after the block"
        ]
        assert after and sent.index("terminal/release") < after[0]


# ---------------------------------------------------------------------------- elicitation


def ask_app() -> AgentApp:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        if not turn.can_ask:
            await turn.say("cannot ask")
            return
        answer = await turn.ask(
            "Which branch?", {"branch": s.StringPropertySchema(title="Branch")}, required=["branch"]
        )
        await turn.say(f"{answer.action}:{answer.content.get('branch')}")

    return app


async def test_elicitation_form_answer_reaches_the_handler(
    schema_validator: SchemaValidator,
) -> None:
    client = TestClient(elicitation_answer={"branch": "main"})
    async with wired(ask_app(), client, schema_validator) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "go")
        assert w.client.texts(sid) == ["accept:main"]


async def test_elicitation_is_never_sent_to_a_client_without_form_support(
    schema_validator: SchemaValidator,
) -> None:
    """ELIC-005, ELIC-006."""
    async with wired(ask_app(), TestClient(elicitation=False), schema_validator) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "go")
        assert w.client.texts(sid) == ["cannot ask"]
    assert not any(m.get("method") == "elicitation/create" for m in w.log.sent)


# ---------------------------------------------------------------------------- misuse


async def test_prompt_blocks_the_agent_did_not_advertise_are_rejected(
    schema_validator: SchemaValidator,
) -> None:
    """CONTENT-003."""
    async with wired(echo_app(), validator=schema_validator) as w:
        sid = await w.new_session()
        with pytest.raises(RequestError) as caught:
            await w.agent.prompt(sid, [s.ImageContent(data="AAAA", mime_type="image/png")])
        assert caught.value.code == ErrorCode.INVALID_PARAMS
        ok = await w.agent.prompt(sid, [s.ResourceLink(uri="file:///a", name="a")])
        assert ok.stop_reason == "end_turn"


async def test_prompt_for_an_unknown_session_is_an_error(schema_validator: SchemaValidator) -> None:
    """SESS-029."""
    async with wired(echo_app(), validator=schema_validator) as w:
        with pytest.raises(RequestError) as caught:
            await w.agent.prompt("sess_nope", "hi")
        assert caught.value.code == ErrorCode.RESOURCE_NOT_FOUND


async def test_relative_cwd_is_rejected(schema_validator: SchemaValidator) -> None:
    """SESS-028."""
    async with wired(echo_app(), validator=schema_validator) as w:
        with pytest.raises(RequestError) as caught:
            await w.agent.new_session("project")
        assert caught.value.code == ErrorCode.INVALID_PARAMS


async def test_two_new_sessions_get_different_ids_and_keep_separate_conversations(
    schema_validator: SchemaValidator,
) -> None:
    """SESS-002, PROMPT-007."""
    async with wired(echo_app(), validator=schema_validator) as w:
        a, b = await w.new_session(), await w.new_session()
        assert a != b
        await w.agent.prompt(a, "to a")
        await w.agent.prompt(b, "to b")
        await w.agent.prompt(a, "again a")
        assert w.client.texts(a) == ["You said: to a", "You said: again a"]
        assert w.client.texts(b) == ["You said: to b"]


def test_echo_example_is_at_most_15_lines() -> None:
    assert len((EXAMPLES / "echo_agent.py").read_text().splitlines()) <= 15


@pytest.mark.slow  # the example runs as a process
async def test_the_echo_example_answers_over_stdio(tmp_path: Path) -> None:
    """TRANS-002: the example runs as a stdio program."""
    from acpwire.client.connection import connect

    client = TestClient()
    async with connect(client, sys.executable, [str(EXAMPLES / "echo_agent.py")]) as conn:
        sid = (await conn.agent.new_session(str(tmp_path))).session_id
        result = await conn.agent.prompt(sid, "over stdio")
    assert result.stop_reason == "end_turn"
    assert client.texts(sid) == ["You said: over stdio"]


async def test_the_tool_agent_example_reads_proposes_an_edit_and_runs_a_command(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """The example end to end: read via fs, diff + permission, write, terminal."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("tool_agent_example", EXAMPLES / "tool_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app: AgentApp = module.app
    from acpwire.store import MemorySessionStore

    app.store = MemorySessionStore()  # keep the example's file untouched
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    async with wired(app, TestClient(tmp_path), schema_validator) as w:
        sid = await w.new_session(str(tmp_path))
        assert (await w.agent.prompt(sid, "notes.txt")).stop_reason == "end_turn"
        assert len(w.client.permission_requests) == 1
        kinds = {u["kind"] for u in w.client.tool_updates(sid) if "kind" in u}
        assert kinds == {"read", "edit", "execute"}
        assert "3" in w.client.texts(sid)[-1]
    assert (tmp_path / "notes.txt").read_text().endswith("# reviewed by tool-agent\n")


# ---------------------------------------------------------------------------- failures inside a step


async def test_a_client_error_inside_a_tool_block_fails_the_call_and_the_turn_goes_on(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """A missing file is the client's -32002: the read call fails, the prompt does not."""
    seen: list[tuple[bool, str | None]] = []
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        async with turn.tool("Read missing.txt", kind="read") as call:
            await turn.read_file("missing.txt")
            await turn.say("not reached")
        seen.append((call.failed, call.error))
        await turn.say("carried on")

    async with wired(app, TestClient(tmp_path), schema_validator) as w:
        sid = await w.new_session(str(tmp_path))
        assert (await w.agent.prompt(sid, "go")).stop_reason == "end_turn"
        assert w.client.texts(sid) == ["carried on"]
        assert w.client.tool_updates(sid)[-1]["status"] == "failed"
    ((failed, error),) = seen
    assert failed and error  # the client's own words


async def test_a_local_os_error_inside_a_tool_block_fails_the_call(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        async with turn.tool("Read missing.txt", kind="read") as call:
            await turn.read_file("missing.txt", fallback=True)
        await turn.say(f"failed: {call.error}")

    async with wired(app, TestClient(tmp_path, fs=False), schema_validator) as w:
        sid = await w.new_session(str(tmp_path))
        assert (await w.agent.prompt(sid, "go")).stop_reason == "end_turn"
        # The local fallback goes through the shared sandbox, which reports a missing
        # file as the client would (ResourceNotFound), never with OS text.
        assert w.client.texts(sid) == ["failed: file not found"]
        assert w.client.tool_updates(sid)[-1]["status"] == "failed"


def test_error_text_prefers_the_clients_details() -> None:
    from acpwire.agent.app import error_text
    from acpwire.protocol.errors import InternalError

    assert error_text(InternalError(data={"details": "spawn x ENOENT"})) == "spawn x ENOENT"
    assert error_text(InternalError(data={"other": 1})) == "Internal error"
    assert error_text(FileNotFoundError(2, "No such file or directory", "/a")) == (
        "No such file or directory: /a"
    )


async def test_a_rejection_can_be_told_apart_and_its_plan_step_is_not_completed(
    schema_validator: SchemaValidator,
) -> None:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        plan = await turn.plan("Edit a.txt", "Report")
        await plan.start(0)
        async with turn.tool("Edit a.txt", kind="edit") as call:
            await call.diff("/work/project/a.txt", "new\n", "old\n")
            await call.require_permission()
        if call.rejected:
            await plan.fail(0, "permission rejected")
        else:
            await plan.complete(0)
        await plan.complete(1)

    async with wired(app, TestClient(permission="reject_once"), schema_validator) as w:
        sid = await w.new_session()
        assert (await w.agent.prompt(sid, "go")).stop_reason == "end_turn"
        plans = [s.to_json(u)["entries"] for u in w.client.updates(sid) if kind(u) == "plan"]
        (request,) = w.client.permission_requests
    assert plans[-1] == [
        {
            "content": "Edit a.txt (failed: permission rejected)",
            "priority": "medium",
            "status": "pending",
        },
        {"content": "Report", "priority": "medium", "status": "completed"},
    ]
    # The diff alone does not start the call: it is pending while the user decides.
    assert request.tool_call.status == "pending"
