"""Tool calls as async context managers (tool-calls.mdx).

``async with turn.tool("Read x", kind="read") as call:`` reports the call to
the client and keeps its status right:

* entering sends ``tool_call`` with status ``pending``;
* the first change (content, a granted permission, a terminal) moves it to
  ``in_progress`` (PROMPT-004), except a change that only shows diffs: a
  proposed edit is shown while the call waits for permission, and the grant
  then moves it on;
* leaving normally sends ``completed``; leaving with an exception sends
  ``failed``. Failures of the tool's work are reported as the call's content
  and swallowed, so the turn goes on: a :class:`ToolError` (for example
  :class:`PermissionDenied`), an error answer of the client
  (:class:`~acpwire.protocol.errors.RequestError`: a missing file, a command
  that cannot start) and an ``OSError`` of the agent's own disk or processes
  (the ``fallback=True`` paths). Check :attr:`ToolCall.failed` (and
  :attr:`ToolCall.rejected`) after the block. Any other exception,
  cancellation included, propagates after the update.

Every ``tool_call_update`` carries only the fields that changed since the last
one. ``content`` is a whole field on the wire (an update replaces the list), so
adding content sends the complete list.

A call belongs to a :class:`ToolCallOwner`, the little of a turn it needs (send,
the session, the turn's open calls and terminals): the turn imports this module,
never the other way round.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from .. import schema as s
from ..protocol.errors import ConnectionClosedError, RequestError
from ..schema import UNSET, none_to_unset

if TYPE_CHECKING:
    from .mcp import McpServers, McpToolResult
    from .sessions import Session
    from .terminals import RunResult, TerminalHandle

__all__ = [
    "DEFAULT_PERMISSION_OPTIONS",
    "TOOL_FAILURES",
    "Permission",
    "PermissionDenied",
    "ToolCall",
    "ToolCallContext",
    "ToolCallOwner",
    "ToolContent",
    "ToolError",
    "error_text",
    "location",
    "permission_option",
    "tool_content",
]

ToolContent = str | s.ContentBlock | s.ToolCallContent
"""What may be put in a tool call: text, any content block, or tool call content (diff, terminal)."""

PermissionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]

_DEFAULT_NAMES: dict[str, str] = {
    "allow_once": "Allow",
    "allow_always": "Always allow",
    "reject_once": "Reject",
    "reject_always": "Always reject",
}


class ToolError(Exception):
    """Raise inside ``async with turn.tool(...)`` to mark the call ``failed`` with this message.

    The tool call context swallows it, so the turn continues.
    """


class PermissionDenied(ToolError):
    """The user rejected (or cancelled) a permission request."""


TOOL_FAILURES = (ToolError, RequestError, OSError)
"""What a tool block reports as its call's failure and swallows (see the module docstring)."""


def error_text(error: BaseException) -> str:
    """What to tell the user about a failure: a client error's ``data.details`` when it
    gives them (``spawn x ENOENT`` says more than ``Internal error``), else its message."""
    if isinstance(error, RequestError):
        data: object = error.data
        if isinstance(data, dict):
            details = cast("dict[str, Any]", data).get("details")
            if isinstance(details, str) and details.strip():
                return details.strip()
        return error.message or f"error {error.code}"
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    return str(error) or type(error).__name__


def permission_option(
    kind: PermissionKind, name: str | None = None, option_id: str | None = None
) -> s.PermissionOption:
    """A permission option of one of the four kinds; the id defaults to the kind."""
    return s.PermissionOption(
        option_id=option_id or kind, name=name or _DEFAULT_NAMES[kind], kind=kind
    )


DEFAULT_PERMISSION_OPTIONS: tuple[s.PermissionOption, ...] = tuple(
    permission_option(kind)
    for kind in ("allow_once", "allow_always", "reject_once", "reject_always")
)
"""Allow, Always allow, Reject, Always reject."""


