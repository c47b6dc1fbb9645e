"""`acp serve -- AGENT` as a real subprocess: each remote connection gets its own stdio agent
process, and a client that goes away takes its agent process with it."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from engine.test_behaviour import RecordingClient

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.testing import RecordingTransport, SchemaValidator
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "engine" / "agent_program.py"
TIMEOUT = 15


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.update(int(t) for t in text)
    return found


def alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
async def serve() -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acpwire.cli.main",
        "serve",
        "--port",
        "0",
        "--",
        sys.executable,
        str(PROGRAM),
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert proc.stderr is not None
    line = (await asyncio.wait_for(proc.stderr.readline(), TIMEOUT)).decode()
    match = re.search(r"listening on (http://\S+)", line)
    assert match, line
    yield proc, match.group(1)
    if proc.returncode is None:
        proc.terminate()
    await asyncio.wait_for(proc.wait(), TIMEOUT)


@pytest.mark.parametrize("kind", ["websocket", "http"])
async def test_a_stdio_agent_is_served_remotely_and_stopped_when_the_client_leaves(
    serve: tuple[asyncio.subprocess.Process, str], kind: str, schema_validator: SchemaValidator
) -> None:
    proc, url = serve
    if kind == "websocket":
        inner = await connect_websocket("ws://" + url.removeprefix("http://"))
    else:
        inner = await connect_http(url)
    transport = RecordingTransport(inner)
    handler = RecordingClient()
    conn = ClientSideConnection(handler, transport)
    init = await asyncio.wait_for(conn.initialize(), TIMEOUT)
    assert init.agent_info is not None and init.agent_info.name == "engine-test-agent"
    (agent_pid,) = children(proc.pid)
    sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
    result = await asyncio.wait_for(
        conn.agent.prompt(sid, [s.TextContent(text="stream 5")]), TIMEOUT
    )
    assert result.stop_reason == "end_turn"
    assert handler.texts() == [f"chunk {i}" for i in range(5)]
    result = await asyncio.wait_for(conn.agent.prompt(sid, [s.TextContent(text="ask")]), TIMEOUT)
    assert handler.texts()[-1] == "yes"
    await conn.close()
    for _ in range(500):  # bounded: the bridge closes stdin, then terminates
        if not alive(agent_pid):
            break
        await asyncio.sleep(0.02)
    assert not alive(agent_pid)
    assert proc.returncode is None  # the server keeps serving
    log = transport.log
    schema_validator.validate_conversation(log.sent, log.received)
    schema_validator.validate_conversation(log.received, log.sent)
