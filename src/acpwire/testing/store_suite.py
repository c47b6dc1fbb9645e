"""The behaviour every session store must show, as checks any test can run on any store.

acpwire runs these over its memory, SQLite and PostgreSQL stores; run them
over your own :class:`~acpwire.store.SessionStore` the same way. A check is
given an *opener*: a function returning a new store instance. Each check
starts from empty storage. Checks marked ``shared`` open two stores and need
both to see the same storage (a file, a database); leave them out for a store
whose instances share nothing (:func:`store_checks` with ``shared=False``).
Checks marked ``ledger`` need :class:`~acpwire.store.OwnerLedger` (the
owner claims several servers share); ``ledger=False`` leaves them out.

With pytest (and pytest-asyncio, or any plugin that runs ``async def`` tests):

.. code-block:: python

    import pytest
    from acpwire.testing.store_suite import store_checks

    @pytest.mark.parametrize("check", store_checks(shared=True), ids=str)
    async def test_my_store(check, tmp_path):
        await check.run(lambda: MyStore(tmp_path / "sessions.db"))

Checks fail with ``AssertionError``. For pytest's detailed assertion messages
call ``pytest.register_assert_rewrite("acpwire.testing.store_suite")`` in your
``conftest.py`` before this module is imported.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..store import (
    OwnerLedger,
    SessionExistsError,
    SessionNotFoundError,
    SessionRecord,
    SessionStore,
    StoreClosedError,
)

__all__ = ["STORE_CHECKS", "Opener", "StoreCheck", "store_checks"]

Opener = Callable[[], SessionStore]
"""Returns a new store instance (over the same storage, for ``shared`` checks)."""

StoreBody = Callable[[SessionStore], Awaitable[None]]
OpenerBody = Callable[[Opener], Awaitable[None]]


@dataclass(frozen=True)
class StoreCheck:
    """One behaviour of a store, named after what a user of the store observes."""

    name: str
    body: StoreBody | OpenerBody
    opens: bool = False
    """The body takes the opener (it opens and closes stores itself)."""
    shared: bool = False
    """The body needs two stores over the same storage."""
    ledger: bool = False
    """The store must be an :class:`~acpwire.store.OwnerLedger`."""

    def __str__(self) -> str:
        return self.name

    async def run(self, opener: Opener) -> None:
        """Run the check; raises ``AssertionError`` (or the store's error) if the store fails it."""
        if self.opens:
            await _as_opener_body(self.body)(opener)
            return
        store = opener()
        try:
            await _as_store_body(self.body)(store)
        finally:
            await store.aclose()


def _as_store_body(body: StoreBody | OpenerBody) -> StoreBody:
    return body  # type: ignore[return-value]  # StoreCheck.opens says which it is


def _as_opener_body(body: StoreBody | OpenerBody) -> OpenerBody:
    return body  # type: ignore[return-value]  # StoreCheck.opens says which it is


STORE_CHECKS: list[StoreCheck] = []
"""Every check, in the order they are declared here."""


def store_checks(*, shared: bool, ledger: bool = True) -> list[StoreCheck]:
    """The checks for a store; ``shared=False`` leaves out those that need shared storage,
    ``ledger=False`` those of :class:`~acpwire.store.OwnerLedger`."""
    return [c for c in STORE_CHECKS if (shared or not c.shared) and (ledger or not c.ledger)]


def _check(body: StoreBody) -> StoreBody:
    STORE_CHECKS.append(StoreCheck(body.__name__, body))
    return body


def _check_opening(*, shared: bool, ledger: bool = False) -> Callable[[OpenerBody], OpenerBody]:
    def register(body: OpenerBody) -> OpenerBody:
        STORE_CHECKS.append(
            StoreCheck(body.__name__, body, opens=True, shared=shared, ledger=ledger)
        )
        return body

    return register


def _ledger(store: SessionStore) -> OwnerLedger:
    assert isinstance(store, OwnerLedger), f"{type(store).__name__} is not an OwnerLedger"
    return store


# --------------------------------------------------------------------------- helpers


@contextmanager
def _raises(kind: type[BaseException], match: str | None = None) -> Generator[None, None, None]:
    try:
        yield
    except kind as exc:
        if match is not None and not re.search(match, str(exc)):
            raise AssertionError(
                f"{kind.__name__} raised, but {str(exc)!r} does not match {match!r}"
            ) from exc
        return
    raise AssertionError(f"{kind.__name__} was not raised")


def _chunk(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def _record(session_id: str, cwd: str = "/work/project", **fields: Any) -> SessionRecord:
    return SessionRecord(session_id=session_id, cwd=cwd, **fields)


async def _ids(
    store: SessionStore, *, cwd: str | None = None, owner: str | None = None
) -> list[str]:
    sessions, cursor = await store.list_sessions(cwd=cwd, owner=owner, limit=1000)
    assert cursor is None
    return [s.session_id for s in sessions]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


# --------------------------------------------------------------------------- records


@_check
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


@_check
async def get_of_an_unknown_session_is_none(store: SessionStore) -> None:
    assert await store.get("nope") is None


@_check
async def updated_at_defaults_to_created_at(store: SessionStore) -> None:
    stored = await store.create(_record("s", created_at="2024-05-06T07:08:09Z"))
    assert stored.updated_at == "2024-05-06T07:08:09Z"


@_check
async def create_with_a_taken_id_raises_session_exists_and_keeps_the_first(
    store: SessionStore,
) -> None:
    await store.create(_record("s", title="first"))
    with _raises(SessionExistsError, "'s' already exists"):
        await store.create(_record("s", title="second"))
    stored = await store.get("s")
    assert stored is not None and stored.title == "first"


@_check
async def update_changes_info_fields_keeps_created_at_and_bumps_updated_at(
    store: SessionStore,
) -> None:
    await store.create(
        _record("s", created_at="2020-01-01T00:00:00Z", updated_at="2020-01-01T00:00:00Z")
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


@_check
async def update_without_touch_stores_the_given_updated_at(store: SessionStore) -> None:
    await store.create(_record("s", created_at="2020-01-01T00:00:00Z"))
    stored = await store.update(
        _record("s", title="t", updated_at="2021-06-01T12:00:00Z"), touch=False
    )
    assert stored.updated_at == "2021-06-01T12:00:00Z"
    assert await store.get("s") == stored


@_check
async def update_of_an_unknown_session_inserts_it(store: SessionStore) -> None:
    stored = await store.update(_record("new", title="hi"))
    assert await store.get("new") == stored
    assert await _ids(store) == ["new"]
    assert await store.history("new") == []


@_check
async def update_leaves_the_history_alone(store: SessionStore) -> None:
    await store.create(_record("s"))
    await store.append("s", _chunk("a"))
    await store.update(_record("s", title="t"))
    assert await store.history("s") == [_chunk("a")]


@_check
async def mutating_a_returned_record_changes_nothing_stored(store: SessionStore) -> None:
    original = _record("s", meta={"list": [1]}, additional_directories=["/a"])
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


@_check
async def a_malformed_record_is_rejected_and_not_stored(store: SessionStore) -> None:
    for fields, error in _MALFORMED:
        with _raises(error):
            await store.create(_record("bad", **fields))
        with _raises(error):
            await store.update(_record("bad", **fields))
        assert await store.get("bad") is None, fields
    with _raises(TypeError):
        await store.create("not a record")  # type: ignore[arg-type]
    with _raises(ValueError):
        await store.create(_record(""))


@_check
async def timestamps_with_offsets_sort_by_the_instant(store: SessionStore) -> None:
    # 10:00+02:00 is 08:00Z, earlier than 09:00Z.
    await store.create(_record("offset", updated_at="2024-01-01T10:00:00+02:00"))
    await store.create(_record("utc", updated_at="2024-01-01T09:00:00Z"))
    assert await _ids(store) == ["utc", "offset"]


# --------------------------------------------------------------------------- history


@_check
async def history_returns_the_appended_updates_in_order(store: SessionStore) -> None:
    await store.create(_record("s"))
    updates = [
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}},
        _chunk("hel"),
        _chunk("lo"),
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read", "status": "pending"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"},
    ]
    for update in updates:
        await store.append("s", update)
    assert await store.history("s") == updates