@dataclass(frozen=True)
class Permission:
    """The answer to a permission request.

    ``kind`` is the chosen option's kind (None when cancelled); ``remembered``
    is true when an earlier "always" answer decided without asking.
    """

    outcome: Literal["selected", "cancelled"]
    option_id: str | None = None
    kind: str | None = None
    remembered: bool = False

    @property
    def allowed(self) -> bool:
        return self.kind in ("allow_once", "allow_always")


def tool_content(item: ToolContent) -> s.ToolCallContent:
    """Wrap text and content blocks as ``{"type": "content"}``; pass diffs and terminals through."""
    if isinstance(item, str):
        return s.Content(content=s.TextContent(text=item))
    if isinstance(item, (s.Content, s.Diff, s.Terminal, s.UnknownToolCallContent)):
        return item
    return s.Content(content=item)


def location(path: str, line: int | None = None) -> s.ToolCallLocation:
    """A file location the client can follow; ``line`` is 1-based (OVR-002)."""
    if line is not None and line < 1:
        raise ValueError(f"line numbers are 1-based, got {line}")
    return s.ToolCallLocation(path=path, line=none_to_unset(line))


_KEEP: Any = object()


class ToolCallOwner(Protocol):
    """What a tool call needs of the turn it belongs to; :class:`~acpwire.agent.turn.Turn` is one."""

    @property
    def session(self) -> Session:
        """Whose permission answers and terminal outputs are kept, and whose client is asked."""
        ...

    @property
    def open_calls(self) -> dict[str, ToolCall]:
        """Where a call is registered from its announcement until it ends (teardown fails the rest)."""
        ...

    @property
    def can_run_commands(self) -> bool: ...

    async def send(self, update: s.SessionUpdate) -> None: ...

    def resolve(self, path: str | os.PathLike[str]) -> str: ...

    async def open_terminal(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        output_byte_limit: int | None = None,
    ) -> TerminalHandle:
        """A client terminal the owner releases when it ends, if the call has not."""
        ...


