"""The chat app's local slash commands, in one registry.

Dispatch, ``/help``, Tab completion and the hint under the prompt all read
:data:`COMMANDS`. Any other ``/name`` the agent advertised (``available_commands_update``)
is sent to the agent as the prompt text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from rich.console import RenderableType
from rich.text import Text

from ... import schema as s
from ...client.state import SessionState, select_values
from ...protocol.errors import CapabilityError
from ...schema import unset_to_none
from ..render import agent_line
from .session import ChatClient, ChatOptions

__all__ = ["COMMANDS", "KEYS_HELP", "ChatHost", "LocalCommand", "help_text"]


class ChatHost(Protocol):
    """What a local command may use of the app (the chat app is one)."""

    client: ChatClient | None
    state: SessionState | None
    options: ChatOptions

    def note(self, text: str | RenderableType, *, error: bool = False) -> None: ...

    def use_state(self, state: SessionState) -> None: ...

    async def new_session(self) -> bool: ...

    def action_help(self) -> None: ...

    async def action_quit(self) -> None: ...


KEYS_HELP: tuple[tuple[str, str], ...] = (
    ("Enter", "send the prompt"),
    ("Ctrl+J", "new line (or Shift+Enter)"),
    ("Tab", "complete a /command"),
    ("Esc, Ctrl+C", "cancel the running turn"),
    ("Ctrl+C", "again, or while idle: quit"),
    ("F1", "this help"),
    ("F2", "show or hide the agent's stderr"),
    ("Ctrl+T", "fold or unfold thoughts"),
    ("Ctrl+P", "palette: modes, config options"),
    ("Ctrl+Q", "quit"),
)
"""The keys, one per line, shown first by :func:`help_text` (so they fit 80x24)."""


@dataclass(frozen=True)
class LocalCommand:
    """A command the app runs itself: ``/name ARGS`` calls ``run(app, ARGS)``."""

    name: str
    summary: str
    run: Callable[[ChatHost, str], Awaitable[None]]


COMMANDS: dict[str, LocalCommand] = {}


def _command(
    name: str, summary: str
) -> Callable[
    [Callable[[ChatHost, str], Awaitable[None]]], Callable[[ChatHost, str], Awaitable[None]]
]:
    def register(
        run: Callable[[ChatHost, str], Awaitable[None]],
    ) -> Callable[[ChatHost, str], Awaitable[None]]:
        COMMANDS[name] = LocalCommand(name, summary, run)
        return run

    return register


def help_text(app: ChatHost) -> Text:
    """The keys, the local commands and the agent's commands."""
    out = Text("Keys\n", style="bold")
    for keys, does in KEYS_HELP:
        out.append(f"  {keys:<12}", style="bold")
        out.append(f"{does}\n")
    out.append("@path in a prompt sends that file along.\n")
    out.append("Commands\n", style="bold")
    for command in COMMANDS.values():
        out.append(f"/{command.name}", style="bold")
        out.append(f"  {command.summary}\n")
    if app.state is not None:
        for agent_command in app.state.available_commands:
            out.append(f"/{agent_line(agent_command.name)}", style="bold cyan")
            out.append(f"  {agent_line(agent_command.description)} (agent)\n")
    out.rstrip()
    return out


@_command("help", "show keys and commands")
async def _help(app: ChatHost, rest: str) -> None:
    app.action_help()


@_command("mode", "list modes, or switch: /mode ID")
async def _mode(app: ChatHost, rest: str) -> None:
    assert app.client is not None and app.state is not None
    if not rest:
        if not app.state.available_modes:
            app.note("this session has no modes")
        for mode in app.state.available_modes:
            mark = "*" if mode.id == app.state.current_mode_id else " "
            app.note(agent_line(f"{mark} {mode.id}: {mode.name}"))
        return
    await app.client.set_mode(app.state.session_id, rest)
    app.note(f"mode: {rest}")


@_command("config", "list config options, or set one: /config ID VALUE")
async def _config(app: ChatHost, rest: str) -> None:
    assert app.client is not None and app.state is not None
    config_id, _, value_text = rest.partition(" ")
    if not config_id:
        if not app.state.config_options:
            app.note("this session has no config options")
        for option in app.state.config_options:
            if isinstance(option, s.SessionConfigSelect):
                values = ", ".join(select_values(option))
                app.note(agent_line(f"{option.id} = {option.current_value}  ({values})"))
            elif isinstance(option, s.SessionConfigBoolean):
                current = str(option.current_value).lower()
                app.note(agent_line(f"{option.id} = {current}  (true, false)"))
        return
    chosen = app.state.config_option(config_id)
    value: str | bool = value_text.strip()
    if isinstance(chosen, s.SessionConfigBoolean):
        value = str(value).lower() in ("1", "true", "on", "yes")
    await app.client.set_config_option(app.state.session_id, config_id, value)
    app.note(f"{config_id} = {value}")


@_command("sessions", "list the agent's earlier sessions")
async def _sessions(app: ChatHost, rest: str) -> None:
    assert app.client is not None
    if not app.client.supports("session/list"):
        app.note("the agent does not list sessions")
        return
    sessions = await app.client.all_sessions(cwd=app.options.cwd)
    if not sessions:
        app.note("no earlier sessions")
    for info in sessions:
        title = unset_to_none(info.title) or ""
        updated = unset_to_none(info.updated_at) or ""
        current = "*" if app.state and info.session_id == app.state.session_id else " "
        app.note(agent_line(f"{current} {info.session_id}  {title}  {updated}".rstrip()))


@_command("load", "load an earlier session: /load ID")
async def _load(app: ChatHost, session_id: str) -> None:
    assert app.client is not None
    if not session_id:
        app.note("usage: /load SESSION_ID", error=True)
        return
    if app.client.supports("session/load"):
        state = await app.client.load_session(session_id, app.options.cwd)
    elif app.client.supports("session/resume"):
        state = await app.client.resume_session(session_id, app.options.cwd)
    else:
        raise CapabilityError("the agent can neither load nor resume sessions")
    app.use_state(state)
    app.note(f"loaded session {session_id}")


@_command("new", "start a new session")
async def _new(app: ChatHost, rest: str) -> None:
    if app.client is not None and await app.new_session():
        app.note("new session started")


@_command("quit", "leave")
async def _quit(app: ChatHost, rest: str) -> None:
    await app.action_quit()
