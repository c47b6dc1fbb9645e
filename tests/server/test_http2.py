"""HTTP/2 on the endpoint (RFD: Streamable HTTP requires HTTP/2): h2c on plain TCP, one TCP
connection per client for its connection stream, its session streams and its POSTs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from engine.agent_program import EngineTestAgent
from engine.test_behaviour import RecordingClient
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.server import Limits, RequestHead, ServedApp, asgi_app, serve_in_background
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket

from ._agents import Agents
from ._h2 import H2Client

TOKEN = "h2-token-0123456789abcdef"
INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
NEW_SESSION = (
    b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}'
)
PROMPT = (
    b'{"jsonrpc":"2.0","id":2,"method":"session/prompt",'
    b'"params":{"sessionId":"s1","prompt":[{"type":"text","text":"stream 3"}]}}'
)


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


async def answered(client: H2Client, stream_id: int, text: bytes) -> None:
    """Wait (bounded) until ``text`` has come on the stream."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while text not in client.streams[stream_id].body:
        assert loop.time() < deadline, client.streams[stream_id].body
        stream = client.streams[stream_id]
        stream.changed.clear()
        await asyncio.wait_for(stream.changed.wait(), TIMEOUT)


async def test_an_early_answer_does_not_end_the_other_streams_of_the_connection() -> None:
    """413 (declared length) and 415 are answered before the body is read; the client's
    DATA frames for those streams arrive after the answer. hypercorn 0.18 then failed the
    whole HTTP/2 connection (a KeyError in its read loop), taking the client's SSE
    streams with it. Now the late DATA is dropped, and the session stream on the same
    connection keeps delivering."""
    async with serve_in_background(asgi_app(Agents(), auth=[TOKEN])) as served:
        host, port = served.url.split("/")[2].split(":")
        auth = [("authorization", f"Bearer {TOKEN}")]
        json = [*auth, ("content-type", "application/json")]
        async with H2Client.connect(host, int(port)) as client:
            init = client.request("POST", "/acp", json, end=False)
            client.data(init, INIT, end=True)
            answer = await client.until(init, "ended")
            assert answer.status == 200
            conn = [("acp-connection-id", answer.headers[b"acp-connection-id"].decode())]
            events = [*auth, *conn, ("accept", "text/event-stream")]
            connection_stream = client.request("GET", "/acp", events)
            assert (await client.until(connection_stream, "status")).status == 200
            new = client.request("POST", "/acp", [*json, *conn], end=False)
            client.data(new, NEW_SESSION, end=True)
            assert (await client.until(new, "ended")).status == 202
            await answered(client, connection_stream, b'"sessionId":"s1"')
            session = [("acp-session-id", "s1")]
            session_stream = client.request("GET", "/acp", [*events, *session])
            assert (await client.until(session_stream, "status")).status == 200

            too_large = [*json, *conn, ("content-length", str(17 * 1024 * 1024))]
            for headers, status in ((too_large, 413), ([*auth, *conn], 415)):
                refused = client.request("POST", "/acp", headers, end=False)
                assert (await client.until(refused, "ended")).status == status
                # The body, late (of the 17 MiB declared, only a part: h2 checks lengths).
                client.raw_data(refused, b"x" * 20000, end=status == 415)

            prompt = client.request("POST", "/acp", [*json, *conn, *session], end=False)
            client.data(prompt, PROMPT, end=True)
            assert (await client.until(prompt, "ended")).status == 202

            await answered(client, session_stream, b"chunk 2")
            assert client.terminated is None
            assert not client.streams[session_stream].ended
            assert not client.streams[connection_stream].ended


@pytest.mark.slow
async def test_httpx_reads_an_early_answer_over_http2_and_keeps_its_connection(
    peers: Peers,
) -> None:
    """httpx sends the whole body before it reads the answer: the rest of a refused body is
    read and dropped, so it gets its 413 or 415 and goes on using the connection."""
    async with serve_in_background(asgi_app(Agents(), auth=peers)) as served:
        async with httpx.AsyncClient(http1=False, http2=True, timeout=TIMEOUT) as http:
            auth = {"authorization": f"Bearer {TOKEN}"}
            json = {**auth, "content-type": "application/json"}
            big = await http.post(served.url, content=b"x" * (17 * 1024 * 1024), headers=json)
            assert big.status_code == 413
            plain = await http.post(served.url, content=b"x" * 100_000, headers=auth)
            assert plain.status_code == 415
            assert (await http.post(served.url, content=INIT, headers=json)).status_code == 200
            assert len(set(peers.seen)) == 1  # one TCP connection throughout


