"""An OpenAI Agents SDK ``Agent`` (with its handoffs) as an ACP agent: ``agent_app(agent).run()``.

Each prompt is one ``Runner.run_streamed()`` with the session's conversation as its
input, its stream told to the turn (:mod:`acpwire.adapters.bridge` has the rules
every adapter shares):

* output text and reasoning deltas stream as message and thought chunks;
* tool calls (``tool_called``, ``tool_output``) become ACP tool calls;
* a handoff is a tool call of its own (``handoff_requested`` starts it,
  ``handoff_occured`` completes it naming the agent that takes over);
* a tool with ``needs_approval`` interrupts the run: each interruption is asked on
  the call's report, approved or rejected on the run's state
  (``RunState.approve`` / ``reject``), and the run resumes, in the same turn;
* the client's files, terminals and MCP servers are ``FunctionTool``\\s added to a
  clone of the starting agent for the run (handoff targets keep their own tools);
* the conversation (``to_input_list()``) is kept in the session's state
  (``openai_agents`` key), saved with the session by the app's store, so
  ``session/load`` and ``session/resume`` go on with it after a restart;
* ``session/cancel`` cancels the run (``result.cancel()``, which stops its
  background task and the model stream) and the turn ends ``cancelled``; the
  prompt is kept in the conversation;
* ``MaxTurnsExceeded`` ends the turn ``max_turn_requests``, a tripped guardrail
  ``refusal``, any other error a clear error answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

try:
    from agents import (
        Agent,
        FunctionTool,
        HandoffCallItem,
        HandoffOutputItem,
        RawResponsesStreamEvent,
        RunItemStreamEvent,
        Runner,
        ToolCallItem,
        ToolCallOutputItem,
    )
    from agents.exceptions import (
        InputGuardrailTripwireTriggered,
        MaxTurnsExceeded,
        OutputGuardrailTripwireTriggered,
    )
    from agents.result import RunResultStreaming
    from agents.run_state import RunState
    from agents.tool_context import ToolContext
except ImportError as exc:  # pragma: no cover - depends on the environment
    from .bridge import missing_framework

    raise missing_framework("openai-agents", "openai-agents", "openai_agents") from exc

from ..agent.app import AgentApp
from ..agent.turn import StopReason, Turn
from .bridge import ClientTool, TurnBridge, client_tools, framework_error

__all__ = ["STATE_KEY", "OpenAIAgentsAdapter", "agent_app"]

STATE_KEY = "openai_agents"
"""Where the conversation (the SDK's input items) is kept in ``turn.session.state``."""

REJECTED = "The user rejected this tool call."
_TEXT_DELTAS = frozenset({"response.output_text.delta"})
_THOUGHT_DELTAS = frozenset(
    {"response.reasoning_summary_text.delta", "response.reasoning_text.delta"}
)


def agent_app(
    agent: Agent[Any],
    name: str | None = None,
    *,
    offer_client_tools: bool = True,
    tool_kinds: Mapping[str, str] | None = None,
    context: Any = None,
    max_turns: int | None = None,
    **options: Any,
) -> AgentApp:
    """An :class:`~acpwire.agent.app.AgentApp` serving ``agent``; ``options`` go to the app
    (``store=True`` keeps sessions across restarts, see docs/sessions.md).

    ``offer_client_tools`` gives the model the client's files, terminals and MCP
    servers as tools; ``tool_kinds`` names the ACP kind of tools by name; ``context``
    and ``max_turns`` are passed to every run.
    """
    app = AgentApp(name or agent.name or "openai-agents-agent", **options)
    adapter = OpenAIAgentsAdapter(
        agent,
        offer_client_tools=offer_client_tools,
        tool_kinds=tool_kinds,
        context=context,
        max_turns=max_turns,
    )
    app.prompt(adapter.prompt)
    return app


class OpenAIAgentsAdapter:
    """Runs one Agents SDK agent for each turn (see the module docstring)."""

    def __init__(
        self,
        agent: Agent[Any],
        *,
        offer_client_tools: bool = True,
        tool_kinds: Mapping[str, str] | None = None,
        context: Any = None,
        max_turns: int | None = None,
    ) -> None:
        self.agent = agent
        self.offer_client_tools = offer_client_tools
        self.tool_kinds = dict(tool_kinds or {})
        self.context = context
        self.max_turns = max_turns

    async def prompt(self, turn: Turn) -> StopReason | None:
        """The app's prompt handler: one streamed run (resumed after approvals) into ``turn``."""
        tools = await client_tools(turn) if self.offer_client_tools else []
        bridge = TurnBridge(turn, kinds=self.tool_kinds, self_reporting=[t.name for t in tools])
        agent = self.agent.clone(tools=[*self.agent.tools, *(_function_tool(t) for t in tools)])
        history: list[Any] = list(turn.session.state.get(STATE_KEY) or [])
        question = {"role": "user", "content": turn.text}
        run_input: list[Any] | RunState[Any] = [*history, question]
        names: dict[str, str] = {}
        try:
            while True:
                result = self._start(agent, run_input)
                await _stream(result, bridge, names)
                if not result.interruptions:
                    break
                state = result.to_state()
                for item in result.interruptions:
                    raw = item.raw_item
                    call_id = str(_field(raw, "call_id") or _field(raw, "id") or id(item))
                    name = item.tool_name or str(_field(raw, "name") or "tool")
                    if await bridge.allowed(call_id, name, _arguments(raw)):
                        state.approve(item)
                    else:
                        state.reject(item, rejection_message=REJECTED)
                run_input = state
        except asyncio.CancelledError:
            turn.session.state[STATE_KEY] = [*history, question]
            raise
        except MaxTurnsExceeded as error:
            await bridge.say(f"\n\n{error}\n")
            return "max_turn_requests"
        except (InputGuardrailTripwireTriggered, OutputGuardrailTripwireTriggered):
            return "refusal"
        except Exception as error:
            raise framework_error("openai-agents", error) from error
        turn.session.state[STATE_KEY] = result.to_input_list()
        output = result.final_output
        if output is not None and not isinstance(output, str):
            from .bridge import result_text

            await bridge.say(f"\n```json\n{result_text(output)}\n```\n")
        elif isinstance(output, str) and output and not bridge.text.strip():
            await bridge.say(output)
        return None

    def _start(self, agent: Agent[Any], run_input: list[Any] | RunState[Any]) -> RunResultStreaming:
        if self.max_turns is None:
            return Runner.run_streamed(agent, run_input, context=self.context)
        return Runner.run_streamed(agent, run_input, context=self.context, max_turns=self.max_turns)


async def _stream(result: RunResultStreaming, bridge: TurnBridge, names: dict[str, str]) -> None:
    """Tell one streamed run to the turn; a cancelled turn cancels the run."""
    try:
        async for event in result.stream_events():
            await _tell(bridge, event, names)
    except asyncio.CancelledError:
        result.cancel()
        raise


async def _tell(bridge: TurnBridge, event: object, names: dict[str, str]) -> None:
    """One Agents SDK stream event, told to the turn."""
    if isinstance(event, RawResponsesStreamEvent):
        data = event.data
        kind = getattr(data, "type", None)
        if kind in _TEXT_DELTAS:
            await bridge.say(str(getattr(data, "delta", "")))
        elif kind in _THOUGHT_DELTAS:
            await bridge.think(str(getattr(data, "delta", "")))
        return
    if not isinstance(event, RunItemStreamEvent):
        return
    item = event.item
    if isinstance(item, (ToolCallItem, HandoffCallItem)):
        raw = item.raw_item
        call_id = str(_field(raw, "call_id") or _field(raw, "id") or "")
        name = str(_field(raw, "name") or _field(raw, "type") or "tool")
        names[call_id] = name
        title = f"Hand off: {name}" if isinstance(item, HandoffCallItem) else None
        await bridge.tool_started(call_id, name, _arguments(raw), title=title)
    elif isinstance(item, ToolCallOutputItem):
        call_id = str(_field(item.raw_item, "call_id") or "")
        await bridge.tool_finished(call_id, names.get(call_id, "tool"), item.output)
    elif isinstance(item, HandoffOutputItem):
        call_id = str(_field(item.raw_item, "call_id") or "")
        target = item.target_agent.name
        await bridge.tool_finished(call_id, names.get(call_id, "handoff"), f"{target} takes over.")


def _field(raw: object, name: str) -> Any:
    """A field of a raw item, which the SDK gives as a model or as a dict."""
    if isinstance(raw, Mapping):
        return raw.get(name)
    return getattr(raw, name, None)


def _arguments(raw: object) -> Any:
    """A call's arguments as JSON values (the SDK keeps them as a JSON string)."""
    text = _field(raw, "arguments")
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text) if text.strip() else {}
    except ValueError:
        return text


def _function_tool(tool: ClientTool) -> FunctionTool:
    async def invoke(_: ToolContext[Any], arguments: str) -> str:
        return await tool.call(json.loads(arguments) if arguments.strip() else {})

    return FunctionTool(
        name=tool.name,
        description=tool.description,
        params_json_schema=tool.parameters,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )
