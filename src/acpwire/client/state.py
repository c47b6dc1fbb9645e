"""A session as a client shows it: ``session/update`` notifications folded into a view.

:class:`SessionState` is pure and synchronous (no asyncio, no I/O), so a UI can render
it at any moment and tests can feed it hand-made updates. One instance per session.

How updates fold (spec: prompt-turn.mdx, tool-calls.mdx, agent-plan.mdx,
session-modes.mdx, session-config-options.mdx, slash-commands.mdx, session-list.mdx):

* **Messages** are assembled from ``user_message_chunk`` / ``agent_message_chunk`` /
  ``agent_thought_chunk``. A chunk with a ``messageId`` joins the message of the same
  role with that id wherever it is in the transcript; a chunk without one joins the
  last transcript entry if that is a message of the same role, else starts a new
  message. Thoughts are messages with role ``"thought"``.
* **Tool calls** are merged: ``tool_call`` creates, ``tool_call_update`` overlays the
  fields it carries (``null`` clears a field; ``content`` and ``locations`` are replaced
  whole). An update that arrives before its ``tool_call`` creates a placeholder, and the
  late ``tool_call`` then fills only the fields the updates have not set.
* The **plan**, **available commands** and **config options** are replaced whole on
  every update (PLAN-004, CFG-018). ``current_mode_update`` sets the current mode,
  ``session_info_update`` the title and ``updatedAt`` (``null`` clears), ``usage_update``
  the latest usage.
* **Notices** are kept in order; recognised updates this view does not fold (compaction,
  unstable plan operations, ...) are kept in :attr:`SessionState.other_updates` and
  unknown ones in :attr:`SessionState.unknown_updates`, so nothing is lost.

The v2 draft (``acpwire.client.toolkit_v2`` folds its updates here) adds whole-message
upserts (:meth:`SessionState.upsert_message`: content replaced, ``null`` clears),
content streamed into a tool call (:meth:`SessionState.append_tool_call_content`) and
the session's foreground state (:meth:`SessionState.set_foreground`; an ``idle`` with
a stop reason ends the turn). A user message the agent inserts takes over the prompt
:meth:`SessionState.begin_turn` recorded, so a v2 echo never doubles it.

Local events the wire does not carry are methods too: :meth:`SessionState.begin_turn`
records the user's prompt, :meth:`SessionState.end_turn` the stop reason,
:meth:`SessionState.mark_cancelled` flags unfinished tool calls once ``session/cancel``
was sent (CANCEL-001), and :meth:`SessionState.clear` empties the transcript before a
``session/load`` replays it (the replay re-sends the same message ids).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import schema as s
from ..schema import UNSET, UnsetType

__all__ = [
    "Listener",
    "MessageView",
    "Role",
    "SessionState",
    "TerminalSnapshot",
    "ToolCallView",
    "TranscriptEntry",
    "select_values",
]

Role = Literal["user", "agent", "thought"]

_FINISHED = ("completed", "failed")


@dataclass(eq=False)
class MessageView:
    """One message assembled from chunks; ``content`` holds its blocks in arrival order."""

    role: Role
    message_id: str | None = None
    content: list[s.ContentBlock] = field(default_factory=list[s.ContentBlock])
    local: bool = field(default=False, repr=False)
    """Recorded by :meth:`SessionState.begin_turn`, not (yet) by the agent."""

    @property
    def text(self) -> str:
        """The text blocks joined; other blocks are left out (see :attr:`content`)."""
        return "".join(b.text for b in self.content if isinstance(b, s.TextContent))

    def append(self, block: s.ContentBlock) -> None:
        self.content.append(block)


@dataclass(eq=False)
class ToolCallView:
    """A tool call merged from its ``tool_call`` and every ``tool_call_update``.

    ``announced`` is false while only updates (or a permission request) have named it.
    ``cancelled`` is a client-side mark set when the turn was cancelled while the call
    was unfinished; the agent's later updates still apply (CANCEL-007).
    """

    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    name: str | None = None
    content: list[s.ToolCallContent] = field(default_factory=list[s.ToolCallContent])
    locations: list[s.ToolCallLocation] = field(default_factory=list[s.ToolCallLocation])
    raw_input: Any = None
    raw_output: Any = None
    announced: bool = False
    awaiting_permission: bool = False
    cancelled: bool = False
    _set_by_update: set[str] = field(default_factory=set[str], repr=False)

    @property
    def finished(self) -> bool:
        return self.status in _FINISHED

    @property
    def display_status(self) -> str:
        """``status`` (``pending`` when none was sent), or ``cancelled`` for a cancelled unfinished call."""
        if self.cancelled and not self.finished:
            return "cancelled"
        return self.status or "pending"

    @property
    def paths(self) -> list[str]:
        """Every file path the call names: its locations, then the paths of its diffs."""
        found = [loc.path for loc in self.locations]
        found += [c.path for c in self.content if isinstance(c, s.Diff)]
        return list(dict.fromkeys(found))

    @property
    def terminal_ids(self) -> list[str]:
        return [c.terminal_id for c in self.content if isinstance(c, s.Terminal)]

    def merge_start(self, start: s.ToolCallStart) -> None:
        """Apply a ``tool_call``; a field an earlier update already set keeps the update's value."""
        for name in _TOOL_FIELDS:
            value = getattr(start, name)
            if isinstance(value, UnsetType) or name in self._set_by_update:
                continue
            setattr(self, name, list(value) if name in _LIST_FIELDS else value)
        self.announced = True

    def merge_update(self, update: s.ToolCallUpdate) -> None:
        """Apply a ``tool_call_update``: every field it carries replaces the current value."""
        for name in _TOOL_FIELDS:
            value = getattr(update, name)
            if isinstance(value, UnsetType):
                continue
            if name in _LIST_FIELDS:
                value = [] if value is None else list(value)
            setattr(self, name, value)
            self._set_by_update.add(name)


