"""An :class:`~acpwire.agent.app.AgentApp` serving v2-draft clients (``AgentApp(v2=True)``).

The app stays written against v1: its handlers, turns, tools and stores do not know
which version the client chose. On a connection whose ``initialize`` chose v2,
:class:`AppAgentV2` answers the v2 methods with the connection's
:class:`~acpwire.agent.runtime.AppAgent`, and the agent's view of the client becomes
a :class:`V1ClientOverV2`, which says in v2 what the app says in v1:

* ``initialize``: v2's ``info`` and ``capabilities`` from the app's v1 answer
  (``capabilities.session`` for the baseline session methods, prompt content and MCP
  transports inside it; ``authMethods`` with v2's ``methodId``); the client's v2
  capabilities become a v1 view (no files, no terminals: v2 has neither; boolean
  config options, which v2 always has);
* ``session/prompt`` answers with the user message's ``messageId`` once the prompt is
  accepted (the v1 checks: signed in, session open, content allowed, no turn running;
  a refused prompt is an error answer as in v1). The user message then goes out as a
  ``user_message`` update, the turn runs after the answer between a ``running`` and an
  ``idle`` ``state_update``; the idle one carries the stop reason (``error`` with the
  JSON-RPC error when the handler failed). A permission request is framed by
  ``requires_action`` and ``running``;
* updates: message chunks keep the turn's ``messageId`` (v2 requires one), ``tool_call``
  and ``tool_call_update`` become v2's ``tool_call_update``, the plan a ``plan_update``,
  config options and commands their v2 shapes; ``current_mode_update`` is dropped (the
  mode is also the ``mode`` config option, whose update goes out);
* ``session/resume`` is v2's baseline: it reopens a session the app's store holds (the
  in-memory store too, while the process lives) and with ``replayFrom`` replays its
  history first, then sends the ``idle`` state snapshot; ``auth/login`` is v1's
  ``authenticate``.

The v2 models load only for applications that opt in.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import TYPE_CHECKING, Any, cast

import msgspec

from .. import schema as s
from .._tasks import TaskSet
from ..engine.connection import Connection
from ..protocol.errors import (
    ConnectionClosedError,
    ErrorCode,
    InvalidParams,
    RequestError,
    VersionMismatchError,
)
from ..protocol.version import V2_DRAFT
from ..schema import UNSET, UnsetType, unset_to_none, v2
from ..schema.methods import V1
from ..schema.v2.shapes import (
    auth_method_to_v2,
    config_options_to_v2,
    session_update_to_v2,
    to_v1,
    to_v2,
    tool_call_to_v2,
)
from .v1 import ClientPeer
from .v2 import AgentV2, ClientPeerV2

if TYPE_CHECKING:
    from .runtime import AppAgent
    from .sessions import Session
    from .turn import Turn

__all__ = ["AppAgentV2", "V1ClientOverV2", "client_capabilities_v1", "initialize_to_v2"]

log = logging.getLogger("acpwire.agent")


# ---------------------------------------------------------------------- initialize


def client_capabilities_v1(caps: v2.ClientCapabilities | UnsetType) -> s.ClientCapabilities:
    """What a v2 client can do, as a v1 agent reads it: no files or terminals (v2 has
    neither), boolean config options (v2 always has them), its sign-in and elicitation."""
    given = caps if isinstance(caps, v2.ClientCapabilities) else v2.ClientCapabilities()
    auth = unset_to_none(given.auth)
    elicitation = unset_to_none(given.elicitation)
    return s.ClientCapabilities(
        fs=s.FileSystemCapabilities(read_text_file=False, write_text_file=False),
        terminal=False,
        session=s.ClientSessionCapabilities(
            config_options=s.SessionConfigOptionsCapabilities(
                boolean=s.BooleanConfigOptionCapabilities()
            )
        ),
        auth=s.AuthCapabilities(
            terminal=auth is not None and unset_to_none(auth.terminal) is not None
        ),
        elicitation=UNSET if elicitation is None else to_v1(elicitation, s.ElicitationCapabilities),
    )


def _marker(flag: object, model: type[Any]) -> Any:
    return model() if flag is True else UNSET


def initialize_to_v2(answer: s.InitializeResponse, *, mcp_stdio: bool) -> v2.InitializeResponse:
    """A v1 agent's ``initialize`` answer as v2 says it (see the module text)."""
    caps = answer.agent_capabilities
    caps = caps if isinstance(caps, s.AgentCapabilities) else s.AgentCapabilities()
    prompt = unset_to_none(caps.prompt_capabilities) or s.PromptCapabilities()
    mcp = unset_to_none(caps.mcp_capabilities) or s.McpCapabilities()
    session = unset_to_none(caps.session_capabilities) or s.SessionCapabilities()
    info = unset_to_none(answer.agent_info) or s.Implementation(name="acpwire", version="0")
    given: list[s.AuthMethod] = unset_to_none(answer.auth_methods) or []
    methods = [auth_method_to_v2(m) for m in given]
    return v2.InitializeResponse(
        protocol_version=V2_DRAFT,
        info=v2.Implementation(name=info.name, title=info.title, version=info.version),
        capabilities=v2.AgentCapabilities(
            session=v2.SessionCapabilities(
                prompt=v2.PromptCapabilities(
                    image=_marker(prompt.image, v2.PromptImageCapabilities),
                    audio=_marker(prompt.audio, v2.PromptAudioCapabilities),
                    embedded_context=_marker(
                        prompt.embedded_context, v2.PromptEmbeddedContextCapabilities
                    ),
                ),
                mcp=v2.McpCapabilities(
                    stdio=_marker(mcp_stdio, v2.McpStdioCapabilities),
                    http=_marker(mcp.http, v2.McpHttpCapabilities),
                ),
                delete=v2.SessionDeleteCapabilities()
                if unset_to_none(session.delete) is not None
                else UNSET,
                additional_directories=v2.SessionAdditionalDirectoriesCapabilities()
                if unset_to_none(session.additional_directories) is not None
                else UNSET,
            )
        ),
        auth_methods=[m for m in methods if m is not None],
    )


