"""A smolagents CodeAgent on ACP, in one call: ``agent_app(agent).run()``.

With ``OPENAI_API_KEY`` set it uses a real model through smolagents'
``OpenAIServerModel`` (``SMOLAGENTS_MODEL``, default ``gpt-4o-mini``; needs the
``openai`` package). Without one it runs as it is: a scripted stand-in model
(``_scripted.py``, as a smolagents ``Model``) writes the code and says so. Try
``read notes.txt``, ``write notes.txt: hello``, ``count one two three`` or ``slow``
(then cancel).

Each code step is a tool call showing the code and its logs; the code can call the
editor's files and terminals (a write shows as a diff and asks first) and this file's
``count_words``, which asks the user before it runs (``ask_before``). Sessions are
kept in ``smolagents_agent.sqlite3`` next to this file: list, load and resume work
after a restart, and the conversation goes on where it was.

Run: ``python examples/smolagents_agent.py`` (stdio), e.g. under
``acp chat -- python examples/smolagents_agent.py``. Needs
``pip install 'acpwire[smolagents]'``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _scripted.py beside this file

import _scripted
from smolagents import CodeAgent, Model, tool
from smolagents.models import ChatMessage, ChatMessageStreamDelta, MessageRole

from acpwire.adapters.smolagents import agent_app


class StandInModel(Model):
    """The stand-in model: what ``_scripted`` decides, written as a CodeAgent's code."""

    def __init__(self) -> None:
        super().__init__(model_id="scripted-stand-in")

    def decide(self, messages: list[Any]) -> tuple[str, float]:
        prompt, result = "", None
        for message in messages:
            text = _text(message.content)
            if text.startswith("New task:\n"):
                prompt, result = text.removeprefix("New task:\n"), None
            elif "Execution logs:\n" in text:
                logs = text.split("Execution logs:\n", 1)[1]
                result = logs.split("Last output from code snippet:", 1)[0].removesuffix("\n")
        step = _scripted.first(prompt) if result is None else _scripted.after(prompt, result)
        if step.tool is not None:
            name, arguments = step.tool
            call = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
            return f"Thought: {step.thought}\n<code>\nprint({name}({call}))\n</code>", 0.0
        answer = "".join(step.words)
        return (
            f"Thought: {step.thought or 'I can answer.'}\n<code>\nfinal_answer({answer!r})\n</code>",
            step.pause,
        )

    def generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> ChatMessage:
        return ChatMessage(role=MessageRole.ASSISTANT, content=self.decide(messages)[0])

    def generate_stream(
        self, messages: list[Any], *args: Any, **kwargs: Any
    ) -> Iterator[ChatMessageStreamDelta]:
        text, pause = self.decide(messages)
        for line in text.splitlines(keepends=True):
            yield ChatMessageStreamDelta(content=line)
        for _ in range(300 if pause else 0):  # ``slow``: a model that takes a minute
            yield ChatMessageStreamDelta(content="")
            time.sleep(pause)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


@tool
def count_words(text: str) -> int:
    """Count the words in a text.

    Args:
        text: The text whose words to count.
    """
    return _scripted.count_words(text)


def model() -> Any:
    if os.environ.get("OPENAI_API_KEY"):
        from smolagents import OpenAIServerModel

        return OpenAIServerModel(model_id=os.environ.get("SMOLAGENTS_MODEL", "gpt-4o-mini"))
    return StandInModel()


agent = CodeAgent(tools=[count_words], model=model(), name="smolagents_example", verbosity_level=0)

app = agent_app(
    agent, ask_before=["count_words"], store=Path(__file__).with_name("smolagents_agent.sqlite3")
)

if __name__ == "__main__":
    app.run()
