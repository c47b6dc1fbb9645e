"""A TCP proxy on 127.0.0.1 whose connections a test can cut, as a network drop would, or
freeze, as a half-open path would (nothing passes, nothing is closed)."""

from __future__ import annotations

import asyncio
import contextlib


class Proxy:
    """Forwards ``127.0.0.1:port`` to ``target``; :meth:`cut` aborts every open connection."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.accepted = 0
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._long_lived: set[asyncio.StreamWriter] = set()
        """Client sides of connections that carry an SSE stream or a WebSocket."""
        self._frozen: set[asyncio.StreamWriter] = set()
        self.frozen_seen = 0
        """Chunks read on frozen connections and dropped."""

    async def start(self) -> Proxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def url(self, real_url: str) -> str:
        scheme, rest = real_url.split("://", 1)
        return f"{scheme}://127.0.0.1:{self.port}/{rest.split('/', 1)[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self._open.update((writer, up_writer))
        pipes = [
            asyncio.ensure_future(self._pipe(reader, up_writer, writer)),
            asyncio.ensure_future(self._pipe(up_reader, writer, writer, down=True)),
        ]
        self._tasks.update(pipes)
        await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
        for side in (writer, up_writer):
            side.transport.abort()
            self._open.discard(side)

    async def _pipe(
        self,
        source: asyncio.StreamReader,
        target: asyncio.StreamWriter,
        client: asyncio.StreamWriter,
        *,
        down: bool = False,
    ) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                if down and (b"text/event-stream" in data or b" 101 " in data[:16]):
                    self._long_lived.add(client)
                if client in self._frozen:
                    self.frozen_seen += 1
                    continue
                target.write(data)
                await target.drain()

    def freeze(self) -> None:
        """From now on, nothing passes either way on the open SSE streams and WebSockets,
        and nothing tells either end (a half-open path). New connections pass."""
        self._frozen |= self._long_lived

    def cut(self) -> None:
        """Drop every connection now, both sides, without a close handshake (RST)."""
        for writer in list(self._open):
            writer.transport.abort()
        self._open.clear()

    async def close(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
