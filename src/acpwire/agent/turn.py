"""The turn context a prompt handler receives, and how a turn runs and ends.

A :class:`Turn` is one ``session/prompt``: the prompt, the session, and typed
ways to talk to the client (message and thought chunks, plans, tool calls,
permission, files, terminals, elicitation, commands, usage, title, the
client's MCP servers). Calls that
need a client capability check it first and raise
:class:`~acpwire.protocol.errors.CapabilityError` with a hint when it is
missing (FS-002, TERM-002, ELIC-005); ``turn.can_*`` lets tool code check
first, and ``fallback=True`` on files and commands uses the agent's own disk
and processes instead.

How a turn ends (prompt-turn.mdx; docs/cancellation.md): the handler runs in
the task serving the ``session/prompt`` request. ``session/cancel``,
``session/close``, ``$/cancel_request`` for the prompt (taken over from the
engine, so all three go through :meth:`Turn.cancel`, which is idempotent), or
the connection closing cancel it at once, wherever it is waiting (a permission
reply, a file read, a terminal). Teardown then marks every tool call still open
``failed``, kills and releases every terminal still held, and only then is the
prompt answered, with ``stopReason: "cancelled"`` and never an error
(CANCEL-004..006). After the answer the turn refuses to send anything. Which of
these steps a turn is at is one :class:`~acpwire.agent.turn_state.TurnState`,
moved only through the table in :mod:`acpwire.agent.turn_state`.

:class:`Turn` is the facade handlers see (as FastMCP's ``Context``): tool calls
and what runs inside them live in :mod:`acpwire.agent.tools`, terminals in
:mod:`acpwire.agent.terminals`, forms in :mod:`acpwire.agent.elicitation`; the
runtime (:mod:`acpwire.agent.runtime`) keeps which turn runs in which session.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .. import schema as s
from ..engine.roles import gate_allows
from ..protocol.errors import CapabilityError, ConnectionClosedError, InvalidParams
from ..schema import UNSET
from ..schema.methods import BY_NAME
from .chunks import LiveChunks
from .commands import Command
from .elicitation import Answer, ask_form
from .options import ConfigValue
from .sessions import Session, TextKind
from .turn_state import TurnEvent, TurnState, next_state
from .v1 import ClientPeer

if TYPE_CHECKING:  # loaded when first used: most agents need none of them at start-up
    from ..sandbox import Sandbox
    from .mcp import McpServers, McpToolResult
    from .terminals import RunResult, TerminalHandle
    from .tools import ToolCall, ToolCallContext, ToolContent

__all__ = [
    "STOP_REASONS",
    "Answer",
    "Plan",
    "PromptHandler",
    "StopReason",
    "Turn",
    "TurnFinishedError",
    "is_absolute",
    "run_turn",
]

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
STOP_REASONS: frozenset[str] = frozenset(
    {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}
)

PromptHandler = Callable[["Turn"], Awaitable[StopReason | None]]
"""``async def handle(turn) -> None | stop reason``; None means ``end_turn``."""


class TurnFinishedError(RuntimeError):
    """Something tried to send for a turn that has already been answered."""


def is_absolute(path: str) -> bool:
    """Absolute in POSIX or Windows form (the client may run on either)."""
    if path.startswith("/"):  # what PurePosixPath(path).is_absolute() means, without a path object
        return True
    from pathlib import PureWindowsPath

    return PureWindowsPath(path).is_absolute()


_FINISHED = "this turn has already been answered; nothing more can be sent for it"
_UUID_VARIANT = {f"{d:x}": "89ab"[d & 3] for d in range(16)}


_ids: list[str] = []  # made ahead, 64 at a time: one getrandom() per 64 ids


def new_message_id() -> str:
    """A random UUID (version 4) as text: ``str(uuid.uuid4())`` without the UUID object
    (every turn makes one for the prompt and one per message), from ``os.urandom``."""
    while True:  # (a loop: another thread may take the last id between refill and pop)
        try:
            return _ids.pop()
        except IndexError:
            raw = os.urandom(16 * 64).hex()
            _ids.extend(
                f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_UUID_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"
                for h in (raw[i : i + 32] for i in range(0, len(raw), 32))
            )


if hasattr(os, "register_at_fork"):  # a forked child must not hand out its parent's ids
    os.register_at_fork(after_in_child=_ids.clear)


class Plan:
    """The turn's plan. Every change sends the complete entry list (PLAN-003, PLAN-004).

    The schema knows three statuses (``pending``, ``in_progress``,
    ``completed``); a step that could not be done is :meth:`fail`-ed: it stays
    not completed and its text says why.
    """

    def __init__(self, turn: Turn, entries: Sequence[s.PlanEntry]) -> None:
        self.turn = turn
        self.entries = list(entries)

    async def set(self, *entries: str | s.PlanEntry) -> None:
        """Replace the whole plan."""
        self.entries = [_plan_entry(e) for e in entries]
        await self._send()

    async def mark(
        self, index: int, status: Literal["pending", "in_progress", "completed"]
    ) -> None:
        """Change one entry's status."""
        entry = self.entries[index]
        self.entries[index] = s.PlanEntry(
            content=entry.content, priority=entry.priority, status=status
        )
        await self._send()

    async def start(self, index: int) -> None:
        await self.mark(index, "in_progress")

    async def complete(self, index: int) -> None:
        await self.mark(index, "completed")

    async def fail(self, index: int, reason: str | None = None) -> None:
        """Mark a step as not done: back to ``pending``, its text ending ``(failed: reason)``."""
        entry = self.entries[index]
        note = f" (failed: {reason})" if reason else " (failed)"
        content = entry.content if entry.content.endswith(note) else entry.content + note
        self.entries[index] = s.PlanEntry(
            content=content, priority=entry.priority, status="pending"
        )
        await self._send()

    async def _send(self) -> None:
        await self.turn.send(s.PlanUpdate(entries=list(self.entries)))