@_check
async def extend_appends_a_batch_after_earlier_updates(store: SessionStore) -> None:
    await store.create(_record("s"))
    await store.append("s", _chunk("first"))
    await store.extend("s", [_chunk(str(i)) for i in range(500)])
    await store.extend("s", [])
    assert await store.history("s") == [_chunk("first")] + [_chunk(str(i)) for i in range(500)]


@_check
async def extend_many_appends_to_several_sessions_and_names_the_unknown_ones(
    store: SessionStore,
) -> None:
    await store.create(_record("a", updated_at="2020-01-01T00:00:00Z"))
    await store.create(_record("b", updated_at="2020-01-01T00:00:00Z"))
    await store.create(_record("quiet", updated_at="2020-01-01T00:00:00Z"))
    await store.append("a", _chunk("a0"))
    missing = await store.extend_many(
        {
            "b": [_chunk("b1"), _chunk("b2")],
            "ghost": [_chunk("lost")],
            "a": [_chunk("a1")],
            "quiet": [],
        }
    )
    assert missing == {"ghost"}
    assert await store.history("a") == [_chunk("a0"), _chunk("a1")]
    assert await store.history("b") == [_chunk("b1"), _chunk("b2")]
    assert await store.history("ghost") == []
    assert await store.get("ghost") is None
    quiet = await store.get("quiet")
    assert quiet is not None and quiet.updated_at == "2020-01-01T00:00:00Z"
    assert set((await _ids(store))[:2]) == {"a", "b"}
    assert await store.extend_many({}) == set()


