"""Who may reach the endpoint (docs/security.md): authentication, Origin and Host checks,
tried from outside as an attacker would, over real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from engine.test_behaviour import RecordingClient
from waiting import TIMEOUT

from acpwire.client.connection import ClientSideConnection
from acpwire.protocol.errors import ConnectionClosedError
from acpwire.server import (
    BearerTokens,
    NoAuthenticationWarning,
    RequestHead,
    ServedApp,
    asgi_app,
    serve_in_background,
    token_principal,
)
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket

from ._agents import Agents

TOKEN = "alice-token-0123456789abcdef"
OTHER = "bob-token-0123456789abcdef"
INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
JSON = {"content-type": "application/json"}
EVIL = "https://evil.example"


@pytest.fixture
async def agents() -> Agents:
    return Agents()


@pytest.fixture
async def served(agents: Agents) -> AsyncIterator[ServedApp]:
    app = asgi_app(agents, auth=[TOKEN, OTHER], allowed_origins=["https://app.example"])
    async with serve_in_background(app) as server:
        yield server


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_a_request_without_a_valid_token_is_refused_with_401_and_starts_nothing(
    served: ServedApp, agents: Agents
) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        for headers in ({}, bearer("wrong"), bearer(TOKEN[:-1]), {"authorization": TOKEN}):
            answer = await http.post(served.url, content=INIT, headers={**JSON, **headers})
            assert answer.status_code == 401
            assert answer.headers["www-authenticate"].startswith("Bearer")
        wrong = await http.post(served.url, content=INIT, headers={**JSON, **bearer("wrong")})
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
        stream = {"accept": "text/event-stream", "acp-connection-id": "x"}
        assert (await http.get(served.url, headers=stream)).status_code == 401
        assert (
            await http.delete(served.url, headers={"acp-connection-id": "x"})
        ).status_code == 401
    for token in (None, "wrong"):
        with pytest.raises(ConnectionClosedError, match="401"):
            await connect_websocket(served.ws_url, token=token)
    assert not agents.made
    assert served.app.host.connections == {}


@pytest.mark.parametrize("kind", ["websocket", "http"])
async def test_every_configured_token_opens_a_connection(served: ServedApp, kind: str) -> None:
    for token in (TOKEN, OTHER):
        if kind == "websocket":
            transport = await connect_websocket(served.ws_url, token=token)
        else:
            transport = await connect_http(served.url, token=token)
        conn = ClientSideConnection(RecordingClient(), transport)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        (remote,) = served.app.host.connections.values()
        assert remote.principal == token_principal(token)
        await conn.close()
        await asyncio.wait_for(remote.closed.wait(), TIMEOUT)


async def test_a_websocket_opened_by_a_page_on_another_site_is_refused(
    served: ServedApp, agents: Agents
) -> None:
    with pytest.raises(ConnectionClosedError, match="403"):
        await connect_websocket(served.ws_url, token=TOKEN, headers={"origin": EVIL})
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        answer = await http.post(
            served.url, content=INIT, headers={**JSON, **bearer(TOKEN), "origin": EVIL}
        )
        assert answer.status_code == 403
    assert not agents.made
    # An allowed origin passes.
    transport = await connect_websocket(
        served.ws_url, token=TOKEN, headers={"origin": "https://app.example"}
    )
    await transport.close()


async def test_a_rebinding_host_name_is_refused_on_a_loopback_server(
    served: ServedApp, agents: Agents
) -> None:
    port = served.url.split(":")[2].split("/")[0]
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        for host in (
            "rebind.evil.example",
            f"rebind.evil.example:{port}",
            "127.0.0.1.evil.example",
        ):
            answer = await http.post(
                served.url, content=INIT, headers={**JSON, **bearer(TOKEN), "host": host}
            )
            assert answer.status_code == 421, host
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
            answer = await http.post(
                served.url, content=INIT, headers={**JSON, **bearer(TOKEN), "host": host}
            )
            assert answer.status_code == 200, host
            ids = {"acp-connection-id": answer.headers["acp-connection-id"], **bearer(TOKEN)}
            await http.delete(served.url, headers=ids)
    status = await raw_upgrade(served, {"host": "rebind.evil.example", **bearer(TOKEN)})
    assert status == 421
    assert len(agents.made) == 3


async def raw_upgrade(served: ServedApp, headers: dict[str, str]) -> int:
    """The status a WebSocket upgrade with exactly these headers gets (a raw socket, so
    that no client library adds its own Host)."""
    host, port = served.url.split("/")[2].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    lines = [
        "GET /acp HTTP/1.1",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    status_line = await asyncio.wait_for(reader.readline(), TIMEOUT)
    writer.close()
    return int(status_line.split()[1])


async def test_an_explicit_host_list_replaces_the_loopback_rule(agents: Agents) -> None:
    app = asgi_app(agents, auth=[TOKEN], allowed_hosts=["acp.example.com"])
    async with serve_in_background(app) as served, httpx.AsyncClient(timeout=TIMEOUT) as http:
        headers = {**JSON, **bearer(TOKEN)}
        good = await http.post(
            served.url, content=INIT, headers={**headers, "host": "acp.example.com"}
        )
        assert good.status_code == 200
        bad = await http.post(served.url, content=INIT, headers=headers)  # Host: 127.0.0.1:port
        assert bad.status_code == 421


async def test_an_endpoint_without_authentication_must_be_asked_for_and_warns(
    agents: Agents,
) -> None:
    with pytest.raises(TypeError):
        asgi_app(agents)  # type: ignore[call-arg]
    with pytest.warns(NoAuthenticationWarning):
        app = asgi_app(agents, auth=None)
    async with serve_in_background(app) as served:
        transport = await connect_websocket(served.ws_url)
        conn = ClientSideConnection(RecordingClient(), transport)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        await conn.close()
        # Still no foreign web page, even without authentication.
        with pytest.raises(ConnectionClosedError, match="403"):
            await connect_websocket(served.ws_url, headers={"origin": EVIL})


async def test_a_custom_hook_maps_a_proxy_identity_header_to_a_principal(agents: Agents) -> None:
    async def from_proxy(request: RequestHead) -> str | None:
        user = request.headers.get("x-authenticated-user")
        return f"user:{user}" if user else None

    app = asgi_app(agents, auth=from_proxy)
    async with serve_in_background(app) as served:
        with pytest.raises(ConnectionClosedError, match="401"):
            await connect_websocket(served.ws_url)
        transport = await connect_websocket(
            served.ws_url, headers={"x-authenticated-user": "carol"}
        )
        conn = ClientSideConnection(RecordingClient(), transport)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        (remote,) = app.host.connections.values()
        assert remote.principal == "user:carol"
        await conn.close()


async def test_a_failing_hook_refuses_the_request() -> None:
    async def broken(request: RequestHead) -> str | None:
        raise RuntimeError("identity provider down")

    app = asgi_app(Agents(), auth=broken)
    async with serve_in_background(app) as served, httpx.AsyncClient(timeout=TIMEOUT) as http:
        answer = await http.post(served.url, content=INIT, headers=JSON)
        assert answer.status_code == 500
        assert "identity provider" not in answer.text


async def test_bearer_tokens_match_whole_tokens_only() -> None:
    tokens = BearerTokens({"s3cret-token-value": "alice"})

    def head(value: str) -> RequestHead:
        return RequestHead("http", "POST", "/acp", {"authorization": value}, None)

    assert await tokens(head("Bearer s3cret-token-value")) == "alice"
    assert await tokens(head("bearer  s3cret-token-value ")) == "alice"
    for wrong in ("Bearer s3cret", "Bearer s3cret-token-value2", "Basic s3cret-token-value", ""):
        assert await tokens(head(wrong)) is None
    with pytest.raises(ValueError, match="whitespace"):
        BearerTokens(["has space"])
    with pytest.raises(ValueError, match="at least one"):
        BearerTokens([])
    with pytest.raises(TypeError):
        asgi_app(Agents(), auth="one-token-as-a-string")
