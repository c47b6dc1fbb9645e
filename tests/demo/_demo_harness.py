"""Drive the demo agent from acpwire's ToolkitClient, in process or as a real subprocess.

Every message the agent sends is recorded on the client's side of the wire and
checked against the official schema when the connection ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.client.state import SessionState
from acpwire.client.terminals import TerminalManager
from acpwire.client.toolkit import ToolkitClient, open_agent
from acpwire.demo import build_app
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports.base import Transport
from acpwire.transports.memory import memory_pair

DEMO = [sys.executable, "-m", "acpwire.demo"]


class RecordingClient(ToolkitClient):
    """A ToolkitClient that records the wire (``log.received`` is what the agent sent)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("terminals", TerminalManager(kill_grace=0.5, exit_drain_timeout=0.2))
        super().__init__(**kwargs)
        self.log = WireLog()

    def connect(self, transport: Transport) -> ClientSideConnection:
        return super().connect(RecordingTransport(transport, self.log))

    def check(self, validator: SchemaValidator) -> None:
        """Validate every message the agent sent (results matched to the client's requests)."""
        validator.validate_conversation(self.log.received, self.log.sent)

    def agent_updates(self, kind: str) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in self.log.received
            if isinstance(m, dict)
            and m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] == kind
        ]


@contextlib.asynccontextmanager
async def in_process(
    client: RecordingClient, validator: SchemaValidator, store: Path
) -> AsyncIterator[RecordingClient]:
    """The demo app served over a memory pair."""
    app = build_app(store)
    agent_end, client_end = memory_pair()
    served = app.connect(agent_end)
    client.connect(client_end)
    try:
        await asyncio.wait_for(client.initialize(), TIMEOUT)
        yield client
    finally:
        await client.close()
        await served.close()
        await app.aclose()
    client.check(validator)


@contextlib.asynccontextmanager
async def subprocess_agent(
    client: RecordingClient,
    validator: SchemaValidator,
    store: Path | str | None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[RecordingClient]:
    """``python -m acpwire.demo --store STORE`` (no ``--store`` for None) through open_agent."""
    args = [] if store is None else ["--store", str(store)]
    async with open_agent([*DEMO, *args], client=client, env=env) as connected:
        yield connected
    client.check(validator)


async def run(client: ToolkitClient, session_id: str, text: str) -> tuple[str, str]:
    """Prompt; returns the stop reason and the text of the agent's last message."""
    result = await asyncio.wait_for(client.prompt(session_id, text), TIMEOUT)
    message = client.state(session_id).last_agent_message
    return result.stop_reason, message.text if message is not None else ""


async def wait_until(state: SessionState, predicate: Callable[[], bool]) -> None:
    """Wait (event-driven) until ``predicate`` holds after some session update."""
    event = asyncio.Event()

    def listener(_state: SessionState, _update: s.SessionUpdate | None) -> None:
        if predicate():
            event.set()

    unsubscribe = state.subscribe(listener)
    try:
        if not predicate():
            await asyncio.wait_for(event.wait(), TIMEOUT)
    finally:
        unsubscribe()


def workspace(root: Path) -> Path:
    """A small project to work on."""
    (root / "src").mkdir()
    (root / "README.md").write_text("# Demo project\n\nTODO: write docs\n")
    (root / "src" / "app.py").write_text("def main():\n    return 'hello'  # TODO tidy\n")
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return root
