"""The Streamable HTTP client transport closed while a POST waits to be sent again.

``ReconnectingTransport`` closes a broken transport while a POST on it may still be
retrying (the network broke under it): the retry must end as a closed connection, which
the reconnecting layer expects, not as httpx's "client has been closed" RuntimeError,
which ended ``acp connect`` with a traceback when its server restarted.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from waiting import TIMEOUT

from acpwire.protocol.errors import ConnectionClosedError
from acpwire.transports.http import HttpTransport


async def test_a_post_waiting_to_retry_ends_as_closed_when_the_transport_closes() -> None:
    tried = asyncio.Event()

    def refuse(request: httpx.Request) -> httpx.Response:
        tried.set()
        raise httpx.ConnectError("connection refused", request=request)

    client = httpx.AsyncClient(transport=httpx.MockTransport(refuse))
    transport = HttpTransport("http://127.0.0.1:9/acp", client, resume_within=TIMEOUT)
    transport.connection_id = "conn-1"  # as after initialize
    sending = asyncio.ensure_future(
        transport.send(b'{"jsonrpc":"2.0","method":"_note","params":{}}')
    )
    await asyncio.wait_for(tried.wait(), TIMEOUT)  # the first try failed; a retry waits
    await transport.close()
    with pytest.raises(ConnectionClosedError, match="transport is closed"):
        await asyncio.wait_for(sending, TIMEOUT)
