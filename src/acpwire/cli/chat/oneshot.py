"""``acp chat --prompt TEXT``: one turn, printed (or as JSON lines), then exit.

**Output.** On a terminal the conversation is drawn with Rich: Markdown, colours,
lines wrapped to the terminal. Otherwise it is plain text: the agent's Markdown as
it wrote it, no padding, no line breaks added, so a pipe gets exactly the words. A
message over :data:`~acpwire.cli.render.HUGE_TEXT` characters is written as is on a
terminal too. Messages for people (start-up errors, warnings, denied permissions,
what the agent printed outside the protocol) go to stderr.

**Permissions** follow ``--policy``: ``deny`` (the default, fails closed; each denial
is reported on stderr), ``allow``, or ``ask`` (a question on the terminal when stdin
is one, else deny).

**Ctrl-C** during the turn sends ``session/cancel``; the agent has
:data:`~.session.CANCEL_GRACE` seconds to answer ``cancelled`` (exit 10). After that,
or at a second Ctrl-C, the chat stops the agent and exits 130. While ``authenticate``
runs, Ctrl-C cancels it; a question on the terminal is dropped at once.

**Authentication.** When the agent answers -32000 (to ``session/new`` or later to
``session/prompt``), its methods are listed with what each takes (the command of a
terminal login, the variables of an env-var method). On a terminal one can be
picked: an agent method is ``authenticate``-d (with progress while it runs), a
terminal login is run here, env-var values are asked for (secrets unechoed) and the
agent is started again with them; then the refused request is retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from rich.console import Console, RenderableType
from rich.text import Text

from ... import schema as s
from ..._tasks import TaskSet
from ...client.auth import AuthOption, auth_options
from ...client.permissions import AllowAll, AskUser, PermissionPolicy, PermissionRequest, RejectAll
from ...client.state import SessionState
from ...protocol.errors import ConnectionClosedError, RequestError
from ...transports.subprocess import SubprocessTransport
from .. import render
from ..sanitize import json_line, sanitize
from .session import (
    AUTH_PROGRESS_EVERY,
    CANCEL_GRACE,
    CHAT_MAX_MESSAGE_SIZE,
    EXIT_AGENT_ERROR,
    EXIT_AUTH_REQUIRED,
    EXIT_START_FAILED,
    INTERRUPT_GRACE,
    RETRY,
    ChatClient,
    ChatOptions,
    RestartAgent,
    SignInRefused,
    agent_label,
    auth_instructions,
    build_prompt,
    demo_agent_available,
    describe_connection_lost,
    describe_reconnect,
    describe_startup_error,
    embeds_context,
    exit_code_for_stop_reason,
    forget_failed_prompt,
    format_auth_required,
    open_chat_agent,
    show_library_warnings,
    signed_in,
)

if TYPE_CHECKING:
    from ...schema import v2

__all__ = ["EXIT_INTERRUPTED", "run_once"]

EXIT_INTERRUPTED = 130

_T = TypeVar("_T")


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@dataclass
class _Restart:
    """Start the agent again with these variables set (an env-var login)."""

    env: dict[str, str] = field(default_factory=dict[str, str])


_Outcome = int | _Restart


class _Console(Console):
    """Rich exits 1 when stdout's reader is gone; acp's main exits quietly with 141."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "stdout was closed")


