"""``acp chat --prompt TEXT``: one turn, printed with Rich (or as JSON lines), then exit.

The exit status tells how the turn ended (see :mod:`acpwire.cli.session` and
docs/chat.md). Permission requests follow ``--policy``: ``deny`` (the default, fails
closed), ``allow``, or ``ask`` (a question on the terminal when stdin is a tty, else
deny). Ctrl-C cancels the turn (``session/cancel``); a second Ctrl-C stops at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from .. import schema as s
from ..client.permissions import (
    AllowAll,
    AskUser,
    PermissionOutcome,
    PermissionPolicy,
    PermissionRequest,
)
from ..client.toolkit import open_agent
from ..protocol.errors import ConnectionClosedError, RequestError
from . import render
from .session import (
    EXIT_AGENT_ERROR,
    EXIT_AUTH_REQUIRED,
    EXIT_START_FAILED,
    AuthChoice,
    ChatClient,
    agent_label,
    auth_choices,
    build_prompt,
    demo_agent_available,
    describe_startup_error,
    embeds_context,
    exit_code_for_stop_reason,
    format_auth_required,
    is_auth_required,
)

__all__ = ["ChatOptions", "run_once"]

EXIT_INTERRUPTED = 130


@dataclass
class ChatOptions:
    """The parsed ``acp chat`` command line."""

    agent: list[str]
    cwd: str
    prompt: str | None = None
    policy: str | None = None
    json: bool = False
    default_agent: bool = False


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _Console(Console):
    """Rich exits 1 when stdout's reader is gone; acp's main exits quietly with 141."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "stdout was closed")


