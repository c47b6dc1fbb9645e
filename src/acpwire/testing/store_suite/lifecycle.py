"""Lifecycle: a closed store refuses calls; a reopened one, or a second one on the same
storage, sees what the first wrote."""

from __future__ import annotations

import asyncio

from ...store import SessionExistsError, SessionStore, StoreClosedError
from .base import CheckGroup, Opener, chunk, listed_ids, raises, record

check = CheckGroup()
"""The checks of this module, in the order they are declared."""


@check.opening(shared=False)
async def calls_after_close_raise_store_closed(opener: Opener) -> None:
    store = opener()
    assert isinstance(store, SessionStore)
    await store.create(record("s"))
    await store.aclose()
    await store.aclose()
    with raises(StoreClosedError, "closed"):
        await store.get("s")
    with raises(StoreClosedError, "closed"):
        await store.append("s", chunk("x"))
    with raises(StoreClosedError, "closed"):
        await store.list_sessions()


@check.opening(shared=False)
async def a_store_works_as_an_async_context_manager(opener: Opener) -> None:
    async with opener() as store:
        await store.create(record("s"))
        assert await store.get("s") is not None
    with raises(StoreClosedError):
        await store.get("s")


@check.opening(shared=True)
async def sessions_and_history_survive_reopening(opener: Opener) -> None:
    first = opener()
    original = record("s", title="T", config_values={"m": "x"}, meta={"state": [1, 2]})
    updates = [chunk(str(i)) for i in range(100)]
    try:
        await first.create(original)
        await first.create(record("deleted"))
        await first.delete("deleted")
        for update in updates:
            await first.append("s", update)
        before = await first.get("s")
    finally:
        await first.aclose()
    second = opener()
    try:
        assert await second.get("s") == before
        assert await second.history("s") == updates
        assert await listed_ids(second) == ["s"]
        await second.append("s", chunk("after restart"))
        assert (await second.history("s"))[-1] == chunk("after restart")
    finally:
        await second.aclose()


@check.opening(shared=True)
async def two_stores_on_the_same_storage_see_each_others_writes(opener: Opener) -> None:
    a, b = opener(), opener()
    try:
        await a.create(record("from-a"))
        await b.create(record("from-b"))
        with raises(SessionExistsError):
            await b.create(record("from-a"))

        async def writer(store: SessionStore, name: str) -> None:
            for i in range(50):
                await store.append("from-a", {"sessionUpdate": "x", "by": name, "i": i})

        await asyncio.gather(writer(a, "a"), writer(b, "b"))
        history = await b.history("from-a")
        assert await a.history("from-a") == history
        for name in ("a", "b"):
            assert [u["i"] for u in history if u["by"] == name] == list(range(50))
        assert sorted(await listed_ids(a)) == ["from-a", "from-b"]
        await b.delete("from-a")
        assert await a.get("from-a") is None
    finally:
        await a.aclose()
        await b.aclose()
