"""The web client of ``acp serve --demo --ui`` used from a real Chromium (docs/webui.md):
sign in, prompt, the streamed reply, a permission asked and answered, cancel, agent
text carrying markup shown as text, and a foreign page refused. Screenshots of each
state go to tests/webui/screenshots/."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from server._serve import Serve, acp_serve
from waiting import TIMEOUT

from acpwire.server.security import token_protocols

from .conftest import SCREENSHOTS

pytestmark = pytest.mark.slow

WAIT_MS = TIMEOUT * 1000


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Serve]:
    env = {"ACPWIRE_DATA_DIR": str(tmp_path / "data")}
    async with acp_serve("--demo", "--ui", env=env) as serve:
        yield serve


def origin_of(serve: Serve) -> str:
    return serve.url.rsplit("/acp", 1)[0]


async def shot(page: Any, name: str) -> None:
    await page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


async def signed_in(browser: Any, serve: Serve, folder: Path, errors: list[str]) -> Any:
    """A page of ``serve`` that has signed in and opened a session in ``folder``."""
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 900, "height": 700})
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    await page.goto(origin_of(serve) + "/")
    await shot(page, "01-sign-in")
    assert serve.token is not None
    await page.fill("#token", serve.token)
    await page.fill("#cwd", str(folder))
    await page.click("#signin button[type=submit]")
    await expect(page.locator("#status")).to_contain_text("Connected", timeout=WAIT_MS)
    await expect(page.locator("#signin")).to_be_hidden()
    await expect(page.locator("#prompt")).to_be_focused()
    return page


async def prompt(page: Any, text: str) -> None:
    await page.fill("#prompt", text)
    await page.click("#send")


async def test_sign_in_prompt_and_see_the_streamed_reply(
    browser: Any, served: Serve, tmp_path: Path
) -> None:
    from playwright.async_api import expect

    errors: list[str] = []
    page = await signed_in(browser, served, tmp_path, errors)
    await shot(page, "02-signed-in")
    # The token stays in the tab: not in the URL, not in a cookie.
    assert served.token is not None and served.token not in page.url
    assert await page.context.cookies() == []
    await prompt(page, "hello from the browser")
    await expect(page.locator(".note").last).to_have_text("Turn ended: end_turn.", timeout=WAIT_MS)
    reply = page.locator(".agent").last
    await expect(reply).to_contain_text("You said: “hello from the browser”")
    await expect(reply).to_contain_text("`help` explains each of them.")  # the last chunk
    await shot(page, "03-streamed-reply")
    assert errors == []  # no script error, no Content-Security-Policy violation


async def test_a_permission_is_asked_and_answered(
    browser: Any, served: Serve, tmp_path: Path
) -> None:
    from playwright.async_api import expect

    errors: list[str] = []
    page = await signed_in(browser, served, tmp_path, errors)
    await prompt(page, "write note.txt written from the page")
    asking = page.locator(".permission")
    await expect(asking).to_contain_text("Permission: Edit note.txt", timeout=WAIT_MS)
    kinds = await asking.locator("button").evaluate_all("bs => bs.map(b => b.textContent)")
    assert kinds == [
        "Allow once (allow_once)",
        "Allow always (allow_always)",
        "Reject (reject_once)",
    ]
    assert not (tmp_path / "note.txt").exists()  # nothing written before the answer
    await expect(page.locator(".tool .status")).to_have_text("pending")
    await shot(page, "04-permission-asked")
    await asking.get_by_role("button", name="Allow once (allow_once)").click()
    await expect(page.locator(".tool .status")).to_have_text("completed", timeout=WAIT_MS)
    await expect(page.locator(".note").last).to_have_text("Turn ended: end_turn.", timeout=WAIT_MS)
    assert (tmp_path / "note.txt").read_text().rstrip("\n") == "written from the page"
    await expect(asking).to_contain_text("Answered: Allow once")
    await shot(page, "05-permission-answered")
    assert errors == []


async def test_cancel_ends_the_turn(browser: Any, served: Serve, tmp_path: Path) -> None:
    from playwright.async_api import expect

    errors: list[str] = []
    page = await signed_in(browser, served, tmp_path, errors)
    await prompt(page, "slow 60")
    await expect(page.locator("#cancel")).to_be_enabled()
    await expect(page.locator(".agent").last).not_to_be_empty(timeout=WAIT_MS)
    await page.click("#cancel")
    await expect(page.locator(".note").last).to_have_text("Turn ended: cancelled.", timeout=WAIT_MS)
    await shot(page, "06-cancelled")
    assert errors == []


async def test_agent_text_carrying_markup_is_shown_as_text(
    browser: Any, served: Serve, tmp_path: Path
) -> None:
    """The demo echoes the prompt: a ``<script>`` and an ``<img onerror>`` come back in an
    agent message chunk, and must be shown as the characters they are, running nothing."""
    from playwright.async_api import expect

    errors: list[str] = []
    page = await signed_in(browser, served, tmp_path, errors)
    hostile = (
        "<script>window.pwned = 'script'</script>"
        "<img src=x onerror=\"window.pwned = 'img'\"><b>bold</b>"
    )
    await prompt(page, hostile)
    await expect(page.locator(".note").last).to_have_text("Turn ended: end_turn.", timeout=WAIT_MS)
    await expect(page.locator(".agent").last).to_contain_text(f"You said: “{hostile}”")
    assert await page.locator("#transcript script, #transcript img, #transcript b").count() == 0
    assert await page.evaluate("window.pwned") is None
    await shot(page, "07-markup-shown-as-text")
    assert errors == []


OPEN_SOCKET = """([url, protocols]) => new Promise((resolve) => {
  const ws = new WebSocket(url, protocols);
  ws.onopen = () => { ws.close(); resolve("open"); };
  ws.onerror = () => resolve("refused");
})"""


@contextlib.asynccontextmanager
async def other_site() -> AsyncIterator[str]:
    """Another web site on 127.0.0.1 (another port, so another origin): a real server, as
    the browser keeps a public page from opening loopback sockets at all, which would
    refuse the attack before our Origin check could."""
    page = b"<!doctype html><title>another site</title><p>another site</p>"

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nconnection: close\r\n"
        writer.write(head + b"content-length: %d\r\n\r\n" % len(page) + page)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
    finally:
        server.close()
        await server.wait_closed()


async def test_a_page_on_another_origin_with_the_token_is_refused(
    browser: Any, served: Serve
) -> None:
    """The attack: a page on another origin that knows the token opens the endpoint's
    WebSocket from the browser (which sends its Origin). The same script on the page's
    own origin opens it, so the refusal is the Origin check's."""
    assert served.token is not None
    args = [served.ws_url, token_protocols(served.token)]
    page = await browser.new_page()
    await page.goto(origin_of(served) + "/")
    assert await page.evaluate(OPEN_SOCKET, args) == "open"

    async with other_site() as url:
        foreign = await browser.new_page()
        await foreign.goto(url)
        assert await foreign.evaluate(OPEN_SOCKET, args) == "refused"
        await foreign.evaluate(
            "(text) => { document.body.textContent = text; }",
            f"{url}, with the token: its WebSocket to {served.ws_url} was refused (403).",
        )
        await shot(foreign, "08-foreign-origin-refused")