class _Run:
    def __init__(self, options: ChatOptions, out: TextIO, err: TextIO) -> None:
        self.options = options
        self.out = out
        self.plain = not _is_tty(out)
        self.console = _Console(file=out, highlight=False, soft_wrap=False)
        self.err = Console(file=err, highlight=False, stderr=True, soft_wrap=True)
        self.interactive = _is_tty(sys.stdin) and not options.json
        self.client: ChatClient | None = None
        self.on_interrupt: Callable[[], object] | None = None
        self.interrupted = False
        self._line_open = False  # a question waits on the terminal, without its newline
        self._gave_up = False  # the agent did not end the turn after session/cancel
        self._tasks = TaskSet(logging.getLogger("acpwire.cli"))
        self.output_closed = False
        self.main_task: asyncio.Task[int] | None = None

    # ---------------------------------------------------------------- output

    def emit_json(self, obj: Any) -> None:
        if self.output_closed:
            return
        try:
            self.out.write(json_line(obj) + "\n")
            self.out.flush()
        except BrokenPipeError:
            self.output_closed = True
            if asyncio.current_task() is self.main_task:
                raise
            # In a notification handler, where raising would only be logged: stop the
            # run instead (run_once turns the cancellation into a quiet exit).
            if self.main_task is not None:
                self.main_task.cancel()

    def agent_said(self, line: str) -> None:
        self.say(render.agent_text(line, style="dim"))

    def on_update(self, session_id: str, update: s.SessionUpdate | v2.SessionUpdate) -> None:
        self.emit_json(render.update_to_wire(session_id, update))

    def _end_line(self) -> None:
        if self._line_open:
            self._line_open = False
            self.err.file.write("\n")

    def say(self, text: RenderableType) -> None:
        """A line for the person on stderr (after a question left open, on a new line);
        whatever the agent put in it is made safe here."""
        self._end_line()
        self.err.print(render.safe_renderable(text))

    def problem(self, headline: str, details: str = "") -> None:
        self.say(Text("acp chat: ", style="bold red") + render.agent_text(headline))
        if details:
            self.say(render.agent_text(details))

    def warn(self, text: str) -> None:
        self.say(Text("acp chat: warning: ", style="yellow") + render.agent_text(text))

    def on_stray_output(self, line: str) -> None:
        self.say(Text("agent output (not ACP): ", style="bold yellow") + render.agent_text(line))

    def print_conversation(self, state: SessionState, stop_reason: str | None) -> None:
        assert self.client is not None
        label = agent_label(self.client.agent.initialize_response, self.options.target)
        parts = render.conversation_parts(
            state, agent=label, stop_reason=stop_reason, plain=self.plain
        )
        for part in parts:
            if isinstance(part, Text) and (self.plain or len(part) > render.HUGE_TEXT):
                self.out.write(part.plain + "\n")  # no layout: fast, and exactly the text
            else:
                self.console.print(part)
        self.out.flush()

    # ---------------------------------------------------------------- the terminal

    async def ask(self, prompt: str, *, secret: bool = False) -> str | None:
        """A line typed on the terminal (``None`` at end of input); cancellable at once.

        Read through the event loop, not a thread blocked in ``input()``: a thread
        cannot be interrupted, and the interpreter would wait for it at exit.
        """
        fd = sys.stdin.fileno()
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str | None] = loop.create_future()
        buffer = bytearray()

        def readable() -> None:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if answer.done():
                return
            if not data:
                answer.set_result(None)
                return
            buffer.extend(data)
            if b"\n" in buffer:
                answer.set_result(buffer.split(b"\n", 1)[0].decode("utf-8", "replace"))

        restore = _echo_off(fd) if secret else None
        self._end_line()
        self.err.file.write(sanitize(prompt))
        self.err.file.flush()
        self._line_open = True
        loop.add_reader(fd, readable)
        try:
            return await answer
        finally:
            loop.remove_reader(fd)
            answered = answer.done() and not answer.cancelled()
            if restore is not None:
                restore()
                if answered:
                    self.err.file.write("\n")  # the Enter was not echoed
            if answered:
                self._line_open = False

    # ---------------------------------------------------------------- permissions

    def policy(self) -> PermissionPolicy:
        name = self.options.policy or "deny"
        if name == "allow":
            return AllowAll()
        if name == "ask":
            if self.interactive:
                return AskUser(self.ask_on_terminal)
            self.say(Text("stdin is not a terminal: permission requests are denied", "yellow"))
        return _ReportDenials(RejectAll(), self)

    async def ask_on_terminal(self, request: PermissionRequest) -> str | None:
        terminals = {} if self.client is None else self.client.state(request.session_id).terminals
        self.say(Text("The agent asks permission:", style="bold yellow"))
        self.say(render.render_tool_call(request.tool_call, terminals, plain=True))
        self.say(render.render_permission_options(request.options))
        while True:
            answer = await self.ask("choose (number, empty to dismiss; Ctrl-C cancels the turn): ")
            if not answer:
                return None
            answer = answer.strip()
            if answer.isdigit() and 1 <= int(answer) <= len(request.options):
                return request.options[int(answer) - 1].option_id

    # ---------------------------------------------------------------- interrupts

    def sigint(self) -> None:
        self.interrupted = True
        if self.on_interrupt is not None:
            self.on_interrupt()

    # ---------------------------------------------------------------- authentication

    async def authenticate(self, exc: RequestError) -> str | dict[str, str] | None:
        """Explain -32000; on a terminal offer the methods: :data:`RETRY`, variables to
        restart the agent with, or None."""
        assert self.client is not None
        options = auth_options(self.client.agent.initialize_response, self.options.agent)
        self.problem(format_auth_required(exc, options))
        usable = [o for o in options if o.usable]
        if not self.interactive or not usable:
            return None
        for i, option in enumerate(usable, 1):
            self.say(Text(f"  {i}) {render.agent_line(option.name)}: {auth_instructions(option)}"))
        answer = await self.ask("authenticate with (number, empty to quit): ")
        answer = (answer or "").strip()
        if not (answer.isdigit() and 1 <= int(answer) <= len(usable)):
            return None
        option = usable[int(answer) - 1]
        if option.kind == "env_var":
            return await self.ask_env_vars(option)
        if option.kind == "terminal":
            ok = await self.run_terminal_login(option)
        else:
            ok = await self.run_agent_login(option)
        return RETRY if ok else None

    async def run_agent_login(self, option: AuthOption) -> bool:
        assert self.client is not None
        self.say(
            Text(
                f"authenticating with {render.agent_line(option.name)}: the agent may print a login URL or "
                "open a browser (Ctrl-C cancels)",
                style="cyan",
            )
        )
        task = asyncio.ensure_future(self.client.agent.authenticate(option.id))
        previous, self.on_interrupt = self.on_interrupt, task.cancel
        waited = 0.0
        try:
            while not task.done():
                done, _ = await asyncio.wait({task}, timeout=AUTH_PROGRESS_EVERY)
                if not done:
                    waited += AUTH_PROGRESS_EVERY
                    self.say(
                        Text(
                            f"still waiting for the agent to finish authenticating "
                            f"({waited:.0f} s; Ctrl-C cancels)",
                            style="dim",
                        )
                    )
        finally:
            self.on_interrupt = previous
        if task.cancelled():
            self.problem("authentication cancelled")
            return False
        failure = task.exception()
        if isinstance(failure, RequestError):
            self.problem(f"authentication failed: {failure.message} (code {failure.code})")
            return False
        if failure is not None:
            raise failure
        return True

    async def run_terminal_login(self, option: AuthOption) -> bool:
        assert option.argv is not None
        self.say(Text(f"running the terminal login of {render.agent_line(option.name)}...", "cyan"))
        previous, self.on_interrupt = self.on_interrupt, _ignore  # Ctrl-C is the login's own
        try:
            process = await asyncio.create_subprocess_exec(
                *option.argv, env={**os.environ, **option.env}, cwd=self.options.cwd
            )
            code = await process.wait()
        except OSError as exc:
            self.problem(f"the terminal login could not be started: {exc}")
            return False
        finally:
            self.on_interrupt = previous
        if code != 0:
            self.problem(f"the terminal login exited with status {code}")
            return False
        return True

    async def ask_env_vars(self, option: AuthOption) -> dict[str, str] | None:
        if option.link:
            self.say(Text(f"get credentials at {render.agent_line(option.link)}", style="cyan"))
        values: dict[str, str] = {}
        for var in option.vars:
            optional = " (optional)" if var.optional else ""
            label = f"{var.label} ({var.name})" if var.label else var.name
            value = await self.ask(f"{render.agent_line(label)}{optional}: ", secret=var.secret)
            if value:
                values[var.name] = value
            elif not var.optional:
                return None
        return values

    # ---------------------------------------------------------------- the run

    async def run(self) -> int:
        if self.options.default_agent and not demo_agent_available():
            self.problem(
                "the built-in demo agent (acpwire.demo) is not available in this installation",
                "Give an agent command after `--`, e.g. `acp chat -- my-agent --acp`.",
            )
            return EXIT_START_FAILED
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        assert main is not None
        self.main_task = main
        # Outside the turn and a login, Ctrl-C stops whatever runs (a start-up, a
        # question): the agent is stopped on the way out.
        self.on_interrupt = main.cancel
        installed = False
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, self.sigint)
            installed = True
        env: dict[str, str] = {}
        try:
            with show_library_warnings(self.warn):
                while True:
                    outcome = await self.attempt(env)
                    if isinstance(outcome, int):
                        return outcome
                    env.update(outcome.env)
                    self.say(Text("starting the agent again with the variables set", "cyan"))
        except asyncio.CancelledError:
            if not self.interrupted or self.output_closed:
                raise
            self.problem("interrupted")
            return EXIT_INTERRUPTED
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGINT)
            for task in self._tasks:
                task.cancel()

    async def attempt(self, env: dict[str, str]) -> _Outcome:
        """Start the agent, open a session, run the turn; stop the agent."""
        options = self.options
        argv = options.target
        client = self.client = ChatClient(
            permissions=self.policy(),
            terminal_auth=True,
            on_update=self.on_update if options.json else None,
            protocol=options.protocol,
        )
        async with contextlib.AsyncExitStack() as stack:
            try:
                await stack.enter_async_context(
                    open_chat_agent(
                        options,
                        client,
                        env,
                        on_reconnect=lambda event: self.agent_said(describe_reconnect(event)),
                        max_message_size=CHAT_MAX_MESSAGE_SIZE,
                        on_stray_output=self.on_stray_output,
                        # Our own demo says little on stderr, and it is for the user
                        # (where it keeps sessions); other agents' stderr stays quiet.
                        on_stderr=self.agent_said if options.default_agent else None,
                    )
                )
            except Exception as exc:
                problem = describe_startup_error(exc, argv)
                if problem is None:
                    raise
                self.problem(problem.headline, problem.details)
                if options.json:
                    self.emit_json({"error": {"message": str(problem)}})
                return problem.exit_code
            try:
                return await self.session_and_turn(client)
            finally:
                transport = client.connection.transport if client.connection else None
                if self.interrupted and isinstance(transport, SubprocessTransport):
                    transport.grace_period = INTERRUPT_GRACE  # the user wants out now
        raise AssertionError("unreachable")  # pragma: no cover

    async def session_and_turn(self, client: ChatClient) -> _Outcome:
        options = self.options
        assert options.prompt is not None
        try:
            state = await signed_in(lambda: client.new_session(options.cwd), self.authenticate)
        except RestartAgent as restart:
            return _Restart(restart.env)
        except SignInRefused as refused:
            return self.auth_refused(refused.refusal)
        except (RequestError, ConnectionClosedError) as exc:
            return self.turn_error(exc, client)
        blocks = build_prompt(
            options.prompt, options.cwd, embed=embeds_context(client.agent.initialize_response)
        )
        try:
            result = await signed_in(
                lambda: self.prompt(client, state, blocks),
                self.authenticate,
                before_retry=lambda: forget_failed_prompt(state),
            )
        except RestartAgent as restart:
            return _Restart(restart.env)
        except SignInRefused as refused:
            return self.auth_refused(refused.refusal)
        except (RequestError, ConnectionClosedError) as exc:
            self.print_partial(state)
            return self.turn_error(exc, client)
        if result is None:
            self.print_partial(state)
            self.problem(
                f"the agent did not end the turn within {CANCEL_GRACE:g} s of "
                "session/cancel: stopped it"
                if self._gave_up
                else "interrupted: stopped the agent"
            )
            return EXIT_INTERRUPTED
        stop = str(result.stop_reason)
        if options.json:
            self.emit_json({"stopReason": stop})
        else:
            self.print_conversation(state, stop)
        return exit_code_for_stop_reason(stop)

    async def prompt(
        self, client: ChatClient, state: SessionState, blocks: list[s.ContentBlock]
    ) -> s.PromptResponse | None:
        """The turn; ``None`` when Ctrl-C stopped it (see the module docstring)."""
        task = asyncio.ensure_future(client.prompt(state.session_id, blocks))
        loop = asyncio.get_running_loop()
        timer: asyncio.TimerHandle | None = None

        def give_up() -> None:
            self._gave_up = True
            task.cancel()

        def on_interrupt() -> None:
            nonlocal timer
            if timer is None:
                self.say(Text("cancelling the turn (Ctrl-C again to stop now)", "yellow"))
                self._tasks.spawn(_cancel_quietly(client, state.session_id))
                timer = loop.call_later(CANCEL_GRACE, give_up)
            else:
                task.cancel()

        previous, self.on_interrupt = self.on_interrupt, on_interrupt
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            # The run itself stops (stdout closed, start-up Ctrl-C): so does the turn.
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise
        finally:
            self.on_interrupt = previous
            if timer is not None:
                timer.cancel()
        if task.cancelled():
            return None
        return task.result()

    def print_partial(self, state: SessionState) -> None:
        if not self.options.json:
            self.print_conversation(state, None)

    def auth_refused(self, exc: RequestError) -> int:
        if self.options.json:
            self.emit_json({"error": exc.to_wire()})
        return EXIT_AUTH_REQUIRED

    def turn_error(self, exc: BaseException, client: ChatClient) -> int:
        if isinstance(exc, RequestError):
            self.problem(f"the agent answered an error: {exc.message} (code {exc.code})")
            if self.options.json:
                self.emit_json({"error": exc.to_wire()})
        else:
            headline, details = describe_connection_lost(client)
            self.problem(headline, details)
            if self.options.json:
                self.emit_json({"error": {"message": headline}})
        return EXIT_AGENT_ERROR


