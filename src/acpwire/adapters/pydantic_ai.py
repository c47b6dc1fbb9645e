"""A pydantic-ai ``Agent`` as an ACP agent: ``agent_app(agent).run()``.

Each prompt is one ``agent.run()`` with the session's message history, streamed
through an event handler into the turn (:mod:`acpwire.adapters.bridge` has the
rules every adapter shares):

* text and thinking parts stream as message and thought chunks;
* function tool calls become ACP tool calls (kind from the tool's name or
  ``tool_kinds``, arguments as ``rawInput``, the return as content);
* tools that need approval (``requires_approval=True``, ``ApprovalRequired``) are
  answered inside the run by a ``HandleDeferredToolCalls`` capability that asks
  the user on the call's report: allowed runs it, rejected returns
  ``ToolDenied`` to the model;
* the client's files, terminals and MCP servers are offered as one extra toolset
  of the run (:func:`~acpwire.adapters.bridge.client_tools`);
* the message history is kept in the session's state (``pydantic_ai`` key, the
  JSON form of ``ModelMessagesTypeAdapter``), saved with the session by the app's
  store, so ``session/load`` and ``session/resume`` go on with the same
  conversation after a restart; a cancelled run keeps what it had done
  (``RunCancelled.all_messages()``);
* usage limits end the turn ``max_turn_requests`` (request limits) or
  ``max_tokens`` (token limits), a content filter ``refusal``, any other error of
  the run a clear error answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, Mapping
from typing import Any

try:
    from pydantic_ai import (
        BinaryContent,
        DeferredToolRequests,
        DeferredToolResults,
        FunctionToolResultEvent,
        FunctionToolset,
        PartDeltaEvent,
        PartStartEvent,
        RunCancelled,
        TextPart,
        TextPartDelta,
        ThinkingPart,
        ThinkingPartDelta,
        Tool,
        ToolDenied,
    )
    from pydantic_ai.agent import AbstractAgent
    from pydantic_ai.capabilities import HandleDeferredToolCalls
    from pydantic_ai.exceptions import ContentFilterError, UsageLimitExceeded
    from pydantic_ai.messages import FunctionToolCallEvent, ModelMessage, ModelMessagesTypeAdapter
    from pydantic_ai.tools import RunContext
except ImportError as exc:  # pragma: no cover - depends on the environment
    from .bridge import missing_framework

    raise missing_framework("pydantic-ai", "pydantic-ai", "pydantic_ai") from exc

from .. import schema as s
from ..agent.app import AgentApp
from ..agent.turn import StopReason, Turn
from .bridge import ClientTool, TurnBridge, client_tools, framework_error

__all__ = ["STATE_KEY", "PydanticAIAdapter", "agent_app"]

STATE_KEY = "pydantic_ai"
"""Where the run's message history is kept in ``turn.session.state``."""

REJECTED = "The user rejected this tool call."


def agent_app(
    agent: AbstractAgent[Any, Any],
    name: str | None = None,
    *,
    offer_client_tools: bool = True,
    tool_kinds: Mapping[str, str] | None = None,
    deps: Any = None,
    **options: Any,
) -> AgentApp:
    """An :class:`~acpwire.agent.app.AgentApp` serving ``agent``; ``options`` go to the app
    (``store=True`` keeps sessions across restarts, see docs/sessions.md).

    ``offer_client_tools`` gives the model the client's files, terminals and MCP
    servers as tools; ``tool_kinds`` names the ACP kind of tools by name; ``deps`` is
    passed to every run.
    """
    app = AgentApp(name or agent.name or "pydantic-ai-agent", **options)
    adapter = PydanticAIAdapter(
        agent, offer_client_tools=offer_client_tools, tool_kinds=tool_kinds, deps=deps
    )
    app.prompt(adapter.prompt)
    return app


