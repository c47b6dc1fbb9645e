"""``acp view``: a recorded demo session as one self-contained HTML page, read back with
an HTML parser: the sequence view's rows, pairing, turns, tool calls with their diff and
terminal output, the permission choice, the filters; and the agent's ``<script>`` is
text on the page, never markup, with no way to fetch anything."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from waiting import TIMEOUT, wait_until

from acpwire.client.permissions import AllowAll
from acpwire.client.toolkit import ToolkitClient
from acpwire.demo import build_app
from acpwire.recorder import record_to
from acpwire.recorder.cassette import CassetteWriter
from acpwire.transports.memory import memory_pair

ATTACK = "<script>alert('pwned')</script><img src=x onerror=alert(2)>"
NOTES = f"alpha\nbeta\n{ATTACK}\n"


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list["Node | str"])

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    def all(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        found: list[Node] = []
        for child in self.children:
            if isinstance(child, Node):
                classes = child.attrs.get("class", "").split()
                if (tag is None or child.tag == tag) and (cls is None or cls in classes):
                    found.append(child)
                found += child.all(tag, cls)
        return found


VOID = {"meta", "input", "br", "img", "link", "hr"}


class Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> Node:
    tree = Tree()
    tree.feed(page)
    tree.close()
    assert tree.stack == [tree.root], "unclosed elements"
    return tree.root


async def record_demo(cassette: Path, workspace: Path, store: Path) -> None:
    app = build_app(store)
    agent_end, client_end = memory_pair()
    served = app.connect(agent_end)
    client = ToolkitClient(permissions=AllowAll())
    client.connect(record_to(client_end, cassette))
    try:
        await asyncio.wait_for(client.initialize(), TIMEOUT)
        session = await asyncio.wait_for(client.new_session(str(workspace)), TIMEOUT)
        for text in (
            "read notes.txt",
            "edit notes.txt beta BETA",
            "run echo terminal-said-this",
            f"think {ATTACK}",
        ):
            await asyncio.wait_for(client.prompt(session.session_id, text), TIMEOUT)
    finally:
        await client.close()
        await served.close()
        await app.aclose()


@pytest.fixture
async def cassette(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(NOTES)
    cassette = tmp_path / "demo.jsonl"
    await record_demo(cassette, workspace, tmp_path / "demo.sqlite3")
    return cassette


@pytest.fixture
def html_file(cassette: Path, tmp_path: Path) -> Path:
    out = tmp_path / "demo.html"
    done = subprocess.run(
        [sys.executable, "-m", "acpwire.cli.main", "view", str(cassette), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture
def page(html_file: Path) -> Node:
    return parse(html_file.read_text(encoding="utf-8"))


def data_of(page: Node) -> list[dict[str, Any]]:
    [block] = [n for n in page.all("script") if n.attrs.get("type") == "application/json"]
    rows: list[dict[str, Any]] = json.loads(block.text)
    return rows


def test_the_agents_script_is_data_and_nothing_can_run_or_load(html_file: Path) -> None:
    """The attack: the agent echoes ``<script>`` and ``<img onerror>`` (in a file it
    read, in its thoughts, in the prompt); the page holds them as data only."""
    source = html_file.read_text(encoding="utf-8")
    assert "alert(" in source  # the attack is on the page ...
    assert "<img" not in source and source.count("<script") == 2  # ... but never as a tag
    page = parse(source)
    [script] = [n for n in page.all("script") if "type" not in n.attrs]
    assert not page.all("link") and not page.all("iframe")
    for node in page.all():
        assert not any(k.startswith("on") for k in node.attrs), node
        assert "src" not in node.attrs and "href" not in node.attrs
    assert "innerHTML" not in script.text and "insertAdjacentHTML" not in script.text
    [policy] = [m for m in page.all("meta") if m.attrs.get("http-equiv")]
    digest = base64.b64encode(hashlib.sha256(script.text.encode()).digest()).decode()
    assert policy.attrs["content"].startswith("default-src 'none';")
    assert f"script-src 'sha256-{digest}'" in policy.attrs["content"]
    pieces = [p for r in data_of(page) for p in r.get("body", [])]
    assert ATTACK in "".join(p[1] for p in pieces if p[0] == "say agent_thought_chunk")
    assert any(ATTACK in p[1] for p in pieces if p[0] == "pre file")


def test_the_sequence_view_pairs_turns_tools_and_permissions(page: Node) -> None:
    rows = data_of(page)
    messages = {r["n"]: r for r in rows if r["k"] == "msg"}
    assert {r["f"] for r in messages.values()} == {"client", "agent"}
    # Every request of the demo session is answered, both ends linked, with the latency.
    requests = [r for r in messages.values() if r["kind"] == "request"]
    assert requests
    for row in requests:
        answer = messages[row["pair"][0]]
        assert answer["kind"] == "response" and answer["pair"][0] == row["n"]
        assert answer["f"] != row["f"] and answer["m"] == row["m"]
        assert row["pair"][1].startswith("answered after ") and row["pair"][1].endswith("ms")
    # Four turns in one session, each opened by its own row with its stop reason.
    turns = [r for r in rows if r["k"] == "turn"]
    assert [t["text"].split()[:2] for t in turns] == [["turn", str(n)] for n in (1, 2, 3, 4)]
    assert all("end_turn after" in t["text"] for t in turns)
    assert len({t["s"] for t in turns}) == 1
    assert all(rows[rows.index(t) + 1]["m"] == "session/prompt" for t in turns)
    # The edit's diff, the terminal's output in its tool call, the permission's choice.
    pieces = [p for r in rows for p in r.get("body", [])]
    diffs = [dict(lines) for kind, lines in pieces if kind == "diff"]
    assert {"del": "-beta", "add": "+BETA"}.items() <= diffs[0].items()
    tools = [r["body"] for r in rows if r.get("body") and r["body"][0][0] == "tool"]
    assert any(["pre term", "terminal-said-this\n"] in body for body in tools)
    permissions = [r for r in requests if r["m"] == "session/request_permission"]
    assert permissions
    assert all(["perm", "chosen: Allow once (allow_once)"] in r["body"] for r in permissions)
    # The filters offer what the recording holds.
    session = turns[0]["s"]
    options = {
        s.attrs["id"]: [o.attrs["value"] for o in s.all("option")] for s in page.all("select")
    }
    assert options["f-session"] == ["", session]
    assert {"session/prompt", "session/update", "fs/read_text_file"} <= set(options["f-method"])
    assert options["f-from"] == ["", "client", "agent", "event"]
    assert page.all("input")[0].attrs["id"] == "f-search"


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
def test_in_headless_chromium_the_rows_are_drawn_and_the_agents_text_stays_text(
    html_file: Path, tmp_path: Path
) -> None:
    """The page loaded by a real browser: its script ran under its Content-Security-Policy
    and drew every row of this short recording, with the agent's ``<script>`` and
    ``<img>`` as text and no element made of them."""
    profile = f"--user-data-dir={tmp_path / 'profile'}"
    done = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", profile, "--dump-dom", html_file.as_uri()],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    dom = parse(done.stdout)
    rows = data_of(dom)
    drawn = dom.all(cls="row")
    [shown] = [n for n in dom.all("span") if n.attrs.get("id") == "shown"]
    assert shown.text == f"{len(rows)} of {len(rows)} rows" and len(drawn) == len(rows)
    assert len(dom.all("script")) == 2 and not dom.all("img")
    thoughts = "".join(n.text for n in dom.all("div", "agent_thought_chunk"))
    assert ATTACK in thoughts
    pairs = [a for a in dom.all("a", "pair")]
    ids = {r.attrs.get("id") for r in drawn}
    assert pairs and all(a.attrs["href"][1:] in ids for a in pairs)
    assert any("+BETA" in d.text for d in dom.all("pre", "diff"))


def test_acp_view_of_a_file_that_is_not_a_cassette_says_so(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"hello": 1}\n')
    done = subprocess.run(
        [sys.executable, "-m", "acpwire.cli.main", "view", str(bad)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 1
    assert "not an ACP cassette" in done.stderr and "Traceback" not in done.stderr


def get(url: str, host: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_acp_view_follow_serves_the_rows_of_a_recording_as_it_grows(tmp_path: Path) -> None:
    """A cassette still being written: the page asks for rows as the file grows (204
    while it has not), the request recorded first has its answer linked once the answer
    is written; only the printed address with its token answers, and only to a
    loopback Host (DNS rebinding)."""
    cassette = tmp_path / "live.jsonl"
    writer = CassetteWriter(cassette, mode="in-process")
    proc = None
    try:
        writer.messages("client", [b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'])
        writer.flush()
        proc = subprocess.Popen(
            [sys.executable, "-m", "acpwire.cli.main", "view", str(cassette), "--follow"],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"at (http://127\.0\.0\.1:(\d+)/\S+/)$", line.strip())
        assert found, line
        url, port = found[1], found[2]
        status, body = get(url)
        assert status == 200
        page = parse(body.decode())
        [policy] = [m for m in page.all("meta") if m.attrs.get("http-equiv")]
        assert policy.attrs["content"].endswith("; connect-src 'self'")
        [tag] = page.all("body")
        size = tag.attrs["data-size"]
        assert tag.attrs["data-follow"] and size == str(cassette.stat().st_size)
        [row] = data_of(page)
        assert row["open"] == "no answer recorded"
        assert get(f"{url}rows?size={size}")[0] == 204

        writer.messages("agent", [b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'])
        writer.flush()
        status, body = get(f"{url}rows?size={size}")
        assert status == 200
        grown = json.loads(body)
        assert grown["size"] == cassette.stat().st_size
        asked, answered = grown["rows"]
        assert asked["pair"][0] == answered["n"] and answered["pair"][0] == asked["n"]

        assert get(url.replace(url.split("/")[3], "wrong-token"))[0] == 404
        assert get(url, host=f"evil.example:{port}")[0] == 403
        cassette.rename(tmp_path / "moved.jsonl")
        assert get(url)[0] == 500
        proc.send_signal(signal.SIGINT)
        assert proc.wait(TIMEOUT) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        writer.close()
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            assert proc.stderr is not None
            proc.stderr.close()


class DevTools:
    """Just enough of the Chrome DevTools protocol to drive one headless chromium page."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.last = 0

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.last += 1
        number = self.last
        await self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            answer: dict[str, Any] = json.loads(await self.socket.recv())
            if answer.get("id") == number:
                return answer

    async def evaluate(self, expression: str) -> Any:
        answer = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return answer["result"]["result"].get("value")


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
async def test_in_headless_chromium_the_followed_page_draws_what_is_written_next(
    tmp_path: Path,
) -> None:
    """The page of ``--follow`` in a real browser: an answer written after the page was
    opened appears, linked to its request, without reloading."""
    from websockets.asyncio.client import connect

    from acpwire.recorder.view_server import ViewServer

    cassette = tmp_path / "live.jsonl"
    writer = CassetteWriter(cassette, mode="in-process")
    writer.messages("client", [b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'])
    writer.flush()
    server = ViewServer(cassette)
    browser = await asyncio.create_subprocess_exec(
        *["chromium", "--headless", "--no-sandbox", f"--user-data-dir={tmp_path / 'profile'}"],
        *["--remote-debugging-port=0", "about:blank"],
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert browser.stderr is not None
        port = None
        while port is None:
            line = await asyncio.wait_for(browser.stderr.readline(), TIMEOUT)
            assert line, "chromium ended without a DevTools address"
            found = re.search(rb"ws://127\.0\.0\.1:(\d+)/", line)
            port = found[1].decode() if found else None
        targets = await asyncio.to_thread(get, f"http://127.0.0.1:{port}/json")
        [page] = [t for t in json.loads(targets[1]) if t["type"] == "page"]
        async with connect(page["webSocketDebuggerUrl"], max_size=None) as socket:
            tools = DevTools(socket)
            await tools.call("Page.navigate", url=server.url)
            shown = "document.getElementById('shown')?.textContent"
            assert await wait_until(lambda: tools.evaluate(shown), "the page") == "1 of 1 rows"
            writer.messages("agent", [b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'])
            writer.flush()

            async def both() -> bool:
                return await tools.evaluate(shown) == "2 of 2 rows"

            await wait_until(both, "the answer written after the page opened")
            pairs = "Array.from(document.querySelectorAll('a.pair'), a => a.getAttribute('href'))"
            assert await tools.evaluate(pairs) == ["#m1", "#m0"]
            summary = "document.getElementById('sum-messages').textContent"
            assert await tools.evaluate(summary) == "2"
            shot = await tools.call("Page.captureScreenshot", format="png")
            picture = tmp_path / "followed.png"
            picture.write_bytes(base64.b64decode(shot["result"]["data"]))
            print(f"screenshot of the followed page: {picture}")
    finally:
        browser.terminate()
        await browser.wait()
        server.close()
        writer.close()
