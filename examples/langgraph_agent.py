"""A LangGraph graph on ACP, in one call: ``agent_app(graph).run()``.

The graph is the usual loop: a model node, a tool node, back to the model until it
answers without a tool call. With ``OPENAI_API_KEY`` set the model is
``ChatOpenAI`` (``LANGGRAPH_MODEL``, default ``gpt-4o-mini``; needs
``pip install langchain-openai``). Without one the example runs as it is: a
scripted stand-in chat model (``_scripted.py``) answers and says so. Try
``read notes.txt``, ``write notes.txt: hello``, ``count one two three`` or ``slow``
(then cancel).

The tool node has the editor's files and terminals (``client_tools()``: a write
shows as a diff and asks first) and this file's ``count_words``, which asks the
user with ``interrupt()`` before it counts. The graph's checkpoints live in the
session's state, kept in ``langgraph_agent.sqlite3`` next to this file: list, load
and resume work after a restart, and the thread goes on where it was.

Run: ``python examples/langgraph_agent.py`` (stdio), e.g. under
``acp chat -- python examples/langgraph_agent.py``. Needs
``pip install 'acpwire[langgraph]'``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _scripted.py beside this file

import _scripted
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt
from pydantic import Field

from acpwire.adapters.langgraph import agent_app, client_tools


class StandInChatModel(BaseChatModel):
    """The stand-in model: what ``_scripted`` decides, as LangChain messages."""

    tool_names: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-stand-in"

    def _decide(self, messages: list[BaseMessage]) -> _scripted.Step:
        prompt, result = "", None
        for message in messages:
            if isinstance(message, HumanMessage):
                prompt, result = str(message.text), None
            elif isinstance(message, ToolMessage):
                result = str(message.text)
        step = _scripted.first(prompt) if result is None else _scripted.after(prompt, result)
        if step.tool is not None and step.tool[0] not in self.tool_names:
            step.words = _scripted._words(
                f"{_scripted.NOTE}This editor does not offer {step.tool[0]}."
            )
            step.tool = None
        return step

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        step = self._decide(messages)
        if step.tool is not None:
            name, arguments = step.tool
            message = AIMessage(
                content="", tool_calls=[{"name": name, "args": arguments, "id": "call_1"}]
            )
        else:
            message = AIMessage(content="".join(step.words))
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _astream(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        step = self._decide(messages)
        if step.thought:
            thought = AIMessageChunk(content=[{"type": "reasoning", "reasoning": step.thought}])
            yield ChatGenerationChunk(message=thought)
        if step.tool is not None:
            name, arguments = step.tool
            chunk = {"name": name, "args": _json(arguments), "id": "call_1", "index": 0}
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=[chunk]))
            return
        for word in step.words:
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))
            if step.pause:
                await asyncio.sleep(step.pause)


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


@tool
def count_words(text: str) -> str:
    """Count the words in a text."""
    if not interrupt({"name": "count_words", "title": f"Count the words of {text!r}?"}):
        return "The user rejected this tool call."
    return str(_scripted.count_words(text))


tools = [*client_tools(), count_words]


def model() -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        from langchain_openai import ChatOpenAI  # type: ignore[import-not-found]

        return ChatOpenAI(model=os.environ.get("LANGGRAPH_MODEL", "gpt-4o-mini")).bind_tools(tools)
    return StandInChatModel(tool_names=[t.name for t in tools])


llm = model()


async def call_model(state: MessagesState) -> dict[str, Any]:
    return {"messages": [await llm.ainvoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("model", call_model)
builder.add_node("tools", ToolNode(tools))
builder.add_edge(START, "model")
builder.add_conditional_edges("model", tools_condition)
builder.add_edge("tools", "model")
graph = builder.compile(name="langgraph-example")

app = agent_app(graph, store=Path(__file__).with_name("langgraph_agent.sqlite3"))

if __name__ == "__main__":
    app.run()
