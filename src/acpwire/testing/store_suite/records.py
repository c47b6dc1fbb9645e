"""Records: what ``create``, ``get`` and ``update`` keep, and what they refuse."""

from __future__ import annotations

from typing import Any

from ...store import SessionExistsError, SessionRecord, SessionStore
from .base import CheckGroup, chunk, listed_ids, raises, record

check = CheckGroup()
"""The checks of this module, in the order they are declared."""


@check
async def created_session_reads_back_with_every_field(store: SessionStore) -> None:
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
        owner="alice",
    )
    assert await store.create(original) == original
    assert await store.get("sess_1") == original


@check
async def get_of_an_unknown_session_is_none(store: SessionStore) -> None:
    assert await store.get("nope") is None


@check
async def updated_at_defaults_to_created_at(store: SessionStore) -> None:
    stored = await store.create(record("s", created_at="2024-05-06T07:08:09Z"))
    assert stored.updated_at == "2024-05-06T07:08:09Z"


@check
async def create_with_a_taken_id_raises_session_exists_and_keeps_the_first(
    store: SessionStore,
) -> None:
    await store.create(record("s", title="first"))
    with raises(SessionExistsError, "'s' already exists"):
        await store.create(record("s", title="second"))
    stored = await store.get("s")
    assert stored is not None and stored.title == "first"


@check
async def update_changes_info_fields_keeps_created_at_and_bumps_updated_at(
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


@check
async def update_without_touch_stores_the_given_updated_at(store: SessionStore) -> None:
    await store.create(record("s", created_at="2020-01-01T00:00:00Z"))
    stored = await store.update(
        record("s", title="t", updated_at="2021-06-01T12:00:00Z"), touch=False
    )
    assert stored.updated_at == "2021-06-01T12:00:00Z"
    assert await store.get("s") == stored


@check
async def update_of_an_unknown_session_inserts_it(store: SessionStore) -> None:
    stored = await store.update(record("new", title="hi"))
    assert await store.get("new") == stored
    assert await listed_ids(store) == ["new"]
    assert await store.history("new") == []


@check
async def update_leaves_the_history_alone(store: SessionStore) -> None:
    await store.create(record("s"))
    await store.append("s", chunk("a"))
    await store.update(record("s", title="t"))
    assert await store.history("s") == [chunk("a")]


@check
async def mutating_a_returned_record_changes_nothing_stored(store: SessionStore) -> None:
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


_MALFORMED: list[tuple[dict[str, Any], type[Exception]]] = [
    ({"updated_at": "yesterday"}, ValueError),
    ({"created_at": "2024-13-01T00:00:00Z"}, ValueError),
    ({"meta": {"x": object()}}, TypeError),
    ({"meta": {"x": float("nan")}}, TypeError),
    ({"meta": ["not", "a", "dict"]}, TypeError),
    ({"config_values": {"model": 3}}, TypeError),
    ({"additional_directories": "/not/a/list"}, TypeError),
    ({"title": 5}, TypeError),
    ({"title": "nul \x00 inside"}, ValueError),
    ({"cwd": "/lone/\ud800/surrogate"}, ValueError),
    ({"owner": "nul\x00"}, ValueError),
]


@check
async def a_malformed_record_is_rejected_and_not_stored(store: SessionStore) -> None:
    for fields, error in _MALFORMED:
        with raises(error):
            await store.create(record("bad", **fields))
        with raises(error):
            await store.update(record("bad", **fields))
        assert await store.get("bad") is None, fields
    with raises(TypeError):
        await store.create("not a record")  # type: ignore[arg-type]
    with raises(ValueError):
        await store.create(record(""))


@check
async def timestamps_with_offsets_sort_by_the_instant(store: SessionStore) -> None:
    # 10:00+02:00 is 08:00Z, earlier than 09:00Z.
    await store.create(record("offset", updated_at="2024-01-01T10:00:00+02:00"))
    await store.create(record("utc", updated_at="2024-01-01T09:00:00Z"))
    assert await listed_ids(store) == ["utc", "offset"]
