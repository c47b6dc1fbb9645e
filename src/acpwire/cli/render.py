"""Rich renderers of session updates and of a :class:`~acpwire.client.state.SessionState`.

The one place that decides how a session looks on a terminal: ``acp chat`` (its
non-interactive form prints these, its Textual app puts them in widgets) and a future
``acp inspect`` share it. Every function is pure: state or updates in, a Rich
renderable out, so tests render to ``Console(file=StringIO(), width=...)`` and
assert on the text.

Every string an agent chose passes through :func:`~acpwire.cli.sanitize.sanitize` here,
on its way into a ``Text`` (never a markup string), and Markdown is drawn without
terminal hyperlinks (a link shows its address): nothing an agent sends reaches the
terminal as a control sequence (docs/security.md, "What acp chat shows").

Importing this module needs Rich (the ``cli`` extra); :mod:`acpwire.cli.main` imports
it lazily and prints an install hint when it is missing.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.markdown import Markdown
from rich.padding import Padding
from rich.text import Text

from .. import schema as s
from ..client.state import MessageView, SessionState, TerminalSnapshot, ToolCallView
from ..schema import unset_to_none
from .sanitize import sanitize

if TYPE_CHECKING:
    from ..schema import v2

__all__ = [
    "HUGE_TEXT",
    "OPTION_KIND_LABELS",
    "STATUS_STYLES",
    "agent_line",
    "agent_text",
    "conversation_parts",
    "option_label",
    "render_block",
    "render_conversation",
    "render_diff",
    "render_entry",
    "render_message",
    "render_notice",
    "render_permission_options",
    "render_plan",
    "render_status",
    "render_terminal",
    "render_thought",
    "render_tool_call",
    "render_transcript",
    "render_update",
    "safe_renderable",
    "thought_text",
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


OPTION_KIND_LABELS: Mapping[str, str] = {
    "allow_once": "Allow once",
    "allow_always": "Allow always",
    "reject_once": "Reject once",
    "reject_always": "Reject always",
}
"""What a permission option does, in acpwire's words: shown with every option, so an
agent that names an ``allow_always`` option "Reject" cannot make a user allow it."""


def agent_line(value: object) -> str:
    """A name or label the agent chose, made safe and put on one line."""
    return sanitize(str(value), line=True)


def agent_text(value: str, style: str = "") -> Text:
    """Text the agent wrote (newlines and tabs kept), made safe, as a Rich ``Text``."""
    return Text(sanitize(value), style=style)


def safe_renderable(renderable: RenderableType) -> RenderableType:
    """What acp shows people, made safe however it was built (the last guard at a sink).

    A string becomes plain ``Text`` (never markup); a ``Text`` is cleaned piece by
    piece, its styles kept. Other renderables come from this module's renderers,
    which clean the agent's strings as they build them.
    """
    if isinstance(renderable, str):
        return agent_text(renderable)
    if not isinstance(renderable, Text) or sanitize(renderable.plain) == renderable.plain:
        return renderable
    spans = renderable.spans
    cuts = sorted({c for span in spans for c in (span.start, span.end)} - {0, len(renderable)})
    out = Text(style=renderable.style, end=renderable.end)
    for piece in renderable.divide(cuts):
        clean = Text(sanitize(piece.plain))
        for span in piece.spans:  # each covers its whole piece: pieces end where spans do
            clean.stylize(span.style)
        out.append_text(clean)
    return out


def option_label(kind: object) -> str:
    """acpwire's label for a permission option's kind (an unknown kind is named so)."""
    return OPTION_KIND_LABELS.get(str(kind), f"Unknown kind ({agent_line(kind)})")


# ---------------------------------------------------------------------- content


def render_block(block: s.ContentBlock, *, markdown: bool = False) -> RenderableType:
    """One content block: text (as Markdown when ``markdown``), or a one-line summary."""
    if isinstance(block, s.TextContent):
        return _markdown(block.text) if markdown else agent_text(block.text)
    if isinstance(block, s.ResourceLink):
        return Text(f"[link] {agent_line(block.name)} <{agent_line(block.uri)}>", style="blue")
    if isinstance(block, s.EmbeddedResource):
        res = block.resource
        uri = getattr(res, "uri", "?")
        size = len(res.text) if isinstance(res, s.TextResourceContents) else None
        extra = f" ({size} chars)" if size is not None else ""
        return Text(f"[resource] {agent_line(uri)}{extra}", style="blue")
    if isinstance(block, s.ImageContent):
        return Text(f"[image {agent_line(block.mime_type)}]", style="blue")
    if isinstance(block, s.AudioContent):
        return Text(f"[audio {agent_line(block.mime_type)}]", style="blue")
    return Text(f"[{type(block).__name__}]", style="blue")


def _markdown(text: str) -> Markdown:
    """The agent's Markdown, safe; a link shows its address instead of hiding it (OSC 8)."""
    return Markdown(sanitize(text), hyperlinks=False)


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