class _Run:
    def __init__(self, options: ChatOptions, out: TextIO, err: TextIO) -> None:
        self.options = options
        self.out = out
        self.console = _Console(file=out, highlight=False, soft_wrap=False)
        self.err = Console(file=err, highlight=False, stderr=True, soft_wrap=True)
        self.interactive = _is_tty(sys.stdin) and not options.json
        self.client: ChatClient | None = None
        self.output_closed = False
        self.main_task: asyncio.Task[int] | None = None

    # ---------------------------------------------------------------- output

    def emit_json(self, obj: Any) -> None:
        if self.output_closed:
            return
        try:
            self.out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
            self.out.flush()
        except BrokenPipeError:
            self.output_closed = True
            if asyncio.current_task() is self.main_task:
                raise
            # In a notification handler, where raising would only be logged: stop the
            # run instead (run_once turns the cancellation into a quiet exit).
            if self.main_task is not None:
                self.main_task.cancel()

    def on_update(self, session_id: str, update: s.SessionUpdate) -> None:
        self.emit_json(render.update_to_wire(session_id, update))

    def agent_said(self, line: str) -> None:
        self.err.print(Text(line, style="dim"))

    def problem(self, headline: str, details: str = "") -> None:
        self.err.print(Text("acp chat: ", style="bold red") + Text(headline))
        if details:
            self.err.print(Text(details))

    # ---------------------------------------------------------------- permissions

    def policy(self) -> PermissionPolicy:
        name = self.options.policy or "deny"
        if name == "allow":
            return AllowAll()
        if name == "ask":
            if self.interactive:
                return AskUser(self.ask_on_terminal)
            self.err.print(
                Text("stdin is not a terminal: permission requests are denied", "yellow")
            )
        return self.deny

    async def deny(self, request: PermissionRequest) -> PermissionOutcome:
        """Fail closed, and tell the user on stderr (stdout may be JSON for a program)."""
        title = request.tool_call.title or request.tool_call.tool_call_id
        how = "--policy deny" if (self.options.policy or "deny") == "deny" else "--policy ask"
        self.err.print(Text(f"permission denied ({how}): {title}", "yellow"))
        return request.reject()

    async def ask_on_terminal(self, request: PermissionRequest) -> str | None:
        terminals = {} if self.client is None else self.client.state(request.session_id).terminals
        self.err.print(Text("The agent asks permission:", style="bold yellow"))
        self.err.print(render.render_tool_call(request.tool_call, terminals))
        for i, option in enumerate(request.options, 1):
            self.err.print(f"  {i}) {option.name} [{option.kind}]")
        while True:
            answer = (await asyncio.to_thread(input, "choose (number, empty to dismiss): ")).strip()
            if not answer:
                return None
            if answer.isdigit() and 1 <= int(answer) <= len(request.options):
                return request.options[int(answer) - 1].option_id

    # ---------------------------------------------------------------- authentication

    async def authenticate(self, exc: RequestError, argv: Sequence[str]) -> bool:
        """Explain -32000; on a terminal offer the methods. True when we should retry."""
        assert self.client is not None
        choices = auth_choices(self.client.agent.initialize_response, argv)
        self.problem(format_auth_required(exc, choices))
        if not self.interactive or not choices:
            return False
        for i, choice in enumerate(choices, 1):
            self.err.print(f"  {i}) {choice.name}" + (" (terminal)" if choice.is_terminal else ""))
        answer = (
            await asyncio.to_thread(input, "authenticate with (number, empty to quit): ")
        ).strip()
        if not (answer.isdigit() and 1 <= int(answer) <= len(choices)):
            return False
        choice = choices[int(answer) - 1]
        return await self.run_auth(choice)

    async def run_auth(self, choice: AuthChoice) -> bool:
        assert self.client is not None
        if choice.argv is None:
            try:
                await self.client.agent.authenticate(choice.id)
            except RequestError as failure:
                self.problem(f"authentication failed: {failure.message}")
                return False
            return True
        env = {**os.environ, **(choice.env or {})}
        code = await asyncio.to_thread(subprocess.call, choice.argv, env=env, cwd=self.options.cwd)
        if code != 0:
            self.problem(f"the terminal login exited with code {code}")
            return False
        return True

    # ---------------------------------------------------------------- the turn

    async def run(self) -> int:
        self.main_task = asyncio.current_task()
        options = self.options
        argv = options.agent
        if options.default_agent and not demo_agent_available():
            self.problem(
                "the built-in demo agent (acpwire.demo) is not available in this installation",
                "Give an agent command after `--`, e.g. `acp chat -- my-agent --acp`.",
            )
            return EXIT_START_FAILED
        self.client = ChatClient(
            permissions=self.policy(),
            terminal_auth=True,
            on_update=self.on_update if options.json else None,
        )
        async with contextlib.AsyncExitStack() as stack:
            try:
                await stack.enter_async_context(
                    open_agent(
                        argv,
                        client=self.client,
                        cwd=options.cwd,
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
            return await self.turn(self.client, argv)
        raise AssertionError("unreachable")  # pragma: no cover

    async def turn(self, client: ChatClient, argv: Sequence[str]) -> int:
        options = self.options
        assert options.prompt is not None
        while True:
            try:
                state = await client.new_session(options.cwd)
                break
            except RequestError as exc:
                if is_auth_required(exc):
                    if await self.authenticate(exc, argv):
                        continue
                    if options.json:
                        self.emit_json({"error": exc.to_wire()})
                    return EXIT_AUTH_REQUIRED
                return self.turn_error(exc, client)
            except ConnectionClosedError as exc:
                return self.turn_error(exc, client)
        blocks = build_prompt(
            options.prompt,
            options.cwd,
            embed=embeds_context(client.agent.initialize_response),
        )
        loop = asyncio.get_running_loop()
        main_task = asyncio.current_task()
        interrupts = 0
        cancelling: set[asyncio.Task[None]] = set()

        def on_sigint() -> None:
            nonlocal interrupts
            interrupts += 1
            if interrupts == 1:
                self.err.print(Text("cancelling the turn (Ctrl-C again to quit)", "yellow"))
                task = loop.create_task(client.cancel(state.session_id))
                cancelling.add(task)
                task.add_done_callback(cancelling.discard)
            elif main_task is not None:
                main_task.cancel()

        installed = False
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, on_sigint)
            installed = True
        try:
            result = await client.prompt(state.session_id, blocks)
        except asyncio.CancelledError:
            if self.output_closed:
                raise
            self.problem("interrupted")
            return EXIT_INTERRUPTED
        except (RequestError, ConnectionClosedError) as exc:
            if is_auth_required(exc) and isinstance(exc, RequestError):
                self.problem(
                    format_auth_required(exc, auth_choices(client.agent.initialize_response, argv))
                )
                if options.json:
                    self.emit_json({"error": exc.to_wire()})
                return EXIT_AUTH_REQUIRED
            if not options.json:
                self.console.print(
                    render.render_conversation(
                        state, agent=agent_label(client.agent.initialize_response, argv)
                    )
                )
            return self.turn_error(exc, client)
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGINT)
        stop = str(result.stop_reason)
        if options.json:
            self.emit_json({"stopReason": stop})
        else:
            label = agent_label(client.agent.initialize_response, argv)
            self.console.print(render.render_conversation(state, agent=label, stop_reason=stop))
        return exit_code_for_stop_reason(stop)

    def turn_error(self, exc: BaseException, client: ChatClient) -> int:
        if isinstance(exc, RequestError):
            self.problem(f"the agent answered an error: {exc.message} (code {exc.code})")
            if self.options.json:
                self.emit_json({"error": exc.to_wire()})
        else:
            details = ""
            connection = client.connection
            transport = None if connection is None else connection.transport
            tail = getattr(transport, "stderr_tail", None)
            if callable(tail):
                text = str(tail()).strip()
                if text:
                    details = "its last stderr lines:\n" + "\n".join(
                        "  " + line for line in text.splitlines()[-20:]
                    )
            self.problem("the agent closed the connection during the turn", details)
            if self.options.json:
                self.emit_json({"error": {"message": "connection closed"}})
        return EXIT_AGENT_ERROR


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
