"""Deletion: a deleted session is gone from every view, and only it."""

from __future__ import annotations

from ...store import SessionStore
from .base import CheckGroup, chunk, listed_ids, record

check = CheckGroup()
"""The checks of this module, in the order they are declared."""


@check
async def delete_removes_the_session_from_get_list_and_history(store: SessionStore) -> None:
    await store.create(record("keep"))
    await store.create(record("gone"))
    await store.append("gone", chunk("x"))
    await store.delete("gone")
    assert await store.get("gone") is None
    assert await store.history("gone") == []
    assert await listed_ids(store) == ["keep"]
    assert await listed_ids(store, cwd="/work/project") == ["keep"]


@check
async def delete_is_idempotent(store: SessionStore) -> None:
    await store.create(record("s"))
    await store.delete("s")
    await store.delete("s")
    await store.delete("never-existed")
    assert await store.list_sessions() == ([], None)


@check
async def a_recreated_session_starts_with_an_empty_history(store: SessionStore) -> None:
    await store.create(record("s"))
    await store.append("s", chunk("old"))
    await store.delete("s")
    await store.create(record("s"))
    assert await store.history("s") == []


@check
async def deleting_one_session_keeps_the_other_histories(store: SessionStore) -> None:
    await store.create(record("a"))
    await store.create(record("b"))
    await store.append("a", chunk("a"))
    await store.append("b", chunk("b"))
    await store.delete("a")
    assert await store.history("b") == [chunk("b")]
