"""Two workers, one store: a session belongs to its principal on every worker.

Each worker is its own endpoint with its own agent and its own store object over one
database (PostgreSQL on the test cluster, or one SQLite file), as ``acp serve --demo
--store URL`` runs on several machines. A claim made through one worker binds the others.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import AsyncExitStack
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import pytest
from engine.test_behaviour import RecordingClient

from acpwire.client.connection import ClientSideConnection
from acpwire.server import ServedApp, SessionOwners, asgi_app, serve_in_background
from acpwire.server.security import token_principal
from acpwire.store import SessionStore, SqliteSessionStore
from acpwire.store.postgres import PostgresSessionStore
from acpwire.testing.postgres import PostgresCluster
from acpwire.transports.base import Transport
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket
from server.test_isolation import (
    ALICE,
    BOB,
    SECRET,
    TIMEOUT,
    make_app,
    not_found,
    replayed_to,
    text,
)

StoreFactory = Callable[[], SessionStore]


@pytest.fixture(params=[pytest.param("postgresql", marks=pytest.mark.slow), "sqlite"])
async def shared_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[StoreFactory]:
    """Opens a new store object over one shared database each time it is called."""
    if request.param == "sqlite":
        yield lambda: SqliteSessionStore(tmp_path / "sessions.sqlite3")
        return
    cluster: PostgresCluster = request.getfixturevalue("postgres_cluster")
    dsn, schema = cluster.dsn(), f"owners_{uuid.uuid4().hex[:12]}"
    yield lambda: PostgresSessionStore(dsn, schema=schema)
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


@pytest.fixture
async def workers(shared_store: StoreFactory) -> AsyncIterator[list[ServedApp]]:
    async with AsyncExitStack() as stack:
        served: list[ServedApp] = []
        for _ in range(2):
            app = make_app(shared_store())
            stack.push_async_callback(app.aclose)
            # No owners= given: the endpoint keeps claims in the agent's store.
            endpoint = asgi_app(app, auth=[ALICE, BOB])
            served.append(await stack.enter_async_context(serve_in_background(endpoint)))
        yield served


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["websocket", "http"])
async def test_a_session_created_on_one_worker_is_hidden_from_another_principal_on_every_worker(
    workers: list[ServedApp], transport: str
) -> None:
    async def connect(
        worker: ServedApp, token: str
    ) -> tuple[ClientSideConnection, RecordingClient]:
        inner: Transport
        if transport == "websocket":
            inner = await connect_websocket(worker.ws_url, token=token)
        else:
            inner = await connect_http(worker.url, token=token)
        handler = RecordingClient()
        conn = ClientSideConnection(handler, inner)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        return conn, handler

    first, second = workers
    alice, _ = await connect(first, ALICE)
    sid = (await asyncio.wait_for(alice.agent.new_session("/tmp"), TIMEOUT)).session_id
    await asyncio.wait_for(alice.agent.prompt(sid, text(SECRET)), TIMEOUT)

    for worker in (second, first):  # the worker that never saw the claim, and the one that did
        bob, bob_sees = await connect(worker, BOB)
        listed = await asyncio.wait_for(bob.agent.list_sessions(), TIMEOUT)
        assert sid not in [info.session_id for info in listed.sessions]
        await not_found(bob.agent.load_session(sid, "/tmp"))
        await not_found(bob.agent.resume_session(sid, "/tmp"))
        await not_found(bob.agent.prompt(sid, text("what did alice say?")))
        await not_found(bob.agent.delete_session(sid))
        assert SECRET not in repr(bob_sees.updates)
        await bob.close()

    # Alice finds it on the other worker, replays it and goes on there.
    again, replayed = await connect(second, ALICE)
    listed = await asyncio.wait_for(again.agent.list_sessions(), TIMEOUT)
    assert [info.session_id for info in listed.sessions] == [sid]
    await asyncio.wait_for(again.agent.load_session(sid, "/tmp"), TIMEOUT)
    await replayed_to(replayed, f"noted: {SECRET}")
    result = await asyncio.wait_for(again.agent.prompt(sid, text("still mine")), TIMEOUT)
    assert result.stop_reason == "end_turn"
    await again.close()
    await alice.close()


async def test_bobs_session_created_on_the_second_worker_is_not_listed_to_alice_on_the_first(
    workers: list[ServedApp],
) -> None:
    first, second = workers
    bob = ClientSideConnection(RecordingClient(), await connect_websocket(second.ws_url, token=BOB))
    await asyncio.wait_for(bob.initialize(), TIMEOUT)
    bobs = (await asyncio.wait_for(bob.agent.new_session("/tmp"), TIMEOUT)).session_id
    alice = ClientSideConnection(
        RecordingClient(), await connect_websocket(first.ws_url, token=ALICE)
    )
    await asyncio.wait_for(alice.initialize(), TIMEOUT)
    alices = (await asyncio.wait_for(alice.agent.new_session("/tmp"), TIMEOUT)).session_id
    listed = await asyncio.wait_for(alice.agent.list_sessions(), TIMEOUT)
    assert [info.session_id for info in listed.sessions] == [alices]
    listed = await asyncio.wait_for(bob.agent.list_sessions(), TIMEOUT)
    assert [info.session_id for info in listed.sessions] == [bobs]
    await alice.close()
    await bob.close()


async def test_a_session_new_writes_its_owner_with_the_session_in_one_statement(
    shared_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent runs in the server's process on the store claims go to: it stores the
    session with its owner, and the endpoint sends no separate claim (one write, not two)."""
    store = shared_store()
    claims: list[str] = []
    claim_owner = store.claim_owner  # type: ignore[attr-defined]

    async def counted(session_id: str, principal: str) -> str | None:
        claims.append(session_id)
        owner: str | None = await claim_owner(session_id, principal)
        return owner

    monkeypatch.setattr(store, "claim_owner", counted)
    app = make_app(store)
    async with AsyncExitStack() as stack:
        stack.push_async_callback(app.aclose)
        worker = await stack.enter_async_context(
            serve_in_background(asgi_app(app, auth=[ALICE, BOB]))
        )
        alice = ClientSideConnection(
            RecordingClient(), await connect_websocket(worker.ws_url, token=ALICE)
        )
        stack.push_async_callback(alice.close)
        await asyncio.wait_for(alice.initialize(), TIMEOUT)
        sid = (await asyncio.wait_for(alice.agent.new_session("/tmp"), TIMEOUT)).session_id

        other = shared_store()  # what another worker reads
        stack.push_async_callback(other.aclose)
        stored = await other.get(sid)
        assert stored is not None and stored.owner == token_principal(ALICE)
        assert claims == []
        listed = await asyncio.wait_for(alice.agent.list_sessions(), TIMEOUT)
        assert [info.session_id for info in listed.sessions] == [sid]


class _BrokenLedger:
    """A store whose database has gone away: every owner call fails."""

    async def claim_owner(self, session_id: str, principal: str) -> str | None:
        raise OSError("connection refused")

    async def owners_of(self, session_ids: Collection[str]) -> dict[str, str | None]:
        raise OSError("connection refused")


async def test_when_the_store_cannot_be_reached_a_worker_fails_closed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    owners = SessionOwners(ledger=_BrokenLedger())
    # Its own claims still isolate on this worker...
    assert await owners.claim("s1", "alice")
    assert await owners.allows("alice", "s1") and not await owners.allows("bob", "s1")
    # ...and sessions it has not seen claimed are nobody's (several principals).
    assert not await owners.allows("alice", "elsewhere")
    assert await owners.visible("alice", ["s1", "elsewhere"]) == {"s1"}
    assert "cannot record the owner of session s1" in caplog.text
    assert "cannot read session owners" in caplog.text
