"""A smolagents ``CodeAgent`` or ``ToolCallingAgent`` as an ACP agent: ``agent_app(agent).run()``.

smolagents runs synchronously, so each prompt is one ``agent.run(task, stream=True,
reset=False)`` in a worker thread. Every step it yields is told to the turn on the
event loop before the thread goes on (the thread waits for it), so what the client
sees is in the order the agent did it (:mod:`acpwire.adapters.bridge` has the rules
every adapter shares):

* the model's streamed output (``ChatMessageStreamDelta``; the adapter turns
  ``stream_outputs`` on when the model can stream) is the agent's reasoning:
  thought chunks; the final answer is the message;
* a code step is an ``execute`` tool call titled ``Run Python code``, its code as
  ``rawInput``, its logs and output as terminal-like content (a code block), failed
  with the error when the code raised; a tool call of a ``ToolCallingAgent`` is a
  tool call with its output;
* a planning step is the turn's plan, one entry per line of the plan;
* tools named in ``ask_before`` ask the user first, on their call's report (a
  rejection tells the model "The user rejected this tool call." and the tool does
  not run);
* the client's files, terminals and MCP servers are added to the agent's tools for
  the run, and taken away after it;
* the conversation (each task and the model output and observations of its steps)
  is kept in the session's state (``smolagents`` key) and put back into the agent's
  memory before each run, so ``session/load`` and ``session/resume`` go on with it
  after a restart;
* ``session/cancel`` ends the turn at once (``cancelled``) and tells the agent to
  stop (``agent.interrupt()``, seen between steps); a permission question or client
  call the thread was waiting for is cancelled. The agent is one object, so runs
  take turns: the next waits until the stopped run has left the thread.
* any error of the run is a clear error answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
import threading
import uuid
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from typing import Any, TypeVar

try:
    from smolagents import ActionStep, MultiStepAgent, PlanningStep, TaskStep, Tool
    from smolagents.agents import ToolOutput
    from smolagents.memory import FinalAnswerStep
    from smolagents.memory import ToolCall as SmolToolCall
    from smolagents.models import ChatMessageStreamDelta
    from smolagents.monitoring import Timing
except ImportError as exc:  # pragma: no cover - depends on the environment
    from .bridge import missing_framework

    raise missing_framework("smolagents", "smolagents", "smolagents") from exc

from ..agent.app import AgentApp
from ..agent.turn import StopReason, Turn
from .bridge import ClientTool, TurnBridge, client_tools, framework_error, result_text

__all__ = ["CODE_TOOL", "STATE_KEY", "SmolagentsAdapter", "agent_app"]

STATE_KEY = "smolagents"
"""Where the conversation is kept in ``turn.session.state``."""

CODE_TOOL = "python_interpreter"
"""The tool name a ``CodeAgent`` gives its code steps."""

FINAL_ANSWER = "final_answer"
REJECTED = "The user rejected this tool call."
T = TypeVar("T")


def agent_app(
    agent: MultiStepAgent,
    name: str | None = None,
    *,
    offer_client_tools: bool = True,
    ask_before: Iterable[str] = (),
    tool_kinds: Mapping[str, str] | None = None,
    **options: Any,
) -> AgentApp:
    """An :class:`~acpwire.agent.app.AgentApp` serving ``agent``; ``options`` go to the app
    (``store=True`` keeps sessions across restarts, see docs/sessions.md).

    ``offer_client_tools`` gives the agent the client's files, terminals and MCP
    servers as tools; ``ask_before`` names the agent's tools that need the user's
    permission; ``tool_kinds`` names the ACP kind of tools by name.
    """
    app = AgentApp(name or agent.name or "smolagents-agent", **options)
    adapter = SmolagentsAdapter(
        agent, offer_client_tools=offer_client_tools, ask_before=ask_before, tool_kinds=tool_kinds
    )
    app.prompt(adapter.prompt)
    return app


class SmolagentsAdapter:
    """Runs one smolagents agent for each turn, one run at a time (see the module docstring)."""

    def __init__(
        self,
        agent: MultiStepAgent,
        *,
        offer_client_tools: bool = True,
        ask_before: Iterable[str] = (),
        tool_kinds: Mapping[str, str] | None = None,
    ) -> None:
        self.agent = agent
        self.offer_client_tools = offer_client_tools
        self.ask_before = frozenset(ask_before)
        unknown = self.ask_before - set(agent.tools)
        if unknown:
            raise ValueError(f"ask_before names tools the agent does not have: {sorted(unknown)}")
        self.tool_kinds = {CODE_TOOL: "execute", **(tool_kinds or {})}
        self.own_tools = dict(agent.tools)
        self.executor = getattr(agent, "python_executor", None)
        if hasattr(agent.model, "generate_stream"):
            agent.stream_outputs = True  # the model's output streams as the agent's thoughts
        self._turns = asyncio.Lock()
        self._thread: asyncio.Future[None] | None = None
        """The worker of the last run: a cancelled run may still be leaving it."""

    async def prompt(self, turn: Turn) -> StopReason | None:
        """The app's prompt handler: the agent's run, in a thread, told to ``turn``."""
        async with self._turns:
            if self._thread is not None and not self._thread.done():
                await asyncio.wait([self._thread])  # the stopped run is leaving the agent
            return await self._run(turn)

    async def _run(self, turn: Turn) -> StopReason | None:
        tools = await client_tools(turn) if self.offer_client_tools else []
        bridge = TurnBridge(
            turn,
            kinds=self.tool_kinds,
            self_reporting=[t.name for t in tools],
        )
        run = _Run(bridge, asyncio.get_running_loop())
        agent = self.agent
        agent.tools = {
            **{
                name: _asking(tool, run) if name in self.ask_before else tool
                for name, tool in self.own_tools.items()
            },
            **{tool.name: _smol_tool(tool, run) for tool in tools},
        }
        if self.executor is not None:
            agent.python_executor = _Stoppable(self.executor, run.cancelled)
        history: list[dict[str, Any]] = list(turn.session.state.get(STATE_KEY) or [])
        restore_memory(agent, history)
        done: list[dict[str, Any]] = []
        self._thread = thread = asyncio.ensure_future(
            asyncio.to_thread(
                run.drain, lambda: agent.run(turn.text, stream=True, reset=False), done
            )
        )
        thread.add_done_callback(_retrieved)
        try:
            await asyncio.shield(thread)
        except asyncio.CancelledError:
            agent.interrupt()
            run.cancel()
            raise
        except Exception as error:
            raise framework_error("smolagents", error) from error
        finally:
            # (a copy: a cancelled run's thread may still add the step it was in)
            steps = list(done)
            turn.session.state[STATE_KEY] = [*history, {"task": turn.text, "steps": steps}]
        if run.answer is not None and not bridge.text.strip():
            await bridge.say(result_text(run.answer))
        return None


def _retrieved(future: asyncio.Future[None]) -> None:
    """Read a finished run's outcome: after a cancel nobody awaits it, and its error
    (the turn it told is gone) is expected."""
    if not future.cancelled():
        future.exception()


def restore_memory(agent: MultiStepAgent, history: list[dict[str, Any]]) -> None:
    """The agent's memory as the conversation kept in a session's state left it."""
    agent.memory.reset()
    for entry in history:
        agent.memory.steps.append(TaskStep(task=str(entry.get("task", ""))))
        for number, step in enumerate(entry.get("steps") or [], start=1):
            agent.memory.steps.append(
                ActionStep(
                    step_number=number,
                    timing=Timing(start_time=0.0, end_time=0.0),
                    model_output=step.get("model_output"),
                    observations=step.get("observations"),
                )
            )


class _Stoppable:
    """A ``CodeAgent``'s code executor that runs no code once the turn is cancelled: the
    agent stops between steps, and the step in hand must not act for a gone turn."""

    def __init__(self, executor: Any, cancelled: threading.Event) -> None:
        self.executor = executor
        self.cancelled = cancelled

    def __call__(self, code: str) -> Any:
        if self.cancelled.is_set():
            raise RuntimeError("the turn was cancelled; the code was not run")
        return self.executor(code)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.executor, name)


class _Run:
    """One run: the worker thread's way to the event loop, and what it told the turn."""

    def __init__(self, bridge: TurnBridge, loop: asyncio.AbstractEventLoop) -> None:
        self.bridge = bridge
        self.loop = loop
        self.waiting: set[concurrent.futures.Future[Any]] = set()
        self.cancelled = threading.Event()
        self.answer: Any = None
        self.reported: dict[str, list[tuple[str, object]]] = {}
        """Tool calls of a ToolCallingAgent reported and not yet run, by tool name: their
        ids and arguments (the tool itself learns only its arguments)."""
        self.lock = threading.Lock()
        """For :attr:`reported`: a ToolCallingAgent runs parallel calls in threads."""
        self.last_step: object = None
        """The last ActionStep kept (an agent out of steps yields it twice)."""

    def call(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run a coroutine on the loop from the worker thread and wait for its result."""
        if self.cancelled.is_set():
            raise RuntimeError("the turn was cancelled")

        async def run() -> T:
            return await make()

        future = asyncio.run_coroutine_threadsafe(run(), self.loop)
        self.waiting.add(future)
        try:
            return future.result()
        finally:
            self.waiting.discard(future)

    def reported_id(self, name: str, arguments: object) -> str | None:
        """The id of the reported call of tool ``name`` with these arguments (the first
        reported if none matches), taken off the list; None for a call from code."""
        with self.lock:
            waiting = self.reported.get(name) or []
            for index, (_, given) in enumerate(waiting):
                if given == arguments:
                    return waiting.pop(index)[0]
            return waiting.pop(0)[0] if waiting else None

    def cancel(self) -> None:
        """The turn was cancelled: what the thread waits for on the loop is cancelled too."""
        self.cancelled.set()
        for future in list(self.waiting):
            future.cancel()

    def drain(
        self, start: Callable[[], Generator[Any, None, Any]], done: list[dict[str, Any]]
    ) -> None:
        """In the worker thread: run the agent, telling each step to the turn as it comes.

        After a cancel nothing more is told. A model stream in progress is stopped at
        its next chunk (the cancel is thrown into the agent's generator there, which
        fails the step); otherwise the agent stops at its next step
        (``agent.interrupt()``). Either way its generator ends as it means to."""
        steps = start()
        try:
            event = next(steps)
            while True:
                self.take(event, done)
                if self.cancelled.is_set() and isinstance(event, ChatMessageStreamDelta):
                    event = steps.throw(RuntimeError("the turn was cancelled"))
                else:
                    event = next(steps)
        except StopIteration:
            pass

    def take(self, event: object, done: list[dict[str, Any]]) -> None:
        """Keep what the conversation needs of ``event`` and tell it (unless cancelled)."""
        if isinstance(event, ActionStep):
            if event is self.last_step:
                return  # (an agent out of steps yields its last step again)
            self.last_step = event
            done.append(
                {"model_output": _text(event.model_output), "observations": event.observations}
            )
        elif isinstance(event, FinalAnswerStep):
            self.answer = event.output
            return
        try:
            self.call(lambda: self.tell(event))
        except BaseException:
            if not self.cancelled.is_set():
                raise

    async def tell(self, event: object) -> None:
        """One smolagents step event, told to the turn."""
        bridge = self.bridge
        if isinstance(event, ChatMessageStreamDelta):
            if event.content:
                await bridge.think(event.content)
        elif isinstance(event, SmolToolCall):
            if event.name == FINAL_ANSWER:
                return  # the answer is the message
            with self.lock:
                self.reported.setdefault(event.name, []).append((event.id, event.arguments))
            if event.name == CODE_TOOL:
                await bridge.tool_started(
                    event.id, event.name, {"code": event.arguments}, title="Run Python code"
                )
            else:
                await bridge.tool_started(event.id, event.name, event.arguments)
        elif isinstance(event, ToolOutput):
            if event.tool_call.name == FINAL_ANSWER:
                return
            await bridge.tool_finished(event.id, event.tool_call.name, event.observation)
        elif isinstance(event, ActionStep):
            for call in event.tool_calls or []:  # code steps end here, with their logs
                if call.name != CODE_TOOL:
                    continue  # (a ToolCallingAgent's calls ended with their ToolOutput)
                logs = (event.observations or "").strip()
                if event.error is not None:
                    text = f"{logs}\n\n{event.error}".strip()
                    await bridge.tool_finished(call.id, call.name, _block(text), failed=True)
                else:
                    await bridge.tool_finished(call.id, call.name, _block(logs) if logs else "")
        elif isinstance(event, PlanningStep):
            entries = plan_entries(event.plan)
            if entries:
                await bridge.turn.plan(*entries)


_STEP = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+(.*\S)")


def plan_entries(plan: str) -> list[str]:
    """The steps of a smolagents plan: its numbered or bulleted lines, without their
    numbers (a plan without such lines is one entry per line)."""
    lines = [line.strip() for line in plan.splitlines()]
    steps = [m.group(1) for line in lines if (m := _STEP.match(line))]
    return (steps or [line for line in lines if line and not line.startswith("```")])[:50]


def _text(output: object) -> str | None:
    return output if isinstance(output, str) or output is None else str(output)


def _block(text: str) -> str:
    """Logs shown as a terminal would: a fenced block."""
    return f"```\n{text}\n```"


_TYPES = {"string", "boolean", "integer", "number", "array", "object"}


def _smol_tool(tool: ClientTool, run: _Run) -> Tool:
    """A client tool as a smolagents ``Tool`` whose calls go to the turn's event loop."""
    properties: dict[str, Any] = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    inputs = {
        key: {
            "type": value.get("type") if value.get("type") in _TYPES else "any",
            "description": str(value.get("description") or key),
            **({} if key in required else {"nullable": True}),
        }
        for key, value in properties.items()
    }

    def forward(self: Tool, **arguments: Any) -> str:
        given = {k: v for k, v in arguments.items() if v is not None}
        return run.call(lambda: tool.call(given))

    cls = type(
        f"{tool.name}_tool",
        (Tool,),
        {
            "name": tool.name,
            "description": tool.description,
            "inputs": inputs,
            "output_type": "string",
            "skip_forward_signature_validation": True,
            "forward": forward,
        },
    )
    made: Tool = cls()
    return made


def _asking(tool: Tool, run: _Run) -> Tool:
    """``tool``, asking the user first (on the call reported for it, or a call of its own
    when it runs inside a code step) and reporting its result."""

    def forward(self: Tool, *args: Any, **arguments: Any) -> Any:
        bridge = run.bridge
        shown = arguments or {"args": list(args)}
        call_id = run.reported_id(tool.name, shown) or f"{tool.name}-{uuid.uuid4().hex}"
        allowed = run.call(lambda: bridge.allowed(call_id, tool.name, shown))
        if not allowed:
            return REJECTED
        output = tool(*args, **arguments)
        run.call(lambda: bridge.tool_finished(call_id, tool.name, output))
        return output

    cls = type(
        f"asking_{tool.name}",
        (Tool,),
        {
            "name": tool.name,
            "description": tool.description,
            "inputs": tool.inputs,
            "output_type": tool.output_type,
            "skip_forward_signature_validation": True,
            "forward": forward,
        },
    )
    made: Tool = cls()
    return made
