"""How an :class:`~acpwire.agent.app.AgentApp` serves one connection.

:class:`AppAgent` is a low-tier :class:`~acpwire.agent.v1.Agent`: one
instance per connection, holding that connection's authentication state and
live sessions. It answers every client->agent method from the app's
declarations (read through :class:`~acpwire.agent.declarations.AppDeclarations`:
this module never imports the app); the high tier adds no routing of its own.

It is also the core the v2 layer (:mod:`acpwire.agent.app_v2`) serves a v2 client
from, through public methods only: :meth:`AppAgent.accept_prompt`,
:meth:`~AppAgent.run_turn` and :meth:`~AppAgent.drop_turn` for a turn that answers
before it runs, :meth:`~AppAgent.reopen` for v2's ``session/resume``,
:meth:`~AppAgent.require_sign_in` and :meth:`~AppAgent.watch_connection`.

Signing in (AUTH-008): every method of the method table the agent serves needs a
signed-in client, but those in :data:`NO_SIGN_IN`; a method the app does not serve
(:data:`SERVED_IF`) is answered ``-32601`` first. :func:`_sign_in_gate` puts them
behind one check when the class is made, so a method added to the table is gated
without anyone remembering to.

Session lifetime on a connection: ``session/new``, ``session/load`` and
``session/resume`` make a session live here; ``session/close`` and
``session/delete`` end it (cancelling its turn first, SESS-015). Prompts,
mode and option changes need a live session (PROMPT-006, SESS-029); one turn
runs per session at a time (:attr:`AppAgent.turns` holds it), and a second
prompt while it runs is rejected with :class:`TurnInProgress`
(docs/cancellation.md explains why not a queue).

MCP servers (docs/mcp.md): a session's servers are connected when it opens,
in the background once the request that opened it is answered (or, with
``AgentApp(mcp_on_demand=True)``, by its first ``turn.mcp_servers()``). Those
that cannot be used are reported once: as ``notice`` updates to a client that
advertised ``session.notices``, else as failed tool calls of the session's
next turn. They are stopped when the session closes, is deleted or is
reopened by ``session/load`` / ``session/resume`` (which bring their own
``mcpServers``), and when the connection ends.

Unstable ACP (the app opted in): ``session/fork`` makes a live session here
like ``session/new``, starting from a copy of another's record and history;
archive, status and titles work on any stored session, open or not
(:mod:`acpwire.agent.session_admin`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from .. import schema as s
from .._tasks import TaskSet
from ..protocol.errors import (
    AuthRequired,
    ConnectionClosedError,
    ErrorCode,
    InvalidParams,
    MethodNotFound,
    RequestError,
    ResourceNotFound,
)
from ..protocol.version import negotiate
from ..schema import UNSET, none_to_unset, to_json, unset_to_none
from ..schema.methods import V1_UNSTABLE
from ..schema.stability import reads_unstable
from ..store import SessionRecord
from ..store.base import NEW_SESSION_OWNER
from .auth import TerminalAuth, advertised_methods
from .commands import parse_command
from .declarations import AppDeclarations
from .sessions import Session, new_record
from .turn import (
    StopReason,
    Turn,
    check_prompt,
    is_absolute,
    needs_prompt_check,
    new_message_id,
)
from .v1 import Agent

__all__ = ["NO_SIGN_IN", "SERVED_IF", "AppAgent", "TurnInProgress"]

log = logging.getLogger("acpwire.agent")


class TurnInProgress(RequestError):
    """A prompt arrived for a session whose previous turn is still running."""

    default_code = ErrorCode.INVALID_REQUEST
    default_message = "A prompt turn is already running in this session"


def _check_dirs(cwd: str, additional: Sequence[str]) -> None:
    if not is_absolute(cwd) or "\x00" in cwd:
        raise InvalidParams("cwd must be an absolute path", {"cwd": cwd})
    for d in additional:
        if not is_absolute(d) or "\x00" in d:
            raise InvalidParams("additionalDirectories entries must be absolute paths", {"path": d})


def _title_from(text: str) -> str:
    """The first line of a prompt as a title: 80 printable characters (stores refuse NUL)."""
    line = text.strip().splitlines()[0]
    return "".join(ch for ch in line if ch.isprintable())[:80]


# -- the sign-in gate ------------------------------------------------------------

NO_SIGN_IN = frozenset(
    {
        "initialize",
        "authenticate",
        "logout",
        "session/cancel",
        "auth/status",
        "mcp/message",
        "proxy/initialize",
        "proxy/successor",
    }
)
"""The client->agent methods a client may call before it has signed in. Every other
method of the table waits for ``authenticate`` to succeed (or the app's
``is_authenticated`` hook to say the user already is) and answers ``-32000``
(:class:`AuthRequired`, with the ``authMethods``) until then."""


def _durable(app: AppDeclarations) -> bool:
    return app.durable


def _has_modes(app: AppDeclarations) -> bool:
    return app.config.has_modes


def _has_options(app: AppDeclarations) -> bool:
    return app.config.has_options


def _has_providers(app: AppDeclarations) -> bool:
    return bool(app.providers)


_NO_PROVIDERS = "providers/*: this agent declares no providers"
SERVED_IF: Mapping[str, tuple[Callable[[AppDeclarations], bool], str]] = {
    "session/load": (_durable, "session/load is not supported by this agent"),
    "session/resume": (_durable, "session/resume is not supported by this agent"),
    "session/set_mode": (_has_modes, "session/set_mode: this agent has no session modes"),
    "session/set_config_option": (
        _has_options,
        "session/set_config_option: this agent has no config options",
    ),
    "providers/list": (_has_providers, _NO_PROVIDERS),
    "providers/set": (_has_providers, _NO_PROVIDERS),
    "providers/disable": (_has_providers, _NO_PROVIDERS),
}
"""Gated methods an app serves only when it declares what they need; otherwise they
answer ``-32601`` with this message, signed in or not."""

_ENTRY = {"session/prompt": "accept_prompt"}
"""Where a method's gate sits when it is not on the method itself: v1 and v2 prompts
both enter through ``accept_prompt``."""

_Agent = TypeVar("_Agent", bound="AppAgent")


def _sign_in_gate(cls: type[_Agent]) -> type[_Agent]:
    """Wrap every client->agent method of the table but :data:`NO_SIGN_IN` in the gate."""
    for spec in V1_UNSTABLE.handled_by("agent"):
        if spec.name not in NO_SIGN_IN:
            name = _ENTRY.get(spec.name, spec.python_name)
            setattr(cls, name, _gated(spec.name, getattr(cls, name)))
    return cls


def _gated(method: str, handler: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    served = SERVED_IF.get(method)

    @functools.wraps(handler)
    async def gated(self: AppAgent, *args: Any, **kwargs: Any) -> Any:
        if served is not None and not served[0](self.app):
            raise MethodNotFound(served[1])
        if self.app.auth_required and not self.authenticated:
            await self.require_sign_in()
        return await handler(self, *args, **kwargs)

    return gated


@_sign_in_gate
class AppAgent(Agent):
    """Serves an :class:`AgentApp` on one connection (see the module docstring)."""

    def __init__(self, app: AppDeclarations) -> None:
        self.app = app
        self.sessions: dict[str, Session] = {}
        self.turns: dict[str, Turn] = {}
        """The turn running in each session that has one, by session id."""
        self.authenticated = False
        self._background = TaskSet(log)
        """Work after an answer, and the connection's watcher. Never closed: each task
        ends with the connection (a send to a closed one fails, quietly)."""
        self._watching = False

    # -- helpers -----------------------------------------------------------

    @property
    def _client_caps(self) -> s.ClientCapabilities:
        caps = self.client.remote_capabilities
        return caps if isinstance(caps, s.ClientCapabilities) else s.ClientCapabilities()

    @property
    def _booleans(self) -> bool:
        session = unset_to_none(self._client_caps.session)
        options = unset_to_none(session.config_options) if session is not None else None
        return options is not None and unset_to_none(options.boolean) is not None

    async def require_sign_in(self) -> None:
        """The sign-in gate's check (see :data:`NO_SIGN_IN`), for a method that enters
        the runtime other than through its gated handler; raises :class:`AuthRequired`."""
        if not self.app.auth_required or self.authenticated:
            return
        check = self.app.hooks.is_authenticated
        if check is not None and await check():
            self.authenticated = True
            return
        raise AuthRequired(
            "Authentication required", {"authMethods": [m.id for m in self.app.auth_methods]}
        )

    def _live(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise ResourceNotFound(
                f"session {session_id!r} is not open on this connection (session/new, load or resume it first)",
                {"sessionId": session_id},
            )
        return session

    def _after_response(self, make: Callable[[], Awaitable[None]]) -> None:
        """Run ``make`` once the current request has been answered (its task has ended)."""

        async def later() -> None:
            with contextlib.suppress(ConnectionClosedError, OSError):
                await make()

        def start(_: object = None) -> None:
            self._background.spawn(later())

        current = asyncio.current_task()
        if current is None:
            start()
        else:  # started by the task's end: no task of its own waiting meanwhile
            current.add_done_callback(start)

    def _open(self, record: SessionRecord, mcp_servers: Sequence[s.McpServer]) -> Session:
        session = Session(
            record,
            client=self.client,
            history=self.app.history,
            config=self.app.config,
            booleans=self._booleans,
            mcp_servers=mcp_servers,
            mcp=self.app.mcp_support,
        )
        self.sessions[session.id] = session
        if self.app.commands:
            commands = list(self.app.commands.values())
            self._after_response(lambda: session.publish_commands(commands))
        support = session.mcp_support
        if session.mcp_servers and support.enabled and not support.on_demand:
            self.watch_connection()
            self._after_response(lambda: self._connect_mcp(session))
        return session

    async def _connect_mcp(self, session: Session) -> None:
        """Connect a session's MCP servers as it opens; tell a client that takes notices
        at once which could not be used (others hear it in the session's next turn)."""
        try:
            servers = await session.connect_mcp()
        except RuntimeError:
            return  # the session closed meanwhile
        wanted = unset_to_none(self._client_caps.session)
        notices = wanted is not None and unset_to_none(wanted.notices) is not None
        if not (servers.failures and notices and session.take_mcp_report()):
            return
        for name, reason in servers.failures.items():
            notice = s.Notice(
                severity="error", title=f"MCP server {name} could not be used", description=reason
            )
            await session.client.session_update(session.id, notice)

    async def _end(self, session_id: str) -> Session | None:
        """Cancel the session's turn, wait for its teardown, and drop it from this connection."""
        session = self.sessions.get(session_id)
        if session is None:
            return None
        turn = self.turns.get(session_id)
        if turn is not None:
            turn.cancel()
            await turn.wait()
        session.closed = True
        self.sessions.pop(session_id, None)
        await session.close_mcp()
        return session

    def watch_connection(self) -> None:
        """Once a session may use MCP, or a turn runs apart from its request (v2): when
        the connection ends, cancel the running turns and stop every session's servers."""
        if self._watching:
            return
        self._watching = True

        async def watch() -> None:
            await self.client.connection.wait_closed()
            for turn in list(self.turns.values()):
                turn.cancel()
            await self.aclose_mcp()

        self._background.spawn(watch(), name="watch the connection")

    async def aclose_mcp(self) -> None:
        """The connection is over: disconnect the MCP servers of every session it had open."""
        for session in self.sessions.values():
            session.closed = True  # a connect still under way stops what it started
        await asyncio.gather(
            *(session.close_mcp() for session in list(self.sessions.values())),
            return_exceptions=True,
        )

    # -- initialization and auth ---------------------------------------------

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        auth = unset_to_none(self._client_caps.auth)
        terminal = auth is not None and unset_to_none(auth.terminal) is True
        app = self.app
        return s.InitializeResponse(
            protocol_version=negotiate(params.protocol_version),
            agent_capabilities=app.agent_capabilities(
                unstable_peer=reads_unstable(params.client_capabilities)
            ),
            auth_methods=advertised_methods(app.auth_methods, terminal=terminal),
            agent_info=s.Implementation(
                name=app.name, version=app.version, title=none_to_unset(app.title)
            ),
        )

    async def authenticate(self, params: s.AuthenticateRequest) -> s.AuthenticateResponse:
        method = next((m for m in self.app.auth_methods if m.id == params.method_id), None)
        if method is None or isinstance(method, TerminalAuth):
            raise InvalidParams(
                f"{params.method_id!r} is not an authentication method for `authenticate`",
                {"methodId": params.method_id},
            )
        hook = self.app.hooks.authenticate
        if hook is not None and await hook(params.method_id) is False:
            raise AuthRequired("Authentication failed", {"methodId": params.method_id})
        self.authenticated = True
        return s.AuthenticateResponse()

    async def logout(self, params: s.LogoutRequest) -> s.LogoutResponse:
        hook = self.app.hooks.logout
        if hook is None:
            raise MethodNotFound("logout is not supported by this agent")
        await hook()
        self.authenticated = False
        return s.LogoutResponse()

    # -- sessions --------------------------------------------------------------

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        additional = unset_to_none(params.additional_directories) or []
        _check_dirs(params.cwd, additional)
        session_id = f"sess_{uuid.uuid4().hex}"
        record = new_record(session_id, params.cwd, additional, self.app.config)
        owner = NEW_SESSION_OWNER.get()
        if owner is not None and not owner.keeps_claims_in(self.app.store):
            owner = None  # the endpoint claims it afterwards, where it keeps claims
        if owner is not None:
            record.owner = owner.principal  # the endpoint's claim, in the same statement
        record = await self.app.store.create(record)
        if owner is not None:
            owner.recorded(session_id)
        session = self._open(record, params.mcp_servers)
        return s.NewSessionResponse(
            session_id=session_id,
            modes=session.modes_state() or UNSET,
            config_options=session.config_options() or UNSET,
        )

    async def reopen(
        self,
        session_id: str,
        cwd: str,
        additional: Sequence[str],
        mcp_servers: Sequence[s.McpServer],
    ) -> Session:
        """Make a stored session live here with new roots and MCP servers (what
        ``session/load`` and ``session/resume`` share; the caller replays, or not).
        Not behind the sign-in gate: the caller's own method is."""
        _check_dirs(cwd, additional)
        live = self.sessions.get(session_id)
        if session_id in self.turns:
            raise TurnInProgress(
                "the session has a turn running on this connection", {"sessionId": session_id}
            )
        record = await self.app.store.get(session_id)
        if record is None:
            raise ResourceNotFound(f"unknown session {session_id!r}", {"sessionId": session_id})
        # The request's roots replace the stored ones (SESS-018, SESS-020).
        record.cwd = cwd
        record.additional_directories = list(additional)
        record = await self.app.store.update(record, touch=False)
        if live is not None:  # reopened: the new request's mcpServers replace the old ones
            live.closed = True
            await live.close_mcp()
        return self._open(record, mcp_servers)

    async def load_session(self, params: s.LoadSessionRequest) -> s.LoadSessionResponse:
        additional = unset_to_none(params.additional_directories) or []
        session = await self.reopen(params.session_id, params.cwd, additional, params.mcp_servers)
        await session.replay()  # before the response (SESS-007)
        return s.LoadSessionResponse(
            modes=session.modes_state() or UNSET, config_options=session.config_options() or UNSET
        )

    async def resume_session(self, params: s.ResumeSessionRequest) -> s.ResumeSessionResponse:
        additional = unset_to_none(params.additional_directories) or []
        session = await self.reopen(
            params.session_id, params.cwd, additional, unset_to_none(params.mcp_servers) or []
        )
        return s.ResumeSessionResponse(
            modes=session.modes_state() or UNSET, config_options=session.config_options() or UNSET
        )

    async def close_session(self, params: s.CloseSessionRequest) -> s.CloseSessionResponse:
        session = await self._end(params.session_id)
        if session is not None:
            await session.save_quietly()
        return s.CloseSessionResponse()

    async def delete_session(self, params: s.DeleteSessionRequest) -> s.DeleteSessionResponse:
        await self._end(params.session_id)
        await self.app.history.flush()  # nothing of it may be written after the delete
        await self.app.store.delete(params.session_id)  # idempotent (DEL-004)
        return s.DeleteSessionResponse()

    async def list_sessions(self, params: s.ListSessionsRequest) -> s.ListSessionsResponse:
        from . import session_admin as admin  # loaded by the first call that needs it

        cwd, cursor = unset_to_none(params.cwd), unset_to_none(params.cursor)
        archive = self.app.unstable  # sessionCapabilities.archive is advertised
        archived = admin.archive_filter(unset_to_none(params.archived)) if archive else "include"
        await self.app.history.flush()  # recency includes what was just recorded
        try:
            records, next_cursor = await admin.list_page(
                self.app.store, cwd=cwd, cursor=cursor, limit=self.app.page_size, archived=archived
            )
        except ValueError:
            raise InvalidParams("invalid cursor", {"cursor": cursor}) from None
        sessions = [admin.session_info(r, archive=archive) for r in records]
        return s.ListSessionsResponse(sessions=sessions, next_cursor=none_to_unset(next_cursor))

    async def set_session_mode(self, params: s.SetSessionModeRequest) -> s.SetSessionModeResponse:
        await self._live(params.session_id).set_mode(params.mode_id)
        return s.SetSessionModeResponse()

    async def set_session_config_option(
        self, params: s.SetSessionConfigOptionRequest
    ) -> s.SetSessionConfigOptionResponse:
        session = self._live(params.session_id)
        if unset_to_none(params.type) == "boolean" and not isinstance(params.value, bool):
            raise InvalidParams(
                "type boolean needs a boolean value", {"configId": params.config_id}
            )
        options = await session.set_option(params.config_id, params.value)
        return s.SetSessionConfigOptionResponse(config_options=options)

    # -- unstable session methods (routed only when the app opted in) -------------

    def _open_everywhere(self, session_id: str) -> list[Session]:
        """Every open copy of a session on this app's live connections (this one included)."""
        found: list[Session] = []
        agents: list[AppAgent] = list(self.app.connections)
        for agent in agents:
            session = agent.sessions.get(session_id)
            if session is not None and not session.closed and not agent._connection_closed:
                found.append(session)
        return found

    @property
    def _connection_closed(self) -> bool:
        try:
            return self.client.connection.closed
        except AttributeError:  # not attached to a connection (yet)
            return True

    async def fork_session(self, params: s.ForkSessionRequest) -> s.ForkSessionResponse:
        from . import session_admin as admin  # loaded by the first call that needs it

        additional = unset_to_none(params.additional_directories) or []
        _check_dirs(params.cwd, additional)
        for live in self._open_everywhere(params.session_id):
            await live.save()  # the fork starts from the parent's latest settings and state
        await self.app.history.flush()  # ... and everything it recorded
        parent = await admin.stored(self.app.store, params.session_id)
        fork = admin.fork_record(parent, f"sess_{uuid.uuid4().hex}", params.cwd, additional)
        record = await admin.copy_history(self.app.store, parent.session_id, fork)
        session = self._open(record, unset_to_none(params.mcp_servers) or [])
        return s.ForkSessionResponse(
            session_id=session.id,
            modes=session.modes_state() or UNSET,
            config_options=session.config_options() or UNSET,
        )

    async def _set_archived(self, session_id: str, archived: bool) -> None:
        from . import session_admin as admin  # loaded by the first call that needs it

        record = await admin.stored(self.app.store, session_id)
        for copy in [record, *(live.record for live in self._open_everywhere(session_id))]:
            if archived:
                copy.meta[admin.ARCHIVED] = True
            else:
                copy.meta.pop(admin.ARCHIVED, None)
        await self.app.store.update(record, touch=False)  # archiving is not activity

    async def archive_session(self, params: s.ArchiveSessionRequest) -> s.ArchiveSessionResponse:
        await self._set_archived(params.session_id, True)
        return s.ArchiveSessionResponse()

    async def unarchive_session(
        self, params: s.UnarchiveSessionRequest
    ) -> s.UnarchiveSessionResponse:
        await self._set_archived(params.session_id, False)
        return s.UnarchiveSessionResponse()

    async def session_status(self, params: s.SessionStatusRequest) -> s.SessionStatusResponse:
        from . import session_admin as admin  # loaded by the first call that needs it

        if self._open_everywhere(params.session_id):
            return s.SessionStatusResponse(status="open")
        await admin.stored(self.app.store, params.session_id)
        return s.SessionStatusResponse(status="saved")

    async def set_session_title(
        self, params: s.SetSessionTitleRequest
    ) -> s.SetSessionTitleResponse:
        from . import session_admin as admin  # loaded by the first call that needs it

        title = admin.normalize_title(params.title)
        record = await admin.stored(self.app.store, params.session_id)
        record.title = title
        await self.app.store.update(record)  # stored before the answer
        for live in self._open_everywhere(params.session_id):
            live.record.title = title  # its next save keeps it; no automatic title replaces it
            await live.send_quietly(s.SessionInfoUpdate(title=title, updated_at=record.updated_at))
        return s.SetSessionTitleResponse(title=title)

    async def list_providers(self, params: s.ListProvidersRequest) -> s.ListProvidersResponse:
        return s.ListProvidersResponse(providers=self.app.providers.infos())

    async def set_provider(self, params: s.SetProviderRequest) -> s.SetProviderResponse:
        headers = unset_to_none(params.headers) or {}
        await self.app.providers.set(params.provider_id, params.api_type, params.base_url, headers)
        return s.SetProviderResponse()

    async def disable_provider(self, params: s.DisableProviderRequest) -> s.DisableProviderResponse:
        await self.app.providers.disable(params.provider_id)
        return s.DisableProviderResponse()

    # -- turns -----------------------------------------------------------------

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        session, turn = await self.accept_prompt(params.session_id, params.prompt)
        return s.PromptResponse(stop_reason=await self.run_turn(session, turn))

    async def accept_prompt(
        self, session_id: str, prompt: Sequence[s.ContentBlock]
    ) -> tuple[Session, Turn]:
        """Check a prompt and make it the session's turn (not started): a v1 prompt runs
        it before answering, a v2 one answers first (:mod:`acpwire.agent.app_v2`).
        Both enter here, so the prompt's sign-in gate is on this method."""
        session = self._live(session_id)
        if needs_prompt_check(prompt):
            check_prompt(prompt, self.app.prompt_capabilities())
        if session.id in self.turns:
            raise TurnInProgress(data={"sessionId": session.id})
        turn = Turn(session, list(prompt), chunk_interval=self.app.chunk_interval)
        self.turns[session.id] = turn
        # $/cancel_request for this prompt ends the turn as session/cancel does.
        self.client.connection.take_cancellation(turn.cancel)
        if session.mcp_servers and session.mcp_support.enabled:
            self.watch_connection()
        return session, turn

    def drop_turn(self, session_id: str) -> None:
        """Forget a turn :meth:`accept_prompt` made that will not run (its prompt could
        not be answered), so the session takes prompts again."""
        self.turns.pop(session_id, None)

    async def run_turn(
        self, session: Session, turn: Turn, message_id: str | None = None
    ) -> StopReason:
        """Run an accepted turn to its stop reason; ``message_id`` is the user message's."""
        try:
            return await self._run(session, turn, message_id or new_message_id())
        finally:
            if not turn.state.answered:  # given up before its handler ran: whoever waits
                await turn.teardown(quiet=True)  # for it (session/close) is not left waiting
            self.turns.pop(session.id, None)
            await session.save_quietly()

    async def _run(self, session: Session, turn: Turn, message_id: str) -> StopReason:
        for block in turn.prompt:  # the user's side of the conversation, for replay
            wire = {"sessionUpdate": "user_message_chunk", "content": to_json(block)}
            wire["messageId"] = message_id  # (to_json of a UserMessageChunk, built directly)
            await session.writer.record(session.id, wire)
        handler = self.app.hooks.prompt
        parsed = parse_command(turn.text) if self.app.commands else None
        if parsed is not None and parsed[0] in self.app.commands:
            turn.command = parsed
            handler = self.app.hooks.commands.get(parsed[0], handler)
        if handler is None:
            raise MethodNotFound("this agent has no prompt handler (decorate one with @app.prompt)")
        if self.app.auto_title and session.title is None and turn.text.strip():
            await session.set_title(_title_from(turn.text))
        await turn.report_mcp_failures()
        return await turn.run_handler(handler)

    async def cancel(self, params: s.CancelNotification) -> None:
        turn = self.turns.get(params.session_id)
        if turn is not None:
            turn.cancel()
