"""What only the SQLite store has: the file, its schema and migrations, other processes, paths."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from waiting import TIMEOUT

from acpwire.store import (
    DATA_DIR_ENV,
    SessionRecord,
    SqliteSessionStore,
    default_data_dir,
    default_store_path,
)
from acpwire.store import sqlite as sqlite_store
from acpwire.store.sqlite import SCHEMA_VERSION, migrate

SRC = Path(__file__).resolve().parents[2] / "src"


def record(session_id: str, **fields: Any) -> SessionRecord:
    return SessionRecord(session_id=session_id, cwd="/work/project", **fields)


def inspect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path)


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from acpwire.store import SessionRecord, SqliteSessionStore

    async def main() -> None:
        async with SqliteSessionStore(sys.argv[1]) as store:
            await store.update(SessionRecord(session_id="child", cwd="/child"))
            for i in range(int(sys.argv[2])):
                await store.append("shared", {"sessionUpdate": "x", "from": "child", "i": i})

    asyncio.run(main())
    """
)


async def test_a_second_process_on_the_same_file_keeps_both_writers_updates(
    tmp_path: Path,
) -> None:
    path = tmp_path / "multi.sqlite3"
    count = 300
    async with SqliteSessionStore(path) as store:
        await store.create(record("shared"))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        }
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD, str(path), str(count), env=env
        )
        for i in range(count):
            await store.append("shared", {"sessionUpdate": "x", "from": "parent", "i": i})
        assert await asyncio.wait_for(child.wait(), TIMEOUT) == 0
        history = await store.history("shared")
        assert len(history) == 2 * count
        for writer in ("parent", "child"):
            assert [u["i"] for u in history if u["from"] == writer] == list(range(count))
        sessions, _ = await store.list_sessions()
        assert sorted(s.session_id for s in sessions) == ["child", "shared"]
    check = inspect(path)
    try:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        check.close()


async def test_the_file_uses_wal_and_records_its_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create(record("s", owner="alice"))
    check = inspect(path)
    try:
        assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert check.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert check.execute("SELECT meta, owner FROM sessions").fetchone() == ("{}", "alice")
    finally:
        check.close()


async def test_a_short_write_that_finds_the_file_locked_waits_for_the_lock(
    tmp_path: Path,
) -> None:
    """Short calls try once without waiting on the loop's thread; when another
    connection holds the write lock, the call waits for it on the worker instead."""
    path = tmp_path / "db.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create(record("first"))
        other = sqlite3.connect(path, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
            creating = asyncio.ensure_future(store.create(record("second")))
            await asyncio.sleep(0)  # its attempt on the loop's thread found the file locked
            assert not creating.done()
            other.execute("COMMIT")
            assert (await asyncio.wait_for(creating, TIMEOUT)).session_id == "second"
        finally:
            other.close()
        assert await store.get("second") is not None


async def test_the_log_is_checkpointed_as_it_grows_though_sqlite_does_not_do_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Automatic checkpoints are off (they would sync on the loop's thread): the
    store checkpoints and restarts the log itself, so the log does not grow forever."""
    monkeypatch.setattr(sqlite_store, "CHECKPOINT_PAGES", 100)
    path = tmp_path / "db.sqlite3"
    async with SqliteSessionStore(path) as store:
        for n in range(200):  # well over 100 pages
            await store.create(record(f"s{n}"))
        await store.history("s0")  # on the worker, after the checkpoint it queued
        check = inspect(path)
        try:
            busy, frames, _ = check.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        finally:
            check.close()
        assert busy == 0
        assert frames < 500  # the log restarted: not the frames of all 200 creates
        sessions, _ = await store.list_sessions(limit=500)
        assert len(sessions) == 200


async def test_history_is_stored_as_compact_json(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create(record("s"))
        await store.append("s", {"sessionUpdate": "agent_message_chunk", "content": {"text": "é"}})
    check = inspect(path)
    try:
        assert check.execute("SELECT payload FROM updates").fetchone() == (
            '{"sessionUpdate":"agent_message_chunk","content":{"text":"é"}}',
        )
    finally:
        check.close()


async def test_a_file_of_schema_version_1_is_migrated_and_keeps_its_sessions(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v1.sqlite3"
    old = sqlite3.connect(path, isolation_level=None)
    migrate(old, target=1)
    old.execute(
        "INSERT INTO sessions (session_id, cwd, created_at, updated_at, updated_key) "
        "VALUES ('old', '/work', '2024-01-01T00:00:00Z', '2024-01-01T00:00:00Z', 1704067200000000)"
    )
    old.execute(
        "INSERT INTO updates (session_id, payload) VALUES ('old', '{\"sessionUpdate\":\"x\"}')"
    )
    old.close()
    async with SqliteSessionStore(path) as store:
        stored = await store.get("old")
        assert stored is not None and stored.owner is None and stored.cwd == "/work"
        assert await store.history("old") == [{"sessionUpdate": "x"}]
        await store.update(record("old", owner="alice"))
        owned, _ = await store.list_sessions(owner="alice")
        assert [s.session_id for s in owned] == ["old"]
    check = inspect(path)
    try:
        assert check.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    finally:
        check.close()


async def test_a_file_from_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create(record("s"))
    check = inspect(path)
    with check:
        check.execute("UPDATE schema_version SET version = 999")
    check.close()
    async with SqliteSessionStore(path) as store:
        with pytest.raises(RuntimeError, match="schema version 999 is newer"):
            await store.get("s")


async def test_the_store_creates_missing_parent_folders(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "sessions.sqlite3"
    async with SqliteSessionStore(path) as store:
        await store.create(record("s"))
    assert path.is_file()


async def test_an_in_memory_sqlite_database_works() -> None:
    async with SqliteSessionStore(":memory:") as store:
        await store.create(record("s"))
        await store.append("s", {"sessionUpdate": "x"})
        assert await store.history("s") == [{"sessionUpdate": "x"}]


# --------------------------------------------------------------------------- default path


def test_the_default_store_path_honours_acpwire_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    assert default_data_dir() == tmp_path / "data"
    assert default_store_path() == tmp_path / "data" / "sessions.sqlite3"


async def test_a_store_without_a_path_uses_the_data_dir_from_the_environment(
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
def test_the_default_data_dir_follows_xdg_data_home(
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