@_check
async def extend_many_with_one_bad_payload_stores_nothing(store: SessionStore) -> None:
    await store.create(_record("a"))
    await store.create(_record("b"))
    with _raises(TypeError):
        await store.extend_many({"a": [_chunk("ok")], "b": [_chunk("ok"), {"bad": object()}]})
    assert await store.history("a") == []
    assert await store.history("b") == []


@_check
async def histories_of_sessions_are_separate(store: SessionStore) -> None:
    await store.create(_record("a"))
    await store.create(_record("b"))
    await store.append("a", _chunk("for a"))
    await store.append("b", _chunk("for b"))
    assert await store.history("a") == [_chunk("for a")]
    assert await store.history("b") == [_chunk("for b")]


@_check
async def append_bumps_updated_at(store: SessionStore) -> None:
    await store.create(_record("s", updated_at="2020-01-01T00:00:00Z"))
    await store.append("s", _chunk("x"))
    stored = await store.get("s")
    assert stored is not None and stored.updated_at > "2020-01-01T00:00:00Z"


@_check
async def append_to_an_unknown_session_raises_not_found(store: SessionStore) -> None:
    with _raises(SessionNotFoundError, "'ghost'"):
        await store.append("ghost", _chunk("x"))
    with _raises(SessionNotFoundError, "'ghost'"):
        await store.extend("ghost", [_chunk("x")])
    assert await store.history("ghost") == []
    assert await store.get("ghost") is None


@_check
async def history_of_an_unknown_session_is_empty(store: SessionStore) -> None:
    assert await store.history("ghost") == []


@_check
async def an_appended_update_is_a_snapshot_of_the_payload(store: SessionStore) -> None:
    await store.create(_record("s"))
    update = _chunk("before")
    await store.append("s", update)
    update["content"]["text"] = "after"
    history = await store.history("s")
    assert history == [_chunk("before")]
    history[0]["content"]["text"] = "mutated"
    assert await store.history("s") == [_chunk("before")]


@_check
async def append_rejects_what_is_not_a_json_object_and_keeps_the_history(
    store: SessionStore,
) -> None:
    await store.create(_record("s"))
    await store.append("s", _chunk("ok"))
    bad: list[Any] = [{"bad": object()}, {"n": float("inf")}, ["not", "a", "dict"]]
    for payload in bad:
        with _raises(TypeError):
            await store.append("s", payload)
    assert await store.history("s") == [_chunk("ok")]


@_check
async def unicode_and_lone_surrogates_round_trip(store: SessionStore) -> None:
    await store.create(_record("s"))
    updates = [_chunk("日本語 ✓ emoji 🎉"), _chunk("lone \ud800 surrogate"), _chunk("nul \x00")]
    await store.extend("s", updates)
    assert await store.history("s") == updates


@_check
async def record_fields_keep_big_integers_floats_and_lone_surrogates(store: SessionStore) -> None:
    state = {"big": 10**30, "half": 0.5, "lone": "\ud800", "nested": [1, {"none": None}]}
    await store.create(_record("s", meta={"state": state, "n": -(2**70)}))
    got = await store.get("s")
    assert got is not None and got.meta == {"state": state, "n": -(2**70)}


