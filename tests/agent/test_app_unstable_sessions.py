"""AgentApp's unstable session methods: fork, archive/unarchive, status and set_title.

Every conversation is validated against ``schema.unstable.json`` (the app and the
client both opted in); a stable app neither advertises nor routes them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from _app_harness import TestClient, wired

from acpwire import schema as s
from acpwire.agent.app import AgentApp, Mode, Turn
from acpwire.client.connection import connect
from acpwire.protocol.errors import ErrorCode, RequestError, UnstableMethodError
from acpwire.store import MemorySessionStore, SessionStore
from acpwire.testing import SchemaValidator

SCRIPT = Path(__file__).resolve().parent / "app_agent_script.py"
UNSTABLE_CAPS = {"fork", "archive", "status", "title"}


def echo_app(store: SessionStore | Path | None, **kwargs: object) -> AgentApp:
    app = AgentApp(
        "t",
        store=store,
        unstable=True,
        modes=[Mode("ask", "Ask"), Mode("code", "Code")],
        **kwargs,  # type: ignore[arg-type]
    )

    @app.prompt
    async def handle(turn: Turn) -> None:
        turn.session.state["prompts"] = [*turn.session.state.get("prompts", []), turn.text]
        await turn.say(f"re: {turn.text}")

    return app


def unstable_client(root: Path | None = None) -> TestClient:
    client = TestClient(root)
    client.unstable = True
    return client


def texts_of(session_history: list[dict[str, object]]) -> list[object]:
    return [
        u["content"]["text"]  # type: ignore[index]
        for u in session_history
        if u.get("sessionUpdate") in ("user_message_chunk", "agent_message_chunk")
    ]


async def test_an_unstable_app_advertises_fork_archive_status_and_title(
    unstable_schema_validator: SchemaValidator,
) -> None:
    async with wired(
        echo_app(None), unstable_client(), unstable_schema_validator, initialize=False
    ) as w:
        result = s.to_json(await w.agent.initialize(w.client.capabilities()))
    assert UNSTABLE_CAPS <= set(result["agentCapabilities"]["sessionCapabilities"])


async def test_a_stable_app_advertises_none_and_answers_method_not_found(
    schema_validator: SchemaValidator,
) -> None:
    app = AgentApp("stable")
    client = unstable_client()  # the client may ask; the app did not opt in
    async with wired(app, client, initialize=False) as w:
        result = s.to_json(await w.agent.initialize(w.client.capabilities()))
        assert not UNSTABLE_CAPS & set(result["agentCapabilities"]["sessionCapabilities"])
        sid = await w.new_session()
        w.agent.check_capabilities = False
        for call in (w.agent.session_status, w.agent.archive_session):
            with pytest.raises(RequestError) as caught:
                await call(sid)
            assert caught.value.code == ErrorCode.METHOD_NOT_FOUND
        listed = s.to_json(await w.agent.list_sessions())
    assert "archived" not in listed["sessions"][0]
    schema_validator.validate_conversation(
        [m for m in w.log.sent if "error" not in m],
        [m for m in w.log.received if m.get("method") not in ("session/status", "session/archive")],
    )


async def test_a_fork_starts_with_the_parents_history_and_then_goes_its_own_way(
    tmp_path: Path, unstable_schema_validator: SchemaValidator
) -> None:
    app = echo_app(tmp_path / "s.db")
    client = unstable_client()
    async with wired(app, client, unstable_schema_validator) as w:
        parent = await w.new_session("/work/project")
        await w.agent.set_session_mode(parent, "code")
        await w.agent.prompt(parent, "shared")
        forked = await w.agent.fork_session(parent, "/work/fork")
        fork = forked.session_id
        assert fork != parent
        assert isinstance(forked.modes, s.SessionModeState)
        assert forked.modes.current_mode_id == "code"  # the parent's settings come along
        await w.agent.prompt(fork, "only in the fork")
        await w.agent.prompt(parent, "only in the parent")
        fork_texts = texts_of(await app.store.history(fork))
        parent_texts = texts_of(await app.store.history(parent))
        fork_record = await app.store.get(fork)
    assert fork_texts == ["shared", "re: shared", "only in the fork", "re: only in the fork"]
    assert parent_texts == ["shared", "re: shared", "only in the parent", "re: only in the parent"]
    assert fork_record is not None
    assert fork_record.cwd == "/work/fork"
    assert fork_record.meta["state"]["prompts"] == ["shared", "only in the fork"]
    assert fork_record.meta["forkedFrom"] == parent


async def test_a_fork_of_an_unknown_session_is_resource_not_found_and_stores_nothing(
    unstable_schema_validator: SchemaValidator,
) -> None:
    store = MemorySessionStore()
    async with wired(echo_app(store), unstable_client(), unstable_schema_validator) as w:
        with pytest.raises(RequestError) as caught:
            await w.agent.fork_session("sess_missing", "/work/project")
        assert caught.value.code == ErrorCode.RESOURCE_NOT_FOUND
        assert (await store.list_sessions())[0] == []


@pytest.mark.slow
async def test_a_fork_survives_a_restart_of_the_agent_process(tmp_path: Path) -> None:
    """The fork and its copied history are in the SQLite file, loaded by a fresh process."""
    args = [str(SCRIPT), str(tmp_path / "sessions.db"), "--unstable"]
    first = unstable_client()
    async with connect(first, sys.executable, args) as conn:
        parent = (await conn.agent.new_session("/work/project")).session_id
        await conn.agent.prompt(parent, "before the fork")
        fork = (await conn.agent.fork_session(parent, "/work/project")).session_id
        await conn.agent.prompt(fork, "in the fork")
    second = unstable_client()
    async with connect(second, sys.executable, args) as conn:
        assert (await conn.agent.session_status(fork)).status == "saved"
        await conn.agent.load_session(fork, "/work/project")
        assert second.texts(fork) == ["echo: before the fork", "echo: in the fork"]
        await conn.agent.load_session(parent, "/work/project")
        assert second.texts(parent) == ["echo: before the fork"]


async def test_archived_sessions_leave_the_default_list_and_come_back_when_unarchived(
    unstable_schema_validator: SchemaValidator,
) -> None:
    async with wired(echo_app(None), unstable_client(), unstable_schema_validator) as w:
        kept, archived = await w.new_session(), await w.new_session()
        before = {i.session_id: i for i in (await w.agent.list_sessions()).sessions}
        await w.agent.archive_session(archived)
        default = (await w.agent.list_sessions()).sessions
        assert [i.session_id for i in default] == [kept]
        assert default[0].archived is False
        only = (await w.agent.list_sessions(archived="only")).sessions
        assert [(i.session_id, i.archived) for i in only] == [(archived, True)]
        assert only[0].updated_at == before[archived].updated_at  # archiving is not activity
        both = (await w.agent.list_sessions(archived="include")).sessions
        assert {i.session_id for i in both} == {kept, archived}
        await w.agent.unarchive_session(archived)
        default = (await w.agent.list_sessions()).sessions
        assert {i.session_id for i in default} == {kept, archived}


async def test_the_archive_filter_applies_before_pagination(
    unstable_schema_validator: SchemaValidator,
) -> None:
    """Full pages of what the filter keeps, whatever lies between them."""
    app = echo_app(MemorySessionStore(), page_size=2)
    async with wired(app, unstable_client(), unstable_schema_validator) as w:
        ids = [await w.new_session() for _ in range(7)]
        for sid in ids[1::2]:  # every other one
            await w.agent.archive_session(sid)
        seen: list[str] = []
        pages: list[int] = []
        cursor: str | None = None
        while True:
            page = await w.agent.list_sessions(cursor=cursor)
            seen += [i.session_id for i in page.sessions]
            pages.append(len(page.sessions))
            if isinstance(page.next_cursor, s.UnsetType):
                break
            cursor = page.next_cursor
    assert seen == ids[::2][::-1]  # newest first, none twice, none missing
    assert pages[:-1] == [2] * (len(pages) - 1)


async def test_an_unknown_archive_filter_is_invalid_params(
    unstable_schema_validator: SchemaValidator,
) -> None:
    async with wired(echo_app(None), unstable_client(), unstable_schema_validator) as w:
        with pytest.raises(RequestError) as caught:
            await w.agent.list_sessions(archived="_sometimes")
        assert caught.value.code == ErrorCode.INVALID_PARAMS


async def test_a_stable_client_cannot_send_the_archive_filter() -> None:
    async with wired(echo_app(None)) as w:
        with pytest.raises(UnstableMethodError):
            await w.agent.list_sessions(archived="only")


async def test_archive_of_an_open_session_is_kept_when_the_session_saves_again(
    unstable_schema_validator: SchemaValidator,
) -> None:
    async with wired(echo_app(None), unstable_client(), unstable_schema_validator) as w:
        sid = await w.new_session()
        await w.agent.archive_session(sid)
        await w.agent.prompt(sid, "still talking")  # the open session saves its record
        only = (await w.agent.list_sessions(archived="only")).sessions
        assert [i.session_id for i in only] == [sid]


async def test_status_is_open_on_any_connection_and_saved_once_closed(
    tmp_path: Path, unstable_schema_validator: SchemaValidator
) -> None:
    app = echo_app(tmp_path / "s.db")
    async with (
        wired(app, unstable_client(), unstable_schema_validator) as first,
        wired(app, unstable_client(), unstable_schema_validator) as second,
    ):
        sid = await first.new_session()
        assert (await second.agent.session_status(sid)).status == "open"
        await first.agent.close_session(sid)
        assert (await second.agent.session_status(sid)).status == "saved"
        await second.agent.resume_session(sid, "/work/project")
        assert (await first.agent.session_status(sid)).status == "open"
        with pytest.raises(RequestError) as caught:
            await first.agent.session_status("sess_missing")
        assert caught.value.code == ErrorCode.RESOURCE_NOT_FOUND
    async with wired(app, unstable_client(), unstable_schema_validator) as third:
        assert (await third.agent.session_status(sid)).status == "saved"


async def test_a_title_set_by_the_client_is_stored_normalised_and_never_replaced(
    unstable_schema_validator: SchemaValidator,
) -> None:
    client = unstable_client()
    async with wired(echo_app(None), client, unstable_schema_validator) as w:
        sid = await w.new_session()
        answer = await w.agent.set_session_title(sid, "  Refactor\n the   parser\t")
        assert answer.title == "Refactor the parser"
        info = [u for u in client.updates(sid) if isinstance(u, s.SessionInfoUpdate)]
        assert [u.title for u in info] == ["Refactor the parser"]
        await w.agent.prompt(sid, "a first prompt would have named it")
        (listed,) = (await w.agent.list_sessions()).sessions
        assert listed.title == "Refactor the parser"
        long = await w.agent.set_session_title(sid, "x" * 1000)
        assert len(long.title) == 256


async def test_a_closed_session_can_be_retitled_and_bad_titles_are_refused(
    unstable_schema_validator: SchemaValidator,
) -> None:
    async with wired(echo_app(None), unstable_client(), unstable_schema_validator) as w:
        sid = await w.new_session()
        await w.agent.close_session(sid)
        await w.agent.set_session_title(sid, "Closed but named")
        (listed,) = (await w.agent.list_sessions()).sessions
        assert listed.title == "Closed but named"
        with pytest.raises(RequestError) as caught:
            await w.agent.set_session_title(sid, " \n\t\x00 ")
        assert caught.value.code == ErrorCode.INVALID_PARAMS
        with pytest.raises(RequestError) as caught:
            await w.agent.set_session_title("sess_missing", "Nobody")
        assert caught.value.code == ErrorCode.RESOURCE_NOT_FOUND
