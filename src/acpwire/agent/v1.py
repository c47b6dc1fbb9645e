"""The agent role in ACP v1, low tier: one handler method per client->agent method,
and a typed peer for calling the client.

Subclass :class:`Agent`, override the methods you support (the rest answer
``-32601``), and serve it with :func:`~acpwire.agent.connection.serve_stdio` or
:class:`~acpwire.agent.connection.AgentSideConnection`. The method names come from
the method table (:mod:`acpwire.schema.methods`); a test checks that they match it.

Unstable ACP (``session/fork``, ``providers/*``, ``auth/status``, MCP over ACP,
...) is opt-in: set ``unstable = True`` on the agent. Otherwise those methods
answer ``-32601`` whatever the class implements, the unstable parts of the
capabilities it returns from ``initialize`` are left out, and the
:class:`ClientPeer` refuses to send unstable methods
(:class:`~acpwire.protocol.errors.UnstableMethodError`). See
``docs/protocol-currency.md``.

A connection serves these routes through a :class:`V1Layer`: alone, or beside the
v2 draft's until ``initialize`` chooses (:mod:`acpwire.agent.connection`, which sits
above both versions; nothing here knows of v2).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .. import schema as s
from ..engine.connection import Connection
from ..engine.roles import Peer, build_router
from ..protocol.errors import MethodNotFound
from ..protocol.version import negotiate
from ..schema import UNSET, UnsetType
from ..schema.methods import V1, MethodTable, v1_table
from ..schema.stability import without_unstable


class Agent:
    """Handler base for the agent role. Every method receives the decoded params model."""

    client: ClientPeer
    """The connected client; set when a connection adopts this agent."""

    unstable: bool = False
    """Opt in to unstable ACP: route its methods to this agent and let it advertise
    and send them. Read when a connection adopts the agent."""

    def on_connect(self, client: ClientPeer) -> None:
        """Called once when a connection starts serving this agent."""
        self.client = client

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        """Negotiates the version; override to advertise capabilities and auth methods."""
        return s.InitializeResponse(protocol_version=negotiate(params.protocol_version))

    async def authenticate(self, params: s.AuthenticateRequest) -> s.AuthenticateResponse | None:
        raise MethodNotFound("authenticate is not supported by this agent")

    async def logout(self, params: s.LogoutRequest) -> s.LogoutResponse | None:
        raise MethodNotFound("logout is not supported by this agent")

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        raise MethodNotFound("session/new is not supported by this agent")

    async def load_session(self, params: s.LoadSessionRequest) -> s.LoadSessionResponse | None:
        raise MethodNotFound("session/load is not supported by this agent")

    async def list_sessions(self, params: s.ListSessionsRequest) -> s.ListSessionsResponse:
        raise MethodNotFound("session/list is not supported by this agent")

    async def delete_session(
        self, params: s.DeleteSessionRequest
    ) -> s.DeleteSessionResponse | None:
        raise MethodNotFound("session/delete is not supported by this agent")

    async def resume_session(
        self, params: s.ResumeSessionRequest
    ) -> s.ResumeSessionResponse | None:
        raise MethodNotFound("session/resume is not supported by this agent")

    async def close_session(self, params: s.CloseSessionRequest) -> s.CloseSessionResponse | None:
        raise MethodNotFound("session/close is not supported by this agent")

    async def set_session_mode(
        self, params: s.SetSessionModeRequest
    ) -> s.SetSessionModeResponse | None:
        raise MethodNotFound("session/set_mode is not supported by this agent")

    async def set_session_config_option(
        self, params: s.SetSessionConfigOptionRequest
    ) -> s.SetSessionConfigOptionResponse:
        raise MethodNotFound("session/set_config_option is not supported by this agent")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        raise MethodNotFound("session/prompt is not supported by this agent")

    async def cancel(self, params: s.CancelNotification) -> None:
        """``session/cancel``: stop the session's running turn (it must answer ``cancelled``)."""

    # -- unstable (routed only when ``unstable`` is true) ------------------

    async def fork_session(self, params: s.ForkSessionRequest) -> s.ForkSessionResponse:
        """``session/fork`` (unstable): a new session starting from another's history."""
        raise MethodNotFound("session/fork is not supported by this agent")

    async def archive_session(
        self, params: s.ArchiveSessionRequest
    ) -> s.ArchiveSessionResponse | None:
        """``session/archive`` (unstable)."""
        raise MethodNotFound("session/archive is not supported by this agent")

    async def unarchive_session(
        self, params: s.UnarchiveSessionRequest
    ) -> s.UnarchiveSessionResponse | None:
        """``session/unarchive`` (unstable)."""
        raise MethodNotFound("session/unarchive is not supported by this agent")

    async def session_status(self, params: s.SessionStatusRequest) -> s.SessionStatusResponse:
        """``session/status`` (unstable): whether a session is open; no side effects."""
        raise MethodNotFound("session/status is not supported by this agent")

    async def set_session_title(
        self, params: s.SetSessionTitleRequest
    ) -> s.SetSessionTitleResponse:
        """``session/set_title`` (unstable): answers with the title the agent keeps."""
        raise MethodNotFound("session/set_title is not supported by this agent")

    async def list_providers(self, params: s.ListProvidersRequest) -> s.ListProvidersResponse:
        """``providers/list`` (unstable): the LLM providers the client may configure."""
        raise MethodNotFound("providers/list is not supported by this agent")

    async def set_provider(self, params: s.SetProviderRequest) -> s.SetProviderResponse | None:
        """``providers/set`` (unstable)."""
        raise MethodNotFound("providers/set is not supported by this agent")

    async def disable_provider(
        self, params: s.DisableProviderRequest
    ) -> s.DisableProviderResponse | None:
        """``providers/disable`` (unstable)."""
        raise MethodNotFound("providers/disable is not supported by this agent")

    async def auth_status(self, params: s.AuthStatusRequest) -> s.AuthStatusResponse:
        """``auth/status`` (unstable): whether sessions can start without signing in."""
        raise MethodNotFound("auth/status is not supported by this agent")

    async def mcp_message(self, params: s.MessageMcpNotification) -> None:
        """An MCP notification (unstable ``mcp/message``) for one of this agent's MCP
        requests over ACP. Those sent with :meth:`ClientPeer.mcp_message` are handed to
        their listener before this runs; ignored unless overridden."""

    async def initialize_proxy(self, params: s.InitializeRequest) -> s.InitializeResponse:
        """``proxy/initialize`` (unstable): a conductor starts this agent as a proxy."""
        raise MethodNotFound("proxy/initialize is not supported by this agent")

    async def proxy_successor(self, params: s.ProxySuccessorRequest) -> Any:
        """``proxy/successor`` request (unstable): the conductor delivers a request from
        this proxy's successor."""
        raise MethodNotFound("proxy/successor is not supported by this agent")

    async def proxy_successor_notification(self, params: s.ProxySuccessorNotification) -> None:
        """``proxy/successor`` notification (unstable); ignored unless overridden."""

    async def ext_method(self, method: str, params: Any) -> Any:
        """An ``_``-prefixed request; unknown ones answer ``-32601``."""
        raise MethodNotFound(f"Method not found: {method}", {"method": method})

    async def ext_notification(self, method: str, params: Any) -> None:
        """An ``_``-prefixed notification; ignored unless overridden."""


