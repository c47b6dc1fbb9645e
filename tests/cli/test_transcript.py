"""The transcript widget redraws only what an update changed, whatever the session's length."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("textual")

from textual.app import App, ComposeResult
from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.cli.chat.widgets import Transcript
from acpwire.client.state import SessionState


class TranscriptApp(App[None]):
    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")


def chunk(text: str, kind: type[s.ContentChunk] = s.AgentMessageChunk) -> s.SessionUpdate:
    update: s.SessionUpdate = kind(content=s.TextContent(text=text))  # type: ignore[assignment]
    return update


def showing(app: App[None], state: SessionState) -> Transcript:
    """The app's transcript, told about every change of ``state`` (as the chat app does)."""
    transcript = app.query_one(Transcript)
    state.subscribe(lambda _state, update: transcript.entry_changed(update))
    transcript.show_state(state)
    return transcript


def long_session(turns: int) -> SessionState:
    state = SessionState("sess_long")
    for i in range(turns):
        state.begin_turn(f"question {i}")
        state.apply(chunk(f"thinking about {i}", s.AgentThoughtChunk))
        state.apply(s.ToolCallStart(tool_call_id=f"t{i}", title=f"Read {i}.py", kind="read"))
        state.apply(s.ToolCallProgress(tool_call_id=f"t{i}", status="completed"))
        state.apply(chunk(f"answer **{i}**"))
        state.end_turn("end_turn")
    return state


@pytest.mark.slow
async def test_one_chunk_at_the_end_of_a_2000_entry_session_lays_out_one_entry() -> None:
    state = long_session(500)  # 2,000 entries
    async with TranscriptApp().run_test(size=(100, 30)) as pilot:
        transcript = showing(pilot.app, state)
        await pilot.pause()
        assert len(transcript) == 2000
        before = transcript.layouts
        state.apply(chunk(" and more"))
        transcript.sync()
        assert transcript.layouts - before == 1
        state.apply(s.ToolCallProgress(tool_call_id="t3", status="failed"))
        transcript.sync()
        assert transcript.layouts - before == 2
        state.begin_turn("one more")  # a local event: tool calls are compared, not redrawn
        transcript.sync()
        assert transcript.layouts - before == 3  # only the new prompt
        assert "answer 499 and more" in transcript.text()
        assert "[read] Read 3.py  failed" in transcript.text()


async def test_notes_stay_in_place_and_a_cleared_state_is_drawn_again() -> None:
    state = long_session(2)
    async with TranscriptApp().run_test(size=(100, 30)) as pilot:
        transcript = showing(pilot.app, state)
        transcript.add_note("a local note")
        state.begin_turn("after the note")
        transcript.sync()
        text = transcript.text()
        assert text.index("answer 1") < text.index("a local note") < text.index("after the note")
        state.clear()  # session/load replays from scratch
        state.apply(chunk("replayed"))
        transcript.sync()
        text = transcript.text()
        assert "answer 1" not in text and "replayed" in text and "a local note" in text
        await asyncio.wait_for(pilot.pause(), TIMEOUT)


async def test_the_view_follows_new_lines_only_while_it_is_at_the_end() -> None:
    state = long_session(20)
    async with TranscriptApp().run_test(size=(80, 24)) as pilot:
        transcript = showing(pilot.app, state)
        await pilot.pause()
        assert transcript.scroll_y == transcript.max_scroll_y > 0
        transcript.scroll_home(animate=False, immediate=True)
        state.apply(chunk("\n\nnew paragraph"))
        transcript.sync()
        await pilot.pause()
        assert transcript.scroll_y == 0
