"""Interactive ``acp chat``: a Textual app around one agent process.

The transcript is the session's :class:`~acpwire.client.state.SessionState` drawn with
the renderers of :mod:`acpwire.cli.render` (one widget per transcript entry, redrawn
when the state changes). The agent runs in the app's event loop: the state listener
only schedules a redraw, never blocks.

Keys: Enter sends, Ctrl+J (or Shift+Enter where the terminal reports it) inserts a
newline, Tab completes a slash command, Esc or Ctrl+C cancels the running turn (a
second Ctrl+C, or Ctrl+C while idle, quits), F2 shows the agent's stderr, Ctrl+Q quits,
Ctrl+P opens the command palette (modes and config options are there too).

Local slash commands: ``/help``, ``/mode [ID]``, ``/config [ID VALUE]``, ``/sessions``,
``/load ID``, ``/new``, ``/quit``. Any other ``/name`` the agent advertised in
``available_commands_update`` is sent to the agent as the prompt text.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shlex
import subprocess
import sys
import webbrowser
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, TypeVar, cast

from rich.console import Console, RenderableType
from rich.text import Text
from textual import events, on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import (
    Button,
    Checkbox,
    Footer,
    Input,
    Label,
    RichLog,
    Select,
    Static,
    TextArea,
)

from .. import schema as s
from ..client.elicitation import (
    ElicitationAnswer,
    ElicitationHandler,
    FormRequest,
    UrlRequest,
    accept,
    cancel,
    decline,
)
from ..client.permissions import AllowAll, AskUser, PermissionPolicy, PermissionRequest, RejectAll
from ..client.state import MessageView, SessionState, ToolCallView, select_values
from ..client.toolkit import open_agent
from ..protocol.errors import AcpError, CapabilityError, ConnectionClosedError, RequestError
from ..schema import UnsetType
from . import render
from .oneshot import ChatOptions
from .session import (
    EXIT_AUTH_REQUIRED,
    EXIT_OK,
    EXIT_START_FAILED,
    AuthChoice,
    ChatClient,
    StartupProblem,
    agent_label,
    auth_choices,
    build_prompt,
    demo_agent_available,
    describe_startup_error,
    embeds_context,
    format_auth_required,
    is_auth_required,
)

__all__ = ["ChatApp", "PermissionScreen", "PromptInput", "run_app"]

LOCAL_COMMANDS: dict[str, str] = {
    "help": "show keys and commands",
    "mode": "list modes, or switch: /mode ID",
    "config": "list config options, or set one: /config ID VALUE",
    "sessions": "list the agent's earlier sessions",
    "load": "load an earlier session: /load ID",
    "new": "start a new session",
    "quit": "leave",
}

HELP = """Keys: Enter send | Ctrl+J newline | Tab complete /command | Esc or Ctrl+C cancel the turn
(Ctrl+C again or while idle: quit) | F2 agent stderr log | Ctrl+P command palette | Ctrl+Q quit.
Mention files with @path (sent as resource links, or embedded when the agent accepts it)."""


_T = TypeVar("_T")


def _opt(value: _T | UnsetType) -> _T | None:
    return None if isinstance(value, UnsetType) else value


# ---------------------------------------------------------------------- prompt input


class PromptInput(TextArea):
    """Multi-line prompt: Enter submits, Ctrl+J / Shift+Enter insert a newline."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    completions: Callable[[str], list[str]] | None = None

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self.text))
            return
        if event.key in ("ctrl+j", "shift+enter"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "tab" and self.text.startswith("/") and " " not in self.text:
            event.stop()
            event.prevent_default()
            matches = self.completions(self.text[1:]) if self.completions else []
            if len(matches) == 1:
                self.text = f"/{matches[0]} "
                self.move_cursor(self.document.end)
            elif matches:
                prefix = _common_prefix(matches)
                if len(prefix) + 1 > len(self.text):
                    self.text = "/" + prefix
                    self.move_cursor(self.document.end)
            return
        await super()._on_key(event)


def _common_prefix(words: list[str]) -> str:
    prefix = words[0]
    for word in words[1:]:
        while not word.startswith(prefix):
            prefix = prefix[:-1]
    return prefix


# ---------------------------------------------------------------------- modal screens


class PermissionScreen(ModalScreen[str | None]):
    """The agent asks permission: one button per option (or keys 1..9); Esc dismisses."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Dismiss")]

    def __init__(self, request: PermissionRequest, body: RenderableType) -> None:
        super().__init__()
        self.request = request
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text("The agent asks permission", style="bold yellow"))
            yield Static(self.body, id="permission-call")
            with Horizontal(id="options"):
                for i, option in enumerate(self.request.options):
                    allow = str(option.kind).startswith("allow")
                    yield Button(
                        f"{i + 1}. {option.name}",
                        id=f"option-{i}",
                        variant="success" if allow else "error",
                    )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        index = int((event.button.id or "option-0").split("-")[1])
        self.dismiss(self.request.options[index].option_id)

    def on_key(self, event: events.Key) -> None:
        if event.character and event.character.isdigit():
            index = int(event.character) - 1
            if 0 <= index < len(self.request.options):
                event.stop()
                self.dismiss(self.request.options[index].option_id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


FormResult = tuple[str, dict[str, Any] | None]


class FormScreen(ModalScreen[FormResult]):
    """An elicitation form: one field per property (text, number, checkbox, choice)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel_form", "Cancel")]

    def __init__(self, request: FormRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        with VerticalScroll(id="dialog"):
            yield Label(Text(request.message, style="bold"))
            for error in request.errors:
                yield Label(Text(error, style="red"))
            required = set(request.required)
            for name, prop in request.properties.items():
                title = _opt(getattr(prop, "title", None)) or name
                star = " *" if name in required else ""
                yield Label(f"{title}{star}")
                description = _opt(getattr(prop, "description", None))
                if description:
                    yield Label(Text(description, style="dim"))
                value = request.values.get(name)
                widget_id = f"field-{name}"
                if isinstance(prop, s.BooleanPropertySchema):
                    yield Checkbox(title, bool(value), id=widget_id)
                elif isinstance(prop, s.StringPropertySchema) and (
                    bool(_opt(prop.enum)) or bool(_opt(prop.one_of))
                ):
                    choices: list[tuple[str, str]] = [(e, e) for e in (_opt(prop.enum) or [])] + [
                        (o.title, o.const) for o in (_opt(prop.one_of) or [])
                    ]
                    yield Select(
                        choices,
                        value=value if isinstance(value, str) else Select.BLANK,
                        id=widget_id,
                    )
                else:
                    kind: Any = "text"
                    if isinstance(prop, s.IntegerPropertySchema):
                        kind = "integer"
                    elif isinstance(prop, s.NumberPropertySchema):
                        kind = "number"
                    text = ""
                    if isinstance(value, list):
                        text = ", ".join(str(v) for v in value)
                    elif value is not None:
                        text = str(value)
                    yield Input(text, type=kind, id=widget_id)
            with Horizontal(id="options"):
                yield Button("Submit", id="submit", variant="success")
                yield Button("Decline", id="decline", variant="error")
                yield Button("Cancel", id="cancel")

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, prop in self.request.properties.items():
            widget = self.query_one(f"#field-{name}")
            if isinstance(widget, Checkbox):
                out[name] = widget.value
            elif isinstance(widget, Select):
                # compose() builds every Select from (title, str) choices.
                selected = cast("Select[str]", widget).value
                if isinstance(selected, str):
                    out[name] = selected
            elif isinstance(widget, Input):
                text = widget.value.strip()
                if not text:
                    continue
                if isinstance(prop, s.IntegerPropertySchema):
                    with contextlib.suppress(ValueError):
                        out[name] = int(text)
                elif isinstance(prop, s.NumberPropertySchema):
                    with contextlib.suppress(ValueError):
                        out[name] = float(text)
                elif isinstance(prop, s.MultiSelectPropertySchema):
                    out[name] = [p.strip() for p in text.split(",") if p.strip()]
                else:
                    out[name] = text
        return out

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "submit":
            self.dismiss(("accept", self.values()))
        else:
            self.dismiss((event.button.id or "cancel", None))

    def action_cancel_form(self) -> None:
        self.dismiss(("cancel", None))


class ChoiceScreen(ModalScreen[str | None]):
    """A message and a few buttons; the result is the chosen button's key (Esc: None)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Dismiss")]

    def __init__(self, body: RenderableType, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self.body = body
        self.choices = choices

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.body)
            with Horizontal(id="options"):
                for i, (_, label) in enumerate(self.choices):
                    yield Button(label, id=f"choice-{i}")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        index = int((event.button.id or "choice-0").split("-")[1])
        self.dismiss(self.choices[index][0])

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


# ---------------------------------------------------------------------- the app


class ChatApp(App[int]):
    """``acp chat``: one agent, one session at a time."""

    TITLE = "acp chat"
    CSS = """
    #status { dock: top; height: auto; background: $boost; padding: 0 1; }
    #transcript { height: 1fr; padding: 0 1; }
    #transcript > .entry { margin-bottom: 1; }
    #transcript > .note { color: $text-muted; margin-bottom: 1; }
    #transcript > .error { color: $error; margin-bottom: 1; }
    #plan { height: auto; max-height: 10; padding: 0 1; border-top: solid $primary; }
    #log { height: 12; border-top: solid $warning; }
    #hint { height: auto; color: $text-muted; padding: 0 1; }
    #prompt { height: auto; min-height: 3; max-height: 10; }
    ModalScreen { align: center middle; }
    #dialog { width: 90%; max-width: 110; height: auto; max-height: 90%;
              border: thick $warning; background: $surface; padding: 1 2; }
    #options { height: auto; margin-top: 1; }
    #options > Button { margin-right: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "interrupt", "Cancel / quit", priority=True),
        Binding("escape", "cancel_turn", "Cancel turn"),
        Binding("f2", "toggle_log", "Agent log"),
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
        self.connected = asyncio.Event()
        """Set once the agent is initialized and a session exists (or start-up failed)."""
        self.changed = asyncio.Event()
        """Set (and replaced) after every redraw; tests wait on it instead of sleeping."""
        self._stop_agent = asyncio.Event()
        self._agent_task: asyncio.Task[None] | None = None
        self._turn_task: asyncio.Task[None] | None = None
        self._interrupts = 0
        self._unsubscribe: Callable[[], None] | None = None
        self._entry_widgets: dict[int, tuple[MessageView | ToolCallView, Static]] = {}
        self._refresh_pending = False
        self._tasks: set[asyncio.Task[Any]] = set()

    # ---------------------------------------------------------------- layout

    def compose(self) -> ComposeResult:
        yield Static(Text("starting the agent...", style="dim"), id="status")
        yield VerticalScroll(id="transcript")
        yield Static(id="plan")
        yield RichLog(id="log", wrap=True, markup=False, highlight=False)
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
        self._agent_task = asyncio.create_task(self._agent_main())

    # ---------------------------------------------------------------- notes

    def note(self, text: str | RenderableType, *, error: bool = False) -> None:
        """A local line in the transcript (not part of the session)."""
        widget = Static(text, classes="error" if error else "note")
        self.query_one("#transcript", VerticalScroll).mount(widget)
        self._scroll_end()
        self._signal()

    def transcript_text(self) -> str:
        """The transcript's widgets rendered as plain text (what the user reads).

        Nothing is wrapped (the width is one no line reaches; trailing blanks are
        dropped), so a sentence reads the same whatever the terminal's size and
        however long a path it holds.
        """
        buffer = io.StringIO()
        console = Console(file=buffer, width=10_000, color_system=None, highlight=False)
        for widget in self.query_one("#transcript", VerticalScroll).query(Static):
            content = widget.content
            console.print(content if not isinstance(content, str) else Text(content))
        return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())

    def _scroll_end(self) -> None:
        self.query_one("#transcript", VerticalScroll).scroll_end(animate=False)

    def _signal(self) -> None:
        event, self.changed = self.changed, asyncio.Event()
        event.set()

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---------------------------------------------------------------- agent lifecycle

    def _policy(self) -> PermissionPolicy:
        name = self.options.policy or "ask"
        if name == "allow":
            return AllowAll()
        if name == "deny":
            return RejectAll()
        return AskUser(self.ask_permission)

    async def _agent_main(self) -> None:
        argv = self.options.agent
        if self.options.default_agent and not demo_agent_available():
            self._startup_failed(
                StartupProblem(
                    "the built-in demo agent (acpwire.demo) is not available in this installation",
                    "Give an agent command after `--`, e.g. `acp chat -- my-agent --acp`.",
                    EXIT_START_FAILED,
                )
            )
            return
        self.client = ChatClient(
            permissions=self._policy(),
            elicitation=ElicitationHandler(form=self.ask_form, url=self.ask_url),
            terminal_auth=True,
        )
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    await stack.enter_async_context(
                        open_agent(
                            argv,
                            client=self.client,
                            cwd=self.options.cwd,
                            on_stderr=self._on_stderr,
                        )
                    )
                except Exception as exc:
                    problem = describe_startup_error(exc, argv)
                    if problem is None:
                        raise
                    self._startup_failed(problem)
                    return
                self.label = agent_label(self.client.agent.initialize_response, argv)
                if await self.new_session():
                    self.note(Text(f"connected to {self.label}. /help lists commands.", "dim"))
                self.connected.set()
                await self._stop_agent.wait()
        except ConnectionClosedError:
            self.note("the agent closed the connection", error=True)
        finally:
            self.connected.set()

    def _startup_failed(self, problem: StartupProblem) -> None:
        self.startup_problem = problem
        self.exit_code = problem.exit_code
        self.note(Text(str(problem), style="bold red"), error=True)
        self.note("Press Ctrl+Q to quit.")
        self.query_one("#status", Static).update(Text("not connected", style="red"))
        self.connected.set()

    def _on_stderr(self, line: str) -> None:
        with contextlib.suppress(Exception):
            self.query_one("#log", RichLog).write(Text(line))

    async def new_session(self) -> bool:
        """``session/new``; on -32000 offer the agent's auth methods and retry."""
        assert self.client is not None
        while True:
            try:
                state = await self.client.new_session(self.options.cwd)
            except RequestError as exc:
                if is_auth_required(exc) and await self.authenticate(exc):
                    continue
                if is_auth_required(exc):
                    self.exit_code = EXIT_AUTH_REQUIRED
                self.note(f"session/new failed: {exc.message} (code {exc.code})", error=True)
                return False
            self.use_state(state)
            return True

    async def authenticate(self, exc: RequestError) -> bool:
        assert self.client is not None
        choices = auth_choices(self.client.agent.initialize_response, self.options.agent)
        self.note(format_auth_required(exc, choices), error=True)
        if not choices:
            return False
        body = Text(format_auth_required(exc, choices))
        buttons = [(c.id, c.name + (" (terminal)" if c.is_terminal else "")) for c in choices]
        picked = await self._modal(ChoiceScreen(body, [*buttons, ("", "Not now")]))
        choice = next((c for c in choices if c.id == picked), None)
        if choice is None:
            return False
        return await self._run_auth(choice)

    async def _run_auth(self, choice: AuthChoice) -> bool:
        assert self.client is not None
        if choice.argv is None:
            try:
                await self.client.agent.authenticate(choice.id)
            except RequestError as failure:
                self.note(f"authentication failed: {failure.message}", error=True)
                return False
            return True
        env = {**os.environ, **(choice.env or {})}
        try:
            with self.suspend():
                code = await asyncio.to_thread(
                    subprocess.call, choice.argv, env=env, cwd=self.options.cwd
                )
        except Exception:  # SuspendNotSupported (headless, web)
            self.note(f"run `{shlex.join(choice.argv)}` in a terminal, then /new", error=True)
            return False
        if code != 0:
            self.note(f"the terminal login exited with code {code}", error=True)
            return False
        return True

    def use_state(self, state: SessionState) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        for _, widget in self._entry_widgets.values():
            widget.remove()
        self._entry_widgets.clear()
        self.state = state
        self._unsubscribe = state.subscribe(lambda _state, _update: self.schedule_refresh())
        self.schedule_refresh()

    # ---------------------------------------------------------------- drawing

    def schedule_refresh(self) -> None:
        if not self._refresh_pending:
            self._refresh_pending = True
            self.call_later(self.redraw)

    def redraw(self) -> None:
        self._refresh_pending = False
        state = self.state
        if state is None:
            return
        container = self.query_one("#transcript", VerticalScroll)
        at_bottom = container.scroll_y >= container.max_scroll_y - 2
        alive = {id(e) for e in state.transcript}
        for key in [k for k in self._entry_widgets if k not in alive]:
            self._entry_widgets.pop(key)[1].remove()
        for entry in state.transcript:
            renderable = render.render_entry(entry, state.terminals)
            known = self._entry_widgets.get(id(entry))
            if known is None:
                role = entry.role if isinstance(entry, MessageView) else "tool"
                widget = Static(renderable, classes=f"entry {role}")
                self._entry_widgets[id(entry)] = (entry, widget)
                container.mount(widget)
            else:
                known[1].update(renderable)
        plan = self.query_one("#plan", Static)
        plan.display = bool(state.plan)
        if state.plan:
            plan.update(render.render_plan(state.plan))
        status = render.render_status(state, agent=self.label)
        if state.turn_running:
            status.append("  working... (Esc cancels)", style="bold yellow")
        elif state.stop_reason:
            status.append(f"  stop: {state.stop_reason}", style="dim")
        self.query_one("#status", Static).update(status)
        if at_bottom:
            self._scroll_end()
        self._signal()

    # ---------------------------------------------------------------- prompts

    def complete_command(self, prefix: str) -> list[str]:
        names = list(LOCAL_COMMANDS)
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
            for name in self.complete_command(text[1:])[:8]:
                if name in agent_commands:
                    command = agent_commands[name]
                    extra = _opt(command.input)
                    hint_text = (
                        f" <{extra.hint}>" if isinstance(extra, s.UnstructuredCommandInput) else ""
                    )
                    lines.append(f"/{name}{hint_text}  {command.description}")
                else:
                    lines.append(f"/{name}  {LOCAL_COMMANDS[name]} (local)")
            hint.update("\n".join(lines))
            hint.display = bool(lines)
        else:
            hint.display = False

    @on(PromptInput.Submitted)
    async def submit(self, event: PromptInput.Submitted) -> None:
        text = event.text.strip()
        if not text:
            return
        prompt = self.query_one("#prompt", PromptInput)
        if text.startswith("/"):
            name, _, rest = text[1:].partition(" ")
            agent_names = (
                set[str]()
                if self.state is None
                else {c.name for c in self.state.available_commands}
            )
            if name in LOCAL_COMMANDS and name not in agent_names:
                prompt.clear()
                await self.local_command(name, rest.strip())
                return
        if self.client is None or self.state is None:
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
        self._interrupts = 0
        self._turn_task = asyncio.create_task(self._turn(self.state, blocks))

    async def _turn(self, state: SessionState, blocks: list[s.ContentBlock]) -> None:
        assert self.client is not None
        try:
            await self.client.prompt(state.session_id, blocks)
        except RequestError as exc:
            if is_auth_required(exc):
                await self.authenticate(exc)
            else:
                self.note(
                    f"the agent answered an error: {exc.message} (code {exc.code})", error=True
                )
        except ConnectionClosedError:
            tail = ""
            connection = self.client.connection
            stderr_tail = getattr(connection.transport if connection else None, "stderr_tail", None)
            if callable(stderr_tail):
                tail = str(stderr_tail()).strip()
            self.note(
                "the agent closed the connection"
                + (f"; its last stderr lines:\n{tail}" if tail else ""),
                error=True,
            )
        finally:
            self.turn_running = False
            self.schedule_refresh()

    # ---------------------------------------------------------------- local commands

    async def local_command(self, name: str, rest: str) -> None:
        try:
            if name == "help":
                self.note(self._help())
            elif name == "quit":
                await self.action_quit()
            elif name == "mode":
                await self._mode_command(rest)
            elif name == "config":
                await self._config_command(rest)
            elif name == "sessions":
                await self._sessions_command()
            elif name == "load":
                await self._load_command(rest)
            elif name == "new":
                if self.client is not None and await self.new_session():
                    self.note("new session started")
        except (AcpError, ValueError) as exc:
            self.note(f"/{name}: {exc}", error=True)

    def _help(self) -> Text:
        out = Text(HELP + "\n")
        for name, what in LOCAL_COMMANDS.items():
            out.append(f"/{name}", style="bold")
            out.append(f"  {what}\n")
        if self.state is not None:
            for command in self.state.available_commands:
                out.append(f"/{command.name}", style="bold cyan")
                out.append(f"  {command.description} (agent)\n")
        out.rstrip()
        return out

    async def _mode_command(self, rest: str) -> None:
        assert self.client is not None and self.state is not None
        if not rest:
            if not self.state.available_modes:
                self.note("this session has no modes")
            for mode in self.state.available_modes:
                mark = "*" if mode.id == self.state.current_mode_id else " "
                self.note(f"{mark} {mode.id}: {mode.name}")
            return
        await self.client.set_mode(self.state.session_id, rest)
        self.note(f"mode: {rest}")

    async def _config_command(self, rest: str) -> None:
        assert self.client is not None and self.state is not None
        config_id, _, value_text = rest.partition(" ")
        if not config_id:
            if not self.state.config_options:
                self.note("this session has no config options")
            for option in self.state.config_options:
                if isinstance(option, s.SessionConfigSelect):
                    values = ", ".join(select_values(option))
                    self.note(f"{option.id} = {option.current_value}  ({values})")
                elif isinstance(option, s.SessionConfigBoolean):
                    self.note(f"{option.id} = {str(option.current_value).lower()}  (true, false)")
            return
        chosen = self.state.config_option(config_id)
        value: str | bool = value_text.strip()
        if isinstance(chosen, s.SessionConfigBoolean):
            value = str(value).lower() in ("1", "true", "on", "yes")
        await self.client.set_config_option(self.state.session_id, config_id, value)
        self.note(f"{config_id} = {value}")

    async def _sessions_command(self) -> None:
        assert self.client is not None
        if not self.client.supports("session/list"):
            self.note("the agent does not list sessions")
            return
        sessions = await self.client.all_sessions(cwd=self.options.cwd)
        if not sessions:
            self.note("no earlier sessions")
        for info in sessions:
            title = _opt(info.title) or ""
            updated = _opt(info.updated_at) or ""
            current = "*" if self.state and info.session_id == self.state.session_id else " "
            self.note(f"{current} {info.session_id}  {title}  {updated}".rstrip())

    async def _load_command(self, session_id: str) -> None:
        assert self.client is not None
        if not session_id:
            self.note("usage: /load SESSION_ID", error=True)
            return
        if self.client.supports("session/load"):
            state = await self.client.load_session(session_id, self.options.cwd)
        elif self.client.supports("session/resume"):
            state = await self.client.resume_session(session_id, self.options.cwd)
        else:
            raise CapabilityError("the agent can neither load nor resume sessions")
        self.use_state(state)
        self.note(f"loaded session {session_id}")

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        # textual annotates the parameter as a bare (generic) Screen.
        yield from super().get_system_commands(screen)  # pyright: ignore[reportUnknownMemberType]
        state, client = self.state, self.client
        if state is None or client is None:
            return
        for mode in state.available_modes:
            yield SystemCommand(
                f"Mode: {mode.name}",
                f"switch the session to mode {mode.id}",
                lambda m=mode.id: self._spawn(self.local_command("mode", m)),
            )
        for option in state.config_options:
            if isinstance(option, s.SessionConfigSelect):
                for value in select_values(option):
                    yield SystemCommand(
                        f"Config: {option.name} = {value}",
                        f"set {option.id} to {value}",
                        lambda o=option.id, v=value: self._spawn(
                            self.local_command("config", f"{o} {v}")
                        ),
                    )
            elif isinstance(option, s.SessionConfigBoolean):
                new = "false" if option.current_value else "true"
                yield SystemCommand(
                    f"Config: {option.name} = {new}",
                    f"set {option.id} to {new}",
                    lambda o=option.id, v=new: self._spawn(
                        self.local_command("config", f"{o} {v}")
                    ),
                )

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
        body = render.render_tool_call(request.tool_call, terminals)
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
        body = Text(request.message + "\n\n", style="bold")
        body.append(request.url + "\n")
        body.append("host: ")
        body.append(request.host, style="bold reverse")
        for warning in request.warnings:
            body.append(f"\nwarning: {warning}", style="yellow")
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
        if self.client is None or self.state is None or not self.turn_running:
            return
        self.note("cancelling the turn...")
        await self.client.cancel(self.state.session_id)

    async def action_interrupt(self) -> None:
        """Ctrl+C: cancel the running turn; a second press (or one while idle) quits."""
        self._interrupts += 1
        if self.turn_running and self._interrupts == 1:
            await self.action_cancel_turn()
            return
        await self.action_quit()

    async def action_quit(self) -> None:
        self._stop_agent.set()
        if self._turn_task is not None and not self._turn_task.done():
            self._turn_task.cancel()
        if self._agent_task is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._agent_task), 10)
        self.exit(self.exit_code, return_code=self.exit_code)


def run_app(options: ChatOptions) -> int:
    """Run the interactive app; returns the exit status (start-up problems are printed too)."""
    app = ChatApp(options)
    app.run()
    if app.startup_problem is not None:
        print(f"acp chat: {app.startup_problem}", file=sys.stderr)
    return app.return_code if app.return_code is not None else app.exit_code
