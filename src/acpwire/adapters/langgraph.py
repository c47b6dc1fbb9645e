"""A compiled LangGraph graph as an ACP agent: ``agent_app(graph).run()``.

Each prompt is one ``graph.astream_events()`` on the thread whose id is the ACP
session id, told to the turn (:mod:`acpwire.adapters.bridge` has the rules every
adapter shares):

* chat model chunks stream as message chunks, their reasoning blocks as thought
  chunks;
* tool runs (``on_tool_start`` / ``on_tool_end`` / ``on_tool_error``, keyed by run
  id) become ACP tool calls;
* ``interrupt()`` pauses the graph; the adapter answers and resumes it in the same
  turn (``Command(resume={interrupt_id: answer})``): an interrupt whose value is a
  string is a question, asked with an elicitation form (the answer text, or None
  when the user declines or the client cannot show forms); any other value asks
  for approval with a permission request on a tool call showing the value
  (``True`` or ``False``);
* the conversation is the graph's checkpoint. A graph compiled with a durable
  checkpointer keeps it there, under ``thread_id`` = the session id. A graph
  compiled without one gets an ``InMemorySaver``, and a graph with an
  ``InMemorySaver`` has the session's thread copied into the session's state
  (``langgraph`` key: the latest checkpoint, its channel values and pending
  writes) after every turn and back before the next, so the app's store keeps it
  and ``session/load`` and ``session/resume`` go on after a restart;
* ``session/cancel`` cancels the stream, and with it the graph's running nodes;
* ``GraphRecursionError`` ends the turn ``max_turn_requests``, any other error a
  clear error answer.

The client's files and terminals are offered by :func:`client_tools`: LangChain
tools to put in the graph's tool node (a graph's tools are fixed when it is
built), which reach the turn that runs them.
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
from collections.abc import Callable, Mapping
from typing import Any

try:
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, StructuredTool
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.errors import GraphInterrupt, GraphRecursionError
    from langgraph.pregel import Pregel
    from langgraph.types import Command, Interrupt
except ImportError as exc:  # pragma: no cover - depends on the environment
    from .bridge import missing_framework

    raise missing_framework("langgraph", "langgraph", "langgraph") from exc

from .. import schema as s
from ..agent.app import AgentApp
from ..agent.tools import ToolCall
from ..agent.turn import StopReason, Turn
from .bridge import CLIENT_TOOL_NAMES, CLIENT_TOOL_SPECS, TurnBridge, framework_error
from .bridge import client_tools as turn_tools

__all__ = ["STATE_KEY", "LangGraphAdapter", "agent_app", "client_tools"]

STATE_KEY = "langgraph"
"""Where the thread's latest checkpoint is kept in ``turn.session.state`` (InMemorySaver)."""

InputFor = Callable[[Turn], Any]
"""What a prompt becomes as the graph's input; the default suits ``MessagesState`` graphs."""

_TURN: contextvars.ContextVar[Turn | None] = contextvars.ContextVar("acpwire_turn", default=None)


def messages_input(turn: Turn) -> Any:
    """``{"messages": [the prompt as a user message]}``."""
    return {"messages": [{"role": "user", "content": turn.text}]}


def agent_app(
    graph: Pregel[Any, Any],
    name: str | None = None,
    *,
    input_for: InputFor = messages_input,
    tool_kinds: Mapping[str, str] | None = None,
    recursion_limit: int | None = None,
    **options: Any,
) -> AgentApp:
    """An :class:`~acpwire.agent.app.AgentApp` serving ``graph``; ``options`` go to the app
    (``store=True`` keeps sessions across restarts, see docs/sessions.md).

    ``input_for`` makes the graph's input from a turn; ``tool_kinds`` names the ACP
    kind of tools by name; ``recursion_limit`` goes into every run's config.
    """
    app = AgentApp(name or graph.name or "langgraph-agent", **options)
    adapter = LangGraphAdapter(
        graph, input_for=input_for, tool_kinds=tool_kinds, recursion_limit=recursion_limit
    )
    app.prompt(adapter.prompt)
    return app