@_check
async def concurrent_appends_from_many_tasks_keep_every_update_in_order(
    store: SessionStore,
) -> None:
    await store.create(_record("s"))
    tasks, per_task = 8, 100

    async def writer(task: int) -> None:
        for i in range(per_task):
            await store.append("s", {"sessionUpdate": "agent_message_chunk", "task": task, "i": i})

    await asyncio.gather(*(writer(t) for t in range(tasks)))
    history = await store.history("s")
    assert len(history) == tasks * per_task
    for t in range(tasks):
        assert [u["i"] for u in history if u["task"] == t] == list(range(per_task))


@_check
async def a_concurrent_append_to_an_unknown_session_fails_alone(store: SessionStore) -> None:
    await store.create(_record("s"))
    results = await asyncio.gather(
        store.append("s", _chunk("1")),
        store.append("ghost", _chunk("x")),
        store.append("s", _chunk("2")),
        return_exceptions=True,
    )
    assert results[0] is None
    assert isinstance(results[1], SessionNotFoundError)
    assert results[2] is None
    history = await store.history("s")  # concurrent calls: either order is an order
    assert sorted(u["content"]["text"] for u in history) == ["1", "2"]


# --------------------------------------------------------------------------- list


@_check
async def list_puts_the_most_recently_updated_first(store: SessionStore) -> None:
    await store.create(_record("old", updated_at="2024-01-01T00:00:00Z"))
    await store.create(_record("newest", updated_at="2024-03-01T00:00:00Z"))
    await store.create(_record("middle", updated_at="2024-02-01T00:00:00Z"))
    assert await _ids(store) == ["newest", "middle", "old"]


@_check
async def list_breaks_timestamp_ties_by_session_id(store: SessionStore) -> None:
    for sid in ["b", "c", "a"]:
        await store.create(_record(sid, updated_at="2024-01-01T00:00:00Z"))
    assert await _ids(store) == ["c", "b", "a"]


@_check
async def activity_moves_a_session_to_the_front_of_the_list(store: SessionStore) -> None:
    await store.create(_record("a", updated_at="2024-01-01T00:00:00Z"))
    await store.create(_record("b", updated_at="2024-01-02T00:00:00Z"))
    await store.append("a", _chunk("x"))
    assert await _ids(store) == ["a", "b"]
    await store.update(_record("b", title="renamed"))
    assert await _ids(store) == ["b", "a"]


@_check
async def sessions_saved_one_after_another_list_newest_first(store: SessionStore) -> None:
    for sid in ["first", "second", "third"]:
        await store.update(_record(sid))
    assert await _ids(store) == ["third", "second", "first"]


@_check
async def the_cwd_filter_matches_exactly(store: SessionStore) -> None:
    for sid, cwd in [
        ("exact", "/work/a"),
        ("slash", "/work/a/"),
        ("child", "/work/a/b"),
        ("case", "/work/A"),
        ("prefix", "/work/ab"),
        ("exact2", "/work/a"),
    ]:
        await store.create(_record(sid, cwd=cwd, updated_at="2024-01-01T00:00:00Z"))
    assert sorted(await _ids(store, cwd="/work/a")) == ["exact", "exact2"]
    assert len(await _ids(store)) == 6
    assert await store.list_sessions(cwd="/nowhere") == ([], None)


@_check
async def the_list_of_an_empty_store_is_empty(store: SessionStore) -> None:
    assert await store.list_sessions() == ([], None)


@_check
async def list_returns_full_records(store: SessionStore) -> None:
    original = _record(
        "s", title="T", mode_id="m", config_values={"c": False}, meta={"x": 1}, owner="bob"
    )
    await store.create(original)
    sessions, _ = await store.list_sessions()
    assert sessions == [original]


@_check
async def cursor_pagination_visits_every_session_once(store: SessionStore) -> None:
    count = 23
    expected: list[str] = []
    for n in range(count):
        # Pairs of sessions share a timestamp so ties straddle page boundaries.
        stamp = f"2024-01-01T00:00:{n // 2:02d}Z"
        await store.create(_record(f"s{n:02d}", updated_at=stamp))
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


@_check
async def cursor_pagination_keeps_the_cwd_filter(store: SessionStore) -> None:
    for n in range(9):
        cwd = "/work/a" if n % 3 else "/work/b"
        await store.create(_record(f"s{n}", cwd=cwd, updated_at=f"2024-01-0{n + 1}T00:00:00Z"))
    first, cursor = await store.list_sessions(cwd="/work/a", limit=4)
    assert cursor is not None
    second, last = await store.list_sessions(cwd="/work/a", cursor=cursor, limit=4)
    assert last is None
    assert [s.session_id for s in first + second] == ["s8", "s7", "s5", "s4", "s2", "s1"]


