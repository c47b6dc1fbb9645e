#!/usr/bin/env python3
"""What an adapter (acpwire.adapters) adds to its framework's own streaming loop, per
chunk and per turn.

Run from the repository root with acpwire's virtual environment (the ``dev`` extra has
the frameworks):

    .venv/bin/python benchmarks/bench_adapters.py            # full run (about 2 minutes)
    .venv/bin/python benchmarks/bench_adapters.py --quick    # smoke run
    .venv/bin/python benchmarks/bench_adapters.py --frameworks smolagents --json

For each framework that is installed, one agent whose scripted model streams ``N``
short text chunks (``"tok1234 "``) and then ends its answer runs two ways, taking
turns:

* ``framework``: the framework's own streaming loop, called as the adapter calls it
  (same call, same options), each event taken and dropped;
* ``adapter``: ``agent_app(agent)`` served in process over a memory transport to an
  acpwire client that counts the updates; one timed ``session/prompt`` per turn, each
  in a new session (so neither side carries a growing history). The client advertises
  no files or terminals, so no client tools are offered: this is the mapping itself.

A turn is timed by CPU time of the process (every thread: smolagents runs its agent
in a worker thread, and the client is in the process too) and by wall time. Per
turn: the median of one-chunk turns, adapter minus framework. Per chunk: the slope
between one chunk and ``N`` chunks, ``(t(N) - t(1)) / (N - 1)``, adapter minus
framework. Nothing is asserted: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")
os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from acpwire import schema as s
from acpwire.agent.app import AgentApp
from acpwire.agent.connection import AgentSideConnection
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.transports.memory import memory_pair

CHUNK = "tok1234 "
CHUNKS = [1]
"""How many chunks the scripted models stream in the next turn (set before each turn)."""


@dataclass
class Subject:
    """One framework: its agent served by ``app`` and run bare by ``loop``."""

    app: AgentApp
    loop: Callable[[], Awaitable[None]]


# -- the frameworks -------------------------------------------------------------------


def pydantic_ai() -> Subject:
    from pydantic_ai import Agent
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from acpwire.adapters.pydantic_ai import agent_app

    async def stream(messages: list[Any], info: AgentInfo) -> Any:
        for _ in range(CHUNKS[0]):
            yield CHUNK

    agent = Agent(FunctionModel(stream_function=stream))

    async def drop(ctx: Any, events: Any) -> None:
        async for _ in events:
            pass

    async def loop() -> None:
        await agent.run("go", event_stream_handler=drop)

    return Subject(agent_app(agent), loop)


def openai_agents() -> Subject:
    from agents import Agent, Runner
    from agents.testing import ScriptedModel
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    from acpwire.adapters.openai_agents import agent_app

    class Model(ScriptedModel):
        """Streams ``CHUNKS`` deltas (one per content part) on every call."""

        def _next(self) -> None:
            part = ResponseOutputText(text=CHUNK, type="output_text", annotations=[], logprobs=[])
            message = ResponseOutputMessage(
                id="m1", type="message", role="assistant", status="completed",
                content=[part] * CHUNKS[0],
            )  # fmt: skip
            self.enqueue([message])

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            self._next()
            return await super().get_response(*args, **kwargs)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            self._next()
            return super().stream_response(*args, **kwargs)

    agent = Agent("bench", model=Model())

    async def loop() -> None:
        result = Runner.run_streamed(agent, [{"role": "user", "content": "go"}])
        async for _ in result.stream_events():
            pass

    return Subject(agent_app(agent), loop)


def langgraph() -> Subject:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AIMessageChunk
    from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph

    from acpwire.adapters.langgraph import agent_app

    class Model(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "scripted"

        def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> ChatResult:
            text = CHUNK * CHUNKS[0]
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

        def _stream(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            for _ in range(CHUNKS[0]):
                yield ChatGenerationChunk(message=AIMessageChunk(content=CHUNK))

    model = Model()

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    graph = builder.compile()
    # The bare loop runs what the adapter runs: the graph with an InMemorySaver (the
    # adapter adds one to a graph without a checkpointer), a new thread per turn.
    saved = builder.compile(checkpointer=InMemorySaver())
    threads = iter(range(10**9))

    async def loop() -> None:
        config: Any = {"configurable": {"thread_id": str(next(threads))}}
        run_input = {"messages": [{"role": "user", "content": "go"}]}
        async for _ in saved.astream_events(run_input, config, version="v2"):
            pass

    return Subject(agent_app(graph), loop)


def smolagents() -> Subject:
    from rich.console import Console
    from smolagents import CodeAgent, Model
    from smolagents.models import ChatMessage, ChatMessageStreamDelta, MessageRole
    from smolagents.monitoring import AgentLogger, LogLevel

    from acpwire.adapters.smolagents import agent_app

    answer = "Thought: done.\n<code>\nfinal_answer('ok')\n</code>"

    class Scripted(Model):
        def generate(self, messages: Any, *args: Any, **kwargs: Any) -> ChatMessage:
            return ChatMessage(role=MessageRole.ASSISTANT, content=CHUNK * CHUNKS[0] + answer)

        def generate_stream(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            for _ in range(CHUNKS[0]):
                yield ChatMessageStreamDelta(content=CHUNK)
            yield ChatMessageStreamDelta(content=answer)

    def agent() -> Any:
        quiet = AgentLogger(LogLevel.OFF, console=Console(file=open(os.devnull, "w")))
        made = CodeAgent(tools=[], model=Scripted(model_id="scripted"), logger=quiet)
        made.stream_outputs = True  # (what the adapter turns on)
        return made

    bare = agent()

    async def loop() -> None:
        def run() -> None:  # a worker thread, as the adapter runs it
            for _ in bare.run("go", stream=True, reset=True):
                pass

        await asyncio.to_thread(run)

    return Subject(agent_app(agent()), loop)


def floor() -> Subject:
    """No framework: a prompt handler saying each chunk, against a loop doing nothing.
    Its ``+`` columns are what any adapter pays for ACP itself (the app, the transport
    and the client), before any mapping."""
    app = AgentApp("floor")

    @app.prompt
    async def prompt(turn: Any) -> None:
        for _ in range(CHUNKS[0]):
            await turn.say(CHUNK)

    async def loop() -> None:
        for _ in range(CHUNKS[0]):
            await asyncio.sleep(0)

    return Subject(app, loop)


FRAMEWORKS: dict[str, tuple[str, Callable[[], Subject]]] = {
    "floor": ("acpwire", floor),
    "pydantic-ai": ("pydantic_ai", pydantic_ai),
    "openai-agents": ("agents", openai_agents),
    "langgraph": ("langgraph", langgraph),
    "smolagents": ("smolagents", smolagents),
}


# -- the adapter side: an app served to a counting client -----------------------------


class Counter(Client):
    def __init__(self) -> None:
        self.updates = 0

    def capabilities(self) -> s.ClientCapabilities:
        return s.ClientCapabilities()

    async def session_update(self, params: s.SessionNotification) -> None:
        self.updates += 1


class Served:
    """``app`` on one end of a memory pair, acpwire's client on the other."""

    def __init__(self, app: AgentApp) -> None:
        a, b = memory_pair()
        self.counter = Counter()
        self.agent_conn = AgentSideConnection(app.agent(), a)
        self.client_conn = ClientSideConnection(self.counter, b)

    async def __aenter__(self) -> Served:
        self.agent_conn.start()
        await self.client_conn.initialize()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client_conn.close()
        await self.agent_conn.close()

    async def new(self) -> str:
        return (await self.client_conn.agent.new_session(os.getcwd())).session_id

    async def turn(self, session_id: str) -> None:
        result = await self.client_conn.agent.prompt(session_id, "go")
        assert result.stop_reason == "end_turn", result


