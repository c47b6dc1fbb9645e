"""Owners: a session's owner, stored once, and the ledger of claims servers share."""

from __future__ import annotations

import asyncio

from ...store import SessionStore
from .base import CheckGroup, Opener, as_ledger, listed_ids, raises, record

check = CheckGroup()
"""The checks of this module, in the order they are declared."""


@check
async def the_owner_filter_lists_only_that_principals_sessions(store: SessionStore) -> None:
    for n in range(7):
        owner = ("alice", "bob", None)[n % 3]
        cwd = "/work/a" if n < 4 else "/work/b"
        await store.create(
            record(f"s{n}", cwd=cwd, owner=owner, updated_at=f"2024-01-0{n + 1}T00:00:00Z")
        )
    assert await listed_ids(store, owner="alice") == ["s6", "s3", "s0"]
    assert await listed_ids(store, owner="bob") == ["s4", "s1"]
    assert await listed_ids(store, owner="alice", cwd="/work/a") == ["s3", "s0"]
    assert await listed_ids(store, owner="carol") == []
    first, cursor = await store.list_sessions(owner="alice", limit=2)
    assert [s.session_id for s in first] == ["s6", "s3"] and cursor is not None
    rest, last = await store.list_sessions(owner="alice", cursor=cursor, limit=2)
    assert [s.session_id for s in rest] == ["s0"] and last is None


@check
async def an_owner_once_stored_is_never_replaced_by_an_update(store: SessionStore) -> None:
    await store.create(record("unowned"))
    claimed = await store.update(record("unowned", owner="alice"), touch=False)
    assert claimed.owner == "alice"
    stolen = await store.update(record("unowned", owner="mallory", title="mine now"))
    assert stolen.owner == "alice" and stolen.title == "mine now"
    cleared = await store.update(record("unowned", owner=None))
    assert cleared.owner == "alice"
    stored = await store.get("unowned")
    assert stored is not None and stored.owner == "alice"
    assert await listed_ids(store, owner="mallory") == []


@check.opening(shared=False, ledger=True)
async def claim_owner_records_the_first_principal_only(opener: Opener) -> None:
    store = opener()
    try:
        ledger = as_ledger(store)
        await store.create(record("s"))
        await store.create(record("owned", owner="bob"))
        assert await ledger.claim_owner("s", "alice") == "alice"
        assert await ledger.claim_owner("s", "mallory") == "alice"
        assert await ledger.claim_owner("s", "alice") == "alice"
        assert await ledger.claim_owner("owned", "alice") == "bob"
        assert await ledger.claim_owner("missing", "alice") is None
        assert await store.get("missing") is None  # a claim creates nothing
        stored = await store.get("s")
        assert stored is not None and stored.owner == "alice"
        assert await listed_ids(store, owner="alice") == ["s"]
        for bad, kind in (("", ValueError), ("nul\x00", ValueError), (None, TypeError)):
            with raises(kind):
                await ledger.claim_owner("s", bad)  # type: ignore[arg-type]
    finally:
        await store.aclose()


@check.opening(shared=False, ledger=True)
async def owners_of_names_the_owner_of_each_stored_session(opener: Opener) -> None:
    store = opener()
    try:
        ledger = as_ledger(store)
        await store.create(record("a", owner="alice"))
        await store.create(record("free"))
        many = [f"absent-{n}" for n in range(1200)]  # more than one query's worth of ids
        found = await ledger.owners_of(["a", "free", "a", *many])
        assert found == {"a": "alice", "free": None}
        assert await ledger.owners_of([]) == {}
    finally:
        await store.aclose()


@check.opening(shared=True, ledger=True)
async def a_claim_made_through_one_store_binds_every_other(opener: Opener) -> None:
    first, second = opener(), opener()
    try:
        await first.create(record("s"))
        claims = await asyncio.gather(
            as_ledger(first).claim_owner("s", "alice"), as_ledger(second).claim_owner("s", "bob")
        )
        winner = claims[0]
        assert winner in ("alice", "bob") and list(claims) == [winner, winner]
        assert await as_ledger(second).owners_of(["s"]) == {"s": winner}
        assert await as_ledger(first).claim_owner("s", "carol") == winner
    finally:
        await first.aclose()
        await second.aclose()