@_check
async def deleting_sessions_between_pages_causes_no_duplicates(store: SessionStore) -> None:
    for n in range(6):
        await store.create(_record(f"s{n}", updated_at=f"2024-01-0{n + 1}T00:00:00Z"))
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
    _b64(b"not json"),
    _b64(b"\xff\xfe"),
    _b64(json.dumps({"k": 1}).encode()),
    _b64(json.dumps([1, "x", "s"]).encode()),
    _b64(json.dumps([99, 1, "s"]).encode()),
    _b64(json.dumps([1, 1.5, "s"]).encode()),
]


@_check
async def a_cursor_the_store_did_not_hand_out_raises_value_error(store: SessionStore) -> None:
    await store.create(_record("s"))
    for cursor in _BAD_CURSORS:
        with _raises(ValueError, "invalid session/list cursor"):
            await store.list_sessions(cursor=cursor)


@_check
async def a_limit_below_one_raises_value_error(store: SessionStore) -> None:
    for limit in (0, -1):
        with _raises(ValueError, "limit"):
            await store.list_sessions(limit=limit)


# --------------------------------------------------------------------------- owners


@_check
async def the_owner_filter_lists_only_that_principals_sessions(store: SessionStore) -> None:
    for n in range(7):
        owner = ("alice", "bob", None)[n % 3]
        cwd = "/work/a" if n < 4 else "/work/b"
        await store.create(
            _record(f"s{n}", cwd=cwd, owner=owner, updated_at=f"2024-01-0{n + 1}T00:00:00Z")
        )
    assert await _ids(store, owner="alice") == ["s6", "s3", "s0"]
    assert await _ids(store, owner="bob") == ["s4", "s1"]
    assert await _ids(store, owner="alice", cwd="/work/a") == ["s3", "s0"]
    assert await _ids(store, owner="carol") == []
    first, cursor = await store.list_sessions(owner="alice", limit=2)
    assert [s.session_id for s in first] == ["s6", "s3"] and cursor is not None
    rest, last = await store.list_sessions(owner="alice", cursor=cursor, limit=2)
    assert [s.session_id for s in rest] == ["s0"] and last is None


@_check
async def an_owner_once_stored_is_never_replaced_by_an_update(store: SessionStore) -> None:
    await store.create(_record("unowned"))
    claimed = await store.update(_record("unowned", owner="alice"), touch=False)
    assert claimed.owner == "alice"
    stolen = await store.update(_record("unowned", owner="mallory", title="mine now"))
    assert stolen.owner == "alice" and stolen.title == "mine now"
    cleared = await store.update(_record("unowned", owner=None))
    assert cleared.owner == "alice"
    stored = await store.get("unowned")
    assert stored is not None and stored.owner == "alice"
    assert await _ids(store, owner="mallory") == []


@_check_opening(shared=False, ledger=True)
async def claim_owner_records_the_first_principal_only(opener: Opener) -> None:
    store = opener()
    try:
        ledger = _ledger(store)
        await store.create(_record("s"))
        await store.create(_record("owned", owner="bob"))
        assert await ledger.claim_owner("s", "alice") == "alice"
        assert await ledger.claim_owner("s", "mallory") == "alice"
        assert await ledger.claim_owner("s", "alice") == "alice"
        assert await ledger.claim_owner("owned", "alice") == "bob"
        assert await ledger.claim_owner("missing", "alice") is None
        assert await store.get("missing") is None  # a claim creates nothing
        stored = await store.get("s")
        assert stored is not None and stored.owner == "alice"
        assert await _ids(store, owner="alice") == ["s"]
        for bad, kind in (("", ValueError), ("nul\x00", ValueError), (None, TypeError)):
            with _raises(kind):
                await ledger.claim_owner("s", bad)  # type: ignore[arg-type]
    finally:
        await store.aclose()


@_check_opening(shared=False, ledger=True)
async def owners_of_names_the_owner_of_each_stored_session(opener: Opener) -> None:
    store = opener()
    try:
        ledger = _ledger(store)
        await store.create(_record("a", owner="alice"))
        await store.create(_record("free"))
        many = [f"absent-{n}" for n in range(1200)]  # more than one query's worth of ids
        found = await ledger.owners_of(["a", "free", "a", *many])
        assert found == {"a": "alice", "free": None}
        assert await ledger.owners_of([]) == {}
    finally:
        await store.aclose()


