"""The agent role of the ACP v2 *draft*, low tier: one handler method per client->agent
method of the v2 table, and a typed peer for calling the client.

Opt-in, next to a v1 agent: ``AgentSideConnection(agent, transport, v2=MyAgentV2())``
serves a v1 client with ``agent`` and a client that asks for version 2 with the
:class:`AgentV2` (see :mod:`acpwire.protocol.version` for the choice: only a request
for exactly 2 gets v2, unless ``v2_default=True``). The draft
may change in any release of the pinned schema (``docs/protocol-currency.md``).

This module is the v2 layer of the low tier, the mirror of :mod:`acpwire.agent.v1`:
neither imports the other; :mod:`acpwire.agent.connection`, above both, chooses.

v2 is not v1 with a new number (schema/v2):

* ``initialize`` carries ``info`` (required) and ``capabilities`` on both sides;
* ``session/prompt`` answers with the inserted user message's ``messageId`` once
  the prompt is accepted; the turn goes on, its updates and its end (an ``idle``
  ``state_update`` with the stop reason) come as ``session/update``. The handler
  returns when the prompt is accepted and leaves the rest to a task of its own;
* message chunks carry a ``messageId``; ``tool_call_update`` creates a tool call;
* ``fs/*``, ``terminal/*``, ``session/load`` and ``session/set_mode`` are gone,
  ``authenticate``/``logout`` became ``auth/login``/``auth/logout``, and
  ``tool_call/cancel`` and ``terminal/cancel`` are new.

Method names come from the v2 method table (:data:`acpwire.schema.methods.V2`); a
test checks that they match it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ..engine.connection import Connection
from ..engine.roles import Peer, build_router
from ..protocol.errors import InvalidParams, InvalidRequest, MethodNotFound
from ..protocol.version import V2_DRAFT
from ..schema import UnsetType, v2
from ..schema.methods import V2, MethodTable
from ..schema.stability import without_unstable

__all__ = ["AgentV2", "ClientPeerV2", "V2Layer", "default_info"]


def default_info(name: str = "acpwire") -> v2.Implementation:
    """An ``info`` naming ``name`` and acpwire's version (``info`` is required in v2)."""
    from .. import __version__

    return v2.Implementation(name=name, version=__version__)


