"""What a client can make a real ``acp serve`` hold, measured on the server process from
/proc (descriptors, resident memory) while the attack runs over sockets on 127.0.0.1
(docs/security.md, "Bounded resources")."""

from __future__ import annotations

import asyncio
import contextlib
import resource

import pytest
from waiting import TIMEOUT

from ._serve import Serve, acp_serve, open_fds, rss

pytestmark = pytest.mark.slow  # thousands of sockets against acp serve run as a process

MiB = 1024 * 1024
CLOSE_1008 = (1008).to_bytes(2, "big") + b"pings faster than the pongs are read"
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


def room_for_sockets(count: int) -> None:
    """Let this process open ``count`` more descriptors, or skip the test."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count + 256
    if soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"this test opens {count} sockets; the descriptor limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


async def authenticated_request(serve: Serve) -> tuple[int, float]:
    """A new client's POST initialize on a new socket: its status and how long it took."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    reader, writer = await asyncio.wait_for(asyncio.open_connection(*address(serve)), TIMEOUT)
    try:
        status, _, _ = await exchange(
            reader,
            writer,
            f"POST /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {serve.token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(INIT)}\r\n".encode(),
            INIT,
        )
    finally:
        writer.close()
    return status, loop.time() - started


@pytest.mark.parametrize("sources", [1, 20], ids=["one-address", "twenty-addresses"])
async def test_idle_sockets_without_a_token_do_not_keep_authenticated_clients_waiting(
    sources: int,
) -> None:
    """1,100 idle sockets against a server that may open 1,024 descriptors: they used to
    take every descriptor, and authenticated clients waited 5-8 s (or timed out) in a
    listen queue the server could not accept from. The server now closes the oldest
    waiting sockets past 64 per address and 256 in all, and a new client is served at once.
    From one address the per-address cap sheds; from twenty (55 each, under it) the total
    cap does."""
    room_for_sockets(1100)
    async with acp_serve("--demo", fd_limit=1024) as serve:
        assert (await authenticated_request(serve))[0] == 200  # what the first one loads
        idle = []
        try:
            for i in range(1100):
                source = (f"127.0.0.{2 + i % sources}" if sources > 1 else "127.0.0.1", 0)
                idle.append(await asyncio.open_connection(*address(serve), local_addr=source))
            answers = [await authenticated_request(serve) for _ in range(5)]
            assert [status for status, _ in answers] == [200] * 5
            # The issue asks for 1 s. Served at once this takes milliseconds; a client that
            # has to wait for the server to accept it loses whole seconds (SYN retries).
            assert max(took for _, took in answers) < 1.0, answers
            assert open_fds(serve.proc.pid) < 256 + 64  # the waiting ones and the server's own
        finally:
            for _, writer in idle:
                writer.close()


def ping(payload: bytes) -> bytes:
    """A client's WebSocket ping frame (masked, as a client's frames must be)."""
    mask = b"\x01\x02\x03\x04"
    masked = bytes(byte ^ mask[i % 4] for i, byte in enumerate(payload))
    return bytes([0x89, 0x80 | len(payload)]) + mask + masked


class Peak:
    """Samples the resident memory of a process until stopped; ``high`` is the most seen."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.high = rss(pid)
        self._task = asyncio.ensure_future(self._sample())

    async def _sample(self) -> None:
        while True:
            self.high = max(self.high, rss(self.pid))
            await asyncio.sleep(0.02)

    async def stop(self) -> int:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self.high = max(self.high, rss(self.pid))
        return self.high


async def test_a_client_that_pings_and_never_reads_is_closed_with_1008() -> None:
    """A token holder sends a million pings (125-byte payloads) and reads nothing: every
    pong used to stay in the server's write buffer (+117 MiB for a million). Pongs owed to a
    client that does not read now count against 256 KiB; past it the socket is closed with
    1008, and the server's memory stays within 64 MiB of idle."""
    async with acp_serve("-v", "--demo") as serve:
        reader, writer = await asyncio.open_connection(*address(serve))
        writer.write(
            b"GET /acp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            + f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {serve.token}\r\n\r\n".encode()
        )
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
        assert head.startswith(b"HTTP/1.1 101 ")
        peak = Peak(serve.proc.pid)
        idle = peak.high

        async def flood() -> None:
            burst = ping(b"p" * 125) * 1000
            for _ in range(1000):
                writer.write(burst)
                await writer.drain()

        flooding = asyncio.ensure_future(flood())
        closed = asyncio.ensure_future(serve.wait_for_line(r"it pings and does not read"))
        try:
            await asyncio.wait(
                {flooding, closed}, timeout=TIMEOUT, return_when=asyncio.FIRST_COMPLETED
            )
            assert await peak.stop() - idle < 64 * MiB
            assert closed.done(), "a million pings went through and the socket stayed open"
            # Now read: the pongs written before the close, then the close frame, then EOF.
            received = await asyncio.wait_for(reader.read(), TIMEOUT)
            close = bytes([0x88, len(CLOSE_1008)]) + CLOSE_1008
            assert received.endswith(close)
        finally:
            for task in (flooding, closed):
                task.cancel()
            writer.close()
