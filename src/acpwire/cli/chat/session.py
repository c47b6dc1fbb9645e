"""What both forms of ``acp chat`` share: the agent command, exit codes and limits,
start-up errors and a dying agent told as sentences, authentication methods told as
instructions, library warnings shown once, and ``@path`` mentions.

No Rich or Textual here; the renderers live in :mod:`acpwire.cli.render`. The
agent's names in these sentences are put on one line by
:func:`~acpwire.cli.sanitize.sanitize`; the sentences themselves are made safe where
they are shown (both forms of the chat print them through ``safe_renderable``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import re
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ... import schema as s
from ...client.auth import AuthOption
from ...client.state import MessageView, SessionState
from ...client.toolkit import (
    AgentExitedError,
    AgentNotFoundError,
    AgentStartError,
    ToolkitClient,
    open_agent,
)
from ...protocol.errors import (
    AuthRequired,
    ConnectionClosedError,
    ErrorCode,
    RequestError,
    VersionMismatchError,
)
from ...schema import UnsetType
from ...transports.remote import Reconnected, token_refused
from ...transports.subprocess import SubprocessTransport
from ..sanitize import sanitize

if TYPE_CHECKING:
    from ...schema import v2

T = TypeVar("T")

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
    "AUTH_PROGRESS_EVERY",
    "CANCEL_GRACE",
    "CHAT_MAX_MESSAGE_SIZE",
    "INTERRUPT_GRACE",
    "ChatOptions",
    "ChatClient",
    "StartupProblem",
    "agent_label",
    "auth_instructions",
    "build_prompt",
    "default_agent_command",
    "demo_agent_available",
    "describe_connection_lost",
    "describe_reconnect",
    "describe_exit",
    "describe_startup_error",
    "embeds_context",
    "exit_code_for_stop_reason",
    "RETRY",
    "RestartAgent",
    "SignIn",
    "SignInRefused",
    "forget_failed_prompt",
    "format_auth_required",
    "is_auth_required",
    "signed_in",
    "open_chat_agent",
    "show_library_warnings",
]

# Exit codes of `acp chat` (documented in docs/chat.md).
EXIT_OK = 0
"""The turn ended with ``end_turn`` (or the interactive app was left normally)."""
EXIT_AGENT_ERROR = 1
"""The agent answered an error, or died (or closed the connection) during the session."""
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


CHAT_MAX_MESSAGE_SIZE = 32 * 1024 * 1024
"""Largest message `acp chat` reads (32 MiB): a 20 MB chunk passes, a larger line is
dropped with a warning and the turn goes on."""
CANCEL_GRACE = 1.0
"""Seconds an agent gets to end the turn after ``session/cancel`` before the one-shot
chat stops it, or the app stops waiting for it (prompt-turn.mdx: the agent SHOULD stop
as soon as possible)."""
INTERRUPT_GRACE = 0.3
"""Seconds an interrupted chat waits for the agent to exit, after closing its stdin and
again after SIGTERM, before the next, harder signal."""


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
    protocol: int = 1
    """The highest ACP version offered (2: the v2 draft, falling back to 1)."""
    url: str | None = None
    """A remote agent (``acp serve``'s address) instead of ``agent``."""
    token: str | None = None
    http: bool = False
    """Streamable HTTP instead of WebSocket, for ``url``."""

    @property
    def target(self) -> list[str]:
        """What to name the agent by in messages: its command, or its URL."""
        return [self.url] if self.url is not None else self.agent


def open_chat_agent(
    options: ChatOptions,
    client: ToolkitClient,
    env: dict[str, str],
    on_reconnect: Callable[[Reconnected], None] | None = None,
    **local: Any,
) -> contextlib.AbstractAsyncContextManager[ToolkitClient]:
    """:func:`open_agent` for the agent command, or for the remote agent at ``options.url``
    (reconnecting, sessions re-attached; ``local`` options apply to a command only)."""
    if options.url is not None:
        return open_agent(
            url=options.url,
            token=options.token,
            http=options.http,
            client=client,
            on_reconnect=on_reconnect,
        )
    return open_agent(options.agent, client=client, cwd=options.cwd, env=env or None, **local)


def describe_reconnect(event: Reconnected) -> str:
    """One line for a restored connection (a gap: updates may be missing)."""
    text = f"connection to the agent lost and restored ({event.attempts} attempt(s))"
    if event.reattached:
        text += f"; {len(event.reattached)} session(s) re-attached"
    if event.lost:
        text += f"; lost: {', '.join(f'{k} ({v})' for k, v in event.lost.items())}"
    return text + "; updates sent meanwhile may be missing"


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
    """Turn an error from starting/initializing the agent into a message (``None`` for a
    cancellation or an interrupt, which are not errors to describe)."""
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
        how = describe_exit(exc.returncode)
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
        # initialization.mdx: an agent that supports the requested version answers it;
        # another number means it does not, and the client closes the connection.
        return StartupProblem(
            f"protocol version mismatch: the agent ({command}) does not speak ACP v1",
            f"{exc}. acpwire speaks ACP v1 only; use an agent (or agent version) that speaks v1.",
            EXIT_VERSION_MISMATCH,
        )
    if isinstance(exc, PermissionError):
        return StartupProblem(
            f"agent command cannot be executed: {command}", str(exc), EXIT_START_FAILED
        )
    if isinstance(exc, RequestError):  # the answer to initialize
        hint = ""
        if exc.code == ErrorCode.METHOD_NOT_FOUND:
            hint = (
                "It does not know `initialize`: is it an ACP agent (some need a flag, e.g. --acp)?"
            )
        return StartupProblem(
            f"the agent ({command}) answered initialize with an error: "
            f"{exc.message} (code {exc.code})",
            hint,
            EXIT_START_FAILED,
        )
    if isinstance(exc, ConnectionClosedError) and token_refused(exc):
        return StartupProblem(
            f"the agent at {command} refused the token: {exc}",
            "Give the token `acp serve` printed, with --token or $ACP_TOKEN.",
            EXIT_START_FAILED,
        )
    if isinstance(exc, ConnectionClosedError):  # a remote agent (--url) out of reach
        return StartupProblem(f"cannot reach the agent at {command}: {exc}", "", EXIT_START_FAILED)
    if isinstance(exc, Exception):  # anything else: one clear line, never a traceback
        return StartupProblem(
            f"the agent ({command}) could not be started: {exc or type(exc).__name__}",
            "",
            EXIT_START_FAILED,
        )
    return None


def describe_exit(returncode: int | None) -> str:
    """How the agent process ended, as words: "exited with status 7", "was killed by SIGKILL"."""
    if returncode is None:
        return "closed its output"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with status {returncode}"


def describe_connection_lost(client: ToolkitClient) -> tuple[str, str]:
    """Headline and details for a connection that ended during the session."""
    transport = None if client.connection is None else client.connection.transport
    headline = "the agent closed the connection"
    details = ""
    if isinstance(transport, SubprocessTransport):
        if transport.returncode is not None:
            headline = f"the agent died: it {describe_exit(transport.returncode)}"
        tail = transport.stderr_tail().strip()
        if tail:
            details = "its last stderr lines:\n" + _indent("\n".join(tail.splitlines()[-20:]))
    return headline, details


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


# ---------------------------------------------------------------------- authentication


def is_auth_required(exc: BaseException) -> bool:
    return isinstance(exc, AuthRequired) or (
        isinstance(exc, RequestError) and exc.code == ErrorCode.AUTH_REQUIRED
    )


def auth_instructions(option: AuthOption) -> str:
    """What the user has to do to use ``option``, in one line."""
    if option.kind == "terminal":
        assert option.argv is not None
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in option.env.items())
        text = f"terminal login: run `{(env + ' ' if env else '') + shlex.join(option.argv)}`"
    elif option.kind == "env_var":
        needed = [v.name for v in option.vars if not v.optional]
        optional = [v.name for v in option.vars if v.optional]
        what = " and ".join(needed) or "its variables"
        text = f"set {what} in the agent's environment"
        if optional:
            text += f" (optional: {', '.join(optional)})"
        if option.link:
            text += f"; get one at {option.link}"
    elif option.kind == "agent":
        text = "the agent logs you in"
    else:
        text = f"a `{option.type}` method this client cannot use"
    return sanitize(text, line=True)


