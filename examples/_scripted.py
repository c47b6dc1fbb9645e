"""What the adapter examples' stand-in model says when no API key is set.

Each example (``pydantic_ai_agent.py``, ...) wraps these decisions in its framework's
own model interface, so every example runs as it is, offline, and shows the same
things: streamed text, a thought, a tool call, a permission question, a file
written through the editor. Prompts it understands:

* ``read PATH``: reads the file through the editor, then says how many lines it has;
* ``write PATH: TEXT``: writes TEXT to the file (the editor shows the diff and asks);
* ``count TEXT``: calls the example's own ``count_words`` tool, which asks first;
* ``slow``: streams a word every 0.2 s for a minute (something to cancel);
* anything else: says it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NOTE = "(A scripted stand-in model is answering: set OPENAI_API_KEY to use a real one.)\n\n"


@dataclass
class Step:
    """One model response: a thought, text pieces to stream, at most one tool call."""

    thought: str = ""
    words: list[str] = field(default_factory=list[str])
    tool: tuple[str, dict[str, Any]] | None = None
    pause: float = 0.0
    """Seconds between words (``slow``)."""


def first(prompt: str) -> Step:
    """The response to a new prompt."""
    verb, _, rest = prompt.strip().partition(" ")
    rest = rest.strip()
    verb = verb.lower()
    if verb == "read" and rest:
        return Step(
            f"The user wants {rest}; I will read it.", tool=("read_text_file", {"path": rest})
        )
    if verb == "write" and ":" in rest:
        path, _, text = rest.partition(":")
        return Step(
            f"I will write {path.strip()}.",
            tool=("write_text_file", {"path": path.strip(), "content": text.strip() + "\n"}),
        )
    if verb == "count" and rest:
        return Step("Counting words needs a tool.", tool=("count_words", {"text": rest}))
    if verb == "slow":
        return Step("This will take a while.", words=[f"tick {i} " for i in range(300)], pause=0.2)
    return Step("Nothing to do but answer.", words=_words(NOTE + f"You said: {prompt.strip()}"))


def after(prompt: str, result: str) -> Step:
    """The response once the tool call of :func:`first` returned ``result``."""
    verb = prompt.strip().partition(" ")[0].lower()
    if "rejected" in result or "denied" in result:
        return Step(words=_words(NOTE + "You said no, so I left it."))
    if verb == "read":
        lines = result.count("\n") + (0 if result.endswith("\n") or not result else 1)
        return Step(words=_words(NOTE + f"That file has {lines} lines."))
    if verb == "count":
        return Step(words=_words(NOTE + f"That is {result.strip()} words."))
    return Step(words=_words(NOTE + result.strip()))


def _words(text: str) -> list[str]:
    """``text`` in word-sized pieces, as a model streams it."""
    pieces = text.split(" ")
    return [p + " " for p in pieces[:-1]] + [pieces[-1]]


def count_words(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())
