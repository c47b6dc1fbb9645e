"""The client's SSE reader (transports/http.py) on event streams cut at every byte, with
CRLF line ends, comments, multi-line data, event ids and an oversize event."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from acpwire.protocol.framing import Oversize
from acpwire.transports.http import HttpTransport

STREAM = (
    b": open\n\n"
    b'id: 1\nevent: message\ndata: {"jsonrpc":"2.0","method":"a","params":{}}\n\n'
    b": keepalive\r\n\r\n"
    b'id: 2\r\nevent: message\r\ndata: {"jsonrpc":"2.0",\r\ndata: "method":"b"}\r\n\r\n'
    b"id: 3\ndata: " + b"x" * 300 + b"\n\n"
    b'id: 4\ndata: {"jsonrpc":"2.0","method":"c"}\n\n'
)
EXPECTED = [
    b'{"jsonrpc":"2.0","method":"a","params":{}}',
    b'{"jsonrpc":"2.0",\n"method":"b"}',
    Oversize(300),
    b'{"jsonrpc":"2.0","method":"c"}',
]


class Cut:
    """A response whose body arrives in pieces of ``size`` bytes."""

    def __init__(self, body: bytes, size: int) -> None:
        self.body, self.size = body, size

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.body), self.size):
            yield self.body[start : start + self.size]


async def _read(transport: HttpTransport, response: Cut) -> list[object]:
    assert await transport._events(response, None) is None  # a clean end
    got: list[object] = []
    while not transport._inbox.empty():
        got.append(transport._inbox.get_nowait())
    return got


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, len(STREAM)])
async def test_events_are_read_whole_however_the_stream_is_cut(size: int) -> None:
    transport = HttpTransport("http://x/acp", httpx.AsyncClient(), max_message_size=200)
    got = await _read(transport, Cut(STREAM, size))
    assert [g.size if isinstance(g, Oversize) else g for g in got] == [
        e.size if isinstance(e, Oversize) else e for e in EXPECTED
    ]
    # A resumed stream that repeats what was delivered skips it.
    again = await _read(transport, Cut(STREAM, size))
    assert again == []
