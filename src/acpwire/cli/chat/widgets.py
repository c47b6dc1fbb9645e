"""The chat app's own widgets: the prompt input."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from textual.message import Message
from textual.widgets import TextArea

__all__ = ["PromptInput"]


class PromptInput(TextArea):
    """Multi-line prompt: Enter submits, Ctrl+J / Shift+Enter insert a newline."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    completions: Callable[[str], list[str]] | None = None

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self.text))
            return
        if event.key in ("ctrl+j", "shift+enter"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "tab" and self.text.startswith("/") and " " not in self.text:
            event.stop()
            event.prevent_default()
            matches = self.completions(self.text[1:]) if self.completions else []
            if len(matches) == 1:
                self.text = f"/{matches[0]} "
                self.move_cursor(self.document.end)
            elif matches:
                prefix = _common_prefix(matches)
                if len(prefix) + 1 > len(self.text):
                    self.text = "/" + prefix
                    self.move_cursor(self.document.end)
            return
        await super()._on_key(event)


def _common_prefix(words: list[str]) -> str:
    prefix = words[0]
    for word in words[1:]:
        while not word.startswith(prefix):
            prefix = prefix[:-1]
    return prefix
