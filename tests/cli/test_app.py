"""Interactive ``acp chat``: the Textual app driven headlessly with its pilot against a real agent."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.pilot import Pilot
from textual.widgets import Static
from waiting import TIMEOUT

from acpwire.cli.chat.app import ChatApp
from acpwire.cli.chat.screens import ChoiceScreen, FormScreen, HelpScreen, PermissionScreen
from acpwire.cli.chat.session import ChatOptions, default_agent_command, demo_agent_available
from acpwire.cli.chat.widgets import PromptInput

from .processes import alive, in_session

pytestmark = pytest.mark.slow  # the chat app is driven to the end of whole turns

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


def demo_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ChatApp:
    """The app on the built-in demo agent, its data kept in ``tmp_path``."""
    monkeypatch.setenv("ACPWIRE_DATA_DIR", str(tmp_path / ".data"))
    return ChatApp(
        ChatOptions(agent=default_agent_command(), cwd=str(tmp_path), default_agent=True)
    )


async def turn_ended(app: ChatApp, pilot: Pilot[int]) -> None:
    await until(app, pilot, lambda: app.state is not None and app.state.stop_reason == "end_turn")


async def test_a_prompt_is_sent_and_the_streamed_reply_appears(tmp_path: Path) -> None:
    app = make_app(tmp_path, TOOLKIT_AGENT)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        assert app.state is not None
        await type_and_send(pilot, app, "echo hello *streamed* world")
        await turn_ended(app, pilot)
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
        await turn_ended(app, pilot)
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
    app = demo_app(tmp_path, monkeypatch)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "help")
        await turn_ended(app, pilot)
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
        await turn_ended(app, pilot)
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
        await turn_ended(app, pilot)
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

    app = demo_app(tmp_path, monkeypatch)
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
        form.query_one("#field-0", Input).value = "Ada"
        await pilot.click("#submit")
        await until(app, pilot, lambda: app.state is not None and app.state.stop_reason is not None)
        assert "Nice to meet you, Ada! Blue is a fine colour." in app.transcript_text()
        await pilot.press("ctrl+q")


# ---------------------------------------------------------------------- first-hour fixes

HOSTILE = [sys.executable, str(Path(__file__).with_name("hostile_agent.py"))]


def visible_lines(app: ChatApp) -> list[str]:
    """The transcript's rows as they are on the screen now."""
    transcript = app.transcript
    return [
        transcript.render_line(y).text.rstrip()
        for y in range(transcript.scrollable_content_region.height)
    ]


async def test_at_80x24_the_last_line_of_a_long_reply_is_on_screen(tmp_path: Path) -> None:
    app = make_app(tmp_path, TOOLKIT_AGENT)
    reply = "\n\n".join(f"paragraph {i}" for i in range(30))
    async with app.run_test(size=(80, 24)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, f"echo {reply}")
        await turn_ended(app, pilot)
        await until(app, pilot, lambda: "paragraph 29" in visible_lines(app))
        await pilot.press("ctrl+q")


async def test_an_elicitation_form_takes_typing_at_once_and_enter_submits_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = demo_app(tmp_path, monkeypatch)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "elicit")
        await until(
            app,
            pilot,
            lambda: isinstance(app.screen, FormScreen) and bool(app.screen.query("#submit")),
        )
        await pilot.pause()
        await pilot.press("G", "r", "a", "c", "e", "enter")
        await until(app, pilot, lambda: app.state is not None and app.state.stop_reason is not None)
        assert "Nice to meet you, Grace! Blue is a fine colour." in app.transcript_text()
        await pilot.press("ctrl+q")


async def test_slash_help_shows_the_apps_keys_even_when_the_agent_has_a_help_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = demo_app(tmp_path, monkeypatch)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await until(
            app,
            pilot,
            lambda: (
                app.state is not None and "help" in {c.name for c in app.state.available_commands}
            ),
        )
        assert app.state is not None
        await type_and_send(pilot, app, "/help")
        await until(app, pilot, lambda: isinstance(app.screen, HelpScreen))
        assert not app.turn_running and app.state.stop_reason is None
        help_shown = str(app.screen.query_one(Static).render())
        assert "Enter       send the prompt" in help_shown
        assert "/help  List the commands (agent)" in help_shown
        await pilot.press("escape")
        await until(app, pilot, lambda: not isinstance(app.screen, HelpScreen))
        await type_and_send(pilot, app, "//help")  # the agent's own
        await turn_ended(app, pilot)
        assert "List the commands" in app.transcript_text()
        await pilot.press("ctrl+q")


async def test_f2_opens_a_labelled_pane_of_the_agents_stderr(tmp_path: Path) -> None:
    from textual.widgets import RichLog

    app = make_app(tmp_path, TOOLKIT_AGENT)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        log = app.query_one("#log", RichLog)
        assert not log.display
        await pilot.press("f2")
        assert log.display
        assert log.border_title == "agent stderr (F2 hides)"
        await pilot.press("ctrl+q")


async def test_the_status_bar_stays_on_one_line_at_110_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acpwire.cli.chat.widgets import StatusLine

    app = demo_app(tmp_path, monkeypatch)
    async with app.run_test(size=(110, 30)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "title a rather long title for this session")
        await turn_ended(app, pilot)
        await type_and_send(pilot, app, "slow 30")
        await until(app, pilot, lambda: app.turn_running)
        status = app.query_one("#status", StatusLine)
        await pilot.pause()
        assert status.size.height == 1
        line = status.render_line(0).text
        assert "mode: Ask (ask)" in line and "working..." in line
        await pilot.press("escape")
        await until(app, pilot, lambda: not app.turn_running)
        await pilot.press("ctrl+q")