# -- measuring ------------------------------------------------------------------------


async def timed(run: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    await run()
    return time.process_time() - cpu, time.perf_counter() - wall


async def measure(name: str, chunks: int, turns: int) -> dict[str, Any]:
    subject = FRAMEWORKS[name][1]()
    times: dict[tuple[str, int], list[tuple[float, float]]] = {}
    async with Served(subject.app) as served:
        for n in (1, chunks):
            CHUNKS[0] = n
            for _ in range(3):  # warm-up: imports, caches, first-call paths
                await subject.loop()
                await served.turn(await served.new())
            before = served.counter.updates
            for _ in range(turns):  # the two sides take turns, so they share the load
                times.setdefault(("framework", n), []).append(await timed(subject.loop))
                session_id = await served.new()
                times.setdefault(("adapter", n), []).append(
                    await timed(functools.partial(served.turn, session_id))
                )
            updates = (served.counter.updates - before) / turns
    await subject.app.aclose()

    def median(side: str, n: int, which: int) -> float:
        return statistics.median(t[which] for t in times[(side, n)])

    report: dict[str, Any] = {"framework": name, "chunks": chunks, "turns": turns}
    for which, clock in enumerate(("cpu", "wall")):
        figures = {}
        for side in ("framework", "adapter"):
            one, many = median(side, 1, which), median(side, chunks, which)
            figures[side] = {"turn_s": one, "chunk_s": (many - one) / (chunks - 1)}
        figures["overhead"] = {
            key: figures["adapter"][key] - figures["framework"][key]
            for key in ("turn_s", "chunk_s")
        }
        report[clock] = figures
    report["updates_per_turn"] = updates
    return report


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def table(reports: list[dict[str, Any]]) -> str:
    lines = [
        "| framework | clock | framework turn | adapter turn | + per turn "
        "| framework chunk | adapter chunk | + per chunk |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in reports:
        for clock in ("cpu", "wall"):
            f, a, o = r[clock]["framework"], r[clock]["adapter"], r[clock]["overhead"]
            lines.append(
                f"| {r['framework']} | {clock} | {us(f['turn_s'])} | {us(a['turn_s'])} "
                f"| {us(o['turn_s'])} | {us(f['chunk_s'])} | {us(a['chunk_s'])} "
                f"| {us(o['chunk_s'])} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few turns, few chunks")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    parser.add_argument("--chunks", type=int, default=None, help="N (default 1000)")
    parser.add_argument("--turns", type=int, default=None, help="timed turns per side and N")
    parser.add_argument("--json", action="store_true", help="the report as JSON on stdout")
    options = parser.parse_args()
    chunks = options.chunks or (200 if options.quick else 1000)
    turns = options.turns or (5 if options.quick else 21)
    reports, skipped = [], []
    for name in options.frameworks.split(","):
        if name not in FRAMEWORKS:
            parser.error(f"unknown framework {name!r}; known: {', '.join(FRAMEWORKS)}")
        if importlib.util.find_spec(FRAMEWORKS[name][0]) is None:
            skipped.append(f"{name}: not installed (pip install 'acpwire[{name}]')")
            continue
        print(f"{name}: {turns} turns per side at 1 and {chunks} chunks", file=sys.stderr)
        reports.append(asyncio.run(measure(name, chunks, turns)))
    if options.json:
        print(json.dumps({"reports": reports, "skipped": skipped}, indent=2))
        return
    print(table(reports))
    for line in skipped:
        print(f"skipped: {line}")
    for r in reports:
        print(f"{r['framework']}: {r['updates_per_turn']:.0f} updates per {r['chunks']}-chunk turn")


if __name__ == "__main__":
    main()