def _mcp_servers_v1(servers: list[v2.McpServer] | UnsetType) -> list[s.McpServer]:
    """v2 tags a stdio server ``type: stdio``; v1's stdio servers carry no type."""
    out: list[s.McpServer] = []
    for server in [] if isinstance(servers, UnsetType) else servers:
        raw: dict[str, Any] = s.to_json(server)
        if raw.get("type") == "stdio":
            del raw["type"]
        try:
            out.append(cast("s.McpServer", s.convert(raw, s.McpServer)))  # type: ignore[arg-type]
        except msgspec.ValidationError as exc:
            raise InvalidParams(
                "an MCP server v1 agents cannot use", {"message": str(exc)}
            ) from None
    return out


# ---------------------------------------------------------------------- the client, as v1


class _V2Wire:
    """The connection as the v1 agent's code uses it directly: ``session/update``
    payloads (history replay) are said in v2; other v1 messages cannot go out."""

    def __init__(self, client: V1ClientOverV2, connection: Connection) -> None:
        self._client = client
        self._connection = connection

    async def notify(self, method: str, params: Any) -> None:
        if method != "session/update":
            raise VersionMismatchError(f"{method} is not sent on a connection that chose ACP v2")
        raw: Any = s.to_json(params) if isinstance(params, s.SessionNotification) else params
        note = s.convert(raw, s.SessionNotification)
        meta = UNSET if note.meta is None else note.meta
        await self._client.session_update(note.session_id, note.update, meta=meta)

    async def request(self, method: str, params: Any, result: Any = None) -> Any:
        raise VersionMismatchError(f"{method} is not sent on a connection that chose ACP v2")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


