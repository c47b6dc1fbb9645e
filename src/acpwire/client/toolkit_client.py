"""The client role, high tier: a batteries-included :class:`ToolkitClient`
(:func:`~acpwire.client.toolkit.open_agent` starts an agent and connects one to it).

:class:`ToolkitClient` is a :class:`~acpwire.client.connection.Client` that serves every
agent->client method from configured building blocks:

* ``fs/read_text_file`` / ``fs/write_text_file``: a :class:`~acpwire.client.fs.WorkspaceFiles`
  per session, whose roots are the session's ``cwd`` plus its ``additionalDirectories``
  (the race-free :class:`~acpwire.sandbox.Sandbox`; version control internals, git hooks
  and folder scripts are never written unless ``protected_names`` / ``protect_git`` say
  otherwise); a write the sandbox makes only with the user's permission (``.env``, an
  executable file) is first put to the permission policy as a request of the client's own
  (:class:`~acpwire.client.permissions.PermissionRequest` with ``concern`` set) and
  refused (-32602 ``needs_permission``) unless it selects the allow option;
* ``terminal/*``: one shared :class:`~acpwire.client.terminals.TerminalManager` (``env`` list
  turned into a mapping over an allow-listed environment; ``cwd`` defaulting to the
  session's and refused outside its roots); a session's terminals are released when it
  is closed or deleted, and all of them when the client closes;
* every read, write and ``terminal/create``: the ``access`` policy, if any
  (:mod:`acpwire.client.access`), decides after the sandbox resolved the path;
* ``session/request_permission``: a permission policy (:mod:`acpwire.client.permissions`,
  fail-closed :class:`~acpwire.client.permissions.RejectAll` by default);
* ``elicitation/*``: an :class:`~acpwire.client.elicitation.ElicitationHandler` (declines
  when none is configured);
* ``session/update``: folded into one :class:`~acpwire.client.state.SessionState` per session.

The client learns a session's roots when it is created through its helpers
(:meth:`ToolkitClient.new_session`, :meth:`~ToolkitClient.load_session`,
:meth:`~ToolkitClient.resume_session`) or registered with
:meth:`~ToolkitClient.register_session`. File and terminal requests for a session it
does not know are refused (-32002), never served from some default folder.

:meth:`ToolkitClient.capabilities` advertises exactly what is configured, so an agent
never calls something that would answer -32601.

Cancellation (prompt-turn.mdx, "Cancellation"): :meth:`ToolkitClient.cancel` sends
``session/cancel``, marks unfinished tool calls cancelled in the session state
(CANCEL-001) and answers every pending permission request of the session with
``cancelled`` (CANCEL-002, TOOL-003); requests that arrive later in the same turn are
answered ``cancelled`` at once. Tool call updates keep being folded (CANCEL-007).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from importlib import metadata
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .. import schema as s
from ..engine.roles import gate_allows
from ..protocol.errors import (
    CapabilityError,
    MethodNotFound,
    ResourceNotFound,
)
from ..protocol.version import V2_DRAFT
from ..sandbox import (
    DEFAULT_CONFIRM_NAMES,
    DEFAULT_MAX_SCAN_BYTES,
    DEFAULT_PROTECTED_NAMES,
    Concern,
    NeedsPermission,
    SandboxPath,
)
from ..schema import UNSET, UnsetType, unset_to_none
from ..schema.methods import BY_NAME, CapabilityGate
from ..transports.base import Transport
from ..transports.remote import Reconnected
from .access import AccessPolicy, ReadRequest, TerminalRequest, WriteRequest, authorize
from .connection import Client, ClientSideConnection
from .elicitation import ElicitationHandler, decline
from .fs import DEFAULT_MAX_READ_BYTES, BufferProvider, WorkspaceFiles
from .permissions import (
    PendingPermissions,
    PermissionPolicy,
    PermissionRequest,
    RejectAll,
    sensitive_write,
)
from .state import SessionState, TerminalSnapshot, select_values
from .terminals import TerminalManager, TerminalOutput

if TYPE_CHECKING:
    from ..schema import v2

__all__ = ["ToolkitClient"]


def _default_client_info() -> s.Implementation:
    try:
        version = metadata.version("acpwire")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        version = "0"
    return s.Implementation(name="acpwire", title="acpwire client toolkit", version=version)


_T = TypeVar("_T")


class ToolkitClient(Client):
    """A ready-made client: files, terminals, permissions, elicitation and session state.

    ``permissions`` decides permission requests (default: fail closed).
    ``elicitation`` answers ``elicitation/create`` (default: none advertised, declined).
    ``read_files`` / ``write_files`` / ``terminals`` switch those methods (and their
    capabilities) on or off; ``terminals`` may also be a :class:`TerminalManager` to use.
    ``terminal_auth`` advertises ``auth.terminal`` (the client then runs terminal login
    methods itself), ``boolean_config_options`` advertises boolean config option support
    and ``notices`` advertises ``session.notices`` (the state keeps notices).
    ``access`` decides each read, write and terminal (:mod:`acpwire.client.access`;
    default: everything the capabilities serve); ``protected_names`` are the path
    components never written (default :data:`~acpwire.sandbox.DEFAULT_PROTECTED_NAMES`;
    ``()`` for none), ``confirm_names`` those written only when the permission policy
    allows it (default ``.env`` and mise's config), ``protect_git`` guards git's hooks
    folders and config files, ``max_scan_bytes`` bounds how far a line read looks.
    ``protocol=2`` offers the ACP v2 draft and falls back to v1 when the agent answers 1;
    the client works the same on both (:mod:`acpwire.client.toolkit_v2`).
    """

    def __init__(
        self,
        *,
        permissions: PermissionPolicy | None = None,
        elicitation: ElicitationHandler | None = None,
        read_files: bool = True,
        write_files: bool = True,
        terminals: bool | TerminalManager = True,
        terminal_auth: bool = False,
        boolean_config_options: bool = True,
        notices: bool = True,
        buffer_provider: BufferProvider | None = None,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        max_scan_bytes: int = DEFAULT_MAX_SCAN_BYTES,
        access: AccessPolicy | None = None,
        protected_names: Collection[str] = DEFAULT_PROTECTED_NAMES,
        confirm_names: Collection[str] = DEFAULT_CONFIRM_NAMES,
        protect_git: bool = True,
        client_info: s.Implementation | None = None,
        protocol: int = 1,
    ) -> None:
        if protocol not in (1, 2):
            raise ValueError(f"protocol must be 1 or 2 (the v2 draft), not {protocol!r}")
        self.protocol = protocol
        """The highest ACP version offered: 1, or 2 for the v2 draft (opt-in)."""
        self.permissions: PermissionPolicy = permissions if permissions is not None else RejectAll()
        self.elicitation = elicitation
        self.read_files = read_files
        self.write_files = write_files
        self.terminals: TerminalManager | None
        if isinstance(terminals, TerminalManager):
            self.terminals = terminals
        else:
            self.terminals = TerminalManager() if terminals else None
        self.terminal_auth = terminal_auth
        self.boolean_config_options = boolean_config_options
        self.notices = notices
        self.client_info = client_info if client_info is not None else _default_client_info()
        self.sessions: dict[str, SessionState] = {}
        """Every session this client has seen, by id."""
        self.connection: ClientSideConnection | None = None
        self._buffer_provider = buffer_provider
        self._max_read_bytes = max_read_bytes
        self._max_scan_bytes = max_scan_bytes
        self.access = access
        self._protected_names = tuple(protected_names)
        self._confirm_names = tuple(confirm_names)
        self._protect_git = protect_git
        self._questions = 0
        self._workspaces: dict[str, WorkspaceFiles] = {}
        self._pending = PendingPermissions()
        self._cancelling: set[str] = set()
        self._closed = False
        self.reconnections: list[Reconnected] = []
        """Every reconnect of a remote connection (:meth:`reconnected`), oldest first."""

    # ------------------------------------------------------------------ wiring

    def capabilities(self) -> s.ClientCapabilities:
        """Exactly what the configured handlers serve."""
        fs: s.FileSystemCapabilities | UnsetType = UNSET
        if self.read_files or self.write_files:
            fs = s.FileSystemCapabilities(
                read_text_file=self.read_files, write_text_file=self.write_files
            )
        session: s.ClientSessionCapabilities | UnsetType = UNSET
        if self.boolean_config_options or self.notices:
            session = s.ClientSessionCapabilities(
                config_options=s.SessionConfigOptionsCapabilities(
                    boolean=s.BooleanConfigOptionCapabilities()
                )
                if self.boolean_config_options
                else UNSET,
                notices=s.NoticeCapabilities() if self.notices else UNSET,
            )
        return s.ClientCapabilities(
            fs=fs,
            terminal=True if self.terminals is not None else UNSET,
            auth=s.AuthCapabilities(terminal=True) if self.terminal_auth else UNSET,
            elicitation=self.elicitation.capabilities() if self.elicitation is not None else UNSET,
            session=session,
        )

    def connect(self, transport: Transport) -> ClientSideConnection:
        """Serve this client over ``transport`` (not yet initialized; see :meth:`initialize`)."""
        v2 = None
        if self.protocol == 2:
            from .toolkit_v2 import ToolkitV2  # the v2 models load only when v2 is offered

            v2 = ToolkitV2(self)
        self.connection = ClientSideConnection(self, transport, v2=v2)
        return self.connection

    async def initialize(self, *, protocol_version: int | None = None) -> s.InitializeResponse:
        """``initialize`` with :meth:`capabilities` and :attr:`client_info` (INIT-001/002/013).

        Offering v2 (``protocol=2``), the answer is a v1 view of the agent's (see
        :func:`~acpwire.client.toolkit_v2.v1_initialize_view`) when it chose v2.
        """
        conn = self.connection
        if conn is not None and conn.v2 is not None:
            return await self._offer_v2(conn)
        kwargs: dict[str, Any] = {"client_info": self.client_info}
        if protocol_version is not None:
            kwargs["protocol_version"] = protocol_version
        return await self.agent.initialize(self.capabilities(), **kwargs)

    async def _offer_v2(self, conn: ClientSideConnection) -> s.InitializeResponse:
        """``initialize`` offering the v2 draft. When the agent chooses v2, :attr:`agent`
        becomes a :class:`~acpwire.client.toolkit_v2.V2AgentAsV1` (v2 behind the v1 API)."""
        from ..schema import v2
        from .toolkit_v2 import ToolkitV2, V2AgentAsV1

        info = self.client_info
        version = await conn.negotiate(
            info=v2.Implementation(name=info.name, title=info.title, version=info.version),
            client_capabilities=self.capabilities(),
        )
        if version != V2_DRAFT:
            answer = self.agent.initialize_response
            assert answer is not None
            return answer
        assert isinstance(conn.client_v2, ToolkitV2) and conn.agent_v2 is not None
        facade = V2AgentAsV1(conn.agent_v2, conn.client_v2)
        self.on_connect(facade)
        assert facade.initialize_response is not None
        return facade.initialize_response

    @property
    def agent_capabilities(self) -> s.AgentCapabilities:
        return self.agent.agent_capabilities

    def supports(self, method: str) -> bool:
        """Whether the agent advertised what ``method`` (a wire name, e.g. ``"session/load"``) needs."""
        gate = BY_NAME[method].gate
        return gate is None or gate_allows(gate, self.agent.remote_capabilities)

    def _require(self, method: str) -> None:
        if self.agent.check_capabilities and not self.supports(method):
            gate = BY_NAME[method].gate
            assert gate is not None
            raise CapabilityError(
                f"{method} needs the agent capability `{gate.path}`, which the agent did not advertise"
            )

    async def aclose(self) -> None:
        """Close the connection (stopping a spawned agent), release every terminal and
        answer pending permission prompts ``cancelled``. Safe to call again."""
        try:
            if not self._closed:
                self._closed = True
                self._pending.cancel_all()
                if self.terminals is not None:
                    await self.terminals.aclose()
        finally:
            if self.connection is not None:
                await self.connection.close()

    close = aclose
    """The same as :meth:`aclose` (docs/concepts/closing.md)."""

    def reconnected(self, event: Reconnected) -> None:
        """A remote connection broke and was restored (:mod:`acpwire.transports.remote`).

        Sessions in ``event.reattached`` go on under the same ids; updates the agent
        sent while the connection was down may be missing from their state (the gap).
        Sessions in ``event.lost`` are marked closed. Override to tell the user.
        """
        self.reconnections.append(event)
        for session_id in event.lost:
            state = self.sessions.get(session_id)
            if state is not None:
                state.closed = True

    # ------------------------------------------------------------------ sessions

    def register_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str],
        additional_directories: Sequence[str | os.PathLike[str]] = (),
    ) -> SessionState:
        """Tell the client a session's roots (for sessions created without its helpers)."""
        cwd_text = os.path.abspath(cwd)
        extra = [os.fspath(d) for d in additional_directories]
        self._workspaces[session_id] = WorkspaceFiles(
            cwd_text,
            extra,
            max_read_bytes=self._max_read_bytes,
            max_scan_bytes=self._max_scan_bytes,
            buffer_provider=self._buffer_provider,
            protected=self._protected_names,
            confirm=self._confirm_names,
            protect_git=self._protect_git,
        )
        state = self.sessions.get(session_id)
        if state is None:
            state = self.sessions[session_id] = SessionState(session_id, cwd_text, extra)
        else:
            state.cwd, state.additional_directories, state.closed = cwd_text, extra, False
        return state

    def state(self, session_id: str) -> SessionState:
        """The state of a session the client knows; :class:`KeyError` otherwise."""
        return self.sessions[session_id]

    def state_for(self, session_id: str) -> SessionState:
        """The state of ``session_id``, made empty if the client has not seen the session
        (updates may come for a session created without its helpers)."""
        state = self.sessions.get(session_id)
        if state is None:
            state = self.sessions[session_id] = SessionState(session_id)
        return state

    def _check_directories(self, additional_directories: Sequence[str] | None) -> None:
        """SESS-017: additionalDirectories only when the agent advertised support."""
        if (
            additional_directories
            and self.agent.check_capabilities
            and not gate_allows(_ADDITIONAL_DIRECTORIES, self.agent.remote_capabilities)
        ):
            raise CapabilityError(
                "additionalDirectories needs the agent capability "
                "`sessionCapabilities.additionalDirectories`, which the agent did not advertise"
            )

    async def new_session(
        self,
        cwd: str | os.PathLike[str],
        mcp_servers: Sequence[s.McpServer] = (),
        *,
        additional_directories: Sequence[str] | None = None,
    ) -> SessionState:
        """``session/new``; returns the new session's state (modes and config options filled in)."""
        self._check_directories(additional_directories)
        result = await self.agent.new_session(
            os.path.abspath(cwd),  # noqa: ASYNC240 - no file I/O, at most getcwd()
            mcp_servers,
            additional_directories=additional_directories,
        )
        state = self.register_session(result.session_id, cwd, additional_directories or ())
        state.set_modes(result.modes)
        state.set_config_options(result.config_options)
        return state

    async def load_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str],
        mcp_servers: Sequence[s.McpServer] = (),
        *,
        additional_directories: Sequence[str] | None = None,
    ) -> SessionState:
        """``session/load`` (needs ``loadSession``); the replayed history lands in the state.

        An existing state of that session is cleared first, since the agent replays the
        whole conversation with the same message ids.
        """
        return await self._reopen(
            "session/load", session_id, cwd, mcp_servers, additional_directories
        )

    async def resume_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str],
        mcp_servers: Sequence[s.McpServer] = (),
        *,
        additional_directories: Sequence[str] | None = None,
    ) -> SessionState:
        """``session/resume`` (needs ``sessionCapabilities.resume``); no history is replayed."""
        return await self._reopen(
            "session/resume", session_id, cwd, mcp_servers, additional_directories
        )

    async def _reopen(
        self,
        method: Literal["session/load", "session/resume"],
        session_id: str,
        cwd: str | os.PathLike[str],
        mcp_servers: Sequence[s.McpServer],
        additional_directories: Sequence[str] | None,
    ) -> SessionState:
        """``session/load`` or ``session/resume`` with the absolute ``cwd``, the session's
        roots registered first; a session the client did not know is forgotten again if
        the agent refuses it."""
        self._require(method)
        self._check_directories(additional_directories)
        known = session_id in self.sessions
        state = self.register_session(session_id, cwd, additional_directories or ())
        replays = method == "session/load"
        if replays:  # the agent replays the whole conversation, with the same message ids
            state.clear()
        send = self.agent.load_session if replays else self.agent.resume_session
        try:
            result = await send(
                session_id,
                os.path.abspath(cwd),  # noqa: ASYNC240 - no file I/O, at most getcwd()
                mcp_servers,
                additional_directories=additional_directories,
            )
        except BaseException:
            if not known:
                self._forget(session_id)
            raise
        state.set_modes(result.modes)
        state.set_config_options(result.config_options)
        return state

    async def list_sessions(
        self, *, cwd: str | None = None, cursor: str | None = None
    ) -> s.ListSessionsResponse:
        """One page of ``session/list`` (needs ``sessionCapabilities.list``)."""
        return await self.agent.list_sessions(cwd=cwd, cursor=cursor)

    async def all_sessions(self, *, cwd: str | None = None) -> list[s.SessionInfo]:
        """Every page of ``session/list``, following ``nextCursor``."""
        sessions: list[s.SessionInfo] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            page = await self.list_sessions(cwd=cwd, cursor=cursor)
            sessions.extend(page.sessions)
            cursor = unset_to_none(page.next_cursor)
            if not cursor or cursor in seen:
                return sessions
            seen.add(cursor)

    async def close_session(self, session_id: str) -> None:
        """``session/close`` (needs ``sessionCapabilities.close``), then release its terminals."""
        self._require("session/close")
        try:
            await self.agent.close_session(session_id)
        finally:
            await self._release_session(session_id)
            state = self.sessions.get(session_id)
            if state is not None:
                state.closed = True
                if state.turn_running:
                    state.mark_cancelled()

    async def delete_session(self, session_id: str) -> None:
        """``session/delete`` (needs ``sessionCapabilities.delete``); forgets the local state too."""
        self._require("session/delete")
        await self.agent.delete_session(session_id)
        await self._release_session(session_id)
        self.sessions.pop(session_id, None)

    async def _release_session(self, session_id: str) -> None:
        self._pending.cancel(session_id)
        self._workspaces.pop(session_id, None)
        self._cancelling.discard(session_id)
        if self.terminals is not None:
            await self.terminals.release_session(session_id)

    def _forget(self, session_id: str) -> None:
        self._workspaces.pop(session_id, None)
        self.sessions.pop(session_id, None)

    # ------------------------------------------------------------------ turns

    async def prompt(
        self, session_id: str, prompt: str | Sequence[s.ContentBlock]
    ) -> s.PromptResponse:
        """Run one turn; the prompt and the stop reason are recorded in the session state.

        Every update of the turn has been folded into the state when this returns.
        """
        state = self.state_for(session_id)
        self._cancelling.discard(session_id)
        state.begin_turn(prompt)
        stop_reason: str | None = None
        try:
            result = await self.agent.prompt(session_id, prompt)
            stop_reason = result.stop_reason
            return result
        finally:
            self._cancelling.discard(session_id)
            state.end_turn(stop_reason)

    async def cancel(self, session_id: str) -> None:
        """Send ``session/cancel`` and answer the session's pending permission prompts ``cancelled``."""
        state = self.state_for(session_id)
        if state.turn_running:
            self._cancelling.add(session_id)
        state.mark_cancelled()
        try:
            await self.agent.cancel(session_id)
        finally:
            self._pending.cancel(session_id)

    async def set_mode(self, session_id: str, mode_id: str) -> None:
        """``session/set_mode``; refuses a mode the session did not list (MODE-001)."""
        state = self.state_for(session_id)
        if state.available_modes and mode_id not in {m.id for m in state.available_modes}:
            raise ValueError(f"session {session_id} offers no mode {mode_id!r}")
        await self.agent.set_session_mode(session_id, mode_id)
        state.set_current_mode(mode_id)

    async def set_config_option(
        self, session_id: str, config_id: str, value: str | bool
    ) -> SessionState:
        """``session/set_config_option``; checks the value against the known option (CFG-013)."""
        state = self.state_for(session_id)
        option = state.config_option(config_id)
        if isinstance(option, s.SessionConfigBoolean) and not isinstance(value, bool):
            raise ValueError(f"config option {config_id!r} is boolean; got {value!r}")
        if isinstance(option, s.SessionConfigSelect):
            if not isinstance(value, str):
                raise ValueError(
                    f"config option {config_id!r} takes one of its values; got {value!r}"
                )
            allowed = select_values(option)
            if value not in allowed:
                raise ValueError(
                    f"config option {config_id!r} has no value {value!r} (one of {allowed})"
                )
        result = await self.agent.set_session_config_option(session_id, config_id, value)
        state.set_config_options(result.config_options)
        return state

    # ------------------------------------------------------------------ handlers: updates

    async def session_update(self, params: s.SessionNotification) -> None:
        state = self.sessions.get(params.session_id) or self.state_for(params.session_id)
        state.apply(params.update)

    async def v2_update_folded(self, params: v2.UpdateSessionNotification) -> None:
        """Called after a v2 ``session/update`` was folded into its session's state (a
        connection that chose v2); a hook for subclasses, nothing by default."""

    # ------------------------------------------------------------------ handlers: permissions

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        session_id = params.session_id
        state = self.state_for(session_id)
        view = state.permission_requested(params.tool_call)
        request = PermissionRequest(session_id, view, tuple(params.options), params)
        try:
            if session_id in self._cancelling or self._closed:
                outcome = request.cancelled()
            else:
                outcome = await self._pending.ask(self.permissions, request)
        finally:
            state.permission_answered(view.tool_call_id)
        return s.RequestPermissionResponse(outcome=outcome)

    def pending_permissions(self, session_id: str) -> int:
        """How many permission prompts of ``session_id`` await an answer."""
        return self._pending.count(session_id)

    # ------------------------------------------------------------------ handlers: files

    def _workspace(self, session_id: str) -> WorkspaceFiles:
        workspace = self._workspaces.get(session_id)
        if workspace is None:
            raise ResourceNotFound("unknown session", {"sessionId": session_id})
        return workspace

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        if not self.read_files:
            return await super().read_text_file(params)
        files = self._workspace(params.session_id)
        line, limit = unset_to_none(params.line), unset_to_none(params.limit)
        target: str | SandboxPath = params.path
        if self.access is not None:
            target = await files.locate(params.path)
            request = ReadRequest(params.session_id, params.path, target.resolved, line, limit)
            await authorize(self.access, request, {"path": params.path})
        return s.ReadTextFileResponse(content=await files.read_text(target, line, limit))

    async def write_text_file(
        self, params: s.WriteTextFileRequest
    ) -> s.WriteTextFileResponse | None:
        if not self.write_files:
            return await super().write_text_file(params)
        files = self._workspace(params.session_id)
        target = await files.locate(params.path)
        if self.access is not None:
            request = WriteRequest(params.session_id, params.path, target.resolved, params.content)
            await authorize(self.access, request, {"path": params.path})
        confirmed: set[Concern] = set()
        while True:
            try:
                await files.write_text(target, params.content, confirmed=confirmed)
            except NeedsPermission as needed:
                if not await self._ask_to_write(params, target, needed.concern):
                    raise
                confirmed.add(needed.concern)
            else:
                return s.WriteTextFileResponse()

    async def _ask_to_write(
        self, params: s.WriteTextFileRequest, target: SandboxPath, concern: Concern
    ) -> bool:
        """Put a write the sandbox makes only with permission to the permission policy."""
        if params.session_id in self._cancelling or self._closed:
            return False
        self._questions += 1
        request = sensitive_write(
            params.session_id,
            str(target.resolved),
            params.content,
            concern,
            f"acpwire-write-{self._questions}",
        )
        outcome = await self._pending.ask(self.permissions, request)
        return isinstance(outcome, s.SelectedPermissionOutcome) and outcome.option_id == "allow"

    # ------------------------------------------------------------------ handlers: terminals

    def _manager(self) -> TerminalManager:
        if self.terminals is None:
            raise MethodNotFound("terminal methods are not supported by this client")
        return self.terminals

    async def create_terminal(self, params: s.CreateTerminalRequest) -> s.CreateTerminalResponse:
        manager = self._manager()
        state = self.sessions.get(params.session_id)
        files = self._workspaces.get(params.session_id)
        if state is None or files is None:
            raise ResourceNotFound("unknown session", {"sessionId": params.session_id})
        args = unset_to_none(params.args) or []
        env = {e.name: e.value for e in unset_to_none(params.env) or []}
        cwd = unset_to_none(params.cwd) or state.cwd or str(files.roots[0])
        inside = await files.terminal_cwd(cwd)
        request = TerminalRequest(
            params.session_id, params.command, tuple(args), inside.resolved, env
        )
        await authorize(self.access, request, {"command": params.command})
        terminal_id = await manager.create(
            params.session_id,
            params.command,
            args,
            env=env,
            cwd=str(inside.resolved),
            output_byte_limit=unset_to_none(params.output_byte_limit),
        )
        return s.CreateTerminalResponse(terminal_id=terminal_id)

    def _record(
        self, session_id: str, terminal_id: str, out: TerminalOutput, *, released: bool = False
    ) -> None:
        status = out.exit_status
        snapshot = TerminalSnapshot(
            output=out.output,
            truncated=out.truncated,
            exit_code=None if status is None else status.exit_code,
            signal=None if status is None else status.signal,
            exited=status is not None,
            released=released,
        )
        self.state_for(session_id).record_terminal(terminal_id, snapshot)

    async def terminal_output(self, params: s.TerminalOutputRequest) -> s.TerminalOutputResponse:
        out = await self._manager().output(params.session_id, params.terminal_id)
        self._record(params.session_id, params.terminal_id, out)
        status = out.exit_status
        return s.TerminalOutputResponse(
            output=out.output,
            truncated=out.truncated,
            exit_status=UNSET
            if status is None
            else s.TerminalExitStatus(exit_code=status.exit_code, signal=status.signal),
        )

    async def wait_for_terminal_exit(
        self, params: s.WaitForTerminalExitRequest
    ) -> s.WaitForTerminalExitResponse:
        manager = self._manager()
        status = await manager.wait_for_exit(params.session_id, params.terminal_id)
        self._record(
            params.session_id,
            params.terminal_id,
            await manager.output(params.session_id, params.terminal_id),
        )
        return s.WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(self, params: s.KillTerminalRequest) -> s.KillTerminalResponse | None:
        await self._manager().kill(params.session_id, params.terminal_id)
        return s.KillTerminalResponse()

    async def release_terminal(
        self, params: s.ReleaseTerminalRequest
    ) -> s.ReleaseTerminalResponse | None:
        manager = self._manager()
        out = await manager.output(params.session_id, params.terminal_id)
        await manager.release(params.session_id, params.terminal_id)
        self._record(params.session_id, params.terminal_id, out, released=True)
        return s.ReleaseTerminalResponse()

    # ------------------------------------------------------------------ handlers: elicitation

    async def create_elicitation(
        self, params: s.CreateElicitationRequest
    ) -> s.CreateElicitationResponse:
        if self.elicitation is None:
            return decline()
        return await self.elicitation.create(params)

    async def complete_elicitation(self, params: s.CompleteElicitationNotification) -> None:
        if self.elicitation is not None:
            self.elicitation.complete(params.elicitation_id)


_ADDITIONAL_DIRECTORIES = CapabilityGate(
    "agent", "sessionCapabilities.additionalDirectories", "marker"
)
