"""Cancelling AgentApp turns: session/cancel, session/close, $/cancel_request, a second prompt."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from _app_harness import TestClient, wired
from waiting import TIMEOUT

from acpwire.agent.app import AgentApp, Turn, TurnInProgress
from acpwire.agent.turn import TurnFinishedError
from acpwire.client.connection import connect
from acpwire.protocol.errors import ErrorCode, RequestError
from acpwire.testing import SchemaValidator

SCRIPT = Path(__file__).resolve().parent / "app_agent_script.py"


def edit_app() -> AgentApp:
    """Asks permission for an edit; the test client holds the answer."""
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.say("about to edit")
        async with turn.tool("Edit a.txt", kind="edit") as call:
            await call.require_permission()
            await call.add("edited")

    return app


def response_index(log_sent: list[dict[str, object]], request_id: object) -> int:
    return next(i for i, m in enumerate(log_sent) if m.get("id") == request_id and "result" in m)


async def test_cancel_during_a_permission_request_ends_the_turn_cancelled(
    schema_validator: SchemaValidator,
) -> None:
    """CANCEL-004, CANCEL-005, CANCEL-006, TOOL-003: cancelled result, open call failed first."""
    async with wired(edit_app(), TestClient(permission="hold"), schema_validator) as w:
        sid = await w.new_session()
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "edit"))
        await w.client.wait_for(lambda: bool(w.client.permission_requests))
        await w.agent.cancel(sid)
        result = await asyncio.wait_for(prompt, TIMEOUT)
        assert result.stop_reason == "cancelled"
        assert [u.get("status") for u in w.client.tool_updates(sid)] == ["pending", "failed"]
        await asyncio.wait_for(w.client.permission_cancelled.wait(), TIMEOUT)
        # Every update of the turn was written before the prompt's answer.
        sent = w.log.sent
        prompt_id = next(m["id"] for m in w.log.received if m.get("method") == "session/prompt")
        answer_at = response_index(sent, prompt_id)
        last_update = max(i for i, m in enumerate(sent) if m.get("method") == "session/update")
        assert last_update < answer_at


async def test_after_a_cancelled_turn_the_session_takes_a_new_prompt(
    schema_validator: SchemaValidator,
) -> None:
    """CANCEL-008."""
    client = TestClient(permission="hold")
    async with wired(edit_app(), client, schema_validator) as w:
        sid = await w.new_session()
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "edit"))
        await client.wait_for(lambda: bool(client.permission_requests))
        await w.agent.cancel(sid)
        assert (await asyncio.wait_for(prompt, TIMEOUT)).stop_reason == "cancelled"
        client.permission = "allow_once"
        assert (await w.agent.prompt(sid, "edit")).stop_reason == "end_turn"


async def test_cancel_during_a_file_read_ends_the_turn_at_once(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.read_file("a.txt")
        await turn.say("never")

    client = TestClient(tmp_path)
    client.hold_reads = True
    async with wired(app, client, schema_validator) as w:
        sid = await w.new_session(str(tmp_path))
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "go"))
        await asyncio.wait_for(client.read_started.wait(), TIMEOUT)
        await w.agent.cancel(sid)
        assert (await asyncio.wait_for(prompt, TIMEOUT)).stop_reason == "cancelled"
        await asyncio.wait_for(client.read_cancelled.wait(), TIMEOUT)
        assert w.client.texts(sid) == []


async def test_cancel_during_a_command_kills_and_releases_its_terminal(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    """TERM-004, TERM-005, CANCEL-003."""
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.run(
            sys.executable, ["-c", "import time; print('start', flush=True); time.sleep(60)"]
        )

    client = TestClient(tmp_path)
    async with wired(app, client, schema_validator) as w:
        sid = await w.new_session(str(tmp_path))
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "go"))
        await client.wait_for(lambda: any(u.get("content") for u in client.tool_updates(sid)))
        await w.agent.cancel(sid)
        assert (await asyncio.wait_for(prompt, TIMEOUT)).stop_reason == "cancelled"
        assert client.terminals.terminal_ids(sid) == []
        assert client.tool_updates(sid)[-1]["status"] == "failed"
        methods = [m.get("method") for m in w.log.sent]
        assert "terminal/kill" in methods and "terminal/release" in methods


async def test_session_close_cancels_the_running_turn_and_later_prompts_fail(
    schema_validator: SchemaValidator,
) -> None:
    """SESS-015, SESS-033."""
    async with wired(edit_app(), TestClient(permission="hold"), schema_validator) as w:
        sid = await w.new_session()
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "edit"))
        await w.client.wait_for(lambda: bool(w.client.permission_requests))
        await w.agent.close_session(sid)
        assert (await asyncio.wait_for(prompt, TIMEOUT)).stop_reason == "cancelled"
        with pytest.raises(RequestError):
            await w.agent.prompt(sid, "again")


async def test_cancel_request_for_the_prompt_answers_cancelled_not_an_error(
    schema_validator: SchemaValidator,
) -> None:
    """RCANCEL-001: $/cancel_request on session/prompt ends the turn like session/cancel."""
    async with wired(edit_app(), TestClient(permission="hold"), schema_validator) as w:
        sid = await w.new_session()
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "edit"))
        await w.client.wait_for(lambda: bool(w.client.permission_requests))
        prompt_id = next(m["id"] for m in w.log.received if m.get("method") == "session/prompt")
        await w.agent.cancel_request(prompt_id)
        assert (await asyncio.wait_for(prompt, TIMEOUT)).stop_reason == "cancelled"


async def test_a_handler_that_swallows_cancellation_still_answers_cancelled(
    schema_validator: SchemaValidator,
) -> None:
    """CANCEL-004: after session/cancel the stop reason is cancelled, and nothing is sent later."""
    late: list[BaseException] = []
    started = asyncio.Event()
    app = AgentApp("t", auto_title=False)

    @app.prompt
    async def handle(turn: Turn) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await turn.say("cleaning up")  # still part of the turn
        return None

    async def after(turn: Turn) -> None:
        try:
            await turn.say("too late")
        except TurnFinishedError as exc:
            late.append(exc)

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "go"))
        await asyncio.wait_for(started.wait(), TIMEOUT)
        agent = w.agent_conn.agent
        turn = agent.turns[sid]  # type: ignore[attr-defined]
        await w.agent.cancel(sid)
        assert (await asyncio.wait_for(prompt, TIMEOUT)).stop_reason == "cancelled"
        await after(turn)
        assert w.client.texts(sid) == ["cleaning up"]
    assert late and "already been answered" in str(late[0])


async def test_a_second_prompt_while_a_turn_runs_is_rejected(
    schema_validator: SchemaValidator,
) -> None:
    async with wired(edit_app(), TestClient(permission="hold"), schema_validator) as w:
        sid = await w.new_session()
        first = asyncio.ensure_future(w.agent.prompt(sid, "edit"))
        await w.client.wait_for(lambda: bool(w.client.permission_requests))
        with pytest.raises(RequestError) as caught:
            await w.agent.prompt(sid, "second")
        assert caught.value.code == TurnInProgress.default_code == ErrorCode.INVALID_REQUEST
        assert "already running" in caught.value.message
        await w.agent.cancel(sid)
        assert (await asyncio.wait_for(first, TIMEOUT)).stop_reason == "cancelled"


async def test_cancelling_one_session_leaves_another_running(
    schema_validator: SchemaValidator,
) -> None:
    """RPC-013: sessions are independent; other requests are served while a turn runs."""
    client = TestClient(permission="hold")
    async with wired(edit_app(), client, schema_validator) as w:
        a, b = await w.new_session(), await w.new_session()
        pa = asyncio.ensure_future(w.agent.prompt(a, "edit"))
        pb = asyncio.ensure_future(w.agent.prompt(b, "edit"))
        await client.wait_for(lambda: len(client.permission_requests) == 2)
        await w.agent.cancel(a)
        assert (await asyncio.wait_for(pa, TIMEOUT)).stop_reason == "cancelled"
        assert not pb.done()
        assert [u.get("status") for u in client.tool_updates(b)] == ["pending"]
        await w.agent.cancel(b)
        assert (await asyncio.wait_for(pb, TIMEOUT)).stop_reason == "cancelled"


async def test_cancel_during_a_permission_request_over_a_real_subprocess(tmp_path: Path) -> None:
    """CANCEL-002..005 end to end over stdio: cancelled result, tool call failed, agent keeps serving."""
    client = TestClient(permission="hold")
    async with connect(client, sys.executable, [str(SCRIPT), str(tmp_path / "s.db")]) as conn:
        sid = (await conn.agent.new_session("/work/project")).session_id
        prompt = asyncio.ensure_future(conn.agent.prompt(sid, "edit"))
        await client.wait_for(lambda: bool(client.permission_requests))
        await conn.agent.cancel(sid)
        assert (await asyncio.wait_for(prompt, TIMEOUT)).stop_reason == "cancelled"
        assert client.tool_updates(sid)[-1]["status"] == "failed"
        await asyncio.wait_for(client.permission_cancelled.wait(), TIMEOUT)
        assert (await conn.agent.prompt(sid, "still there?")).stop_reason == "end_turn"
        assert client.texts(sid) == ["echo: still there?"]
