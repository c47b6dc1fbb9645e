"""The client role in ACP v1, low tier: one handler method per agent->client method,
and a typed peer for calling the agent. Mirrors :mod:`acpwire.agent.v1`.

Unstable ACP is opt-in here too: set ``unstable = True`` on the client. Otherwise
unstable methods answer ``-32601``, the unstable parts of the client's
capabilities are left out of ``initialize``, and the :class:`AgentPeer` refuses
to send unstable methods (``session/fork``, ``providers/*``, ...).

A connection serves these routes through a :class:`V1Layer`: alone, or until an
agent that was offered the v2 draft chooses it (:mod:`acpwire.client.connection`,
which sits above both versions; nothing here knows of v2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from .. import schema as s
from ..engine.connection import Connection
from ..engine.roles import Peer, build_router
from ..protocol.errors import (
    InvalidParams,
    MethodNotFound,
    UnstableMethodError,
    VersionMismatchError,
)
from ..protocol.mcp_binding import SERVER_UNAVAILABLE, binding_error
from ..protocol.version import PROTOCOL_VERSION, SUPPORTED_VERSIONS, answered_version
from ..schema import UNSET, UnsetType, none_to_unset
from ..schema.methods import V1, MethodTable, v1_table
from ..schema.stability import UNSTABLE_MARK, without_unstable
from .mcp import DEFAULT_MAX_ACTIVE, McpHandler, McpOffers


class Client:
    """Handler base for the client role. Override what you support; the rest answer ``-32601``."""

    agent: AgentPeer
    """The connected agent; set when a connection adopts this client."""

    unstable: bool = False
    """Opt in to unstable ACP: route its methods to this client and let it advertise
    and send them. Read when a connection adopts the client."""

    def on_connect(self, agent: AgentPeer) -> None:
        self.agent = agent

    def capabilities(self) -> s.ClientCapabilities:
        """What to advertise in ``initialize``; by default nothing optional."""
        return s.ClientCapabilities()

    async def session_update(self, params: s.SessionNotification) -> None:
        """A ``session/update`` notification; ignored unless overridden."""

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        raise MethodNotFound("session/request_permission is not supported by this client")

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        raise MethodNotFound("fs/read_text_file is not supported by this client")

    async def write_text_file(
        self, params: s.WriteTextFileRequest
    ) -> s.WriteTextFileResponse | None:
        raise MethodNotFound("fs/write_text_file is not supported by this client")

    async def create_terminal(self, params: s.CreateTerminalRequest) -> s.CreateTerminalResponse:
        raise MethodNotFound("terminal/create is not supported by this client")

    async def terminal_output(self, params: s.TerminalOutputRequest) -> s.TerminalOutputResponse:
        raise MethodNotFound("terminal/output is not supported by this client")

    async def wait_for_terminal_exit(
        self, params: s.WaitForTerminalExitRequest
    ) -> s.WaitForTerminalExitResponse:
        raise MethodNotFound("terminal/wait_for_exit is not supported by this client")

    async def kill_terminal(self, params: s.KillTerminalRequest) -> s.KillTerminalResponse | None:
        raise MethodNotFound("terminal/kill is not supported by this client")

    async def release_terminal(
        self, params: s.ReleaseTerminalRequest
    ) -> s.ReleaseTerminalResponse | None:
        raise MethodNotFound("terminal/release is not supported by this client")

    async def create_elicitation(
        self, params: s.CreateElicitationRequest
    ) -> s.CreateElicitationResponse:
        raise MethodNotFound("elicitation/create is not supported by this client")

    async def complete_elicitation(self, params: s.CompleteElicitationNotification) -> None:
        """``elicitation/complete``; ignored unless overridden."""

    # -- unstable (routed only when ``unstable`` is true) ------------------

    async def auth_status_update(self, params: s.AuthStatusUpdateNotification) -> None:
        """``auth/status_update`` (unstable): the agent's sign-in state changed; ignored
        unless overridden."""

    async def mcp_message(self, params: s.MessageMcpRequest) -> s.MessageMcpResponse:
        """An MCP request (unstable ``mcp/message``) for a server this client offers.

        Servers offered with :meth:`AgentPeer.offer_mcp_server` are served before
        this runs; anything else is answered as the binding answers an unknown
        server."""
        raise binding_error(
            SERVER_UNAVAILABLE,
            "MCP server registration unavailable",
            {"serverId": params.server_id},
        )

    async def proxy_successor(self, params: s.ProxySuccessorRequest) -> Any:
        """``proxy/successor`` request (unstable): a proxy forwards a request to its
        successor through this client, acting as the conductor."""
        raise MethodNotFound("proxy/successor is not supported by this client")

    async def proxy_successor_notification(self, params: s.ProxySuccessorNotification) -> None:
        """``proxy/successor`` notification (unstable); ignored unless overridden."""

    async def ext_method(self, method: str, params: Any) -> Any:
        raise MethodNotFound(f"Method not found: {method}", {"method": method})

    async def ext_notification(self, method: str, params: Any) -> None:
        """An ``_``-prefixed notification; ignored unless overridden."""


class AgentPeer(Peer):
    """The agent, as the client calls it."""

    side = "agent"
    initialize_response: s.InitializeResponse | None = None

    def __init__(self, connection: Connection, table: MethodTable = V1) -> None:
        super().__init__(connection, table)
        self.mcp = McpOffers(self)
        """The MCP servers this client offers the agent over ACP (see :meth:`offer_mcp_server`)."""

    @property
    def agent_capabilities(self) -> s.AgentCapabilities:
        caps = self.remote_capabilities
        return caps if isinstance(caps, s.AgentCapabilities) else s.AgentCapabilities()

    async def initialize(
        self,
        client_capabilities: s.ClientCapabilities | None = None,
        *,
        client_info: s.Implementation | None = None,
        protocol_version: int = PROTOCOL_VERSION,
    ) -> s.InitializeResponse:
        """Negotiate the version and exchange capabilities.

        Raises :class:`VersionMismatchError` (after which the caller should
        close) when the agent answers with a version this library cannot speak.
        """
        params = s.InitializeRequest(
            protocol_version=protocol_version,
            client_capabilities=none_to_unset(self.own_capabilities(client_capabilities)),
            client_info=none_to_unset(client_info),
        )
        # Decoded in two steps: the version the agent chose decides what the rest of its
        # answer means (a v2 answer does not fit the v1 models), so it is checked first.
        raw: object = await self.connection.request("initialize", params)
        version = answered_version(raw)
        if version not in SUPPORTED_VERSIONS:
            raise VersionMismatchError(
                f"agent answered protocol version {version!r} to a request for "
                f"{protocol_version}; this client speaks {sorted(SUPPORTED_VERSIONS)}"
            )
        return self.adopt_answer(raw)

    def own_capabilities(
        self, client_capabilities: s.ClientCapabilities | None
    ) -> s.ClientCapabilities | None:
        """Record what this client advertises: unstable parts left out unless opted in,
        and the opt-in said in ``_meta`` (:data:`~acpwire.schema.stability.UNSTABLE_MARK`:
        an agent then advertises what only unstable ACP defines, such as
        ``mcpCapabilities.acp``)."""
        if client_capabilities is not None and not self.unstable:
            # Never advertise what this connection will not route.
            client_capabilities = without_unstable(client_capabilities)
        elif self.unstable:
            caps = client_capabilities or s.ClientCapabilities()
            meta = dict(caps.meta) if isinstance(caps.meta, dict) else {}
            meta[UNSTABLE_MARK] = True
            client_capabilities = msgspec.structs.replace(caps, meta=meta)
        self.local_capabilities = client_capabilities or s.ClientCapabilities()
        return client_capabilities

    def adopt_answer(self, raw: object) -> s.InitializeResponse:
        """Take a v1 ``initialize`` answer (plain JSON): its capabilities become the gates."""
        try:
            result = s.convert(raw, s.InitializeResponse)
        except msgspec.ValidationError as exc:
            error = InvalidParams("peer's answer to initialize does not match the schema", str(exc))
            error.from_peer = True
            raise error from None
        caps = result.agent_capabilities
        self.remote_capabilities = s.AgentCapabilities() if isinstance(caps, UnsetType) else caps
        self.initialize_response = result
        return result

    async def authenticate(self, method_id: str) -> s.AuthenticateResponse:
        result: s.AuthenticateResponse = await self._call(
            "authenticate", s.AuthenticateRequest(method_id=method_id)
        )
        return result

    async def logout(self) -> s.LogoutResponse:
        result: s.LogoutResponse = await self._call("logout", s.LogoutRequest())
        return result

    async def new_session(
        self,
        cwd: str,
        mcp_servers: Sequence[s.McpServer] = (),
        *,
        additional_directories: Sequence[str] | None = None,
    ) -> s.NewSessionResponse:
        params = s.NewSessionRequest(
            cwd=cwd,
            mcp_servers=list(mcp_servers),
            additional_directories=UNSET
            if additional_directories is None
            else list(additional_directories),
        )
        result: s.NewSessionResponse = await self._call("session/new", params)
        return result

    async def load_session(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: Sequence[s.McpServer] = (),
        *,
        additional_directories: Sequence[str] | None = None,
    ) -> s.LoadSessionResponse:
        params = s.LoadSessionRequest(
            session_id=session_id,
            cwd=cwd,
            mcp_servers=list(mcp_servers),
            additional_directories=UNSET
            if additional_directories is None
            else list(additional_directories),
        )
        result: s.LoadSessionResponse = await self._call("session/load", params)
        return result

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: Sequence[s.McpServer] | None = None,
        *,
        additional_directories: Sequence[str] | None = None,
    ) -> s.ResumeSessionResponse:
        params = s.ResumeSessionRequest(
            session_id=session_id,
            cwd=cwd,
            mcp_servers=UNSET if mcp_servers is None else list(mcp_servers),
            additional_directories=UNSET
            if additional_directories is None
            else list(additional_directories),
        )
        result: s.ResumeSessionResponse = await self._call("session/resume", params)
        return result

    async def list_sessions(
        self, *, cwd: str | None = None, cursor: str | None = None, archived: str | None = None
    ) -> s.ListSessionsResponse:
        """``session/list``. ``archived`` (unstable: ``exclude``, ``include`` or ``only``)
        needs a connection that opted in and an agent advertising ``sessionCapabilities.archive``."""
        if archived is not None:
            if not self.unstable:
                raise UnstableMethodError(
                    "the archived filter of session/list is unstable ACP and this connection "
                    "did not opt in; set `unstable = True` on the client handler to use it"
                )
            self._check(self._spec("session/archive", True), None)
        params = s.ListSessionsRequest(
            cwd=none_to_unset(cwd), cursor=none_to_unset(cursor), archived=none_to_unset(archived)
        )
        result: s.ListSessionsResponse = await self._call("session/list", params)
        return result

    async def close_session(self, session_id: str) -> s.CloseSessionResponse:
        result: s.CloseSessionResponse = await self._call(
            "session/close", s.CloseSessionRequest(session_id=session_id)
        )
        return result

    async def delete_session(self, session_id: str) -> s.DeleteSessionResponse:
        result: s.DeleteSessionResponse = await self._call(
            "session/delete", s.DeleteSessionRequest(session_id=session_id)
        )
        return result

    async def set_session_mode(self, session_id: str, mode_id: str) -> s.SetSessionModeResponse:
        result: s.SetSessionModeResponse = await self._call(
            "session/set_mode", s.SetSessionModeRequest(session_id=session_id, mode_id=mode_id)
        )
        return result

    async def set_session_config_option(
        self, session_id: str, config_id: str, value: str | bool
    ) -> s.SetSessionConfigOptionResponse:
        params = s.SetSessionConfigOptionRequest(
            session_id=session_id,
            config_id=config_id,
            value=value,
            type="boolean" if isinstance(value, bool) else UNSET,
        )
        result: s.SetSessionConfigOptionResponse = await self._call(
            "session/set_config_option", params
        )
        return result

    async def prompt(
        self, session_id: str, prompt: str | Sequence[s.ContentBlock]
    ) -> s.PromptResponse:
        """Run one turn. A plain string is sent as one text block."""
        blocks: list[s.ContentBlock] = (
            [s.TextContent(text=prompt)] if isinstance(prompt, str) else list(prompt)
        )
        result: s.PromptResponse = await self._call(
            "session/prompt", s.PromptRequest(session_id=session_id, prompt=blocks)
        )
        return result

    async def cancel(self, session_id: str) -> None:
        """``session/cancel``: ask the agent to end the running turn with ``cancelled``."""
        await self._call("session/cancel", s.CancelNotification(session_id=session_id))

    # -- unstable (the connection must opt in) ------------------------------

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: Sequence[s.McpServer] = (),
        *,
        additional_directories: Sequence[str] | None = None,
    ) -> s.ForkSessionResponse:
        """``session/fork`` (unstable): a new session that starts from ``session_id``'s
        history and goes its own way."""
        params = s.ForkSessionRequest(
            session_id=session_id,
            cwd=cwd,
            mcp_servers=list(mcp_servers),
            additional_directories=UNSET
            if additional_directories is None
            else list(additional_directories),
        )
        result: s.ForkSessionResponse = await self._call("session/fork", params)
        return result

    async def archive_session(self, session_id: str) -> s.ArchiveSessionResponse:
        """``session/archive`` (unstable)."""
        result: s.ArchiveSessionResponse = await self._call(
            "session/archive", s.ArchiveSessionRequest(session_id=session_id)
        )
        return result

    async def unarchive_session(self, session_id: str) -> s.UnarchiveSessionResponse:
        """``session/unarchive`` (unstable)."""
        result: s.UnarchiveSessionResponse = await self._call(
            "session/unarchive", s.UnarchiveSessionRequest(session_id=session_id)
        )
        return result

    async def session_status(self, session_id: str) -> s.SessionStatusResponse:
        """``session/status`` (unstable): ``open`` or ``saved``, without side effects."""
        result: s.SessionStatusResponse = await self._call(
            "session/status", s.SessionStatusRequest(session_id=session_id)
        )
        return result

    async def set_session_title(self, session_id: str, title: str) -> s.SetSessionTitleResponse:
        """``session/set_title`` (unstable)."""
        result: s.SetSessionTitleResponse = await self._call(
            "session/set_title", s.SetSessionTitleRequest(session_id=session_id, title=title)
        )
        return result

    async def list_providers(self) -> s.ListProvidersResponse:
        """``providers/list`` (unstable)."""
        result: s.ListProvidersResponse = await self._call(
            "providers/list", s.ListProvidersRequest()
        )
        return result

    async def set_provider(
        self,
        provider_id: str,
        api_type: str,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> s.SetProviderResponse:
        """``providers/set`` (unstable): route the agent's LLM calls for ``provider_id``."""
        params = s.SetProviderRequest(
            provider_id=provider_id,
            api_type=api_type,
            base_url=base_url,
            headers=UNSET if headers is None else dict(headers),
        )
        result: s.SetProviderResponse = await self._call("providers/set", params)
        return result

    async def disable_provider(self, provider_id: str) -> s.DisableProviderResponse:
        """``providers/disable`` (unstable)."""
        result: s.DisableProviderResponse = await self._call(
            "providers/disable", s.DisableProviderRequest(provider_id=provider_id)
        )
        return result

    async def auth_status(self) -> s.AuthStatusResponse:
        """``auth/status`` (unstable): whether sessions can start without signing in."""
        result: s.AuthStatusResponse = await self._call("auth/status", s.AuthStatusRequest())
        return result

    async def mcp_message(
        self,
        server_id: str,
        request_id: str,
        method: str,
        params: dict[str, Any] | None = None,
    ) -> None:
        """Send an MCP notification for one of the agent's MCP requests in flight
        (unstable ``mcp/message``). :meth:`offer_mcp_server` does this for its servers."""
        await self._call(
            "mcp/message",
            s.MessageMcpNotification(
                server_id=server_id,
                request_id=request_id,
                method=method,
                params=UNSET if params is None else params,
            ),
        )

    def offer_mcp_server(
        self,
        name: str,
        server: McpHandler | Any,
        *,
        server_id: str | None = None,
        max_active: int = DEFAULT_MAX_ACTIVE,
    ) -> s.McpServerAcp:
        """Offer an MCP server over this ACP connection (unstable MCP over ACP).

        ``server`` is an official ``mcp`` SDK server (``MCPServer`` or a low-level
        ``Server``) or an :data:`~acpwire.client.mcp.McpHandler`. Returns the
        declaration to list in ``mcpServers`` of ``session/new``; the agent must
        have advertised ``mcpCapabilities.acp``. See :mod:`acpwire.client.mcp`.
        """
        if not self.unstable:
            raise UnstableMethodError(
                "MCP over ACP is unstable ACP and this connection did not opt in; "
                "set `unstable = True` on the client handler to use it"
            )
        return self.mcp.offer(name, server, server_id=server_id, max_active=max_active)

    async def initialize_proxy(
        self,
        client_capabilities: s.ClientCapabilities | None = None,
        *,
        client_info: s.Implementation | None = None,
        protocol_version: int = PROTOCOL_VERSION,
    ) -> s.InitializeResponse:
        """``proxy/initialize`` (unstable): as a conductor, start the agent as a proxy."""
        params = s.InitializeRequest(
            protocol_version=protocol_version,
            client_capabilities=none_to_unset(client_capabilities),
            client_info=none_to_unset(client_info),
        )
        result: s.InitializeResponse = await self._call("proxy/initialize", params)
        return result

    async def proxy_successor(self, method: str, params: Any = None) -> Any:
        """``proxy/successor`` (unstable): as a conductor, deliver a request from the
        proxy's successor to it; returns the proxy's answer unchanged."""
        return await self._call(
            "proxy/successor",
            s.ProxySuccessorRequest(method=method, params=UNSET if params is None else params),
        )

    async def proxy_successor_notification(self, method: str, params: Any = None) -> None:
        """``proxy/successor`` as a notification (unstable)."""
        await self._call(
            "proxy/successor",
            s.ProxySuccessorNotification(method=method, params=UNSET if params is None else params),
            request=False,
        )


class V1Layer:
    """ACP v1 on one client connection: the routes to a :class:`Client` and, once
    attached, the :class:`AgentPeer` its calls go through. ``mcp/message`` requests
    reach the servers offered with :meth:`AgentPeer.offer_mcp_server` first."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.table = v1_table(client.unstable)
        self.router = build_router(
            client, "client", self.table, overrides={"mcp/message": self._mcp_message}
        )

    def attach(self, connection: Connection, check_capabilities: bool) -> AgentPeer:
        """Make the agent peer on ``connection`` and hand it to the client."""
        agent = self.agent = AgentPeer(connection, self.table)
        agent.check_capabilities = check_capabilities
        self.client.on_connect(agent)
        return agent

    async def _mcp_message(self, params: s.MessageMcpRequest) -> s.MessageMcpResponse:
        answer = await self.agent.mcp.serve(params)
        return answer if answer is not None else await self.client.mcp_message(params)
