"""Write-behind history: committed in batches, flushed at turn end, close and reads; a crash
(SIGKILL) loses at most the last window and never corrupts the store."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from _app_harness import TestClient, wired
from waiting import TIMEOUT, wait_until

from acpwire.agent.app import AgentApp, Turn
from acpwire.agent.chunks import coalesce
from acpwire.agent.history import HistoryWriter
from acpwire.client.connection import ClientSideConnection
from acpwire.protocol.errors import ConnectionClosedError
from acpwire.store import MemorySessionStore, SessionRecord, SqliteSessionStore
from acpwire.testing import SchemaValidator
from acpwire.transports.subprocess import spawn

SCRIPT = Path(__file__).resolve().parent / "app_agent_script.py"


class ObservedStore(MemorySessionStore):
    """A memory store that keeps each batch it is given and can hold or fail them."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[dict[str, list[dict[str, Any]]]] = []
        self.committed = asyncio.Event()
        self.entered = asyncio.Event()
        self.gate: asyncio.Event | None = None
        self.failure: Exception | None = None

    async def extend_many(self, batch: Mapping[str, Sequence[dict[str, Any]]]) -> set[str]:
        self.entered.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.failure is not None:
            raise self.failure
        self.batches.append({sid: list(updates) for sid, updates in batch.items()})
        missing = await super().extend_many(batch)
        self.committed.set()
        return missing


def update(n: int) -> dict[str, Any]:
    return {"sessionUpdate": "plan", "entries": [], "n": n}


def chunk(text: str, message: str = "m1") -> dict[str, Any]:
    return {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text},
        "messageId": message,
    }


async def sessions(store: MemorySessionStore, *ids: str) -> None:
    for sid in ids:
        await store.create(SessionRecord(session_id=sid, cwd="/work"))


# --------------------------------------------------------------------------- the writer


async def test_recorded_updates_are_committed_behind_without_a_flush() -> None:
    store = ObservedStore()
    await sessions(store, "s")
    writer = HistoryWriter(store, window=0.01)
    for n in range(3):
        await writer.record("s", update(n))
    assert store.batches == []  # recording returned before anything was written
    await asyncio.wait_for(store.committed.wait(), TIMEOUT)
    assert store.batches == [{"s": [update(0), update(1), update(2)]}]
    assert writer.pending == 0


async def test_one_batch_commits_every_session_recorded_in_the_window() -> None:
    store = ObservedStore()
    await sessions(store, "a", "b", "c")
    writer = HistoryWriter(store, window=0.01)
    for n in range(30):
        await writer.record("abc"[n % 3], update(n))
    await asyncio.wait_for(store.committed.wait(), TIMEOUT)
    assert len(store.batches) == 1
    for i, sid in enumerate("abc"):
        assert await store.history(sid) == [update(n) for n in range(i, 30, 3)]


async def test_a_message_still_streaming_is_committed_as_far_as_it_got() -> None:
    store = ObservedStore()
    await sessions(store, "s")
    writer = HistoryWriter(store, window=3600)
    await writer.record("s", chunk("hel"))
    await writer.record("s", chunk("lo "))
    await writer.flush()
    assert await store.history("s") == [chunk("hello ")]
    await writer.record("s", chunk("wor"))
    await writer.record("s", chunk("ld"))
    await writer.record("s", update(1))
    await writer.flush()
    assert await store.history("s") == [chunk("hello "), chunk("world"), update(1)]
    assert list(coalesce(await store.history("s"))) == [chunk("hello world"), update(1)]


async def test_recording_waits_for_a_commit_once_too_many_updates_are_pending() -> None:
    store = ObservedStore()
    await sessions(store, "s")
    store.gate = asyncio.Event()
    writer = HistoryWriter(store, window=3600, max_pending=5)
    for n in range(4):
        await writer.record("s", update(n))
    fifth = asyncio.ensure_future(writer.record("s", update(4)))
    await asyncio.wait_for(store.entered.wait(), TIMEOUT)
    assert not fifth.done()  # held by the store
    store.gate.set()
    await asyncio.wait_for(fifth, TIMEOUT)
    assert await store.history("s") == [update(n) for n in range(5)]


