"""The PostgreSQL store's StreamLog: the remote endpoint's streams kept where every worker
sees them (src/acpwire/store/streams.py; ``acp serve --resumable``, docs/remote.md)."""

from __future__ import annotations

import asyncio

import asyncpg  # type: ignore[import-untyped]
import pytest
from _pg import PgPlace
from waiting import TIMEOUT

from acpwire.store.streams import StreamLog

pytestmark = pytest.mark.slow  # a PostgreSQL server


async def test_a_worker_is_alive_while_its_store_is_open_even_when_started_twice_at_once(
    pg: PgPlace,
) -> None:
    """Two streams of one connection start keeping at the same moment: both calls return
    (the second once took a second lock connection and waited on the first for ever)."""
    async with pg.store() as mine, pg.store() as theirs:
        assert isinstance(mine, StreamLog)
        assert not await theirs.worker_alive("w-mine")
        await asyncio.wait_for(
            asyncio.gather(*(mine.worker_started("w-mine") for _ in range(3))), TIMEOUT
        )
        assert await theirs.worker_alive("w-mine")
        assert await theirs.worker_alive("w-mine")  # asking does not take the lock
        await mine.aclose()
        assert not await theirs.worker_alive("w-mine")


async def test_a_stream_keeps_its_last_messages_with_their_cursors_until_its_connection_ends(
    pg: PgPlace,
) -> None:
    async with pg.store() as store:
        assert await store.stored_stream("c1", "") is None
        for first in (1, 4, 7):
            entries = [(n, b'{"n":%d}' % n) for n in range(first, first + 3)]
            await store.keep_stream(
                "c1", "", principal="alice", worker="w1", mode="http",
                entries=entries, turns='{"s1":{"state":"running"}}', keep=5,
            )  # fmt: skip
        await store.keep_stream(
            "c1", "s1", principal="alice", worker="w1", mode="http",
            entries=[(1, b"{}")], turns="{}", keep=5,
        )  # fmt: skip
        stored = await store.stored_stream("c1", "")
        assert stored is not None
        assert (stored.principal, stored.worker, stored.mode) == ("alice", "w1", "http")
        assert (stored.low, stored.high) == (5, 9)
        assert stored.turns == '{"s1":{"state":"running"}}'
        assert await store.stream_after("c1", "", 6) == [
            (7, b'{"n":7}'),
            (8, b'{"n":8}'),
            (9, b'{"n":9}'),
        ]
        assert [n for n, _ in await store.stream_after("c1", "", 0)] == [5, 6, 7, 8, 9]
        await store.forget_connection("c1")
        assert await store.stored_stream("c1", "") is None
        assert await store.stored_stream("c1", "s1") is None
        assert await store.stream_after("c1", "", 0) == []


async def test_streams_nothing_was_written_to_for_long_are_swept(pg: PgPlace) -> None:
    async with pg.store() as store:
        for cid in ("old", "new"):
            await store.keep_stream(
                cid, "", principal="alice", worker="w1", mode="websocket",
                entries=[(1, b"{}")], turns="{}", keep=5,
            )  # fmt: skip
        await store.sweep_streams(3600)
        assert await store.stored_stream("old", "") is not None
        db = await asyncpg.connect(pg.dsn)
        try:  # two hours ago
            await db.execute(
                f'UPDATE "{pg.schema}".streams SET updated_key = updated_key - 7200000000 '
                "WHERE connection_id = 'old'"
            )
        finally:
            await db.close()
        await store.sweep_streams(3600)
        assert await store.stored_stream("old", "") is None
        assert await store.stream_after("old", "", 0) == []
        assert await store.stored_stream("new", "") is not None