def thought_text(message: MessageView) -> str:
    """A thought's text blocks joined, with a paragraph break where one thought ends.

    Agents stream reasoning either as token deltas ("Thin", "king") or as whole
    thoughts one chunk each ("**Planning**...files.", "12 files; ..."), with no
    separator and usually no message id. A break goes where a chunk closes a
    sentence and the next one opens a new one with no space between them, which a
    token stream does not produce (its spaces start the next token).
    """
    out: list[str] = []
    before = ""  # the last two characters joined so far
    for piece in (b.text for b in message.content if isinstance(b, s.TextContent)):
        if _opens_a_thought(before, piece):
            out.append("\n\n")
        out.append(piece)
        before = (before + piece)[-2:]
    return "".join(out)


def _opens_a_thought(before: str, piece: str) -> bool:
    """Whether ``piece`` starts a new thought right after text that ends with ``before``."""
    if not before or not piece or before[-1].isspace():
        return False
    first = piece[0]
    if not (first.isupper() or first.isdigit() or first in "*#"):
        return False
    if before.endswith("**"):
        return True
    # "3." then "11" goes on a number; "first." then "12 files" is a new thought.
    return before[-1] in ".!?:" and not (first.isdigit() and before[:1].isdigit())


def render_thought(
    message: MessageView, *, collapsed: bool = False, limit: int | None = None
) -> Text:
    """A thought, dimmed, every line marked; ``collapsed``: its first line and a count."""
    text, note = _clipped(thought_text(message), limit)
    text = sanitize(text).strip("\n")
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
    text = sanitize(text)
    parts: list[RenderableType] = []
    if message.role == "user":
        if text:
            line = Text("> ", style="bold cyan")
            line.append(text, style="bold")
            parts.append(line)
    elif text:
        parts.append(Text(text) if plain or len(text) > HUGE_TEXT else _markdown(text))
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
    path = agent_line(path)
    old_lines = [] if old_text is None else sanitize(old_text).splitlines(keepends=True)
    new_lines = sanitize(new_text).splitlines(keepends=True)
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
    terminal_id = agent_line(terminal_id)
    if snapshot is None:
        out.append(f"terminal {terminal_id}: (no output yet)", style="dim")
        return out
    if snapshot.exited:
        how = (
            f"exit {snapshot.exit_code}"
            if snapshot.exit_code is not None
            else f"signal {agent_line(snapshot.signal)}"
        )
        status_style = "green" if snapshot.exit_code == 0 else "red"
    else:
        how, status_style = "running", "cyan"
    out.append(f"terminal {terminal_id} ", style="bold")
    out.append(f"({how})", style=status_style)
    if snapshot.truncated:
        out.append(" [truncated]", style="yellow")
    output = sanitize(snapshot.output).rstrip("\n")
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
    kind = call.kind or "other"
    head = Text()
    head.append("* ", style=STATUS_STYLES.get(status, ""))
    head.append(f"[{_TOOL_ICONS.get(kind) or agent_line(kind)}] ", style="bold")
    head.append(agent_line(call.title or call.tool_call_id))
    head.append(f"  {agent_line(status)}", style=STATUS_STYLES.get(status, ""))
    if call.awaiting_permission:
        head.append("  awaiting permission", style="bold yellow")
    parts: list[Text] = [head]
    for loc in call.locations:
        line = unset_to_none(loc.line)
        where = agent_line(loc.path) + (f":{line}" if line is not None else "")
        parts.append(Text(f"  at {where}", "dim"))
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


def render_permission_options(options: Sequence[s.PermissionOption]) -> Text:
    """The options of a permission request, numbered from 1, one per line.

    Each line leads with acpwire's label for the option's kind (green allow, red
    reject); the agent's name for the option follows, quoted, as its words only.
    """
    out = Text()
    for i, option in enumerate(options, 1):
        kind = str(option.kind)
        style = "green" if kind.startswith("allow") else "red" if kind in OPTION_KIND_LABELS else ""
        out.append(f"  {i}) ")
        out.append(option_label(kind), style=f"bold {style}".strip())
        out.append(f'  (agent: "{agent_line(option.name)}")\n', style="dim")
    out.rstrip()
    return out