async def test_a_flush_returns_after_the_batch_in_flight_and_its_own() -> None:
    store = ObservedStore()
    await sessions(store, "s")
    store.gate = asyncio.Event()
    writer = HistoryWriter(store, window=3600)
    await writer.record("s", update(1))
    first = asyncio.ensure_future(writer.flush())
    await asyncio.wait_for(store.entered.wait(), TIMEOUT)
    await writer.record("s", update(2))
    second = asyncio.ensure_future(writer.flush())
    store.gate.set()
    await asyncio.wait_for(second, TIMEOUT)
    assert first.done()
    assert await store.history("s") == [update(1), update(2)]
    assert len(store.batches) == 2


async def test_a_store_failure_is_logged_and_later_updates_are_still_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = ObservedStore()
    await sessions(store, "s")
    writer = HistoryWriter(store, window=3600)
    store.failure = OSError("disk full")
    await writer.record("s", update(1))
    with caplog.at_level(logging.ERROR, logger="acpwire.agent"):
        await writer.flush()  # does not raise
    assert "could not record 1 updates of 1 sessions" in caplog.text
    store.failure = None
    await writer.record("s", update(2))
    await writer.flush()
    assert await store.history("s") == [update(2)]


async def test_updates_of_a_session_gone_from_the_store_are_dropped_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = ObservedStore()
    await sessions(store, "s")
    writer = HistoryWriter(store, window=3600)
    with caplog.at_level(logging.WARNING, logger="acpwire.agent"):
        for n in range(3):
            await writer.record("ghost", update(n))
            await writer.record("s", update(n))
            await writer.flush()
    assert caplog.text.count("session ghost is no longer in the store") == 1
    assert await store.history("s") == [update(n) for n in range(3)]


def test_a_writer_follows_its_app_from_one_event_loop_to_the_next() -> None:
    """Served by one asyncio.run after another: flushes that wait for each other still work."""
    store = ObservedStore()
    writer = HistoryWriter(store, window=3600)

    async def serve(n: int) -> None:
        store.gate, store.entered = asyncio.Event(), asyncio.Event()
        store.committed = asyncio.Event()
        if n == 1:
            await sessions(store, "s")
        await writer.record("s", update(n))
        first = asyncio.ensure_future(writer.flush())
        await asyncio.wait_for(store.entered.wait(), TIMEOUT)
        await writer.record("s", update(n + 10))
        second = asyncio.ensure_future(writer.flush())  # waits for the first one's lock
        await asyncio.sleep(0)
        store.gate.set()
        await asyncio.wait_for(asyncio.gather(first, second), TIMEOUT)

    asyncio.run(serve(1))
    asyncio.run(serve(2))
    assert asyncio.run(store.history("s")) == [update(1), update(11), update(2), update(12)]


def test_the_window_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        HistoryWriter(MemorySessionStore(), window=0)


# --------------------------------------------------------------------------- in an app


def held_app(store: MemorySessionStore, release: asyncio.Event) -> AgentApp:
    """Streams two chunks, then waits for ``release``; commits only at flush points."""
    app = AgentApp("held", store=store, auto_title=False, write_behind=3600)

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.say("hello ")
        await turn.say("world")
        await release.wait()

    return app


async def test_a_load_sees_a_message_another_connection_is_still_streaming(
    schema_validator: SchemaValidator,
) -> None:
    """Read-your-writes within the process: session/load flushes what is pending."""
    store, release = MemorySessionStore(), asyncio.Event()
    app = held_app(store, release)
    async with wired(app) as first:
        sid = await first.new_session()
        prompt = asyncio.ensure_future(first.agent.prompt(sid, "talk"))
        await first.client.wait_for(lambda: len(first.client.texts(sid)) == 2)
        assert await store.history(sid) == []  # nothing committed yet: the window is long
        loader = TestClient()
        async with wired(app, loader, schema_validator) as second:
            await second.agent.load_session(sid, "/work/project")
        assert loader.texts(sid) == ["hello world"]
        release.set()
        assert (await asyncio.wait_for(prompt, TIMEOUT)).stop_reason == "end_turn"
    await app.aclose()


