"""Isolation by principal (docs/security.md): sessions and connection ids belong to the
principal that made them. Two users of one endpoint, each with a token, over real sockets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest
from engine.test_behaviour import RecordingClient
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.agent.app import AgentApp, Turn
from acpwire.client.connection import ClientSideConnection
from acpwire.protocol.errors import ErrorCode, RequestError
from acpwire.server import ServedApp, SessionOwners, asgi_app, serve_in_background
from acpwire.store import MemorySessionStore, SessionStore
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
SECRET = "the launch code is 0000"


def make_app(store: SessionStore) -> AgentApp:
    app = AgentApp("isolation-test", store=store)

    @app.prompt
    async def note(turn: Turn) -> None:
        await turn.say(f"noted: {turn.text}")

    return app


@pytest.fixture
async def served() -> AsyncIterator[ServedApp]:
    app = asgi_app(make_app(MemorySessionStore()), auth=[ALICE, BOB])
    async with serve_in_background(app) as server:
        yield server


Connect = Callable[[str], Awaitable[tuple[ClientSideConnection, RecordingClient]]]


@pytest.fixture(params=["websocket", "http"])
async def connect(
    request: pytest.FixtureRequest, served: ServedApp, schema_validator: SchemaValidator
) -> AsyncIterator[Connect]:
    opened: list[tuple[ClientSideConnection, WireLog]] = []

    async def make(token: str) -> tuple[ClientSideConnection, RecordingClient]:
        if request.param == "websocket":
            inner = await connect_websocket(served.ws_url, token=token)
        else:
            inner = await connect_http(served.url, token=token)
        recorder = RecordingTransport(inner)
        handler = RecordingClient()
        conn = ClientSideConnection(handler, recorder)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        opened.append((conn, recorder.log))
        return conn, handler

    yield make
    for conn, log in opened:
        await conn.close()
        schema_validator.validate_conversation(log.sent, log.received)
        schema_validator.validate_conversation(log.received, log.sent)


def text(value: str) -> list[s.ContentBlock]:
    return [s.TextContent(text=value)]


async def replayed_to(handler: RecordingClient, expected: str) -> None:
    """Wait until ``handler`` has seen ``expected``: over HTTP the replay comes on the
    session stream, a different TCP connection from the answer's."""
    await wait_until(lambda: expected in handler.texts(), f"{expected!r} is replayed")


async def not_found(call: Awaitable[object]) -> None:
    with pytest.raises(RequestError) as info:
        await asyncio.wait_for(call, TIMEOUT)
    assert info.value.code == ErrorCode.RESOURCE_NOT_FOUND


@pytest.mark.slow
async def test_another_principal_cannot_see_load_or_prompt_a_session_its_owner_can_reattach(
    connect: Connect,
) -> None:
    alice, _ = await connect(ALICE)
    sid = (await asyncio.wait_for(alice.agent.new_session("/tmp"), TIMEOUT)).session_id
    await asyncio.wait_for(alice.agent.prompt(sid, text(SECRET)), TIMEOUT)

    bob, bob_sees = await connect(BOB)
    bobs_own = (await asyncio.wait_for(bob.agent.new_session("/tmp"), TIMEOUT)).session_id
    listed = await asyncio.wait_for(bob.agent.list_sessions(), TIMEOUT)
    assert [info.session_id for info in listed.sessions] == [bobs_own]
    await not_found(bob.agent.load_session(sid, "/tmp"))
    await not_found(bob.agent.resume_session(sid, "/tmp"))
    await not_found(bob.agent.prompt(sid, text("what did alice say?")))
    await not_found(bob.agent.delete_session(sid))
    await bob.agent.cancel(sid)  # a notification: dropped, nothing to answer
    assert SECRET not in repr(bob_sees.updates)

    # Alice, from a second connection, finds it, reloads it (history included) and goes on.
    again, replayed = await connect(ALICE)
    listed = await asyncio.wait_for(again.agent.list_sessions(), TIMEOUT)
    assert sid in [info.session_id for info in listed.sessions]
    assert bobs_own not in [info.session_id for info in listed.sessions]
    await asyncio.wait_for(again.agent.load_session(sid, "/tmp"), TIMEOUT)
    await replayed_to(replayed, f"noted: {SECRET}")
    result = await asyncio.wait_for(again.agent.prompt(sid, text("still mine")), TIMEOUT)
    assert result.stop_reason == "end_turn"


