"""An OpenAI Agents SDK agent on ACP, in one call: ``agent_app(agent).run()``.

With ``OPENAI_API_KEY`` set it uses a real model (``OPENAI_AGENTS_MODEL``, default
``gpt-4o-mini``). Without one it runs as it is: a scripted stand-in model
(``_scripted.py``, served through the SDK's own ``Model`` interface and its
``agents.testing.ScriptedModel`` events) answers and says so. Try ``read notes.txt``,
``write notes.txt: hello``, ``count one two three`` or ``slow`` (then cancel).

The model gets the editor's files and terminals as tools (a write shows as a diff
and asks first), plus this file's ``count_words``, which needs the user's approval.
Sessions are kept in ``openai_agents_agent.sqlite3`` next to this file: list, load
and resume work after a restart, and the conversation goes on where it was.

Run: ``python examples/openai_agents_agent.py`` (stdio), e.g. under
``acp chat -- python examples/openai_agents_agent.py``. Needs
``pip install 'acpwire[openai-agents]'``.
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
from agents import Agent, Model, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, function_call
from openai.types.responses import ResponseOutputMessage, ResponseOutputText, ResponseReasoningItem
from openai.types.responses.response_reasoning_item import Summary

from acpwire.adapters.openai_agents import agent_app


class StandInModel(Model):
    """The stand-in model: what ``_scripted`` decides, as one scripted model response."""

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        return await ScriptedModel([self.decide(args[1], args[3])[0]]).get_response(*args, **kwargs)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        output, pause = self.decide(args[1], args[3])
        async for event in ScriptedModel([output]).stream_response(*args, **kwargs):
            yield event
            if pause and event.type == "response.output_text.delta":
                await asyncio.sleep(pause)

    @staticmethod
    def decide(items: Any, tools: list[Any]) -> tuple[list[Any], float]:
        prompt, result = "", None
        for item in items if isinstance(items, list) else [{"role": "user", "content": items}]:
            if item.get("role") == "user":
                prompt, result = str(item.get("content")), None
            elif item.get("type") == "function_call_output":
                result = str(item.get("output"))
        step = _scripted.first(prompt) if result is None else _scripted.after(prompt, result)
        thought = [
            ResponseReasoningItem(
                id="rs_1",
                type="reasoning",
                summary=[Summary(text=step.thought, type="summary_text")],
            )
        ]
        if step.tool is not None and step.tool[0] in {t.name for t in tools}:
            return [*thought, function_call(*step.tool, call_id="call_1")], 0.0
        if step.tool is not None:
            step.words = _scripted._words(
                f"{_scripted.NOTE}This editor does not offer {step.tool[0]}."
            )
        parts = [ResponseOutputText(text=w, type="output_text", annotations=[]) for w in step.words]
        message = ResponseOutputMessage(
            id="msg_1", type="message", role="assistant", status="completed", content=parts
        )
        return [*thought, message] if step.thought else [message], step.pause


@function_tool(needs_approval=True)
def count_words(text: str) -> int:
    """Count the words in a text."""
    return _scripted.count_words(text)


if not os.environ.get("OPENAI_API_KEY"):
    set_tracing_disabled(True)  # (traces go to OpenAI, which needs the key)

agent = Agent(
    "openai-agents-example",
    instructions="You help with the user's project. Use the tools to read, write and run.",
    model=os.environ.get("OPENAI_AGENTS_MODEL", "gpt-4o-mini")
    if os.environ.get("OPENAI_API_KEY")
    else StandInModel(),
    tools=[count_words],
)

app = agent_app(agent, store=Path(__file__).with_name("openai_agents_agent.sqlite3"))

if __name__ == "__main__":
    app.run()