async def test_the_answer_to_a_prompt_and_to_a_close_come_after_the_commit() -> None:
    store, release = MemorySessionStore(), asyncio.Event()
    app = held_app(store, release)
    release.set()
    async with wired(app) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "first")
        kinds = [u["sessionUpdate"] for u in await store.history(sid)]
        assert kinds == ["user_message_chunk", "agent_message_chunk"]

        release.clear()
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "second"))
        await w.client.wait_for(lambda: len(w.client.texts(sid)) == 4)
        await w.agent.close_session(sid)  # cancels the turn; its message so far is kept
        assert (await asyncio.wait_for(prompt, TIMEOUT)).stop_reason == "cancelled"
        texts = [u["content"]["text"] for u in await store.history(sid)]
        assert texts == ["first", "hello world", "second", "hello world"]
    await app.aclose()


# --------------------------------------------------------------------------- a crash


async def wait_until_committed(path: Path, session_id: str) -> list[dict[str, Any]]:
    """Wait (bounded) until the agent has committed part of its streamed message."""
    async with SqliteSessionStore(path) as reader:

        async def committed() -> list[dict[str, Any]] | None:
            history = await reader.history(session_id)
            streamed = any(u["sessionUpdate"] == "agent_message_chunk" for u in history)
            return history if streamed else None

        return await wait_until(committed, "part of the streamed message is committed")


@pytest.mark.slow
async def test_an_agent_killed_mid_stream_leaves_a_prefix_of_its_history_and_a_sound_file(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """SIGKILL while streaming: a new process loads what was committed, nothing corrupt."""
    db = tmp_path / "sessions.sqlite3"
    client = TestClient()
    transport = await spawn(sys.executable, [str(SCRIPT), f"sqlite:///{db.as_posix().lstrip('/')}"])
    conn = ClientSideConnection(client, transport)
    try:
        await conn.initialize()
        sid = (await conn.agent.new_session("/work/project")).session_id
        prompt = asyncio.ensure_future(conn.agent.prompt(sid, "stream forever"))
        committed = await wait_until_committed(db, sid)
        await client.wait_for(lambda: len(client.texts(sid)) > 2000)
        transport.process.kill()  # SIGKILL: no flush, no clean close
        with pytest.raises(ConnectionClosedError):
            await asyncio.wait_for(prompt, TIMEOUT)
    finally:
        await conn.close()
    streamed = "".join(client.texts(sid))
    assert committed[0]["sessionUpdate"] == "user_message_chunk"

    check = sqlite3.connect(db)
    try:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        check.close()

    loader = TestClient()
    transport = await spawn(sys.executable, [str(SCRIPT), str(db)])
    async with ClientSideConnection(loader, transport) as again:
        await again.initialize()
        await again.agent.load_session(sid, "/work/project")
        (replayed,) = loader.texts(sid)  # one message, merged across its batches
        # A prefix of what the agent streamed: whole chunks, in order, none missing.
        kept = replayed.count(" ")
        assert kept > 0 and replayed == "".join(f"c{i} " for i in range(kept))
        assert streamed.startswith(replayed[: len(streamed)])
        await again.agent.prompt(sid, "after the crash")
        assert loader.texts(sid)[-1] == "echo: after the crash"
    with contextlib.suppress(ProcessLookupError):
        transport.process.kill()


async def test_a_turn_that_changes_no_setting_costs_one_transaction() -> None:
    """The history commit already bumps updated_at; the unchanged record is not rewritten."""
    store = ObservedStore()
    updates: list[SessionRecord] = []
    real_update = store.update

    async def counting(record: SessionRecord, *, touch: bool = True) -> SessionRecord:
        updates.append(record)
        return await real_update(record, touch=touch)

    store.update = counting  # type: ignore[method-assign]
    app = AgentApp("quiet", store=store, auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        if turn.text == "remember":
            turn.session.state["remembered"] = True

    async with wired(app) as w:
        sid = await w.new_session()
        before = await store.get(sid)
        await w.agent.prompt(sid, "ping")
        assert (len(store.batches), len(updates)) == (1, 0)
        after = await store.get(sid)
        assert before is not None and after is not None and after.updated_at > before.updated_at
        await w.agent.prompt(sid, "remember")
        assert (len(store.batches), len(updates)) == (2, 1)
        saved = await store.get(sid)
        assert saved is not None and saved.meta["state"] == {"remembered": True}
        await w.agent.prompt(sid, "ping")
        assert (len(store.batches), len(updates)) == (3, 1)
    await app.aclose()
