"""``acp inspect`` between acpwire's client and the demo agent: the conversation is the
same as without it, the proxy's stdout carries only the agent's bytes, and the log holds
the decoded traffic."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from acpwire import schema as s
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.testing import RecordingTransport
from acpwire.transports import spawn

ACP = [sys.executable, "-m", "acpwire.cli.main"]


class Collector(Client):
    def __init__(self) -> None:
        self.updates: list[s.SessionUpdate] = []

    async def session_update(self, params: s.SessionNotification) -> None:
        self.updates.append(params.update)


def agent_text(updates: list[s.SessionUpdate]) -> str:
    return "".join(
        u.content.text
        for u in updates
        if isinstance(u, s.AgentMessageChunk) and isinstance(u.content, s.TextContent)
    )


async def converse(argv: list[str], cwd: Path) -> tuple[str, str, RecordingTransport]:
    """initialize, session/new, one prompt; returns (stop reason, agent text, recording)."""
    transport = RecordingTransport(await spawn(argv[0], argv[1:]))
    client = Collector()
    conn = ClientSideConnection(client, transport)
    try:
        init = await conn.initialize()
        assert init.protocol_version == 1
        session = await conn.agent.new_session(str(cwd))
        result = await conn.agent.prompt(session.session_id, "stream 3")
    finally:
        await conn.close()
    return str(result.stop_reason), agent_text(client.updates), transport


def demo(tmp_path: Path, name: str) -> list[str]:
    return [sys.executable, "-m", "acpwire.demo", "--store", str(tmp_path / name)]


async def test_the_conversation_is_unchanged_and_logged_as_text(tmp_path: Path) -> None:
    log = tmp_path / "traffic.log"
    direct = await converse(demo(tmp_path, "a"), tmp_path)
    proxied = await converse(
        [*ACP, "inspect", "--log", str(log), "--", *demo(tmp_path, "b")], tmp_path
    )
    assert proxied[0] == direct[0] == "end_turn"
    assert proxied[1] == direct[1] and "chunk 3 of 3" in proxied[1]
    # Everything the client got through the proxy was a protocol message.
    assert all(isinstance(m, dict) for m in proxied[2].log.received)

    text = log.read_text()
    assert "editor → agent  initialize #0" in text
    assert "agent → editor  initialize #0 ->" in text
    assert "session/prompt #2" in text and "ms)" in text  # response latency
    assert "agent_message_chunk: chunk 3 of 3" in text  # rendered by cli.render
    assert "-- agent-exited status=0" in text


async def test_json_log_holds_every_message_in_both_directions(tmp_path: Path) -> None:
    log = tmp_path / "traffic.jsonl"
    stop, _, recording = await converse(
        [*ACP, "inspect", "--json", "--log", str(log), "--", *demo(tmp_path, "c")], tmp_path
    )
    assert stop == "end_turn"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    events = [r["event"] for r in records if "event" in r]
    assert events[0] == "start" and events[-1] == "agent-exited"
    messages: list[dict[str, Any]] = [r for r in records if "message" in r]
    from_agent = [r["message"] for r in messages if r["from"] == "agent"]
    from_client = [r["message"] for r in messages if r["from"] == "client"]
    # Byte-for-byte forwarding: the log decodes exactly what each side received.
    assert from_agent == recording.log.received
    assert from_client == recording.log.sent
    prompt = next(
        r for r in messages if r["method"] == "session/prompt" and r["kind"] == "response"
    )
    assert prompt["latencyMs"] >= 0 and prompt["message"]["result"]["stopReason"] == "end_turn"
    kinds = {r["kind"] for r in messages}
    assert kinds == {"request", "response", "notification"}


async def test_a_missing_agent_exits_3_without_writing_to_stdout(tmp_path: Path) -> None:
    import asyncio

    proc = await asyncio.create_subprocess_exec(
        *ACP,
        "inspect",
        "--",
        str(tmp_path / "no-such-agent"),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 3
    assert out == b""
    assert b"cannot start agent" in err
