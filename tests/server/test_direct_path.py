"""The WebSocket's direct path (server/front.py ``DIRECT``): a message the endpoint can
take without waiting goes from the socket's callback into the agent's engine, and an
answer is written to the socket from the agent's task. Whatever takes which path, the
agent sees every message once and in order, and the client gets every answer in order."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from acpwire.protocol.framing import Oversize
from acpwire.server import asgi_app, serve_in_background
from acpwire.transports.base import Transport

TIMEOUT = 20
TOKEN = "direct-path-token-0123456789ab"
BURST = 300


class Recorder:
    """A raw ACP "agent" on the server's transport: it records each notification's ``n``
    as the transport hands it over (pushed, or read from the queue), refusing every
    third push so that the queue is used too; ``_test/done`` answers with the record."""

    def __init__(self) -> None:
        self.seen: list[int] = []
        self.pushed = 0
        self.refused = 0
        self.transport: Transport | None = None
        self.answers: asyncio.Queue[bytes] = asyncio.Queue()

    async def serve(self, transport: Transport) -> None:
        self.transport = transport
        push_to = getattr(transport, "push_to", None)
        assert push_to is not None, "the remote connection's transport offers push_to"
        push_to(self._sink)
        writer = asyncio.ensure_future(self._write(transport))
        try:
            while True:
                message = await transport.receive()
                if message is None:
                    return
                assert not isinstance(message, Oversize)
                self._take(message)
        finally:
            writer.cancel()

    def _sink(self, message: bytes) -> bool:
        if (self.pushed + self.refused) % 3 == 2:
            self.refused += 1
            return False
        self.pushed += 1
        self._take(message)
        return True

    def _take(self, message: bytes) -> None:
        decoded: dict[str, Any] = json.loads(message)
        method = decoded.get("method")
        if method == "initialize":
            result: Any = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
        elif method == "_test/n":
            self.seen.append(decoded["params"]["n"])
            return
        elif method == "_test/done":
            result = {"seen": self.seen}
        else:
            result = {}
        answer = {"jsonrpc": "2.0", "id": decoded["id"], "result": result}
        self.answers.put_nowait(json.dumps(answer).encode())

    async def _write(self, transport: Transport) -> None:
        while True:
            await transport.send(await self.answers.get())


class RawClient:
    """A WebSocket client on the sans-I/O protocol: the test decides what one write holds."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.protocol = ClientProtocol(parse_uri(url), max_size=None)
        self.texts: deque[dict[str, Any]] = deque()

    async def open(self) -> None:
        request = self.protocol.connect()
        request.headers["Authorization"] = f"Bearer {TOKEN}"
        self.protocol.send_request(request)
        host, port = self.url.split("/")[2].split(":")
        self.reader, self.writer = await asyncio.open_connection(host, int(port))
        self.flush()
        while not any(isinstance(e, Response) for e in self.protocol.events_received()):
            await self._read()

    def send(self, message: dict[str, Any]) -> None:
        """Frame ``message``; nothing is written until :meth:`flush`."""
        self.protocol.send_text(json.dumps(message).encode())

    def flush(self) -> None:
        self.writer.write(b"".join(self.protocol.data_to_send()))

    async def next_text(self) -> dict[str, Any]:
        while not self.texts:
            await self._read()
            for event in self.protocol.events_received():
                if isinstance(event, Frame) and event.opcode is Opcode.TEXT:
                    self.texts.append(json.loads(event.data))
        return self.texts.popleft()

    async def _read(self) -> None:
        data = await asyncio.wait_for(self.reader.read(65536), TIMEOUT)
        assert data, "the server closed the connection"
        self.protocol.receive_data(data)

    def close(self) -> None:
        self.writer.close()


@contextlib.asynccontextmanager
async def recorded() -> AsyncIterator[tuple[Recorder, RawClient]]:
    """A server hosting a :class:`Recorder`, and a raw client that has sent ``initialize``
    (framed, not yet written)."""
    recorder = Recorder()
    async with serve_in_background(asgi_app(recorder, auth=[TOKEN])) as served:
        client = RawClient(served.ws_url)
        await client.open()
        client.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        try:
            yield recorder, client
        finally:
            client.close()


async def test_a_burst_reaches_the_agent_once_each_and_in_order_pushed_or_queued() -> None:
    async with recorded() as (recorder, client):
        client.flush()
        assert (await client.next_text())["id"] == 0
        # Everything in one write: many frames per read of the server's socket.
        for n in range(BURST):
            client.send({"jsonrpc": "2.0", "method": "_test/n", "params": {"n": n}})
        client.send({"jsonrpc": "2.0", "id": 1, "method": "_test/done", "params": {}})
        client.flush()
        done = await client.next_text()
    assert done["id"] == 1
    assert done["result"]["seen"] == list(range(BURST))
    assert recorder.pushed > 0 and recorder.refused > 0, (recorder.pushed, recorder.refused)


async def test_answers_written_directly_or_queued_arrive_in_order() -> None:
    async with recorded() as (_, client):
        for i in range(1, BURST + 1):
            client.send({"jsonrpc": "2.0", "id": i, "method": "_test/echo", "params": {}})
        client.flush()
        ids = [(await client.next_text())["id"] for _ in range(BURST + 1)]
    assert ids == list(range(BURST + 1))
