"""Session store: the state behind session/load, session/list and session/delete."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sqlite3
import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from acpwire.agent.store import (
    DATA_DIR_ENV,
    MemorySessionStore,
    SessionExistsError,
    SessionNotFoundError,
    SessionRecord,
    SessionStore,
    SqliteSessionStore,
    default_data_dir,
    default_store_path,
)

SRC = Path(__file__).resolve().parents[2] / "src"


def chunk(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def record(session_id: str, cwd: str = "/work/project", **fields: Any) -> SessionRecord:
    return SessionRecord(session_id=session_id, cwd=cwd, **fields)


@pytest.fixture(params=["memory", "sqlite"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], SessionStore]:
    def make() -> SessionStore:
        if request.param == "memory":
            return MemorySessionStore()
        return SqliteSessionStore(tmp_path / "sessions.sqlite3")

    return make


@pytest.fixture
async def store(make_store: Callable[[], SessionStore]) -> AsyncIterator[SessionStore]:
    s = make_store()
    yield s
    await s.aclose()


async def list_all(store: SessionStore, cwd: str | None = None) -> list[str]:
    sessions, cursor = await store.list(cwd=cwd, limit=1000)
    assert cursor is None
    return [s.session_id for s in sessions]


# --------------------------------------------------------------------------- records


async def test_created_session_reads_back_with_every_field(store: SessionStore) -> None:
    original = SessionRecord(
        session_id="sess_1",
        cwd="/work/project",
        additional_directories=["/work/lib", "/work/docs"],
        title="Fix the parser",
        created_at="2025-01-02T03:04:05.000006Z",
        updated_at="2025-01-02T03:04:06.000000Z",
        mode_id="code",
        config_values={"model": "fast", "thinking": True},
        meta={"turns": 3, "nested": {"ids": [1, 2]}, "text": "héllo ✓"},
    )
    returned = await store.create(original)
    assert returned == original
    assert await store.get("sess_1") == original


async def test_get_unknown_session_returns_none(store: SessionStore) -> None:
    assert await store.get("nope") is None


async def test_updated_at_defaults_to_created_at(store: SessionStore) -> None:
    stored = await store.create(record("s", created_at="2024-05-06T07:08:09Z"))
    assert stored.updated_at == "2024-05-06T07:08:09Z"


async def test_create_with_taken_id_raises_session_exists(store: SessionStore) -> None:
    await store.create(record("s", title="first"))
    with pytest.raises(SessionExistsError, match="'s' already exists"):
        await store.create(record("s", title="second"))
    stored = await store.get("s")
    assert stored is not None
    assert stored.title == "first"


async def test_update_changes_info_fields_keeps_created_at_and_bumps_updated_at(
    store: SessionStore,
) -> None:
    await store.create(
        record("s", created_at="2020-01-01T00:00:00Z", updated_at="2020-01-01T00:00:00Z")
    )
    changed = SessionRecord(
        session_id="s",
        cwd="/elsewhere",
        additional_directories=["/extra"],
        title="Renamed",
        created_at="2023-03-03T00:00:00Z",
        updated_at="2020-01-01T00:00:00Z",
        mode_id="plan",
        config_values={"model": "slow"},
        meta={"k": "v"},
    )
    returned = await store.update(changed)
    stored = await store.get("s")
    assert stored == returned
    assert stored is not None
    assert (stored.cwd, stored.additional_directories, stored.title) == (
        "/elsewhere",
        ["/extra"],
        "Renamed",
    )
    assert (stored.mode_id, stored.config_values, stored.meta) == (
        "plan",
        {"model": "slow"},
        {"k": "v"},
    )
    assert stored.created_at == "2020-01-01T00:00:00Z"
    assert stored.updated_at > "2020-01-01T00:00:00Z"
    assert stored.updated_at.endswith("Z")


async def test_update_without_touch_stores_given_updated_at(store: SessionStore) -> None:
    await store.create(record("s", created_at="2020-01-01T00:00:00Z"))
    stored = await store.update(
        record("s", title="t", updated_at="2021-06-01T12:00:00Z"), touch=False
    )
    assert stored.updated_at == "2021-06-01T12:00:00Z"
    assert (await store.get("s")) == stored


async def test_update_of_unknown_session_inserts_it(store: SessionStore) -> None:
    stored = await store.update(record("new", title="hi"))
    assert await store.get("new") == stored
    assert await list_all(store) == ["new"]
    assert await store.history("new") == []


async def test_update_leaves_history_alone(store: SessionStore) -> None:
    await store.create(record("s"))
    await store.append("s", chunk("a"))
    await store.update(record("s", title="t"))
    assert await store.history("s") == [chunk("a")]


async def test_mutating_returned_record_does_not_change_store(store: SessionStore) -> None:
    original = record("s", meta={"list": [1]}, additional_directories=["/a"])
    await store.create(original)
    original.meta["list"].append(2)
    got = await store.get("s")
    assert got is not None
    got.additional_directories.append("/b")
    got.title = "changed"
    again = await store.get("s")
    assert again is not None
    assert (again.meta, again.additional_directories, again.title) == ({"list": [1]}, ["/a"], None)


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"updated_at": "yesterday"}, ValueError),
        ({"created_at": "2024-13-01T00:00:00Z"}, ValueError),
        ({"meta": {"x": object()}}, TypeError),
        ({"meta": {"x": float("nan")}}, TypeError),
        ({"config_values": {"model": 3}}, TypeError),
        ({"additional_directories": "/not/a/list"}, TypeError),
    ],
)
async def test_malformed_record_is_rejected_and_not_stored(
    store: SessionStore, fields: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        await store.create(record("bad", **fields))
    assert await store.get("bad") is None


async def test_timestamps_with_offsets_sort_by_instant(store: SessionStore) -> None:
    # 10:00+02:00 is 08:00Z, earlier than 09:00Z.
    await store.create(record("offset", updated_at="2024-01-01T10:00:00+02:00"))
    await store.create(record("utc", updated_at="2024-01-01T09:00:00Z"))
    assert await list_all(store) == ["utc", "offset"]


def test_session_info_is_wire_shaped() -> None:
    r = record("s", additional_directories=["/x"], title="T", updated_at="2024-01-01T00:00:00Z")
    assert r.to_session_info() == {
        "sessionId": "s",
        "cwd": "/work/project",
        "additionalDirectories": ["/x"],
        "title": "T",
        "updatedAt": "2024-01-01T00:00:00Z",
    }
    assert "additionalDirectories" not in r.to_session_info(additional_directories=False)
    bare = record("b", updated_at="2024-01-01T00:00:00Z").to_session_info()
    assert bare == {"sessionId": "b", "cwd": "/work/project", "updatedAt": "2024-01-01T00:00:00Z"}


# --------------------------------------------------------------------------- history


async def test_history_returns_appended_updates_in_order(store: SessionStore) -> None:
    await store.create(record("s"))
    updates = [
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}},
        chunk("hel"),
        chunk("lo"),
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read", "status": "pending"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"},
    ]
    for update in updates:
        await store.append("s", update)
    assert await store.history("s") == updates


async def test_extend_appends_a_batch_after_earlier_updates(store: SessionStore) -> None:
    await store.create(record("s"))
    await store.append("s", chunk("first"))
    await store.extend("s", [chunk(str(i)) for i in range(500)])
    await store.extend("s", [])
    history = await store.history("s")
    assert history == [chunk("first")] + [chunk(str(i)) for i in range(500)]


async def test_histories_of_sessions_are_separate(store: SessionStore) -> None:
    await store.create(record("a"))
    await store.create(record("b"))
    await store.append("a", chunk("for a"))
    await store.append("b", chunk("for b"))
    assert await store.history("a") == [chunk("for a")]
    assert await store.history("b") == [chunk("for b")]


async def test_append_bumps_updated_at(store: SessionStore) -> None:
    await store.create(record("s", updated_at="2020-01-01T00:00:00Z"))
    await store.append("s", chunk("x"))
    stored = await store.get("s")
    assert stored is not None
    assert stored.updated_at > "2020-01-01T00:00:00Z"


async def test_append_to_unknown_session_raises_not_found(store: SessionStore) -> None:
    with pytest.raises(SessionNotFoundError, match="'ghost'"):
        await store.append("ghost", chunk("x"))
    assert await store.history("ghost") == []


async def test_history_of_unknown_session_is_empty(store: SessionStore) -> None:
    assert await store.history("ghost") == []


async def test_appended_update_is_a_snapshot_of_the_payload(store: SessionStore) -> None:
    await store.create(record("s"))
    update = chunk("before")
    await store.append("s", update)
    update["content"]["text"] = "after"
    history = await store.history("s")
    assert history == [chunk("before")]
    history[0]["content"]["text"] = "mutated"
    assert await store.history("s") == [chunk("before")]


@pytest.mark.parametrize("payload", [{"bad": object()}, {"n": float("inf")}, ["not", "a", "dict"]])
async def test_append_rejects_non_json_object_and_keeps_history(
    store: SessionStore, payload: Any
) -> None:
    await store.create(record("s"))
    await store.append("s", chunk("ok"))
    with pytest.raises(TypeError):
        await store.append("s", payload)
    assert await store.history("s") == [chunk("ok")]


async def test_unicode_and_lone_surrogates_round_trip(store: SessionStore) -> None:
    await store.create(record("s"))
    updates = [chunk("日本語 ✓ emoji 🎉"), chunk("lone \ud800 surrogate")]
    await store.extend("s", updates)
    assert await store.history("s") == updates


async def test_concurrent_appends_from_many_tasks_keep_every_update(store: SessionStore) -> None:
    await store.create(record("s"))
    tasks, per_task = 8, 150

    async def writer(task: int) -> None:
        for i in range(per_task):
            await store.append("s", {"sessionUpdate": "agent_message_chunk", "task": task, "i": i})

    await asyncio.gather(*(writer(t) for t in range(tasks)))
    history = await store.history("s")
    assert len(history) == tasks * per_task
    for t in range(tasks):
        assert [u["i"] for u in history if u["task"] == t] == list(range(per_task))


async def test_concurrent_append_to_unknown_session_fails_alone(store: SessionStore) -> None:
    await store.create(record("s"))
    results = await asyncio.gather(
        store.append("s", chunk("1")),
        store.append("ghost", chunk("x")),
        store.append("s", chunk("2")),
        return_exceptions=True,
    )
    assert results[0] is None
    assert isinstance(results[1], SessionNotFoundError)
    assert results[2] is None
    assert await store.history("s") == [chunk("1"), chunk("2")]


# --------------------------------------------------------------------------- list


async def test_list_puts_most_recently_updated_first(store: SessionStore) -> None:
    await store.create(record("old", updated_at="2024-01-01T00:00:00Z"))
    await store.create(record("newest", updated_at="2024-03-01T00:00:00Z"))
    await store.create(record("middle", updated_at="2024-02-01T00:00:00Z"))
    assert await list_all(store) == ["newest", "middle", "old"]


async def test_list_breaks_timestamp_ties_deterministically(store: SessionStore) -> None:
    for sid in ["b", "c", "a"]:
        await store.create(record(sid, updated_at="2024-01-01T00:00:00Z"))
    assert await list_all(store) == ["c", "b", "a"]


async def test_activity_moves_session_to_front_of_list(store: SessionStore) -> None:
    await store.create(record("a", updated_at="2024-01-01T00:00:00Z"))
    await store.create(record("b", updated_at="2024-01-02T00:00:00Z"))
    await store.append("a", chunk("x"))
    assert await list_all(store) == ["a", "b"]
    await store.update(record("b", title="renamed"))
    assert await list_all(store) == ["b", "a"]


async def test_list_sessions_in_creation_order_without_explicit_timestamps(
    store: SessionStore,
) -> None:
    for sid in ["first", "second", "third"]:
        await store.update(record(sid))
    assert await list_all(store) == ["third", "second", "first"]


async def test_list_cwd_filter_matches_exactly(store: SessionStore) -> None:
    for sid, cwd in [
        ("exact", "/work/a"),
        ("slash", "/work/a/"),
        ("child", "/work/a/b"),
        ("case", "/work/A"),
        ("prefix", "/work/ab"),
        ("exact2", "/work/a"),
    ]:
        await store.create(record(sid, cwd=cwd, updated_at="2024-01-01T00:00:00Z"))
    assert sorted(await list_all(store, cwd="/work/a")) == ["exact", "exact2"]
    assert len(await list_all(store)) == 6


async def test_list_with_unmatched_cwd_is_empty_without_cursor(store: SessionStore) -> None:
    await store.create(record("s", cwd="/work/a"))
    assert await store.list(cwd="/nowhere") == ([], None)


async def test_list_of_empty_store_is_empty(store: SessionStore) -> None:
    assert await store.list() == ([], None)


async def test_list_returns_full_records(store: SessionStore) -> None:
    original = record("s", title="T", mode_id="m", config_values={"c": False}, meta={"x": 1})
    await store.create(original)
    sessions, _ = await store.list()
    assert sessions == [original]


@pytest.mark.parametrize(("count", "limit"), [(23, 5), (10, 5), (3, 50), (1, 1)])
async def test_cursor_pagination_visits_every_session_once(
    store: SessionStore, count: int, limit: int
) -> None:
    expected = []
    for n in range(count):
        # Pairs of sessions share a timestamp so ties straddle page boundaries.
        stamp = f"2024-01-01T00:00:{n // 2:02d}Z"
        await store.create(record(f"s{n:02d}", updated_at=stamp))
        expected.append(f"s{n:02d}")
    expected.reverse()

    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page, cursor = await store.list(cursor=cursor, limit=limit)
        pages += 1
        assert len(page) == limit or cursor is None
        assert page, "a page with a cursor before it must not be empty"
        seen.extend(s.session_id for s in page)
        if cursor is None:
            break
        assert isinstance(cursor, str)
    assert seen == expected
    assert pages == -(-count // limit)


async def test_cursor_pagination_with_cwd_filter(store: SessionStore) -> None:
    for n in range(9):
        cwd = "/work/a" if n % 3 else "/work/b"
        await store.create(record(f"s{n}", cwd=cwd, updated_at=f"2024-01-0{n + 1}T00:00:00Z"))
    first, cursor = await store.list(cwd="/work/a", limit=4)
    assert cursor is not None
    second, last = await store.list(cwd="/work/a", cursor=cursor, limit=4)
    assert last is None
    assert [s.session_id for s in first + second] == ["s8", "s7", "s5", "s4", "s2", "s1"]


async def test_deleting_sessions_between_pages_causes_no_duplicates(store: SessionStore) -> None:
    for n in range(6):
        await store.create(record(f"s{n}", updated_at=f"2024-01-0{n + 1}T00:00:00Z"))
    first, cursor = await store.list(limit=2)
    assert [s.session_id for s in first] == ["s5", "s4"]
    await store.delete("s4")
    await store.delete("s3")
    rest, last = await store.list(cursor=cursor, limit=10)
    assert last is None
    assert [s.session_id for s in rest] == ["s2", "s1", "s0"]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not a cursor!",
        "%%%%",
        _b64(b"not json"),
        _b64(b"\xff\xfe"),
        _b64(json.dumps({"k": 1}).encode()),
        _b64(json.dumps([1, "x", "s"]).encode()),
        _b64(json.dumps([99, 1, "s"]).encode()),
        _b64(json.dumps([1, 1.5, "s"]).encode()),
    ],
)
async def test_bad_cursor_raises_value_error(store: SessionStore, cursor: str) -> None:
    await store.create(record("s"))
    with pytest.raises(ValueError, match="invalid session/list cursor"):
        await store.list(cursor=cursor)


@pytest.mark.parametrize("limit", [0, -1])
async def test_non_positive_limit_raises_value_error(store: SessionStore, limit: int) -> None:
    with pytest.raises(ValueError, match="limit"):
        await store.list(limit=limit)


# --------------------------------------------------------------------------- delete


async def test_delete_removes_session_from_get_list_and_history(store: SessionStore) -> None:
    await store.create(record("keep"))
    await store.create(record("gone"))
    await store.append("gone", chunk("x"))
    await store.delete("gone")
    assert await store.get("gone") is None
    assert await store.history("gone") == []
    assert await list_all(store) == ["keep"]
    assert await list_all(store, cwd="/work/project") == ["keep"]


async def test_delete_is_idempotent(store: SessionStore) -> None:
    await store.create(record("s"))
    await store.delete("s")
    await store.delete("s")
    await store.delete("never-existed")
    assert await store.list() == ([], None)


async def test_recreated_session_starts_with_empty_history(store: SessionStore) -> None:
    await store.create(record("s"))
    await store.append("s", chunk("old"))
    await store.delete("s")
    await store.create(record("s"))
    assert await store.history("s") == []


async def test_delete_of_one_session_keeps_other_histories(store: SessionStore) -> None:
    await store.create(record("a"))
    await store.create(record("b"))
    await store.append("a", chunk("a"))
    await store.append("b", chunk("b"))
    await store.delete("a")
    assert await store.history("b") == [chunk("b")]


# --------------------------------------------------------------------------- lifecycle


async def test_calls_after_close_raise_runtime_error(
    make_store: Callable[[], SessionStore],
) -> None:
    store = make_store()
    await store.create(record("s"))
    await store.aclose()
    await store.aclose()
    with pytest.raises(RuntimeError, match="closed"):
        await store.get("s")
    with pytest.raises(RuntimeError, match="closed"):
        await store.append("s", chunk("x"))


async def test_stores_satisfy_the_protocol(tmp_path: Path) -> None:
    sqlite_store = SqliteSessionStore(tmp_path / "db.sqlite3")
    assert isinstance(MemorySessionStore(), SessionStore)
    assert isinstance(sqlite_store, SessionStore)
    await sqlite_store.aclose()


async def test_store_works_as_async_context_manager(tmp_path: Path) -> None:
    async with SqliteSessionStore(tmp_path / "db.sqlite3") as store:
        await store.create(record("s"))
    with pytest.raises(RuntimeError):
        await store.get("s")


# --------------------------------------------------------------------------- sqlite file


async def test_sessions_and_history_survive_reopening_the_file(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite3"
    first = SqliteSessionStore(path)
    original = record("s", title="T", config_values={"m": "x"}, meta={"state": [1, 2]})
    await first.create(original)
    await first.create(record("deleted"))
    await first.delete("deleted")
    updates = [chunk(str(i)) for i in range(100)]
    for update in updates:
        await first.append("s", update)
    before = await first.get("s")
    await first.aclose()

    second = SqliteSessionStore(path)
    try:
        assert await second.get("s") == before
        assert await second.history("s") == updates
        assert await list_all(second) == ["s"]
        await second.append("s", chunk("after restart"))
        assert (await second.history("s"))[-1] == chunk("after restart")
    finally:
        await second.aclose()


async def test_two_stores_on_one_file_see_each_others_writes(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite3"
    a, b = SqliteSessionStore(path), SqliteSessionStore(path)
    try:
        await a.create(record("from-a"))
        await b.create(record("from-b"))
        await asyncio.gather(
            *(a.append("from-a", chunk(f"a{i}")) for i in range(50)),
            *(b.append("from-a", chunk(f"b{i}")) for i in range(50)),
        )
        history = await b.history("from-a")
        assert len(history) == 100
        assert sorted(await list_all(a)) == ["from-a", "from-b"]
        await b.delete("from-a")
        assert await a.get("from-a") is None
    finally:
        await a.aclose()
        await b.aclose()


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from acpwire.agent.store import SessionRecord, SqliteSessionStore

    async def main() -> None:
        async with SqliteSessionStore(sys.argv[1]) as store:
            await store.update(SessionRecord(session_id="child", cwd="/child"))
            for i in range(int(sys.argv[2])):
                await store.append("shared", {"sessionUpdate": "agent_message_chunk", "from": "child", "i": i})

    asyncio.run(main())
    """
)


