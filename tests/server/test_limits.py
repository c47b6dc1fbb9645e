"""Bounded resources (docs/security.md): what a client holding a valid token, or a socket
without one, can make the server keep. Real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator

import httpx
import msgspec
import pytest
from engine.test_behaviour import RecordingClient
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.protocol.errors import ConnectionClosedError, ErrorCode
from acpwire.server import Limits, ServedApp, asgi_app, serve_in_background
from acpwire.transports.base import Transport
from acpwire.transports.queue import MessageQueue
from acpwire.transports.websocket import connect_websocket

from ._agents import Agents
from ._h2 import H2Client

TOKEN = "limits-token-0123456789abcdef"
OTHER = "other-token-0123456789abcdef"
AUTH = {"authorization": f"Bearer {TOKEN}"}
JSON = {"content-type": "application/json", **AUTH}
INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
MiB = 1024 * 1024


class Deaf:
    """An in-process agent that answers ``initialize`` and then never reads again."""

    async def serve(self, transport: Transport) -> None:
        first = await transport.receive()
        assert isinstance(first, bytes)
        request_id = msgspec.json.decode(first)["id"]
        answer = {"jsonrpc": "2.0", "id": request_id, "result": {"protocolVersion": 1}}
        await transport.send(msgspec.json.encode(answer))
        await asyncio.Event().wait()


@contextlib.asynccontextmanager
async def serving(agent: object, limits: Limits, **options: object) -> AsyncIterator[ServedApp]:
    app = asgi_app(agent, auth=[TOKEN, OTHER], limits=limits)  # type: ignore[arg-type]
    async with serve_in_background(app, **options) as served:  # type: ignore[arg-type]
        yield served


def message(request_id: int, method: str, params: object) -> bytes:
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    )


async def closed_with(transport: Transport) -> ConnectionClosedError:
    """The error that ends ``transport`` (messages before it are skipped)."""

    async def drain() -> None:
        while True:
            await asyncio.wait_for(transport.receive(), TIMEOUT)

    with pytest.raises(ConnectionClosedError) as info:
        await drain()
    return info.value


async def test_the_agent_starts_on_initialize_not_on_the_websocket_upgrade() -> None:
    agents = Agents()
    async with serving(agents, Limits(handshake_timeout=0.5)) as served:
        idle = [await connect_websocket(served.ws_url, token=TOKEN) for _ in range(20)]
        assert not agents.made
        # Nobody says initialize: each is closed after the handshake timeout, still no agent.
        for transport in idle:
            error = await closed_with(transport)
            assert "1008" in str(error)
        assert not agents.made
        transport = await connect_websocket(served.ws_url, token=TOKEN)
        await transport.send(message(0, "session/new", {"cwd": "/", "mcpServers": []}))
        assert "1008" in str(await closed_with(transport))  # initialize must come first
        assert not agents.made
        conn = ClientSideConnection(
            RecordingClient(), await connect_websocket(served.ws_url, token=TOKEN)
        )
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        assert len(agents.made) == 1
        await conn.close()


async def test_running_agents_are_capped_globally_and_per_principal() -> None:
    limits = Limits(max_agents=3, max_agents_per_principal=2)
    async with serving(Agents(), limits) as served, httpx.AsyncClient(timeout=TIMEOUT) as http:
        first = await http.post(served.url, content=INIT, headers=JSON)
        assert first.status_code == 200
        ws = await connect_websocket(served.ws_url, token=TOKEN)
        await ws.send(INIT)
        assert isinstance(await asyncio.wait_for(ws.receive(), TIMEOUT), bytes)
        # A third agent for the same principal: refused, over HTTP and WebSocket.
        refused = await http.post(served.url, content=INIT, headers=JSON)
        assert refused.status_code == 503 and refused.headers["retry-after"]
        third = await connect_websocket(served.ws_url, token=TOKEN)
        await third.send(INIT)
        assert "1013" in str(await closed_with(third))
        # Another principal still gets one; then the global cap is reached for everyone.
        as_other = {**JSON, "authorization": f"Bearer {OTHER}"}
        assert (await http.post(served.url, content=INIT, headers=as_other)).status_code == 200
        assert (await http.post(served.url, content=INIT, headers=as_other)).status_code == 503
        # Closing one frees its slot.
        await ws.close()
        await _slots_free(served, 2)
        assert (await http.post(served.url, content=INIT, headers=JSON)).status_code == 200


async def _slots_free(served: ServedApp, running: int) -> None:
    await wait_until(
        lambda: sum(c.has_agent for c in served.app.host.connections.values()) <= running,
        f"only {running} connections run an agent",
    )


async def test_connections_are_capped_per_principal() -> None:
    limits = Limits(max_connections_per_principal=2)
    async with serving(Agents(), limits) as served:
        kept = [await connect_websocket(served.ws_url, token=TOKEN) for _ in range(2)]
        extra = await connect_websocket(served.ws_url, token=TOKEN)
        assert "1013" in str(await closed_with(extra))
        other = await connect_websocket(served.ws_url, token=OTHER)  # not the same principal
        for transport in [*kept, other]:
            await transport.close()


async def test_a_body_over_the_size_limit_is_refused_with_413() -> None:
    limits = Limits(max_message_size=1 * MiB)
    async with serving(Agents(), limits) as served, httpx.AsyncClient(timeout=TIMEOUT) as http:
        big = message(0, "initialize", {"protocolVersion": 1, "pad": "x" * (2 * MiB)})
        assert (await http.post(served.url, content=big, headers=JSON)).status_code == 413

        async def chunked() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
            for start in range(0, len(big), 64 * 1024):
                yield big[start : start + 64 * 1024]

        # Refused as it comes: 413, and nothing is kept.
        status = (await http.post(served.url, content=chunked(), headers=JSON)).status_code
        assert status == 413
        assert served.app.host.body_bytes_in_flight == 0


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
async def test_a_client_that_sends_a_whole_body_over_the_limit_reads_its_413(
    declared: bool,
) -> None:
    """The client sends all of a 17 MiB body, then reads: it gets the 413, not a reset.
    (The server answered early and closed the socket with the body unread, which sends a
    reset that destroyed the answer: now it half-closes and reads the rest for 2 s.)"""
    async with serving(Agents(), Limits()) as served:
        reader, writer = await raw_socket(served)
        body = message(0, "initialize", {"protocolVersion": 1, "pad": "x" * (17 * MiB)})
        head = (
            b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\n".encode()
        )
        if declared:
            writer.write(head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        else:
            writer.write(head + b"Transfer-Encoding: chunked\r\n\r\n")
            for start in range(0, len(body), 64 * 1024):
                chunk = body[start : start + 64 * 1024]
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            writer.write(b"0\r\n\r\n")
        await asyncio.wait_for(writer.drain(), TIMEOUT)  # all of it went out
        answer = await asyncio.wait_for(reader.read(), TIMEOUT)  # then the server hung up
        assert answer.startswith(b"HTTP/1.1 413 ")
        assert answer.endswith(b"message too large")
        writer.close()


async def test_the_default_body_limit_is_16_mib() -> None:
    assert Limits().max_message_size == 16 * MiB
    async with serving(Agents(), Limits()) as served:
        reader, writer = await raw_socket(served)
        # Refused on the declared length alone: nothing of the body is sent or read.
        writer.write(
            b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nContent-Length: {16 * MiB + 1}\r\n\r\n".encode()
        )
        assert await read_status(reader) == 413
        writer.close()


async def raw_socket(served: ServedApp) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = served.url.split("/")[2].split(":")
    return await asyncio.open_connection(host, int(port))


async def read_status(reader: asyncio.StreamReader) -> int:
    line = await asyncio.wait_for(reader.readline(), TIMEOUT)
    return int(line.split()[1])


async def test_a_body_that_trickles_in_is_cut_off_with_408() -> None:
    async with serving(Agents(), Limits(body_timeout=0.5)) as served:
        reader, writer = await raw_socket(served)
        writer.write(
            b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nContent-Length: 1000\r\n\r\n".encode()
            + b'{"jsonrpc"'
        )
        await writer.drain()
        assert await read_status(reader) == 408
        writer.close()
        assert served.app.host.body_bytes_in_flight == 0


async def test_a_request_head_over_16_kib_is_answered_431_however_it_arrives() -> None:
    """docs/security.md: a head is at most 16 KiB. hypercorn's own limit only counts a head
    still incomplete (one that came whole in a read passed); the front counts them all,
    on HTTP/1.1, on a WebSocket upgrade and on HTTP/2 (where a head too large for the h2
    library, 64 KiB, ends the connection instead)."""
    async with serving(Agents(), Limits()) as served:
        big = "".join(f"X-Pad-{i}: {'a' * 1000}\r\n" for i in range(20)).encode()
        auth = f"Authorization: Bearer {TOKEN}\r\n".encode()
        heads = {
            "whole": b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + big + b"\r\n",
            "incomplete": b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + big,
            "websocket": b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            b"Sec-WebSocket-Version: 13\r\n" + auth + big + b"\r\n",
        }
        for name, head in heads.items():
            reader, writer = await raw_socket(served)
            writer.write(head)
            assert await read_status(reader) == 431, name
            writer.close()
        host, port = served.url.split("/")[2].split(":")
        async with H2Client.connect(host, int(port)) as client:
            pads = [(f"x-pad-{i}", "a" * 1000) for i in range(20)]
            large = client.request("GET", "/acp", [("authorization", f"Bearer {TOKEN}"), *pads])
            assert (await client.until(large, "ended")).status == 431
            small = client.request("GET", "/acp", [("authorization", f"Bearer {TOKEN}")])
            assert (await client.until(small, "ended")).status == 406  # the connection lives
        assert served.app.host.connections == {}


async def test_a_request_head_that_trickles_in_is_closed() -> None:
    async with serving(Agents(), Limits(), header_timeout=0.5) as served:
        reader, writer = await raw_socket(served)
        writer.write(b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and then nothing
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), TIMEOUT) == b""  # the server hung up
        writer.close()


@pytest.mark.slow
async def test_a_thousand_slow_sockets_do_not_stop_a_real_client() -> None:
    async with serving(Agents(), Limits()) as served:
        slow: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        for _ in range(1000):
            reader, writer = await raw_socket(served)
            writer.write(b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            slow.append((reader, writer))
        # A real client is served meanwhile, over both transports.
        conn = ClientSideConnection(
            RecordingClient(), await connect_websocket(served.ws_url, token=TOKEN)
        )
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
        result = await asyncio.wait_for(
            conn.agent.prompt(sid, [s.TextContent(text="stream 3")]), TIMEOUT
        )
        assert result.stop_reason == "end_turn"
        await conn.close()
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            assert (await http.post(served.url, content=INIT, headers=JSON)).status_code == 200
        # ...while the server kept at most 64 of the slow ones (the oldest were closed as
        # newer ones came: Limits.max_waiting_per_address); those it kept it lets go after
        # the 10 s head timeout (test_a_request_head_that_trickles_in_is_closed).
        assert served.front is not None
        assert len(served.front.waiting) <= Limits().max_waiting_per_address
        assert served.front.shed >= 1000 - Limits().max_waiting_per_address
        for _, writer in slow:
            writer.close()


@pytest.mark.slow
async def test_posts_to_an_agent_that_stopped_reading_are_refused_once_the_budget_is_held() -> None:
    limits = Limits(
        max_body_bytes_in_flight=8 * MiB, queue_bytes=1 * MiB, queue_messages=4, stall_timeout=60
    )
    async with serving(Deaf(), limits) as served, httpx.AsyncClient(timeout=TIMEOUT) as http:
        init = await http.post(served.url, content=INIT, headers=JSON)
        ids = {"acp-connection-id": init.headers["acp-connection-id"]}
        body = message(1, "_fill", {"pad": "x" * (2 * MiB)})
        posts = [
            asyncio.ensure_future(http.post(served.url, content=body, headers={**JSON, **ids}))
            for _ in range(8)
        ]
        # Those the agent's queue takes are accepted; once the budget is held, refused.
        refused = None
        for done in asyncio.as_completed(posts, timeout=TIMEOUT):
            if (await done).status_code == 503:
                refused = True
                break
        assert refused
        assert served.app.host.body_bytes_in_flight <= limits.max_body_bytes_in_flight
        await http.delete(served.url, headers={**AUTH, **ids})
        statuses = {r.status_code for r in await asyncio.wait_for(asyncio.gather(*posts), TIMEOUT)}
        assert statuses <= {202, 404, 503}
        assert served.app.host.body_bytes_in_flight == 0


@pytest.mark.slow
@pytest.mark.parametrize("tokens", [[TOKEN, OTHER], [TOKEN]], ids=["several", "one"])
async def test_session_ids_a_client_names_do_not_grow_the_server(tokens: list[str]) -> None:
    app = asgi_app(Agents(), auth=tokens, limits=Limits(max_sessions_per_connection=8))
    async with serve_in_background(app) as served, httpx.AsyncClient(timeout=TIMEOUT) as http:
        init = await http.post(served.url, content=INIT, headers=JSON)
        cid = init.headers["acp-connection-id"]
        (conn,) = served.app.host.connections.values()
        for n in range(50):
            sid = secrets.token_hex(8)
            load = message(n + 1, "session/load", {"sessionId": sid, "cwd": "/", "mcpServers": []})
            headers = {**JSON, "acp-connection-id": cid, "acp-session-id": sid}
            # Several principals: nobody owns it, answered here with -32002. One principal:
            # the agent answers (an error); either way no stream is kept for it.
            assert (await http.post(served.url, content=load, headers=headers)).status_code == 202
        await _no_sessions(conn.sessions)
        await http.delete(served.url, headers={**AUTH, "acp-connection-id": cid})


async def _no_sessions(sessions: dict[str, object]) -> None:
    await wait_until(lambda: not sessions, "no session stream is kept")


@pytest.mark.slow
async def test_session_streams_per_connection_are_capped() -> None:
    app = asgi_app(Deaf(), auth=[TOKEN], limits=Limits(max_sessions_per_connection=8))
    async with serve_in_background(app) as served, httpx.AsyncClient(timeout=TIMEOUT) as http:
        init = await http.post(served.url, content=INIT, headers=JSON)
        cid = init.headers["acp-connection-id"]
        statuses = []
        for n in range(10):  # the agent never answers: each load keeps its stream
            sid = f"s{n}"
            load = message(n + 1, "session/load", {"sessionId": sid, "cwd": "/", "mcpServers": []})
            headers = {**JSON, "acp-connection-id": cid, "acp-session-id": sid}
            statuses.append(
                (await http.post(served.url, content=load, headers=headers)).status_code
            )
        assert statuses == [202] * 8 + [429] * 2
        await http.delete(served.url, headers={**AUTH, "acp-connection-id": cid})


async def test_requests_in_flight_per_connection_are_capped() -> None:
    async with serving(Agents(), Limits(max_pending_requests=2)) as served:
        transport = await connect_websocket(served.ws_url, token=TOKEN)
        await transport.send(INIT)
        await asyncio.wait_for(transport.receive(), TIMEOUT)
        for n in (1, 2, 3):
            await transport.send(message(n, "_test/sleep", {}))
        refused = msgspec.json.decode(await asyncio.wait_for(transport.receive(), TIMEOUT))
        assert refused["id"] == 3 and refused["error"]["code"] == ErrorCode.INTERNAL_ERROR
        await transport.close()


async def test_a_message_queue_bounds_bytes_and_still_passes_one_large_message() -> None:
    queue = MessageQueue(100, max_bytes=10)
    assert await queue.put(b"x" * 50)  # larger than the bound, but the queue was empty
    blocked = asyncio.ensure_future(queue.put(b"y"))
    await asyncio.sleep(0)
    assert not blocked.done() and queue.nbytes == 50
    assert await queue.get() == b"x" * 50
    assert await asyncio.wait_for(blocked, TIMEOUT)
    waiting = asyncio.ensure_future(queue.put(b"z" * 20))
    await asyncio.sleep(0)
    queue.end()
    assert await waiting is False  # writers are refused once it ends
    assert await queue.get() == b"y"
    assert await queue.get() is None


async def test_waiting_for_a_readable_queue_takes_nothing_even_when_cancelled() -> None:
    # The SSE writer waits this way so that a take-over cancelling it loses no message.
    queue = MessageQueue(10)
    waiter = asyncio.ensure_future(queue.readable())
    await asyncio.sleep(0)
    assert not waiter.done()
    await queue.put(b"m1")
    waiter.cancel()  # cancelled right as the message arrives
    with contextlib.suppress(asyncio.CancelledError):
        await waiter
    assert len(queue) == 1
    await asyncio.wait_for(queue.readable(), TIMEOUT)  # at once: a message is there
    assert await queue.get() == b"m1"
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(queue.readable(), 0.01)
    queue.end()
    await asyncio.wait_for(queue.readable(), TIMEOUT)  # the end is readable too
    assert await queue.get() is None


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"content-type": "text/plain", **AUTH}, 415),
        ({"content-type": "application/json"}, 401),
        ({"content-type": "application/json", "authorization": "Bearer wrong"}, 401),
        ({**JSON, "origin": "https://evil.example"}, 403),
    ],
    ids=["415", "401-no-token", "401-wrong-token", "403-origin"],
)
async def test_a_post_refused_before_its_body_was_read_closes_its_http1_connection(
    headers: dict[str, str], status: int
) -> None:
    """Answered before its body was read, an HTTP/1.1 request cannot be followed by another
    on that connection (the server closes it rather than wait for the body): the answer says
    ``connection: close``, so a keep-alive client opens a new connection for its next request
    instead of sending it into one the server is closing (`acp check --via http` over TLS saw
    "Server disconnected without sending a response" on the request after a 415)."""
    async with serving(Agents(), Limits()) as served, httpx.AsyncClient(timeout=TIMEOUT) as http:
        for _ in range(5):
            refused = await http.post(served.url, content=INIT, headers=headers)
            assert refused.status_code == status
            assert refused.headers.get("connection") == "close"
            answered = await http.post(served.url, content=INIT, headers=JSON)
            assert answered.status_code == 200
            await http.delete(served.url, headers={**AUTH, **_connection_of(answered)})


def _connection_of(response: httpx.Response) -> dict[str, str]:
    return {"acp-connection-id": response.headers["acp-connection-id"]}