class ClientPeer(Peer):
    """The client, as the agent calls it. Gated methods check the client's capabilities first."""

    side = "client"
    client_info: s.Implementation | None = None

    def __init__(self, connection: Connection, table: MethodTable = V1) -> None:
        super().__init__(connection, table)
        # (serverId, requestId) of mcp/message requests in flight -> their listener.
        self._mcp_listeners: dict[tuple[str, str], McpListener] = {}

    async def session_update(
        self, session_id: str, update: s.SessionUpdate, *, meta: dict[str, Any] | UnsetType = UNSET
    ) -> None:
        await self.connection.notify(
            "session/update", s.SessionNotification(session_id=session_id, update=update, meta=meta)
        )

    async def request_permission(
        self,
        session_id: str,
        tool_call: s.ToolCallUpdate,
        options: Sequence[s.PermissionOption],
    ) -> s.RequestPermissionResponse:
        params = s.RequestPermissionRequest(
            session_id=session_id, tool_call=tool_call, options=list(options)
        )
        result: s.RequestPermissionResponse = await self._call("session/request_permission", params)
        return result

    async def read_text_file(
        self, session_id: str, path: str, *, line: int | None = None, limit: int | None = None
    ) -> s.ReadTextFileResponse:
        params = s.ReadTextFileRequest(
            session_id=session_id,
            path=path,
            line=UNSET if line is None else line,
            limit=UNSET if limit is None else limit,
        )
        result: s.ReadTextFileResponse = await self._call("fs/read_text_file", params)
        return result

    async def write_text_file(
        self, session_id: str, path: str, content: str
    ) -> s.WriteTextFileResponse:
        params = s.WriteTextFileRequest(session_id=session_id, path=path, content=content)
        result: s.WriteTextFileResponse = await self._call("fs/write_text_file", params)
        return result

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: Sequence[str] = (),
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> s.CreateTerminalResponse:
        params = s.CreateTerminalRequest(
            session_id=session_id,
            command=command,
            args=list(args),
            env=[s.EnvVariable(name=k, value=v) for k, v in (env or {}).items()],
            cwd=UNSET if cwd is None else cwd,
            output_byte_limit=UNSET if output_byte_limit is None else output_byte_limit,
        )
        result: s.CreateTerminalResponse = await self._call("terminal/create", params)
        return result

    async def terminal_output(self, session_id: str, terminal_id: str) -> s.TerminalOutputResponse:
        params = s.TerminalOutputRequest(session_id=session_id, terminal_id=terminal_id)
        result: s.TerminalOutputResponse = await self._call("terminal/output", params)
        return result

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str
    ) -> s.WaitForTerminalExitResponse:
        params = s.WaitForTerminalExitRequest(session_id=session_id, terminal_id=terminal_id)
        result: s.WaitForTerminalExitResponse = await self._call("terminal/wait_for_exit", params)
        return result

    async def kill_terminal(self, session_id: str, terminal_id: str) -> s.KillTerminalResponse:
        params = s.KillTerminalRequest(session_id=session_id, terminal_id=terminal_id)
        result: s.KillTerminalResponse = await self._call("terminal/kill", params)
        return result

    async def release_terminal(
        self, session_id: str, terminal_id: str
    ) -> s.ReleaseTerminalResponse:
        params = s.ReleaseTerminalRequest(session_id=session_id, terminal_id=terminal_id)
        result: s.ReleaseTerminalResponse = await self._call("terminal/release", params)
        return result

    async def create_elicitation(
        self, params: s.CreateElicitationRequest
    ) -> s.CreateElicitationResponse:
        mode = getattr(params, "mode", None) or (
            "form"
            if isinstance(params, s.ElicitationFormMode)
            else "url"
            if isinstance(params, s.ElicitationUrlMode)
            else None
        )
        result: s.CreateElicitationResponse = await self._call(
            "elicitation/create", params, mode=mode
        )
        return result

    async def complete_elicitation(self, elicitation_id: str) -> None:
        await self._call(
            "elicitation/complete", s.CompleteElicitationNotification(elicitation_id=elicitation_id)
        )

    # -- unstable (the connection must opt in) ------------------------------

    async def auth_status_update(
        self, state: str, *, accounts: Sequence[s.AuthAccount] | None = None
    ) -> None:
        """``auth/status_update`` (unstable): tell the client the sign-in state changed.

        Gated by this agent's own ``auth.status`` capability."""
        params = s.AuthStatusUpdateNotification(
            state=state, accounts=UNSET if accounts is None else list(accounts)
        )
        await self._call("auth/status_update", params)

    async def mcp_message(
        self,
        server_id: str,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        request_id: str | None = None,
        on_notification: McpListener | None = None,
    ) -> s.MessageMcpResponse:
        """Send one MCP request to a server the client offers over ACP (unstable
        ``mcp/message``) and return its outcome: ``result`` or an MCP ``error``.

        ``params`` go as they are (the MCP ``_meta`` envelope is the caller's, see
        :mod:`acpwire.agent.mcp`); MCP notifications the client sends for this
        request while it runs go to ``on_notification``. Gated by this agent's own
        ``mcpCapabilities.acp``. An outer ACP error (server unknown, binding
        failure) raises :class:`~acpwire.protocol.errors.RequestError`.
        """
        rid = request_id or f"mcp-request:{uuid.uuid4().hex}"
        key = (server_id, rid)
        if key in self._mcp_listeners:
            raise ValueError(f"MCP request {rid!r} is already active for server {server_id!r}")
        message = s.MessageMcpRequest(
            server_id=server_id,
            request_id=rid,
            method=method,
            params=UNSET if params is None else params,
        )
        if on_notification is not None:
            self._mcp_listeners[key] = on_notification
        try:
            result: s.MessageMcpResponse = await self._call("mcp/message", message)
        finally:
            self._mcp_listeners.pop(key, None)
        return result

    async def deliver_mcp_notification(self, params: s.MessageMcpNotification) -> None:
        """Hand an MCP notification to the listener of the request it belongs to, if any."""
        listener = self._mcp_listeners.get((params.server_id, params.request_id))
        if listener is not None:
            await listener(params)

    async def proxy_successor(self, method: str, params: Any = None) -> Any:
        """``proxy/successor`` (unstable): have the conductor deliver a request to this
        proxy's successor; returns the successor's answer unchanged."""
        return await self._call(
            "proxy/successor",
            s.ProxySuccessorRequest(method=method, params=UNSET if params is None else params),
        )

    async def proxy_successor_notification(self, method: str, params: Any = None) -> None:
        """``proxy/successor`` as a notification (unstable): forward one to the successor."""
        await self._call(
            "proxy/successor",
            s.ProxySuccessorNotification(method=method, params=UNSET if params is None else params),
            request=False,
        )


