"""Trace context through the high tier: a traced prompt's whole turn carries it."""

from __future__ import annotations

from pathlib import Path

from _app_harness import TestClient, wired

from acpwire.agent.app import AgentApp, Turn
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
