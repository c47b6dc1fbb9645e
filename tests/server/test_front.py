"""The listening front of ``acp serve`` (server/front.py): a WebSocket upgrade is served on
the socket itself, everything else by hypercorn, on one port and through one ASGI app."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import ssl
import warnings
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from engine.test_behaviour import RecordingClient
from waiting import TIMEOUT, wait_until
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.server import Limits, ServedApp, asgi_app, serve_in_background
from acpwire.server.runner import tls_options
from acpwire.transports.websocket import connect_websocket

from ._agents import Agents
from ._h2 import H2Client
from .test_serve_command import self_signed

TOKEN = "front-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
INIT = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
UPGRADE = (
    b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode()
)


@contextlib.asynccontextmanager
async def serving(limits: Limits | None = None, **options: object) -> AsyncIterator[ServedApp]:
    app = asgi_app(
        Agents(), auth=[TOKEN], limits=limits, allowed_origins=["https://editor.example"]
    )
    async with serve_in_background(app, **options) as served:  # type: ignore[arg-type]
        yield served


def sockets(served: ServedApp) -> int:
    assert served.front is not None
    return len(served.front.sockets)


async def raw_exchange(served: ServedApp, request: bytes) -> bytes:
    """Send ``request`` on a new TCP connection; everything the server answers until it closes."""
    host, port = served.url.split("/")[2].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request)
    try:
        return await asyncio.wait_for(reader.read(), TIMEOUT)
    finally:
        writer.close()


async def test_a_websocket_session_is_served_on_the_front_with_its_connection_id() -> None:
    async with serving() as served:
        transport = await connect_websocket(served.ws_url, token=TOKEN)
        assert transport.connection_id
        assert sockets(served) == 1
        conn = ClientSideConnection(RecordingClient(), transport)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
        result = await asyncio.wait_for(
            conn.agent.prompt(sid, [s.TextContent(text="stream 3")]), TIMEOUT
        )
        assert result.stop_reason == "end_turn"
        await conn.close()
        assert sockets(served) == 0


async def test_an_upgrade_without_a_token_is_refused_with_401_and_opens_nothing() -> None:
    async with serving() as served:
        with pytest.raises(InvalidStatus) as refused:
            await connect(served.ws_url, open_timeout=TIMEOUT)
        assert refused.value.response.status_code == 401
        assert served.app.host.connections == {}


async def test_an_upgrade_from_a_foreign_origin_is_refused_with_403() -> None:
    async with serving() as served:
        with pytest.raises(InvalidStatus) as refused:
            await connect(
                served.ws_url,
                additional_headers={**AUTH, "Origin": "https://evil.example"},
                open_timeout=TIMEOUT,
            )
        assert refused.value.response.status_code == 403
        assert served.app.host.connections == {}
        # The allowed origin gets in.
        async with connect(
            served.ws_url,
            additional_headers={**AUTH, "Origin": "https://editor.example"},
            open_timeout=TIMEOUT,
        ) as ws:
            await ws.send(INIT)
            answer = await asyncio.wait_for(ws.recv(), TIMEOUT)
            assert '"id":0' in str(answer).replace(" ", "")


async def test_an_upgrade_to_another_path_is_refused_with_404() -> None:
    async with serving() as served:
        with pytest.raises(InvalidStatus) as refused:
            await connect(served.ws_url + "/other", additional_headers=AUTH)
        assert refused.value.response.status_code == 404


async def test_a_malformed_handshake_is_answered_400_without_reaching_the_endpoint() -> None:
    async with serving() as served:
        answer = await raw_exchange(
            served,
            b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
            + f"Authorization: Bearer {TOKEN}\r\n\r\n".encode(),  # no Sec-WebSocket-Key
        )
        assert answer.startswith(b"HTTP/1.1 400 ")
        assert served.app.host.connections == {}


async def test_a_message_over_the_size_limit_closes_the_socket_with_1009() -> None:
    async with serving(Limits(max_message_size=4096)) as served:
        async with connect(served.ws_url, additional_headers=AUTH, max_size=None) as ws:
            await ws.send(INIT)
            await asyncio.wait_for(ws.recv(), TIMEOUT)
            await ws.send('{"jsonrpc":"2.0","method":"x","params":"' + "a" * 5000 + '"}')
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), TIMEOUT)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009


async def test_a_frame_that_is_not_utf8_closes_the_socket_with_1007() -> None:
    async with serving() as served:
        async with connect(served.ws_url, additional_headers=AUTH) as ws:
            await ws.send(INIT)
            await asyncio.wait_for(ws.recv(), TIMEOUT)
            await ws.send(b"\xff\xfe", text=True)
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), TIMEOUT)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007


async def test_an_upgrade_head_that_trickles_in_is_closed() -> None:
    async with serving(header_timeout=0.5) as served:
        host, port = served.url.split("/")[2].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"GET /acp HTTP/1.1\r\nUpgrade: websocket\r\n")  # and then nothing
        await writer.drain()
        assert await asyncio.wait_for(reader.read(), TIMEOUT) == b""  # the server hung up
        writer.close()


async def test_fragmented_messages_arrive_whole() -> None:
    async with serving() as served:
        async with connect(served.ws_url, additional_headers=AUTH) as ws:
            await ws.send(iter([INIT[:10], INIT[10:30], INIT[30:]]))
            answer = await asyncio.wait_for(ws.recv(), TIMEOUT)
            assert '"id":0' in str(answer).replace(" ", "")


async def test_http_and_websocket_share_the_port_and_the_connection_limits() -> None:
    async with serving(Limits(max_connections_per_principal=1)) as served:
        transport = await connect_websocket(served.ws_url, token=TOKEN)
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            # A POST on the same port goes to hypercorn, and counts against the same limit.
            answer = await http.post(
                served.url,
                content=INIT,
                headers={**AUTH, "Content-Type": "application/json"},
            )
            assert answer.status_code == 503
        await transport.close()


async def test_a_client_that_sends_a_close_frame_ends_its_connection() -> None:
    async with serving() as served:
        async with connect(served.ws_url, additional_headers=AUTH) as ws:
            await ws.send(INIT)
            await asyncio.wait_for(ws.recv(), TIMEOUT)
            (remote,) = served.app.host.connections.values()
        # Closed by the client: the server ends the connection and its agent.
        await asyncio.wait_for(remote.closed.wait(), TIMEOUT)
        assert remote.end_reason == "client gone"
        assert sockets(served) == 0


async def test_a_client_sending_faster_than_the_endpoint_takes_is_paused_not_buffered() -> None:
    """Back-pressure: an endpoint that does not take messages stops the socket being read,
    so what the server holds stays bounded; taking them again resumes reading, nothing lost."""
    from acpwire.server import front as front_module

    taking = asyncio.Event()
    received: list[str] = []

    async def slow_app(scope: dict[str, object], receive: object, send: object) -> None:
        assert scope["type"] == "websocket"
        await receive()  # type: ignore[operator]
        await send({"type": "websocket.accept"})  # type: ignore[operator]
        await taking.wait()
        while True:
            message = await receive()  # type: ignore[operator]
            if message["type"] != "websocket.receive":
                return
            received.append(message["text"])

    async def no_hand_off(
        app: object, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        writer.close()

    front = front_module.Front(
        slow_app, no_hand_off, header_timeout=TIMEOUT, max_message_size=2**20, compression=False
    )
    server = await asyncio.get_running_loop().create_server(front.protocol, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    sent = [f"message {i} " + "x" * 4000 for i in range(2000)]  # 8 MB, far past the buffers
    try:
        async with connect(f"ws://127.0.0.1:{port}/acp", compression=None) as ws:
            sending = asyncio.ensure_future(asyncio.gather(*(ws.send(m) for m in sent)))

            await wait_until(
                lambda: front.sockets and next(iter(front.sockets))._paused_reading,
                "the front stops reading the socket",
            )
            socket = next(iter(front.sockets))
            held = len(socket._incoming)
            assert front_module.READ_AHEAD <= held < front_module.READ_AHEAD + 70  # one read
            assert not sending.done()  # the client's sends wait: TCP carries the back-pressure
            taking.set()
            await asyncio.wait_for(sending, TIMEOUT)
            await wait_until(lambda: len(received) == len(sent), "every message is received")
        assert received == sent
    finally:
        server.close()
        await front.wait_closed(TIMEOUT)


async def test_websockets_the_front_does_not_see_are_refused() -> None:
    """Only the front's WebSockets bound the pongs a client that does not read is owed
    (tests/server/test_exhaustion.py). hypercorn's would take an upgrade sent after other
    requests on one HTTP/1.1 connection, or an RFC 8441 CONNECT over HTTP/2 (there a ping
    flood grew the server by 31 MiB a million): those are refused with 400, and HTTP/2
    does not offer extended CONNECT at all."""
    async with serving() as served:
        host, port = served.url.split("/")[2].split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            f"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode()
        )
        assert b" 406 " in await asyncio.wait_for(reader.readline(), TIMEOUT)
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
        size = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        await asyncio.wait_for(reader.readexactly(size), TIMEOUT)  # the 406's body
        writer.write(UPGRADE)
        assert b" 400 " in await asyncio.wait_for(reader.readline(), TIMEOUT)
        writer.close()

        async with H2Client.connect(host, int(port)) as client:
            stream = client.request(
                "CONNECT",
                "/acp",
                [("authorization", f"Bearer {TOKEN}"), ("sec-websocket-version", "13")],
                end=False,
                protocol="websocket",
            )
            assert (await client.until(stream, "status")).status == 400
            assert client.h2.remote_settings.get(8, 0) == 0  # ENABLE_CONNECT_PROTOCOL
        assert served.app.host.connections == {}


@pytest.mark.parametrize(
    "sends",
    [b"", b"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\n", UPGRADE],
    ids=["nothing", "half a request", "a websocket upgrade"],
)
async def test_tls_sockets_a_client_drops_are_closed_without_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, sends: bytes
) -> None:
    # Python 3.10's TLS transport does not say it is closing once its client is gone, and
    # resuming its reading raises: the lingering close of hypercorn's socket failed with
    # AttributeError, and a socket dropped before its first request was never closed
    # (an "unclosed transport" ResourceWarning when collected).
    certfile, keyfile = self_signed(tmp_path)
    context = ssl.create_default_context(cafile=str(certfile))
    gc.collect()  # what earlier tests left is theirs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        async with serving(tls=tls_options(str(certfile), str(keyfile))) as served:
            assert served.front is not None
            port = int(served.url.split("/")[2].split(":")[1])
            for _ in range(3):
                _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
                writer.write(sends)
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
            front = served.front
            await wait_until(
                lambda: not front.waiting and not front.sockets and not front.handed_off,
                "every connection served and gone",
            )
        gc.collect()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
