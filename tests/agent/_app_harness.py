"""Drive AgentApp agents from acpwire's own client, in process or over a subprocess."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.agent.app import AgentApp
from acpwire.agent.connection import AgentSideConnection
from acpwire.client.connection import AgentPeer, Client, ClientSideConnection
from acpwire.client.fs import WorkspaceFiles
from acpwire.client.terminals import TerminalManager
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports.memory import memory_pair

OPEN_APPS: list[AgentApp] = []
"""Apps served by :func:`wired` during the current test; conftest closes them after it.

An app outlives its connections (tests serve one app twice to test restarts), so
closing its store is the test's end, as it is the process's end for a real agent."""


def kind(update: s.SessionUpdate) -> str:
    return str(s.to_json(update)["sessionUpdate"])


class TestClient(Client):
    """A client that records updates, serves files from a folder and runs real terminals.

    ``permission`` picks the option kind to answer with, or ``"hold"`` to never
    answer (until the agent cancels the request).
    """

    __test__ = False

    def __init__(
        self,
        root: Path | None = None,
        *,
        fs: bool = True,
        terminal: bool = True,
        elicitation: bool = True,
        booleans: bool = True,
        auth_terminal: bool = False,
        permission: str = "allow_once",
        elicitation_answer: dict[str, Any] | None = None,
    ) -> None:
        self.root = root
        self.fs, self.terminal, self.elicitation = fs, terminal, elicitation
        self.booleans, self.auth_terminal = booleans, auth_terminal
        self.permission = permission
        self.elicitation_answer = elicitation_answer
        self.notifications: list[s.SessionNotification] = []
        self.permission_requests: list[s.RequestPermissionRequest] = []
        self.permission_cancelled = asyncio.Event()
        self.read_started = asyncio.Event()
        self.read_cancelled = asyncio.Event()
        self.hold_reads = False
        self.terminals = TerminalManager(kill_grace=0.5)
        self.files = WorkspaceFiles(root) if root is not None else None
        self._changed = asyncio.Condition()

    def capabilities(self) -> s.ClientCapabilities:
        return s.ClientCapabilities(
            fs=s.FileSystemCapabilities(read_text_file=self.fs, write_text_file=self.fs),
            terminal=self.terminal,
            elicitation=s.ElicitationCapabilities(form=s.ElicitationFormCapabilities())
            if self.elicitation
            else s.UNSET,
            session=s.ClientSessionCapabilities(
                config_options=s.SessionConfigOptionsCapabilities(
                    boolean=s.BooleanConfigOptionCapabilities()
                )
            )
            if self.booleans
            else s.UNSET,
            auth=s.AuthCapabilities(terminal=True) if self.auth_terminal else s.UNSET,
        )

    # -- observing -----------------------------------------------------------

    def updates(self, session_id: str | None = None) -> list[s.SessionUpdate]:
        return [n.update for n in self.notifications if session_id in (None, n.session_id)]

    def kinds(self, session_id: str | None = None) -> list[str]:
        return [kind(u) for u in self.updates(session_id)]

    def texts(self, session_id: str | None = None, of: str = "agent_message_chunk") -> list[str]:
        out = []
        for u in self.updates(session_id):
            if (
                kind(u) == of
                and isinstance(u, s.ContentChunk)
                and isinstance(u.content, s.TextContent)
            ):
                out.append(u.content.text)
        return out

    def tool_updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        return [
            s.to_json(u)
            for u in self.updates(session_id)
            if kind(u) in ("tool_call", "tool_call_update")
        ]

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), TIMEOUT)

    # -- Client --------------------------------------------------------------

    async def session_update(self, params: s.SessionNotification) -> None:
        async with self._changed:
            self.notifications.append(params)
            self._changed.notify_all()

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        async with self._changed:
            self.permission_requests.append(params)
            self._changed.notify_all()
        if self.permission == "hold":
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.permission_cancelled.set()
                raise
        option = next(o for o in params.options if o.kind == self.permission)
        return s.RequestPermissionResponse(
            outcome=s.SelectedPermissionOutcome(option_id=option.option_id)
        )

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        self.read_started.set()
        if self.hold_reads:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.read_cancelled.set()
                raise
        assert self.files is not None
        line = None if isinstance(params.line, s.UnsetType) else params.line
        limit = None if isinstance(params.limit, s.UnsetType) else params.limit
        return s.ReadTextFileResponse(content=await self.files.read_text(params.path, line, limit))

    async def write_text_file(self, params: s.WriteTextFileRequest) -> s.WriteTextFileResponse:
        assert self.files is not None
        await self.files.write_text(params.path, params.content)
        return s.WriteTextFileResponse()

    async def create_terminal(self, params: s.CreateTerminalRequest) -> s.CreateTerminalResponse:
        cwd = None if isinstance(params.cwd, s.UnsetType) else params.cwd
        env = (
            {e.name: e.value for e in (params.env or [])}
            if not isinstance(params.env, s.UnsetType)
            else None
        )
        terminal_id = await self.terminals.create(
            params.session_id, params.command, params.args or [], env or None, cwd
        )
        return s.CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(self, params: s.TerminalOutputRequest) -> s.TerminalOutputResponse:
        out = await self.terminals.output(params.session_id, params.terminal_id)
        status = out.exit_status
        return s.TerminalOutputResponse(
            output=out.output,
            truncated=out.truncated,
            exit_status=s.UNSET
            if status is None
            else s.TerminalExitStatus(exit_code=status.exit_code, signal=status.signal),
        )

    async def wait_for_terminal_exit(
        self, params: s.WaitForTerminalExitRequest
    ) -> s.WaitForTerminalExitResponse:
        status = await self.terminals.wait_for_exit(params.session_id, params.terminal_id)
        return s.WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(self, params: s.KillTerminalRequest) -> s.KillTerminalResponse:
        await self.terminals.kill(params.session_id, params.terminal_id)
        return s.KillTerminalResponse()

    async def release_terminal(self, params: s.ReleaseTerminalRequest) -> s.ReleaseTerminalResponse:
        await self.terminals.release(params.session_id, params.terminal_id)
        return s.ReleaseTerminalResponse()

    async def create_elicitation(
        self, params: s.CreateElicitationRequest
    ) -> s.CreateElicitationResponse:
        if self.elicitation_answer is None:
            return s.ElicitationDeclineAction()
        return s.ElicitationAcceptAction(content=self.elicitation_answer)


@dataclass
class Wired:
    """Both ends of an in-process connection."""

    agent: AgentPeer
    client: TestClient
    client_conn: ClientSideConnection
    agent_conn: AgentSideConnection
    log: WireLog = field(default_factory=WireLog)

    async def new_session(self, cwd: str = "/work/project", **kwargs: Any) -> str:
        return (await self.agent.new_session(cwd, **kwargs)).session_id


@contextlib.asynccontextmanager
async def wired(
    app: AgentApp,
    client: TestClient | None = None,
    validator: SchemaValidator | None = None,
    *,
    initialize: bool = True,
) -> AsyncIterator[Wired]:
    """Serve ``app`` over a memory pair; on exit, check every message the agent sent."""
    client = client or TestClient()
    if app not in OPEN_APPS:
        OPEN_APPS.append(app)
    a, b = memory_pair()
    log = WireLog()
    agent_conn = AgentSideConnection(app.agent(), RecordingTransport(a, log))
    agent_conn.start()
    client_conn = ClientSideConnection(client, b)
    try:
        if initialize:
            await client_conn.initialize()
        yield Wired(client_conn.agent, client, client_conn, agent_conn, log)
    finally:
        await client_conn.close()
        await agent_conn.close()
        await client.terminals.aclose()
    if validator is not None:
        validator.validate_conversation(log.sent, log.received)
