"""One update per message: the history keeps, and replays, each message's chunks as one update;
``AgentApp(chunk_interval=...)`` merges a model's tiny chunks live too."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from _app_harness import TestClient, kind, wired
from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.agent.app import AgentApp, Turn
from acpwire.agent.chunks import MERGED_TEXT_LIMIT, coalesce
from acpwire.store import MemorySessionStore, SqliteSessionStore
from acpwire.testing import SchemaValidator

WORDS = [f"w{i} " for i in range(2000)]


def chatty_app(store: object, **kwargs: Any) -> AgentApp:
    app = AgentApp("chatty", store=store, auto_title=False, **kwargs)  # type: ignore[arg-type]

    @app.prompt
    async def handle(turn: Turn) -> None:
        for word in WORDS:
            await turn.think(word)
        for word in WORDS:
            await turn.say(word)
        async with turn.tool("Look", kind="search") as call:
            await call.add("found")
        for word in WORDS[:10]:
            await turn.say(word)

    return app


def chunk_texts(updates: list[dict[str, Any]], of: str) -> list[str]:
    return [u["content"]["text"] for u in updates if u["sessionUpdate"] == of]


async def test_a_load_replays_2000_one_word_chunks_as_one_update_per_message(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """SESS-006: the whole conversation, in order, with each message's chunks merged."""
    app = chatty_app(SqliteSessionStore(tmp_path / "s.db"))
    async with wired(app) as first:
        sid = await first.new_session()
        await first.agent.prompt(sid, "talk")
        live = first.client.kinds(sid)
    assert live.count("agent_message_chunk") == 2010  # sent live one by one (no chunk_interval)

    loader = TestClient()
    async with wired(app, loader, schema_validator) as second:
        await second.agent.load_session(sid, "/work/project")
    replayed = [s.to_json(u) for u in loader.updates(sid)]
    assert [u["sessionUpdate"] for u in replayed] == [
        "user_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "tool_call",
        "tool_call_update",
        "tool_call_update",
        "agent_message_chunk",
    ]
    assert chunk_texts(replayed, "agent_thought_chunk") == ["".join(WORDS)]
    assert chunk_texts(replayed, "agent_message_chunk") == ["".join(WORDS), "".join(WORDS[:10])]
    first_message, second_message = (
        u for u in replayed if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert first_message["messageId"] != second_message["messageId"]
    await app.aclose()


async def test_the_store_holds_one_record_per_message_within_a_write_behind_window() -> None:
    store = MemorySessionStore()
    app = chatty_app(store, write_behind=3600)  # only the turn's end commits
    async with wired(app) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "talk")
    records = await store.history(sid)
    assert [r["sessionUpdate"] for r in records].count("agent_message_chunk") == 2
    assert len(records) == 7


async def test_a_message_committed_across_batches_is_still_replayed_as_one_update(
    schema_validator: SchemaValidator,
) -> None:
    """Each write-behind batch commits a streaming message as far as it got."""
    store = MemorySessionStore()
    app = AgentApp("slow", store=store, auto_title=False, write_behind=3600)

    @app.prompt
    async def handle(turn: Turn) -> None:
        for word in WORDS[:50]:
            await turn.say(word)
            await app.history.flush()  # as if a batch window ended after every word

    async with wired(app) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "talk")
    records = await store.history(sid)
    assert [r["sessionUpdate"] for r in records].count("agent_message_chunk") == 50
    loader = TestClient()
    async with wired(app, loader, schema_validator) as w:
        await w.agent.load_session(sid, "/work/project")
    assert loader.texts(sid) == ["".join(WORDS[:50])]
    await app.aclose()


async def test_a_history_written_chunk_by_chunk_is_still_replayed_merged(
    schema_validator: SchemaValidator,
) -> None:
    store = MemorySessionStore()
    app = chatty_app(store)
    async with wired(app) as w:
        sid = await w.new_session()
    # As an older acpwire (or another writer) recorded it: one record per chunk.
    await store.extend(
        sid,
        [
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": word},
                "messageId": "m1",
            }
            for word in WORDS
        ],
    )
    loader = TestClient()
    async with wired(app, loader, schema_validator) as w:
        await w.agent.load_session(sid, "/work/project")
    assert loader.texts(sid) == ["".join(WORDS)]


def test_only_plain_text_chunks_of_one_message_merge() -> None:
    def chunk(text: str, **extra: Any) -> dict[str, Any]:
        return {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text},
            **extra,
        }

    annotated = chunk("c")
    annotated["content"]["annotations"] = {"priority": 1}
    updates = [
        chunk("a", messageId="1"),
        chunk("b", messageId="1"),
        chunk("c", messageId="2"),
        annotated,
        chunk("d", _meta={"k": 1}),
        chunk("e", _meta={"k": 1}),
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "u1"}},
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "u2"}},
        {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "f"}},
        chunk("g"),
    ]
    merged = list(coalesce(updates))
    assert [(u["sessionUpdate"], u["content"]["text"]) for u in merged] == [
        ("agent_message_chunk", "ab"),
        ("agent_message_chunk", "c"),
        ("agent_message_chunk", "c"),
        ("agent_message_chunk", "de"),
        ("user_message_chunk", "u1"),
        ("user_message_chunk", "u2"),
        ("agent_thought_chunk", "f"),
        ("agent_message_chunk", "g"),
    ]
    assert merged[0]["messageId"] == "1" and merged[3]["_meta"] == {"k": 1}


