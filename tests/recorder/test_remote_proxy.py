"""``acp record --url``: a local proxy to a remote endpoint, over HTTP/1.1, h2c and
WebSocket, recording both sides with their transport details and no token."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from server._serve import acp_serve
from waiting import TIMEOUT

from acpwire.client.permissions import AllowAll
from acpwire.client.toolkit import ToolkitClient
from acpwire.demo import build_app
from acpwire.recorder import read_cassette
from acpwire.recorder.cassette import CassetteWriter
from acpwire.recorder.remote_proxy import SseParser, serve_recording_proxy
from acpwire.server import asgi_app, serve_in_background
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket

TOKEN = "remote-token-0123456789abcdef"


@pytest.fixture
async def upstream(tmp_path: Path) -> AsyncIterator[str]:
    app = build_app(tmp_path / "demo.sqlite3")
    async with serve_in_background(asgi_app(app, auth=[TOKEN])) as served:
        yield served.url
    await app.aclose()


async def talk(transport: Any, workspace: Path) -> list[str]:
    client = ToolkitClient(permissions=AllowAll())
    client.connect(transport)
    try:
        await asyncio.wait_for(client.initialize(), TIMEOUT)
        session = await asyncio.wait_for(client.new_session(str(workspace)), TIMEOUT)
        await asyncio.wait_for(client.prompt(session.session_id, "read notes.txt"), TIMEOUT)
        return [m.text for m in session.messages]
    finally:
        await client.close()


@pytest.mark.parametrize("kind", ["http1", "h2c", "websocket"])
async def test_the_proxy_records_both_sides_with_their_routes_and_no_token(
    tmp_path: Path, upstream: str, kind: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    cassette = tmp_path / "remote.jsonl"
    writer = CassetteWriter(cassette, mode="remote", url=upstream)
    try:
        async with serve_recording_proxy(upstream, writer) as proxy:
            if kind == "websocket":
                transport: Any = await connect_websocket(proxy.ws_url, token=TOKEN)
            else:
                transport = await connect_http(proxy.url, token=TOKEN, http2=kind == "h2c")
            said = await talk(transport, workspace)
    finally:
        writer.close()
    assert "alpha" in said[-1]
    data = cassette.read_bytes()
    assert TOKEN.encode() not in data
    recorded = read_cassette(cassette)
    methods = [m["msg"].get("method") for m in recorded.messages if m["from"] == "client"]
    assert methods[:3] == ["initialize", "session/new", "session/prompt"]
    agent = [m for m in recorded.messages if m["from"] == "agent"]
    assert any(m["msg"].get("method") == "fs/read_text_file" for m in agent)
    assert recorded.info["agentInfo"]["name"] == "acpwire-demo"
    vias = {m["transport"]["via"] for m in recorded.messages}
    if kind == "websocket":
        assert vias == {"websocket"}
        assert all(m["transport"].get("connection") for m in recorded.messages)
    else:
        assert "sse" in vias and "http" in vias
        streams = {m["transport"].get("stream") for m in agent if m["transport"]["via"] == "sse"}
        assert "connection" in streams
        assert any(s and s.startswith("session:") for s in streams)
        assert all(m["transport"].get("cursor") for m in agent if m["transport"]["via"] == "sse")
        posted = [m for m in recorded.messages if m["transport"]["via"] == "http"]
        assert {m["transport"]["http"] for m in posted} == {"2" if kind == "h2c" else "1.1"}
        auth = [v for m in posted for k, v in m["transport"]["headers"] if k == "authorization"]
        assert auth and set(auth) == {"[REDACTED]"}


def test_server_sent_events_are_split_whatever_the_chunks() -> None:
    stream = b'id: 1\ndata: {"a":1}\n\n: keep-alive\n\nid: 2\nevent: message\ndata: {"b":\ndata: 2}\r\n\r\n'
    for size in (1, 3, len(stream)):
        parser = SseParser()
        events = []
        for i in range(0, len(stream), size):
            events += parser.feed(stream[i : i + size])
        assert events == [("1", None, b'{"a":1}'), ("2", "message", b'{"b":\n2}')]


@pytest.mark.slow
def test_acp_record_url_serves_until_interrupted_and_says_where(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    argv = [sys.executable, "-m", "acpwire.cli.main", "record", "-o", str(cassette)]
    with subprocess.Popen(
        [*argv, "--url", "http://127.0.0.1:9/acp"], stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            assert line.startswith(
                "acp record: recording http://127.0.0.1:9/acp through http://127.0.0.1:"
            )
            proc.send_signal(2)
            assert proc.wait(TIMEOUT) == 0
        finally:
            proc.kill()
    assert read_cassette(cassette).header["url"] == "http://127.0.0.1:9/acp"
    both = subprocess.run(
        [*argv, "--url", "http://x/acp", "--", "agent"], capture_output=True, text=True
    )
    assert both.returncode == 2 and "not both" in both.stderr


@pytest.mark.slow
async def test_acp_record_url_in_front_of_acp_serve_records_acp_chat(tmp_path: Path) -> None:
    """The whole path with real processes: ``acp serve --demo``, ``acp record --url`` in
    front of it, and ``acp chat --url`` talking through the recorder over WebSocket and
    over Streamable HTTP; the cassette holds both connections and not the token."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    cassette = tmp_path / "c.jsonl"
    store = str(tmp_path / "demo.sqlite3")
    async with acp_serve("--demo", "--store", store, "--token", TOKEN) as serve:
        recorder = await asyncio.create_subprocess_exec(
            *[sys.executable, "-m", "acpwire.cli.main", "record", "-o", str(cassette)],
            *["--url", serve.url],
            stdin=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            assert recorder.stderr is not None
            line = (await asyncio.wait_for(recorder.stderr.readline(), TIMEOUT)).decode()
            proxy = re.search(r"through (http://\S+) ", line)
            assert proxy, line
            outputs = []
            for extra in ([], ["--http"]):
                chat = await asyncio.create_subprocess_exec(
                    *[sys.executable, "-m", "acpwire.cli.main", "chat", "--url", proxy[1]],
                    *["--token", TOKEN, "--cwd", str(workspace), "--policy", "allow"],
                    *["--prompt", "read notes.txt", *extra],
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
                out, err = await asyncio.wait_for(chat.communicate(), TIMEOUT)
                assert chat.returncode == 0, err.decode()
                outputs.append(out.decode())
        finally:
            if recorder.returncode is None:
                recorder.send_signal(signal.SIGINT)
            assert await asyncio.wait_for(recorder.wait(), TIMEOUT) == 0
    assert all("alpha" in out for out in outputs)
    assert TOKEN.encode() not in cassette.read_bytes()
    recorded = read_cassette(cassette)
    assert recorded.header["url"] == serve.url
    prompts = [m for m in recorded.messages if m["msg"].get("method") == "session/prompt"]
    assert [m["transport"]["via"] for m in prompts] == ["websocket", "http"]
    connections = {m["transport"].get("connection") for m in recorded.messages}
    assert len(connections - {None}) == 2
