"""``acp inspect`` logs in wire order and lets the agent answer after Ctrl-C."""

from __future__ import annotations

import asyncio
import io
import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.cli.inspect import TrafficLog
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.protocol.errors import RequestError
from acpwire.transports import spawn

pytestmark = pytest.mark.slow  # acp inspect runs as a process

ACP = [sys.executable, "-m", "acpwire.cli.main"]
HOSTILE = [sys.executable, str(Path(__file__).with_name("hostile_agent.py"))]


def records(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def test_every_answer_is_logged_after_its_request_and_times_never_go_back(
    tmp_path: Path,
) -> None:
    log = tmp_path / "traffic.jsonl"
    argv = [*ACP, "inspect", "--json", "--log", str(log), "--", *HOSTILE, "huge-chunk"]
    transport = await spawn(argv[0], argv[1:])
    conn = ClientSideConnection(Client(), transport)
    try:
        await asyncio.wait_for(conn.initialize(), TIMEOUT)

        async def probe(i: int) -> None:
            try:
                await conn.agent.ext_method("_probe/echo", {"i": i})
            except RequestError:
                pass  # -32601, answered at once

        await asyncio.wait_for(asyncio.gather(*(probe(i) for i in range(300))), TIMEOUT)
    finally:
        await conn.close()
    rows = [r for r in records(log) if "kind" in r]
    assert len([r for r in rows if r["kind"] == "response"]) == 301
    assert all(r["method"] is not None for r in rows if r["kind"] == "response")
    times = [r["t"] for r in records(log)]
    assert times == sorted(times)


class Waiting(Client):
    def __init__(self) -> None:
        self.turn_started = asyncio.Event()

    async def session_update(self, params: s.SessionNotification) -> None:
        self.turn_started.set()


async def test_ctrl_c_is_forwarded_and_the_agents_answer_reaches_the_editor(
    tmp_path: Path,
) -> None:
    log = tmp_path / "traffic.log"
    argv = [*ACP, "inspect", "--log", str(log), "--", *HOSTILE, "sigint"]
    transport = await spawn(argv[0], argv[1:])
    client = Waiting()
    conn = ClientSideConnection(client, transport)
    try:
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        session = await asyncio.wait_for(conn.agent.new_session(str(tmp_path)), TIMEOUT)
        turn = asyncio.ensure_future(conn.agent.prompt(session.session_id, "wait"))
        await asyncio.wait_for(client.turn_started.wait(), TIMEOUT)
        transport.process.send_signal(signal.SIGINT)
        result: s.PromptResponse = await asyncio.wait_for(turn, TIMEOUT)
        assert result.stop_reason == "cancelled"
    finally:
        await conn.close()
    assert transport.returncode == 130
    text = log.read_text()
    assert "-- interrupted forwarded_to=" in text
    assert text.index("-- interrupted") < text.index('session/prompt #2 -> {"stopReason":')


def test_messages_of_unstable_methods_are_marked_in_both_log_formats() -> None:
    fork = b'{"jsonrpc":"2.0","id":4,"method":"session/fork","params":{"sessionId":"s","cwd":"/w"}}'
    answer = b'{"jsonrpc":"2.0","id":4,"result":{"sessionId":"s2"}}'
    prompt = b'{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s"}}'
    text, lines = io.StringIO(), io.StringIO()
    for out, json_lines in ((text, False), (lines, True)):
        log = TrafficLog(out, json_lines=json_lines)
        log.message("client", fork)
        log.message("agent", answer)
        log.message("client", prompt)
    shown = text.getvalue().splitlines()
    assert "[unstable] session/fork #4" in shown[0]
    assert "[unstable] session/fork #4 -> " in shown[1]
    assert "[unstable]" not in shown[2]
    records = [json.loads(line) for line in lines.getvalue().splitlines()]
    assert [r.get("stability") for r in records] == ["unstable", "unstable", None]