async def test_thoughts_fold_to_their_first_line_and_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = demo_app(tmp_path, monkeypatch)
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "/config thought_level high")
        await until(app, pilot, lambda: "thought_level = high" in app.transcript_text())
        await type_and_send(pilot, app, "think one two three four")
        await turn_ended(app, pilot)
        assert "Thinking harder because thought_level is high." in app.transcript_text()
        await pilot.press("ctrl+t")
        await until(app, pilot, lambda: "[+1 lines]" in app.transcript_text())
        assert "Thinking harder" not in app.transcript_text()
        await pilot.press("ctrl+t")
        await until(app, pilot, lambda: "Thinking harder" in app.transcript_text())
        await pilot.press("ctrl+q")


async def test_a_20_mb_chunk_is_cut_with_a_note_and_a_41_mb_line_dropped_with_a_warning(
    tmp_path: Path,
) -> None:
    app = make_app(tmp_path, [*HOSTILE, "huge-chunk"])
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "hi")
        await turn_ended(app, pilot)
        assert (
            "[message truncated for display: 20,971,520 characters, the first 100,000 shown]"
            in app.transcript_text()
        )
        await pilot.press("ctrl+q")
    app = make_app(tmp_path, [*HOSTILE, "oversize-line"])
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "hi")
        await turn_ended(app, pilot)
        text = app.transcript_text()
        assert "warning: client: dropped an incoming message of" in text
        assert "after the big line" in text
        await pilot.press("ctrl+q")


async def test_an_agent_dying_while_a_grandchild_holds_its_stdout_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "agent.pid"
    monkeypatch.setenv("HOSTILE_PID_FILE", str(pid_file))
    app = make_app(tmp_path, [*HOSTILE, "orphan-exit"])
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "hi")
        await until(
            app, pilot, lambda: "the agent died: it exited with status 7" in app.transcript_text()
        )
        assert not app.turn_running
        await pilot.press("ctrl+q")
    assert app.return_code == 1
    agent, grandchild = (int(p) for p in pid_file.read_text().split())
    assert not alive(agent) and not alive(grandchild)


async def test_ctrl_c_twice_during_a_permission_question_quits_and_stops_the_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent ignores SIGINT and session/cancel: the app still leaves, agent stopped."""
    pid_file = tmp_path / "agent.pid"
    monkeypatch.setenv("HOSTILE_PID_FILE", str(pid_file))
    app = make_app(tmp_path, [*HOSTILE, "permission"], policy="ask")
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "edit it")
        await until(app, pilot, lambda: isinstance(app.screen, PermissionScreen))
        (agent,) = (int(p) for p in pid_file.read_text().split())
        await pilot.press("ctrl+c")
        await until(app, pilot, lambda: not isinstance(app.screen, PermissionScreen))
        await pilot.press("ctrl+c")
    assert app.return_code == 0
    assert not alive(agent)
    assert in_session(agent) == []


async def test_login_choices_at_prompt_time_then_the_prompt_is_retried(tmp_path: Path) -> None:
    app = make_app(tmp_path, [*HOSTILE, "auth-at-prompt"])
    async with app.run_test(size=(100, 40)) as pilot:
        await asyncio.wait_for(app.connected.wait(), TIMEOUT)
        await type_and_send(pilot, app, "hi")
        await until(
            app,
            pilot,
            lambda: isinstance(app.screen, ChoiceScreen) and bool(app.screen.query("#choice-1")),
        )
        screen = app.screen
        assert isinstance(screen, ChoiceScreen)
        assert [key for key, _ in screen.choices] == ["claude-ai-login", "token", ""]
        await pilot.click("#choice-1")
        await turn_ended(app, pilot)
        text = app.transcript_text()
        assert "hello from the hostile agent" in text
        assert text.count("> hi") == 1
        await pilot.press("ctrl+q")


async def test_an_env_var_login_restarts_the_agent_with_the_key(tmp_path: Path) -> None:
    from textual.widgets import Input

    from acpwire.cli.chat.screens import EnvVarScreen

    app = make_app(tmp_path, [*HOSTILE, "env-var"])
    async with app.run_test(size=(100, 40)) as pilot:
        await until(
            app,
            pilot,
            lambda: isinstance(app.screen, ChoiceScreen) and bool(app.screen.query("#choice-0")),
        )
        await pilot.click("#choice-0")
        await until(
            app,
            pilot,
            lambda: isinstance(app.screen, EnvVarScreen) and bool(app.screen.query(Input)),
        )
        field = app.screen.query_one("#var-0", Input)
        assert field.password and field.has_focus
        await pilot.press("k", "e", "y", "enter")
        await until(app, pilot, lambda: app.state is not None)
        await type_and_send(pilot, app, "hi")
        await turn_ended(app, pilot)
        assert "hello from the hostile agent" in app.transcript_text()
        await pilot.press("ctrl+q")
    assert app.return_code == 0


async def test_a_login_that_prints_outside_the_protocol_shows_it_and_esc_cancels(
    tmp_path: Path,
) -> None:
    from acpwire.cli.chat.screens import AuthProgressScreen

    app = make_app(tmp_path, [*HOSTILE, "noisy-auth"])
    async with app.run_test(size=(100, 40)) as pilot:
        await until(
            app,
            pilot,
            lambda: isinstance(app.screen, ChoiceScreen) and bool(app.screen.query("#choice-0")),
        )
        await pilot.click("#choice-0")
        await until(app, pilot, lambda: "Enter the authorization code:" in app.transcript_text())
        assert isinstance(app.screen, AuthProgressScreen)
        assert "agent output (not ACP): https://accounts.example.com" in app.transcript_text()
        await pilot.press("escape")
        await until(app, pilot, lambda: "authentication cancelled" in app.transcript_text())
        await pilot.press("ctrl+q")
    assert app.return_code == 5
