"""open_agent(): spawn an agent command, initialize, and say clearly why it failed when it did."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire.client.permissions import AllowAll
from acpwire.client.terminals import TerminalManager
from acpwire.client.toolkit import (
    AgentExitedError,
    AgentNotFoundError,
    ToolkitClient,
    open_agent,
)
from acpwire.protocol.errors import VersionMismatchError
from acpwire.schema import Implementation

pytestmark = pytest.mark.slow  # agents run as processes

AGENT = [sys.executable, str(Path(__file__).with_name("toolkit_agent.py"))]
REPO = Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}


async def test_one_call_spawns_initializes_and_runs_a_turn(tmp_path: Path) -> None:
    """INIT-001/INIT-002: initialize with client info and capabilities before any session."""
    async with open_agent(AGENT, env=ENV) as client:
        assert client.agent.initialize_response is not None
        info = client.agent.initialize_response.agent_info
        assert isinstance(info, Implementation) and info.name == "toolkit-test-agent"
        state = await client.new_session(tmp_path)
        result = await asyncio.wait_for(
            client.prompt(state.session_id, "echo over a pipe"), TIMEOUT
        )
        assert result.stop_reason == "end_turn"
        assert state.messages[-1].text == "over a pipe"


async def test_a_real_agent_process_writes_files_and_runs_commands(tmp_path: Path) -> None:
    client = ToolkitClient(permissions=AllowAll(), terminals=TerminalManager(kill_grace=0.5))
    async with open_agent(AGENT, env=ENV, client=client):
        state = await client.new_session(tmp_path)
        await asyncio.wait_for(
            client.prompt(state.session_id, f"write {tmp_path / 'a.txt'} hi"), TIMEOUT
        )
        assert (tmp_path / "a.txt").read_text() == "hi"
        await asyncio.wait_for(client.prompt(state.session_id, "run echo ran"), TIMEOUT)
        last = state.last_agent_message
        assert last is not None and last.text == "exit 0: ran\n"


async def test_a_missing_command_is_reported_as_not_found() -> None:
    with pytest.raises(AgentNotFoundError, match="no-such-agent-command"):
        async with open_agent(["no-such-agent-command-xyz"]):
            pass  # pragma: no cover


async def test_an_agent_that_exits_during_initialize_is_reported_with_its_stderr() -> None:
    with pytest.raises(AgentExitedError) as caught:
        async with open_agent([*AGENT, "--crash-on-initialize"], env=ENV):
            pass  # pragma: no cover
    assert caught.value.returncode == 3
    assert "simulated crash during initialize" in caught.value.stderr_tail
    assert "exited with code 3" in str(caught.value)


async def test_an_agent_answering_another_protocol_version_is_refused() -> None:
    """INIT-010: close and tell the user when the agent's version is unsupported."""
    with pytest.raises(VersionMismatchError, match="version 2"):
        async with open_agent([*AGENT, "--protocol-version", "2"], env=ENV):
            pass  # pragma: no cover