class LangGraphAdapter:
    """Runs one compiled graph for each turn (see the module docstring)."""

    def __init__(
        self,
        graph: Pregel[Any, Any],
        *,
        input_for: InputFor = messages_input,
        tool_kinds: Mapping[str, str] | None = None,
        recursion_limit: int | None = None,
    ) -> None:
        saver = graph.checkpointer
        if saver is None or saver is False or saver is True:
            saver = InMemorySaver()
            graph = graph.copy(update={"checkpointer": saver})
        self.graph = graph
        self.saver = saver if isinstance(saver, InMemorySaver) else None
        """The saver whose threads the session state keeps (None: the graph's own durable one)."""
        self.input_for = input_for
        self.tool_kinds = dict(tool_kinds or {})
        self.recursion_limit = recursion_limit

    async def prompt(self, turn: Turn) -> StopReason | None:
        """The app's prompt handler: the graph's run on the session's thread, into ``turn``."""
        bridge = TurnBridge(turn, kinds=self.tool_kinds, self_reporting=CLIENT_TOOL_NAMES)
        configurable: dict[str, Any] = {"thread_id": turn.session_id}
        config: RunnableConfig = {"configurable": configurable}
        if self.recursion_limit is not None:
            config["recursion_limit"] = self.recursion_limit
        if self.saver is not None:
            restore_thread(self.saver, turn.session_id, turn.session.state.get(STATE_KEY))
        token = _TURN.set(turn)
        run = _GraphRun(bridge)
        run_input: Any = self.input_for(turn)
        try:
            while True:
                async for event in self.graph.astream_events(run_input, config, version="v2"):
                    await run.tell(event)
                snapshot = await self.graph.aget_state(config)
                if not snapshot.interrupts:
                    break
                run_input = Command(resume={i.id: await run.answer(i) for i in snapshot.interrupts})
            if not bridge.text.strip():
                await _say_last_answer(bridge, snapshot.values)
        except asyncio.CancelledError:
            raise
        except GraphRecursionError as error:
            await bridge.say(f"\n\n{error}\n")
            return "max_turn_requests"
        except Exception as error:
            raise framework_error("langgraph", error) from error
        finally:
            _TURN.reset(token)
            if self.saver is not None:
                turn.session.state[STATE_KEY] = export_thread(self.saver, turn.session_id)
        return None


class _GraphRun:
    """One turn's run of the graph, resumed after each interrupt.

    A tool that calls ``interrupt()`` is stopped and, once answered, run again from
    its start: both runs are one ACP tool call, paused while the user is asked
    (``paused``) and taken up by the second run.
    """

    def __init__(self, bridge: TurnBridge) -> None:
        self.bridge = bridge
        self.paused: dict[str, ToolCall] = {}
        """Tool calls stopped by an interrupt, by tool name."""

    async def tell(self, event: Mapping[str, Any]) -> None:
        """One ``astream_events`` (v2) event, told to the turn."""
        bridge = self.bridge
        kind = event.get("event")
        data = event.get("data") or {}
        run_id, name = str(event.get("run_id")), str(event.get("name"))
        if kind == "on_chat_model_stream":
            chunk = data.get("chunk")
            if isinstance(chunk, BaseMessage):
                for block in chunk.content_blocks:
                    if block.get("type") == "text":
                        await bridge.say(str(block.get("text") or ""))
                    elif block.get("type") == "reasoning":
                        await bridge.think(str(block.get("reasoning") or ""))
        elif kind == "on_tool_start":
            paused = self.paused.pop(name, None)
            if paused is not None:
                bridge.calls[run_id] = paused
            await bridge.tool_started(run_id, name, data.get("input"))
        elif kind == "on_tool_end":
            output = data.get("output")
            failed = isinstance(output, ToolMessage) and output.status == "error"
            if isinstance(output, ToolMessage):
                output = output.content
            await bridge.tool_finished(run_id, name, output, failed=failed)
        elif kind == "on_tool_error":
            error = data.get("error")
            call = bridge.calls.get(run_id)
            if isinstance(error, GraphInterrupt) and call is not None:
                self.paused[name] = call  # asked about, then run again
            else:
                await bridge.tool_finished(run_id, name, str(error), failed=True)

    async def answer(self, interrupt: Interrupt[Any]) -> Any:
        """What the user says to one interrupt (see the module docstring)."""
        bridge = self.bridge
        turn = bridge.turn
        value = interrupt.value
        if isinstance(value, str):
            if not turn.can_ask:
                return None
            answer = await turn.ask(value, {"answer": s.StringPropertySchema(title="Answer")})
            text = answer.content.get("answer") if answer.accepted else None
            return text if isinstance(text, str) else None
        key = f"interrupt:{interrupt.id}"
        details = value if isinstance(value, Mapping) else {}
        name = str(details.get("name") or "approval")
        paused = self.paused.get(name)
        if paused is not None:  # asked on the call of the tool that asked
            bridge.calls[key] = paused
            title = details.get("title")
            if title:
                await paused.update(title=str(title), status=paused.status)
        else:
            title = details.get("title")
            await bridge.tool_started(key, name, value, title=str(title) if title else None)
        allowed = await bridge.allowed(key, name, value)
        if allowed and paused is None:
            await bridge.tool_finished(key, name, "approved")
        return allowed


