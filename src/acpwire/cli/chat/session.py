"""What both forms of ``acp chat`` share: the agent command, exit codes, start-up errors
told as sentences, authentication and ``@path`` mentions.

No Rich or Textual here; the renderers live in :mod:`acpwire.cli.render`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ... import schema as s
from ...client.toolkit import (
    AgentExitedError,
    AgentNotFoundError,
    AgentStartError,
    ToolkitClient,
)
from ...protocol.errors import AuthRequired, ErrorCode, RequestError, VersionMismatchError
from ...schema import UnsetType

__all__ = [
    "EXIT_AGENT_ERROR",
    "EXIT_AUTH_REQUIRED",
    "EXIT_CANCELLED",
    "EXIT_MAX_TOKENS",
    "EXIT_MAX_TURN_REQUESTS",
    "EXIT_OK",
    "EXIT_REFUSAL",
    "EXIT_START_FAILED",
    "EXIT_USAGE",
    "EXIT_VERSION_MISMATCH",
    "AuthChoice",
    "ChatOptions",
    "ChatClient",
    "StartupProblem",
    "agent_label",
    "auth_choices",
    "build_prompt",
    "default_agent_command",
    "demo_agent_available",
    "describe_startup_error",
    "embeds_context",
    "exit_code_for_stop_reason",
    "format_auth_required",
    "is_auth_required",
]

# Exit codes of `acp chat` (documented in docs/chat.md).
EXIT_OK = 0
"""The turn ended with ``end_turn`` (or the interactive app was left normally)."""
EXIT_AGENT_ERROR = 1
"""The agent answered an error, or the connection broke during the turn."""
EXIT_USAGE = 2
"""Bad command line (argparse's own code)."""
EXIT_START_FAILED = 3
"""The agent command was not found, or the agent exited / did not answer during initialize."""
EXIT_VERSION_MISMATCH = 4
"""The agent speaks a protocol version this client does not."""
EXIT_AUTH_REQUIRED = 5
"""The agent needs authentication first (-32000)."""
EXIT_CANCELLED = 10
EXIT_REFUSAL = 11
EXIT_MAX_TOKENS = 12
EXIT_MAX_TURN_REQUESTS = 13

_STOP_CODES = {
    "end_turn": EXIT_OK,
    "cancelled": EXIT_CANCELLED,
    "refusal": EXIT_REFUSAL,
    "max_tokens": EXIT_MAX_TOKENS,
    "max_turn_requests": EXIT_MAX_TURN_REQUESTS,
}


def exit_code_for_stop_reason(stop_reason: str) -> int:
    """0 for ``end_turn``, a distinct code per other stop reason (unknown ones: 1)."""
    return _STOP_CODES.get(stop_reason, EXIT_AGENT_ERROR)


def demo_agent_available() -> bool:
    try:
        return importlib.util.find_spec("acpwire.demo.__main__") is not None
    except ModuleNotFoundError:
        return False


def default_agent_command() -> list[str]:
    """The built-in demo agent, run by this interpreter."""
    return [sys.executable, "-m", "acpwire.demo"]


@dataclass
class ChatOptions:
    """The parsed ``acp chat`` command line."""

    agent: list[str]
    cwd: str
    prompt: str | None = None
    policy: str | None = None
    json: bool = False
    default_agent: bool = False


# ---------------------------------------------------------------------- start-up errors


@dataclass(frozen=True)
class StartupProblem:
    """A start-up failure told for a person: a headline, details, and the exit code."""

    headline: str
    details: str
    exit_code: int

    def __str__(self) -> str:
        return self.headline + (f"\n{self.details}" if self.details else "")


def describe_startup_error(exc: BaseException, argv: Sequence[str]) -> StartupProblem | None:
    """Turn an error from starting/initializing the agent into a message (None: not ours)."""
    command = shlex.join(argv)
    if isinstance(exc, AgentNotFoundError):
        hint = ""
        if argv and argv[0] and os.sep not in argv[0]:
            hint = f"Is `{argv[0]}` installed and on PATH?"
        return StartupProblem(
            f"agent command not found: {argv[0] if argv else command}",
            hint,
            EXIT_START_FAILED,
        )
    if isinstance(exc, AgentExitedError):
        code = exc.returncode
        how = "closed its output" if code is None else f"exited with code {code}"
        details = (
            "its last stderr lines:\n" + _indent(exc.stderr_tail)
            if exc.stderr_tail
            else "it wrote nothing to stderr"
        )
        return StartupProblem(
            f"the agent ({command}) {how} during initialize", details, EXIT_START_FAILED
        )
    if isinstance(exc, AgentStartError):
        return StartupProblem(
            f"the agent ({command}) could not be started", str(exc), EXIT_START_FAILED
        )
    if isinstance(exc, VersionMismatchError):
        return StartupProblem(
            "protocol version mismatch",
            f"{exc}. Use an agent (or agent version) that speaks ACP v1.",
            EXIT_VERSION_MISMATCH,
        )
    if isinstance(exc, PermissionError):
        return StartupProblem(
            f"agent command cannot be executed: {command}", str(exc), EXIT_START_FAILED
        )
    return None


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


# ---------------------------------------------------------------------- authentication


@dataclass(frozen=True)
class AuthChoice:
    """One advertised auth method: ``authenticate`` it, or run ``argv`` in a terminal."""

    id: str
    name: str
    description: str | None
    argv: list[str] | None = None
    """For a terminal method: the agent command relaunched with the method's args."""
    env: dict[str, str] | None = None

    @property
    def is_terminal(self) -> bool:
        return self.argv is not None


def auth_choices(
    response: s.InitializeResponse | None, agent_argv: Sequence[str]
) -> list[AuthChoice]:
    """The auth methods of the initialize answer, terminal ones with their command line."""
    if response is None or isinstance(response.auth_methods, UnsetType):
        return []
    out: list[AuthChoice] = []
    for method in response.auth_methods:
        if isinstance(method, s.AuthMethodTerminal):
            args = [] if isinstance(method.args, UnsetType) else list(method.args)
            env = {} if isinstance(method.env, UnsetType) else dict(method.env)
            description = None if isinstance(method.description, UnsetType) else method.description
            out.append(AuthChoice(method.id, method.name, description, [*agent_argv, *args], env))
        elif isinstance(method, s.AuthMethodAgent):
            description = None if isinstance(method.description, UnsetType) else method.description
            out.append(AuthChoice(method.id, method.name, description))
    return out


def is_auth_required(exc: BaseException) -> bool:
    return isinstance(exc, AuthRequired) or (
        isinstance(exc, RequestError) and exc.code == ErrorCode.AUTH_REQUIRED
    )


def format_auth_required(exc: RequestError, choices: Sequence[AuthChoice]) -> str:
    """The agent said -32000: what it said and how to authenticate."""
    lines = [f"the agent needs authentication: {exc.message}"]
    if not choices:
        lines.append("it advertised no authentication methods.")
    for choice in choices:
        desc = f" - {choice.description}" if choice.description else ""
        if choice.argv is not None:
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in (choice.env or {}).items())
            run = (env + " " if env else "") + shlex.join(choice.argv)
            lines.append(f"  {choice.id}: {choice.name}{desc} (terminal login: run `{run}`)")
        else:
            lines.append(f"  {choice.id}: {choice.name}{desc}")
    return "\n".join(lines)


