"""SessionState: session/update notifications folded into a renderable view (pure, no I/O)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acpwire import schema as s
from acpwire.client.state import MessageView, SessionState, ToolCallView

CAPTURES = Path(__file__).resolve().parents[1] / "captures"


def text(value: str) -> s.TextContent:
    return s.TextContent(text=value)


def agent(value: str, message_id: str | None = None) -> s.AgentMessageChunk:
    return s.AgentMessageChunk(
        content=text(value), message_id=s.UNSET if message_id is None else message_id
    )


def thought(value: str, message_id: str | None = None) -> s.AgentThoughtChunk:
    return s.AgentThoughtChunk(
        content=text(value), message_id=s.UNSET if message_id is None else message_id
    )


# ---------------------------------------------------------------------- messages


def test_chunks_with_the_same_message_id_form_one_message_even_when_interleaved() -> None:
    state = SessionState("s")
    state.apply_all(
        [
            agent("Hel", "m1"),
            thought("hmm", "t1"),
            agent("lo", "m1"),
            s.ToolCallStart(tool_call_id="c", title="t"),
            agent("!", "m1"),
        ]
    )
    [message] = state.messages
    assert message.text == "Hello!"
    assert [t.text for t in state.thoughts] == ["hmm"]


def test_chunks_without_ids_join_while_the_role_stays_the_same() -> None:
    state = SessionState("s")
    state.apply_all([agent("a"), agent("b"), thought("x"), agent("c"), agent("d")])
    assert [(e.role, e.text) for e in state.transcript if isinstance(e, MessageView)] == [
        ("agent", "ab"),
        ("thought", "x"),
        ("agent", "cd"),
    ]


def test_a_new_turn_starts_a_new_agent_message() -> None:
    state = SessionState("s")
    state.begin_turn("first?")
    state.apply(agent("one"))
    state.end_turn("end_turn")
    state.begin_turn("second?")
    state.apply(agent("two"))
    state.end_turn("end_turn")
    assert [(m.role, m.text) for m in state.messages] == [
        ("user", "first?"),
        ("agent", "one"),
        ("user", "second?"),
        ("agent", "two"),
    ]
    assert state.stop_reason == "end_turn" and not state.turn_running


def test_non_text_blocks_are_kept_in_the_message_content() -> None:
    state = SessionState("s")
    link = s.ResourceLink(uri="file:///a", name="a")
    state.apply(s.UserMessageChunk(content=link, message_id="u"))
    state.apply(s.UserMessageChunk(content=text("see"), message_id="u"))
    [message] = state.messages
    assert message.content == [link, text("see")]
    assert message.text == "see"


# ---------------------------------------------------------------------- tool calls


def test_tool_call_updates_overlay_only_the_fields_they_carry() -> None:
    state = SessionState("s")
    state.apply(
        s.ToolCallStart(
            tool_call_id="c",
            title="Read a",
            kind="read",
            status="pending",
            locations=[s.ToolCallLocation(path="/w/a")],
            raw_input={"path": "/w/a"},
        )
    )
    state.apply(s.ToolCallProgress(tool_call_id="c", status="in_progress"))
    state.apply(
        s.ToolCallProgress(
            tool_call_id="c",
            status="completed",
            content=[s.Content(content=text("data"))],
            locations=None,
        )
    )
    call = state.tool_calls["c"]
    assert (call.title, call.kind, call.status) == ("Read a", "read", "completed")
    assert call.raw_input == {"path": "/w/a"}
    assert call.locations == []  # null clears
    assert len(call.content) == 1
    assert call.finished


def test_an_update_before_its_tool_call_is_kept_and_wins_over_the_late_start() -> None:
    state = SessionState("s")
    state.apply(s.ToolCallProgress(tool_call_id="c", status="completed"))
    assert not state.tool_calls["c"].announced
    state.apply(s.ToolCallStart(tool_call_id="c", title="Late", kind="edit", status="pending"))
    call = state.tool_calls["c"]
    assert (call.title, call.kind, call.status, call.announced) == (
        "Late",
        "edit",
        "completed",
        True,
    )
    assert [e for e in state.transcript if isinstance(e, ToolCallView)] == [call]


def test_cancel_marks_only_unfinished_tool_calls_and_later_updates_still_apply() -> None:
    """CANCEL-001, CANCEL-007."""
    state = SessionState("s")
    state.apply(s.ToolCallStart(tool_call_id="done", title="a", status="completed"))
    state.apply(s.ToolCallStart(tool_call_id="open", title="b", status="in_progress"))
    state.mark_cancelled()
    assert state.tool_calls["done"].display_status == "completed"
    assert state.tool_calls["open"].display_status == "cancelled"
    state.apply(s.ToolCallProgress(tool_call_id="open", status="failed"))
    assert state.tool_calls["open"].display_status == "failed"


def test_tool_call_paths_come_from_locations_and_diffs() -> None:
    call = ToolCallView(
        tool_call_id="c",
        locations=[s.ToolCallLocation(path="/w/a")],
        content=[s.Diff(path="/w/b", new_text="x"), s.Diff(path="/w/a", new_text="y")],
    )
    assert call.paths == ["/w/a", "/w/b"]


# ---------------------------------------------------------------------- everything else


def test_plan_commands_config_mode_usage_title_and_notices() -> None:
    """PLAN-004: each plan update replaces the whole plan."""
    state = SessionState("s")
    state.apply(
        s.PlanUpdate(entries=[s.PlanEntry(content="a", priority="high", status="pending")] * 2)
    )
    state.apply(
        s.PlanUpdate(entries=[s.PlanEntry(content="a", priority="high", status="completed")])
    )
    assert [e.status for e in state.plan] == ["completed"]
    state.apply(
        s.AvailableCommandsUpdate(
            available_commands=[s.AvailableCommand(name="help", description="h")]
        )
    )
    state.apply(s.CurrentModeUpdate(current_mode_id="code"))
    option = s.SessionConfigBoolean(id="brave", name="Brave", current_value=True)
    state.apply(s.ConfigOptionUpdate(config_options=[option]))
    state.apply(s.UsageUpdate(used=5, size=10))
    state.apply(s.SessionInfoUpdate(title="Hello", updated_at="2026-01-01T00:00:00Z"))
    state.apply(s.SessionInfoUpdate(updated_at=None))
    state.apply(s.Notice(severity="warning", title="Careful"))
    assert [c.name for c in state.available_commands] == ["help"]
    assert state.current_mode_id == "code"
    assert state.config_option("brave") is option
    assert state.usage is not None and state.usage.used == 5
    assert (state.title, state.updated_at) == ("Hello", None)
    assert [n.title for n in state.notices] == ["Careful"]


def test_unknown_updates_are_kept_not_dropped() -> None:
    raw = {"sessionUpdate": "_vendor_thing", "x": 1}
    notification = s.convert({"sessionId": "s", "update": raw}, s.SessionNotification)
    state = SessionState("s")
    state.apply(notification.update)
    assert isinstance(state.unknown_updates[0], s.UnknownSessionUpdate)
    assert state.unknown_updates[0].raw == raw


def test_listeners_see_every_change_and_can_unsubscribe() -> None:
    state = SessionState("s")
    seen: list[Any] = []
    unsubscribe = state.subscribe(lambda st, update: seen.append(update))
    state.apply(agent("a"))
    state.begin_turn("q")
    unsubscribe()
    state.apply(agent("b"))
    assert len(seen) == 2 and isinstance(seen[0], s.AgentMessageChunk) and seen[1] is None
    assert state.version == 3


def test_clear_forgets_the_transcript_so_a_replay_does_not_duplicate_it() -> None:
    state = SessionState("s")
    state.apply_all([agent("hi", "m"), s.ToolCallStart(tool_call_id="c", title="t")])
    state.clear()
    state.apply_all([agent("hi", "m"), s.ToolCallStart(tool_call_id="c", title="t")])
    assert [m.text for m in state.messages] == ["hi"]
    assert list(state.tool_calls) == ["c"]


# ---------------------------------------------------------------------- real captures


def capture_files() -> list[Path]:
    return sorted(CAPTURES.glob("*.jsonl"))


def replay(records: Iterable[dict[str, Any]]) -> dict[str, SessionState]:
    """Feed a capture to one SessionState per session, the way ToolkitClient drives it.

    The client's own events come from the client->agent lines: a prompt begins a turn,
    its answer ends it, session/cancel marks the turn cancelled and session/load clears
    the transcript before the replay.
    """
    states: dict[str, SessionState] = {}
    prompts: dict[Any, str] = {}

    def state(session_id: str) -> SessionState:
        return states.setdefault(session_id, SessionState(session_id))

    for record in records:
        msg = record.get("msg")
        if not isinstance(msg, dict):
            continue
        method, params = msg.get("method"), msg.get("params") or {}
        if record["dir"] == "client->agent":
            if method == "session/prompt" and isinstance(params.get("prompt"), list):
                prompts[msg["id"]] = params["sessionId"]
                state(params["sessionId"]).begin_turn([_block(b) for b in params["prompt"]])
            elif method == "session/cancel":
                state(params["sessionId"]).mark_cancelled()
            elif method == "session/load":
                state(params["sessionId"]).clear()
            continue
        if method == "session/update":
            notification = s.convert(params, s.SessionNotification)
            state(notification.session_id).apply(notification.update)
        elif method is None and msg.get("id") in prompts:
            result = msg.get("result") or {}
            state(prompts.pop(msg["id"])).end_turn(result.get("stopReason"))
    return states


def _block(raw: dict[str, Any]) -> s.ContentBlock:
    return s.convert({"sessionId": "x", "prompt": [raw]}, s.PromptRequest).prompt[0]


def _records(path: Path) -> Iterator[dict[str, Any]]:
    for line in path.read_text().splitlines():
        if line.strip():
            yield json.loads(line)


@pytest.mark.parametrize("path", capture_files(), ids=lambda p: p.name)
def test_every_capture_folds_without_losing_updates(path: Path) -> None:
    states = replay(_records(path))
    updates = sum(
        1
        for r in _records(path)
        if r["dir"] == "agent->client"
        and isinstance(r.get("msg"), dict)
        and r["msg"].get("method") == "session/update"
    )
    folded = sum(st.version for st in states.values())
    assert folded >= updates
    for st in states.values():
        assert not st.turn_running


def test_ts_sdk_capture_ends_in_a_sensible_state() -> None:
    path = CAPTURES / "ts-sdk-agent.full.jsonl"
    states = replay(_records(path))
    main = states["sess_eb5b218bfcd841189b91"]

    # Messages: the load replay rebuilt the transcript (one message per id), then one more turn.
    agent_texts = [m.text for m in main.messages if m.role == "agent"]
    assert "part 1/5 part 2/5 part 3/5 part 4/5 part 5/5\n" in agent_texts
    assert agent_texts[-1] == "after load"
    ids = [m.message_id for m in main.messages if m.message_id is not None]
    assert len(ids) == len(set(ids))
    assert main.messages[0].role == "user" and main.messages[0].text == "echo hello interop"

    # Tool calls (from the replay) with final statuses.
    statuses = {c.title: c.status for c in main.tool_calls.values()}
    assert statuses["Write /home/dev/project/notes.txt"] == "completed"
    assert statuses["Run: echo terminal-ok; exit 3"] == "failed"
    assert all(c.finished and c.announced for c in main.tool_calls.values())

    assert main.stop_reason == "end_turn"
    assert main.title == "Interop title"

    # The live part of the capture, before the load cleared the transcript: read it
    # from a second pass that stops at the load.
    live = replay_until(path, "session/load")["sess_eb5b218bfcd841189b91"]
    plans = [
        r["msg"]["params"]["update"]["entries"]
        for r in _records(path)
        if isinstance(r.get("msg"), dict)
        and r["msg"].get("method") == "session/update"
        and r["msg"]["params"]["update"].get("sessionUpdate") == "plan"
    ]
    assert len(plans) > 1
    assert [s.to_json(e) for e in live.plan] == plans[-1]  # PLAN-004: the last plan, whole
    assert live.current_mode_id == "code"
    model = live.config_option("model")
    assert isinstance(model, s.SessionConfigSelect) and model.current_value == "peer-fast"
    assert len(live.available_commands) == 21
    assert live.usage is not None and (live.usage.used, live.usage.size) == (53000, 200000)
    assert live.title == "Interop title"
    assert len(live.notices) == 1
    assert any(isinstance(u, s.CompactionUpdate) for u in live.other_updates)
    thoughts = "".join(t.text for t in live.thoughts)
    assert thoughts.startswith("Thinking about the request...")
    tools = {c.tool_call_id: c for c in live.tool_calls.values()}
    assert tools["call_1_5d7a97"].status == "failed"
    assert tools["call_1_1b3efb"].status == "completed"
    assert tools["call_1_85e04b"].display_status == "cancelled"  # permission cancelled mid-turn
    assert all(c.finished or c.cancelled for c in tools.values())


def replay_until(path: Path, stop_method: str) -> dict[str, SessionState]:
    """Like :func:`replay`, stopping before the client's first ``stop_method`` request."""
    kept = []
    for record in _records(path):
        msg = record.get("msg")
        if (
            record["dir"] == "client->agent"
            and isinstance(msg, dict)
            and msg.get("method") == stop_method
        ):
            break
        kept.append(record)
    return replay(kept)


def test_the_captures_ship_with_the_tests() -> None:
    assert capture_files()
