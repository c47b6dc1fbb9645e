"""Rich renderers of session updates and of a :class:`~acpwire.client.state.SessionState`.

The one place that decides how a session looks on a terminal: ``acp chat`` (its
non-interactive form prints these, its Textual app puts them in widgets) and a future
``acp inspect`` share it. Every function is pure: state or updates in, a Rich
renderable out, so tests render to ``Console(file=StringIO(), width=...)`` and
assert on the text.

Importing this module needs Rich (the ``cli`` extra); :mod:`acpwire.cli.main` imports
it lazily and prints an install hint when it is missing.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from rich.console import Group, RenderableType
from rich.markdown import Markdown
from rich.padding import Padding
from rich.text import Text

from .. import schema as s
from ..client.state import MessageView, SessionState, TerminalSnapshot, ToolCallView
from ..schema import unset_to_none

if TYPE_CHECKING:
    from ..schema import v2

__all__ = [
    "HUGE_TEXT",
    "STATUS_STYLES",
    "conversation_parts",
    "render_block",
    "render_conversation",
    "render_diff",
    "render_entry",
    "render_message",
    "render_notice",
    "render_plan",
    "render_status",
    "render_terminal",
    "render_thought",
    "render_tool_call",
    "render_transcript",
    "render_update",
    "thought_text",
    "unset_none",
    "update_to_wire",
]

STATUS_STYLES: Mapping[str, str] = {
    "pending": "yellow",
    "in_progress": "cyan",
    "completed": "green",
    "failed": "red",
    "cancelled": "magenta",
}
"""Colour of a tool call or plan entry status."""

HUGE_TEXT = 1_000_000
"""Characters past which a message is shown as plain text: Rich lays out Markdown and
wraps text at about a megabyte a second, so a 20 MB chunk would hold the screen for
minutes."""

_PLAN_MARKS = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}
_TOOL_ICONS = {
    "read": "read",
    "edit": "edit",
    "delete": "delete",
    "move": "move",
    "search": "search",
    "execute": "execute",
    "think": "think",
    "fetch": "fetch",
    "switch_mode": "switch_mode",
    "other": "other",
}


unset_none = unset_to_none
"""The chat UI's name for :func:`acpwire.schema.unset_to_none` (until it imports that)."""


# ---------------------------------------------------------------------- content


def render_block(block: s.ContentBlock, *, markdown: bool = False) -> RenderableType:
    """One content block: text (as Markdown when ``markdown``), or a one-line summary."""
    if isinstance(block, s.TextContent):
        return Markdown(block.text) if markdown else Text(block.text)
    if isinstance(block, s.ResourceLink):
        return Text(f"[link] {block.name} <{block.uri}>", style="blue")
    if isinstance(block, s.EmbeddedResource):
        res = block.resource
        uri = getattr(res, "uri", "?")
        size = len(res.text) if isinstance(res, s.TextResourceContents) else None
        extra = f" ({size} chars)" if size is not None else ""
        return Text(f"[resource] {uri}{extra}", style="blue")
    if isinstance(block, s.ImageContent):
        return Text(f"[image {block.mime_type}]", style="blue")
    if isinstance(block, s.AudioContent):
        return Text(f"[audio {block.mime_type}]", style="blue")
    return Text(f"[{type(block).__name__}]", style="blue")


def _indented(text: Text, prefix: str, first: str | None = None) -> Text:
    """``text`` with ``prefix`` before every non-blank line (``first`` before the first)."""
    out = Text(style=text.style)
    for i, line in enumerate(text.split("\n", allow_blank=True)):
        if i:
            out.append("\n")
        if i == 0 and first is not None:
            out.append(first)
        elif line.plain:
            out.append(prefix)
        out.append_text(line)
    return out


def _clipped(text: str, limit: int | None) -> tuple[str, Text | None]:
    """``text`` cut to ``limit`` characters, and a note saying so when it was cut."""
    if limit is None or len(text) <= limit:
        return text, None
    note = Text(
        f"[message truncated for display: {len(text):,} characters, the first {limit:,} shown]",
        style="yellow",
    )
    return text[:limit], note


_SENTENCE_END = (".", "!", "?", ":", "**")