def _plan_entry(item: str | s.PlanEntry) -> s.PlanEntry:
    if isinstance(item, s.PlanEntry):
        return item
    return s.PlanEntry(content=item, priority="medium", status="pending")


class Turn:
    """One prompt turn. Handlers receive it; see the module docstring."""

    def __init__(
        self,
        session: Session,
        prompt: Sequence[s.ContentBlock],
        *,
        chunk_interval: float | None = None,
    ) -> None:
        self.session = session
        self.prompt: list[s.ContentBlock] = list(prompt)
        self.command: tuple[str, str] | None = None
        """``(name, argument text)`` when the prompt invoked a declared slash command."""
        self.open_calls: dict[str, ToolCall] = {}
        """Tool calls reported and not finished yet, by id; the turn fails them when it ends."""
        self._terminals: set[TerminalHandle] = set()
        """Terminals opened and not released yet; the turn releases them when it ends."""
        self._message_id: str | None = None
        self._thought_id: str | None = None
        self._state = TurnState.PENDING
        self._task: asyncio.Task[StopReason] | None = None  # the handler's, once it started
        self._done: asyncio.Event | None = None  # made by the first wait(): most turns have none
        self._live = None if chunk_interval is None else LiveChunks(session.send, chunk_interval)

    # -- what the handler reads ------------------------------------------

    @property
    def session_id(self) -> str:
        return self.session.id

    @property
    def cwd(self) -> str:
        return self.session.cwd

    @property
    def client(self) -> ClientPeer:
        return self.session.client

    @property
    def text(self) -> str:
        """The prompt's text blocks joined by newlines (resource links as their URI)."""
        parts: list[str] = []
        for block in self.prompt:
            if isinstance(block, s.TextContent):
                parts.append(block.text)
            elif isinstance(block, s.ResourceLink):
                parts.append(block.uri)
            elif isinstance(block, s.EmbeddedResource) and isinstance(
                block.resource, s.TextResourceContents
            ):
                parts.append(block.resource.text)
        return "\n".join(parts)

    @property
    def mode(self) -> str | None:
        return self.session.mode

    @property
    def config(self) -> Mapping[str, ConfigValue]:
        return self.session.config

    @property
    def cancelled(self) -> bool:
        """True once cancellation was requested (the task is being cancelled too)."""
        return self._state.cancelled

    @property
    def state(self) -> TurnState:
        """Where the turn is in its life (:mod:`acpwire.agent.turn_state`)."""
        return self._state

    def _can(self, method: str, mode: str | None = None) -> bool:
        gate = BY_NAME[method].gate
        return gate is None or gate_allows(gate, self.client.remote_capabilities, mode)

    @property
    def can_read_files(self) -> bool:
        return self._can("fs/read_text_file")

    @property
    def can_write_files(self) -> bool:
        return self._can("fs/write_text_file")

    @property
    def can_run_commands(self) -> bool:
        return self._can("terminal/create")

    @property
    def can_ask(self) -> bool:
        """Whether the client takes form-mode elicitation."""
        return self._can("elicitation/create", "form")

    def resolve(self, path: str | os.PathLike[str]) -> str:
        """An absolute path: relative ones are taken from the session's cwd (SESS-021)."""
        text = os.fspath(path)
        if is_absolute(text):
            return text
        from pathlib import PurePosixPath, PureWindowsPath

        return (
            str(PurePosixPath(self.cwd) / text)
            if PurePosixPath(self.cwd).is_absolute()
            else str(PureWindowsPath(self.cwd) / text)
        )

    # -- sending -----------------------------------------------------------

    async def send(self, update: s.SessionUpdate) -> None:
        """Send (and record) any session update. Raises :class:`TurnFinishedError` after the turn ended."""
        if self._state.answered:
            raise TurnFinishedError(_FINISHED)
        if isinstance(update, s.ToolCallStart):
            self._message_id = self._thought_id = None
        elif isinstance(update, s.AgentMessageChunk):
            self._thought_id = None
        elif isinstance(update, s.AgentThoughtChunk):
            self._message_id = None
        if self._live is None:
            await self.session.send(update)
        else:
            await self._live.send(update)

    # say() and think() are what a streaming agent calls per token: plain text goes
    # through Session.send_text, which builds neither a model nor a wire form. They hand
    # back _stream's own coroutine rather than awaiting it in one of their own: a
    # coroutine frame per token is about 150 ns, most of a 5 % streaming budget.

    def say(self, content: str | s.ContentBlock) -> Coroutine[object, None, None]:
        """Stream a chunk of the agent's message (``await turn.say(...)``). Consecutive
        chunks share one ``messageId``."""
        return self._stream(content, False)

    def think(self, content: str | s.ContentBlock) -> Coroutine[object, None, None]:
        """Stream a chunk of the agent's reasoning (``agent_thought_chunk``;
        ``await turn.think(...)``)."""
        return self._stream(content, True)

    async def _stream(self, content: str | s.ContentBlock, thought: bool) -> None:
        """What say() and think() do: consecutive chunks of one kind share an id, and a
        chunk of the other kind ends that run."""
        if self._state.answered:
            raise TurnFinishedError(_FINISHED)
        kind: TextKind
        if thought:
            kind, chunk_id = "agent_thought_chunk", self._thought_id
            if chunk_id is None:
                chunk_id = self._thought_id = new_message_id()
            self._message_id = None
        else:
            kind, chunk_id = "agent_message_chunk", self._message_id
            if chunk_id is None:
                chunk_id = self._message_id = new_message_id()
            self._thought_id = None
        if self._live is None and isinstance(content, str):
            await self.session.send_text(kind, chunk_id, content)
            return
        block = s.TextContent(text=content) if isinstance(content, str) else content
        update: s.AgentThoughtChunk | s.AgentMessageChunk = (
            s.AgentThoughtChunk(content=block, message_id=chunk_id)
            if thought
            else s.AgentMessageChunk(content=block, message_id=chunk_id)
        )
        await (self.session.send(update) if self._live is None else self._live.send(update))

    async def plan(self, *entries: str | s.PlanEntry) -> Plan:
        """Send a plan (strings become pending, medium-priority entries) and return it for updates."""
        plan = Plan(self, [])
        await plan.set(*entries)
        return plan

    def tool(
        self,
        title: str,
        *,
        kind: str | None = None,
        locations: Sequence[s.ToolCallLocation] = (),
        raw_input: Any = None,
        content: Sequence[ToolContent] = (),
        permission_key: str | None = None,
    ) -> ToolCallContext:
        """``async with turn.tool("Read x", kind="read") as call:``; see :mod:`acpwire.agent.tools`."""
        from .tools import ToolCall, ToolCallContext

        return ToolCallContext(
            ToolCall(
                self,
                title,
                kind=kind,
                locations=locations,
                raw_input=raw_input,
                content=content,
                permission_key=permission_key,
            )
        )

    async def start_tool(
        self,
        title: str,
        *,
        kind: str | None = None,
        locations: Sequence[s.ToolCallLocation] = (),
        raw_input: Any = None,
        content: Sequence[ToolContent] = (),
    ) -> ToolCall:
        """Report a tool call without a ``with`` block; finish it with ``complete()`` / ``fail()``.

        If the turn ends first, it is marked ``failed``.
        """
        from .tools import ToolCall

        call = ToolCall(
            self, title, kind=kind, locations=locations, raw_input=raw_input, content=content
        )
        await call.announce()
        return call

    async def set_title(self, title: str | None) -> None:
        """Set the session title (``session_info_update``; shown by ``session/list``)."""
        self._check_open()
        await self.session.set_title(title)

    async def set_mode(self, mode_id: str) -> None:
        """Switch the session's mode from the agent side (``current_mode_update``)."""
        self._check_open()
        await self.session.set_mode(mode_id)

    async def set_option(self, config_id: str, value: ConfigValue) -> None:
        """Change a config option from the agent side (``config_option_update``)."""
        self._check_open()
        await self.session.set_option(config_id, value)

    async def set_commands(self, commands: Sequence[Command]) -> None:
        """Publish the session's slash commands (``available_commands_update``)."""
        self._check_open()
        await self.session.publish_commands(commands)

    async def report_usage(
        self, used: int, size: int, *, cost: float | None = None, currency: str = "USD"
    ) -> None:
        """Context window usage in tokens, and optionally the session's cost so far (``usage_update``)."""
        await self.send(
            s.UsageUpdate(
                used=used,
                size=size,
                cost=UNSET if cost is None else s.Cost(amount=cost, currency=currency),
            )
        )

    # -- the client's files -------------------------------------------------

    def _local_files(self) -> Sandbox:
        """The agent's own disk, confined to the session's roots as a client would (SESS-023)."""
        from ..sandbox import Sandbox

        return Sandbox(self.session.roots)

    async def read_file(
        self,
        path: str,
        *,
        line: int | None = None,
        limit: int | None = None,
        fallback: bool = False,
    ) -> str:
        """Read a text file through the client (``fs/read_text_file``), seeing unsaved edits.

        ``line`` is 1-based. Without ``fs.readTextFile`` this raises
        :class:`CapabilityError`, unless ``fallback`` is true: then the file is
        read from the agent's disk through the same :class:`~acpwire.sandbox.Sandbox`
        the toolkit client uses (inside the session's roots only, SESS-023; size cap,
        UTF-8), failing with the same errors a client would answer.
        """
        path = self.resolve(path)
        if line is not None and line < 1:
            raise ValueError("line numbers are 1-based")
        if not self.can_read_files:
            if not fallback:
                raise CapabilityError(
                    "the client did not advertise fs.readTextFile; check turn.can_read_files "
                    "or pass fallback=True to read from the agent's disk"
                )
            return await asyncio.to_thread(self._local_files().read_text, path, line, limit)
        result = await self.client.read_text_file(self.session_id, path, line=line, limit=limit)
        return result.content

    async def write_file(self, path: str, content: str, *, fallback: bool = False) -> None:
        """Write a text file through the client (``fs/write_text_file``; creates it if missing).

        Without ``fs.writeTextFile``: :class:`CapabilityError`, or with
        ``fallback`` an atomic write to the agent's disk inside the session's roots,
        through the same sandbox as :meth:`read_file` (version control internals refused).
        """
        path = self.resolve(path)
        if not self.can_write_files:
            if not fallback:
                raise CapabilityError(
                    "the client did not advertise fs.writeTextFile; check turn.can_write_files "
                    "or pass fallback=True to write to the agent's disk"
                )
            await asyncio.to_thread(self._local_files().write_text, path, content)
            return
        await self.client.write_text_file(self.session_id, path, content)

    # -- terminals -----------------------------------------------------------

    async def open_terminal(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        output_byte_limit: int | None = None,
    ) -> TerminalHandle:
        """``terminal/create``: start a command in a client terminal and return its handle at once.

        Use it as ``async with await turn.open_terminal(...) as term`` so it is
        released; the turn releases any terminal still held when it ends.
        """
        if not self.can_run_commands:
            raise CapabilityError(
                "the client did not advertise terminal; check turn.can_run_commands "
                "or use turn.run(..., fallback=True) to run the command on the agent's machine"
            )
        result = await self.client.create_terminal(
            self.session_id,
            command,
            args,
            env=env,
            cwd=self.resolve(cwd or self.cwd),
            output_byte_limit=output_byte_limit,
        )
        from .terminals import TerminalHandle

        return TerminalHandle(
            self.client, self.session_id, result.terminal_id, held=self._terminals
        )

    async def run(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        title: str | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        output_byte_limit: int | None = None,
        fallback: bool = False,
    ) -> RunResult:
        """Run a command to completion inside an ``execute`` tool call and return its output.

        The client's terminal is embedded in the tool call while it runs, then
        released. Without the ``terminal`` capability: :class:`CapabilityError`,
        or with ``fallback`` the command runs on the agent's machine and its
        output is shown as text. A non-zero exit does not raise; check
        ``result.ok``. A command that cannot run (the client's error, a missing
        program) fails the tool call and returns a result whose ``error`` says why.
        """
        import shlex

        from .terminals import RunResult

        label = title or shlex.join([command, *args])
        raw = {"command": command, "args": list(args), "cwd": cwd or self.cwd}
        async with self.tool(label, kind="execute", raw_input=raw) as call:
            return await call.run(
                command,
                args,
                cwd=cwd,
                env=env,
                output_byte_limit=output_byte_limit,
                fallback=fallback,
            )
        # Only reached when the call failed and the tool block reported it.
        return RunResult("", None, error=call.error)

    # -- the client's MCP servers ----------------------------------------------

    async def mcp_servers(self) -> McpServers:
        """The session's MCP servers (the client's ``mcpServers``), connected.

        They were started when the session opened (or, with
        ``AgentApp(mcp_on_demand=True)``, by the first call in the session):
        concurrently, in the session's cwd. The call waits for them, reports
        each one that could not be used as a ``failed`` tool call naming the
        server and the reason (unless that was said already), and returns the
        :class:`~acpwire.agent.mcp.McpServers`. They stay connected until the
        session closes, is deleted or reopened, or the connection ends. Raises
        ``RuntimeError`` if the app was built with ``mcp=False``.
        """
        self._check_open()
        servers = await self.session.connect_mcp()
        await self.report_mcp_failures()
        return servers

    async def report_mcp_failures(self) -> None:
        """Once per session, as ``failed`` tool calls of this turn: the MCP servers that
        could not be used, if the session's servers are connected by now."""
        servers = self.session.mcp
        if servers is None or not servers.failures or not self.session.take_mcp_report():
            return
        for name, reason in servers.failures.items():
            call = await self.start_tool(
                f"MCP server {name}: unavailable", kind="other", raw_input={"server": name}
            )
            await call.fail(
                f"MCP server {name!r} could not be used: {reason}", raw_output={"error": reason}
            )

    async def call_mcp_tool(
        self,
        server: str,
        tool: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        title: str | None = None,
        kind: str = "other",
    ) -> McpToolResult:
        """Call an MCP tool, reported to the client as a tool call titled ``server: tool``.

        The call carries ``rawInput`` (the arguments) and ``rawOutput`` (the MCP
        result) and ends ``completed``, or ``failed`` when the tool reports an
        error or the call cannot be made (unknown or failed server, protocol
        error). Never raises for those: the result then has ``is_error=True``
        and the reason as ``text``, ready to hand back to the model.
        """
        servers = await self.mcp_servers()
        args = dict(arguments or {})
        call = await self.start_tool(title or f"{server}: {tool}", kind=kind, raw_input=args)
        return await call.call_mcp_tool(servers, server, tool, args)

    # -- elicitation -----------------------------------------------------------

    async def ask(
        self,
        message: str,
        fields: Mapping[str, s.ElicitationPropertySchema],
        *,
        required: Sequence[str] = (),
        title: str | None = None,
        tool_call: ToolCall | None = None,
    ) -> Answer:
        """Ask the user to fill a form (``elicitation/create``, form mode).

        Needs ``elicitation.form`` (ELIC-005): check ``turn.can_ask``. Never ask
        for secrets this way (ELIC-011). Unknown actions count as ``cancel``
        (ELIC-029).
        """
        self._check_open()
        return await ask_form(
            self.client,
            self.session_id,
            message,
            fields,
            required=required,
            title=title,
            tool_call_id=None if tool_call is None else tool_call.id,
        )

    # -- lifecycle (acpwire.agent.turn_state) ---------------------------------

    def _move(self, event: TurnEvent) -> None:
        """The one place the state changes; an illegal move raises ``TurnStateError``."""
        self._state = next_state(self._state, event)

    def _check_open(self) -> None:
        if self._state.answered:
            raise TurnFinishedError("this turn has already been answered")

    def cancel(self) -> None:
        """Cancel the turn's task now. Idempotent: teardown is never interrupted, and a
        cancel after the answer changes nothing."""
        running = self._state is TurnState.RUNNING
        self._move(TurnEvent.CANCEL)
        if running and self._task is not None and not self._task.done():
            self._task.cancel()

    async def wait(self) -> None:
        """Wait until the turn has been torn down."""
        if self._state.answered:
            return
        if self._done is None:
            self._done = asyncio.Event()
        await self._done.wait()

    async def run_handler(self, handler: PromptHandler) -> StopReason:
        """Run ``handler`` for this turn in the current task (:func:`run_turn`), which
        :meth:`cancel` then cancels; returns the stop reason.

        The runtime does this once per turn, in the task serving the
        ``session/prompt`` request (no task of its own: a ping turn costs no more
        event loop iterations than a low-tier prompt). A cancel can only reach
        the handler: the task is recorded right before the handler runs, and
        teardown, which :meth:`cancel` leaves alone, follows without pausing
        after the handler returns. A second call raises ``TurnStateError``.
        """
        if self._state is TurnState.CANCELLING:  # cancelled while the turn was being set up
            await self.teardown()
            return "cancelled"
        # (given the loop, current_task() skips get_running_loop()'s getpid() on 3.11)
        task = asyncio.current_task(self.client.connection.loop)
        self._move(TurnEvent.START)
        self._task = task
        return await run_turn(self, handler)

    async def teardown(self, *, quiet: bool = False) -> None:
        """End the turn: fail every open tool call, release every terminal, refuse further sends.

        The runtime calls it when the handler is done (``quiet``: a closed
        connection is no error) or was cancelled before it ran; then
        :meth:`wait` returns, also when teardown itself failed. A second call
        raises ``TurnStateError``.
        """
        self._move(TurnEvent.TEAR_DOWN)
        try:
            if self._live is not None:
                await self._live.aclose()
            if self.open_calls:
                for call in list(self.open_calls.values()):
                    await call.close_quietly(None)
            if self._terminals:
                for term in list(self._terminals):
                    await term.close()  # (and is no longer held)
        except ConnectionClosedError:
            if not quiet:
                raise
        finally:
            self._move(TurnEvent.FINISH)
            if self._done is not None:
                self._done.set()