class _ReportDenials:
    """A policy that says on stderr what the wrapped policy refused."""

    def __init__(self, policy: PermissionPolicy, run: _Run) -> None:
        self.policy = policy
        self.run = run

    async def __call__(self, request: PermissionRequest) -> Any:
        outcome = await self.policy(request)
        title = render.agent_line(request.tool_call.title or request.tool_call.tool_call_id)
        self.run.say(Text(f"acp chat: denied permission: {title} (--policy deny)", "yellow"))
        return outcome


def _ignore() -> None:
    pass


def _echo_off(fd: int) -> Callable[[], None] | None:
    """Stop the terminal echoing what is typed; returns how to undo it."""
    try:
        import termios
    except ImportError:  # pragma: no cover - not POSIX
        return None
    try:
        old = termios.tcgetattr(fd)
    except termios.error:
        return None
    new = list(old)
    new[3] = new[3] & ~termios.ECHO
    termios.tcsetattr(fd, termios.TCSANOW, new)

    def restore() -> None:
        with contextlib.suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, old)

    return restore


def run_once(options: ChatOptions, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run one turn and return the exit status."""
    runner = _Run(options, out or sys.stdout, err or sys.stderr)
    try:
        return asyncio.run(runner.run())
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except asyncio.CancelledError:
        if not runner.output_closed:
            raise
    raise BrokenPipeError(errno.EPIPE, "stdout was closed")  # acp's main exits quietly


async def _cancel_quietly(client: ChatClient, session_id: str) -> None:
    """``session/cancel``; an agent already gone is told by the turn's own end."""
    with contextlib.suppress(ConnectionClosedError):
        await client.cancel(session_id)
