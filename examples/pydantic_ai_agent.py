"""A pydantic-ai agent on ACP, in one call: ``agent_app(agent).run()``.

With ``OPENAI_API_KEY`` set it uses a real model (``PYDANTIC_AI_MODEL``, default
``openai:gpt-4o-mini``; needs ``pip install 'pydantic-ai-slim[openai]'``). Without
one it runs as it is: a scripted stand-in model (``_scripted.py``, pydantic-ai's own
``FunctionModel``) answers and says so. Try ``read notes.txt``, ``write notes.txt:
hello``, ``count one two three`` or ``slow`` (then cancel).

The model gets the editor's files and terminals as tools (a write shows as a diff
and asks first), plus this file's ``count_words``, which needs the user's approval.
Sessions are kept in ``pydantic_ai_agent.sqlite3`` next to this file: list, load
and resume work after a restart, and the conversation goes on where it was.

Run: ``python examples/pydantic_ai_agent.py`` (stdio), e.g. under
``acp chat -- python examples/pydantic_ai_agent.py``. Needs
``pip install 'acpwire[pydantic-ai]'``.
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
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaThinkingPart, DeltaToolCall, FunctionModel

from acpwire.adapters.pydantic_ai import agent_app


async def scripted(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    """The stand-in model: what ``_scripted`` decides, streamed as pydantic-ai parts."""
    prompt, result = "", None
    for message in messages:
        for part in message.parts if isinstance(message, ModelRequest) else ():
            if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                prompt, result = part.content, None
            elif isinstance(part, ToolReturnPart):
                result = part.model_response_str()
    step = _scripted.first(prompt) if result is None else _scripted.after(prompt, result)
    if step.thought:
        yield {0: DeltaThinkingPart(content=step.thought)}
    offered = {tool.name for tool in info.function_tools}
    if step.tool is not None and step.tool[0] in offered:
        name, args = step.tool
        yield {1: DeltaToolCall(name=name, json_args=_json(args), tool_call_id="call_1")}
        return
    if step.tool is not None:
        step.words = _scripted._words(f"{_scripted.NOTE}This editor does not offer {step.tool[0]}.")
    for word in step.words:
        yield word
        if step.pause:
            await asyncio.sleep(step.pause)


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


def model() -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        return os.environ.get("PYDANTIC_AI_MODEL", "openai:gpt-4o-mini")
    return FunctionModel(stream_function=scripted)


agent = Agent(
    model(),
    name="pydantic-ai-example",
    instructions="You help with the user's project. Use the tools to read, write and run.",
)


@agent.tool_plain(requires_approval=True)
def count_words(text: str) -> int:
    """Count the words in a text."""
    return _scripted.count_words(text)


app = agent_app(agent, store=Path(__file__).with_name("pydantic_ai_agent.sqlite3"))

if __name__ == "__main__":
    app.run()
