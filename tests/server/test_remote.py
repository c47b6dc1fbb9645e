"""The remote /acp endpoint served by uvicorn on 127.0.0.1, driven by acpwire clients over
WebSocket and Streamable HTTP (RFD streamable-http-websocket-transport)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from engine.test_behaviour import RecordingClient
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire._waits import within
from acpwire.client.connection import ClientSideConnection
from acpwire.server import Limits, ServedApp, asgi_app, serve_in_background
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports.base import Transport
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket

from ._agents import Agents

KINDS = ["websocket", "http"]
TOKEN = "test-token-0123456789abcdef"
AUTH = {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def agents() -> Agents:
    return Agents()


@pytest.fixture
async def served(agents: Agents) -> AsyncIterator[ServedApp]:
    async with serve_in_background(asgi_app(agents, auth=[TOKEN])) as server:
        yield server


async def open_transport(served: ServedApp, kind: str) -> Transport:
    if kind == "websocket":
        return await connect_websocket(served.ws_url, token=TOKEN)
    return await connect_http(served.url, token=TOKEN)


Connect = Callable[[], Awaitable[tuple[ClientSideConnection, RecordingClient, WireLog]]]


@pytest.fixture(params=KINDS)
async def connect(
    request: pytest.FixtureRequest, served: ServedApp, schema_validator: SchemaValidator
) -> AsyncIterator[Connect]:
    opened: list[tuple[ClientSideConnection, WireLog]] = []

    async def make() -> tuple[ClientSideConnection, RecordingClient, WireLog]:
        recorder = RecordingTransport(await open_transport(served, request.param))
        handler = RecordingClient()
        conn = ClientSideConnection(handler, recorder)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        opened.append((conn, recorder.log))
        return conn, handler, recorder.log

    yield make
    for conn, log in opened:
        await conn.close()
        schema_validator.validate_conversation(log.sent, log.received)
        schema_validator.validate_conversation(log.received, log.sent)


def prompt(text: str) -> list[Any]:
    return [s.TextContent(text=text)]


async def test_a_prompt_streams_its_updates_before_the_response(connect: Connect) -> None:
    conn, handler, _ = await connect()
    sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
    result = await asyncio.wait_for(conn.agent.prompt(sid, prompt("stream 20")), TIMEOUT)
    assert result.stop_reason == "end_turn"
    assert handler.texts() == [f"chunk {i}" for i in range(20)]


async def test_the_agent_asks_permission_and_the_client_answers(connect: Connect) -> None:
    conn, handler, log = await connect()
    sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
    result = await asyncio.wait_for(conn.agent.prompt(sid, prompt("ask")), TIMEOUT)
    assert result.stop_reason == "end_turn"
    assert handler.texts() == ["yes"]
    assert any(m.get("method") == "session/request_permission" for m in log.received)


async def test_cancel_ends_a_running_turn_as_cancelled(connect: Connect, agents: Agents) -> None:
    conn, handler, _ = await connect()
    sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
    gate = asyncio.Event()
    handler.permission_gate = gate
    turn = asyncio.ensure_future(conn.agent.prompt(sid, prompt("slow")))
    await _turn_started(agents, sid)
    # Other requests on the same connection are served while the slow turn runs.
    assert (await asyncio.wait_for(conn.agent.ext_method("_test/echo", {"a": 1}), TIMEOUT)) == {
        "echo": {"a": 1}
    }
    await conn.agent.cancel(sid)
    result = await asyncio.wait_for(turn, TIMEOUT)
    assert result.stop_reason == "cancelled"


async def test_concurrent_connections_each_get_their_own_agent(
    connect: Connect, agents: Agents
) -> None:
    clients = [await connect() for _ in range(3)]
    sessions = [
        (await asyncio.wait_for(c.agent.new_session("/tmp"), TIMEOUT)).session_id
        for c, _, _ in clients
    ]
    assert sessions == ["s1", "s1", "s1"]  # three separate agents
    results = await asyncio.wait_for(
        asyncio.gather(
            *(
                c.agent.prompt(sid, prompt(f"stream {n + 2}"))
                for n, ((c, _, _), sid) in enumerate(zip(clients, sessions, strict=True))
            )
        ),
        TIMEOUT,
    )
    assert [r.stop_reason for r in results] == ["end_turn"] * 3
    for n, (_, handler, _) in enumerate(clients):
        assert handler.texts() == [f"chunk {i}" for i in range(n + 2)]
    assert len(agents.made) == 3


async def _turn_started(agents: Agents, sid: str) -> None:
    """Until the agent runs a turn of ``sid`` (a request sent later may overtake a prompt:
    over HTTP they are separate POSTs)."""
    await wait_until(lambda: agents.made and sid in agents.made[0].turns, "the turn starts")


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
async def test_a_client_that_goes_away_cancels_its_turn_and_ends_its_agent(
    served: ServedApp, agents: Agents, kind: str
) -> None:
    transport = await open_transport(served, kind)
    conn = ClientSideConnection(RecordingClient(), transport)
    await asyncio.wait_for(conn.initialize(), TIMEOUT)
    sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
    turn = asyncio.ensure_future(conn.agent.prompt(sid, prompt("slow")))
    await _turn_started(agents, sid)
    (remote,) = served.app.host.connections.values()
    await conn.close()
    await asyncio.wait_for(remote.closed.wait(), TIMEOUT)
    assert served.app.host.connections == {}
    assert agents.made[0].cancelled_handlers == 1
    turn.cancel()
    with pytest.raises(BaseException):  # noqa: B017,PT011 - closed or cancelled, either is fine
        await turn


@pytest.mark.parametrize("kind", KINDS)
async def test_the_server_ending_a_connection_is_a_clean_end_of_input(
    served: ServedApp, kind: str
) -> None:
    transport = await open_transport(served, kind)
    await transport.send(
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
    )
    reply = await asyncio.wait_for(transport.receive(), TIMEOUT)
    assert isinstance(reply, bytes) and b'"result"' in reply
    (remote,) = served.app.host.connections.values()
    await remote.terminate()
    assert await asyncio.wait_for(transport.receive(), TIMEOUT) is None
    assert await transport.receive() is None
    await transport.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_an_idle_connection_is_closed(agents: Agents, kind: str) -> None:
    app = asgi_app(agents, auth=[TOKEN], limits=Limits(idle_timeout=0.2))
    async with serve_in_background(app) as served:
        transport = await open_transport(served, kind)
        conn = ClientSideConnection(RecordingClient(), transport)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        await asyncio.wait_for(conn.connection.wait_closed(), TIMEOUT)
        assert app.host.connections == {}
        await conn.close()


async def test_shutdown_waits_for_a_connection_another_end_is_tearing_down(
    agents: Agents,
) -> None:
    # An idle, stalled or ended connection is ended by a task of the host's, and leaves
    # host.connections as its teardown begins: shutdown must still wait for its agent.
    app = asgi_app(agents, auth=[TOKEN])
    async with serve_in_background(app) as served:
        conn = ClientSideConnection(RecordingClient(), await open_transport(served, "http"))
        await within(conn.initialize(), TIMEOUT)
        (remote,) = app.host.connections.values()
        app.host.spawn(remote.terminate("idle"))
        await asyncio.sleep(0)  # its teardown has begun
        assert app.host.connections == {} and not remote.life.closed.is_set()
        await app.host.aclose()
        assert remote.life.closed.is_set()
        await conn.close()


async def test_websocket_upgrade_returns_the_connection_id(served: ServedApp) -> None:
    transport = await connect_websocket(served.ws_url, token=TOKEN)
    assert transport.connection_id in served.app.host.connections
    await transport.close()


# -- Streamable HTTP status codes (RFD "Content Negotiation and Validation") -------------

INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
JSON = {"content-type": "application/json"}


async def test_http_status_codes_follow_the_rfd(served: ServedApp) -> None:
    url = served.url
    async with httpx.AsyncClient(timeout=TIMEOUT, headers=AUTH) as http:
        assert (
            await http.post(url, content=INIT, headers={"content-type": "text/plain"})
        ).status_code == 415
        assert (await http.post(url, content=b"[" + INIT + b"]", headers=JSON)).status_code == 501
        new = (
            b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}'
        )
        assert (await http.post(url, content=new, headers=JSON)).status_code == 400
        assert (
            await http.post(url, content=new, headers={**JSON, "acp-connection-id": "nope"})
        ).status_code == 404
        assert (await http.get(url, headers={"accept": "text/event-stream"})).status_code == 400
        assert (await http.get(url, headers={"accept": "application/json"})).status_code == 406
        assert (await http.delete(url)).status_code == 400
        assert (await http.put(url)).status_code == 405

        init = await http.post(url, content=INIT, headers=JSON)
        assert init.status_code == 200
        assert init.json()["id"] == 1 and "result" in init.json()
        cid = init.headers["acp-connection-id"]
        ids = {"acp-connection-id": cid}
        assert (
            await http.get(
                url, headers={**ids, "accept": "text/event-stream", "acp-session-id": "x"}
            )
        ).status_code == 404
        assert (await http.post(url, content=new, headers={**JSON, **ids})).status_code == 202
        prompt_msg = (
            b'{"jsonrpc":"2.0","id":3,"method":"session/prompt",'
            b'"params":{"sessionId":"s1","prompt":[]}}'
        )
        # session-scoped without Acp-Session-Id
        assert (
            await http.post(url, content=prompt_msg, headers={**JSON, **ids})
        ).status_code == 400
        assert (await http.delete(url, headers=ids)).status_code == 202
        assert (await http.delete(url, headers=ids)).status_code == 404
        assert (await http.post(url, content=new, headers={**JSON, **ids})).status_code == 404


async def test_the_session_new_answer_arrives_on_the_connection_stream(served: ServedApp) -> None:
    url = served.url
    async with httpx.AsyncClient(timeout=TIMEOUT, headers=AUTH) as http:
        init = await http.post(url, content=INIT, headers=JSON)
        ids = {"acp-connection-id": init.headers["acp-connection-id"]}
        headers = {**ids, "accept": "text/event-stream"}
        async with http.stream("GET", url, headers=headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            new = b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}'
            assert (await http.post(url, content=new, headers={**JSON, **ids})).status_code == 202

            async def first_data() -> str:
                async for line in stream.aiter_lines():
                    if line.startswith("data:"):
                        return line
                return ""

            line = await asyncio.wait_for(first_data(), TIMEOUT)
            assert '"sessionId":"s1"' in line.replace(" ", "")
            # A second stream for the same scope is refused while the first is open.
            assert (await http.get(url, headers=headers)).status_code == 409
        await http.delete(url, headers=ids)
