"""What a client can make a real ``acp serve`` hold, measured on the server process from
/proc (descriptors, resident memory) while the attack runs over sockets on 127.0.0.1
(docs/security.md, "Bounded resources")."""

from __future__ import annotations

import asyncio

import pytest

from ._serve import TIMEOUT, Serve, acp_serve, open_fds

INIT = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'


def address(serve: Serve) -> tuple[str, int]:
    host, port = serve.url.split("/")[2].rsplit(":", 1)
    return host, int(port)


async def exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: bytes, body: bytes = b""
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 request on an open socket: the status, headers and (sized) body."""
    writer.write(head + b"\r\n" + body)
    raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
    lines = raw.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    size = int(headers.get("content-length", "0"))
    answer = await asyncio.wait_for(reader.readexactly(size), TIMEOUT) if size else b""
    return int(lines[0].split()[1]), headers, answer


async def settled(pid: int, at_most: int, within: float) -> int:
    """Poll the descriptors of ``pid`` until they are ``at_most``, for up to ``within`` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while (count := open_fds(pid)) > at_most and loop.time() < deadline:
        await asyncio.sleep(0.02)
    return count


@pytest.mark.slow
async def test_the_sockets_of_http_clients_that_left_are_released_at_once() -> None:
    """A thousand short-lived HTTP clients (initialize, a stream, DELETE, gone): the
    server's descriptors are back to idle within 1 s of the last one leaving (they used
    to linger for the 10 s keep-alive timer: 200 clients left 800 sockets open)."""

    async def one_client(serve: Serve) -> None:
        # What an HTTP/1.1 client of the endpoint does: a connection for its POSTs and one
        # for its stream; then it leaves (DELETE) and closes both sockets.
        common = f"Host: 127.0.0.1\r\nAuthorization: Bearer {serve.token}\r\n"
        posts = await asyncio.open_connection(*address(serve))
        stream = await asyncio.open_connection(*address(serve))
        try:
            status, headers, _ = await exchange(
                *posts,
                f"POST /acp HTTP/1.1\r\n{common}Content-Type: application/json\r\n"
                f"Content-Length: {len(INIT)}\r\n".encode(),
                INIT,
            )
            assert status == 200
            cid = headers["acp-connection-id"]
            stream[1].write(
                f"GET /acp HTTP/1.1\r\n{common}Accept: text/event-stream\r\n"
                f"Acp-Connection-Id: {cid}\r\n\r\n".encode()
            )
            assert b" 200 " in await asyncio.wait_for(stream[0].readline(), TIMEOUT)
            delete = f"DELETE /acp HTTP/1.1\r\n{common}Acp-Connection-Id: {cid}\r\n"
            status, _, _ = await exchange(*posts, delete.encode())
            assert status in (200, 202, 204)
        finally:
            for _, writer in (posts, stream):
                writer.close()

    async with acp_serve("--demo") as serve:
        pid = serve.proc.pid
        await one_client(serve)  # what the first client loads stays open
        await settled(pid, 0, 0.2)
        idle = open_fds(pid)
        for _ in range(100):
            await asyncio.gather(*(one_client(serve) for _ in range(10)))
        # The bound the issue asks for; the server only has to read the last clients' EOFs.
        assert await settled(pid, idle, 1.0) <= idle