McpListener = Callable[[s.MessageMcpNotification], Awaitable[None]]
"""Receives the MCP notifications of one ``mcp/message`` request while it runs."""


class V1Layer:
    """ACP v1 on one agent connection: the routes to an :class:`Agent` and, once
    attached, the :class:`ClientPeer` its calls go through.

    ``initialize`` records the client's capabilities and info in the peer (and what
    the agent advertised, so its own gates hold); ``session/prompt`` counts the
    prompts in hand per session, so an interrupt knows what to cancel;
    ``mcp/message`` notifications reach their request's listener first.
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.table = v1_table(agent.unstable)
        self.router = build_router(
            agent,
            "agent",
            self.table,
            overrides={
                "initialize": self.initialize,
                "session/prompt": self._prompt,
                "mcp/message": self._mcp_message,
            },
        )
        self._prompting: dict[str, int] = {}  # session id -> prompts in hand

    def attach(self, connection: Connection, check_capabilities: bool) -> ClientPeer:
        """Make the client peer on ``connection`` and hand it to the agent."""
        client = self.client = ClientPeer(connection, self.table)
        client.check_capabilities = check_capabilities
        client.remote_capabilities = s.ClientCapabilities()
        client.local_capabilities = s.AgentCapabilities()
        self.agent.on_connect(client)
        return client

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        """The agent's answer to ``initialize``, its capabilities taken as the gates."""
        caps = params.client_capabilities
        self.client.remote_capabilities = (
            s.ClientCapabilities() if isinstance(caps, UnsetType) else caps
        )
        info = params.client_info
        self.client.client_info = None if isinstance(info, UnsetType) else info
        response = await self.agent.initialize(params)
        if not self.client.unstable:
            # Never advertise what this connection will not route.
            response = without_unstable(response)
        own = response.agent_capabilities
        self.client.local_capabilities = (
            s.AgentCapabilities() if isinstance(own, UnsetType) else own
        )
        return response

    async def _mcp_message(self, params: s.MessageMcpNotification) -> None:
        await self.client.deliver_mcp_notification(params)
        await self.agent.mcp_message(params)

    async def _prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        sid = params.session_id
        self._prompting[sid] = self._prompting.get(sid, 0) + 1
        try:
            return await self.agent.prompt(params)
        finally:
            left = self._prompting[sid] - 1
            if left:
                self._prompting[sid] = left
            else:
                del self._prompting[sid]

    def prompted(self) -> list[str]:
        """The sessions with a prompt in hand (what an interrupt cancels)."""
        return list(self._prompting)

    async def cancel(self, session_id: str) -> None:
        """What ``session/cancel`` for ``session_id`` does."""
        await self.agent.cancel(s.CancelNotification(session_id=session_id))