def format_auth_required(exc: RequestError, options: Sequence[AuthOption]) -> str:
    """The agent said -32000: what it said and, per method, how to authenticate."""
    lines = [f"the agent needs authentication: {exc.message}"]
    if not options:
        lines.append("it advertised no authentication methods.")
    for option in options:
        desc = f" - {option.description}" if option.description else ""
        label = sanitize(f"{option.id}: {option.name}{desc}", line=True)
        lines.append(f"  {label} ({auth_instructions(option)})")
    return "\n".join(lines)


AUTH_PROGRESS_EVERY = 5.0
"""Seconds between "still waiting" lines while ``authenticate`` has not answered."""


@dataclass
class RestartAgent(Exception):
    """The user chose an env-var login: start the agent again with ``env`` set."""

    env: dict[str, str]


class SignInRefused(Exception):
    """The agent needs authentication and the user did not complete it."""

    def __init__(self, refusal: RequestError) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


RETRY = "retry"
"""Authentication succeeded in the running agent: send the refused request again."""

SignIn = Callable[[RequestError], Awaitable["str | dict[str, str] | None"]]
"""Offers the agent's methods after -32000: :data:`RETRY`, variables for a restarted
agent, or ``None`` (not now)."""


async def signed_in(
    attempt: Callable[[], Awaitable[T]],
    sign_in: SignIn,
    before_retry: Callable[[], object] = lambda: None,
) -> T:
    """``attempt()``; when the agent answers -32000 (at ``session/new``, or at prompt time
    as claude-agent-acp does), ``sign_in`` offers its methods and, once signed in, the
    same request goes again (after ``before_retry``). Raises :class:`RestartAgent` or
    :class:`SignInRefused` when the user chose a restart or nothing; other errors as
    ``attempt`` raised them."""
    while True:
        try:
            return await attempt()
        except RequestError as exc:
            if not is_auth_required(exc):
                raise
            decision = await sign_in(exc)
            if decision == RETRY:
                before_retry()
                continue
            if isinstance(decision, dict):
                raise RestartAgent(decision) from None
            raise SignInRefused(exc) from None


