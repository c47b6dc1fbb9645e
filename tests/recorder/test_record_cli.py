"""``acp record`` as an editor's agent command: traffic carried unchanged, every message
recorded in wire order, a recording cut short still readable."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.protocol.errors import RequestError
from acpwire.recorder import read_cassette
from acpwire.transports import spawn

pytestmark = pytest.mark.slow  # acp record runs as a process

ACP = [sys.executable, "-m", "acpwire.cli.main"]
HOSTILE = [sys.executable, str(Path(__file__).parents[1] / "cli" / "hostile_agent.py")]
BENCH_AGENT = [sys.executable, str(Path(__file__).parents[2] / "benchmarks" / "acpwire_agent.py")]


class Counting(Client):
    def __init__(self) -> None:
        self.updates = 0
        self.first = asyncio.Event()

    async def session_update(self, params: s.SessionNotification) -> None:
        self.updates += 1
        self.first.set()


async def test_every_message_is_recorded_in_wire_order_and_answers_follow_requests(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "c.jsonl"
    argv = [*ACP, "record", "-o", str(cassette), "--", *HOSTILE, "huge-chunk"]
    transport = await spawn(argv[0], argv[1:])
    client = Counting()
    conn = ClientSideConnection(client, transport)
    try:
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        session = await asyncio.wait_for(conn.agent.new_session(str(tmp_path)), TIMEOUT)

        async def probe(i: int) -> None:
            try:
                await conn.agent.ext_method("_probe/echo", {"i": i})
            except RequestError:
                pass  # -32601, answered at once

        await asyncio.wait_for(asyncio.gather(*(probe(i) for i in range(300))), TIMEOUT)
        # The 20 MB chunk goes through the proxy and into the cassette whole.
        await asyncio.wait_for(conn.agent.prompt(session.session_id, "hi"), TIMEOUT)
    finally:
        await conn.close()
    assert client.updates == 1
    cassette_ = read_cassette(cassette)
    messages = cassette_.messages
    seen: set[int] = set()
    for record in messages:
        msg = record["msg"]
        if record["from"] == "client" and "method" in msg and "id" in msg:
            seen.add(msg["id"])
        elif record["from"] == "agent" and "method" not in msg:
            assert msg["id"] in seen, f"answer {msg['id']} recorded before its request"
    assert len([m for m in messages if m["from"] == "agent" and "method" not in m["msg"]]) == 303
    chunk = next(m for m in messages if m["msg"].get("method") == "session/update")
    assert len(chunk["msg"]["params"]["update"]["content"]["text"]) >= 20_000_000
    times = [r["t"] for r in cassette_.records]
    assert times == sorted(times)
    events = [r["event"] for r in cassette_.records if r["type"] == "event"]
    assert events == ["agent-started", "editor-closed-stdin", "agent-exited"]


async def test_a_recording_whose_recorder_was_killed_stays_readable(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    argv = [*ACP, "record", "-o", str(cassette), "--", *BENCH_AGENT]
    transport = await spawn(argv[0], argv[1:])
    client = Counting()
    conn = ClientSideConnection(client, transport)
    try:
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        session = await asyncio.wait_for(conn.agent.new_session(str(tmp_path)), TIMEOUT)
        turn = asyncio.ensure_future(conn.agent.prompt(session.session_id, "stream 2000000"))
        await asyncio.wait_for(client.first.wait(), TIMEOUT)
        await wait_until(lambda: cassette.stat().st_size > 1_000_000, "a megabyte recorded")
        transport.process.kill()  # the recorder, in the middle of a streamed turn
        turn.cancel()
    finally:
        await conn.close()
    recorded = read_cassette(cassette)
    assert recorded.info["protocolVersion"] == 1
    assert len(recorded.messages) > 1000
    assert not recorded.damaged


def test_usage_errors_and_an_agent_that_cannot_start(tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    no_agent = subprocess.run([*ACP, "record", "-o", str(out)], capture_output=True, text=True)
    assert no_agent.returncode == 2
    assert "give the agent command after --" in no_agent.stderr
    missing = subprocess.run(
        [*ACP, "record", "-o", str(out), "--", str(tmp_path / "no-such-agent")],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert missing.returncode == 3
    assert "cannot start agent" in missing.stderr
    assert "Traceback" not in missing.stderr
    assert [r["event"] for r in read_cassette(out).records] == ["agent-not-started"]
    bad = subprocess.run(
        [*ACP, "record", "-o", str(out), "--redact-pattern", "(", "--", "true"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--redact-pattern" in bad.stderr


async def test_ctrl_c_reaches_the_agent_and_its_answer_is_recorded(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    argv = [*ACP, "record", "-o", str(cassette), "--", *HOSTILE, "sigint"]
    transport = await spawn(argv[0], argv[1:])
    client = Counting()
    conn = ClientSideConnection(client, transport)
    try:
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        session = await asyncio.wait_for(conn.agent.new_session(str(tmp_path)), TIMEOUT)
        turn = asyncio.ensure_future(conn.agent.prompt(session.session_id, "wait"))
        await asyncio.wait_for(client.first.wait(), TIMEOUT)
        os.kill(transport.process.pid, signal.SIGINT)
        result = await asyncio.wait_for(turn, TIMEOUT)
    finally:
        await conn.close()
    assert result.stop_reason == "cancelled"
    recorded = read_cassette(cassette)
    answers = [m["msg"] for m in recorded.messages if "result" in m["msg"]]
    assert answers[-1]["result"]["stopReason"] == "cancelled"
    assert "interrupted" in [r.get("event") for r in recorded.records]
