"""What only the PostgreSQL store has: workers in several processes, its schema, its pool."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
from _pg import PgPlace
from waiting import TIMEOUT

from acpwire.store import PostgresSessionStore, SessionRecord, open_store
from acpwire.store.postgres import SCHEMA_VERSION

pytestmark = pytest.mark.slow  # a PostgreSQL server, and worker processes

SRC = Path(__file__).resolve().parents[2] / "src"


def record(session_id: str, **fields: Any) -> SessionRecord:
    return SessionRecord(session_id=session_id, cwd="/work/project", **fields)


WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from acpwire.store.postgres import PostgresSessionStore

    async def main() -> None:
        dsn, schema, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
        async with PostgresSessionStore(dsn, schema=schema) as store:
            for i in range(count):
                entry = {"sessionUpdate": "x", "by": "child", "i": i}
                missing = await store.extend_many({"b": [entry], "a": [entry, entry]})
                assert not missing, missing

    asyncio.run(main())
    """
)


@pytest.mark.slow
async def test_two_worker_processes_appending_to_the_same_sessions_keep_one_consistent_history(
    pg: PgPlace,
) -> None:
    """Appends from two processes are serialised per session; a reader only ever sees a prefix."""
    count = 150
    async with pg.store() as store:
        await store.create(record("a"))
        await store.create(record("b"))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        }
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WORKER, pg.dsn, pg.schema, str(count), env=env
        )
        seen: list[list[dict[str, Any]]] = []
        writing = True

        async def read_while_writing() -> None:
            while writing:
                seen.append(await store.history("a"))

        reader = asyncio.ensure_future(read_while_writing())
        try:
            for i in range(count):
                entry = {"sessionUpdate": "x", "by": "parent", "i": i}
                # The other order than the child's: the store locks rows in one order anyway.
                assert not await store.extend_many({"a": [entry, entry], "b": [entry]})
            assert await asyncio.wait_for(child.wait(), TIMEOUT) == 0
        finally:
            writing = False
            await reader
        final = await store.history("a")
        assert len(final) == 2 * 2 * count
        for writer in ("parent", "child"):
            mine = [u["i"] for u in final if u["by"] == writer]
            assert mine == sorted(mine) and len(mine) == 2 * count
        # A batch's two entries are never split by the other worker's.
        for first, second in zip(final[::2], final[1::2], strict=True):
            assert first == second
        assert len(await store.history("b")) == 2 * count
        assert len(seen) > 0
        for snapshot in seen:
            assert snapshot == final[: len(snapshot)]
    conn = await asyncpg.connect(pg.dsn)
    try:
        seqs = await conn.fetch(
            f'SELECT seq FROM "{pg.schema}".updates WHERE session_id = $1 ORDER BY seq', "a"
        )
        assert [r[0] for r in seqs] == list(range(1, 4 * count + 1))
    finally:
        await conn.close()


async def test_workers_starting_together_create_the_tables_once(pg: PgPlace) -> None:
    stores = [pg.store() for _ in range(4)]
    try:
        results = await asyncio.gather(*(s.get("nothing") for s in stores))
        assert results == [None] * 4
        await stores[0].create(record("s"))
        assert await stores[3].get("s") is not None
    finally:
        await asyncio.gather(*(s.aclose() for s in stores))
    conn = await asyncpg.connect(pg.dsn)
    try:
        versions = await conn.fetch(f'SELECT version FROM "{pg.schema}".schema_version')
        assert [r[0] for r in versions] == [SCHEMA_VERSION]
    finally:
        await conn.close()


async def test_tables_from_a_newer_acpwire_are_refused(pg: PgPlace) -> None:
    async with pg.store() as store:
        await store.create(record("s"))
    conn = await asyncpg.connect(pg.dsn)
    try:
        await conn.execute(f'UPDATE "{pg.schema}".schema_version SET version = 999')
    finally:
        await conn.close()
    async with pg.store() as store:
        with pytest.raises(RuntimeError, match="at version 999, newer than"):
            await store.get("s")