@dataclass(frozen=True)
class TerminalSnapshot:
    """The last output the client saw of a terminal, kept after release (TERM-006)."""

    output: str
    truncated: bool
    exit_code: int | None = None
    signal: str | None = None
    exited: bool = False
    released: bool = False


TranscriptEntry = MessageView | ToolCallView
Listener = Callable[["SessionState", "s.SessionUpdate | None"], None]
"""Called after every change with the update that caused it (``None`` for local events)."""

_TOOL_FIELDS = (
    "title",
    "kind",
    "status",
    "name",
    "content",
    "locations",
    "raw_input",
    "raw_output",
)
_LIST_FIELDS = ("content", "locations")
_CHUNK_ROLES: dict[type, Role] = {
    s.AgentMessageChunk: "agent",
    s.AgentThoughtChunk: "thought",
    s.UserMessageChunk: "user",
}


class SessionState:
    """Everything a client knows about one session, folded from its updates."""

    def __init__(
        self,
        session_id: str,
        cwd: str | None = None,
        additional_directories: Sequence[str] = (),
    ) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.additional_directories: list[str] = list(additional_directories)
        self.transcript: list[TranscriptEntry] = []
        self.tool_calls: dict[str, ToolCallView] = {}
        self.plan: list[s.PlanEntry] = []
        self.available_commands: list[s.AvailableCommand] = []
        self.current_mode_id: str | None = None
        self.available_modes: list[s.SessionMode] = []
        self.config_options: list[s.SessionConfigOption] = []
        self.usage: s.UsageUpdate | None = None
        self.title: str | None = None
        self.updated_at: str | None = None
        self.notices: list[s.Notice] = []
        self.other_updates: list[s.SessionUpdate] = []
        self.unknown_updates: list[s.UnknownSessionUpdate] = []
        self.terminals: dict[str, TerminalSnapshot] = {}
        self.turn_running = False
        self.stop_reason: str | None = None
        self.foreground = "idle"
        """The v2 foreground state: ``idle``, ``running`` or ``requires_action``."""
        self.closed = False
        self.version = 0
        """Incremented on every change: a cheap "needs re-render" check."""
        self._listeners: tuple[Listener, ...] = ()  # replaced, never mutated: no copy per change
        self._messages: dict[tuple[Role, str], MessageView] = {}

    def __repr__(self) -> str:
        return (
            f"SessionState({self.session_id!r}, entries={len(self.transcript)}, "
            f"tool_calls={len(self.tool_calls)}, turn_running={self.turn_running})"
        )

    # ------------------------------------------------------------------ views

    @property
    def messages(self) -> list[MessageView]:
        """User and agent messages in transcript order (thoughts excluded)."""
        return [e for e in self.transcript if isinstance(e, MessageView) and e.role != "thought"]

    @property
    def thoughts(self) -> list[MessageView]:
        return [e for e in self.transcript if isinstance(e, MessageView) and e.role == "thought"]

    @property
    def last_agent_message(self) -> MessageView | None:
        for entry in reversed(self.transcript):
            if isinstance(entry, MessageView) and entry.role == "agent":
                return entry
        return None

    def config_option(self, config_id: str) -> s.SessionConfigOption | None:
        for option in self.config_options:
            if not isinstance(option, s.UnknownSessionConfigOption) and option.id == config_id:
                return option
        return None

    # ------------------------------------------------------------------ listening

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` after every change; returns a function that unsubscribes."""
        self._listeners += (listener,)

        def unsubscribe() -> None:
            listeners = list(self._listeners)
            if listener in listeners:
                listeners.remove(listener)
                self._listeners = tuple(listeners)

        return unsubscribe

    def _changed(self, update: s.SessionUpdate | None) -> None:
        self.version += 1
        for listener in self._listeners:
            listener(self, update)

    # ------------------------------------------------------------------ folding

    def apply(self, update: s.SessionUpdate) -> None:
        """Fold one ``session/update`` payload into the view."""
        # Message chunks are most of a stream: one dict lookup for them, the type
        # tests below for the rest; a chunk that continues the last message (no
        # messageId) is folded right here.
        role = _CHUNK_ROLES.get(type(update))
        if role is not None:
            chunk: s.ContentChunk = update  # type: ignore[assignment]  # (the table: chunks only)
            message_id = chunk.message_id
            transcript = self.transcript
            last = transcript[-1] if transcript else None
            if (
                type(last) is MessageView
                and last.role == role
                and (message_id is None or message_id is UNSET or last.message_id == message_id)
            ):
                last.content.append(chunk.content)  # what _add_chunk would do, sooner
            else:
                self._add_chunk(role, chunk)
            self.version += 1
            for listener in self._listeners:
                listener(self, update)
            return
        if isinstance(update, s.UserMessageChunk):
            self._add_chunk("user", update)
        elif isinstance(update, s.AgentMessageChunk):
            self._add_chunk("agent", update)
        elif isinstance(update, s.AgentThoughtChunk):
            self._add_chunk("thought", update)
        elif isinstance(update, s.ToolCallStart):
            self._start_tool_call(update)
        elif isinstance(update, s.ToolCallProgress):
            self._update_tool_call(update)
        elif isinstance(update, s.PlanUpdate):
            self.plan = list(update.entries)
        elif isinstance(update, s.AvailableCommandsUpdate):
            self.available_commands = list(update.available_commands)
        elif isinstance(update, s.CurrentModeUpdate):
            self.current_mode_id = update.current_mode_id
        elif isinstance(update, s.ConfigOptionUpdate):
            self.config_options = list(update.config_options)
        elif isinstance(update, s.SessionInfoUpdate):
            if not isinstance(update.title, UnsetType):
                self.title = update.title
            if not isinstance(update.updated_at, UnsetType):
                self.updated_at = update.updated_at
        elif isinstance(update, s.UsageUpdate):
            self.usage = update
        elif isinstance(update, s.Notice):
            self.notices.append(update)
        elif isinstance(update, s.UnknownSessionUpdate):
            self.unknown_updates.append(update)
        else:
            self.other_updates.append(update)
        self._changed(update)

    def apply_all(self, updates: Iterable[s.SessionUpdate]) -> None:
        for update in updates:
            self.apply(update)

    def _add_chunk(self, role: Role, chunk: s.ContentChunk) -> None:
        message_id = chunk.message_id
        message: MessageView | None = None
        if message_id is not None and message_id is not UNSET:
            message = self._messages.get((role, message_id))
        else:
            message_id = None
            transcript = self.transcript
            last = transcript[-1] if transcript else None
            if isinstance(last, MessageView) and last.role == role:
                message = last
        if message is None:
            message = MessageView(role=role, message_id=message_id)
            self.transcript.append(message)
            if message_id is not None:
                self._messages[(role, message_id)] = message
        message.content.append(chunk.content)

    def _message(self, role: Role, message_id: str) -> MessageView:
        """The message of ``role`` with ``message_id``; a new user message first takes over
        the prompt recorded by :meth:`begin_turn` (the agent's echo of it)."""
        message = self._messages.get((role, message_id))
        if message is not None:
            return message
        if role == "user":
            for entry in reversed(self.transcript):
                if isinstance(entry, MessageView) and entry.role == "user":
                    if entry.message_id is None and entry.local:
                        entry.message_id, entry.local = message_id, False
                        self._messages[(role, message_id)] = entry
                        return entry
                    break
        message = MessageView(role=role, message_id=message_id)
        self.transcript.append(message)
        self._messages[(role, message_id)] = message
        return message

    def add_chunk(self, role: Role, message_id: str, block: s.ContentBlock) -> None:
        """A v2 message chunk: appended to the message with that id (an echo of the local
        prompt starts it over, the agent's content being the one that counts)."""
        known = (role, message_id) in self._messages
        message = self._message(role, message_id)
        if not known and role == "user":
            message.content = []
        message.append(block)
        self._changed(None)

    def upsert_message(
        self,
        role: Role,
        message_id: str,
        content: Sequence[s.ContentBlock] | UnsetType | None,
    ) -> None:
        """A v2 whole-message update: ``content`` replaces the message's (``None`` clears
        it, unset leaves it)."""
        message = self._message(role, message_id)
        if not isinstance(content, UnsetType):
            message.content = list(content or [])
        self._changed(None)

    def keep_other(self, update: object) -> None:
        """An update this view does not fold (a v2 one v1 has no place for): kept in
        :attr:`other_updates` as it came."""
        self.other_updates.append(update)  # type: ignore[arg-type]
        self._changed(None)

    def append_tool_call_content(self, tool_call_id: str, item: s.ToolCallContent) -> None:
        """A v2 ``tool_call_content_chunk``: one more content item for the tool call."""
        view = self._tool_call(tool_call_id)
        view.content.append(item)
        self._changed(None)

    def set_foreground(self, state: str, stop_reason: str | None = None) -> bool:
        """A v2 ``state_update``. True when it ends a running turn: an ``idle`` that
        reports a stop reason, or any ``idle`` after work was seen running."""
        was = self.foreground
        self.foreground = state
        ends = state == "idle" and self.turn_running and (stop_reason is not None or was != "idle")
        self._changed(None)
        return ends

    def _tool_call(self, tool_call_id: str) -> ToolCallView:
        view = self.tool_calls.get(tool_call_id)
        if view is None:
            view = ToolCallView(tool_call_id=tool_call_id)
            self.tool_calls[tool_call_id] = view
            self.transcript.append(view)
        return view

    def _start_tool_call(self, start: s.ToolCallStart) -> None:
        self._tool_call(start.tool_call_id).merge_start(start)

    def _update_tool_call(self, update: s.ToolCallUpdate) -> None:
        self._tool_call(update.tool_call_id).merge_update(update)

    # ------------------------------------------------------------------ local events

    def begin_turn(self, prompt: str | Sequence[s.ContentBlock]) -> None:
        """Record the user's prompt as a user message and mark a turn as running."""
        blocks: list[s.ContentBlock] = (
            [s.TextContent(text=prompt)] if isinstance(prompt, str) else list(prompt)
        )
        self.transcript.append(MessageView(role="user", content=blocks, local=True))
        self.turn_running = True
        self.stop_reason = None
        self._changed(None)

    def end_turn(self, stop_reason: str | None) -> None:
        """The ``session/prompt`` answer arrived (``None`` when it failed)."""
        self.turn_running = False
        self.stop_reason = stop_reason
        for view in self.tool_calls.values():
            view.awaiting_permission = False
        self._changed(None)

    def mark_cancelled(self) -> None:
        """``session/cancel`` was sent: flag every unfinished tool call (CANCEL-001)."""
        for view in self.tool_calls.values():
            if not view.finished:
                view.cancelled = True
            view.awaiting_permission = False
        self._changed(None)

    def permission_requested(self, tool_call: s.ToolCallUpdate) -> ToolCallView:
        """A permission request names (and may announce) a tool call; merge it and flag it."""
        self._update_tool_call(tool_call)
        view = self.tool_calls[tool_call.tool_call_id]
        view.awaiting_permission = True
        self._changed(None)
        return view

    def permission_answered(self, tool_call_id: str) -> None:
        view = self.tool_calls.get(tool_call_id)
        if view is not None:
            view.awaiting_permission = False
            self._changed(None)

    def set_modes(self, modes: s.SessionModeState | UnsetType | None) -> None:
        """The ``modes`` of a session/new, load or resume answer."""
        if isinstance(modes, s.SessionModeState):
            self.current_mode_id = modes.current_mode_id
            self.available_modes = list(modes.available_modes)
            self._changed(None)

    def set_current_mode(self, mode_id: str) -> None:
        self.current_mode_id = mode_id
        self._changed(None)

    def set_config_options(
        self, options: Sequence[s.SessionConfigOption] | UnsetType | None
    ) -> None:
        """A complete config option list from a response (new/load/resume/set_config_option)."""
        if options is not None and not isinstance(options, UnsetType):
            self.config_options = list(options)
            self._changed(None)

    def record_terminal(self, terminal_id: str, snapshot: TerminalSnapshot) -> None:
        self.terminals[terminal_id] = snapshot
        self._changed(None)

    def clear(self) -> None:
        """Forget the transcript, tool calls, plan, notices and usage (before a replay)."""
        self.transcript.clear()
        self.tool_calls.clear()
        self._messages.clear()
        self.plan = []
        self.notices = []
        self.other_updates = []
        self.unknown_updates = []
        self.usage = None
        self.turn_running = False
        self.stop_reason = None
        self.foreground = "idle"
        self._changed(None)


def select_values(option: s.SessionConfigSelect) -> list[str]:
    """Every value a select config option offers, groups flattened, in order."""
    values: list[str] = []
    for item in option.options:
        if isinstance(item, s.SessionConfigSelectGroup):
            values.extend(o.value for o in item.options)
        else:
            values.append(item.value)
    return values