class AgentV2:
    """Handler base for the agent role of the v2 draft; every method gets the decoded
    params model. Override what you support; the rest answer ``-32601``."""

    client: ClientPeerV2
    """The connected v2 client; set when a connection adopts this agent."""

    def on_connect(self, client: ClientPeerV2) -> None:
        """Called once when a connection starts serving this agent."""
        self.client = client

    async def initialize(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        """Answers version 2 with :func:`default_info`; override to advertise capabilities
        (``capabilities.session`` for the session methods) and auth methods."""
        return v2.InitializeResponse(protocol_version=V2_DRAFT, info=default_info())

    async def login(self, params: v2.LoginAuthRequest) -> v2.LoginAuthResponse | None:
        """``auth/login``: sign in with one of the advertised ``authMethods``."""
        raise MethodNotFound("auth/login is not supported by this agent")

    async def logout(self, params: v2.LogoutAuthRequest) -> v2.LogoutAuthResponse | None:
        """``auth/logout``; an agent without sign-in state has nothing to end (``{}``)."""
        return v2.LogoutAuthResponse()

    async def new_session(self, params: v2.NewSessionRequest) -> v2.NewSessionResponse:
        raise MethodNotFound("session/new is not supported by this agent")

    async def list_sessions(self, params: v2.ListSessionsRequest) -> v2.ListSessionsResponse:
        raise MethodNotFound("session/list is not supported by this agent")

    async def delete_session(
        self, params: v2.DeleteSessionRequest
    ) -> v2.DeleteSessionResponse | None:
        raise MethodNotFound("session/delete is not supported by this agent")

    async def resume_session(
        self, params: v2.ResumeSessionRequest
    ) -> v2.ResumeSessionResponse | None:
        """``session/resume``; with ``replayFrom`` the history is replayed first (v2's
        replacement for ``session/load``), then a current-state snapshot is sent."""
        raise MethodNotFound("session/resume is not supported by this agent")

    async def close_session(self, params: v2.CloseSessionRequest) -> v2.CloseSessionResponse | None:
        raise MethodNotFound("session/close is not supported by this agent")

    async def set_session_config_option(
        self, params: v2.SetSessionConfigOptionRequest
    ) -> v2.SetSessionConfigOptionResponse:
        raise MethodNotFound("session/set_config_option is not supported by this agent")

    async def prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        """``session/prompt``: answer with the user message's ``messageId`` once it is
        inserted in the conversation; run the turn in a task of your own."""
        raise MethodNotFound("session/prompt is not supported by this agent")

    async def cancel(self, params: v2.CancelSessionNotification) -> None:
        """``session/cancel``: stop the session's foreground work; it ends with an idle
        ``state_update`` whose stop reason is ``cancelled``."""

    async def cancel_tool_call(
        self, params: v2.CancelToolCallRequest
    ) -> v2.CancelToolCallResponse | None:
        """``tool_call/cancel``; answers ``-32602`` (the schema's answer for a tool call
        that is unknown or not cancellable) unless overridden."""
        raise InvalidParams(
            "the tool call is unknown or not cancellable", {"toolCallId": params.tool_call_id}
        )

    async def cancel_terminal(
        self, params: v2.CancelTerminalRequest
    ) -> v2.CancelTerminalResponse | None:
        """``terminal/cancel``; answers ``-32602`` unless overridden (as above)."""
        raise InvalidParams(
            "the terminal is unknown or not cancellable", {"terminalId": params.terminal_id}
        )

    async def ext_method(self, method: str, params: Any) -> Any:
        """An ``_``-prefixed request; unknown ones answer ``-32601``."""
        raise MethodNotFound(f"Method not found: {method}", {"method": method})

    async def ext_notification(self, method: str, params: Any) -> None:
        """An ``_``-prefixed notification; ignored unless overridden."""


class ClientPeerV2(Peer):
    """The v2 client, as the agent calls it. Gated methods check its capabilities first."""

    side = "client"
    info: v2.Implementation | None = None
    """The client's ``info`` from ``initialize``."""

    def __init__(self, connection: Connection, table: MethodTable = V2) -> None:
        super().__init__(connection, table)

    async def session_update(
        self, session_id: str, update: v2.SessionUpdate, *, meta: dict[str, Any] | None = None
    ) -> None:
        """One ``session/update`` notification."""
        await self._call(
            "session/update",
            v2.UpdateSessionNotification(
                session_id=session_id, update=update, meta=v2.UNSET if meta is None else meta
            ),
        )

    async def request_permission(
        self,
        session_id: str,
        title: str,
        options: Sequence[v2.PermissionOption],
        *,
        subject: v2.RequestPermissionSubject | None = None,
    ) -> v2.RequestPermissionResponse:
        """``session/request_permission``: v2 asks with a ``title`` and an optional
        ``subject`` (the tool call or command) instead of v1's ``toolCall``."""
        params = v2.RequestPermissionRequest(
            session_id=session_id,
            title=title,
            options=list(options),
            subject=v2.UNSET if subject is None else subject,
        )
        result: v2.RequestPermissionResponse = await self._call(
            "session/request_permission", params
        )
        return result

    async def create_elicitation(
        self, params: v2.CreateElicitationRequest
    ) -> v2.CreateElicitationResponse:
        mode = (
            "form"
            if isinstance(params, v2.ElicitationFormMode)
            else "url"
            if isinstance(params, v2.ElicitationUrlMode)
            else None
        )
        result: v2.CreateElicitationResponse = await self._call(
            "elicitation/create", params, mode=mode
        )
        return result

    async def complete_elicitation(self, elicitation_id: str) -> None:
        await self._call(
            "elicitation/complete",
            v2.CompleteElicitationNotification(elicitation_id=elicitation_id),
        )


class V2Layer:
    """The v2 draft on one agent connection: the routes to an :class:`AgentV2` and, once
    attached, the :class:`ClientPeerV2` its calls go through. Built only when an
    application passes ``v2=``; the connection above (:mod:`acpwire.agent.connection`)
    decides at ``initialize`` whether these routes or v1's serve it.

    ``initialize`` records the client's ``info`` and capabilities in the peer and always
    answers version 2; a repeated one must ask for 2 or later. ``session/prompt``
    remembers the session (a v2 turn outlives its request), so an interrupt knows what
    to cancel.
    """

    def __init__(self, agent: AgentV2) -> None:
        self.agent = agent
        self.router = build_router(
            agent,
            "agent",
            V2,
            overrides={"initialize": self._initialize_again, "session/prompt": self._prompt},
        )
        self._prompted: set[str] = set()

    def attach(self, connection: Connection, check_capabilities: bool) -> ClientPeerV2:
        """Make the client peer on ``connection`` and hand it to the agent."""
        client = self.client = ClientPeerV2(connection)
        client.check_capabilities = check_capabilities
        client.remote_capabilities = v2.ClientCapabilities()
        client.local_capabilities = v2.AgentCapabilities()
        self.agent.on_connect(client)
        return client

    async def initialize(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        """The agent's answer to a v2 ``initialize`` (the one that chose v2 or a repeat)."""
        params = msgspec.structs.replace(params, protocol_version=V2_DRAFT)
        caps = params.capabilities
        self.client.remote_capabilities = (
            v2.ClientCapabilities() if isinstance(caps, UnsetType) else caps
        )
        self.client.info = params.info
        response = await self.agent.initialize(params)
        if response.protocol_version != V2_DRAFT:
            response = msgspec.structs.replace(response, protocol_version=V2_DRAFT)
        # Unstable v2 is not routed: never advertise it.
        response = without_unstable(response, version=V2_DRAFT)
        own = response.capabilities
        self.client.local_capabilities = (
            v2.AgentCapabilities() if isinstance(own, UnsetType) else own
        )
        return response

    async def _initialize_again(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        # Routed once v2 was chosen: a repeat asks for the version the first one chose
        # (as the TypeScript SDK).
        if params.protocol_version < V2_DRAFT:
            raise InvalidRequest(
                f"Invalid request: a repeated initialize must request protocol version "
                f"{V2_DRAFT} or later"
            )
        return await self.initialize(params)

    async def _prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        self._prompted.add(params.session_id)
        return await self.agent.prompt(params)

    def prompted(self) -> list[str]:
        """The sessions that got a prompt on this connection (what an interrupt cancels)."""
        return sorted(self._prompted)

    async def cancel(self, session_id: str) -> None:
        """What ``session/cancel`` for ``session_id`` does."""
        await self.agent.cancel(v2.CancelSessionNotification(session_id=session_id))