def thought_text(message: MessageView) -> str:
    """A thought's text blocks joined, with a paragraph break where one thought ends.

    Agents stream reasoning either as token deltas ("Thin", "king") or as whole
    thoughts one chunk each ("**Planning**...files.", "**Reading**..."), with no
    separator and usually no message id. A break goes where a chunk closes a
    sentence and the next one opens a new one with no space between them, which a
    token stream does not produce (its spaces start the next token).
    """
    pieces = [b.text for b in message.content if isinstance(b, s.TextContent)]
    out: list[str] = []
    for piece in pieces:
        if out and piece and out[-1]:
            previous = out[-1]
            if (
                previous.endswith(_SENTENCE_END)
                and not previous[-1].isspace()
                and (piece[0].isupper() or piece[0] in "*#")
            ):
                out.append("\n\n")
        out.append(piece)
    return "".join(out)


def render_thought(
    message: MessageView, *, collapsed: bool = False, limit: int | None = None
) -> Text:
    """A thought, dimmed, every line marked; ``collapsed``: its first line and a count."""
    text, note = _clipped(thought_text(message).strip("\n"), limit)
    lines = text.split("\n")
    if collapsed and len(lines) > 1:
        return Text(f"thinking: {lines[0]} [+{len(lines) - 1} lines]", style="dim italic")
    out = _indented(Text(text, style="dim italic"), "          ", "thinking: ")
    if note is not None:
        out.append("\n")
        out.append_text(note)
    return out


def _as_text(renderable: RenderableType) -> Text:
    return renderable if isinstance(renderable, Text) else Text(str(renderable))


def render_message(
    message: MessageView, *, plain: bool = False, limit: int | None = None
) -> RenderableType:
    """User prompts bold after ``>``, agent messages as Markdown, thoughts dimmed.

    ``plain`` gives Text only (the agent's Markdown as written), for output that is
    not a terminal. Messages over :data:`HUGE_TEXT` characters are never laid out as
    Markdown, and ``limit`` cuts the text shown, with a note.
    """
    if message.role == "thought":
        return render_thought(message, limit=limit)
    text, note = _clipped(message.text, limit)
    parts: list[RenderableType] = []
    if message.role == "user":
        if text:
            line = Text("> ", style="bold cyan")
            line.append(text, style="bold")
            parts.append(line)
    elif text:
        parts.append(Text(text) if plain or len(text) > HUGE_TEXT else Markdown(text))
    if note is not None:
        parts.append(note)
    parts += [render_block(b) for b in message.content if not isinstance(b, s.TextContent)]
    if plain:
        return Text("\n").join(p for p in parts if isinstance(p, Text))
    return Group(*parts)


# ---------------------------------------------------------------------- diffs, terminals


def render_diff(path: str, old_text: str | None, new_text: str) -> Text:
    """A unified diff of one file, ``+`` lines green, ``-`` lines red, hunk headers cyan."""
    out = Text()
    old_lines = [] if old_text is None else old_text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)
    header = f"{'new file' if old_text is None else 'diff'} {path}"
    out.append(header + "\n", style="bold")
    lines = list(
        difflib.unified_diff(
            old_lines,
            new_lines,
            fromfile="/dev/null" if old_text is None else f"a/{path}",
            tofile=f"b/{path}",
            n=2,
        )
    )
    for line in lines[2:]:  # the ---/+++ header repeats the path
        text = line.rstrip("\n")
        if line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = ""
        out.append(text + "\n", style=style)
    if not lines:
        out.append("(no changes)\n", style="dim")
    out.rstrip()
    return out


def render_terminal(terminal_id: str, snapshot: TerminalSnapshot | None) -> Text:
    """The last output seen of a terminal, with its exit status once it exited."""
    out = Text()
    if snapshot is None:
        out.append(f"terminal {terminal_id}: (no output yet)", style="dim")
        return out
    if snapshot.exited:
        how = (
            f"exit {snapshot.exit_code}"
            if snapshot.exit_code is not None
            else f"signal {snapshot.signal}"
        )
        status_style = "green" if snapshot.exit_code == 0 else "red"
    else:
        how, status_style = "running", "cyan"
    out.append(f"terminal {terminal_id} ", style="bold")
    out.append(f"({how})", style=status_style)
    if snapshot.truncated:
        out.append(" [truncated]", style="yellow")
    output = snapshot.output.rstrip("\n")
    if output:
        out.append("\n")
        out.append(output, style="on grey11")
    return out


# ---------------------------------------------------------------------- tool calls


