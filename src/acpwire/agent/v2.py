"""The agent role of the ACP v2 *draft*, low tier: one handler method per client->agent
method of the v2 table, and a typed peer for calling the client.

Opt-in, next to a v1 agent: ``AgentSideConnection(agent, transport, v2=MyAgentV2())``
serves a v1 client with ``agent`` and a client that asks for version 2 with the
:class:`AgentV2` (see :mod:`acpwire.protocol.version` for the choice: only a request
for exactly 2 gets v2, unless ``v2_default=True``). The draft
may change in any release of the pinned schema (``docs/protocol-currency.md``).

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

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from .. import schema as s
from ..engine.connection import Connection
from ..engine.roles import Peer, build_router
from ..protocol.errors import InvalidParams, InvalidRequest, MethodNotFound
from ..protocol.version import (
    PROTOCOL_VERSION,
    V2_DRAFT,
    requested_version,
    select_version,
    v2_initialize_params,
)
from ..schema import UnsetType, v2
from ..schema.methods import V2, MethodTable
from ..schema.stability import without_unstable

if TYPE_CHECKING:
    from .connection import AgentSideConnection

__all__ = ["AgentV2", "ClientPeerV2", "V2Half", "default_info"]

log = logging.getLogger("acpwire.agent")


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


class V2Half:
    """The v2 half of an :class:`~acpwire.agent.connection.AgentSideConnection` that
    serves both versions: the negotiating ``initialize``, the v2 routes and the v2
    client peer. Built only when an application passes ``v2=``."""

    def __init__(
        self,
        owner: AgentSideConnection,
        agent: AgentV2,
        *,
        initialize_v1: Callable[[s.InitializeRequest], Awaitable[s.InitializeResponse]],
    ) -> None:
        self.owner = owner
        self.agent = agent
        self._initialize_v1 = initialize_v1
        self.router = build_router(
            agent,
            "agent",
            V2,
            overrides={"initialize": self.initialize, "session/prompt": self.prompt},
        )
        self.prompted: set[str] = set()
        """Sessions that got a prompt on this connection (a v2 turn outlives its request)."""

    def attach(self, connection: Connection, check_capabilities: bool) -> None:
        self.client = ClientPeerV2(connection)
        self.client.check_capabilities = check_capabilities
        self.client.remote_capabilities = v2.ClientCapabilities()
        self.client.local_capabilities = v2.AgentCapabilities()
        self.agent.on_connect(self.client)

    async def negotiate(self, raw: Any) -> Any:
        """``initialize`` while the version is open: pick it, answer in it, swap routes
        (before the answer goes out, so the client's next request meets them)."""
        requested = requested_version(raw)
        version = select_version(
            requested, (PROTOCOL_VERSION, V2_DRAFT), draft_default=self.owner.v2_default
        )
        if version == V2_DRAFT:
            params = _decode(v2_initialize_params(raw, requested), v2.InitializeRequest)
            response: Any = await self.initialize(params)
        else:
            response = await self._initialize_v1(_decode(raw, s.InitializeRequest))
        self.owner.chose(version)
        return response

    async def initialize(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        """A v2 ``initialize``: the first one (from :meth:`negotiate`) or a repeat."""
        if self.owner.version == V2_DRAFT and params.protocol_version < V2_DRAFT:
            # A repeat asks for the version the first one chose (as the TypeScript SDK).
            raise InvalidRequest(
                f"Invalid request: a repeated initialize must request protocol version "
                f"{V2_DRAFT} or later"
            )
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

    async def prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        self.prompted.add(params.session_id)
        return await self.agent.prompt(params)

    async def interrupt(self) -> None:
        """What ``session/cancel`` does, for every session that got a prompt."""
        for session_id in sorted(self.prompted):
            try:
                await self.agent.cancel(v2.CancelSessionNotification(session_id=session_id))
            except Exception:
                log.exception("cancelling session %s on interrupt failed", session_id)


def _decode(raw: Any, model: type[Any]) -> Any:
    try:
        return s.convert(raw, model)
    except msgspec.ValidationError as exc:
        raise InvalidParams("invalid initialize params", {"message": str(exc)}) from None