class V1ClientOverV2(ClientPeer):
    """The v2 client as a v1 agent calls it (see the module text). Files and terminals
    are refused before anything is sent (the v1 view of the client has neither)."""

    def __init__(self, peer: ClientPeerV2) -> None:
        super().__init__(cast("Connection", _V2Wire(self, peer.connection)), V1)
        self.v2 = peer
        self.remote_capabilities = client_capabilities_v1(UNSET)
        self.local_capabilities = s.AgentCapabilities()
        self._chunks: dict[str, tuple[type[Any], str]] = {}
        """Session id -> the kind and id of the last message chunk (for chunks without one)."""

    def _message_id(self, session_id: str, update: s.SessionUpdate) -> str:
        kinds = (s.UserMessageChunk, s.AgentMessageChunk, s.AgentThoughtChunk)
        if not isinstance(update, kinds):
            self._chunks.pop(session_id, None)
            return ""
        last = self._chunks.get(session_id)
        if isinstance(update.message_id, str):
            mid = update.message_id
        elif last is not None and last[0] is type(update):
            mid = last[1]
        else:
            mid = f"msg_{uuid.uuid4().hex}"
        self._chunks[session_id] = (type(update), mid)
        return mid

    async def session_update(
        self, session_id: str, update: s.SessionUpdate, *, meta: dict[str, Any] | UnsetType = UNSET
    ) -> None:
        converted = session_update_to_v2(update, self._message_id(session_id, update))
        if converted is None:
            log.debug("no v2 form for a %s update; not sent", type(update).__name__)
            return
        await self.v2.session_update(session_id, converted, meta=unset_to_none(meta))

    async def state(self, session_id: str, state: str, **fields: Any) -> None:
        """A ``state_update`` (``running``, ``requires_action``, ``idle``)."""
        await self.v2.session_update(session_id, v2.SessionStateUpdate(state=state, **fields))

    async def request_permission(
        self,
        session_id: str,
        tool_call: s.ToolCallUpdate,
        options: Any,
    ) -> s.RequestPermissionResponse:
        raw: dict[str, Any] = s.to_json(tool_call_to_v2(tool_call))
        raw.pop("sessionUpdate", None)
        title = tool_call.title if isinstance(tool_call.title, str) else "Permission"
        await self.state(session_id, "requires_action")
        try:
            answer = await self.v2.request_permission(
                session_id,
                title,
                [to_v2(o, v2.PermissionOption) for o in options],
                subject=v2.ToolCallPermissionSubject(tool_call=s.convert(raw, v2.ToolCallUpdate)),
            )
        finally:
            with contextlib.suppress(ConnectionClosedError, OSError):
                await self.state(session_id, "running")
        return to_v1(answer, s.RequestPermissionResponse)

    async def create_elicitation(
        self, params: s.CreateElicitationRequest
    ) -> s.CreateElicitationResponse:
        request = cast(
            "v2.CreateElicitationRequest",
            to_v2(params, v2.CreateElicitationRequest),
        )
        answer = await self.v2.create_elicitation(request)
        return cast("s.CreateElicitationResponse", to_v1(answer, s.CreateElicitationResponse))

    async def complete_elicitation(self, elicitation_id: str) -> None:
        await self.v2.complete_elicitation(elicitation_id)


# ---------------------------------------------------------------------- the agent


