"""A POST sent again after a network failure (docs/remote.md, "Reconnect"): acpwire's
HTTP client marks it with ``Acp-Retry``, and the server drops a request it already
answered instead of running it twice; an unmarked repeat of an id is a new request."""

from __future__ import annotations

import asyncio

import httpx
import orjson
from waiting import TIMEOUT

from acpwire.server import asgi_app, serve_in_background
from acpwire.transports.http import RETRY_HEADER, connect_http

from ._agents import Agents

TOKEN = "retry-token-0123456789abcdef"
NEW = b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}'


async def test_a_retried_post_of_an_answered_request_does_not_run_it_again() -> None:
    agents = Agents()
    async with serve_in_background(asgi_app(agents, auth=[TOKEN])) as served:
        transport = await connect_http(served.url, token=TOKEN)
        await transport.send(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
        )
        assert orjson.loads(await asyncio.wait_for(transport.receive(), TIMEOUT))["id"] == 1
        await transport.send(NEW)
        first = orjson.loads(await asyncio.wait_for(transport.receive(), TIMEOUT))
        assert first["result"]["sessionId"] == "s1"
        (agent,) = agents.made

        headers = {
            "authorization": f"Bearer {TOKEN}",
            "content-type": "application/json",
            "acp-connection-id": transport.connection_id or "",
        }
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            # The same POST again, as the client sends it when the first one's 202 was lost.
            retried = await http.post(
                served.url, content=NEW, headers={**headers, RETRY_HEADER: "1"}
            )
            assert retried.status_code == 202
            echo = b'{"jsonrpc":"2.0","id":3,"method":"_test/echo","params":{"n":1}}'
            await transport.send(echo)
            after = orjson.loads(await asyncio.wait_for(transport.receive(), TIMEOUT))
            assert after["id"] == 3  # no second answer to id 2 came first
            assert agent.sessions == {"s1"}

            # Without the mark, the same id once answered is a new request (JSON-RPC ids
            # need only be unique among requests in flight).
            again = await http.post(served.url, content=NEW, headers=headers)
            assert again.status_code == 202
            second = orjson.loads(await asyncio.wait_for(transport.receive(), TIMEOUT))
            assert second["id"] == 2 and second["result"]["sessionId"] == "s2"
        await transport.close()