def render_tool_call(
    call: ToolCallView,
    terminals: Mapping[str, TerminalSnapshot] | None = None,
    *,
    plain: bool = False,
) -> RenderableType:
    """Kind, title, status, locations, then its content: diffs, terminals, text.

    ``plain`` gives one Text, the content indented by spaces instead of padding.
    """
    terminals = terminals or {}
    status = call.display_status
    head = Text()
    head.append("* ", style=STATUS_STYLES.get(status, ""))
    head.append(f"[{_TOOL_ICONS.get(call.kind or 'other', call.kind or 'other')}] ", style="bold")
    head.append(call.title or call.tool_call_id)
    head.append(f"  {status}", style=STATUS_STYLES.get(status, ""))
    if call.awaiting_permission:
        head.append("  awaiting permission", style="bold yellow")
    parts: list[Text] = [head]
    for loc in call.locations:
        line = unset_to_none(loc.line)
        parts.append(Text(f"  at {loc.path}" + (f":{line}" if line is not None else ""), "dim"))
    body: list[Text] = []
    for item in call.content:
        if isinstance(item, s.Diff):
            body.append(render_diff(item.path, unset_to_none(item.old_text), item.new_text))
        elif isinstance(item, s.Terminal):
            body.append(render_terminal(item.terminal_id, terminals.get(item.terminal_id)))
        elif isinstance(item, s.Content):
            body.append(_as_text(render_block(item.content)))
        else:
            body.append(Text(f"[{type(item).__name__}]", style="dim"))
    if plain:
        return Text("\n").join([*parts, *(_indented(b, "  ") for b in body)])
    if not body:
        return Group(*parts)
    return Group(*parts, Padding(Group(*body), (0, 0, 0, 2)))


# ---------------------------------------------------------------------- plan, status


def render_plan(entries: Sequence[s.PlanEntry]) -> RenderableType:
    """The plan, one line per entry: ``[x]`` completed, ``[~]`` in progress, ``[ ]`` pending."""
    out = Text("Plan\n", style="bold")
    for entry in entries:
        status = str(entry.status)
        out.append(f"  {_PLAN_MARKS.get(status, '[?]')} ", style=STATUS_STYLES.get(status, ""))
        out.append(entry.content, style="strike dim" if status == "completed" else "")
        out.append(f"  ({entry.priority}, {status})\n", style="dim")
    out.rstrip()
    return out


def render_notice(notice: s.Notice) -> Text:
    style = {"error": "bold red", "warning": "yellow"}.get(str(notice.severity), "blue")
    text = Text(f"{notice.severity}: {notice.title}", style=style)
    description = unset_to_none(notice.description)
    if description:
        text.append(f"\n  {description}", style="")
    return text


def _mode_name(state: SessionState) -> str | None:
    if state.current_mode_id is None:
        return None
    for mode in state.available_modes:
        if mode.id == state.current_mode_id:
            return f"{mode.name} ({mode.id})" if mode.name != mode.id else mode.id
    return state.current_mode_id


def render_status(
    state: SessionState, *, agent: str | None = None, width: int | None = None
) -> Text:
    """One line: agent, title, mode, config values, usage (tokens and cost).

    With ``width``, parts are left out until the line fits, least useful first: config
    values (the palette and ``/config`` show them), then the title, then the usage.
    """
    # (text, style, drop order: higher goes first)
    parts: list[tuple[str, str, int]] = []
    if agent:
        parts.append((agent, "bold", 0))
    if state.title:
        parts.append((f"title: {state.title}", "", 2))
    mode = _mode_name(state)
    if mode:
        parts.append((f"mode: {mode}", "cyan", 0))
    for option in state.config_options:
        category: object = getattr(option, "category", None)
        if mode and category == "mode":
            continue  # the same thing as the mode, already shown
        if isinstance(option, (s.SessionConfigSelect, s.SessionConfigBoolean)):
            parts.append((f"{option.id}: {str(option.current_value).lower()}", "", 3))
    if state.usage is not None:
        usage = state.usage
        pct = f" ({usage.used * 100 // usage.size}%)" if usage.size else ""
        text = f"usage: {usage.used}/{usage.size}{pct}"
        cost = unset_to_none(usage.cost)
        if isinstance(cost, s.Cost):
            text += f" {cost.amount:g} {cost.currency}"
        parts.append((text, "magenta", 1))
    if width is not None:
        while sum(len(p[0]) + 3 for p in parts) - 3 > width and any(p[2] for p in parts):
            worst = max(range(len(parts)), key=lambda i: (parts[i][2], i))
            del parts[worst]
    out = Text()
    for i, (text, style, _) in enumerate(parts):
        if i:
            out.append(" | ", style="dim")
        out.append(text, style=style)
    return out