async def test_stores_in_two_schemas_share_nothing(pg: PgPlace) -> None:
    other = PgPlace(pg.dsn, pg.schema + "_b")
    try:
        async with pg.store() as first, other.store() as second:
            await first.create(record("s"))
            assert await second.get("s") is None
            await second.create(record("s", title="other"))
            got = await first.get("s")
            assert got is not None and got.title is None
    finally:
        conn = await asyncpg.connect(pg.dsn)
        try:
            await conn.execute(f'DROP SCHEMA IF EXISTS "{other.schema}" CASCADE')
        finally:
            await conn.close()


async def test_many_concurrent_calls_share_a_small_pool(pg: PgPlace) -> None:
    async with pg.store(max_size=3) as store:
        await asyncio.gather(*(store.create(record(f"s{i}")) for i in range(200)))
        await asyncio.gather(*(store.append(f"s{i}", {"sessionUpdate": "x"}) for i in range(200)))
        sessions, cursor = await store.list_sessions(limit=500)
        assert len(sessions) == 200 and cursor is None


async def test_the_default_schema_is_acpwire_and_a_url_opens_it(pg: PgPlace) -> None:
    store = open_store(pg.dsn)
    assert isinstance(store, PostgresSessionStore) and store.schema == "acpwire"
    try:
        await store.create(record(pg.schema))  # a unique id: the schema is shared by the run
        assert await store.get(pg.schema) is not None
        await store.delete(pg.schema)
    finally:
        await store.aclose()


def test_a_schema_name_that_is_not_a_plain_identifier_is_refused() -> None:
    with pytest.raises(ValueError, match="plain identifier"):
        PostgresSessionStore("postgresql://localhost/db", schema='x"; DROP TABLE y; --')


async def test_an_unreachable_server_fails_the_call_with_the_reason() -> None:
    store = PostgresSessionStore("postgresql://postgres:pw@127.0.0.1:1/db", timeout=10)
    try:
        with pytest.raises(OSError, match=r"[Cc]onnect"):
            await store.get("s")
    finally:
        await store.aclose()


async def test_a_wrong_password_is_refused_without_repeating_it(pg: PgPlace) -> None:
    dsn = pg.dsn.replace("postgres:", "postgres:wrong-", 1)
    store = PostgresSessionStore(dsn, schema=pg.schema)
    try:
        with pytest.raises(asyncpg.InvalidPasswordError) as caught:
            await store.get("s")
        assert "wrong-" not in str(caught.value)
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    ("option", "query", "expected"),
    [
        ("off", "", "off"),
        ("on", "", "on"),
        (None, "", None),  # the server's own setting
        ("off", "?synchronous_commit=local", "local"),
    ],
)
async def test_commits_are_acknowledged_before_the_fsync_unless_asked_otherwise(
    pg: PgPlace, option: str | None, query: str, expected: str | None
) -> None:
    if expected is None:
        conn = await asyncpg.connect(pg.dsn)
        try:
            expected = await conn.fetchval("SHOW synchronous_commit")
        finally:
            await conn.close()
    store = PostgresSessionStore(pg.dsn + query, schema=pg.schema, synchronous_commit=option)
    try:
        setting = await store._with_conn(lambda conn: conn.fetchval("SHOW synchronous_commit"))
        assert setting == expected
    finally:
        await store.aclose()


async def test_a_pooled_connection_given_back_inside_a_transaction_is_rolled_back(
    pg: PgPlace,
) -> None:
    """Without asyncpg's reset query (a round trip per call), a transaction an
    interrupted call left open still ends: the next call never runs inside it."""
    store = pg.store(min_size=1, max_size=1)
    try:
        await store.create(record("kept"))
        pool = await store._get_pool()
        async with pool.acquire() as conn:
            await conn.execute("BEGIN")
            await conn.execute(f'DELETE FROM "{pg.schema}".sessions')
        assert await store.get("kept") is not None
        assert [r.session_id for r in (await store.list_sessions())[0]] == ["kept"]
    finally:
        await store.aclose()
