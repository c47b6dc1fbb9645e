"""HTTP/2 on the endpoint (RFD: Streamable HTTP requires HTTP/2): h2c on plain TCP, one TCP
connection per client for its connection stream, its session streams and its POSTs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from engine.test_behaviour import RecordingClient

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.server import Limits, RequestHead, ServedApp, asgi_app, serve_in_background
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket

from ._agents import Agents

TIMEOUT = 10
TOKEN = "h2-token-0123456789abcdef"


class Peers:
    """An authentication hook that records the peer (address, port) of every request."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int] | None] = []

    async def __call__(self, request: RequestHead) -> str | None:
        self.seen.append(request.client)
        return "me" if request.headers.get("authorization") == f"Bearer {TOKEN}" else None


@pytest.fixture
async def peers() -> Peers:
    return Peers()


@pytest.fixture
async def served(peers: Peers) -> AsyncIterator[ServedApp]:
    async with serve_in_background(asgi_app(Agents(), auth=peers)) as server:
        yield server


async def test_one_http2_client_uses_one_tcp_connection_for_every_stream(
    served: ServedApp, peers: Peers
) -> None:
    transport = await connect_http(served.url, token=TOKEN, http2=True)
    handler = RecordingClient()
    conn = ClientSideConnection(handler, transport)
    await asyncio.wait_for(conn.initialize(), TIMEOUT)
    sessions = [
        (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
        for _ in range(5)
    ]
    results = await asyncio.wait_for(
        asyncio.gather(
            *(conn.agent.prompt(sid, [s.TextContent(text="stream 3")]) for sid in sessions)
        ),
        TIMEOUT,
    )
    assert [r.stop_reason for r in results] == ["end_turn"] * 5
    assert len(handler.texts()) == 15
    (remote,) = served.app.host.connections.values()
    assert sorted(remote.sessions) == sorted(sessions)
    assert all(box.attached for box in remote.sessions.values())  # six SSE streams open...
    assert len(peers.seen) > 12  # ...and every POST...
    assert len(set(peers.seen)) == 1  # ...on one TCP connection
    await conn.close()


async def test_h2c_is_what_an_http_url_with_http2_speaks(served: ServedApp) -> None:
    async with httpx.AsyncClient(http1=False, http2=True, timeout=TIMEOUT) as http:
        response = await http.post(
            served.url, content=b"{}", headers={"authorization": f"Bearer {TOKEN}"}
        )
        assert response.http_version == "HTTP/2"
        assert response.status_code == 415  # reached the endpoint itself
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:  # and HTTP/1.1 on the same port
        response = await http.post(
            served.url, content=b"{}", headers={"authorization": f"Bearer {TOKEN}"}
        )
        assert response.http_version == "HTTP/1.1"
        assert response.status_code == 415


async def test_a_session_new_answer_is_not_held_back_by_idle_session_streams(
    peers: Peers,
) -> None:
    # httpx's own HTTP/2 (httpcore 1.0) let an idle SSE stream hold its connection's read
    # lock while the answer sat in memory, until the next keepalive; keepalives are off
    # here so such a wait would never end.
    app = asgi_app(Agents(), auth=peers, keepalive=None)
    async with serve_in_background(app) as served:
        transport = await connect_http(served.url, token=TOKEN, http2=True)
        conn = ClientSideConnection(RecordingClient(), transport)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        for n in range(1, 9):
            new = await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)
            assert new.session_id == f"s{n}"
        assert len(set(peers.seen)) == 1
        await conn.close()


async def test_sessions_beyond_the_per_connection_stream_cap_share_the_connection_stream(
    peers: Peers,
) -> None:
    limits = Limits(max_sessions_per_connection=2, http2_max_streams=5)
    async with serve_in_background(asgi_app(Agents(), auth=peers, limits=limits)) as served:
        transport = await connect_http(served.url, token=TOKEN, http2=True)
        handler = RecordingClient()
        conn = ClientSideConnection(handler, transport)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        sessions = [
            (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
            for _ in range(5)
        ]
        results = await asyncio.wait_for(
            asyncio.gather(
                *(conn.agent.prompt(sid, [s.TextContent(text="stream 2")]) for sid in sessions)
            ),
            TIMEOUT,
        )
        assert [r.stop_reason for r in results] == ["end_turn"] * 5
        assert len(handler.texts()) == 10
        (remote,) = served.app.host.connections.values()
        assert len(remote.sessions) == 2  # two own streams; three sessions on the connection's
        assert len(set(peers.seen)) == 1
        await conn.close()


class Heads:
    """An authentication hook that keeps every request head it sees."""

    def __init__(self) -> None:
        self.seen: list[RequestHead] = []

    async def __call__(self, request: RequestHead) -> str | None:
        self.seen.append(request)
        return "me"


@pytest.mark.parametrize("server_side", [False, True], ids=["off", "on"])
async def test_websocket_compression_is_off_unless_the_server_turns_it_on(
    server_side: bool,
) -> None:
    from websockets.asyncio.client import connect

    heads = Heads()
    app = asgi_app(Agents(), auth=heads)
    async with serve_in_background(app, websocket_compression=server_side) as served:
        # A client that offers deflate (as the TypeScript SDK's `ws` does by default)...
        async with connect(served.ws_url, compression="deflate") as ws:
            assert ws.response is not None
            accepted = ws.response.headers.get("sec-websocket-extensions")
        assert (accepted is not None) == server_side
        assert (
            heads.seen[-1]
            .headers.get("sec-websocket-extensions", "")
            .startswith("permessage-deflate")
        )
        # ...and acpwire's own client, which offers none unless asked.
        transport = await connect_websocket(served.ws_url)
        assert "sec-websocket-extensions" not in heads.seen[-1].headers
        await transport.close()
        transport = await connect_websocket(served.ws_url, compression=True)
        assert "sec-websocket-extensions" in heads.seen[-1].headers
        await transport.close()


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2"])
async def test_the_client_returns_the_cookie_the_server_sets_over_http(http2: bool) -> None:
    heads = Heads()
    app = asgi_app(Agents(), auth=heads, cookie="acp_worker=w7")
    async with serve_in_background(app) as served:
        transport = await connect_http(served.url, http2=http2)
        conn = ClientSideConnection(RecordingClient(), transport)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)
        assert transport.cookies.get("acp_worker") == "w7"
        first, *later = heads.seen
        assert "cookie" not in first.headers  # initialize set it...
        assert later and all(
            h.headers.get("cookie") == "acp_worker=w7" for h in later
        )  # ...then always
        await conn.close()


async def test_the_websocket_upgrade_returns_the_cookie_the_server_set() -> None:
    heads = Heads()
    app = asgi_app(Agents(), auth=heads, cookie="acp_worker=w7")
    async with serve_in_background(app) as served:
        first = await connect_websocket(served.ws_url)
        assert "cookie" not in heads.seen[-1].headers
        assert first.cookies.get("acp_worker") == "w7"
        await first.close()
        # A reconnect shares the jar: the load balancer sees the worker's cookie.
        again = await connect_websocket(served.ws_url, cookies=first.cookies)
        assert heads.seen[-1].headers.get("cookie") == "acp_worker=w7"
        await again.close()


def test_a_cookie_that_is_not_name_equals_value_is_refused() -> None:
    for bad in ["no-equals", "a=b; Path=/", "a b=c", "a=b,c"]:
        with pytest.raises(ValueError, match="NAME=VALUE"):
            asgi_app(Agents(), auth=[TOKEN], cookie=bad)