# ---------------------------------------------------------------------- whole sessions


def render_entry(
    entry: MessageView | ToolCallView,
    terminals: Mapping[str, TerminalSnapshot] | None = None,
    *,
    plain: bool = False,
    limit: int | None = None,
) -> RenderableType:
    if isinstance(entry, MessageView):
        return render_message(entry, plain=plain, limit=limit)
    return render_tool_call(entry, terminals, plain=plain)


def render_transcript(state: SessionState, *, plain: bool = False) -> RenderableType:
    """Every transcript entry (messages, thoughts, tool calls) in order."""
    return Group(*_transcript_parts(state, plain))


def _transcript_parts(state: SessionState, plain: bool) -> list[RenderableType]:
    parts: list[RenderableType] = []
    entries = state.transcript
    for i, entry in enumerate(entries):
        parts.append(render_entry(entry, state.terminals, plain=plain))
        following = entries[i + 1] if i + 1 < len(entries) else None
        if isinstance(entry, MessageView) and entry.role == "thought" and following is not None:
            parts.append(Text())  # a blank line between a thought and what follows it
    return parts


def conversation_parts(
    state: SessionState,
    *,
    agent: str | None = None,
    stop_reason: str | None = None,
    plain: bool = False,
) -> list[RenderableType]:
    """What ``acp chat --prompt`` prints, part by part (all Text when ``plain``)."""
    parts = _transcript_parts(state, plain)
    if state.plan:
        parts.append(render_plan(state.plan))
    parts += [render_notice(n) for n in state.notices]
    status = render_status(state, agent=agent)
    if status.plain:
        parts.append(status)
    reason = stop_reason if stop_reason is not None else state.stop_reason
    if reason is not None:
        parts.append(Text(f"stop: {reason}", style="green" if reason == "end_turn" else "yellow"))
    return parts


def render_conversation(
    state: SessionState,
    *,
    agent: str | None = None,
    stop_reason: str | None = None,
    plain: bool = False,
) -> RenderableType:
    """Transcript, plan, notices, status line and stop reason, as one renderable."""
    return Group(*conversation_parts(state, agent=agent, stop_reason=stop_reason, plain=plain))


def render_update(update: s.SessionUpdate) -> Text:
    """A single ``session/update``, one or a few lines (for logs and ``inspect``)."""
    wire = s.to_json(update)
    kind = (
        cast("dict[str, Any]", wire).get("sessionUpdate", type(update).__name__)
        if isinstance(wire, dict)
        else "?"
    )
    out = Text(f"{kind}: ", style="bold")
    if isinstance(update, (s.AgentMessageChunk, s.UserMessageChunk, s.AgentThoughtChunk)):
        block = update.content
        out.append(block.text if isinstance(block, s.TextContent) else f"[{type(block).__name__}]")
    elif isinstance(update, (s.ToolCallStart, s.ToolCallProgress)):
        fields = [update.tool_call_id]
        for name in ("kind", "status", "title"):
            value = unset_to_none(getattr(update, name))
            if value is not None:
                fields.append(f"{name}={value}")
        out.append(" ".join(fields))
    elif isinstance(update, s.PlanUpdate):
        out.append(", ".join(f"{e.content} ({e.status})" for e in update.entries))
    elif isinstance(update, s.CurrentModeUpdate):
        out.append(update.current_mode_id)
    elif isinstance(update, s.UsageUpdate):
        out.append(f"{update.used}/{update.size}")
    elif isinstance(update, s.SessionInfoUpdate):
        out.append(str(unset_to_none(update.title)))
    elif isinstance(update, s.AvailableCommandsUpdate):
        out.append(", ".join("/" + c.name for c in update.available_commands))
    else:
        out.append(json.dumps(wire, sort_keys=True)[:200], style="dim")
    return out


def update_to_wire(session_id: str, update: s.SessionUpdate | v2.SessionUpdate) -> dict[str, Any]:
    """The params of the ``session/update`` notification, exactly as on the wire (either
    version: the v2 draft's when the connection chose it)."""
    return {"sessionId": session_id, "update": s.to_json(update)}
