"""Ctrl-C on a stdio agent: SIGINT cancels the running turns, they answer ``cancelled``, exit 0.

``acpx exec`` keeps the agent in the terminal's process group, so Ctrl-C reaches the
agent as SIGINT (with or without ``session/cancel``). Both entry points are real
subprocesses here: ``AgentApp.run`` (the demo agent) and ``run_agent`` (a low-tier
agent waiting on a permission answer the client never gives).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.testing import RecordingTransport, SchemaValidator
from acpwire.transports import spawn

pytestmark = [
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
    pytest.mark.slow,  # agent processes, interrupted
]

ROOT = Path(__file__).resolve().parents[2]
ENGINE_AGENT = ROOT / "tests" / "engine" / "agent_program.py"


class WatchingClient(Client):
    """Notes that the turn is under way (an update, or a permission question it never answers)."""

    def __init__(self) -> None:
        self.turn_running = asyncio.Event()

    async def session_update(self, params: s.SessionNotification) -> None:
        if isinstance(params.update, s.ToolCallStart):
            self.turn_running.set()

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        self.turn_running.set()
        await asyncio.Event().wait()  # the user walked away
        raise AssertionError("unreachable")


@pytest.mark.parametrize(
    ("program", "prompt"),
    [
        pytest.param("demo", "slow 60", id="AgentApp.run"),
        pytest.param("engine", "ask", id="run_agent"),
    ],
)
async def test_sigint_answers_the_running_turn_cancelled_then_exits_0(
    tmp_path: Path, schema_validator: SchemaValidator, program: str, prompt: str
) -> None:
    if program == "demo":
        args = ["-m", "acpwire.demo", "--store", str(tmp_path / "store.db")]
    else:
        args = [str(ENGINE_AGENT)]
    transport = await spawn(sys.executable, args)
    recorder = RecordingTransport(transport)
    client = WatchingClient()
    conn = ClientSideConnection(client, recorder)
    try:
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        session = await asyncio.wait_for(conn.agent.new_session(str(tmp_path)), TIMEOUT)
        turn = asyncio.ensure_future(conn.agent.prompt(session.session_id, prompt))
        await asyncio.wait_for(client.turn_running.wait(), TIMEOUT)

        os.kill(transport.pid, signal.SIGINT)

        result = await asyncio.wait_for(turn, TIMEOUT)
        assert result.stop_reason == "cancelled"
        assert await asyncio.wait_for(transport.process.wait(), TIMEOUT) == 0
        assert "Traceback" not in transport.stderr_tail()
        schema_validator.validate_conversation(recorder.log.sent, recorder.log.received)
    finally:
        await conn.close()
