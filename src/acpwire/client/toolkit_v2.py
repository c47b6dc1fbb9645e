"""The :class:`~acpwire.client.toolkit.ToolkitClient` over the ACP v2 draft: the same
client whichever version the agent chose.

``ToolkitClient(protocol=2)`` offers v2 (and falls back to v1 when the agent answers
1). When the agent answers 2, its v1-shaped API keeps working:

* ``client.agent`` becomes a :class:`V2AgentAsV1`: the methods v2 has
  (``session/new``, ``session/prompt``, ``session/resume``, ...) go out as v2 and
  their answers come back as v1 models; ``session/load`` is v2's ``session/resume``
  with ``replayFrom: start``; what v2 removed (``session/set_mode``) raises
  :class:`~acpwire.protocol.errors.VersionMismatchError`, nothing sent.
* ``client.agent.initialize_response`` is a v1 *view* of the v2 answer
  (:func:`v1_initialize_view`): ``capabilities.session`` means the baseline methods
  (list, resume, close, and load through replay), ``session.prompt``/``session.mcp``
  become ``promptCapabilities``/``mcpCapabilities``, ``authMethods`` keep their ids.
  ``protocolVersion`` says 2.
* ``prompt()`` still returns when the turn ends: v2 answers ``session/prompt`` with
  the user message's id once it is inserted, and the turn ends with an ``idle``
  ``state_update`` carrying the stop reason, which is what ``prompt()`` returns.
* every v2 update is folded into the same :class:`~acpwire.client.state.SessionState`
  (:func:`fold`): chunks and whole-message upserts by ``messageId``, the user message
  the agent inserts taking over the prompt the client recorded, ``tool_call_update``
  creating tool calls, ``tool_call_content_chunk`` appending to them, ``plan_update``
  as the plan. Payloads v1 knows are held as v1 models; v2's diffs (paths, no text)
  stay as ``UnknownToolCallContent`` with their JSON; updates v1 has no place for
  (terminals, compaction, ...) go to ``other_updates`` as v2 models.
* permission and elicitation requests reach the client's policies as v1 requests
  (a v2 permission's ``title`` and ``subject`` become a tool call), and the answers
  go back as v2.

This module is the toolkit's v2 layer: it sees the toolkit only through its public API
(:class:`V1Toolkit`) and never imports it; the toolkit offers v2 and, when the agent
chooses it, puts a :class:`V2AgentAsV1` in place of its v1 agent peer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

import msgspec

from .. import schema as s
from ..protocol.errors import UnstableMethodError, VersionMismatchError
from ..protocol.version import V2_DRAFT
from ..schema import UNSET, UnsetType, unset_to_none, v2
from ..schema.methods import MethodSpec
from ..schema.v2.shapes import (
    auth_method_to_v1,
    command_to_v1,
    config_options_to_v1,
    to_v1,
    to_v2,
    tool_content_to_v1,
)
from .v1 import AgentPeer
from .v2 import AgentPeerV2, ClientV2

if TYPE_CHECKING:
    from .state import Role, SessionState

__all__ = ["ToolkitV2", "V1Toolkit", "V2AgentAsV1", "fold", "v1_initialize_view"]


def _marker(value: Any) -> dict[str, Any] | UnsetType:
    """A v1 support marker (``{}``) for a v2 one that is present."""
    return {} if value is not None and not isinstance(value, UnsetType) else UNSET


# ---------------------------------------------------------------------- initialize


def v1_initialize_view(answer: v2.InitializeResponse) -> s.InitializeResponse:
    """The v2 ``initialize`` answer as a v1 one (see the module text)."""
    caps = answer.capabilities if not isinstance(answer.capabilities, UnsetType) else None
    session = unset_to_none(caps.session) if caps is not None else None
    agent_caps = s.AgentCapabilities()
    if session is not None:
        prompt = unset_to_none(session.prompt)
        mcp = unset_to_none(session.mcp)
        agent_caps = s.AgentCapabilities(
            load_session=True,  # session/resume with replayFrom: start
            prompt_capabilities=s.PromptCapabilities(
                image=not isinstance(_marker(prompt.image), UnsetType),
                audio=not isinstance(_marker(prompt.audio), UnsetType),
                embedded_context=not isinstance(_marker(prompt.embedded_context), UnsetType),
            )
            if prompt is not None
            else UNSET,
            mcp_capabilities=s.McpCapabilities(http=not isinstance(_marker(mcp.http), UnsetType))
            if mcp is not None
            else UNSET,
            session_capabilities=s.SessionCapabilities(
                list=s.SessionListCapabilities(),
                resume=s.SessionResumeCapabilities(),
                close=s.SessionCloseCapabilities(),
                delete=s.SessionDeleteCapabilities()
                if not isinstance(_marker(session.delete), UnsetType)
                else UNSET,
                additional_directories=s.SessionAdditionalDirectoriesCapabilities()
                if not isinstance(_marker(session.additional_directories), UnsetType)
                else UNSET,
            ),
        )
    given = answer.auth_methods if not isinstance(answer.auth_methods, UnsetType) else []
    methods = [m for m in map(auth_method_to_v1, given) if m is not None]
    info = answer.info
    return s.InitializeResponse(
        protocol_version=V2_DRAFT,
        agent_capabilities=agent_caps,
        agent_info=s.Implementation(name=info.name, title=info.title, version=info.version),
        auth_methods=methods,
    )


def _v2_capabilities(caps: s.ClientCapabilities) -> v2.ClientCapabilities:
    """What a v1 client serves, in v2 terms: its elicitation and terminal sign-in (files
    and terminals are not part of v2)."""
    auth = unset_to_none(caps.auth)
    elicitation = unset_to_none(caps.elicitation)
    return v2.ClientCapabilities(
        auth=v2.ClientAuthCapabilities(terminal=v2.TerminalAuthCapabilities())
        if auth is not None and auth.terminal is True
        else UNSET,
        elicitation=UNSET
        if elicitation is None
        else to_v2(elicitation, v2.ElicitationCapabilities),
    )


class V1Toolkit(Protocol):
    """What :class:`ToolkitV2` uses of the :class:`~acpwire.client.toolkit.ToolkitClient`
    it serves v2 for: its public API, as a v1 client."""

    def capabilities(self) -> s.ClientCapabilities: ...

    def state_for(self, session_id: str) -> SessionState: ...

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse: ...

    async def create_elicitation(
        self, params: s.CreateElicitationRequest
    ) -> s.CreateElicitationResponse: ...

    async def complete_elicitation(self, params: s.CompleteElicitationNotification) -> None: ...

    async def v2_update_folded(self, params: v2.UpdateSessionNotification) -> None: ...


# ---------------------------------------------------------------------- the agent, v1-shaped


class V2AgentAsV1(AgentPeer):
    """A v2 agent behind the v1 :class:`~acpwire.client.v1.AgentPeer` API the
    toolkit uses (see the module text)."""

    def __init__(self, agent: AgentPeerV2, handler: ToolkitV2) -> None:
        super().__init__(agent.connection)
        self.v2 = agent
        self.handler = handler
        answer = agent.initialize_response
        assert answer is not None
        self.initialize_response = v1_initialize_view(answer)
        self.remote_capabilities = self.initialize_response.agent_capabilities
        self.check_capabilities = agent.check_capabilities

    def _spec(self, method: str, request: bool | None = None) -> MethodSpec:
        raise VersionMismatchError(f"{method} is not part of ACP v2, which this connection speaks")

    async def authenticate(self, method_id: str) -> s.AuthenticateResponse:
        await self.v2.login(method_id)
        return s.AuthenticateResponse()

    async def logout(self) -> s.LogoutResponse:
        await self.v2.logout()
        return s.LogoutResponse()

    async def new_session(
        self,
        cwd: str,
        mcp_servers: Sequence[s.McpServer] = (),
        *,
        additional_directories: Sequence[str] | None = None,
    ) -> s.NewSessionResponse:
        answer = await self.v2.new_session(
            cwd, _servers(mcp_servers), additional_directories=additional_directories
        )
        return s.NewSessionResponse(
            session_id=answer.session_id, config_options=_options(answer.config_options)
        )

    async def load_session(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: Sequence[s.McpServer] = (),
        *,
        additional_directories: Sequence[str] | None = None,
    ) -> s.LoadSessionResponse:
        answer = await self.v2.resume_session(
            session_id,
            cwd,
            _servers(mcp_servers),
            additional_directories=additional_directories,
            replay=True,
        )
        return s.LoadSessionResponse(config_options=_options(answer.config_options))

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        mcp_servers: Sequence[s.McpServer] | None = None,
        *,
        additional_directories: Sequence[str] | None = None,
    ) -> s.ResumeSessionResponse:
        answer = await self.v2.resume_session(
            session_id,
            cwd,
            None if mcp_servers is None else _servers(mcp_servers),
            additional_directories=additional_directories,
        )
        return s.ResumeSessionResponse(config_options=_options(answer.config_options))

    async def list_sessions(
        self, *, cwd: str | None = None, cursor: str | None = None, archived: str | None = None
    ) -> s.ListSessionsResponse:
        if archived is not None:
            raise UnstableMethodError(
                "the archived filter of session/list is unstable v1 ACP; this connection "
                "speaks the v2 draft"
            )
        return to_v1(await self.v2.list_sessions(cwd=cwd, cursor=cursor), s.ListSessionsResponse)

    async def close_session(self, session_id: str) -> s.CloseSessionResponse:
        await self.v2.close_session(session_id)
        return s.CloseSessionResponse()

    async def delete_session(self, session_id: str) -> s.DeleteSessionResponse:
        await self.v2.delete_session(session_id)
        return s.DeleteSessionResponse()

    async def set_session_config_option(
        self, session_id: str, config_id: str, value: str | bool
    ) -> s.SetSessionConfigOptionResponse:
        answer = await self.v2.set_session_config_option(session_id, config_id, value)
        return s.SetSessionConfigOptionResponse(
            config_options=_options(answer.config_options) or []
        )

    async def prompt(
        self, session_id: str, prompt: str | Sequence[s.ContentBlock]
    ) -> s.PromptResponse:
        """Send the prompt and wait for the ``idle`` state that ends the turn."""
        blocks: str | list[v2.ContentBlock] = (
            prompt if isinstance(prompt, str) else [_v2_block(b) for b in prompt]
        )
        ended = self.handler.expect_turn_end(session_id)
        try:
            await self.v2.prompt(session_id, blocks)
            stop_reason = await ended
        finally:
            self.handler.forget_turn(session_id, ended)
        return s.PromptResponse(stop_reason=stop_reason or "end_turn")

    async def cancel(self, session_id: str) -> None:
        await self.v2.cancel(session_id)


def _v2_block(block: s.ContentBlock) -> v2.ContentBlock:
    return cast("v2.ContentBlock", s.convert(s.to_json(block), v2.ContentBlock))  # type: ignore[arg-type]


def _servers(servers: Sequence[s.McpServer]) -> list[v2.McpServer]:
    return [to_v2(server, v2.McpServer) for server in servers]


def _options(options: Any) -> list[s.SessionConfigOption] | UnsetType:
    if isinstance(options, UnsetType) or options is None:
        return UNSET
    return config_options_to_v1(options)


# ---------------------------------------------------------------------- the handler


class ToolkitV2(ClientV2):
    """The toolkit's v2 handler: updates folded into its session states, permission and
    elicitation requests answered by its policies (see the module text)."""

    def __init__(self, toolkit: V1Toolkit) -> None:
        self.toolkit = toolkit
        self._turns: dict[str, list[asyncio.Future[str | None]]] = {}
        """Session id -> the prompts waiting for its turn to end (a refused second prompt
        must not take the running turn's end away from the first)."""
        self._permissions = 0

    def capabilities(self) -> v2.ClientCapabilities:
        return _v2_capabilities(self.toolkit.capabilities())

    def expect_turn_end(self, session_id: str) -> asyncio.Future[str | None]:
        """A future the next end of ``session_id``'s turn resolves with its stop reason."""
        ended: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._turns.setdefault(session_id, []).append(ended)
        return ended

    def forget_turn(self, session_id: str, ended: asyncio.Future[str | None]) -> None:
        waiting = self._turns.get(session_id, [])
        if ended in waiting:
            waiting.remove(ended)
        if not waiting:
            self._turns.pop(session_id, None)

    async def session_update(self, params: v2.UpdateSessionNotification) -> None:
        update = params.update
        state = self.toolkit.state_for(params.session_id)
        ends = fold(state, update)
        if isinstance(update, v2.SessionStateUpdate) and (
            ends or (update.state == "idle" and isinstance(update.stop_reason, str))
        ):
            # (A stop reason ends the turn even when a refused second prompt already
            # marked the state's turn over.)
            for ended in self._turns.get(params.session_id, []):
                if not ended.done():
                    ended.set_result(unset_to_none(update.stop_reason))
        await self.toolkit.v2_update_folded(params)

    async def request_permission(
        self, params: v2.RequestPermissionRequest
    ) -> v2.RequestPermissionResponse:
        subject = unset_to_none(params.subject)
        if isinstance(subject, v2.ToolCallPermissionSubject):
            tool_call = _tool_call(subject.tool_call)
        else:
            self._permissions += 1
            tool_call_id = (
                subject.tool_call_id
                if isinstance(subject, v2.CommandPermissionSubject)
                and isinstance(subject.tool_call_id, str)
                else f"permission-{self._permissions}"
            )
            raw = (
                {"command": subject.command, "cwd": subject.cwd}
                if isinstance(subject, v2.CommandPermissionSubject)
                else UNSET
            )
            tool_call = s.ToolCallUpdate(
                tool_call_id=tool_call_id,
                title=params.title,
                kind="execute" if raw else UNSET,
                raw_input=raw,
            )
        request = s.RequestPermissionRequest(
            session_id=params.session_id,
            tool_call=tool_call,
            options=[to_v1(o, s.PermissionOption) for o in params.options],
        )
        answer = await self.toolkit.request_permission(request)
        return to_v2(answer, v2.RequestPermissionResponse)

    async def create_elicitation(
        self, params: v2.CreateElicitationRequest
    ) -> v2.CreateElicitationResponse:
        try:
            request = cast(
                "s.CreateElicitationRequest",
                s.convert(s.to_json(params), s.CreateElicitationRequest),  # type: ignore[arg-type]
            )
        except msgspec.ValidationError:
            return v2.ElicitationDeclineAction()
        answer = await self.toolkit.create_elicitation(request)
        return cast("v2.CreateElicitationResponse", to_v2(answer, v2.CreateElicitationResponse))

    async def complete_elicitation(self, params: v2.CompleteElicitationNotification) -> None:
        await self.toolkit.complete_elicitation(
            s.CompleteElicitationNotification(elicitation_id=params.elicitation_id)
        )


# ---------------------------------------------------------------------- folding


_ROLES: dict[type[Any], Role] = {}


def _role(update: object) -> Role | None:
    if not _ROLES:
        _ROLES.update(
            {
                v2.UserMessageChunk: "user",
                v2.UserMessage: "user",
                v2.AgentMessageChunk: "agent",
                v2.AgentMessage: "agent",
                v2.AgentThoughtChunk: "thought",
                v2.AgentThought: "thought",
            }
        )
    return _ROLES.get(type(update))


def _block(block: v2.ContentBlock) -> s.ContentBlock:
    return cast("s.ContentBlock", to_v1(block, s.ContentBlock))


def _tool_call(update: v2.ToolCallUpdate) -> s.ToolCallUpdate:
    raw = s.to_json(update)
    content = raw.pop("content", UNSET)
    raw.pop("sessionUpdate", None)
    call = s.convert(raw, s.ToolCallUpdate)
    if isinstance(content, list) and not isinstance(update.content, UnsetType):
        items = [tool_content_to_v1(i) for i in update.content or []]
        call = msgspec.structs.replace(call, content=items)
    elif content is None:
        call = msgspec.structs.replace(call, content=None)
    return call


def fold(state: SessionState, update: v2.SessionUpdate) -> bool:
    """Fold one v2 update into ``state``; True when it ends the turn that is running."""
    role = _role(update)
    if role is not None:
        if isinstance(update, (v2.UserMessageChunk, v2.AgentMessageChunk, v2.AgentThoughtChunk)):
            state.add_chunk(role, update.message_id, _block(update.content))
        elif isinstance(update, (v2.UserMessage, v2.AgentMessage, v2.AgentThought)):
            content = update.content
            state.upsert_message(
                role,
                update.message_id,
                content
                if isinstance(content, UnsetType) or content is None
                else [_block(b) for b in content],
            )
        return False
    if isinstance(update, v2.SessionStateUpdate):
        return state.set_foreground(update.state, unset_to_none(update.stop_reason))
    if isinstance(update, v2.ToolCallProgress):
        state.apply(s.ToolCallProgress(**_fields(_tool_call(update))))
    elif isinstance(update, v2.ToolCallContentChunk):
        state.append_tool_call_content(update.tool_call_id, tool_content_to_v1(update.content))
    elif isinstance(update, v2.PlanUpdate) and isinstance(update.plan, v2.PlanItems):
        state.apply(s.PlanUpdate(entries=[to_v1(e, s.PlanEntry) for e in update.plan.entries]))
    elif isinstance(update, v2.AvailableCommandsUpdate):
        state.apply(
            s.AvailableCommandsUpdate(
                available_commands=[command_to_v1(c) for c in update.available_commands]
            )
        )
    elif isinstance(update, v2.ConfigOptionUpdate):
        state.apply(
            s.ConfigOptionUpdate(config_options=config_options_to_v1(update.config_options))
        )
    elif isinstance(update, (v2.SessionInfoUpdate, v2.UsageUpdate, v2.Notice)):
        state.apply(to_v1(update, s.SessionUpdate))
    elif isinstance(update, v2.UnknownSessionUpdate):
        state.apply(s.UnknownSessionUpdate(update.tag, update.raw))
    else:
        state.keep_other(update)  # terminals, compaction, ...: v1 has no place for them
    return False


def _fields(call: s.ToolCallUpdate) -> dict[str, Any]:
    return {f: getattr(call, f) for f in call.__struct_fields__}