def forget_failed_prompt(state: SessionState) -> None:
    """Drop the prompt a refused turn recorded, so that the retry shows it once."""
    last = state.transcript[-1] if state.transcript else None
    if isinstance(last, MessageView) and last.role == "user":
        state.transcript.pop()


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


# ---------------------------------------------------------------------- library warnings


_MAX_DISTINCT_WARNINGS = 100
"""Distinct warning texts shown per run; past that a flood of them stays in the log."""


class _WarningsToUser(logging.Handler):
    def __init__(self, show: Callable[[str], None]) -> None:
        super().__init__(logging.WARNING)
        self.show = show
        self.seen: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if text not in self.seen and len(self.seen) < _MAX_DISTINCT_WARNINGS:
            self.seen.add(text)
            self.show(text)


@contextlib.contextmanager
def show_library_warnings(show: Callable[[str], None]) -> Generator[None, None, None]:
    """Hand acpwire's warnings (a dropped oversize message, a malformed line) to ``show``.

    The library logs what it survives; a person at the terminal should see it, but
    once: each distinct text is shown the first time only.
    """
    handler = _WarningsToUser(show)
    logger = logging.getLogger("acpwire")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


# ---------------------------------------------------------------------- the client


class ChatClient(ToolkitClient):
    """A :class:`ToolkitClient` that also reports every ``session/update`` as it arrives.

    ``on_update(session_id, update)`` runs after the update was folded into the
    session's state, in wire order (used for ``--json`` and by the app).
    """

    def __init__(
        self,
        *,
        on_update: Callable[[str, s.SessionUpdate | v2.SessionUpdate], None] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.on_update = on_update

    async def session_update(self, params: s.SessionNotification) -> None:
        await super().session_update(params)
        if self.on_update is not None:
            self.on_update(params.session_id, params.update)

    async def v2_update_folded(self, params: v2.UpdateSessionNotification) -> None:
        if self.on_update is not None:
            self.on_update(params.session_id, params.update)


def agent_label(response: s.InitializeResponse | None, argv: Sequence[str]) -> str:
    """The agent's title or name and version, else its command."""
    info = None if response is None else response.agent_info
    if isinstance(info, s.Implementation):
        title = info.title if isinstance(info.title, str) and info.title else info.name
        return sanitize(f"{title} {info.version}", line=True)
    return Path(argv[0]).name if argv else "agent"