async def test_second_process_on_same_file_keeps_both_writers_updates(tmp_path: Path) -> None:
    path = tmp_path / "multi.sqlite3"
    count = 300
    store = SqliteSessionStore(path)
    try:
        await store.create(record("shared"))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        }
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD, str(path), str(count), env=env
        )
        for i in range(count):
            await store.append(
                "shared", {"sessionUpdate": "agent_message_chunk", "from": "parent", "i": i}
            )
        assert await child.wait() == 0

        history = await store.history("shared")
        assert len(history) == 2 * count
        for writer in ("parent", "child"):
            assert [u["i"] for u in history if u["from"] == writer] == list(range(count))
        assert sorted(await list_all(store)) == ["child", "shared"]
    finally:
        await store.aclose()

    check = sqlite3.connect(path)
    try:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        check.close()


async def test_database_uses_wal_and_records_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create(record("s"))
    check = sqlite3.connect(path)
    try:
        assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert check.execute("SELECT version FROM schema_version").fetchall() == [(1,)]
        payload = check.execute("SELECT meta FROM sessions").fetchone()
        assert payload == ("{}",)
    finally:
        check.close()


async def test_history_is_stored_as_compact_json(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create(record("s"))
        await store.append("s", {"sessionUpdate": "agent_message_chunk", "content": {"text": "é"}})
    check = sqlite3.connect(path)
    try:
        assert check.execute("SELECT payload FROM updates").fetchone() == (
            '{"sessionUpdate":"agent_message_chunk","content":{"text":"é"}}',
        )
    finally:
        check.close()


async def test_file_from_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create(record("s"))
    check = sqlite3.connect(path)
    with check:
        check.execute("UPDATE schema_version SET version = 999")
    check.close()
    store = SqliteSessionStore(path)
    try:
        with pytest.raises(RuntimeError, match="schema version 999 is newer"):
            await store.get("s")
    finally:
        await store.aclose()


async def test_store_creates_missing_parent_folders(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "sessions.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create(record("s"))
    assert path.is_file()


async def test_in_memory_sqlite_database_works() -> None:
    async with SqliteSessionStore(":memory:") as store:
        await store.create(record("s"))
        await store.append("s", chunk("x"))
        assert await store.history("s") == [chunk("x")]


# --------------------------------------------------------------------------- default path


def test_default_store_path_honours_acpwire_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    assert default_data_dir() == tmp_path / "data"
    assert default_store_path() == tmp_path / "data" / "sessions.sqlite3"


async def test_store_without_path_uses_data_dir_from_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    async with SqliteSessionStore() as store:
        assert store.path == tmp_path / "data" / "sessions.sqlite3"
        await store.create(record("s"))
    assert (tmp_path / "data" / "sessions.sqlite3").is_file()


@pytest.mark.skipif(
    sys.platform in ("win32", "darwin"), reason="XDG layout is for Linux and other Unixes"
)
def test_default_data_dir_follows_xdg_data_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_store_path() == tmp_path / "xdg" / "acpwire" / "sessions.sqlite3"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/is/ignored")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "acpwire"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "acpwire"
