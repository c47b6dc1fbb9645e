"""AgentApp sessions that persist: load (with replay), resume, list, close, delete, restarts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _app_harness import TestClient, kind, wired

from acpwire import schema as s
from acpwire.agent.app import AgentApp, Mode, Turn
from acpwire.client.connection import connect
from acpwire.protocol.errors import ErrorCode, RequestError
from acpwire.store import MemorySessionStore
from acpwire.testing import SchemaValidator

SCRIPT = Path(__file__).resolve().parent / "app_agent_script.py"


def tool_app(store: object, **kwargs: object) -> AgentApp:
    app = AgentApp("t", store=store, **kwargs)  # type: ignore[arg-type]

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.say(f"re: {turn.text}")
        if turn.text == "run":
            await turn.run(sys.executable, ["-c", "print('from the terminal')"])
        else:
            async with turn.tool("Look", kind="search") as call:
                await call.add("found it")

    return app


async def test_durable_store_advertises_load_and_every_session_capability(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """INIT-004: loadSession and list/resume/close/delete/additionalDirectories with a store."""
    async with wired(
        tool_app(tmp_path / "s.db"), validator=schema_validator, initialize=False
    ) as w:
        result = s.to_json(await w.agent.initialize(w.client.capabilities()))
    caps = result["agentCapabilities"]
    assert caps["loadSession"] is True
    assert set(caps["sessionCapabilities"]) == {
        "list",
        "resume",
        "close",
        "delete",
        "additionalDirectories",
    }


async def test_load_replays_the_whole_conversation_before_answering(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """SESS-006, SESS-007: user and agent chunks and tool calls, all before the load result."""
    app = tool_app(tmp_path / "s.db")
    async with wired(app) as first:
        sid = await first.new_session("/work/project")
        await first.agent.prompt(sid, "hello")
        live = [s.to_json(u) for u in first.client.updates(sid)]
    loader = TestClient()
    async with wired(app, loader, schema_validator) as second:
        await second.agent.load_session(sid, "/work/project")
        replayed = [s.to_json(u) for u in loader.updates(sid)]  # all in before load returned
        load_id = next(m["id"] for m in second.log.received if m.get("method") == "session/load")
        answer = next(i for i, m in enumerate(second.log.sent) if m.get("id") == load_id)
        updates_at = [
            i for i, m in enumerate(second.log.sent) if m.get("method") == "session/update"
        ]
        assert len(updates_at) == len(replayed) and max(updates_at) < answer
    assert replayed[0]["sessionUpdate"] == "user_message_chunk"
    assert replayed[0]["content"] == {"type": "text", "text": "hello"}
    assert replayed[1:] == live


async def test_replayed_terminals_show_their_final_output_instead_of_a_dead_terminal_id(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """TERM-007: a released terminal id is never sent again."""
    app = tool_app(tmp_path / "s.db")
    async with wired(app, TestClient(tmp_path)) as first:
        sid = await first.new_session(str(tmp_path))
        await first.agent.prompt(sid, "run")
    loader = TestClient()
    async with wired(app, loader, schema_validator) as second:
        await second.agent.load_session(sid, str(tmp_path))
    contents = [c for u in loader.tool_updates(sid) for c in u.get("content") or []]
    assert contents and all(c["type"] == "content" for c in contents)
    assert "from the terminal" in contents[0]["content"]["text"]


async def test_resume_restores_the_session_without_replaying(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """SESS-011: no session/update before the resume result; the session then takes prompts."""
    app = tool_app(tmp_path / "s.db")
    async with wired(app) as first:
        sid = await first.new_session()
        await first.agent.prompt(sid, "hello")
    client = TestClient()
    async with wired(app, client, schema_validator) as second:
        await second.agent.resume_session(sid, "/work/project")
        assert client.updates(sid) == []
        assert (await second.agent.prompt(sid, "again")).stop_reason == "end_turn"


async def test_loading_an_unknown_session_is_an_error(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    async with wired(tool_app(tmp_path / "s.db"), validator=schema_validator) as w:
        with pytest.raises(RequestError) as caught:
            await w.agent.load_session("sess_missing", "/work/project")
        assert caught.value.code == ErrorCode.RESOURCE_NOT_FOUND


async def test_without_a_store_load_and_resume_are_not_offered(
    schema_validator: SchemaValidator,
) -> None:
    """SESS-030: unadvertised methods answer -32601."""
    async with wired(tool_app(None), validator=schema_validator) as w:
        sid = await w.new_session()
        await w.agent.close_session(sid)
        w.agent.check_capabilities = False
        for call in (w.agent.load_session, w.agent.resume_session):
            with pytest.raises(RequestError) as caught:
                await call(sid, "/work/project")
            assert caught.value.code == ErrorCode.METHOD_NOT_FOUND


async def test_list_filters_by_cwd_and_pages_with_a_cursor(
    schema_validator: SchemaValidator,
) -> None:
    """LIST-004, LIST-005, LIST-007, LIST-011: exact cwd match, newest first, titles, updatedAt."""
    app = tool_app(MemorySessionStore(), page_size=2)
    async with wired(app, validator=schema_validator) as w:
        ids = [await w.new_session("/work/a") for _ in range(3)]
        other = await w.new_session("/work/b")
        await w.agent.prompt(ids[0], "first session")
        page1 = await w.agent.list_sessions(cwd="/work/a")
        assert isinstance(page1.next_cursor, str)
        page2 = await w.agent.list_sessions(cwd="/work/a", cursor=page1.next_cursor)
        assert isinstance(page2.next_cursor, s.UnsetType)
        listed = [i.session_id for i in page1.sessions + page2.sessions]
        assert listed == [ids[0], ids[2], ids[1]]
        assert page1.sessions[0].title == "first session"
        assert all(isinstance(i.updated_at, str) for i in page1.sessions + page2.sessions)
        assert all(i.cwd == "/work/a" for i in page1.sessions + page2.sessions)
        assert other not in listed
        empty = await w.agent.list_sessions(cwd="/nowhere")
        assert empty.sessions == []
        assert s.to_json(empty) == {"sessions": []}


async def test_list_rejects_a_cursor_it_did_not_hand_out(schema_validator: SchemaValidator) -> None:
    """LIST-009."""
    async with wired(tool_app(None), validator=schema_validator) as w:
        with pytest.raises(RequestError) as caught:
            await w.agent.list_sessions(cursor="not-a-cursor")
        assert caught.value.code == ErrorCode.INVALID_PARAMS


async def test_deleted_sessions_disappear_and_deleting_twice_succeeds(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """DEL-004, DEL-005."""
    async with wired(tool_app(tmp_path / "s.db"), validator=schema_validator) as w:
        keep, drop = await w.new_session(), await w.new_session()
        await w.agent.delete_session(drop)
        await w.agent.delete_session(drop)
        await w.agent.delete_session("sess_never_existed")
        listed = [i.session_id for i in (await w.agent.list_sessions()).sessions]
        assert listed == [keep]
        with pytest.raises(RequestError):
            await w.agent.prompt(drop, "hi")


async def test_additional_directories_are_kept_and_listed(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """SESS-016, SESS-018, SESS-032: absolute roots accepted, stored, replaced on resume."""
    app = tool_app(tmp_path / "s.db")
    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session("/work/a", additional_directories=["/work/lib"])
        (info,) = (await w.agent.list_sessions()).sessions
        assert info.additional_directories == ["/work/lib"]
        await w.agent.close_session(sid)
        await w.agent.resume_session(sid, "/work/a")
        (info,) = (await w.agent.list_sessions()).sessions
        assert isinstance(info.additional_directories, s.UnsetType)
        with pytest.raises(RequestError) as caught:
            await w.agent.new_session("/work/a", additional_directories=["lib"])
        assert caught.value.code == ErrorCode.INVALID_PARAMS


async def test_sessions_survive_a_new_app_instance_over_the_same_file(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """SESS-031 in process: history, title and mode come back from SQLite."""
    db = tmp_path / "s.db"
    first_app = tool_app(db, modes=[Mode("ask", "Ask"), Mode("code", "Code")])
    async with wired(first_app) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "remember me")
        await w.agent.set_session_mode(sid, "code")
    await first_app.aclose()
    second_app = tool_app(db, modes=[Mode("ask", "Ask"), Mode("code", "Code")])
    client = TestClient()
    async with wired(second_app, client, schema_validator) as w:
        loaded = await w.agent.load_session(sid, "/work/project")
        assert isinstance(loaded.modes, s.SessionModeState)
        assert loaded.modes.current_mode_id == "code"
        assert client.texts(sid) == ["re: remember me"]
        assert (await w.agent.list_sessions()).sessions[0].title == "remember me"
    await second_app.aclose()


@pytest.mark.slow
async def test_sessions_survive_an_agent_restart(tmp_path: Path) -> None:
    """SESS-031: created in one agent process, loaded with its history in a fresh one."""
    args = [str(SCRIPT), str(tmp_path / "sessions.db")]
    first = TestClient()
    async with connect(first, sys.executable, args) as conn:
        sid = (await conn.agent.new_session("/work/project")).session_id
        await conn.agent.prompt(sid, "before restart")
    second = TestClient()
    async with connect(second, sys.executable, args) as conn:
        listed = await conn.agent.list_sessions(cwd="/work/project")
        assert [i.session_id for i in listed.sessions] == [sid]
        await conn.agent.load_session(sid, "/work/project")
        assert [kind(u) for u in second.updates(sid)][:2] == [
            "user_message_chunk",
            "session_info_update",
        ]
        assert second.texts(sid) == ["echo: before restart"]
        await conn.agent.prompt(sid, "after restart")
        assert second.texts(sid)[-1] == "echo: after restart"


async def test_commands_are_republished_after_load_not_replayed(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """PROMPT-006: available_commands_update follows the load answer, never precedes it."""
    app = tool_app(tmp_path / "s.db")

    @app.command("review", "Review a file")
    async def review(turn: Turn) -> None:
        await turn.say("reviewing")

    async with wired(app) as first:
        sid = await first.new_session()
        await first.client.wait_for(lambda: "available_commands_update" in first.client.kinds(sid))
        await first.agent.prompt(sid, "/review")
    loader = TestClient()
    async with wired(app, loader, schema_validator) as second:
        await second.agent.load_session(sid, "/work/project")
        assert "available_commands_update" not in loader.kinds(sid)
        await loader.wait_for(lambda: "available_commands_update" in loader.kinds(sid))
        sent = second.log.sent
        load_id = next(m["id"] for m in second.log.received if m.get("method") == "session/load")
        answer = next(i for i, m in enumerate(sent) if m.get("id") == load_id)
        commands_at = next(
            i
            for i, m in enumerate(sent)
            if m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] == "available_commands_update"
        )
        assert commands_at > answer
