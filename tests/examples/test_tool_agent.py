"""examples/tool_agent.py as a real process: a model of a correct agent.

Whatever goes wrong inside a step (a missing file, a rejected edit, a command the
client cannot start) fails that step's tool call, leaves its plan entry not
completed, and the turn ends normally; the happy path reports each call truthfully
(the edit is ``pending`` while it waits for permission, ``in_progress`` once
granted). Every message the agent sends is checked against the official schema.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.client.permissions import AllowAll, PermissionPolicy
from acpwire.client.toolkit import ToolkitClient, open_agent
from acpwire.protocol.errors import InternalError
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports.base import Transport

pytestmark = pytest.mark.slow  # the example runs as a process

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tool_agent.py"


class Client(ToolkitClient):
    """Records the wire; ``broken_terminals`` answers terminal/create as acpx does when
    a program cannot be spawned."""

    def __init__(
        self, *, permissions: PermissionPolicy | None = None, broken_terminals: bool = False
    ) -> None:
        super().__init__(permissions=permissions)
        self.broken_terminals = broken_terminals
        self.log = WireLog()

    def connect(self, transport: Transport) -> ClientSideConnection:
        return super().connect(RecordingTransport(transport, self.log))

    async def create_terminal(self, params: s.CreateTerminalRequest) -> s.CreateTerminalResponse:
        if self.broken_terminals:
            raise InternalError(data={"details": f"spawn {params.command} ENOENT"})
        return await super().create_terminal(params)

    def requests(self) -> list[str]:
        return [m["method"] for m in self.log.received if "method" in m and "id" in m]


@pytest.fixture
def agent(tmp_path: Path) -> list[str]:
    """A copy of the example, so its session store (next to the script) lands in tmp_path."""
    copy = tmp_path / "agent" / "tool_agent.py"
    copy.parent.mkdir()
    shutil.copy(EXAMPLE, copy)
    return [sys.executable, str(copy)]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    return root


async def review(
    agent: list[str], ws: Path, client: Client, validator: SchemaValidator, text: str
) -> tuple[str, list[s.PlanEntry], list[Any], str]:
    """Prompt the agent once; stop reason, final plan, tool calls (as the client sees
    them) and the agent's reply text."""
    async with open_agent(agent, client=client) as connected:
        state = await connected.new_session(ws)
        result = await connected.prompt(state.session_id, text)
        calls = list(state.tool_calls.values())
        reply = "".join(m.text for m in state.messages if m.role == "agent")
        plan = list(state.plan)
    validator.validate_conversation(client.log.received, client.log.sent)
    return str(result.stop_reason), plan, calls, reply


async def test_a_reviewed_file_goes_through_read_edit_and_run(
    agent: list[str], ws: Path, schema_validator: SchemaValidator
) -> None:
    client = Client(permissions=AllowAll())
    stop, plan, calls, reply = await review(agent, ws, client, schema_validator, "notes.txt")
    assert stop == "end_turn"
    assert [e.status for e in plan] == ["completed"] * 3
    assert [(c.kind, c.status) for c in calls] == [
        ("read", "completed"),
        ("edit", "completed"),
        ("execute", "completed"),
    ]
    assert (ws / "notes.txt").read_text().endswith("# reviewed by tool-agent\n")
    assert "`wc -l` says: 3" in reply
    edit_id = calls[1].tool_call_id
    statuses = [
        m["params"]["update"].get("status")
        for m in client.log.received
        if m.get("method") == "session/update"
        and m["params"]["update"].get("toolCallId") == edit_id
    ]
    assert statuses == ["pending", None, "in_progress", "completed"]  # PROMPT-004


async def test_a_missing_file_fails_the_read_not_the_turn(
    agent: list[str], ws: Path, schema_validator: SchemaValidator
) -> None:
    client = Client(permissions=AllowAll())
    stop, plan, calls, reply = await review(agent, ws, client, schema_validator, "missing.txt")
    assert stop == "end_turn"
    (read,) = calls
    assert (read.kind, read.status) == ("read", "failed")
    assert plan[0].status != "completed" and "(failed:" in plan[0].content
    assert "I could not read" in reply
    assert client.requests() == ["fs/read_text_file"]


async def test_a_rejected_edit_is_not_marked_done_and_the_turn_goes_on(
    agent: list[str], ws: Path, schema_validator: SchemaValidator
) -> None:
    client = Client()  # rejects every permission request
    stop, plan, calls, reply = await review(agent, ws, client, schema_validator, "notes.txt")
    assert stop == "end_turn"
    assert (ws / "notes.txt").read_text() == "alpha\nbeta\n"
    assert [c.status for c in calls] == ["completed", "failed", "completed"]
    assert [e.status for e in plan] == ["completed", "pending", "completed"]
    assert plan[1].content.endswith("(failed: permission rejected)")
    assert "you rejected the edit" in reply and "`wc -l` says: 2" in reply


async def test_a_client_error_inside_a_tool_call_fails_that_call_and_the_turn_goes_on(
    agent: list[str], ws: Path, schema_validator: SchemaValidator
) -> None:
    client = Client(permissions=AllowAll(), broken_terminals=True)
    stop, plan, calls, reply = await review(agent, ws, client, schema_validator, "notes.txt")
    assert stop == "end_turn"
    assert [c.status for c in calls] == ["completed", "completed", "failed"]
    assert plan[2].status != "completed"
    assert "spawn wc ENOENT" in plan[2].content and "spawn wc ENOENT" in reply
