"""The few-lines agent API: declare an :class:`AgentApp`, decorate a prompt handler, run it.

.. code-block:: python

    app = AgentApp("echo")

    @app.prompt
    async def echo(turn: Turn) -> None:
        await turn.say(f"You said: {turn.text}")

    app.run()  # stdio

The app is declarations only (name, modes, options, commands, auth, store);
each connection gets its own :class:`~acpwire.agent.runtime.AppAgent`, a
low-tier :class:`~acpwire.agent.v1.Agent` that reads them
(:class:`~acpwire.agent.declarations.AppDeclarations`). docs/agents.md explains why
a decorator app rather than a base class.

Session store defaults (docs/sessions.md): with no ``store`` the app keeps
sessions in memory and advertises ``session/list``, ``close`` and ``delete``
but not ``loadSession`` or ``resume``, which promise continuity across
restarts. ``store=URL`` or a path names a store (:func:`acpwire.store.open_store`:
``sqlite:///file``, ``postgresql://...``, ``memory:``, a plain path is a SQLite
file); ``True`` means ``$ACPWIRE_STORE`` if set, else a per-app SQLite file in
the user data folder. Any store named or passed explicitly turns on
``loadSession`` and ``resume``. History is written behind, in batches every
``write_behind`` seconds (:mod:`acpwire.agent.history`).

MCP (docs/mcp.md): with ``mcp=True`` (the default) a turn reaches the
client's ``mcpServers`` through ``await turn.mcp_servers()`` and
``await turn.call_mcp_tool(server, tool, args)``. A session's servers are
connected when it opens, in the background (the client gave them to be used;
SESS-027), and servers that cannot be used are reported as session updates;
``mcp_on_demand=True`` connects them on a session's first ``turn.mcp_servers()``
instead, so sessions that never use them start nothing. ``mcpCapabilities.http``
and ``sse`` are advertised when MCP is on and the ``mcp`` package is importable.

Unstable ACP (docs/protocol-currency.md): ``unstable=True`` opts the app's
connections in. The app then also serves ``session/fork``, ``archive``,
``unarchive``, ``status`` and ``set_title`` over its store
(:mod:`acpwire.agent.session_admin`), advertises ``mcpCapabilities.acp`` and
reaches MCP servers the client offers on the connection. Declared ``providers``
are then offered to the client for rerouting (``providers/*``,
:mod:`acpwire.agent.providers`).

The v2 draft (docs/protocol-currency.md): ``v2=True`` serves clients that ask for
version 2 in v2 on the same transport, from the same declarations and handlers
(:mod:`acpwire.agent.app_v2`); every other client gets v1 as before, a v1 client
asking for a later version than it speaks (65535) included. ``v2_default=True``
makes the draft the app's default: requests above 2 are answered 2 too.

Streaming: the history keeps one update per message whatever the agent sends;
``chunk_interval=0.05`` also merges a model's tiny chunks live, so clients
draw a few updates a second instead of one per token (:mod:`acpwire.agent.chunks`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import re
import sys
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .. import schema as s
from ..schema import UNSET
from ..store import SessionStore
from ..transports.base import Transport
from .auth import AgentAuth, AuthMethod, TerminalAuth
from .commands import Command
from .connection import AgentSideConnection, serve_until_interrupted
from .declarations import AppHooks, AuthHook, CheckHook, LoginHook, LogoutHook
from .history import WRITE_BEHIND_WINDOW, HistoryWriter
from .options import Choice, ChoiceGroup, ConfigSpec, Mode, Select, Toggle
from .providers import Provider, ProviderConfig, ProviderHook, Providers
from .runtime import AppAgent, TurnInProgress
from .sessions import McpSupport, Session
from .turn import Answer, Plan, PromptHandler, StopReason, Turn

if TYPE_CHECKING:
    from .tools import (
        Permission,
        PermissionDenied,
        ToolCall,
        ToolError,
        error_text,
        location,
        permission_option,
    )

__all__ = [
    "AgentApp",
    "AgentAuth",
    "Answer",
    "Choice",
    "ChoiceGroup",
    "Command",
    "Mode",
    "Permission",
    "PermissionDenied",
    "Plan",
    "Provider",
    "ProviderConfig",
    "Select",
    "Session",
    "StopReason",
    "TerminalAuth",
    "Toggle",
    "ToolCall",
    "ToolError",
    "Turn",
    "TurnInProgress",
    "error_text",
    "location",
    "permission_option",
]

_TOOL_NAMES = frozenset(
    {
        "Permission",
        "PermissionDenied",
        "ToolCall",
        "ToolError",
        "error_text",
        "location",
        "permission_option",
    }
)


def __getattr__(name: str) -> Any:
    """The tool call names load on first use (an agent that reports no tool call never does)."""
    if name not in _TOOL_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import tools

    return getattr(tools, name)


H = TypeVar("H", bound=PromptHandler)


def _store_for(
    name: str, store: SessionStore | str | os.PathLike[str] | bool | None
) -> tuple[SessionStore, bool]:
    """The app's store and whether it is durable (see the module docstring).

    Each store module loads here, when named: an agent imports only the store it opens.
    """
    if store is None or store is False:
        from ..store.memory import MemorySessionStore

        return MemorySessionStore(), False
    if store is True:
        from ..store.paths import default_data_dir
        from ..store.urls import store_from_env

        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "agent"
        return store_from_env(default_data_dir() / f"{slug}.sqlite3"), True
    if isinstance(store, (str, os.PathLike)):
        from ..store.urls import open_store

        return open_store(store), True
    return store, True


def _require_async(handler: object, what: str) -> None:
    if not inspect.iscoroutinefunction(handler):
        raise TypeError(f"{what} must be an `async def` function")


class AgentApp:
    """An ACP agent declared in a few lines. See the module docstring."""

    def __init__(
        self,
        name: str,
        *,
        version: str = "0.1.0",
        title: str | None = None,
        store: SessionStore | str | os.PathLike[str] | bool | None = None,
        modes: Sequence[Mode] = (),
        default_mode: str | None = None,
        options: Sequence[Select | Toggle] = (),
        commands: Sequence[Command] = (),
        auth_methods: Sequence[AuthMethod] = (),
        auth_required: bool | None = None,
        image: bool = False,
        audio: bool = False,
        embedded_context: bool = False,
        auto_title: bool = True,
        page_size: int = 50,
        mcp: bool = True,
        mcp_startup_timeout: float = 15.0,
        mcp_on_demand: bool = False,
        chunk_interval: float | None = None,
        write_behind: float = WRITE_BEHIND_WINDOW,
        unstable: bool = False,
        v2: bool = False,
        v2_default: bool = False,
        providers: Sequence[Provider] = (),
    ) -> None:
        self.name = name
        self.version = version
        self.title = title
        self.store, self.durable = _store_for(name, store)
        self.config = ConfigSpec(modes=modes, options=options, default_mode=default_mode)
        self.commands: dict[str, Command] = {c.name: c for c in commands}
        self.auth_methods: list[AuthMethod] = list(auth_methods)
        self.auth_required = bool(auth_methods) if auth_required is None else auth_required
        self.image, self.audio, self.embedded_context = image, audio, embedded_context
        self.auto_title = auto_title
        self.page_size = page_size
        if chunk_interval is not None and chunk_interval <= 0:
            raise ValueError(
                f"chunk_interval must be positive seconds or None, got {chunk_interval!r}"
            )
        self.chunk_interval = chunk_interval
        """Seconds a turn holds consecutive text chunks of one message to send them as one
        update (None: each ``say``/``think`` goes out at once); see :mod:`acpwire.agent.chunks`."""
        self.write_behind = write_behind
        """Seconds recorded history may wait before it is committed (:mod:`acpwire.agent.history`)."""
        self._history = HistoryWriter(self.store, window=write_behind)
        self.unstable = unstable
        """Serve unstable ACP too (see docs/protocol-currency.md)."""
        if v2_default and not v2:
            raise ValueError("v2_default=True needs v2=True")
        self.v2 = v2
        """Serve clients that ask for the v2 draft in v2 too (v1 clients still get v1;
        :mod:`acpwire.agent.app_v2`, docs/protocol-currency.md)."""
        self.v2_default = v2_default
        """Answer 2 to clients asking for versions above 2 as well (otherwise only a
        request for exactly 2 is answered in the draft)."""
        self.providers = Providers(providers)
        """Declared LLM providers and their current routing (unstable ``providers/*``)."""
        self.mcp_support = McpSupport(
            enabled=mcp,
            startup_timeout=mcp_startup_timeout,
            client_name=name,
            client_version=version,
            over_acp=unstable,
            on_demand=mcp_on_demand,
        )
        self.hooks = AppHooks()
        """The handlers and hooks the decorators below registered."""
        self.connections: weakref.WeakSet[AppAgent] = weakref.WeakSet()
        """The runtime of every connection served (session/status asks them what is open)."""

    @property
    def history(self) -> HistoryWriter:
        """The writer every session of the app records its updates into (follows ``store``)."""
        if self._history.store is not self.store:  # the store was replaced before serving
            self._history = HistoryWriter(self.store, window=self.write_behind)
        return self._history

    # -- decorators ----------------------------------------------------------

    def prompt(self, handler: H) -> H:
        """Register the prompt handler: ``async def handle(turn) -> None | stop reason``."""
        _require_async(handler, "the prompt handler")
        self.hooks.prompt = handler
        return handler

    def command(self, name: str, description: str, *, hint: str | None = None) -> Callable[[H], H]:
        """Declare a slash command and the handler that runs for prompts starting ``/name``.

        ``turn.command`` then holds ``(name, rest of the text)``.
        """

        def register(handler: H) -> H:
            _require_async(handler, "a command handler")
            self.commands[name] = Command(name, description, hint)
            self.hooks.commands[name] = handler
            return handler

        return register

    def authenticate(self, hook: AuthHook) -> AuthHook:
        """``async def hook(method_id) -> bool | None``: False (or a RequestError) rejects."""
        self.hooks.authenticate = hook
        return hook

    def is_authenticated(self, hook: CheckHook) -> CheckHook:
        """``async def hook() -> bool``: already signed in (say, credentials on disk)? Asked before -32000."""
        self.hooks.is_authenticated = hook
        return hook

    def logout(self, hook: LogoutHook) -> LogoutHook:
        """``async def hook() -> None``; registering it advertises ``auth.logout``."""
        self.hooks.logout = hook
        return hook

    def terminal_login(self, hook: LoginHook) -> LoginHook:
        """``def hook(method_id) -> exit code``: the interactive login :meth:`run` performs when
        launched with a :class:`TerminalAuth` method's ``args``."""
        self.hooks.terminal_login = hook
        return hook

    def provider_changed(self, hook: ProviderHook) -> ProviderHook:
        """``async def hook(provider_id, config | None)``: a client rerouted (or disabled,
        None) a provider; raise to refuse. Only with ``unstable=True`` and ``providers``."""
        _require_async(hook, "the provider hook")
        self.providers.hook = hook
        return hook

    # -- what the app advertises -------------------------------------------

    def prompt_capabilities(self) -> s.PromptCapabilities:
        return s.PromptCapabilities(
            image=self.image, audio=self.audio, embedded_context=self.embedded_context
        )

    def agent_capabilities(self, *, unstable_peer: bool = True) -> s.AgentCapabilities:
        """Every capability stated explicitly (INIT-004).

        ``unstable_peer=False`` (a client that does not read unstable ACP,
        :func:`~acpwire.schema.stability.reads_unstable`) leaves out what the stable
        schema has no room for: ``mcpCapabilities.acp`` (the MCP flags are a closed set,
        INIT-017) and ``providers``. Session capability markers (fork, archive, ...) stay:
        a client ignores markers it does not know, and unstable clients that never say
        so (the TypeScript SDK's) rely on them."""
        durable = self.durable
        mcp = self.mcp_support.capabilities
        if not unstable_peer and mcp.acp is not UNSET:
            mcp = s.McpCapabilities(http=mcp.http, sse=mcp.sse)
        return s.AgentCapabilities(
            load_session=durable,
            prompt_capabilities=self.prompt_capabilities(),
            mcp_capabilities=mcp,
            session_capabilities=s.SessionCapabilities(
                list=s.SessionListCapabilities(),
                delete=s.SessionDeleteCapabilities(),
                close=s.SessionCloseCapabilities(),
                additional_directories=s.SessionAdditionalDirectoriesCapabilities(),
                resume=s.SessionResumeCapabilities() if durable else UNSET,
                fork=s.SessionForkCapabilities() if self.unstable else UNSET,
                archive=s.SessionArchiveCapabilities() if self.unstable else UNSET,
                status=s.SessionStatusCapabilities() if self.unstable else UNSET,
                title=s.SessionTitleCapabilities() if self.unstable else UNSET,
            ),
            auth=s.AgentAuthCapabilities(logout=s.LogoutCapabilities())
            if self.hooks.logout
            else UNSET,
            providers=s.ProvidersCapabilities()
            if self.unstable and self.providers and unstable_peer
            else UNSET,
        )

    # -- serving -------------------------------------------------------------

    def agent(self) -> AppAgent:
        """A low-tier :class:`~acpwire.agent.v1.Agent` serving this app on one connection."""
        agent = AppAgent(self)
        agent.unstable = self.unstable
        self.connections.add(agent)
        return agent

    def connection(self, agent: AppAgent, transport: Transport) -> AgentSideConnection:
        """A connection serving ``agent`` over ``transport``: v1, and v2 too with ``v2=True``."""
        if not self.v2:
            return AgentSideConnection(agent, transport)
        from .app_v2 import AppAgentV2  # the v2 models load only for apps that opt in

        return AgentSideConnection(
            agent, transport, v2=AppAgentV2(agent), v2_default=self.v2_default
        )

    def connect(self, transport: Transport) -> AgentSideConnection:
        """Start serving one connection over ``transport`` (for in-process use and tests)."""
        conn = self.connection(self.agent(), transport)
        conn.start()
        return conn

    async def serve(self, transport: Transport, *, interruptible: bool = False) -> None:
        """Serve one connection until the client hangs up; its sessions' MCP servers are then stopped.

        With ``interruptible`` SIGINT ends serving in good order: running turns
        are cancelled and answered ``cancelled`` first (see
        :func:`~acpwire.agent.connection.serve_until_interrupted`).
        """
        agent = self.agent()
        conn = self.connection(agent, transport)
        try:
            await (serve_until_interrupted(conn) if interruptible else conn.serve())
        finally:
            await agent.aclose_mcp()

    async def serve_stdio(self) -> None:
        """Serve on this process's stdin/stdout until the client hangs up or SIGINT, then close the store."""
        from ..transports.stdio import stdio_transport

        try:
            await self.serve(await stdio_transport(), interruptible=True)
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Stop every connected MCP server (all connections), commit pending history, close the store."""
        try:
            await self.mcp_support.aclose()
        finally:
            try:
                await self.history.aclose()
            finally:
                await self.store.aclose()

    def run(self, argv: Sequence[str] | None = None) -> None:
        """The body of an agent's ``main``: serve stdio (or run a terminal login, see :meth:`terminal_login`)."""
        args = list(sys.argv[1:] if argv is None else argv)
        for method in self.auth_methods:
            if isinstance(method, TerminalAuth) and method.args and args == list(method.args):
                login = self.hooks.terminal_login
                if login is None:
                    raise SystemExit(f"{self.name}: no terminal login registered for {method.id!r}")
                raise SystemExit(login(method.id) or 0)
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
        try:
            asyncio.run(self.serve_stdio())
        except KeyboardInterrupt:
            pass
