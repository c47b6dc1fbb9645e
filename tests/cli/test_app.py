"""Interactive ``acp chat``: the Textual app driven headlessly with its pilot against a real agent."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.pilot import Pilot

from acpwire.cli.chat.app import ChatApp
from acpwire.cli.chat.screens import ChoiceScreen, FormScreen, PermissionScreen
from acpwire.cli.chat.session import ChatOptions, default_agent_command, demo_agent_available
from acpwire.cli.chat.widgets import PromptInput

TIMEOUT = 15.0
"""Upper bound for anything a test waits on; a passing run never gets near it."""

TOOLKIT_AGENT = [sys.executable, str(Path(__file__).parents[1] / "client" / "toolkit_agent.py")]


async def until(app: ChatApp, pilot: Pilot[int], predicate: Callable[[], bool]) -> None:
    """Wait for the app to change until ``predicate`` holds (bounded)."""

    async def loop() -> None:
        while not predicate():
            changed = app.changed
            await pilot.pause()
            if predicate():
                return
            await changed.wait()

    await asyncio.wait_for(loop(), TIMEOUT)


async def type_and_send(pilot: Pilot[int], app: ChatApp, text: str) -> None:
    prompt = app.query_one("#prompt", PromptInput)
    prompt.text = text
    prompt.focus()
    await pilot.press("enter")


def make_app(tmp_path: Path, agent: list[str], policy: str | None = None) -> ChatApp:
    return ChatApp(ChatOptions(agent=agent, cwd=str(tmp_path), policy=policy))


async def test_a_prompt_is_sent_and_the_streamed_reply_appears(tmp_path: Path) -> None:
    app = make_app(tmp_path, TOOLKIT_AGENT)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        assert app.state is not None
        await type_and_send(pilot, app, "echo hello *streamed* world")
        await until(
            app, pilot, lambda: app.state is not None and app.state.stop_reason == "end_turn"
        )
        text = app.transcript_text()
        assert "> echo hello *streamed* world" in text
        assert "hello streamed world" in text  # the agent's Markdown, rendered
        assert app.query_one("#prompt", PromptInput).text == ""
        await pilot.press("ctrl+q")
    assert app.return_code == 0


async def test_a_permission_prompt_is_answered_and_the_diff_is_shown(tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    app = make_app(tmp_path, TOOLKIT_AGENT)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, f"write {target} first line")
        await until(app, pilot, lambda: isinstance(app.screen, PermissionScreen))
        screen = app.screen
        assert isinstance(screen, PermissionScreen)
        assert screen.request.options[0].option_id == "allow-once"
        await pilot.click("#option-0")
        await until(app, pilot, lambda: app.state is not None and app.state.stop_reason is not None)
        assert target.read_text() == "first line"
        text = app.transcript_text()
        assert f"new file {target}" in text
        assert "+first line" in text
        assert "completed" in text


async def test_esc_cancels_a_running_turn(tmp_path: Path) -> None:
    app = make_app(tmp_path, TOOLKIT_AGENT)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "slow")
        await until(app, pilot, lambda: "working" in app.transcript_text())
        assert app.turn_running
        await pilot.press("escape")
        await until(app, pilot, lambda: app.state is not None and app.state.stop_reason is not None)
        assert app.state is not None and app.state.stop_reason == "cancelled"
        assert not app.turn_running


async def test_ctrl_c_during_a_permission_prompt_cancels_the_turn_and_closes_the_prompt(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path, TOOLKIT_AGENT)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "permission")
        await until(app, pilot, lambda: isinstance(app.screen, PermissionScreen))
        await pilot.press("ctrl+c")
        await until(app, pilot, lambda: app.state is not None and app.state.stop_reason is not None)
        assert app.state is not None and app.state.stop_reason == "cancelled"
        await until(app, pilot, lambda: not isinstance(app.screen, PermissionScreen))
        await pilot.press("ctrl+c")  # idle now: quits
    assert app.return_code == 0


async def test_local_commands_switch_mode_and_config_and_list_sessions(tmp_path: Path) -> None:
    app = make_app(tmp_path, TOOLKIT_AGENT)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        assert app.state is not None
        first = app.state.session_id
        await type_and_send(pilot, app, "/mode code")
        await until(
            app, pilot, lambda: app.state is not None and app.state.current_mode_id == "code"
        )
        await type_and_send(pilot, app, "/config model smart")
        await until(app, pilot, lambda: "model = smart" in app.transcript_text())
        await type_and_send(pilot, app, "echo remembered")
        await until(
            app, pilot, lambda: app.state is not None and app.state.stop_reason == "end_turn"
        )
        await type_and_send(pilot, app, "/new")
        await until(app, pilot, lambda: app.state is not None and app.state.session_id != first)
        await type_and_send(pilot, app, "/sessions")
        await until(app, pilot, lambda: first in app.transcript_text())
        await type_and_send(pilot, app, f"/load {first}")
        await until(app, pilot, lambda: f"loaded session {first}" in app.transcript_text())
        assert app.state.session_id == first
        assert "remembered" in app.transcript_text()


async def test_tab_completes_a_slash_command(tmp_path: Path) -> None:
    app = make_app(tmp_path, TOOLKIT_AGENT)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        prompt = app.query_one("#prompt", PromptInput)
        prompt.focus()
        await pilot.press("/", "s", "e")
        await pilot.press("tab")
        assert prompt.text == "/sessions "
        prompt.clear()
        await pilot.press("a", "ctrl+j", "b")
        assert prompt.text == "a\nb"


async def test_a_missing_agent_command_is_explained_in_the_app(tmp_path: Path) -> None:
    app = make_app(tmp_path, ["no-such-agent-command-xyz"])
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await pilot.pause()
        assert "agent command not found: no-such-agent-command-xyz" in app.transcript_text()
        await pilot.press("ctrl+q")
    assert app.return_code == 3


async def test_an_agent_exiting_during_initialize_shows_its_stderr(tmp_path: Path) -> None:
    app = make_app(tmp_path, [*TOOLKIT_AGENT, "--crash-on-initialize"])
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await pilot.pause()
        text = app.transcript_text()
        assert "exited with status 3 during initialize" in text
        assert "simulated crash during initialize" in text
        await pilot.press("ctrl+q")
    assert app.return_code == 3


@pytest.mark.skipif(not demo_agent_available(), reason="the demo agent is not installed yet")
async def test_the_default_demo_agent_answers_help_and_offers_its_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACPWIRE_DATA_DIR", str(tmp_path / ".data"))
    app = ChatApp(ChatOptions(agent=default_agent_command(), cwd=str(tmp_path), default_agent=True))
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "help")
        await until(
            app, pilot, lambda: app.state is not None and app.state.stop_reason == "end_turn"
        )
        assert "List the commands" in app.transcript_text()
        assert "read" in app.complete_command("re")


def _ts_agent() -> list[str]:
    sys.path.insert(0, str(Path(__file__).parents[1] / "interop"))
    import sdk_install

    reason = sdk_install.ts_skip_reason()
    if reason:
        pytest.skip(reason)
    return list(sdk_install.ts_agent_command())


async def test_against_the_typescript_sdk_agent_stream_permission_diff_and_cancel(
    tmp_path: Path,
) -> None:
    """The interactive chat against an agent built on the official TypeScript SDK."""
    agent = _ts_agent()
    target = tmp_path / "ts-notes.txt"
    app = make_app(tmp_path, agent)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        # A prompt is sent and the streamed text appears.
        await type_and_send(pilot, app, "stream 3")
        await until(
            app, pilot, lambda: app.state is not None and app.state.stop_reason == "end_turn"
        )
        assert "chunk 0" in app.transcript_text() and "chunk 2" in app.transcript_text()
        # A permission prompt is answered and the diff is shown.
        await type_and_send(pilot, app, f"write {target} hello from ts")
        await until(app, pilot, lambda: isinstance(app.screen, PermissionScreen))
        screen = app.screen
        assert isinstance(screen, PermissionScreen)
        assert [o.option_id for o in screen.request.options] == ["allow", "always", "reject"]
        await pilot.click("#option-0")
        await until(app, pilot, lambda: app.state is not None and app.state.stop_reason is not None)
        assert target.read_text() == "hello from ts"
        assert "+hello from ts" in app.transcript_text()
        # A turn is cancelled.
        await type_and_send(pilot, app, "slow")
        await until(app, pilot, lambda: app.turn_running)
        await pilot.press("escape")
        await until(app, pilot, lambda: not app.turn_running)
        assert app.state is not None and app.state.stop_reason == "cancelled"
        await pilot.press("ctrl+q")
    assert app.return_code == 0


async def test_an_agent_that_needs_authentication_offers_its_methods_and_the_chosen_one_unlocks_it(
    tmp_path: Path,
) -> None:
    """-32000 on session/new: the auth methods are listed; picking the agent method authenticates."""
    app = make_app(tmp_path, [sys.executable, str(Path(__file__).with_name("auth_agent.py"))])
    async with app.run_test(size=(100, 40)) as pilot:
        await until(
            app,
            pilot,
            lambda: isinstance(app.screen, ChoiceScreen) and bool(app.screen.query("#choice-0")),
        )
        screen = app.screen
        assert isinstance(screen, ChoiceScreen)
        assert [key for key, _ in screen.choices] == ["token", "login", ""]
        await pilot.click("#choice-0")
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await until(app, pilot, lambda: app.state is not None)
        assert app.state is not None and app.state.session_id == "sess_auth"
        await pilot.press("ctrl+q")


async def test_against_the_demo_agent_stream_permission_diff_and_cancel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The main job: `acp chat` on the built-in demo agent, end to end."""
    monkeypatch.setenv("ACPWIRE_DATA_DIR", str(tmp_path / ".data"))
    target = tmp_path / "demo-notes.txt"
    app = ChatApp(ChatOptions(agent=default_agent_command(), cwd=str(tmp_path), default_agent=True))
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "stream 3")
        await until(
            app, pilot, lambda: app.state is not None and app.state.stop_reason == "end_turn"
        )
        assert app.state is not None and app.state.messages[-1].text.count("chunk") >= 1
        await type_and_send(pilot, app, f"write {target} hello from the demo")
        await until(
            app,
            pilot,
            lambda: (
                isinstance(app.screen, PermissionScreen) and bool(app.screen.query("#option-0"))
            ),
        )
        await pilot.click("#option-0")
        await until(app, pilot, lambda: app.state is not None and app.state.stop_reason is not None)
        assert target.read_text() == "hello from the demo\n"
        assert "+hello from the demo" in app.transcript_text()
        await type_and_send(pilot, app, "slow 30")
        await until(app, pilot, lambda: app.turn_running)
        await pilot.press("escape")
        await until(app, pilot, lambda: not app.turn_running)
        assert app.state is not None and app.state.stop_reason == "cancelled"
        await pilot.press("ctrl+q")
    assert app.return_code == 0


async def test_an_elicitation_form_is_filled_in_and_the_agent_gets_the_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.widgets import Input

    monkeypatch.setenv("ACPWIRE_DATA_DIR", str(tmp_path / ".data"))
    app = ChatApp(ChatOptions(agent=default_agent_command(), cwd=str(tmp_path), default_agent=True))
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "elicit")
        await until(
            app,
            pilot,
            lambda: isinstance(app.screen, FormScreen) and bool(app.screen.query("#submit")),
        )
        form = app.screen
        assert isinstance(form, FormScreen)
        form.query_one("#field-name", Input).value = "Ada"
        await pilot.click("#submit")
        await until(app, pilot, lambda: app.state is not None and app.state.stop_reason is not None)
        assert "Nice to meet you, Ada! Blue is a fine colour." in app.transcript_text()
        await pilot.press("ctrl+q")
