"""The client role of the ACP v2 *draft*, low tier: one handler method per agent->client
method of the v2 table, and a typed peer for calling the agent. Mirrors
:mod:`acpwire.agent.v2`.

Opt-in, next to a v1 client: ``ClientSideConnection(client, transport, v2=MyClientV2())``
then ``await conn.negotiate()`` offers version 2; the agent's answer decides
whether the connection speaks v2 (``conn.agent_v2``) or v1 (``conn.agent``, the
v1 ``client`` serving it). See :mod:`acpwire.protocol.version` for the offer.
Neither this module nor :mod:`acpwire.client.v1` imports the other;
:mod:`acpwire.client.connection`, above both, chooses.

In v2 ``session/prompt`` answers with the user message's ``messageId`` as soon as
the agent accepted it; the turn's updates and its end (an ``idle``
``state_update`` with the stop reason) arrive as ``session/update``
notifications, whose handler here is :meth:`ClientV2.session_update`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from .. import schema as s
from ..engine.connection import Connection
from ..engine.roles import Peer, build_router
from ..protocol.errors import InvalidParams, MethodNotFound
from ..protocol.version import V2_DRAFT
from ..schema import UnsetType, none_to_unset, v2
from ..schema.methods import V2, MethodTable

__all__ = ["AgentPeerV2", "ClientV2", "V2Layer"]


class ClientV2:
    """Handler base for the client role of the v2 draft. Override what you support;
    the rest answer ``-32601``."""

    agent: AgentPeerV2
    """The connected v2 agent; set when a connection adopts this client."""

    def on_connect(self, agent: AgentPeerV2) -> None:
        self.agent = agent

    def capabilities(self) -> v2.ClientCapabilities:
        """What to advertise in a v2 ``initialize``; by default nothing optional."""
        return v2.ClientCapabilities()

    async def session_update(self, params: v2.UpdateSessionNotification) -> None:
        """A ``session/update`` notification; ignored unless overridden."""

    async def request_permission(
        self, params: v2.RequestPermissionRequest
    ) -> v2.RequestPermissionResponse:
        raise MethodNotFound("session/request_permission is not supported by this client")

    async def create_elicitation(
        self, params: v2.CreateElicitationRequest
    ) -> v2.CreateElicitationResponse:
        raise MethodNotFound("elicitation/create is not supported by this client")

    async def complete_elicitation(self, params: v2.CompleteElicitationNotification) -> None:
        """``elicitation/complete``; ignored unless overridden."""

    async def ext_method(self, method: str, params: Any) -> Any:
        raise MethodNotFound(f"Method not found: {method}", {"method": method})

    async def ext_notification(self, method: str, params: Any) -> None:
        """An ``_``-prefixed notification; ignored unless overridden."""


class AgentPeerV2(Peer):
    """The v2 agent, as the client calls it. Session methods need the agent to have
    advertised ``capabilities.session``; ``session/delete`` its ``session.delete``."""

    side = "agent"
    initialize_response: v2.InitializeResponse | None = None

    def __init__(self, connection: Connection, table: MethodTable = V2) -> None:
        super().__init__(connection, table)

    @property
    def agent_capabilities(self) -> v2.AgentCapabilities:
        caps = self.remote_capabilities
        return caps if isinstance(caps, v2.AgentCapabilities) else v2.AgentCapabilities()

    def adopt_answer(self, raw: object) -> v2.InitializeResponse:
        """Take a v2 ``initialize`` answer (plain JSON): its capabilities become the gates."""
        try:
            result = s.convert(raw, v2.InitializeResponse)
        except msgspec.ValidationError as exc:
            error = InvalidParams("peer's answer to initialize does not match the schema", str(exc))
            error.from_peer = True
            raise error from None
        caps = result.capabilities
        self.remote_capabilities = v2.AgentCapabilities() if isinstance(caps, UnsetType) else caps
        self.initialize_response = result
        return result

    async def login(self, method_id: str) -> v2.LoginAuthResponse:
        """``auth/login`` (v1's ``authenticate``) with one of the advertised ``authMethods``."""
        result: v2.LoginAuthResponse = await self._call(
            "auth/login", v2.LoginAuthRequest(method_id=method_id)
        )
        return result

    async def logout(self) -> v2.LogoutAuthResponse:
        result: v2.LogoutAuthResponse = await self._call("auth/logout", v2.LogoutAuthRequest())
        return result

    async def new_session(
        self,
        cwd: str,
        mcp_servers: Sequence[v2.McpServer] | None = None,
        *,
        additional_directories: Sequence[str] | None = None,
    ) -> v2.NewSessionResponse:
        params = v2.NewSessionRequest(
            cwd=cwd,
            mcp_servers=none_to_unset(None if mcp_servers is None else list(mcp_servers)),
            additional_directories=none_to_unset(
                None if additional_directories is None else list(additional_directories)
            ),
        )
        result: v2.NewSessionResponse = await self._call("session/new", params)
        return result

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: Sequence[v2.McpServer] | None = None,
        *,
        additional_directories: Sequence[str] | None = None,
        replay: bool = False,
    ) -> v2.ResumeSessionResponse:
        """``session/resume``; ``replay=True`` asks for the history from the start
        (``replayFrom: {"type": "start"}``, v2's replacement for ``session/load``)."""
        params = v2.ResumeSessionRequest(
            session_id=session_id,
            cwd=cwd,
            mcp_servers=none_to_unset(None if mcp_servers is None else list(mcp_servers)),
            additional_directories=none_to_unset(
                None if additional_directories is None else list(additional_directories)
            ),
            replay_from=v2.ReplayFromStart() if replay else v2.UNSET,
        )
        result: v2.ResumeSessionResponse = await self._call("session/resume", params)
        return result

    async def list_sessions(
        self, *, cwd: str | None = None, cursor: str | None = None
    ) -> v2.ListSessionsResponse:
        result: v2.ListSessionsResponse = await self._call(
            "session/list",
            v2.ListSessionsRequest(cwd=none_to_unset(cwd), cursor=none_to_unset(cursor)),
        )
        return result

    async def close_session(self, session_id: str) -> v2.CloseSessionResponse:
        result: v2.CloseSessionResponse = await self._call(
            "session/close", v2.CloseSessionRequest(session_id=session_id)
        )
        return result

    async def delete_session(self, session_id: str) -> v2.DeleteSessionResponse:
        result: v2.DeleteSessionResponse = await self._call(
            "session/delete", v2.DeleteSessionRequest(session_id=session_id)
        )
        return result

    async def set_session_config_option(
        self, session_id: str, config_id: str, value: str | bool
    ) -> v2.SetSessionConfigOptionResponse:
        params = v2.SetSessionConfigOptionRequest(
            session_id=session_id,
            config_id=config_id,
            value=value,
            type="boolean" if isinstance(value, bool) else "id",
        )
        result: v2.SetSessionConfigOptionResponse = await self._call(
            "session/set_config_option", params
        )
        return result

    async def prompt(
        self, session_id: str, prompt: str | Sequence[v2.ContentBlock]
    ) -> v2.PromptResponse:
        """Send a user message; returns once the agent inserted it (its ``messageId``),
        not when the turn ends (an ``idle`` state update says that)."""
        blocks: list[v2.ContentBlock] = (
            [v2.TextContent(text=prompt)] if isinstance(prompt, str) else list(prompt)
        )
        result: v2.PromptResponse = await self._call(
            "session/prompt", v2.PromptRequest(session_id=session_id, prompt=blocks)
        )
        return result

    async def cancel(self, session_id: str) -> None:
        """``session/cancel``: the agent ends the foreground work with ``cancelled``."""
        await self._call("session/cancel", v2.CancelSessionNotification(session_id=session_id))

    async def cancel_tool_call(self, session_id: str, tool_call_id: str) -> None:
        """``tool_call/cancel``: only for a tool call whose ``capabilities.cancel`` is set."""
        await self._call(
            "tool_call/cancel",
            v2.CancelToolCallRequest(session_id=session_id, tool_call_id=tool_call_id),
        )

    async def cancel_terminal(self, session_id: str, terminal_id: str) -> None:
        """``terminal/cancel``: only for a terminal whose ``capabilities.cancel`` is set."""
        await self._call(
            "terminal/cancel",
            v2.CancelTerminalRequest(session_id=session_id, terminal_id=terminal_id),
        )


class V2Layer:
    """The v2 draft on one client connection: the routes to a :class:`ClientV2` and,
    once attached, the :class:`AgentPeerV2` its calls go through. Built only when an
    application passes ``v2=``; the connection above (:mod:`acpwire.client.connection`)
    makes the offer and switches to these routes when the agent answers 2."""

    def __init__(self, client: ClientV2) -> None:
        self.client = client
        self.router = build_router(client, "client", V2)

    def attach(self, connection: Connection, check_capabilities: bool) -> AgentPeerV2:
        """Make the agent peer on ``connection`` and hand it to the client."""
        agent = self.agent = AgentPeerV2(connection)
        agent.check_capabilities = check_capabilities
        self.client.on_connect(agent)
        return agent

    def offer(self, info: v2.Implementation) -> dict[str, Any]:
        """The v2 ``initialize`` params (JSON) naming ``info`` with the client's own
        capabilities, which become this side's gates."""
        own = self.client.capabilities()
        self.agent.local_capabilities = own
        params: dict[str, Any] = s.to_json(
            v2.InitializeRequest(protocol_version=V2_DRAFT, info=info, capabilities=own)
        )
        return params