class AppAgentV2(AgentV2):
    """The v2 routes of an :class:`~acpwire.agent.app.AgentApp` connection, answered by
    its :class:`~acpwire.agent.runtime.AppAgent` (see the module text)."""

    def __init__(self, agent: AppAgent) -> None:
        self.agent = agent
        self._turns = TaskSet(log)
        """The turns running past their prompt's answer (never closed here: the runtime's
        connection watch ends them, as it does v1's turns)."""

    def on_connect(self, client: ClientPeerV2) -> None:
        super().on_connect(client)
        self.view = V1ClientOverV2(client)

    async def initialize(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        view = self.view
        view.remote_capabilities = client_capabilities_v1(params.capabilities)
        info = params.info
        view.client_info = s.Implementation(name=info.name, title=info.title, version=info.version)
        self.agent.on_connect(view)  # the app's sessions talk to the v2 client from now on
        answer = await self.agent.initialize(
            s.InitializeRequest(protocol_version=1, client_capabilities=view.remote_capabilities)
        )
        own = answer.agent_capabilities
        view.local_capabilities = own if isinstance(own, s.AgentCapabilities) else UNSET
        return initialize_to_v2(answer, mcp_stdio=self.agent.app.mcp_support.enabled)

    async def login(self, params: v2.LoginAuthRequest) -> v2.LoginAuthResponse:
        await self.agent.authenticate(s.AuthenticateRequest(method_id=params.method_id))
        return v2.LoginAuthResponse()

    async def logout(self, params: v2.LogoutAuthRequest) -> v2.LogoutAuthResponse:
        await self.agent.logout(s.LogoutRequest())
        return v2.LogoutAuthResponse()

    async def new_session(self, params: v2.NewSessionRequest) -> v2.NewSessionResponse:
        answer = await self.agent.new_session(
            s.NewSessionRequest(
                cwd=params.cwd,
                additional_directories=params.additional_directories,
                mcp_servers=_mcp_servers_v1(params.mcp_servers),
            )
        )
        return v2.NewSessionResponse(
            session_id=answer.session_id, config_options=_options(answer.config_options)
        )

    async def list_sessions(self, params: v2.ListSessionsRequest) -> v2.ListSessionsResponse:
        answer = await self.agent.list_sessions(to_v1(params, s.ListSessionsRequest))
        return to_v2(answer, v2.ListSessionsResponse)

    async def delete_session(self, params: v2.DeleteSessionRequest) -> v2.DeleteSessionResponse:
        await self.agent.delete_session(s.DeleteSessionRequest(session_id=params.session_id))
        return v2.DeleteSessionResponse()

    async def close_session(self, params: v2.CloseSessionRequest) -> v2.CloseSessionResponse:
        await self.agent.close_session(s.CloseSessionRequest(session_id=params.session_id))
        return v2.CloseSessionResponse()

    async def resume_session(self, params: v2.ResumeSessionRequest) -> v2.ResumeSessionResponse:
        agent = self.agent
        await agent.require_sign_in()
        session = await agent.reopen(
            params.session_id,
            params.cwd,
            unset_to_none(params.additional_directories) or [],
            _mcp_servers_v1(params.mcp_servers),
        )
        if unset_to_none(params.replay_from) is not None:
            await session.replay()
        # The current-state snapshot: no turn runs in a session just reopened here.
        await self.view.state(session.id, "idle")
        return v2.ResumeSessionResponse(config_options=_options(session.config_options()))

    async def set_session_config_option(
        self, params: v2.SetSessionConfigOptionRequest
    ) -> v2.SetSessionConfigOptionResponse:
        answer = await self.agent.set_session_config_option(
            s.SetSessionConfigOptionRequest(
                session_id=params.session_id,
                config_id=params.config_id,
                value=params.value,
                type=params.type,
            )
        )
        return v2.SetSessionConfigOptionResponse(
            config_options=config_options_to_v2(answer.config_options)
        )

    async def prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        prompt = [cast("s.ContentBlock", to_v1(b, s.ContentBlock)) for b in params.prompt]
        session, turn = await self.agent.accept_prompt(params.session_id, prompt)
        message_id = f"msg_{uuid.uuid4().hex}"
        try:
            await self.client.session_update(
                session.id, v2.UserMessage(message_id=message_id, content=params.prompt)
            )
        except BaseException:
            self.agent.drop_turn(session.id)
            raise
        self._turns.spawn(self._run(session, turn, message_id), name=f"turn {session.id}")
        # The turn is no request the engine cancels when the connection ends: the watch does.
        self.agent.watch_connection()
        return v2.PromptResponse(message_id=message_id)

    async def _run(self, session: Session, turn: Turn, message_id: str) -> None:
        """The turn after the prompt's answer, between ``running`` and ``idle``."""
        idle: dict[str, Any]
        try:
            await self.view.state(session.id, "running")
            idle = {"stop_reason": await self.agent.run_turn(session, turn, message_id)}
        except (ConnectionClosedError, OSError):
            return
        except RequestError as exc:
            idle = {"stop_reason": "error", "error": _error(exc.code, exc.message, exc.data)}
        except Exception as exc:
            log.exception("the turn of session %s failed", session.id)
            idle = {"stop_reason": "error", "error": _error(ErrorCode.INTERNAL_ERROR, str(exc))}
        with contextlib.suppress(ConnectionClosedError, OSError):
            await self.view.state(session.id, "idle", **idle)

    async def cancel(self, params: v2.CancelSessionNotification) -> None:
        await self.agent.cancel(s.CancelNotification(session_id=params.session_id))

    async def ext_method(self, method: str, params: Any) -> Any:
        return await self.agent.ext_method(method, params)

    async def ext_notification(self, method: str, params: Any) -> None:
        await self.agent.ext_notification(method, params)


def _options(options: list[s.SessionConfigOption] | UnsetType | None) -> Any:
    return (
        UNSET
        if options is None or isinstance(options, UnsetType)
        else config_options_to_v2(options)
    )


def _error(code: int, message: str, data: Any = None) -> v2.Error:
    return v2.Error(code=code, message=message, data=UNSET if data is None else data)
