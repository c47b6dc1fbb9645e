"""The client role, low tier: one handler method per agent->client method, and a
typed peer for calling the agent. Mirrors :mod:`acpwire.agent.connection`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, cast

import msgspec

from .. import schema as s
from ..engine.connection import Connection
from ..engine.roles import Peer, build_router
from ..protocol.errors import InvalidParams, MethodNotFound, VersionMismatchError
from ..protocol.version import PROTOCOL_VERSION, SUPPORTED_VERSIONS
from ..schema import UNSET, UnsetType
from ..transports.base import Transport
from ..transports.subprocess import SubprocessTransport, spawn


class Client:
    """Handler base for the client role. Override what you support; the rest answer ``-32601``."""

    agent: AgentPeer
    """The connected agent; set when a connection adopts this client."""

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

    async def ext_method(self, method: str, params: Any) -> Any:
        raise MethodNotFound(f"Method not found: {method}", {"method": method})

    async def ext_notification(self, method: str, params: Any) -> None:
        """An ``_``-prefixed notification; ignored unless overridden."""


def _opt(value: Any) -> Any:
    return UNSET if value is None else value


class AgentPeer(Peer):
    """The agent, as the client calls it."""

    initialize_response: s.InitializeResponse | None = None

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
            client_capabilities=_opt(client_capabilities),
            client_info=_opt(client_info),
        )
        # Decoded in two steps: the version the agent chose decides what the rest of its
        # answer means (a v2 answer does not fit the v1 models), so it is checked first.
        raw: object = await self.connection.request("initialize", params)
        version = (
            cast("dict[str, object]", raw).get("protocolVersion") if isinstance(raw, dict) else None
        )
        if version not in SUPPORTED_VERSIONS:
            raise VersionMismatchError(
                f"agent answered protocol version {version!r} to a request for "
                f"{protocol_version}; this client speaks {sorted(SUPPORTED_VERSIONS)}"
            )
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
        self, *, cwd: str | None = None, cursor: str | None = None
    ) -> s.ListSessionsResponse:
        result: s.ListSessionsResponse = await self._call(
            "session/list", s.ListSessionsRequest(cwd=_opt(cwd), cursor=_opt(cursor))
        )
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


class ClientSideConnection:
    """Serves a :class:`Client` over a transport and exposes the agent as :attr:`agent`."""

    def __init__(
        self, client: Client, transport: Transport, *, check_capabilities: bool = True
    ) -> None:
        self.client = client
        self.transport = transport
        self.connection = Connection(transport, build_router(client, "client"), name="client")
        self.agent = AgentPeer(self.connection)
        self.agent.check_capabilities = check_capabilities
        client.on_connect(self.agent)
        self.connection.start()

    async def initialize(self, **kwargs: Any) -> s.InitializeResponse:
        """``initialize`` with the client's own :meth:`Client.capabilities`."""
        kwargs.setdefault("client_capabilities", self.client.capabilities())
        return await self.agent.initialize(**kwargs)

    async def close(self) -> None:
        await self.connection.close()

    async def __aenter__(self) -> ClientSideConnection:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


@contextlib.asynccontextmanager
async def connect(
    client: Client,
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    initialize: bool = True,
    **spawn_options: Any,
) -> AsyncGenerator[ClientSideConnection, None]:
    """Spawn an agent, connect ``client`` to it and (by default) initialize.

    On exit the connection is closed and the agent stopped: stdin closed, then
    terminate, then kill.
    """
    transport: SubprocessTransport = await spawn(command, args, env=env, cwd=cwd, **spawn_options)
    conn = ClientSideConnection(client, transport)
    try:
        if initialize:
            await conn.initialize()
        yield conn
    finally:
        await conn.close()
