"""Interactive ``acp chat``: a Textual app around one agent process.

The transcript is the session's :class:`~acpwire.client.state.SessionState` drawn by
:class:`~.widgets.Transcript` with the renderers of :mod:`acpwire.cli.render`; each
update redraws only the entry it changed. The agent runs in a worker in the app's
event loop, each turn in another; the state listener only schedules a redraw.

Keys: Enter sends, Ctrl+J (or Shift+Enter where the terminal reports it) inserts a
newline, Tab completes a slash command, Esc or Ctrl+C cancels the running turn (a
second Ctrl+C, or Ctrl+C while idle, quits), F1 shows keys and commands, F2 the
agent's stderr, Ctrl+T folds thoughts (a click folds one), Ctrl+P opens the command
palette (modes and config options are there too), Ctrl+Q quits.

Local slash commands (:mod:`.commands`) win over the agent's commands of the same
name; ``//name`` sends ``/name`` to the agent. Any other ``/name`` the agent
advertised is sent to it as the prompt text.

After ``session/cancel`` the agent has :data:`~.session.CANCEL_GRACE` seconds to end
the turn; then the app stops waiting for it. When the agent dies, the app says so
with its exit status and exits non-zero when left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import subprocess
import sys
import webbrowser
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.markup import escape
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, RichLog, Static, TextArea
from textual.worker import Worker

from ... import schema as s
from ..._waits import within
from ...client.auth import AuthOption, auth_options
from ...client.elicitation import (
    ElicitationAnswer,
    ElicitationHandler,
    FormRequest,
    UrlRequest,
    accept,
    cancel,
    decline,
)
from ...client.permissions import AllowAll, AskUser, PermissionPolicy, PermissionRequest, RejectAll
from ...client.state import SessionState, select_values
from ...protocol.errors import AcpError, ConnectionClosedError, RequestError
from ...schema import unset_to_none
from ...transports.subprocess import SubprocessTransport
from .. import render
from ..render import agent_line
from ..sanitize import sanitize
from .commands import COMMANDS, help_text
from .screens import (
    AuthProgressScreen,
    ChoiceScreen,
    EnvVarScreen,
    ErrorScreen,
    FormResult,
    FormScreen,
    HelpScreen,
    PermissionScreen,
)
from .session import (
    CANCEL_GRACE,
    CHAT_MAX_MESSAGE_SIZE,
    EXIT_AGENT_ERROR,
    EXIT_AUTH_REQUIRED,
    EXIT_OK,
    EXIT_START_FAILED,
    INTERRUPT_GRACE,
    RETRY,
    ChatClient,
    ChatOptions,
    RestartAgent,
    SignInRefused,
    StartupProblem,
    agent_label,
    auth_instructions,
    build_prompt,
    demo_agent_available,
    describe_connection_lost,
    describe_reconnect,
    describe_startup_error,
    embeds_context,
    forget_failed_prompt,
    format_auth_required,
    open_chat_agent,
    show_library_warnings,
    signed_in,
)
from .widgets import PromptInput, StatusLine, Transcript

__all__ = ["ChatApp", "run_app"]

_STOP_TIMEOUT = 10.0
"""Upper bound on stopping the agent when the app ends (it takes well under a second:
the agent gets INTERRUPT_GRACE after stdin closes, then SIGTERM, then SIGKILL)."""


class ChatApp(App[int]):
    """``acp chat``: one agent, one session at a time."""

    TITLE = "acp chat"
    CSS_PATH = "chat.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        # The key bar fits 80 columns: short labels, Esc (the same as Ctrl+C) only in F1.
        Binding("ctrl+c", "interrupt", "Cancel", priority=True),
        Binding("escape", "cancel_turn", "Cancel turn", show=False),
        Binding("f1", "help", "Help"),
        Binding("f2", "toggle_log", "Stderr"),
        Binding("ctrl+t", "toggle_thoughts", "Thoughts"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(self, options: ChatOptions) -> None:
        super().__init__()
        self.options = options
        self.client: ChatClient | None = None
        self.state: SessionState | None = None
        self.label = "agent"
        self.exit_code = EXIT_OK
        self.startup_problem: StartupProblem | None = None
        self.turn_running = False
        self.agent_dead = False
        self.connected = asyncio.Event()
        """Set once the agent is initialized and a session exists (or start-up failed)."""
        self.changed = asyncio.Event()
        """Set (and replaced) after every redraw; tests wait on it instead of sleeping."""
        self._stop_agent = asyncio.Event()
        self._agent_stopped = asyncio.Event()
        self._restart_env: dict[str, str] | None = None
        self._agent_worker: Worker[None] | None = None
        self._turn_worker: Worker[None] | None = None
        self._turns = 0
        self._cancel_sent = False
        self._auth_screen: AuthProgressScreen | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._refresh_pending = False
        self._noted_plan: object = None
        """The finished plan last moved into the transcript (not again for the same one)."""

    # ---------------------------------------------------------------- layout

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        yield Transcript(id="transcript")
        yield Static(id="plan")
        log = RichLog(id="log", wrap=True, markup=False, highlight=False)
        log.border_title = "agent stderr (F2 hides)"
        yield log
        yield Static(id="hint")
        prompt = PromptInput(id="prompt", soft_wrap=True, show_line_numbers=False)
        prompt.completions = self.complete_command
        yield prompt
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#log").display = False
        self.query_one("#plan").display = False
        self.query_one("#hint").display = False
        self.query_one("#prompt").focus()
        self._agent_worker = self.run_worker(self._agent_main(), name="agent", exit_on_error=False)

    @property
    def transcript(self) -> Transcript:
        return self.query_one("#transcript", Transcript)

    # ---------------------------------------------------------------- notes

    def note(self, text: str | RenderableType, *, error: bool = False) -> None:
        """A local line in the transcript (not part of the session)."""
        self.transcript.add_note(text, style="red" if error else "dim")
        self._signal()

    def transcript_text(self) -> str:
        """The transcript as plain text, lines not wrapped (what the user reads)."""
        return self.transcript.text()

    def _signal(self) -> None:
        event, self.changed = self.changed, asyncio.Event()
        event.set()

    # ---------------------------------------------------------------- agent lifecycle

    def _policy(self) -> PermissionPolicy:
        name = self.options.policy or "ask"
        if name == "allow":
            return AllowAll()
        if name == "deny":
            return RejectAll()
        return AskUser(self.ask_permission)

    async def _agent_main(self) -> None:
        if self.options.default_agent and not demo_agent_available():
            self._startup_failed(
                StartupProblem(
                    "the built-in demo agent (acpwire.demo) is not available in this installation",
                    "Give an agent command after `--`, e.g. `acp chat -- my-agent --acp`.",
                    EXIT_START_FAILED,
                )
            )
            return
        env: dict[str, str] = {}
        try:
            with show_library_warnings(self._warn):
                while True:
                    await self._run_agent(env)
                    if self._restart_env is None:
                        break
                    env.update(self._restart_env)
                    self._restart_env = None
                    self._stop_agent.clear()
                    self.note("starting the agent again with the variables set")
        finally:
            self._agent_stopped.set()
            self.connected.set()

    async def _run_agent(self, env: dict[str, str]) -> None:
        """One agent process: start it, open a session, wait until told to stop."""
        argv = self.options.target
        client = self.client = ChatClient(
            permissions=self._policy(),
            elicitation=ElicitationHandler(form=self.ask_form, url=self.ask_url),
            terminal_auth=True,
            protocol=self.options.protocol,
        )
        self.agent_dead = False
        async with contextlib.AsyncExitStack() as stack:
            try:
                await stack.enter_async_context(
                    open_chat_agent(
                        self.options,
                        client,
                        env,
                        on_reconnect=lambda event: self.note(describe_reconnect(event)),
                        on_stderr=self._on_stderr,
                        max_message_size=CHAT_MAX_MESSAGE_SIZE,
                        on_stray_output=self._on_stray_output,
                    )
                )
            except Exception as exc:
                problem = describe_startup_error(exc, argv)
                if problem is None:
                    raise
                self._startup_failed(problem)
                return
            self.label = agent_label(client.agent.initialize_response, argv)
            if await self.new_session():
                self.note(Text(f"connected to {self.label}. F1 lists keys and commands.", "dim"))
            self.connected.set()
            assert client.connection is not None
            stop = asyncio.ensure_future(self._stop_agent.wait())
            closed = asyncio.ensure_future(client.connection.connection.wait_closed())
            try:
                await asyncio.wait({stop, closed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
                closed.cancel()
            if not self._stop_agent.is_set():
                self._report_death()
            transport = client.connection.transport
            if isinstance(transport, SubprocessTransport) and self._restart_env is None:
                transport.grace_period = INTERRUPT_GRACE  # leaving: do not linger

    async def on_unmount(self) -> None:
        """However the app ends, the agent is stopped before it returns (bounded)."""
        self._stop_agent.set()
        if self._agent_worker is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self._agent_stopped.wait(), _STOP_TIMEOUT)

    def _report_death(self) -> None:
        """The connection ended without us closing it: say how the agent ended."""
        if self.agent_dead or self.client is None or self._stop_agent.is_set():
            return
        self.agent_dead = True
        self.exit_code = EXIT_AGENT_ERROR
        headline, details = describe_connection_lost(self.client)
        self.note(headline + (f"\n{details}" if details else ""), error=True)
        self.note("Press Ctrl+Q to quit.")
        self.schedule_refresh()

    def _startup_failed(self, problem: StartupProblem) -> None:
        """The agent could not be started: say why, on a screen of its own, then quit."""
        self.startup_problem = problem
        self.exit_code = problem.exit_code
        self.note(render.agent_text(str(problem), style="bold red"), error=True)
        self.note("Press Ctrl+Q to quit.")
        self.query_one("#status", StatusLine).show(None, None, Text("not connected", style="red"))
        self.push_screen(
            ErrorScreen(problem.headline, problem.details),
            callback=lambda leave: (
                self.exit(self.exit_code, return_code=self.exit_code) if leave else None
            ),
        )
        self.connected.set()

    def _on_stderr(self, line: str) -> None:
        with contextlib.suppress(Exception):
            self.query_one("#log", RichLog).write(render.agent_text(line))

    def _on_stray_output(self, line: str) -> None:
        self.note(Text("agent output (not ACP): ", style="bold yellow") + render.agent_text(line))
        if self._auth_screen is not None:
            with contextlib.suppress(Exception):
                self._auth_screen.show_output(line)

    def _warn(self, text: str) -> None:
        self.note(render.agent_text(f"warning: {text}", style="yellow"))

    async def new_session(self) -> bool:
        """``session/new``; on -32000 offer the agent's auth methods and retry."""
        client = self.client
        assert client is not None
        try:
            state = await signed_in(lambda: client.new_session(self.options.cwd), self.authenticate)
        except RestartAgent as restart:
            self._restart(restart.env)
            return False
        except SignInRefused as refused:
            self.exit_code = EXIT_AUTH_REQUIRED
            exc = refused.refusal
            self.note(f"session/new failed: {exc.message} (code {exc.code})", error=True)
            return False
        except RequestError as exc:
            self.note(f"session/new failed: {exc.message} (code {exc.code})", error=True)
            return False
        except ConnectionClosedError:
            self._report_death()
            return False
        self.use_state(state)
        return True

    def _restart(self, env: dict[str, str]) -> None:
        """Stop this agent process and start it again with ``env`` added."""
        self._restart_env = env
        self._stop_agent.set()

    # ---------------------------------------------------------------- authentication

    async def authenticate(self, exc: RequestError) -> str | dict[str, str] | None:
        """Offer the methods; ``RETRY`` when done in this process, variables to restart
        the agent with, or ``None``."""
        assert self.client is not None
        options = auth_options(self.client.agent.initialize_response, self.options.agent)
        message = format_auth_required(exc, options)
        self.note(message, error=True)
        usable = [o for o in options if o.usable]
        if not usable:
            return None
        buttons = [(o.id, agent_line(o.name)) for o in usable]
        body = render.agent_text(message + "\n")
        for option in usable:
            body.append(f"\n{agent_line(option.name)}: ", style="bold")
            body.append(auth_instructions(option))
        picked = await self._modal(ChoiceScreen(body, [*buttons, ("", "Not now")]))
        chosen = next((o for o in usable if o.id == picked), None)
        if chosen is None:
            return None
        option = chosen
        if option.kind == "env_var":
            values: dict[str, str] | None = await self._modal(EnvVarScreen(option))
            return values
        if option.kind == "terminal":
            return RETRY if await self._terminal_login(option) else None
        return RETRY if await self._agent_login(option) else None

    async def _agent_login(self, option: AuthOption) -> bool:
        """``authenticate``, with a screen showing progress and the agent's output."""
        assert self.client is not None
        screen = AuthProgressScreen(option)
        dismissed = asyncio.Event()
        await self.push_screen(screen, callback=lambda _: dismissed.set())
        self._auth_screen = screen
        self._signal()
        call = asyncio.ensure_future(self.client.agent.authenticate(option.id))
        waiter = asyncio.ensure_future(dismissed.wait())
        try:
            await asyncio.wait({call, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._auth_screen = None
            waiter.cancel()
            if not call.done():
                call.cancel()  # sends $/cancel_request for it
                await asyncio.wait({call})
            if self.screen is screen:
                screen.dismiss(None)
        if call.cancelled():
            self.note("authentication cancelled", error=True)
            return False
        failure = call.exception()
        if isinstance(failure, RequestError):
            self.note(f"authentication failed: {failure.message} (code {failure.code})", error=True)
            return False
        if failure is not None:
            raise failure
        return True

    async def _terminal_login(self, option: AuthOption) -> bool:
        assert option.argv is not None
        env = {**os.environ, **option.env}
        try:
            with self.suspend():
                code = await asyncio.to_thread(
                    subprocess.call, option.argv, env=env, cwd=self.options.cwd
                )
        except Exception:  # SuspendNotSupported (headless, web)
            self.note(f"run `{shlex.join(option.argv)}` in a terminal, then /new", error=True)
            return False
        if code != 0:
            self.note(f"the terminal login exited with status {code}", error=True)
            return False
        return True

    # ---------------------------------------------------------------- drawing

    def use_state(self, state: SessionState) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.state = state
        self.transcript.show_state(state)
        self._unsubscribe = state.subscribe(self._state_changed)
        self.schedule_refresh()

    def _state_changed(self, state: SessionState, update: s.SessionUpdate | None) -> None:
        self.transcript.entry_changed(update)
        self.schedule_refresh()

    def schedule_refresh(self) -> None:
        if not self._refresh_pending:
            self._refresh_pending = True
            self.call_later(self.redraw)

    def redraw(self) -> None:
        self._refresh_pending = False
        state = self.state
        if state is None:
            return
        self.transcript.sync()
        self._show_plan(state)
        if self.agent_dead:
            suffix = Text("  agent stopped", style="bold red")
        elif state.turn_running:
            suffix = Text("  working... (Esc cancels)", style="bold yellow")
        elif state.stop_reason:
            suffix = Text(f"  stop: {agent_line(state.stop_reason)}", style="dim")
        else:
            suffix = Text("")
        self.query_one("#status", StatusLine).show(state, self.label, suffix)
        self._signal()

    def _show_plan(self, state: SessionState) -> None:
        """Pin the plan above the prompt while it is being worked on; once every entry is
        done and the turn is over it moves into the transcript, where it stays."""
        plan = self.query_one("#plan", Static)
        finished = all(str(e.status) == "completed" for e in state.plan)
        pinned = bool(state.plan) and (state.turn_running or not finished)
        if not pinned and state.plan and state.plan is not self._noted_plan:
            self._noted_plan = state.plan
            self.note(render.render_plan(state.plan))
        plan.display = pinned
        if pinned:
            plan.update(render.render_plan(state.plan))

    def action_toggle_thoughts(self) -> None:
        self.transcript.action_toggle_thoughts()

    # ---------------------------------------------------------------- prompts

    def complete_command(self, prefix: str) -> list[str]:
        names = list(COMMANDS)
        if self.state is not None:
            names += [c.name for c in self.state.available_commands]
        return sorted({n for n in names if n.startswith(prefix)})

    @on(TextArea.Changed, "#prompt")
    def show_hint(self, event: TextArea.Changed) -> None:
        text = event.text_area.text
        hint = self.query_one("#hint", Static)
        if text.startswith("/") and " " not in text and "\n" not in text:
            lines: list[str] = []
            agent_commands = (
                {} if self.state is None else {c.name: c for c in self.state.available_commands}
            )
            for name in self.complete_command(text.lstrip("/"))[:8]:
                if name in COMMANDS:
                    lines.append(f"/{name}  {COMMANDS[name].summary} (local)")
                if name in agent_commands:
                    command = agent_commands[name]
                    extra = unset_to_none(command.input)
                    hint_text = (
                        f" <{extra.hint}>" if isinstance(extra, s.UnstructuredCommandInput) else ""
                    )
                    slash = "//" if name in COMMANDS else "/"
                    line = f"{slash}{name}{hint_text}  {command.description} (agent)"
                    lines.append(agent_line(line))
            hint.update(Text("\n".join(lines)))
            hint.display = bool(lines)
        else:
            hint.display = False

    @on(PromptInput.Submitted)
    async def submit(self, event: PromptInput.Submitted) -> None:
        text = event.text.strip()
        if not text:
            return
        prompt = self.query_one("#prompt", PromptInput)
        if text.startswith("//"):
            text = text[1:]  # an agent command named like a local one
        elif text.startswith("/"):
            name, _, rest = text[1:].partition(" ")
            if name in COMMANDS:
                prompt.clear()
                await self.local_command(name, rest.strip())
                return
        if self.client is None or self.state is None or self.agent_dead:
            self.note("not connected to an agent", error=True)
            return
        if self.turn_running:
            self.note("a turn is running; Esc cancels it")
            return
        prompt.clear()
        self.send(text)

    def send(self, text: str) -> None:
        """Start a turn with ``text`` (``@path`` mentions become resources)."""
        assert self.client is not None and self.state is not None
        blocks = build_prompt(
            text, self.options.cwd, embed=embeds_context(self.client.agent.initialize_response)
        )
        self.turn_running = True
        self._cancel_sent = False
        self._turns += 1
        self.transcript.scroll_end(animate=False, immediate=False)
        self._turn_worker = self.run_worker(
            self._turn(self.state, blocks), name="turn", exit_on_error=False
        )

    async def _turn(self, state: SessionState, blocks: list[s.ContentBlock]) -> None:
        client = self.client
        assert client is not None
        try:
            await signed_in(
                lambda: client.prompt(state.session_id, blocks),
                self.authenticate,
                before_retry=lambda: forget_failed_prompt(state),
            )
        except RestartAgent as restart:
            self.note("send the prompt again once the agent is back")
            self._restart(restart.env)
        except SignInRefused:
            pass
        except RequestError as exc:
            self.note(f"the agent answered an error: {exc.message} (code {exc.code})", error=True)
        except ConnectionClosedError:
            self._report_death()
        finally:
            self.turn_running = False
            self.schedule_refresh()

    # ---------------------------------------------------------------- local commands

    async def local_command(self, name: str, rest: str) -> None:
        """Run the local command ``/name rest`` (see :mod:`.commands`)."""
        try:
            await COMMANDS[name].run(self, rest)
        except (AcpError, ValueError) as exc:
            self.note(f"/{name}: {exc}", error=True)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(help_text(self)))
            self._signal()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        # textual annotates the parameter as a bare (generic) Screen.
        yield from super().get_system_commands(screen)  # pyright: ignore[reportUnknownMemberType]
        state, client = self.state, self.client
        if state is None or client is None:
            return
        for mode in state.available_modes:
            yield SystemCommand(
                _palette_text(f"Mode: {mode.name}"),
                _palette_text(f"switch the session to mode {mode.id}"),
                lambda m=mode.id: self._run_command("mode", m),
            )
        for option in state.config_options:
            if isinstance(option, s.SessionConfigSelect):
                for value in select_values(option):
                    yield SystemCommand(
                        _palette_text(f"Config: {option.name} = {value}"),
                        _palette_text(f"set {option.id} to {value}"),
                        lambda o=option.id, v=value: self._run_command("config", f"{o} {v}"),
                    )
            elif isinstance(option, s.SessionConfigBoolean):
                new = "false" if option.current_value else "true"
                yield SystemCommand(
                    _palette_text(f"Config: {option.name} = {new}"),
                    _palette_text(f"set {option.id} to {new}"),
                    lambda o=option.id, v=new: self._run_command("config", f"{o} {v}"),
                )

    def _run_command(self, name: str, rest: str) -> None:
        self.run_worker(self.local_command(name, rest), exit_on_error=False)

    # ---------------------------------------------------------------- permission, elicitation

    async def _modal(self, screen: ModalScreen[Any]) -> Any:
        """Push ``screen`` and wait for its result; cancelling the wait dismisses it."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def done(result: Any) -> None:
            if not future.done():
                future.set_result(result)

        await self.push_screen(screen, callback=done)
        self._signal()
        try:
            return await future
        except asyncio.CancelledError:
            if self.screen is screen:
                screen.dismiss(None)
            raise

    async def ask_permission(self, request: PermissionRequest) -> str | None:
        terminals = {} if self.state is None else self.state.terminals
        body = Group(
            render.render_tool_call(request.tool_call, terminals),
            Text(),
            render.render_permission_options(request.options),
        )
        answer: str | None = await self._modal(PermissionScreen(request, body))
        return answer

    async def ask_form(self, request: FormRequest) -> ElicitationAnswer:
        result: FormResult | None = await self._modal(FormScreen(request))
        if result is None:
            return cancel()
        action, values = result
        if action == "accept":
            return accept(values or {})
        return decline() if action == "decline" else cancel()

    async def ask_url(self, request: UrlRequest) -> ElicitationAnswer:
        body = render.agent_text(request.message + "\n\n", style="bold")
        body.append(agent_line(request.url) + "\n")
        body.append("host: ")
        body.append(agent_line(request.host), style="bold reverse")
        for warning in request.warnings:
            body.append(f"\nwarning: {agent_line(warning)}", style="yellow")
        picked = await self._modal(ChoiceScreen(body, [("open", "Open"), ("decline", "Decline")]))
        if picked == "open":
            with contextlib.suppress(Exception):
                webbrowser.open(request.url)
            return accept()
        return decline() if picked == "decline" else cancel()

    # ---------------------------------------------------------------- actions

    def action_toggle_log(self) -> None:
        log = self.query_one("#log")
        log.display = not log.display

    async def action_cancel_turn(self) -> None:
        """Send ``session/cancel``; stop waiting if the agent does not end the turn."""
        if self.client is None or self.state is None or not self.turn_running:
            return
        if self._cancel_sent:
            return
        self._cancel_sent = True
        self.note("cancelling the turn... (Ctrl+C again quits)")
        turn = self._turns
        self.set_timer(CANCEL_GRACE, lambda: self._abandon_turn(turn))
        with contextlib.suppress(AcpError):
            await self.client.cancel(self.state.session_id)

    def _abandon_turn(self, turn: int) -> None:
        if turn != self._turns or not self.turn_running:
            return
        self.note(
            f"the agent did not end the turn within {CANCEL_GRACE:g} s of session/cancel; "
            "stopped waiting for it",
            error=True,
        )
        if self._turn_worker is not None:
            self._turn_worker.cancel()

    async def action_interrupt(self) -> None:
        """Ctrl+C: cancel the running turn; a second press (or one while idle) quits."""
        if self.turn_running and not self._cancel_sent:
            await self.action_cancel_turn()
            return
        await self.action_quit()

    async def action_quit(self) -> None:
        self._stop_agent.set()
        if self._turn_worker is not None:
            self._turn_worker.cancel()
        client = self.client
        transport = client.connection.transport if client and client.connection else None
        if isinstance(transport, SubprocessTransport):
            transport.grace_period = INTERRUPT_GRACE
        with contextlib.suppress(asyncio.TimeoutError):
            await within(self._agent_stopped.wait(), _STOP_TIMEOUT)
        self.exit(self.exit_code, return_code=self.exit_code)


def _palette_text(text: str) -> str:
    """A palette entry (the palette reads markup): the agent's words on one line, escaped."""
    return escape(agent_line(text))


def run_app(options: ChatOptions) -> int:
    """Run the interactive app; returns the exit status (start-up problems are printed too)."""
    app = ChatApp(options)
    app.run()
    if app.startup_problem is not None:
        print(f"acp chat: {sanitize(str(app.startup_problem))}", file=sys.stderr)
    return app.return_code if app.return_code is not None else app.exit_code