def test_a_merged_update_stops_growing_at_the_limit() -> None:
    piece = "x" * 1000
    updates = [
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": piece}}
        for _ in range(200)
    ]
    merged = list(coalesce(updates))
    assert len(merged) > 1
    assert all(len(u["content"]["text"]) <= MERGED_TEXT_LIMIT for u in merged)
    assert "".join(u["content"]["text"] for u in merged) == piece * 200


async def test_chunk_interval_sends_a_burst_of_chunks_as_one_update_in_order(
    schema_validator: SchemaValidator,
) -> None:
    app = chatty_app(None, chunk_interval=0.05)
    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "talk")
        kinds = w.client.kinds(sid)
        thoughts = w.client.texts(sid, of="agent_thought_chunk")
        texts = w.client.texts(sid)
    # The handler never waited between its chunks, so each message went out whole.
    assert thoughts == ["".join(WORDS)]
    assert texts == ["".join(WORDS), "".join(WORDS[:10])]
    assert kinds.index("agent_message_chunk") < kinds.index("tool_call")


async def test_chunk_interval_sends_a_held_chunk_when_the_model_pauses() -> None:
    app = AgentApp("pausing", auto_title=False, chunk_interval=0.01)
    seen = asyncio.Event()

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.say("thinking about it")
        await asyncio.wait_for(seen.wait(), TIMEOUT)  # sent without a later update
        await turn.say("done")

    async with wired(app) as w:
        sid = await w.new_session()
        turn = asyncio.ensure_future(w.agent.prompt(sid, "go"))
        await w.client.wait_for(lambda: "agent_message_chunk" in w.client.kinds(sid))
        seen.set()
        assert (await asyncio.wait_for(turn, TIMEOUT)).stop_reason == "end_turn"
        assert w.client.texts(sid) == ["thinking about it", "done"]
        assert all(kind(u) != "tool_call" for u in w.client.updates(sid))


async def test_held_chunks_are_sent_before_a_cancelled_turn_answers() -> None:
    app = AgentApp("cancelled", auto_title=False, chunk_interval=60)
    held = asyncio.Event()

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.say("partial answer")
        held.set()
        await asyncio.Event().wait()

    async with wired(app) as w:
        sid = await w.new_session()
        turn = asyncio.ensure_future(w.agent.prompt(sid, "go"))
        await asyncio.wait_for(held.wait(), TIMEOUT)
        assert w.client.texts(sid) == []
        await w.agent.cancel(sid)
        assert (await asyncio.wait_for(turn, TIMEOUT)).stop_reason == "cancelled"
        assert w.client.texts(sid) == ["partial answer"]


AWKWARD_TEXTS = [
    "plain",
    'a "quote" and a back\\slash',
    "new\nline\ttab\r",
    "unicode é 中文 🎉",
    "\x00\x1f control characters",
    "</script> \u2028\u2029",
    "",
    "\x00acpwire text\x00",  # the marker the fast path encodes around
]


async def test_said_and_thought_text_goes_out_as_the_models_would_and_is_recorded(
    schema_validator: SchemaValidator,
) -> None:
    """turn.say/think of plain text skip building models: what is sent and recorded is
    still exactly what the models encode to (and valid against the schema)."""
    store = MemorySessionStore()
    app = AgentApp("texts", store=store, auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        for text in AWKWARD_TEXTS:
            await turn.think(text)
        for text in AWKWARD_TEXTS:
            await turn.say(text)

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        await w.agent.prompt(sid, "go")
        sent = [m["params"] for m in w.log.sent if m.get("method") == "session/update"]
        history = await store.history(sid)
    thought_id = sent[0]["update"]["messageId"]
    message_id = sent[len(AWKWARD_TEXTS)]["update"]["messageId"]
    expected = [
        s.SessionNotification(
            session_id=sid,
            update=s.AgentThoughtChunk(content=s.TextContent(text=t), message_id=thought_id),
        )
        for t in AWKWARD_TEXTS
    ] + [
        s.SessionNotification(
            session_id=sid,
            update=s.AgentMessageChunk(content=s.TextContent(text=t), message_id=message_id),
        )
        for t in AWKWARD_TEXTS
    ]
    assert sent == [s.to_json(e) for e in expected]
    merged = {
        u["sessionUpdate"]: u
        for u in coalesce(history)
        if u["sessionUpdate"] != "user_message_chunk"
    }
    assert merged["agent_thought_chunk"] == s.to_json(
        s.AgentThoughtChunk(
            content=s.TextContent(text="".join(AWKWARD_TEXTS)), message_id=thought_id
        )
    )
    assert merged["agent_message_chunk"] == s.to_json(
        s.AgentMessageChunk(
            content=s.TextContent(text="".join(AWKWARD_TEXTS)), message_id=message_id
        )
    )
