"""Driving one agent process for the checks: spawn, call, wait, restart when it dies.

A :class:`Run` is one line of conversation (``main``, ``full``, a probe) with an agent
started from the command under test, through acpwire's client connection over real pipes,
every line recorded on the run's :class:`~..wire.Wire`. An agent behind a remote endpoint
is driven the same way over a transport an :data:`Opener` makes (a WebSocket or a
Streamable HTTP connection): each start is a new remote connection. Calls never raise for agent
misbehaviour: they return an :class:`Answer` (a result, a JSON-RPC error, or a problem
such as a timeout or a hang-up). When the process dies, :meth:`Run.revive` starts a fresh
one (initialized the same way) so one crash is reported by the check that caused it, not
by every check after it.

Two clients play the editor. :class:`BareClient` advertises no optional capability and
rejects every permission request, so nothing the agent does changes anything.
:class:`FullClient` advertises everything and grants permissions; its files are the
session folder's (through acpwire's workspace sandbox) and its terminals run nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from ... import schema as s
from ..._waits import within
from ...client.connection import Client, ClientSideConnection
from ...client.fs import WorkspaceFiles
from ...protocol.errors import ConnectionClosedError, ErrorCode, RequestError, ResourceNotFound
from ...protocol.version import V2_DRAFT
from ...transports.base import Transport
from ...transports.subprocess import AgentNotFoundError, SubprocessTransport, spawn
from ..wire import Process, RecordingPipe, Wire, WireEntry, dict_of, id_key

__all__ = [
    "BARE_CAPABILITIES",
    "FULL_CAPABILITIES",
    "Answer",
    "BareClient",
    "FullClient",
    "Opener",
    "Run",
    "client_info",
]

BARE_CAPABILITIES: dict[str, Any] = {}
"""What the main run advertises in ``initialize``: no optional capability."""

FULL_CAPABILITIES: dict[str, Any] = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
    "auth": {"terminal": True},
    "elicitation": {"form": {}, "url": {}},
    "session": {"configOptions": {"boolean": {}}},
}
"""What the full run advertises: every stable client capability."""

RAW_ID_BASE = 900000
"""Requests the checker writes itself get string ids from here up ("900001", ...)."""
PING_METHOD = "acpwire_check/ping"
"""An unknown method: every agent must answer it (-32601), which makes it a cheap ping."""

Opener = Callable[[], Awaitable[Transport]]
"""Opens a new connection to an agent behind an endpoint (raises ConnectionClosedError)."""


@dataclass(slots=True)
class Answer:
    """The outcome of one request: a result, a JSON-RPC error, or a problem (timeout, hang-up)."""

    result: Any = None
    error: RequestError | None = None
    problem: str | None = None
    seconds: float = 0.0
    request_id: Any = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.problem is None

    @property
    def answered(self) -> bool:
        return self.problem is None

    @property
    def code(self) -> int | None:
        return self.error.code if self.error is not None else None

    @property
    def needs_auth(self) -> bool:
        return self.code == ErrorCode.AUTH_REQUIRED

    def describe(self) -> str:
        if self.problem is not None:
            return self.problem
        if self.error is not None:
            return f"error {self.error.code}: {self.error.message}"
        return "a result"


def client_info() -> dict[str, str]:
    try:
        version = metadata.version("acpwire")
    except metadata.PackageNotFoundError:  # pragma: no cover - bare checkout
        version = "0"
    return {"name": "acp-check", "title": "acpwire conformance checker", "version": version}


def _reject_or_cancel(params: s.RequestPermissionRequest) -> s.RequestPermissionResponse:
    for option in params.options:
        if str(option.kind).startswith("reject"):
            return s.RequestPermissionResponse(
                outcome=s.SelectedPermissionOutcome(option_id=option.option_id)
            )
    return s.RequestPermissionResponse(outcome=s.CancelledPermissionOutcome())


class BareClient(Client):
    """Advertises nothing optional; rejects every permission request."""

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        return _reject_or_cancel(params)


class FullClient(Client):
    """Advertises every capability and grants permissions, inside one session folder.

    Files are read and written for real, confined to ``root`` by acpwire's workspace
    sandbox. Terminals are played: ``terminal/create`` hands out an id and runs nothing,
    the command "exits" 0 with no output. Elicitations are declined.
    """

    def __init__(self, root: str) -> None:
        self.files = WorkspaceFiles(root)
        self.terminals: set[str] = set()
        self._ids = itertools.count(1)

    def capabilities(self) -> s.ClientCapabilities:
        return s.convert(FULL_CAPABILITIES, s.ClientCapabilities)

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        for wanted in ("allow_once", "allow_always"):
            for option in params.options:
                if option.kind == wanted:
                    return s.RequestPermissionResponse(
                        outcome=s.SelectedPermissionOutcome(option_id=option.option_id)
                    )
        return _reject_or_cancel(params)

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        line = params.line if isinstance(params.line, int) else None
        limit = params.limit if isinstance(params.limit, int) else None
        text = await self.files.read_text(params.path, line, limit)
        return s.ReadTextFileResponse(content=text)

    async def write_text_file(self, params: s.WriteTextFileRequest) -> s.WriteTextFileResponse:
        await self.files.write_text(params.path, params.content)
        return s.WriteTextFileResponse()

    def _terminal(self, terminal_id: str) -> None:
        if terminal_id not in self.terminals:
            raise ResourceNotFound(f"no terminal {terminal_id!r}", {"terminalId": terminal_id})

    async def create_terminal(self, params: s.CreateTerminalRequest) -> s.CreateTerminalResponse:
        terminal_id = f"acp-check-term-{next(self._ids)}"
        self.terminals.add(terminal_id)
        return s.CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(self, params: s.TerminalOutputRequest) -> s.TerminalOutputResponse:
        self._terminal(params.terminal_id)
        return s.TerminalOutputResponse(
            output="", truncated=False, exit_status=s.TerminalExitStatus(exit_code=0)
        )

    async def wait_for_terminal_exit(
        self, params: s.WaitForTerminalExitRequest
    ) -> s.WaitForTerminalExitResponse:
        self._terminal(params.terminal_id)
        return s.WaitForTerminalExitResponse(exit_code=0)

    async def kill_terminal(self, params: s.KillTerminalRequest) -> s.KillTerminalResponse:
        self._terminal(params.terminal_id)
        return s.KillTerminalResponse()

    async def release_terminal(self, params: s.ReleaseTerminalRequest) -> s.ReleaseTerminalResponse:
        self._terminal(params.terminal_id)
        self.terminals.discard(params.terminal_id)
        return s.ReleaseTerminalResponse()

    async def create_elicitation(
        self, params: s.CreateElicitationRequest
    ) -> s.CreateElicitationResponse:
        return s.ElicitationDeclineAction()


class Run:
    """One agent process (revived as a new one when it dies), its client and its recording."""

    def __init__(
        self,
        name: str,
        wire: Wire,
        command: Sequence[str],
        env: Mapping[str, str] | None,
        make_client: Callable[[], Client],
        capabilities: dict[str, Any],
        quick: float,
        opener: Opener | None = None,
    ) -> None:
        self.name = name
        self.wire = wire
        self.command = list(command)
        self.env = env
        self.make_client = make_client
        self.capabilities = capabilities
        self.quick = quick
        self.opener = opener
        self.generation = 0
        self.label = name
        self.transport: Transport | None = None
        self.process_transport: SubprocessTransport | None = None
        """The agent's process when the run spawned it (None behind an endpoint)."""
        self.pipe: RecordingPipe | None = None
        self.conn: ClientSideConnection | None = None
        self.start_problem: str | None = None
        self.notes: list[str] = []
        self.ping_works: bool | None = None
        """Whether the agent answers :data:`PING_METHOD` (None: not tried yet)."""
        self._raw_ids = itertools.count(1)

    @property
    def process(self) -> Process:
        return self.wire.processes[self.label]

    @property
    def sessions(self) -> set[str]:
        return self.process.sessions

    @property
    def remote(self) -> bool:
        """The agent is behind an endpoint: no process, no stdin, no stdout."""
        return self.opener is not None

    async def start(self) -> bool:
        """Spawn a process or open a connection (a new label after the first); False when
        that fails."""
        self.generation += 1
        self.label = self.name if self.generation == 1 else f"{self.name}#{self.generation}"
        self.wire.processes[self.label] = Process(self.label, self.capabilities)
        try:
            if self.opener is not None:
                self.transport = await self.opener()
            else:
                self.transport = self.process_transport = await spawn(
                    self.command[0], self.command[1:], env=self.env, grace_period=0.5
                )
        except (AgentNotFoundError, ConnectionClosedError) as exc:
            self.start_problem = str(exc)
            return False
        self.pipe = RecordingPipe(self.transport, self.label, self.wire)
        self.conn = ClientSideConnection(self.make_client(), self.pipe, check_capabilities=False)
        return True

    async def initialize(self, version: int = 1, timeout: float = 30.0) -> Answer:
        """``initialize`` asking for ``version``; one asking for the v2 draft carries v2's
        ``info`` and ``capabilities`` too, so it reads right in both versions (as a
        client offering the draft sends it: :func:`acpwire.protocol.version.v2_offer`)."""
        params: dict[str, Any] = {
            "protocolVersion": version,
            "clientCapabilities": self.capabilities,
            "clientInfo": client_info(),
        }
        if version == V2_DRAFT:
            params.update(info=client_info(), capabilities={})
        return await self.call("initialize", params, timeout)

    @property
    def alive(self) -> bool:
        if self.transport is None or self.closed:
            return False
        t = self.process_transport
        return t is None or t.returncode is None

    @property
    def closed(self) -> bool:
        conn = self.conn
        return conn is None or conn.connection.closed

    async def revive(self, why: str, timeout: float) -> bool:
        """Start a fresh process after this one died, and initialize it; False if that fails."""
        old = self.label
        await self.close()
        if not await self.start():
            return False
        self.notes.append(f"{old}: the agent process ended ({why}); went on with a new one")
        return (await self.initialize(timeout=timeout)).ok

    def exit_note(self) -> str:
        t = self.process_transport
        if t is None:
            return ""
        note = ""
        if t.returncode is not None:
            note = f" (agent exited with status {t.returncode})"
        tail = t.stderr_tail().strip().splitlines()[-3:]
        if tail:
            note += "; stderr: " + " | ".join(tail)
        return note

    async def call(
        self, method: str, params: Any, timeout: float, owner: str | None = None
    ) -> Answer:
        """Send a request through the connection and wait up to ``timeout`` for its answer."""
        conn = self.conn
        if conn is None:
            return Answer(problem=f"no agent process ({self.start_problem})")
        mark = len(self.wire.entries)
        started = time.monotonic()
        task = asyncio.ensure_future(conn.connection.request(method, params))
        try:
            result = await within(asyncio.shield(task), timeout)
        except asyncio.TimeoutError:
            task.cancel()
            answer = Answer(
                problem=f"no answer to {method} within {timeout:g} s",
                seconds=time.monotonic() - started,
            )
        except RequestError as exc:
            answer = Answer(error=exc, seconds=time.monotonic() - started)
        except ConnectionClosedError:
            # Let the process finish exiting so the note can say how it ended.
            if self.process_transport is not None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await within(self.process_transport.process.wait(), 1.0)
            answer = Answer(
                problem=f"the connection closed before {method} was answered{self.exit_note()}",
                seconds=time.monotonic() - started,
            )
        else:
            answer = Answer(result=result, seconds=time.monotonic() - started)
        answer.request_id = self._sent_id(mark, method)
        if owner is not None and answer.request_id is not None:
            self.wire.claim(self.label, answer.request_id, owner)
        return answer

    def _sent_id(self, since: int, method: str) -> Any:
        for entry in self.wire.of(self.label, since):
            if entry.direction == "to_agent" and entry.is_request and entry.method == method:
                return (entry.message or {}).get("id")
        return None

    async def raw_request(self, method: str, params: Any, owner: str) -> tuple[str, int]:
        """Send a request with an id the connection does not track; (id, wire index).

        The id is a string of digits (far above the connection's own integer ids), so an
        agent that turns string ids into numbers shows it.
        """
        request_id = str(RAW_ID_BASE + next(self._raw_ids))
        mark = len(self.wire.entries)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self.wire.claim(self.label, request_id, owner)
        await self.send_raw(s.encode(message))
        return request_id, mark

    def raw_answers(self, request_id: str, since: int) -> list[WireEntry]:
        """The responses from ``since`` on whose id is ``request_id`` in value (any JSON type)."""
        return [
            e
            for e in self.wire.of(self.label, since)
            if e.direction == "from_agent"
            and e.is_response
            and str((e.message or {}).get("id")) == request_id
        ]

    async def wait_answer(self, request_id: str, since: int, timeout: float) -> WireEntry | None:
        """The first response whose id is ``request_id`` in value, waiting up to ``timeout``."""
        assert self.pipe is not None

        def matches(entry: WireEntry) -> bool:
            m = entry.message
            return (
                entry.direction == "from_agent"
                and entry.is_response
                and m is not None
                and str(m.get("id")) == request_id
            )

        return await self.pipe.wait_for(matches, since, timeout)

    async def notify(self, method: str, params: Any) -> None:
        if self.conn is not None:
            with contextlib.suppress(ConnectionClosedError):
                await self.conn.connection.notify(method, params)

    async def send_raw(self, line: bytes) -> None:
        if self.pipe is not None:
            with contextlib.suppress(ConnectionClosedError, OSError):
                await self.pipe.send(line)

    async def ping(self, cwd: str) -> Answer:
        """A request the agent must answer, to know that the lines before it were processed.

        An unknown method when the agent answers those (RPC-006), else ``session/new``,
        which every agent offers; a session made that way is one of this process's.
        """
        if self.ping_works is not False:
            answer = await self.call(PING_METHOD, {}, self.quick, owner="ping")
            if self.ping_works is None:
                self.ping_works = answer.answered
            if answer.answered or self.closed:
                return answer
        answer = await self.call(
            "session/new", {"cwd": cwd, "mcpServers": []}, self.quick, owner="ping"
        )
        sid = dict_of(answer.result).get("sessionId")
        if isinstance(sid, str):
            self.sessions.add(sid)
        return answer

    def mark(self) -> int:
        return len(self.wire.entries)

    def response_to(self, request_id: object, since: int = 0) -> WireEntry | None:
        key = id_key(request_id)
        for entry in self.wire.of(self.label, since):
            m = entry.message
            if entry.is_response and m is not None and id_key(m.get("id")) == key:
                return entry
        return None

    def updates(
        self,
        session_id: str,
        start: int,
        end: int | None = None,
        kinds: frozenset[str] | None = None,
    ) -> list[str]:
        out: list[str] = []
        for entry in self.wire.of(self.label, start, end):
            su = entry.session_update()
            if su is not None and su[0] == session_id and (kinds is None or su[1] in kinds):
                out.append(su[1])
        return out

    async def wait_update(
        self, session_id: str, since: int, timeout: float, kinds: frozenset[str]
    ) -> WireEntry | None:
        """The first update of one of ``kinds`` for ``session_id`` (or any response) from
        ``since`` on: the sign that a turn is running (or over)."""
        if self.pipe is None:
            return None

        def started(entry: WireEntry) -> bool:
            su = entry.session_update()
            return (su is not None and su[0] == session_id and su[1] in kinds) or (
                entry.direction == "from_agent" and entry.is_response
            )

        return await self.pipe.wait_for(started, since, timeout)

    async def close_stdin_and_wait(self, grace: float) -> int | None:
        """Close the agent's stdin; its exit status if it exits within ``grace`` s, else None."""
        t = self.process_transport
        if t is None:
            return None
        stdin = t.process.stdin
        if stdin is not None:
            with contextlib.suppress(Exception):
                stdin.close()
        try:
            return await within(t.process.wait(), grace)
        except asyncio.TimeoutError:
            return None

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
        elif self.transport is not None:
            await self.transport.close()
