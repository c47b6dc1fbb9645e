"""The chat app's own widgets: the transcript, the status line and the prompt input.

:class:`Transcript` is a Line API widget (as Textual's ``RichLog``): every item, a
session entry or a local note, is rendered once into lines, and again only when it
changes, so one streamed chunk costs one entry's layout however long the session is.
Which entry an update changed is known from the update itself (a chunk's message, a
tool call's id); local events (a turn ending, a terminal's output) re-check tool calls
by a cheap signature instead of rendering them.
"""

from __future__ import annotations

import bisect
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, RenderableType
from rich.segment import Segment
from rich.styled import Styled
from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static, TextArea

from ... import schema as s
from ...client.state import MessageView, SessionState, ToolCallView
from .. import render

__all__ = ["TUI_TEXT_LIMIT", "PromptInput", "StatusLine", "Transcript"]

TUI_TEXT_LIMIT = 100_000
"""Characters of one message the app lays out; the rest is cut, with a note (the
one-shot output prints everything)."""


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


# ---------------------------------------------------------------------- the status line


class StatusLine(Static):
    """One line: the session's status, fitted to the width (never wrapped)."""

    DEFAULT_CSS = """
    StatusLine { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.state: SessionState | None = None
        self.agent: str | None = None
        self.suffix: Text = Text("starting the agent...", style="dim")

    def show(self, state: SessionState | None, agent: str | None, suffix: Text) -> None:
        self.state, self.agent, self.suffix = state, agent, suffix
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        width = max(self.content_region.width, 1)
        if self.state is None:
            line = self.suffix.copy()
        else:
            # The suffix (working, stopped, stop reason) is never the part cut off.
            room = max(width - self.suffix.cell_len, 0)
            line = render.render_status(self.state, agent=self.agent, width=room)
            line.truncate(room, overflow="ellipsis")
            line.append_text(self.suffix)
        line.truncate(width, overflow="ellipsis")
        self.update(line)


# ---------------------------------------------------------------------- the transcript


@dataclass(eq=False)
class _Item:
    """One block of the transcript: a session entry (rendered from the state) or a note."""

    entry: MessageView | ToolCallView | None = None
    note: RenderableType | None = None
    strips: list[Strip] = field(default_factory=list[Strip])
    signature: object = None
    collapsed: bool = False
    index: int = 0


def _signature(entry: MessageView | ToolCallView, state: SessionState) -> object:
    """Changes whenever what a tool call shows changes (messages only grow: their length)."""
    if isinstance(entry, MessageView):
        return len(entry.content)
    return (
        entry.title,
        entry.kind,
        entry.display_status,
        entry.awaiting_permission,
        id(entry.content),
        len(entry.content),
        len(entry.locations),
        tuple(id(state.terminals.get(t)) for t in entry.terminal_ids),
    )


_CHUNK_ROLES: dict[type[Any], str] = {
    s.AgentMessageChunk: "agent",
    s.UserMessageChunk: "user",
    s.AgentThoughtChunk: "thought",
}


class Transcript(ScrollView, can_focus=True):
    """The session's transcript and the app's notes, in order, drawn line by line.

    :meth:`show_state` attaches a session; :meth:`entry_changed` is told about every
    update and :meth:`sync` (the app calls it once per batch) redraws what changed.
    It follows the end while the view is at the bottom. A click on a thought folds it
    to its first line; :meth:`action_toggle_thoughts` folds them all (the app's Ctrl+T).
    """

    DEFAULT_CSS = """
    Transcript { overflow-x: hidden; }
    """

    def __init__(self, *, limit: int = TUI_TEXT_LIMIT, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.limit = limit
        self.fold_thoughts = False
        self.state: SessionState | None = None
        self._items: list[_Item] = []
        self._starts: list[int] = []  # first line of each item
        self._by_entry: dict[int, _Item] = {}
        self._placed = 0  # entries of state.transcript that have an item
        self._dirty: set[int] = set()
        self._recheck_tools = False
        self._width = 0
        self.layouts = 0
        """How many times an item was laid out (what incremental redrawing saves)."""

    # ---------------------------------------------------------------- feeding

    def show_state(self, state: SessionState | None) -> None:
        """Show ``state``'s entries (the notes stay)."""
        self.state = state
        self._drop_entries()
        self.sync()

    def add_note(self, renderable: RenderableType, *, style: str = "") -> None:
        """A local line (not part of the session), after everything shown so far.

        A string is shown as it is (never as markup) and whatever the agent put in the
        note is made safe here (:func:`~acpwire.cli.render.safe_renderable`).
        """
        self._place_new_entries()
        renderable = render.safe_renderable(renderable)
        item = _Item(note=Styled(renderable, style) if style else renderable)
        self._append(item)
        self._lay_out(item)
        self._relayout(len(self._items) - 1)

    def entry_changed(self, update: s.SessionUpdate | None) -> None:
        """Note which entry ``update`` changed (``None``: a local event; re-check tool calls)."""
        state = self.state
        if state is None:
            return
        if isinstance(update, (s.ToolCallStart, s.ToolCallProgress)):
            view = state.tool_calls.get(update.tool_call_id)
            if view is not None:
                self._dirty.add(id(view))
        elif isinstance(update, (s.AgentMessageChunk, s.UserMessageChunk, s.AgentThoughtChunk)):
            target = self._chunk_target(state, update)
            if target is not None:
                self._dirty.add(id(target))
        elif update is None:
            self._recheck_tools = True

    @staticmethod
    def _chunk_target(state: SessionState, update: s.ContentChunk) -> MessageView | None:
        role = _CHUNK_ROLES[type(update)]
        message_id = update.message_id
        for entry in reversed(state.transcript):
            if isinstance(entry, MessageView) and entry.role == role:
                if not isinstance(message_id, str) or entry.message_id == message_id:
                    return entry
        return None

    # ---------------------------------------------------------------- syncing

    def sync(self) -> None:
        """Bring the lines up to date with the state: changed entries, then new ones."""
        state = self.state
        first_changed = len(self._items)
        if state is not None:
            known = self._placed
            if known > len(state.transcript) or (
                known and self._by_entry.get(id(state.transcript[0])) is None
            ):
                self._drop_entries()  # the state was cleared (a session/load replays it)
                first_changed = 0
            for key in self._dirty:
                item = self._by_entry.get(key)
                if item is not None:
                    self._lay_out(item)
                    first_changed = min(first_changed, item.index)
            if self._recheck_tools:
                for item in self._items:
                    entry = item.entry
                    if isinstance(entry, ToolCallView) and (
                        item.signature != _signature(entry, state)
                    ):
                        self._lay_out(item)
                        first_changed = min(first_changed, item.index)
            first_changed = min(first_changed, self._place_new_entries())
        self._dirty.clear()
        self._recheck_tools = False
        self._relayout(first_changed)

    def _place_new_entries(self) -> int:
        """Items for entries the state gained; returns the index of the first new item."""
        first = len(self._items)
        state = self.state
        if state is None:
            return first
        for entry in state.transcript[self._placed :]:
            item = _Item(entry=entry)
            self._by_entry[id(entry)] = item
            self._append(item)
            self._lay_out(item)
        self._placed = len(state.transcript)
        return first

    def _append(self, item: _Item) -> None:
        item.index = len(self._items)
        self._items.append(item)

    def _drop_entries(self) -> None:
        self._items = [i for i in self._items if i.entry is None]
        for index, item in enumerate(self._items):
            item.index = index
        self._by_entry.clear()
        self._placed = 0
        self._dirty.clear()
        self._relayout(0)

    # ---------------------------------------------------------------- rendering

    def _renderable(self, item: _Item) -> RenderableType:
        entry = item.entry
        if entry is None:
            assert item.note is not None
            return item.note
        if isinstance(entry, MessageView) and entry.role == "thought":
            return render.render_thought(
                entry, collapsed=item.collapsed or self.fold_thoughts, limit=self.limit
            )
        terminals = self.state.terminals if self.state is not None else {}
        return render.render_entry(entry, terminals, limit=self.limit)

    def _lay_out(self, item: _Item) -> None:
        """Lay ``item`` out at the current width (nothing before the width is known)."""
        if item.entry is not None and self.state is not None:
            item.signature = _signature(item.entry, self.state)
        width = self._width
        if width <= 0:
            item.strips = []
            return
        self.layouts += 1
        console: Console = self.app.console  # pyright: ignore[reportUnknownMemberType] - App[Any]
        options = console.options.update_width(width)
        lines = list(
            Segment.split_and_crop_lines(console.render(self._renderable(item), options), width)
        )
        item.strips = [Strip(line) for line in lines]
        item.strips.append(Strip.blank(width))  # the gap between items

    def _relayout(self, first_changed: int) -> None:
        """Recount line offsets from item ``first_changed`` on; follow the end if at it."""
        at_end = self.scroll_y >= self.max_scroll_y - 1
        starts = self._starts
        del starts[first_changed:]
        line = 0 if not starts else starts[-1] + len(self._items[len(starts) - 1].strips)
        for item in self._items[first_changed:]:
            starts.append(line)
            line += len(item.strips)
        self.virtual_size = Size(self._width, line)
        self.refresh()
        if at_end:
            self.scroll_end(animate=False, immediate=False, x_axis=False)

    def on_resize(self, event: events.Resize) -> None:
        width = self.scrollable_content_region.width
        if width != self._width:
            self._width = width
            for item in self._items:
                self._lay_out(item)
            self._relayout(0)

    def render_line(self, y: int) -> Strip:
        line = round(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        index = bisect.bisect_right(self._starts, line) - 1
        if index < 0 or index >= len(self._items):
            return Strip.blank(width, self.rich_style)
        strips = self._items[index].strips
        offset = line - self._starts[index]
        if offset >= len(strips):
            return Strip.blank(width, self.rich_style)
        return strips[offset].crop_extend(0, width, self.rich_style)

    # ---------------------------------------------------------------- thoughts

    def item_at(self, line: int) -> _Item | None:
        index = bisect.bisect_right(self._starts, line) - 1
        return self._items[index] if 0 <= index < len(self._items) else None

    def on_click(self, event: events.Click) -> None:
        item = self.item_at(round(self.scroll_offset.y) + event.y)
        if (
            item is not None
            and isinstance(item.entry, MessageView)
            and item.entry.role == "thought"
        ):
            item.collapsed = not item.collapsed
            self._lay_out(item)
            self._relayout(item.index)

    def action_toggle_thoughts(self) -> None:
        self.fold_thoughts = not self.fold_thoughts
        first = len(self._items)
        for item in self._items:
            if isinstance(item.entry, MessageView) and item.entry.role == "thought":
                item.collapsed = False
                self._lay_out(item)
                first = min(first, item.index)
        self._relayout(first)

    # ---------------------------------------------------------------- reading

    def text(self) -> str:
        """Everything shown, as plain text with lines not wrapped (for tests and copying)."""
        buffer = io.StringIO()
        console = Console(file=buffer, width=10_000, color_system=None, highlight=False)
        self.sync()
        for item in self._items:
            console.print(self._renderable(item))
        return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"

    def __len__(self) -> int:
        return len(self._items)
