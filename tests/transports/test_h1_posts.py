"""acpwire's own HTTP/1.1 POSTs under httpx (transports/_h1.py), against a scripted server on
127.0.0.1 that answers the ways HTTP/1.1 servers do."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from waiting import TIMEOUT

from acpwire.transports._h1 import Http1Transport


class Server:
    """Reads one request at a time on each connection and answers it with ``answer(body)``."""

    def __init__(self, answer: Callable[[bytes], bytes]) -> None:
        self.answer = answer
        self.connections = 0
        self.requests: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                answer = self.answer(body)
                writer.write(answer)
                await writer.drain()
                if b"connection: close" in answer.lower():
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@contextlib.asynccontextmanager
async def client_for(server: Server) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    transport = Http1Transport(httpx.AsyncHTTPTransport())
    try:
        async with httpx.AsyncClient(transport=transport, timeout=TIMEOUT) as client:
            yield client, f"http://127.0.0.1:{port}/acp"
    finally:
        listener.close()


def fixed(status: str, *headers: str, body: bytes = b"") -> Callable[[bytes], bytes]:
    head = "".join(f"{h}\r\n" for h in headers)
    return lambda _: f"HTTP/1.1 {status}\r\n{head}\r\n".encode() + body


async def test_posts_reuse_one_kept_alive_connection_and_send_headers_and_body_whole() -> None:
    server = Server(fixed("202 Accepted", "Content-Length: 0"))
    async with client_for(server) as (client, url):
        for n in range(3):
            answer = await client.post(url, content=b'{"n":%d}' % n, headers={"X-Acp": "yes"})
            assert answer.status_code == 202
    assert server.connections == 1
    assert len(server.requests) == 3
    first = server.requests[0]
    assert first.startswith(b"POST /acp HTTP/1.1\r\n")
    assert b"\r\nX-Acp: yes\r\n" in first and b"\r\nContent-Length: 7\r\n" in first
    assert first.endswith(b'\r\n\r\n{"n":0}')


async def test_a_chunked_answer_is_read_whole() -> None:
    server = Server(
        fixed(
            "200 OK",
            "Transfer-Encoding: chunked",
            body=b"5\r\nhello\r\n6; x=1\r\n world\r\n0\r\n\r\n",
        )
    )
    async with client_for(server) as (client, url):
        first = await client.post(url, content=b"{}")
        second = await client.post(url, content=b"{}")
        assert first.content == second.content == b"hello world"
    assert server.connections == 1


async def test_an_answer_that_ends_with_the_connection_is_read_to_its_end() -> None:
    server = Server(fixed("200 OK", "Connection: close", body=b'{"ok":true}'))
    async with client_for(server) as (client, url):
        assert (await client.post(url, content=b"{}")).content == b'{"ok":true}'
        assert (await client.post(url, content=b"{}")).content == b'{"ok":true}'
    assert server.connections == 2


async def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    closes: list[asyncio.StreamWriter] = []
    server = Server(fixed("202 Accepted", "Content-Length: 0"))
    handle = server.handle

    async def close_after_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        closes.append(writer)
        await handle(reader, writer)

    server.handle = close_after_one  # type: ignore[method-assign]
    async with client_for(server) as (client, url):
        assert (await client.post(url, content=b"{}")).status_code == 202
        closes[0].close()  # the server's keep-alive timeout, say
        await asyncio.wait_for(closes[0].wait_closed(), TIMEOUT)
        assert (await client.post(url, content=b"{}")).status_code == 202
    assert server.connections == 2


async def test_cookies_the_server_sets_come_back_on_the_next_post() -> None:
    server = Server(fixed("202 Accepted", "Content-Length: 0", "Set-Cookie: worker=w1; Path=/"))
    async with client_for(server) as (client, url):
        await client.post(url, content=b"{}")
        await client.post(url, content=b"{}")
    assert b"\r\nCookie: worker=w1\r\n" in server.requests[1]


async def test_a_server_that_hangs_up_mid_answer_is_a_transport_error() -> None:
    server = Server(fixed("200 OK", "Content-Length: 100", "Connection: close", body=b"{}"))
    async with client_for(server) as (client, url):
        with pytest.raises(httpx.ReadError):
            await client.post(url, content=b"{}")


async def test_a_server_that_does_not_answer_in_time_is_a_read_timeout() -> None:
    server = Server(lambda _: b"")  # reads the request, never answers
    async with client_for(server) as (client, url):
        with pytest.raises(httpx.ReadTimeout):
            await client.post(url, content=b"{}", timeout=0.2)


async def test_a_header_value_with_a_line_break_is_refused_before_sending() -> None:
    server = Server(fixed("202 Accepted", "Content-Length: 0"))
    async with client_for(server) as (client, url):
        with pytest.raises(httpx.LocalProtocolError):
            await client.post(url, content=b"{}", headers={"X-Evil": "a\r\nInjected: 1"})
    assert server.requests == []
