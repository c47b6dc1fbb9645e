"""History: appended updates come back in order, per session, as snapshots."""

from __future__ import annotations

import asyncio
from typing import Any

from ...store import SessionNotFoundError, SessionStore
from .base import CheckGroup, chunk, listed_ids, raises, record

check = CheckGroup()
"""The checks of this module, in the order they are declared."""


@check
async def history_returns_the_appended_updates_in_order(store: SessionStore) -> None:
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


@check
async def extend_appends_a_batch_after_earlier_updates(store: SessionStore) -> None:
    await store.create(record("s"))
    await store.append("s", chunk("first"))
    await store.extend("s", [chunk(str(i)) for i in range(500)])
    await store.extend("s", [])
    assert await store.history("s") == [chunk("first")] + [chunk(str(i)) for i in range(500)]


@check
async def extend_many_appends_to_several_sessions_and_names_the_unknown_ones(
    store: SessionStore,
) -> None:
    await store.create(record("a", updated_at="2020-01-01T00:00:00Z"))
    await store.create(record("b", updated_at="2020-01-01T00:00:00Z"))
    await store.create(record("quiet", updated_at="2020-01-01T00:00:00Z"))
    await store.append("a", chunk("a0"))
    missing = await store.extend_many(
        {
            "b": [chunk("b1"), chunk("b2")],
            "ghost": [chunk("lost")],
            "a": [chunk("a1")],
            "quiet": [],
        }
    )
    assert missing == {"ghost"}
    assert await store.history("a") == [chunk("a0"), chunk("a1")]
    assert await store.history("b") == [chunk("b1"), chunk("b2")]
    assert await store.history("ghost") == []
    assert await store.get("ghost") is None
    quiet = await store.get("quiet")
    assert quiet is not None and quiet.updated_at == "2020-01-01T00:00:00Z"
    assert set((await listed_ids(store))[:2]) == {"a", "b"}
    assert await store.extend_many({}) == set()


@check
async def extend_many_with_one_bad_payload_stores_nothing(store: SessionStore) -> None:
    await store.create(record("a"))
    await store.create(record("b"))
    with raises(TypeError):
        await store.extend_many({"a": [chunk("ok")], "b": [chunk("ok"), {"bad": object()}]})
    assert await store.history("a") == []
    assert await store.history("b") == []


@check
async def histories_of_sessions_are_separate(store: SessionStore) -> None:
    await store.create(record("a"))
    await store.create(record("b"))
    await store.append("a", chunk("for a"))
    await store.append("b", chunk("for b"))
    assert await store.history("a") == [chunk("for a")]
    assert await store.history("b") == [chunk("for b")]


@check
async def append_bumps_updated_at(store: SessionStore) -> None:
    await store.create(record("s", updated_at="2020-01-01T00:00:00Z"))
    await store.append("s", chunk("x"))
    stored = await store.get("s")
    assert stored is not None and stored.updated_at > "2020-01-01T00:00:00Z"


@check
async def append_to_an_unknown_session_raises_not_found(store: SessionStore) -> None:
    with raises(SessionNotFoundError, "'ghost'"):
        await store.append("ghost", chunk("x"))
    with raises(SessionNotFoundError, "'ghost'"):
        await store.extend("ghost", [chunk("x")])
    assert await store.history("ghost") == []
    assert await store.get("ghost") is None


@check
async def history_of_an_unknown_session_is_empty(store: SessionStore) -> None:
    assert await store.history("ghost") == []


@check
async def an_appended_update_is_a_snapshot_of_the_payload(store: SessionStore) -> None:
    await store.create(record("s"))
    update = chunk("before")
    await store.append("s", update)
    update["content"]["text"] = "after"
    history = await store.history("s")
    assert history == [chunk("before")]
    history[0]["content"]["text"] = "mutated"
    assert await store.history("s") == [chunk("before")]


@check
async def append_rejects_what_is_not_a_json_object_and_keeps_the_history(
    store: SessionStore,
) -> None:
    await store.create(record("s"))
    await store.append("s", chunk("ok"))
    bad: list[Any] = [{"bad": object()}, {"n": float("inf")}, ["not", "a", "dict"]]
    for payload in bad:
        with raises(TypeError):
            await store.append("s", payload)
    assert await store.history("s") == [chunk("ok")]


@check
async def unicode_and_lone_surrogates_round_trip(store: SessionStore) -> None:
    await store.create(record("s"))
    updates = [chunk("日本語 ✓ emoji 🎉"), chunk("lone \ud800 surrogate"), chunk("nul \x00")]
    await store.extend("s", updates)
    assert await store.history("s") == updates


@check
async def record_fields_keep_big_integers_floats_and_lone_surrogates(store: SessionStore) -> None:
    state = {"big": 10**30, "half": 0.5, "lone": "\ud800", "nested": [1, {"none": None}]}
    await store.create(record("s", meta={"state": state, "n": -(2**70)}))
    got = await store.get("s")
    assert got is not None and got.meta == {"state": state, "n": -(2**70)}


@check
async def concurrent_appends_from_many_tasks_keep_every_update_in_order(
    store: SessionStore,
) -> None:
    await store.create(record("s"))
    tasks, per_task = 8, 100

    async def writer(task: int) -> None:
        for i in range(per_task):
            await store.append("s", {"sessionUpdate": "agent_message_chunk", "task": task, "i": i})

    await asyncio.gather(*(writer(t) for t in range(tasks)))
    history = await store.history("s")
    assert len(history) == tasks * per_task
    for t in range(tasks):
        assert [u["i"] for u in history if u["task"] == t] == list(range(per_task))


@check
async def a_concurrent_append_to_an_unknown_session_fails_alone(store: SessionStore) -> None:
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
    history = await store.history("s")  # concurrent calls: either order is an order
    assert sorted(u["content"]["text"] for u in history) == ["1", "2"]