@_check_opening(shared=True, ledger=True)
async def a_claim_made_through_one_store_binds_every_other(opener: Opener) -> None:
    first, second = opener(), opener()
    try:
        await first.create(_record("s"))
        claims = await asyncio.gather(
            _ledger(first).claim_owner("s", "alice"), _ledger(second).claim_owner("s", "bob")
        )
        winner = claims[0]
        assert winner in ("alice", "bob") and list(claims) == [winner, winner]
        assert await _ledger(second).owners_of(["s"]) == {"s": winner}
        assert await _ledger(first).claim_owner("s", "carol") == winner
    finally:
        await first.aclose()
        await second.aclose()


# --------------------------------------------------------------------------- delete


@_check
async def delete_removes_the_session_from_get_list_and_history(store: SessionStore) -> None:
    await store.create(_record("keep"))
    await store.create(_record("gone"))
    await store.append("gone", _chunk("x"))
    await store.delete("gone")
    assert await store.get("gone") is None
    assert await store.history("gone") == []
    assert await _ids(store) == ["keep"]
    assert await _ids(store, cwd="/work/project") == ["keep"]


@_check
async def delete_is_idempotent(store: SessionStore) -> None:
    await store.create(_record("s"))
    await store.delete("s")
    await store.delete("s")
    await store.delete("never-existed")
    assert await store.list_sessions() == ([], None)


@_check
async def a_recreated_session_starts_with_an_empty_history(store: SessionStore) -> None:
    await store.create(_record("s"))
    await store.append("s", _chunk("old"))
    await store.delete("s")
    await store.create(_record("s"))
    assert await store.history("s") == []


@_check
async def deleting_one_session_keeps_the_other_histories(store: SessionStore) -> None:
    await store.create(_record("a"))
    await store.create(_record("b"))
    await store.append("a", _chunk("a"))
    await store.append("b", _chunk("b"))
    await store.delete("a")
    assert await store.history("b") == [_chunk("b")]


# --------------------------------------------------------------------------- lifecycle


@_check_opening(shared=False)
async def calls_after_close_raise_store_closed(opener: Opener) -> None:
    store = opener()
    assert isinstance(store, SessionStore)
    await store.create(_record("s"))
    await store.aclose()
    await store.aclose()
    with _raises(StoreClosedError, "closed"):
        await store.get("s")
    with _raises(StoreClosedError, "closed"):
        await store.append("s", _chunk("x"))
    with _raises(StoreClosedError, "closed"):
        await store.list_sessions()


@_check_opening(shared=False)
async def a_store_works_as_an_async_context_manager(opener: Opener) -> None:
    async with opener() as store:
        await store.create(_record("s"))
        assert await store.get("s") is not None
    with _raises(StoreClosedError):
        await store.get("s")


# --------------------------------------------------------------------------- shared storage


@_check_opening(shared=True)
async def sessions_and_history_survive_reopening(opener: Opener) -> None:
    first = opener()
    original = _record("s", title="T", config_values={"m": "x"}, meta={"state": [1, 2]})
    updates = [_chunk(str(i)) for i in range(100)]
    try:
        await first.create(original)
        await first.create(_record("deleted"))
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
        assert await _ids(second) == ["s"]
        await second.append("s", _chunk("after restart"))
        assert (await second.history("s"))[-1] == _chunk("after restart")
    finally:
        await second.aclose()


@_check_opening(shared=True)
async def two_stores_on_the_same_storage_see_each_others_writes(opener: Opener) -> None:
    a, b = opener(), opener()
    try:
        await a.create(_record("from-a"))
        await b.create(_record("from-b"))
        with _raises(SessionExistsError):
            await b.create(_record("from-a"))

        async def writer(store: SessionStore, name: str) -> None:
            for i in range(50):
                await store.append("from-a", {"sessionUpdate": "x", "by": name, "i": i})

        await asyncio.gather(writer(a, "a"), writer(b, "b"))
        history = await b.history("from-a")
        assert await a.history("from-a") == history
        for name in ("a", "b"):
            assert [u["i"] for u in history if u["by"] == name] == list(range(50))
        assert sorted(await _ids(a)) == ["from-a", "from-b"]
        await b.delete("from-a")
        assert await a.get("from-a") is None
    finally:
        await a.aclose()
        await b.aclose()