class ToolCall:
    """One reported tool call. Get it from ``turn.tool(...)`` or ``turn.start_tool(...)``."""

    def __init__(
        self,
        turn: ToolCallOwner,
        title: str,
        *,
        kind: str | None = None,
        locations: Sequence[s.ToolCallLocation] = (),
        raw_input: Any = None,
        content: Sequence[ToolContent] = (),
        permission_key: str | None = None,
    ) -> None:
        self.turn = turn
        self.id = f"call_{uuid.uuid4().hex}"
        self.title = title
        self.kind = kind
        self.status: str = "pending"
        self.locations = list(locations)
        self.raw_input = raw_input
        self.raw_output: Any = None
        self.content: list[s.ToolCallContent] = [tool_content(c) for c in content]
        self.permission_key = permission_key or kind or title
        self.permission: Permission | None = None
        """The last answer to :meth:`request_permission`, None if never asked."""
        self.error: str | None = None
        """Why the call failed, when it did."""

    @property
    def finished(self) -> bool:
        return self.status in ("completed", "failed")

    @property
    def failed(self) -> bool:
        """The call ended ``failed`` (an error, a rejected permission, a cancelled turn)."""
        return self.status == "failed"

    @property
    def rejected(self) -> bool:
        """Permission was asked and not given (rejected, or the question was cancelled)."""
        return self.permission is not None and not self.permission.allowed

    async def announce(self) -> None:
        """Send the ``tool_call`` that reports this call (``turn.tool()`` and
        ``turn.start_tool()`` do it; call it once)."""
        await self.turn.send(
            s.ToolCallStart(
                tool_call_id=self.id,
                title=self.title,
                kind=none_to_unset(self.kind),
                status="pending",
                content=list(self.content) if self.content else UNSET,
                locations=list(self.locations) if self.locations else UNSET,
                raw_input=none_to_unset(self.raw_input),
            )
        )
        self.turn.open_calls[self.id] = self

    async def update(
        self,
        *,
        title: str | None = None,
        kind: str | None = None,
        status: str | None = None,
        content: Sequence[ToolContent] | None = None,
        locations: Sequence[s.ToolCallLocation] | None = None,
        raw_input: Any = _KEEP,
        raw_output: Any = _KEEP,
    ) -> None:
        """Send a ``tool_call_update`` with the fields that changed (nothing if none did).

        A call still ``pending`` moves to ``in_progress`` unless ``status`` says otherwise.
        """
        if self.finished:
            raise RuntimeError(f"tool call {self.title!r} is already {self.status}")
        fields: dict[str, Any] = {}
        if status is None and self.status == "pending" and not _only_diffs(content):
            status = "in_progress"
        if status is not None and status != self.status:
            fields["status"] = self.status = status
        if title is not None and title != self.title:
            fields["title"] = self.title = title
        if kind is not None and kind != self.kind:
            fields["kind"] = self.kind = kind
        if content is not None:
            new_content = [tool_content(c) for c in content]
            if new_content != self.content:
                fields["content"] = self.content = new_content
        if locations is not None and list(locations) != self.locations:
            fields["locations"] = self.locations = list(locations)
        if raw_input is not _KEEP and raw_input != self.raw_input:
            fields["raw_input"] = self.raw_input = raw_input
        if raw_output is not _KEEP and raw_output != self.raw_output:
            fields["raw_output"] = self.raw_output = raw_output
        if not fields:
            return
        for key in ("content", "locations"):
            if key in fields:
                fields[key] = list(fields[key])
        await self.turn.send(s.ToolCallProgress(tool_call_id=self.id, **fields))
        if self.finished:
            self.turn.open_calls.pop(self.id, None)

    async def add(self, *items: ToolContent) -> None:
        """Append content (text, blocks, diffs, terminals) and send the complete list."""
        await self.update(content=[*self.content, *(tool_content(i) for i in items)])

    async def diff(self, path: str, new_text: str, old_text: str | None = None) -> None:
        """Show an edit of ``path`` (absolute); ``old_text`` None means a new file."""
        await self.add(s.Diff(path=self.turn.resolve(path), old_text=old_text, new_text=new_text))

    async def show_terminal(self, terminal_id: str) -> None:
        """Embed a live terminal (its output follows in the client)."""
        await self.add(s.Terminal(terminal_id=terminal_id))

    async def start(self) -> None:
        """Mark the call ``in_progress`` (the work has begun)."""
        await self.update(status="in_progress")

    async def complete(self, raw_output: Any = _KEEP) -> None:
        """Mark the call ``completed``."""
        if not self.finished:
            await self.update(status="completed", raw_output=raw_output)

    async def fail(self, message: str | None = None, raw_output: Any = _KEEP) -> None:
        """Mark the call ``failed``, optionally with a message added to its content."""
        if self.finished:
            return
        if message:
            self.error = message
        content = [*self.content, tool_content(message)] if message else None
        await self.update(status="failed", content=content, raw_output=raw_output)

    async def request_permission(
        self, options: Sequence[s.PermissionOption] = DEFAULT_PERMISSION_OPTIONS
    ) -> Permission:
        """Ask the user whether this call may run.

        An earlier ``allow_always`` / ``reject_always`` answer for the same
        ``permission_key`` (by default the tool kind) in this session decides
        without asking. After an allowing answer the call is ``in_progress``.
        """
        ids = [o.option_id for o in options]
        if not ids or len(set(ids)) != len(ids):
            raise ValueError("permission options need unique ids (TOOL-005)")
        session = self.turn.session
        remembered = session.remembered_permission(self.permission_key)
        if remembered is not None:
            match = next((o for o in options if o.kind == remembered), None)
            if match is not None:
                result = Permission("selected", match.option_id, match.kind, remembered=True)
                self.permission = result
                if result.allowed:
                    await self.update(status="in_progress")
                return result
        request = s.ToolCallUpdate(
            tool_call_id=self.id,
            title=self.title,
            kind=none_to_unset(self.kind),
            status=self.status,
            content=list(self.content) if self.content else UNSET,
            locations=list(self.locations) if self.locations else UNSET,
        )
        response = await session.client.request_permission(session.id, request, options)
        outcome = response.outcome
        if isinstance(outcome, s.SelectedPermissionOutcome):
            chosen = next((o for o in options if o.option_id == outcome.option_id), None)
            kind = chosen.kind if chosen is not None else None
            if kind in ("allow_always", "reject_always"):
                session.remember_permission(self.permission_key, kind)
            result = Permission("selected", outcome.option_id, kind)
        else:
            result = Permission("cancelled")
        self.permission = result
        if result.allowed:
            await self.update(status="in_progress")
        return result

    async def require_permission(
        self, options: Sequence[s.PermissionOption] = DEFAULT_PERMISSION_OPTIONS
    ) -> Permission:
        """Like :meth:`request_permission`, but raise :class:`PermissionDenied` unless allowed."""
        result = await self.request_permission(options)
        if not result.allowed:
            raise PermissionDenied(
                "Permission denied"
                if result.outcome == "selected"
                else "Permission request cancelled"
            )
        return result

    async def run(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        output_byte_limit: int | None = None,
        fallback: bool = False,
    ) -> RunResult:
        """Run a command in a client terminal embedded in this call; see :meth:`Turn.run`."""
        from .terminals import RunResult, run_locally

        turn = self.turn
        if fallback and not turn.can_run_commands:
            await self.update(status="in_progress")
            result = await run_locally(
                command,
                args,
                cwd=turn.resolve(cwd or turn.session.cwd),
                env=env,
                output_byte_limit=output_byte_limit,
            )
            await self.add(f"```\n{result.output}\n```" if result.output else "(no output)")
            return result
        term = await turn.open_terminal(
            command, args, cwd=cwd, env=env, output_byte_limit=output_byte_limit
        )
        try:
            await self.show_terminal(term.id)
            await term.wait()
            out = await term.output()
        finally:
            await term.close()
        turn.session.remember_terminal(term.id, out.output)
        return RunResult(out.output, term.exit_code, term.signal, out.truncated, term.id)

    async def call_mcp_tool(
        self, servers: McpServers, server: str, tool: str, arguments: Mapping[str, Any]
    ) -> McpToolResult:
        """Call an MCP tool as this call's work; see :meth:`Turn.call_mcp_tool`.

        The call ends ``completed`` or ``failed`` with ``rawOutput`` the MCP result; a
        call that cannot be made returns a result with ``is_error=True`` and the reason.
        """
        from .mcp import McpServerError, McpToolResult

        args = dict(arguments)
        try:
            await self.update(status="in_progress")
            result = await servers.call_tool(server, tool, args)
        except McpServerError as exc:
            await self.fail(str(exc), raw_output={"error": str(exc)})
            return McpToolResult(text=str(exc), is_error=True)
        raw: dict[str, Any] = {"content": result.content, "isError": result.is_error}
        if result.structured is not None:
            raw["structuredContent"] = result.structured
        content: list[ToolContent] = [result.text] if result.text else []
        await self.update(
            status="failed" if result.is_error else "completed",
            content=[*self.content, *content],
            raw_output=raw,
        )
        return result

    async def close_quietly(self, message: str | None = None) -> None:
        """Fail the call during teardown; a closed connection is not an error here."""
        with contextlib.suppress(ConnectionClosedError, OSError):
            await self.fail(message)
        self.status = "failed"
        self.turn.open_calls.pop(self.id, None)


class ToolCallContext:
    """``async with turn.tool(...) as call``: see the module docstring."""

    def __init__(self, call: ToolCall) -> None:
        self.call = call

    async def __aenter__(self) -> ToolCall:
        await self.call.announce()
        return self.call

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        call = self.call
        if exc is None:
            if not call.finished:
                await call.complete()
            return False
        if isinstance(exc, TOOL_FAILURES):
            if not call.finished:
                await call.fail(error_text(exc))
            return True
        await call.close_quietly(None)
        return False


def _only_diffs(content: Sequence[ToolContent] | None) -> bool:
    """The content shows proposed edits and nothing else."""
    return bool(content) and all(isinstance(c, s.Diff) for c in content or ())