class PydanticAIAdapter:
    """Runs one pydantic-ai agent for each turn (see the module docstring)."""

    def __init__(
        self,
        agent: AbstractAgent[Any, Any],
        *,
        offer_client_tools: bool = True,
        tool_kinds: Mapping[str, str] | None = None,
        deps: Any = None,
    ) -> None:
        self.agent = agent
        self.offer_client_tools = offer_client_tools
        self.tool_kinds = dict(tool_kinds or {})
        self.deps = deps

    async def prompt(self, turn: Turn) -> StopReason | None:
        """The app's prompt handler: one ``agent.run()`` streamed into ``turn``."""
        tools = await client_tools(turn) if self.offer_client_tools else []
        bridge = TurnBridge(turn, kinds=self.tool_kinds, self_reporting=[t.name for t in tools])
        history = load_history(turn.session.state.get(STATE_KEY))

        async def events(_: RunContext[Any], stream: AsyncIterable[Any]) -> None:
            async for event in stream:
                await _tell(bridge, event)

        async def approve(
            _: RunContext[Any], requests: DeferredToolRequests
        ) -> DeferredToolResults | None:
            if not requests.approvals:
                return None  # external calls are the author's to answer
            answers: dict[str, bool | ToolDenied] = {}
            for part in requests.approvals:
                allowed = await bridge.allowed(
                    part.tool_call_id, part.tool_name, part.args_as_dict()
                )
                answers[part.tool_call_id] = True if allowed else ToolDenied(REJECTED)
            return DeferredToolResults(approvals=dict(answers))

        try:
            result = await self.agent.run(
                _user_prompt(turn),
                message_history=history,
                deps=self.deps,
                toolsets=[_toolset(tools)] if tools else None,
                event_stream_handler=events,
                capabilities=[HandleDeferredToolCalls(handler=approve)],
            )
        except asyncio.CancelledError as cancel:
            stopped = RunCancelled.from_cancellation(cancel)
            if stopped is not None:
                turn.session.state[STATE_KEY] = dump_history(stopped.all_messages())
            raise
        except UsageLimitExceeded as error:
            await bridge.say(f"\n\n{error}\n")
            return "max_tokens" if "token" in str(error).lower() else "max_turn_requests"
        except ContentFilterError:
            return "refusal"
        except Exception as error:
            raise framework_error("pydantic-ai", error) from error
        turn.session.state[STATE_KEY] = dump_history(result.all_messages())
        output = result.output
        if isinstance(output, str):
            if not bridge.text.strip() and output:
                await bridge.say(output)  # (an output that did not stream as text)
        elif output is not None and not isinstance(output, DeferredToolRequests):
            from .bridge import result_text

            await bridge.say(f"\n```json\n{result_text(output)}\n```\n")
        return None


def load_history(saved: object) -> list[ModelMessage] | None:
    """The message history kept in a session's state (None for a new conversation)."""
    if not saved:
        return None
    return ModelMessagesTypeAdapter.validate_python(saved)


def dump_history(messages: list[ModelMessage]) -> list[Any]:
    """``messages`` as JSON values, for the session's state."""
    return list(ModelMessagesTypeAdapter.dump_python(messages, mode="json"))


def _user_prompt(turn: Turn) -> str | list[Any]:
    """The prompt as pydantic-ai user content: its text, and images as binary content."""
    images = [b for b in turn.prompt if isinstance(b, s.ImageContent)]
    if not images:
        return turn.text
    import base64

    content: list[Any] = [turn.text] if turn.text else []
    for image in images:
        content.append(BinaryContent(base64.b64decode(image.data), media_type=image.mime_type))
    return content


def _toolset(tools: list[ClientTool]) -> FunctionToolset[Any]:
    return FunctionToolset(
        [Tool.from_schema(_keywords(t), t.name, t.description, t.parameters) for t in tools]
    )


def _keywords(tool: ClientTool) -> Any:
    async def call(**arguments: Any) -> str:  # (from_schema tools are called with keywords)
        return await tool.call(arguments)

    return call


async def _tell(bridge: TurnBridge, event: object) -> None:
    """One pydantic-ai stream event, told to the turn."""
    if isinstance(event, PartDeltaEvent):
        delta = event.delta
        if isinstance(delta, TextPartDelta):
            await bridge.say(delta.content_delta)
        elif isinstance(delta, ThinkingPartDelta) and delta.content_delta:
            await bridge.think(delta.content_delta)
    elif isinstance(event, PartStartEvent):
        part = event.part
        if isinstance(part, TextPart):
            await bridge.say(part.content)
        elif isinstance(part, ThinkingPart):
            await bridge.think(part.content)
    elif isinstance(event, FunctionToolCallEvent):
        part = event.part
        await bridge.tool_started(part.tool_call_id, part.tool_name, part.args_as_dict())
    elif isinstance(event, FunctionToolResultEvent):
        ret = event.part
        failed = ret.outcome != "success"
        await bridge.tool_finished(
            ret.tool_call_id,
            ret.tool_name,
            ret.model_response_str() if failed else ret.content,
            failed=failed,
        )
