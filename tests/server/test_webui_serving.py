"""The web client's page and how a browser reaches the endpoint (docs/webui.md,
docs/security.md): the files at ``/`` with their Content-Security-Policy, the page's
own origin admitted only with ``ui=True``, and the token a browser sends in
``Sec-WebSocket-Protocol``; each tried from outside over real sockets on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator

import httpx
import pytest
from waiting import TIMEOUT
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from acpwire.server import ServedApp, asgi_app, serve_in_background
from acpwire.server.security import TOKEN_PROTOCOL, token_protocols
from acpwire.server.ui import CSP

from ._agents import Agents
from ._serve import ROOT

TOKEN = "alice-token-0123456789abcdef"
INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'


@pytest.fixture
async def with_ui() -> AsyncIterator[ServedApp]:
    async with serve_in_background(asgi_app(Agents(), auth=[TOKEN], ui=True)) as server:
        yield server


@pytest.fixture
async def without_ui() -> AsyncIterator[ServedApp]:
    async with serve_in_background(asgi_app(Agents(), auth=[TOKEN])) as server:
        yield server


def own_origin(served: ServedApp) -> str:
    return served.url.rsplit("/acp", 1)[0]


async def status_of_upgrade(served: ServedApp, origin: str | None, protocols: list[str]) -> int:
    """The status a WebSocket upgrade gets (101 when accepted, then an initialize)."""
    try:
        async with connect(
            served.ws_url,
            origin=origin,  # type: ignore[arg-type]
            subprotocols=protocols,  # type: ignore[arg-type]
            open_timeout=TIMEOUT,
        ) as ws:
            assert ws.subprotocol == TOKEN_PROTOCOL  # never the token
            await ws.send(INIT)
            assert '"result"' in str(await ws.recv(decode=True))
            return 101
    except InvalidStatus as refused:
        return refused.response.status_code


async def test_the_page_is_served_with_a_strict_policy_only_with_ui(
    with_ui: ServedApp, without_ui: ServedApp
) -> None:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        page = await http.get(own_origin(with_ui) + "/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert page.headers["content-security-policy"] == CSP
        assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP
        assert page.headers["x-content-type-options"] == "nosniff"
        assert '<script type="module" src="/app.js">' in page.text
        script = await http.get(own_origin(with_ui) + "/app.js")
        assert script.headers["content-type"].startswith("text/javascript")
        # Agent text is never markup: no API that parses HTML in the script at all.
        for parser in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"):
            assert parser not in script.text
        assert (await http.get(own_origin(with_ui) + "/../pyproject.toml")).status_code == 404
        assert (await http.get(own_origin(with_ui) + "/__init__.py")).status_code == 404
        assert (await http.post(own_origin(with_ui) + "/", content=b"x")).status_code == 405
        # A rebinding name gets nothing from a loopback server, the page included.
        rebound = await http.get(own_origin(with_ui) + "/", headers={"host": "evil.example"})
        assert rebound.status_code == 421
        # Without ui nothing changes: no page.
        assert (await http.get(own_origin(without_ui) + "/")).status_code == 404


async def test_a_browser_signs_in_with_the_token_in_the_websocket_protocols(
    with_ui: ServedApp,
) -> None:
    own = own_origin(with_ui)
    assert await status_of_upgrade(with_ui, own, token_protocols(TOKEN)) == 101
    assert await status_of_upgrade(with_ui, own, token_protocols("wrong")) == 401
    # The token protocol counts only with its marker (else the server could not answer
    # one of the offered protocols), and only once.
    assert await status_of_upgrade(with_ui, own, token_protocols(TOKEN)[1:]) == 401
    twice = [*token_protocols(TOKEN), token_protocols("wrong")[1]]
    assert await status_of_upgrade(with_ui, own, twice) == 401
    assert await status_of_upgrade(with_ui, own, [TOKEN_PROTOCOL, TOKEN_PROTOCOL + ".%%"]) == 401


async def test_a_foreign_page_with_the_token_is_refused(
    with_ui: ServedApp, without_ui: ServedApp
) -> None:
    """The attack: a page on another site (or another port of this host) that has the
    token opens the WebSocket from the victim's browser; the Origin check comes first."""
    protocols = token_protocols(TOKEN)
    other_port = own_origin(with_ui).rsplit(":", 1)[0] + ":1"
    for origin in ("https://evil.example", other_port, "null"):
        assert await status_of_upgrade(with_ui, origin, protocols) == 403
    # Without ui the endpoint's own origin is as foreign as any other (nothing changes).
    assert await status_of_upgrade(without_ui, own_origin(without_ui), protocols) == 403


def test_an_endpoint_path_that_would_hide_the_page_is_refused() -> None:
    for path in ("/", "/app.js"):
        with pytest.raises(ValueError, match="serves its page at /"):
            asgi_app(Agents(), auth=[TOKEN], path=path, ui=True)
        command = [sys.executable, "-m", "acpwire.cli.main", "serve", "--demo", "--ui"]
        done = subprocess.run(
            [*command, "--path", path],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            timeout=TIMEOUT,
        )
        assert done.returncode == 2
        assert "--ui serves its page at /" in done.stderr and "Traceback" not in done.stderr
