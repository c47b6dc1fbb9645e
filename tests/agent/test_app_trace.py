"""Trace context through the high tier: a traced prompt's whole turn carries it."""

from __future__ import annotations

import sys
from pathlib import Path

from _app_harness import TestClient, wired

from acpwire import schema as s
from acpwire.agent.app import AgentApp, Turn
from acpwire.client.connection import connect
from acpwire.engine.trace import use_trace
from acpwire.testing import SchemaValidator

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def test_updates_file_reads_and_permission_requests_of_a_traced_turn_carry_its_traceparent(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    app = AgentApp("traced", chunk_interval=0.01)

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.say("reading")
        text = await turn.read_file(str(tmp_path / "notes.txt"))
        async with turn.tool("Edit notes.txt", kind="edit") as call:
            await call.require_permission()
        await turn.say(text)

    async with wired(app, TestClient(tmp_path), schema_validator) as w:
        sid = await w.new_session(str(tmp_path))
        start = len(w.log.entries)
        with use_trace(TP):
            await w.agent.prompt(sid, "go")
        traced = [m for way, m in w.log.entries[start:] if way == "sent" and "method" in m]
        middle = len(w.log.entries)
        await w.agent.prompt(sid, "again")
        untraced = [m for way, m in w.log.entries[middle:] if way == "sent" and "method" in m]
    methods = {m["method"] for m in traced}
    assert {"session/update", "fs/read_text_file", "session/request_permission"} <= methods
    assert all(m["params"]["_meta"]["traceparent"] == TP for m in traced)
    assert untraced and all("_meta" not in m["params"] for m in untraced)


async def test_an_agent_process_carries_the_traceparent_over_real_pipes(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parent / "app_agent_script.py"
    client = TestClient()
    async with connect(client, sys.executable, [str(script), str(tmp_path / "s.db")]) as conn:
        sid = (await conn.agent.new_session("/work/project")).session_id
        with use_trace(TP):
            await conn.agent.prompt(sid, "hello")
        traced = len(client.notifications)
        await conn.agent.prompt(sid, "again")
    metas = [n.meta for n in client.notifications]
    assert traced > 0 and all(
        isinstance(m, dict) and m["traceparent"] == TP for m in metas[:traced]
    )
    assert all(isinstance(m, s.UnsetType) for m in metas[traced:])
