"""A peer that drops the socket is a *broken* end, not a clean one (transport contract)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import msgspec
import pytest
from waiting import TIMEOUT

from acpwire.protocol.errors import ConnectionClosedError
from acpwire.server import asgi_app, serve_in_background
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket

from ._agents import Agents

INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_head(reader: asyncio.StreamReader) -> dict[str, str]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers = {"_line": head[0]}
    for line in head[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    return headers


@pytest.fixture
async def fake_server() -> AsyncIterator[Callable[[Handler], Awaitable[int]]]:
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> int:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


async def test_a_websocket_dropped_without_a_close_frame_is_broken(fake_server) -> None:  # type: ignore[no-untyped-def]
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        headers = await read_head(reader)
        key = headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
        accept = base64.b64encode(hashlib.sha1(key.encode()).digest()).decode()
        writer.write(
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n"
                "Acp-Connection-Id: fake\r\n\r\n"
            ).encode()
        )
        await writer.drain()
        writer.transport.abort()

    port = await fake_server(handler)
    transport = await connect_websocket(f"ws://127.0.0.1:{port}/acp")
    assert transport.connection_id == "fake"
    with pytest.raises(ConnectionClosedError) as info:
        await asyncio.wait_for(transport.receive(), TIMEOUT)
    assert info.value.broken
    await transport.close()


async def test_an_event_stream_dropped_mid_body_is_broken(fake_server) -> None:  # type: ignore[no-untyped-def]
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        headers = await read_head(reader)
        if headers["_line"].startswith("POST"):
            await reader.readexactly(int(headers["content-length"]))
            body = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}'
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nAcp-Connection-Id: fake\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            await writer.drain()
            writer.close()
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n5\r\n: hi\n\r\n"
        )
        await writer.drain()
        writer.transport.abort()

    port = await fake_server(handler)
    transport = await connect_http(f"http://127.0.0.1:{port}/acp")
    await asyncio.wait_for(transport.send(INIT), TIMEOUT)
    assert transport.connection_id == "fake"
    first = await asyncio.wait_for(transport.receive(), TIMEOUT)
    assert isinstance(first, bytes) and b'"result"' in first
    with pytest.raises(ConnectionClosedError) as info:
        await asyncio.wait_for(transport.receive(), TIMEOUT)
    assert info.value.broken
    await transport.close()


async def test_nothing_listening_is_a_broken_connection_error() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(ConnectionClosedError):
        await connect_websocket(f"ws://127.0.0.1:{port}/acp", open_timeout=TIMEOUT)
    transport = await connect_http(f"http://127.0.0.1:{port}/acp")
    with pytest.raises(ConnectionClosedError) as info:
        await transport.send(INIT)
    assert info.value.broken
    await transport.close()


async def test_sending_after_close_fails_and_close_is_idempotent() -> None:
    transport = await connect_http("http://127.0.0.1:9/acp")
    await transport.close()
    await transport.close()
    with pytest.raises(ConnectionClosedError):
        await transport.send(INIT)


async def test_a_session_message_to_a_server_that_forgot_the_connection_ends_it(
    tmp_path: Path,
) -> None:
    # A server that restarted answers a POST retried after the cut (Acp-Retry) with 404
    # "unknown connection". For a session-scoped request that once came back as the
    # request's answer (-32002, as if only the session were unknown), so `acp connect`
    # failed the in-flight prompt instead of re-attaching its session
    # (tests/server/test_connect.py, the http case, about 1 run in 5).
    token = "broken-token-0123456789abcdef"
    app = asgi_app(Agents(), auth=[token])
    async with serve_in_background(app) as served:
        transport = await connect_http(served.url, token=token)
        await asyncio.wait_for(transport.send(INIT), TIMEOUT)
        assert b'"result"' in await asyncio.wait_for(transport.receive(), TIMEOUT)  # type: ignore[operator]
        new = {"cwd": str(tmp_path), "mcpServers": []}
        await transport.send(
            msgspec.json.encode({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new})
        )
        answer = await asyncio.wait_for(transport.receive(), TIMEOUT)
        assert isinstance(answer, bytes)
        session_id = msgspec.json.decode(answer)["result"]["sessionId"]
        app.host.connections.clear()  # what a restart forgets
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
        with pytest.raises(ConnectionClosedError) as info:
            await asyncio.wait_for(
                transport.send(
                    msgspec.json.encode(
                        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt}
                    )
                ),
                TIMEOUT,
            )
        assert info.value.broken
        # ... and whoever waits in receive() (a reconnecting peer's pump) learns it too,
        # instead of waiting for ever.
        with pytest.raises(ConnectionClosedError) as received:
            await asyncio.wait_for(transport.receive(), TIMEOUT)
        assert received.value.broken
        await transport.close()