async def test_a_connection_id_is_unknown_to_every_other_principal(served: ServedApp) -> None:
    init = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
    new = b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}'
    json = {"content-type": "application/json"}
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        as_alice = {"authorization": f"Bearer {ALICE}"}
        as_bob = {"authorization": f"Bearer {BOB}"}
        answer = await http.post(served.url, content=init, headers={**json, **as_alice})
        cid = answer.headers["acp-connection-id"]
        ws = await connect_websocket(served.ws_url, token=ALICE)
        assert ws.connection_id is not None
        for stolen in (cid, ws.connection_id):
            ids = {"acp-connection-id": stolen}
            post = await http.post(served.url, content=new, headers={**json, **ids, **as_bob})
            assert post.status_code == 404
            get = await http.get(
                served.url, headers={**ids, **as_bob, "accept": "text/event-stream"}
            )
            assert get.status_code == 404
            assert (await http.delete(served.url, headers={**ids, **as_bob})).status_code == 404
        # Still Alice's, and still working.
        post = await http.post(
            served.url, content=new, headers={**json, "acp-connection-id": cid, **as_alice}
        )
        assert post.status_code == 202
        await ws.close()
        delete = await http.delete(served.url, headers={"acp-connection-id": cid, **as_alice})
        assert delete.status_code == 202


async def test_connection_ids_are_unguessable(served: ServedApp) -> None:
    ids = set()
    for _ in range(20):
        transport = await connect_websocket(served.ws_url, token=ALICE)
        assert transport.connection_id is not None
        ids.add(transport.connection_id)
        await transport.close()
    assert len(ids) == 20
    # secrets.token_urlsafe(24): 32 characters of base64url, 192 random bits.
    assert all(len(i) == 32 for i in ids)


async def test_session_ownership_survives_a_restart_with_an_owners_file(tmp_path: Path) -> None:
    store = MemorySessionStore()  # the agent's sessions outlive the server
    owners_file = tmp_path / "owners.jsonl"

    async def connect(
        served: ServedApp, token: str
    ) -> tuple[ClientSideConnection, RecordingClient]:
        handler = RecordingClient()
        conn = ClientSideConnection(handler, await connect_websocket(served.ws_url, token=token))
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        return conn, handler

    app = asgi_app(make_app(store), auth=[ALICE, BOB], owners=SessionOwners(owners_file))
    async with serve_in_background(app) as served:
        alice, _ = await connect(served, ALICE)
        sid = (await asyncio.wait_for(alice.agent.new_session("/tmp"), TIMEOUT)).session_id
        await asyncio.wait_for(alice.agent.prompt(sid, text(SECRET)), TIMEOUT)
        await alice.close()

    app = asgi_app(make_app(store), auth=[ALICE, BOB], owners=SessionOwners(owners_file))
    async with serve_in_background(app) as served:
        bob, _ = await connect(served, BOB)
        assert (await asyncio.wait_for(bob.agent.list_sessions(), TIMEOUT)).sessions == []
        await not_found(bob.agent.load_session(sid, "/tmp"))
        await bob.close()
        alice, replayed = await connect(served, ALICE)
        listed = await asyncio.wait_for(alice.agent.list_sessions(), TIMEOUT)
        assert [info.session_id for info in listed.sessions] == [sid]
        await asyncio.wait_for(alice.agent.load_session(sid, "/tmp"), TIMEOUT)
        await replayed_to(replayed, f"noted: {SECRET}")
        await alice.close()


async def test_the_owners_file_records_claims_and_deletions(tmp_path: Path) -> None:
    path = tmp_path / "owners.jsonl"
    owners = SessionOwners(path)
    assert await owners.claim("s1", "alice")
    assert not await owners.claim("s1", "bob")
    assert await owners.claim("s2", "bob")
    await owners.forget("s2")
    owners.close()
    with path.open("ab") as f:
        f.write(b'{"session": "torn')  # a crash mid-line
    again = SessionOwners(path)
    assert await again.owner("s1") == "alice" and await again.owner("s2") is None
    assert not await again.allows("bob", "s1") and not await again.allows("bob", "unknown")
    assert path.stat().st_mode & 0o077 == 0
    again.close()


async def test_unclaimed_sessions_belong_to_the_default_owner_whose_claims_stay_in_memory(
    tmp_path: Path,
) -> None:
    path = tmp_path / "owners.jsonl"
    owners = SessionOwners(path, default_owner="solo")
    assert await owners.allows("solo", "created-before-the-server")
    assert await owners.claim("s1", "solo") and await owners.claim("s2", "other")
    owners.close()
    # A later run with a different sole principal (a new generated token) still sees s1.
    later = SessionOwners(path, default_owner="solo-2")
    assert await later.allows("solo-2", "s1") and not await later.allows("solo-2", "s2")
    later.close()


async def test_the_owners_map_is_bounded_and_compacted(tmp_path: Path) -> None:
    path = tmp_path / "owners.jsonl"
    owners = SessionOwners(path, max_sessions=10)
    for i in range(3000):
        await owners.claim(f"s{i}", "alice")
    assert await owners.owner("s0") is None and await owners.owner("s2999") == "alice"
    owners.close()
    again = SessionOwners(path, max_sessions=10)  # rewrites the file down to its 10 entries
    again.close()
    assert len(path.read_text().splitlines()) == 10
