"""A raw HTTP/2 client for attack tests: one TCP connection (h2c, prior knowledge), frames
sent exactly as the test says, with the ``h2`` package. Unlike httpx it sends a body's DATA
frames after the server has answered, which is what the tests need."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

import h2.config
import h2.connection
import h2.events
import h2.settings
from hyperframe.frame import DataFrame
from waiting import TIMEOUT


@dataclass
class Stream:
    """What the server sent on one stream."""

    status: int | None = None
    headers: dict[bytes, bytes] = field(default_factory=dict[bytes, bytes])
    body: bytearray = field(default_factory=bytearray)
    ended: bool = False
    reset: int | None = None
    """The error code of the server's RST_STREAM, if it sent one."""
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class H2Client:
    """Use with ``async with H2Client.connect(host, port) as client``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h2 = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding=None)
        )
        self.streams: dict[int, Stream] = {}
        self.terminated: int | None = None
        """The error code of the server's GOAWAY, or -1 when the socket ended."""
        self.changed = asyncio.Event()
        self.granting = True
        """Whether what the server sends is acknowledged (else its windows run out)."""
        self._reading: asyncio.Task[None] | None = None

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, host: str, port: int) -> AsyncIterator[H2Client]:
        reader, writer = await asyncio.open_connection(host, port)
        client = cls(reader, writer)
        client.h2.initiate_connection()
        client.h2.update_settings({h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL: 1})
        client._flush()
        client._reading = asyncio.ensure_future(client._read())
        try:
            yield client
        finally:
            client._reading.cancel()
            with contextlib.suppress(BaseException):
                await client._reading
            writer.close()

    def _flush(self) -> None:
        data = self.h2.data_to_send()
        if data and not self.writer.is_closing():
            self.writer.write(data)

    async def _read(self) -> None:
        while True:
            try:
                data = await self.reader.read(65536)
            except ConnectionError:
                data = b""
            if not data:
                self.terminated = -1 if self.terminated is None else self.terminated
                self._changed()
                return
            for event in self.h2.receive_data(data):
                self._event(event)
            self._flush()

    def _event(self, event: h2.events.Event) -> None:
        stream_id = getattr(event, "stream_id", None)
        stream = self.streams.setdefault(stream_id, Stream()) if stream_id else None
        if isinstance(event, h2.events.ResponseReceived) and stream is not None:
            headers = dict(event.headers)  # type: ignore[arg-type]
            stream.status = int(headers[b":status"])
            stream.headers = headers
        elif isinstance(event, h2.events.DataReceived) and stream is not None:
            stream.body += event.data or b""
            if self.granting:
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded) and stream is not None:
            stream.ended = True
        elif isinstance(event, h2.events.StreamReset) and stream is not None:
            stream.reset = event.error_code
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.terminated = int(event.error_code or 0)
        if stream is not None:
            stream.changed.set()
        self._changed()

    def _changed(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def request(
        self,
        method: str,
        path: str,
        headers: Sequence[tuple[str, str]],
        *,
        end: bool = True,
        protocol: str | None = None,
    ) -> int:
        """Send a request's HEADERS (and END_STREAM with ``end``); its stream id.
        ``protocol``: an extended CONNECT's ``:protocol`` (RFC 8441)."""
        stream_id = self.h2.get_next_available_stream_id()
        self.streams[stream_id] = Stream()
        pseudo = [(":method", method), (":path", path), (":scheme", "http")]
        if protocol is not None:
            pseudo.append((":protocol", protocol))
        self.h2.send_headers(
            stream_id, [*pseudo, (":authority", "127.0.0.1"), *headers], end_stream=end
        )
        self._flush()
        return stream_id

    def data(self, stream_id: int, data: bytes, *, end: bool = False) -> None:
        """Send DATA frames on ``stream_id``, as much as the windows allow now."""
        size = min(len(data), self.h2.local_flow_control_window(stream_id))
        for start in range(0, size, self.h2.max_outbound_frame_size):
            chunk = data[start : min(size, start + self.h2.max_outbound_frame_size)]
            self.h2.send_data(stream_id, chunk)
        if end:
            self.h2.end_stream(stream_id)
        self._flush()

    async def body(self, stream_id: int, size: int) -> bool:
        """Send ``size`` bytes of body as flow control lets them go (then END_STREAM):
        ``False`` if the server reset the stream first."""
        sent = 0
        while sent < size:
            if self.streams[stream_id].reset is not None:
                return False
            window = min(self.h2.local_flow_control_window(stream_id), size - sent)
            if window > 0:
                self.data(stream_id, b"x" * window)
                sent += window
            else:
                await asyncio.wait_for(self.changed.wait(), TIMEOUT)
        self.h2.end_stream(stream_id)
        self._flush()
        return True

    def raw_data(self, stream_id: int, data: bytes, *, end: bool = False) -> None:
        """Write DATA frames for ``stream_id`` on the socket, whatever the stream's state
        (h2 would refuse once the server has answered or reset it): what a client whose
        frames were already on the way when the answer came looks like to the server."""
        size = self.h2.max_outbound_frame_size
        for start in range(0, len(data), size):
            frame = DataFrame(stream_id, data[start : start + size])
            if end and start + size >= len(data):
                frame.flags.add("END_STREAM")
            self.writer.write(frame.serialize())

    async def until(self, stream_id: int, what: str) -> Stream:
        """Wait (bounded) until the stream has a status, or ``ended``, or is ``reset``."""
        stream = self.streams[stream_id]

        async def wait() -> None:
            while not _reached(stream, what) and self.terminated is None:
                stream.changed.clear()
                changed = asyncio.ensure_future(stream.changed.wait())
                connection = asyncio.ensure_future(self.changed.wait())
                await asyncio.wait({changed, connection}, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                connection.cancel()

        await asyncio.wait_for(wait(), TIMEOUT)
        return stream


def _reached(stream: Stream, what: str) -> bool:
    if what == "status":
        return stream.status is not None
    if what == "ended":
        return stream.ended or stream.reset is not None
    if what == "reset":
        return stream.reset is not None
    if what == "body":
        return bool(stream.body)
    raise ValueError(what)
