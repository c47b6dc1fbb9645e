"""The two ways a hostile agent's paths reach the sandbox, behind one small interface.

* ``client``: a real :class:`ToolkitClient` over a memory pair; the agent side calls
  ``fs/read_text_file`` / ``fs/write_text_file`` through its typed peer, so every call
  crosses JSON-RPC and errors come back decoded from the wire.
* ``agent``: an :class:`AgentApp` whose client offers no file system; the test holds the
  live ``Turn`` and calls ``read_file`` / ``write_file`` with ``fallback=True``, the
  agent reading and writing its own disk.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any, Protocol

import pytest
from waiting import TIMEOUT

from acpwire.agent.app import AgentApp
from acpwire.agent.connection import Agent, AgentSideConnection, ClientPeer
from acpwire.agent.turn import Turn
from acpwire.client.toolkit import ToolkitClient
from acpwire.protocol.errors import RequestError
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports import memory_pair

ROLES = ("client", "agent")
SESSION = "sess-sandbox"


class Files(Protocol):
    async def read(self, path: str, line: int | None = None, limit: int | None = None) -> str: ...

    async def write(self, path: str, content: str) -> None: ...


class PeerFiles:
    """An agent calling the client's ``fs/*`` methods over the wire; ``toolkit`` is the client."""

    def __init__(self, peer: ClientPeer, session_id: str, toolkit: ToolkitClient) -> None:
        self.peer, self.session_id, self.toolkit = peer, session_id, toolkit

    async def read(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        result = await self.peer.read_text_file(self.session_id, path, line=line, limit=limit)
        return result.content

    async def write(self, path: str, content: str) -> None:
        await self.peer.write_text_file(self.session_id, path, content)


class TurnFiles:
    """An agent's turn using its own disk (``fallback=True``)."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn

    async def read(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        return await self.turn.read_file(path, line=line, limit=limit, fallback=True)

    async def write(self, path: str, content: str) -> None:
        await self.turn.write_file(path, content, fallback=True)


@contextlib.asynccontextmanager
async def client_role(
    workspace: Path, validator: SchemaValidator | None = None, **client_options: Any
) -> AsyncIterator[PeerFiles]:
    """A ToolkitClient serving ``workspace`` as session :data:`SESSION`'s root."""
    agent_end, client_end = memory_pair()
    log = WireLog()
    served = AgentSideConnection(Agent(), RecordingTransport(agent_end, log))
    served.start()
    client_options.setdefault("terminals", False)
    client = ToolkitClient(**client_options)
    client.connect(client_end)
    try:
        await asyncio.wait_for(client.initialize(), TIMEOUT)
        client.register_session(SESSION, workspace)
        yield PeerFiles(served.client, SESSION, client)
    finally:
        await client.close()
        await served.close()
    if validator is not None:
        validator.validate_conversation(log.received, log.sent)


@contextlib.asynccontextmanager
async def agent_role(workspace: Path) -> AsyncIterator[TurnFiles]:
    """A live turn of a session rooted at ``workspace``, whose client has no file system."""
    app = AgentApp("sandbox-test", auto_title=False)
    live: asyncio.Future[Turn] = asyncio.get_running_loop().create_future()
    finished = asyncio.Event()

    @app.prompt
    async def hold(turn: Turn) -> None:
        live.set_result(turn)
        await finished.wait()

    agent_end, client_end = memory_pair()
    served = AgentSideConnection(app.agent(), agent_end)
    served.start()
    client = ToolkitClient(read_files=False, write_files=False, terminals=False)
    client.connect(client_end)
    try:
        await asyncio.wait_for(client.initialize(), TIMEOUT)
        state = await asyncio.wait_for(client.new_session(workspace), TIMEOUT)
        prompt = asyncio.ensure_future(client.prompt(state.session_id, "hold"))
        turn = await asyncio.wait_for(live, TIMEOUT)
        assert not turn.can_read_files and not turn.can_write_files
        yield TurnFiles(turn)
        finished.set()
        await asyncio.wait_for(prompt, TIMEOUT)
    finally:
        finished.set()
        await client.close()
        await served.close()


@contextlib.asynccontextmanager
async def files_for(
    role: str, workspace: Path, validator: SchemaValidator | None = None
) -> AsyncIterator[Files]:
    if role == "client":
        async with client_role(workspace, validator) as files:
            yield files
    else:
        async with agent_role(workspace) as turn_files:
            yield turn_files


async def refused(call: Awaitable[object]) -> RequestError:
    """The :class:`RequestError` that ``call`` fails with (within :data:`TIMEOUT`)."""
    with pytest.raises(RequestError) as caught:
        await asyncio.wait_for(call, TIMEOUT)
    return caught.value