async def _say_last_answer(bridge: TurnBridge, values: object) -> None:
    """A graph whose model did not stream: its last AI message, said at once."""
    messages = values.get("messages") if isinstance(values, Mapping) else None
    if isinstance(messages, list) and messages and isinstance(messages[-1], AIMessage):
        await bridge.say(str(messages[-1].text))


# -- the thread in the session's state ------------------------------------------------


def export_thread(saver: InMemorySaver, thread_id: str) -> dict[str, Any] | None:
    """The thread's latest checkpoint in each namespace, with the channel values and
    pending writes it needs, as JSON values; the thread is then dropped from memory
    (the session's state is where it lives between turns)."""
    namespaces = saver.storage.get(thread_id)
    if not namespaces:
        return None
    checkpoints, blobs, writes = [], [], []
    for ns, by_id in namespaces.items():
        if not by_id:
            continue
        checkpoint_id = max(by_id)
        checkpoint, metadata, parent = by_id[checkpoint_id]
        checkpoints.append([ns, checkpoint_id, _typed(checkpoint), _typed(metadata), parent])
        versions = saver.serde.loads_typed(checkpoint).get("channel_versions", {})
        for channel, version in versions.items():
            blob = saver.blobs.get((thread_id, ns, channel, version))
            if blob is not None:
                blobs.append([ns, channel, version, _typed(blob)])
        for (task, index), (_, channel, value, path) in saver.writes.get(
            (thread_id, ns, checkpoint_id), {}
        ).items():
            writes.append([ns, checkpoint_id, task, index, channel, _typed(value), path])
    saver.delete_thread(thread_id)
    return {"checkpoints": checkpoints, "blobs": blobs, "writes": writes}


def restore_thread(saver: InMemorySaver, thread_id: str, saved: object) -> None:
    """Put a thread :func:`export_thread` made back into ``saver`` (nothing if none was)."""
    if not isinstance(saved, Mapping):
        return
    for ns, checkpoint_id, checkpoint, metadata, parent in saved.get("checkpoints", []):
        saver.storage[thread_id][ns][checkpoint_id] = (
            _untyped(checkpoint),
            _untyped(metadata),
            parent,
        )
    for ns, channel, version, blob in saved.get("blobs", []):
        saver.blobs[(thread_id, ns, channel, version)] = _untyped(blob)
    for ns, checkpoint_id, task, index, channel, value, path in saved.get("writes", []):
        saver.writes[(thread_id, ns, checkpoint_id)][(task, index)] = (
            task,
            channel,
            _untyped(value),
            path,
        )


def _typed(value: tuple[str, bytes]) -> list[str]:
    return [value[0], base64.b64encode(value[1]).decode("ascii")]


def _untyped(value: list[str]) -> tuple[str, bytes]:
    return (value[0], base64.b64decode(value[1]))


# -- the client's files and terminals as LangChain tools -----------------------------


def client_tools() -> list[BaseTool]:
    """The client's file and terminal tools (``read_text_file``, ``write_text_file``,
    ``run_command``) as LangChain tools for a graph's tool node.

    Each reaches the turn that runs it and reports its own ACP tool call (a write
    shows a diff and asks first); used where the client did not advertise the
    capability, it tells the model so. Used outside an ACP turn it raises.
    """
    return [
        StructuredTool(
            name=spec.name,
            description=spec.description,
            args_schema=spec.parameters,
            coroutine=_client_call(spec.name),
        )
        for spec in CLIENT_TOOL_SPECS
    ]


def _client_call(name: str) -> Callable[..., Any]:
    async def call(**arguments: Any) -> str:
        turn = _TURN.get()
        if turn is None:
            raise RuntimeError(f"{name} is an ACP client tool: it runs inside an ACP turn only")
        for tool in await turn_tools(turn, mcp=False):
            if tool.name == name:
                return await tool.call(arguments)
        return f"The user's editor does not offer {name}."

    return call
