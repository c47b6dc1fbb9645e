"""The interactive app on a small terminal (80x24): what a new user saw cut off or in the
way. Drawn headlessly with Textual's pilot against the built-in demo agent; the screen
is read as text, as the terminal shows it."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import pytest

pytest.importorskip("textual")

from rich.console import Console
from rich.text import Text
from textual.app import App, ComposeResult

from acpwire import schema as s
from acpwire.cli.chat.app import ChatApp
from acpwire.cli.chat.commands import KEYS_HELP
from acpwire.cli.chat.screens import HelpScreen
from acpwire.cli.chat.session import ChatOptions, default_agent_command
from acpwire.cli.chat.widgets import StatusLine
from acpwire.client.state import SessionState

from .test_app import TIMEOUT, turn_ended, type_and_send, until

SMALL = (80, 24)


def screen_lines(app: App[object]) -> list[str]:
    """What the terminal shows, line by line (as ``export_screenshot`` draws it)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text().splitlines()


def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ChatApp:
    monkeypatch.setenv("ACPWIRE_DATA_DIR", str(tmp_path / ".data"))
    options = ChatOptions(agent=default_agent_command(), cwd=str(tmp_path), default_agent=True)
    return ChatApp(options)


async def test_f1_on_80x24_shows_every_key_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = demo(tmp_path, monkeypatch)
    async with app.run_test(size=SMALL) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await pilot.press("f1")
        await until(app, pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()
        shown = "\n".join(screen_lines(app))
        for keys, does in KEYS_HELP:
            assert f"{keys:<12}{does}" in shown, f"{keys} {does!r} not shown whole:\n{shown}"
        await pilot.press("escape")
        await until(app, pilot, lambda: not isinstance(app.screen, HelpScreen))
        await pilot.press("ctrl+q")


async def test_the_key_bar_fits_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = demo(tmp_path, monkeypatch)
    async with app.run_test(size=SMALL) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await pilot.pause()
        bar = screen_lines(app)[-1]
        for label in ("^c Cancel", "^q Quit", "f1 Help", "f2 Stderr", "^t Thoughts", "palette"):
            assert label in bar, bar
        await pilot.press("ctrl+q")


async def test_a_finished_plan_leaves_the_screen_for_the_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = demo(tmp_path, monkeypatch)
    async with app.run_test(size=SMALL) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "plan")
        await turn_ended(app, pilot)
        await until(app, pilot, lambda: not app.query_one("#plan").display)
        text = app.transcript_text()
        assert text.count("[x] Write a summary") == 1
        # The demo's whole thoughts, one chunk each, are told apart.
        assert "first.\n" in text and "first.0" not in text
        await pilot.press("ctrl+q")


class _StatusApp(App[None]):
    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")


async def test_the_status_line_keeps_the_turns_state_when_the_rest_is_too_long() -> None:
    state = SessionState("s")
    state.available_modes = [s.SessionMode(id="default", name="Default mode of working")]
    state.current_mode_id = "default"
    app = _StatusApp()
    async with app.run_test(size=(80, 3)) as pilot:
        status = app.query_one(StatusLine)
        suffix = Text("  working... (Esc cancels)")
        status.show(state, "An agent with a rather long name and version 10.20.30-beta.4", suffix)
        await pilot.pause()
        line = screen_lines(app)[0].rstrip()
        assert line.endswith("working... (Esc cancels)"), line
        assert len(line) <= 80