async def run_turn(turn: Turn, handler: PromptHandler) -> StopReason:
    """Run ``handler`` for ``turn`` in the current task; returns the stop reason.

    Cancellation ends the turn with ``cancelled``; other exceptions propagate
    after teardown (the prompt is then answered with an error).
    """
    stop: StopReason = "end_turn"
    try:
        try:
            result = await handler(turn)
        except asyncio.CancelledError:
            stop = "cancelled"
            # Handled: later timeouts in teardown must work normally (Task.uncancel is 3.11+).
            uncancel: Callable[[], int] | None = getattr(asyncio.current_task(), "uncancel", None)
            if uncancel is not None:
                uncancel()
        else:
            if result is not None:
                if result not in STOP_REASONS:
                    raise ValueError(f"a prompt handler returned {result!r}, not a stop reason")
                stop = result
    finally:
        await turn.teardown(quiet=True)
    return "cancelled" if turn.cancelled else stop


def needs_prompt_check(prompt: Sequence[s.ContentBlock]) -> bool:
    """Whether :func:`check_prompt` could object: a prompt of text and links never needs it."""
    return any(type(block) not in _ALWAYS_ALLOWED for block in prompt)


_ALWAYS_ALLOWED = (s.TextContent, s.ResourceLink)


def check_prompt(prompt: Sequence[s.ContentBlock], capabilities: s.PromptCapabilities) -> None:
    """Reject blocks the agent did not advertise (CONTENT-003): image, audio, embedded resources."""
    allowed = {
        s.ImageContent: capabilities.image is True,
        s.AudioContent: capabilities.audio is True,
        s.EmbeddedResource: capabilities.embedded_context is True,
    }
    for index, block in enumerate(prompt):
        for cls, ok in allowed.items():
            if isinstance(block, cls) and not ok:
                kind = {
                    s.ImageContent: "image",
                    s.AudioContent: "audio",
                    s.EmbeddedResource: "resource",
                }[cls]
                raise InvalidParams(
                    f"this agent does not accept {kind} blocks in prompts",
                    {"index": index, "type": kind},
                )
