"""The WebSocket's direct path (server/front.py ``DIRECT``): a message the endpoint can
take without waiting goes from the socket's callback into the agent's engine, and an
answer is written to the socket from the agent's task; the WebSocket client hands a
message to its engine the same way. Whatever takes which path, each side sees every
message once and in order (each test checked to fail without its "nothing queued" guard)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import pytest
from engine.test_behaviour import RecordingClient
from waiting import TIMEOUT, wait_until
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Response
from websockets.uri import parse_uri

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.engine.connection import INBOX_HIGH_WATER, Connection
from acpwire.protocol.framing import Oversize
from acpwire.server import Limits, asgi_app, serve_in_background
from acpwire.server.front import WebSocket
from acpwire.server.outbox import Outbox, ReplayBudget
from acpwire.transports.base import PushesMessages, Transport
from acpwire.transports.websocket import connect_websocket

TOKEN = "direct-path-token-0123456789ab"
BURST = 300
PAD = 64 * 1024


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def notification(params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": params}


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
        assert isinstance(transport, PushesMessages), "the remote connection's transport pushes"
        transport.push_to(self._sink)
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
        elif method == "_test/flood":
            for n in range(decoded["params"]["count"]):
                update = {"sessionUpdate": "agent_message_chunk", "content": text(str(n))}
                note = {"sessionId": "s", "update": update}
                self.answers.put_nowait(json.dumps(notification(note)).encode())
            result = {}
        else:
            result = decoded.get("params") or {}
        answer = {"jsonrpc": "2.0", "id": decoded["id"], "result": result}
        self.answers.put_nowait(json.dumps(answer).encode())

    async def _write(self, transport: Transport) -> None:
        while True:
            await transport.send(await self.answers.get())


INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}


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
        client.send(INIT)
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


async def test_answers_written_directly_or_queued_arrive_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Large answers to a client that reads late: the socket fills, so some answers wait
    # in the stream's queue while others were written at once.
    written: list[bool] = []
    send_text_now = WebSocket.send_text_now

    def counting(self: WebSocket, data: bytes) -> bool:
        written.append(send_text_now(self, data))
        return written[-1]

    monkeypatch.setattr(WebSocket, "send_text_now", counting)
    async with recorded() as (_, client):
        for i in range(1, BURST + 1):
            params = {"pad": "x" * PAD}
            client.send({"jsonrpc": "2.0", "id": i, "method": "_test/echo", "params": params})
        client.flush()
        # Not reading meanwhile, until the server finds the socket full.
        await wait_until(lambda: False in written, "a write finds the socket full")
        ids = [(await client.next_text())["id"] for _ in range(BURST + 1)]
    assert ids == list(range(BURST + 1))
    assert True in written and False in written, written.count(True)


class SlowReader(RecordingClient):
    """Takes its updates slower than they come, now and then: the engine falls behind."""

    async def session_update(self, params: s.SessionNotification) -> None:
        await super().session_update(params)
        if len(self.updates) % 1000 == 0:
            await asyncio.sleep(0.05)


async def test_the_client_gets_a_flood_once_each_and_in_order_taken_at_once_or_queued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # More updates than the engine's inbox holds: it refuses some pushes, which then wait
    # in websockets' queue, and nothing that comes after may overtake them.
    refused: list[bool] = []
    take_pushed = Connection._take_pushed

    def counting(self: Connection, line: bytes) -> bool:
        taken = take_pushed(self, line)
        if not taken:
            refused.append(True)
        return taken

    monkeypatch.setattr(Connection, "_take_pushed", counting)
    count = 3 * INBOX_HIGH_WATER
    recorder = Recorder()
    async with serve_in_background(asgi_app(recorder, auth=[TOKEN])) as served:
        handler = SlowReader()
        conn = ClientSideConnection(handler, await connect_websocket(served.ws_url, token=TOKEN))
        try:
            await asyncio.wait_for(conn.initialize(), TIMEOUT)
            await asyncio.wait_for(conn.agent.ext_method("_test/flood", {"count": count}), TIMEOUT)
            await wait_until(lambda: len(handler.updates) >= count, "every update arrives")
        finally:
            await conn.close()
    texts = [u.content.text for u in handler.updates if isinstance(u, s.AgentMessageChunk)]
    assert texts == [str(n) for n in range(count)]
    assert refused, "the engine never fell behind: the queued path was not exercised"


async def test_a_stream_writes_at_once_only_while_nothing_waits_in_its_queue() -> None:
    box = Outbox(Limits(), ReplayBudget(1 << 20))
    written: list[bytes] = []
    socket_free = False

    def write_now(message: bytes) -> bool:
        if socket_free:
            written.append(message)
        return socket_free

    box.write_now = write_now
    await box.put(b"1")  # the socket is busy: queued
    socket_free = True
    await box.put(b"2")  # the socket is free, but "1" waits: queued behind it
    assert written == [] and len(box.queue) == 2
    assert [await box.queue.get(), await box.queue.get()] == [b"1", b"2"]
    await box.put(b"3")  # nothing waits now: written at once
    assert written == [b"3"] and len(box.queue) == 0


async def test_the_client_transport_hands_over_in_order_whether_taken_at_once_or_queued() -> None:
    # The client's transport with a sink that refuses every third message: a refused one
    # waits in websockets' queue, and none after it may be handed over before it is read.
    recorder = Recorder()
    count = 500
    async with serve_in_background(asgi_app(recorder, auth=[TOKEN])) as served:
        transport = await connect_websocket(served.ws_url, token=TOKEN)
        got: list[dict[str, Any]] = []
        offered = 0

        def sink(message: bytes) -> bool:
            nonlocal offered
            offered += 1
            if offered % 3 == 0:
                return False
            got.append(json.loads(message))
            return True

        transport.push_to(sink)

        async def read() -> None:
            while True:
                message = await transport.receive()
                if message is None:
                    return
                assert not isinstance(message, Oversize)
                got.append(json.loads(message))

        reader = asyncio.ensure_future(read())
        try:
            await transport.send(json.dumps(INIT).encode())
            flood = {"jsonrpc": "2.0", "id": 1, "method": "_test/flood", "params": {"count": count}}
            await transport.send(json.dumps(flood).encode())
            await wait_until(lambda: len(got) >= count + 2, "every message arrives")
        finally:
            reader.cancel()
            await transport.close()
    chunks = [m["params"]["update"]["content"]["text"] for m in got if "method" in m]
    assert chunks == [str(n) for n in range(count)]
    assert [m.get("id") for m in got if "id" in m] == [0, 1]
    assert offered >= 3, "no message was refused: the queued path was not exercised"