# ---------------------------------------------------------------------- prompts and mentions

_MENTION = re.compile(r"(?<![\w@])@((?:[^\s\\]|\\ )+)")


def build_prompt(
    text: str, cwd: str | os.PathLike[str], *, embed: bool = False, max_embed_bytes: int = 256_000
) -> list[s.ContentBlock]:
    """The prompt's blocks: the text, then one block per ``@path`` naming an existing file.

    A mention becomes a ``resource_link`` (``file://`` URI), or an embedded text
    resource when ``embed`` (the agent advertised ``promptCapabilities.embeddedContext``)
    and the file is small UTF-8 text. Mentions of files that do not exist stay text.
    """
    blocks: list[s.ContentBlock] = [s.TextContent(text=text)]
    seen: set[Path] = set()
    for match in _MENTION.finditer(text):
        raw = match.group(1).replace("\\ ", " ").rstrip(".,;:!?)")
        path = Path(raw).expanduser()
        if not path.is_absolute():
            path = Path(cwd) / path
        path = path.resolve()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        uri = path.as_uri()
        if embed:
            try:
                data = path.read_bytes()
                if len(data) <= max_embed_bytes:
                    blocks.append(
                        s.EmbeddedResource(
                            resource=s.TextResourceContents(uri=uri, text=data.decode("utf-8"))
                        )
                    )
                    continue
            except (OSError, UnicodeDecodeError):
                pass
        blocks.append(s.ResourceLink(uri=uri, name=path.name, size=path.stat().st_size))
    return blocks


def embeds_context(response: s.InitializeResponse | None) -> bool:
    """Whether the agent accepts embedded resources in prompts."""
    if response is None or isinstance(response.agent_capabilities, UnsetType):
        return False
    prompt = response.agent_capabilities.prompt_capabilities
    return not isinstance(prompt, UnsetType) and prompt.embedded_context is True


# ---------------------------------------------------------------------- the client


class ChatClient(ToolkitClient):
    """A :class:`ToolkitClient` that also reports every ``session/update`` as it arrives.

    ``on_update(session_id, update)`` runs after the update was folded into the
    session's state, in wire order (used for ``--json`` and by the app).
    """

    def __init__(
        self,
        *,
        on_update: Callable[[str, s.SessionUpdate], None] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.on_update = on_update

    async def session_update(self, params: s.SessionNotification) -> None:
        await super().session_update(params)
        if self.on_update is not None:
            self.on_update(params.session_id, params.update)


def agent_label(response: s.InitializeResponse | None, argv: Sequence[str]) -> str:
    """The agent's title or name and version, else its command."""
    info = None if response is None else response.agent_info
    if isinstance(info, s.Implementation):
        title = info.title if isinstance(info.title, str) and info.title else info.name
        return f"{title} {info.version}"
    return Path(argv[0]).name if argv else "agent"
