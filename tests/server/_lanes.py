"""Raw clients of the ``/acp`` endpoint, one per lane (HTTP/1.1, h2c, WebSocket): they send
bodies as given, so a test decides every byte, and record everything they receive."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from waiting import TIMEOUT
from websockets.asyncio.client import ClientConnection, connect

from acpwire.server import ServedApp
from acpwire.server.admission import Unreadable, read_client_message

LANES = ("http/1.1", "h2c", "websocket")


class Lane:
    """One client of the endpoint on one transport, sending raw bodies."""

    def __init__(self, url: str, token: str) -> None:
        self.url = url
        self.token = token
        self.received: list[dict[str, Any]] = []
        self._new = asyncio.Event()
        self._ids = iter(range(1000, 10**6))

    def _got(self, text: str, stream: list[dict[str, Any]] | None = None) -> None:
        message = json.loads(text)
        self.received.append(message)
        if stream is not None:
            stream.append(message)
        self._new.set()

    async def _next(self, seen: int) -> dict[str, Any]:
        """The first message received after the first ``seen``."""
        while len(self.received) <= seen:
            self._new.clear()
            await asyncio.wait_for(self._new.wait(), TIMEOUT)
        return self.received[seen]

    async def send(self, body: bytes, session: str | None = None) -> dict[str, Any] | None:
        """Send ``body``; the endpoint's refusal (``None`` when it took the body)."""
        raise NotImplementedError

    async def call(self, method: str, params: dict[str, Any], session: str | None = None) -> Any:
        """A well-formed request and its answer."""
        rid = next(self._ids)
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        seen = 0
        assert await self.send(body.encode(), session) is None
        while True:
            message = await self._next(seen)
            seen += 1
            if message.get("id") == rid and "method" not in message:
                return message

    async def open(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError


class HttpLane(Lane):
    def __init__(self, url: str, token: str, *, http2: bool) -> None:
        super().__init__(url, token)
        self.http = httpx.AsyncClient(http1=not http2, http2=http2, timeout=TIMEOUT)
        self.headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
        self.statuses: list[int] = []
        self.streams: dict[str | None, list[dict[str, Any]]] = {}
        """What came on each stream: the connection's (``None``) and each session's."""
        self._readers: list[asyncio.Task[None]] = []

    async def open(self) -> None:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        answer = await self.http.post(self.url, json=init, headers=self.headers)
        assert answer.status_code == 200, answer.text
        self.headers["acp-connection-id"] = answer.headers["acp-connection-id"]
        await self.open_stream(None)

    async def open_stream(self, session: str | None) -> None:
        """GET the connection stream (``None``) or a session's; returns once it is open."""
        opened = asyncio.Event()
        self.streams[session] = []
        self._readers.append(asyncio.ensure_future(self._read_stream(session, opened)))
        await asyncio.wait_for(opened.wait(), TIMEOUT)

    async def _read_stream(self, session: str | None, opened: asyncio.Event) -> None:
        headers = {**self.headers, "accept": "text/event-stream"}
        if session is not None:
            headers["acp-session-id"] = session
        async with self.http.stream("GET", self.url, headers=headers, timeout=None) as stream:
            assert stream.status_code == 200
            opened.set()
            data: list[str] = []
            async for line in stream.aiter_lines():
                if line.startswith("data: "):
                    data.append(line[len("data: ") :])
                elif not line and data:
                    self._got("\n".join(data), self.streams[session])
                    data = []

    async def send(self, body: bytes, session: str | None = None) -> dict[str, Any] | None:
        headers = dict(self.headers)
        if session is not None:
            headers["acp-session-id"] = session
        answer = await self.http.post(self.url, content=body, headers=headers)
        self.statuses.append(answer.status_code)
        if answer.status_code == 202:
            return None
        refusal: dict[str, Any] = answer.json()
        return refusal

    async def aclose(self) -> None:
        for reader in self._readers:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader
        await self.http.aclose()


class WebSocketLane(Lane):
    def __init__(self, url: str, token: str) -> None:
        super().__init__(url, token)
        self._socket: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None

    async def open(self) -> None:
        headers = {"authorization": f"Bearer {self.token}"}
        self._socket = await connect(self.url, additional_headers=headers, max_size=None)
        self._reader = asyncio.ensure_future(self._read())
        init = {"protocolVersion": 1}
        assert "result" in await self.call("initialize", init)

    async def _read(self) -> None:
        assert self._socket is not None
        async for frame in self._socket:
            assert isinstance(frame, str)
            self._got(frame)

    async def send(self, body: bytes, session: str | None = None) -> dict[str, Any] | None:
        # The endpoint answers a frame it refuses at once, before anything the agent sends
        # later; one it takes is answered by the agent (or refused for its owner: -32002).
        assert self._socket is not None
        seen = len(self.received)
        await self._socket.send(body.decode())
        if read_would_refuse(body):
            return await self._next(seen)
        return None

    async def aclose(self) -> None:
        if self._socket is not None:
            await self._socket.close()
        if self._reader is not None:
            with contextlib.suppress(BaseException):
                await self._reader


def read_would_refuse(body: bytes) -> bool:
    try:
        read_client_message(body)
    except Unreadable:
        return True
    return False


@contextlib.asynccontextmanager
async def lane(kind: str, served: ServedApp, token: str) -> AsyncIterator[Lane]:
    client: Lane
    if kind == "websocket":
        client = WebSocketLane(served.ws_url, token)
    else:
        client = HttpLane(served.url, token, http2=kind == "h2c")
    try:
        await client.open()
        yield client
    finally:
        await client.aclose()
