"""open_agent(): spawn an agent command, initialize, and say clearly why it failed when it did."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire.client import Client, connect
from acpwire.client.permissions import AllowAll
from acpwire.client.terminals import TerminalManager
from acpwire.client.toolkit import (
    AgentExitedError,
    AgentNotFoundError,
    AgentStartError,
    ToolkitClient,
    open_agent,
)
from acpwire.protocol.errors import (
    ConnectionClosedError,
    ErrorCode,
    RequestError,
    VersionMismatchError,
)
from acpwire.schema import Implementation
from acpwire.transports.subprocess import SubprocessTransport

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


async def test_a_missing_working_directory_is_named_instead_of_the_program(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    with pytest.raises(AgentNotFoundError) as caught:
        async with open_agent(AGENT, env=ENV, cwd=missing):
            pass  # pragma: no cover
    assert f"its working directory {str(missing)!r} does not exist" in str(caught.value)
    assert "ENOENT" not in str(caught.value)


async def test_a_command_that_answers_initialize_with_an_error_raises_that_error() -> None:
    """``cat`` echoes the request back: the client refuses it (-32601), cat echoes that."""
    with pytest.raises(RequestError) as caught:
        async with open_agent(["cat"]):
            pass  # pragma: no cover
    assert caught.value.code == ErrorCode.METHOD_NOT_FOUND


async def test_connect_says_how_an_agent_that_died_during_initialize_ended() -> None:
    with pytest.raises(ConnectionClosedError) as caught:
        async with connect(Client(), AGENT[0], [*AGENT[1:], "--crash-on-initialize"], env=ENV):
            pass  # pragma: no cover
    assert "exited with code 3 during initialize" in str(caught.value)
    assert "simulated crash during initialize" in str(caught.value)


SILENT_AGENT = (
    "import sys, time\n"
    "print('silent agent: thinking it over', file=sys.stderr, flush=True)\n"
    "time.sleep(60)\n"
)


async def test_an_agent_that_never_answers_initialize_is_stopped_and_reported() -> None:
    """``initialize_timeout`` bounds the wait (the bound is the feature under test, and a
    process that never answers cannot pass by chance); the agent is stopped first, so
    the error quotes everything it wrote to stderr."""
    client = ToolkitClient()
    with pytest.raises(AgentStartError, match=r"did not answer initialize within 0\.5 s") as caught:
        async with open_agent(
            [sys.executable, "-c", SILENT_AGENT],
            client=client,
            initialize_timeout=0.5,
            grace_period=0.2,
        ):
            pass  # pragma: no cover
    assert not isinstance(caught.value, AgentExitedError)
    assert "silent agent: thinking it over" in str(caught.value)
    assert client.connection is not None
    transport = client.connection.transport
    assert isinstance(transport, SubprocessTransport) and transport.returncode is not None
