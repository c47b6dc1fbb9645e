"""The renderers of acpwire.cli.render, rendered to text."""

from __future__ import annotations

from io import StringIO

import pytest

pytest.importorskip("rich")

from rich.console import Console, RenderableType

from acpwire import schema as s
from acpwire.cli import render
from acpwire.client.state import SessionState, TerminalSnapshot


def text_of(renderable: RenderableType, width: int = 80) -> str:
    buffer = StringIO()
    Console(file=buffer, width=width, color_system=None, highlight=False).print(renderable)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def chunk(text: str, kind: type[s.ContentChunk] = s.AgentMessageChunk) -> s.SessionUpdate:
    update: s.SessionUpdate = kind(content=s.TextContent(text=text))  # type: ignore[assignment]
    return update


def a_session() -> SessionState:
    state = SessionState("sess_1", "/repo")
    state.begin_turn("fix it")
    state.apply_all(
        [
            chunk("let me look", s.AgentThoughtChunk),
            chunk("I will **fix** "),
            chunk("it."),
            s.ToolCallStart(
                tool_call_id="t1",
                title="Edit a.py",
                kind="edit",
                status="pending",
                locations=[s.ToolCallLocation(path="/repo/a.py", line=3)],
            ),
            s.ToolCallProgress(
                tool_call_id="t1",
                status="completed",
                content=[
                    s.Diff(path="/repo/a.py", old_text="x = 1\ny = 2\n", new_text="x = 1\ny = 3\n")
                ],
            ),
            s.ToolCallStart(
                tool_call_id="t2",
                title="Run tests",
                kind="execute",
                status="in_progress",
                content=[s.Terminal(terminal_id="term1")],
            ),
            s.PlanUpdate(
                entries=[
                    s.PlanEntry(content="Read", priority="high", status="completed"),
                    s.PlanEntry(content="Fix", priority="medium", status="in_progress"),
                    s.PlanEntry(content="Test", priority="low", status="pending"),
                ]
            ),
            s.UsageUpdate(used=250, size=1000, cost=s.Cost(amount=0.02, currency="USD")),
            s.SessionInfoUpdate(title="Fixing a.py"),
            s.CurrentModeUpdate(current_mode_id="code"),
        ]
    )
    state.record_terminal(
        "term1", TerminalSnapshot(output="3 passed\n", truncated=False, exit_code=0, exited=True)
    )
    state.end_turn("end_turn")
    return state


def test_the_conversation_shows_prompt_thoughts_markdown_tools_plan_and_status() -> None:
    text = text_of(render.render_conversation(a_session(), agent="demo 1"))
    lines = text.splitlines()
    assert lines[0] == "> fix it"
    assert "thinking: let me look" in lines
    assert "I will fix it." in lines
    assert "* [edit] Edit a.py  completed" in lines
    assert "  at /repo/a.py:3" in lines
    assert "  -y = 2" in lines and "  +y = 3" in lines
    assert "* [execute] Run tests  in_progress" in lines
    assert "  terminal term1 (exit 0)" in lines
    assert "  3 passed" in lines
    assert "  [x] Read  (high, completed)" in lines
    assert "  [~] Fix  (medium, in_progress)" in lines
    assert "  [ ] Test  (low, pending)" in lines
    assert "demo 1 | title: Fixing a.py | mode: code | usage: 250/1000 (25%) 0.02 USD" in lines
    assert lines[-1] == "stop: end_turn"


def test_diff_lines_are_coloured_by_sign() -> None:
    diff = render.render_diff("a.py", "a\nb\n", "a\nc\n")
    styles = {
        line: str(span.style)
        for span in diff.spans
        for line in [diff.plain[span.start : span.end].strip()]
    }
    assert styles["-b"] == "red"
    assert styles["+c"] == "green"
    assert any(k.startswith("@@") and v == "cyan" for k, v in styles.items())


def test_a_new_file_diff_is_all_additions() -> None:
    text = text_of(render.render_diff("new.txt", None, "one\ntwo\n"))
    assert text.splitlines() == ["new file new.txt", "@@ -0,0 +1,2 @@", "+one", "+two"]


def test_a_cancelled_tool_call_awaiting_nothing_shows_cancelled() -> None:
    state = SessionState("s")
    state.begin_turn("go")
    state.apply(s.ToolCallStart(tool_call_id="t", title="Slow", kind="other", status="in_progress"))
    state.mark_cancelled()
    assert "* [other] Slow  cancelled" in text_of(render.render_transcript(state))


def test_a_tool_call_awaiting_permission_says_so() -> None:
    state = SessionState("s")
    state.apply(s.ToolCallStart(tool_call_id="t", title="Delete", kind="delete"))
    state.permission_requested(s.ToolCallUpdate(tool_call_id="t"))
    assert "awaiting permission" in text_of(render.render_transcript(state))


def test_resource_mentions_and_notices_render_as_one_liners() -> None:
    state = SessionState("s")
    state.begin_turn(
        [
            s.TextContent(text="look at @a.py"),
            s.ResourceLink(uri="file:///repo/a.py", name="a.py"),
        ]
    )
    state.apply(s.Notice(severity="warning", title="Rate limited", description="retry later"))
    text = text_of(render.render_conversation(state))
    assert "> look at @a.py" in text
    assert "[link] a.py <file:///repo/a.py>" in text
    assert "warning: Rate limited" in text and "retry later" in text


def test_single_updates_render_on_one_line_and_as_wire_json() -> None:
    update = s.ToolCallStart(tool_call_id="t1", title="Read", kind="read", status="pending")
    assert (
        text_of(render.render_update(update)) == "tool_call: t1 kind=read status=pending title=Read"
    )
    assert render.update_to_wire("s1", update) == {
        "sessionId": "s1",
        "update": {
            "sessionUpdate": "tool_call",
            "toolCallId": "t1",
            "title": "Read",
            "kind": "read",
            "status": "pending",
        },
    }


def test_whole_thoughts_opening_with_a_number_are_told_apart_from_a_streamed_number() -> None:
    """The demo's plan thinks "...first." then "12 files; ..." as separate chunks; a
    token stream can split "3.11" after the dot, which must stay one number."""
    from acpwire.client.state import MessageView

    pieces = ["Listing the files first.", "12 files; counting.", " Python 3.", "11 is out."]
    message = MessageView("thought", content=[s.TextContent(text=p) for p in pieces])
    assert render.thought_text(message) == (
        "Listing the files first.\n\n12 files; counting. Python 3.11 is out."
    )