# ---------------------------------------------------------------------- plan, status


def render_plan(entries: Sequence[s.PlanEntry]) -> RenderableType:
    """The plan, one line per entry: ``[x]`` completed, ``[~]`` in progress, ``[ ]`` pending."""
    out = Text("Plan\n", style="bold")
    for entry in entries:
        status = str(entry.status)
        out.append(f"  {_PLAN_MARKS.get(status, '[?]')} ", style=STATUS_STYLES.get(status, ""))
        out.append(agent_line(entry.content), style="strike dim" if status == "completed" else "")
        out.append(f"  ({agent_line(entry.priority)}, {agent_line(status)})\n", style="dim")
    out.rstrip()
    return out


def render_notice(notice: s.Notice) -> Text:
    style = {"error": "bold red", "warning": "yellow"}.get(str(notice.severity), "blue")
    text = Text(f"{agent_line(notice.severity)}: {agent_line(notice.title)}", style=style)
    description = unset_to_none(notice.description)
    if description:
        text.append_text(_indented(agent_text(description), "  ", "\n  "))
    return text


def _mode_name(state: SessionState) -> str | None:
    if state.current_mode_id is None:
        return None
    for mode in state.available_modes:
        if mode.id == state.current_mode_id:
            name, mode_id = agent_line(mode.name), agent_line(mode.id)
            return f"{name} ({mode_id})" if name != mode_id else mode_id
    return agent_line(state.current_mode_id)


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
        parts.append((agent_line(agent), "bold", 0))
    if state.title:
        parts.append((f"title: {agent_line(state.title)}", "", 2))
    mode = _mode_name(state)
    if mode:
        parts.append((f"mode: {mode}", "cyan", 0))
    for option in state.config_options:
        category: object = getattr(option, "category", None)
        if mode and category == "mode":
            continue  # the same thing as the mode, already shown
        if isinstance(option, (s.SessionConfigSelect, s.SessionConfigBoolean)):
            value = agent_line(str(option.current_value).lower())
            parts.append((f"{agent_line(option.id)}: {value}", "", 3))
    if state.usage is not None:
        usage = state.usage
        pct = f" ({usage.used * 100 // usage.size}%)" if usage.size else ""
        text = f"usage: {usage.used}/{usage.size}{pct}"
        cost = unset_to_none(usage.cost)
        if isinstance(cost, s.Cost):
            text += f" {cost.amount:g} {agent_line(cost.currency)}"
        parts.append((text, "magenta", 1))
    if width is not None:
        while sum(cell_len(p[0]) + 3 for p in parts) - 3 > width and any(p[2] for p in parts):
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
        style = "green" if reason == "end_turn" else "yellow"
        parts.append(Text(f"stop: {agent_line(reason)}", style=style))
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
    out = Text(f"{agent_line(kind)}: ", style="bold")
    style = ""
    if isinstance(update, (s.AgentMessageChunk, s.UserMessageChunk, s.AgentThoughtChunk)):
        block = update.content
        body = block.text if isinstance(block, s.TextContent) else f"[{type(block).__name__}]"
    elif isinstance(update, (s.ToolCallStart, s.ToolCallProgress)):
        fields = [update.tool_call_id]
        for name in ("kind", "status", "title"):
            value = unset_to_none(getattr(update, name))
            if value is not None:
                fields.append(f"{name}={value}")
        body = " ".join(fields)
    elif isinstance(update, s.PlanUpdate):
        body = ", ".join(f"{e.content} ({e.status})" for e in update.entries)
    elif isinstance(update, s.CurrentModeUpdate):
        body = update.current_mode_id
    elif isinstance(update, s.UsageUpdate):
        body = f"{update.used}/{update.size}"
    elif isinstance(update, s.SessionInfoUpdate):
        body = str(unset_to_none(update.title))
    elif isinstance(update, s.AvailableCommandsUpdate):
        body = ", ".join("/" + c.name for c in update.available_commands)
    else:
        body, style = json.dumps(wire, sort_keys=True)[:200], "dim"
    out.append(sanitize(body), style=style)
    return out


def update_to_wire(session_id: str, update: s.SessionUpdate | v2.SessionUpdate) -> dict[str, Any]:
    """The params of the ``session/update`` notification, exactly as on the wire (either
    version: the v2 draft's when the connection chose it)."""
    return {"sessionId": session_id, "update": s.to_json(update)}
