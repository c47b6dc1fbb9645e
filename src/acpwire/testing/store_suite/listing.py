"""Listing: the order of ``list_sessions``, its filters and its cursors."""

from __future__ import annotations

import json

from ...store import SessionStore
from .base import CheckGroup, b64, chunk, listed_ids, raises, record

check = CheckGroup()
"""The checks of this module, in the order they are declared."""


@check
async def list_puts_the_most_recently_updated_first(store: SessionStore) -> None:
    await store.create(record("old", updated_at="2024-01-01T00:00:00Z"))
    await store.create(record("newest", updated_at="2024-03-01T00:00:00Z"))
    await store.create(record("middle", updated_at="2024-02-01T00:00:00Z"))
    assert await listed_ids(store) == ["newest", "middle", "old"]


@check
async def list_breaks_timestamp_ties_by_session_id(store: SessionStore) -> None:
    for sid in ["b", "c", "a"]:
        await store.create(record(sid, updated_at="2024-01-01T00:00:00Z"))
    assert await listed_ids(store) == ["c", "b", "a"]


@check
async def activity_moves_a_session_to_the_front_of_the_list(store: SessionStore) -> None:
    await store.create(record("a", updated_at="2024-01-01T00:00:00Z"))
    await store.create(record("b", updated_at="2024-01-02T00:00:00Z"))
    await store.append("a", chunk("x"))
    assert await listed_ids(store) == ["a", "b"]
    await store.update(record("b", title="renamed"))
    assert await listed_ids(store) == ["b", "a"]


@check
async def sessions_saved_one_after_another_list_newest_first(store: SessionStore) -> None:
    for sid in ["first", "second", "third"]:
        await store.update(record(sid))
    assert await listed_ids(store) == ["third", "second", "first"]


@check
async def the_cwd_filter_matches_exactly(store: SessionStore) -> None:
    for sid, cwd in [
        ("exact", "/work/a"),
        ("slash", "/work/a/"),
        ("child", "/work/a/b"),
        ("case", "/work/A"),
        ("prefix", "/work/ab"),
        ("exact2", "/work/a"),
    ]:
        await store.create(record(sid, cwd=cwd, updated_at="2024-01-01T00:00:00Z"))
    assert sorted(await listed_ids(store, cwd="/work/a")) == ["exact", "exact2"]
    assert len(await listed_ids(store)) == 6
    assert await store.list_sessions(cwd="/nowhere") == ([], None)


@check
async def the_list_of_an_empty_store_is_empty(store: SessionStore) -> None:
    assert await store.list_sessions() == ([], None)


@check
async def list_returns_full_records(store: SessionStore) -> None:
    original = record(
        "s", title="T", mode_id="m", config_values={"c": False}, meta={"x": 1}, owner="bob"
    )
    await store.create(original)
    sessions, _ = await store.list_sessions()
    assert sessions == [original]


@check
async def cursor_pagination_visits_every_session_once(store: SessionStore) -> None:
    count = 23
    expected: list[str] = []
    for n in range(count):
        # Pairs of sessions share a timestamp so ties straddle page boundaries.
        stamp = f"2024-01-01T00:00:{n // 2:02d}Z"
        await store.create(record(f"s{n:02d}", updated_at=stamp))
        expected.append(f"s{n:02d}")
    expected.reverse()
    for limit in (5, 23, 50, 1):
        seen: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            page, cursor = await store.list_sessions(cursor=cursor, limit=limit)
            pages += 1
            assert len(page) == limit or cursor is None
            assert page, "a page with a cursor before it must not be empty"
            seen.extend(s.session_id for s in page)
            if cursor is None:
                break
            assert isinstance(cursor, str)
        assert seen == expected, limit
        assert pages == -(-count // limit), limit


@check
async def cursor_pagination_keeps_the_cwd_filter(store: SessionStore) -> None:
    for n in range(9):
        cwd = "/work/a" if n % 3 else "/work/b"
        await store.create(record(f"s{n}", cwd=cwd, updated_at=f"2024-01-0{n + 1}T00:00:00Z"))
    first, cursor = await store.list_sessions(cwd="/work/a", limit=4)
    assert cursor is not None
    second, last = await store.list_sessions(cwd="/work/a", cursor=cursor, limit=4)
    assert last is None
    assert [s.session_id for s in first + second] == ["s8", "s7", "s5", "s4", "s2", "s1"]


@check
async def deleting_sessions_between_pages_causes_no_duplicates(store: SessionStore) -> None:
    for n in range(6):
        await store.create(record(f"s{n}", updated_at=f"2024-01-0{n + 1}T00:00:00Z"))
    first, cursor = await store.list_sessions(limit=2)
    assert [s.session_id for s in first] == ["s5", "s4"]
    await store.delete("s4")
    await store.delete("s3")
    rest, last = await store.list_sessions(cursor=cursor, limit=10)
    assert last is None
    assert [s.session_id for s in rest] == ["s2", "s1", "s0"]


_BAD_CURSORS = [
    "",
    "not a cursor!",
    "%%%%",
    b64(b"not json"),
    b64(b"\xff\xfe"),
    b64(json.dumps({"k": 1}).encode()),
    b64(json.dumps([1, "x", "s"]).encode()),
    b64(json.dumps([99, 1, "s"]).encode()),
    b64(json.dumps([1, 1.5, "s"]).encode()),
]


@check
async def a_cursor_the_store_did_not_hand_out_raises_value_error(store: SessionStore) -> None:
    await store.create(record("s"))
    for cursor in _BAD_CURSORS:
        with raises(ValueError, "invalid session/list cursor"):
            await store.list_sessions(cursor=cursor)


@check
async def a_limit_below_one_raises_value_error(store: SessionStore) -> None:
    for limit in (0, -1):
        with raises(ValueError, "limit"):
            await store.list_sessions(limit=limit)