async def test_the_dropped_rest_of_a_refused_body_is_bounded_over_http2() -> None:
    """A client that goes on sending on a stream already answered is read for at most four
    times the message size limit, then told to stop (RST_STREAM NO_ERROR)."""
    limits = Limits(max_message_size=64 * 1024)
    async with serve_in_background(asgi_app(Agents(), auth=[TOKEN], limits=limits)) as served:
        host, port = served.url.split("/")[2].split(":")
        headers = [
            ("authorization", f"Bearer {TOKEN}"),
            ("content-type", "application/json"),
            ("content-length", str(10 * 1024 * 1024)),
        ]
        async with H2Client.connect(host, int(port)) as client:
            refused = client.request("POST", "/acp", headers, end=False)
            assert (await client.until(refused, "ended")).status == 413
            assert not await client.body(refused, 10 * 1024 * 1024)
            assert client.streams[refused].reset == 0  # NO_ERROR
            ok = client.request("POST", "/acp", headers[:2], end=False)
            client.data(ok, INIT, end=True)
            assert (await client.until(ok, "ended")).status == 200


class Counting(EngineTestAgent):
    """``stream N`` that counts the updates the endpoint has taken from it."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        text = "".join(b.text for b in params.prompt if isinstance(b, s.TextContent))
        for i in range(int(text.split()[1])):
            await self.client.session_update(
                params.session_id, s.AgentMessageChunk(content=s.TextContent(text=f"chunk {i}"))
            )
            self.sent += 1
        return s.PromptResponse(stop_reason="end_turn")


@pytest.mark.slow
async def test_a_client_that_grants_no_window_holds_up_its_agent_not_the_servers_memory() -> None:
    """An HTTP/2 client that reads nothing of its session stream (no WINDOW_UPDATE) while its
    agent streams 200,000 updates: hypercorn 0.18 kept every one in the stream's send buffer
    (+43 MiB, and on), past the endpoint's bounded queues. Now its buffer makes the writer
    wait, the queues fill, and the agent waits too."""
    agent = Counting()
    async with serve_in_background(asgi_app(lambda: agent, auth=[TOKEN])) as served:
        host, port = served.url.split("/")[2].split(":")
        auth = [("authorization", f"Bearer {TOKEN}")]
        json = [*auth, ("content-type", "application/json")]
        async with H2Client.connect(host, int(port)) as client:
            init = client.request("POST", "/acp", json, end=False)
            client.data(init, INIT, end=True)
            answer = await client.until(init, "ended")
            conn = [("acp-connection-id", answer.headers[b"acp-connection-id"].decode())]
            events = [*auth, *conn, ("accept", "text/event-stream")]
            connection_stream = client.request("GET", "/acp", events)
            new = client.request("POST", "/acp", [*json, *conn], end=False)
            client.data(new, NEW_SESSION, end=True)
            await answered(client, connection_stream, b'"sessionId":"s1"')
            session = [("acp-session-id", "s1")]
            session_stream = client.request("GET", "/acp", [*events, *session])
            assert (await client.until(session_stream, "status")).status == 200
            client.granting = False
            prompt = client.request("POST", "/acp", [*json, *conn, *session], end=False)
            client.data(prompt, PROMPT.replace(b"stream 3", b"stream 200000"), end=True)
            (remote,) = served.app.host.connections.values()
            queue = remote.sessions["s1"].queue
            # Until the session's queue is full and the agent waits on it, or the agent
            # finishes (what used to happen: nothing ever made the stream's writer wait).
            await wait_until(
                lambda: len(queue) >= queue.max_messages or agent.sent == 200_000,
                "the session's queue fills, or the agent finishes",
            )
            # What the endpoint's queues hold (256 messages) and the buffers in between.
            assert agent.sent < 2_000
