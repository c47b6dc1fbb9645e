"""The mapping every adapter shares: a framework's run, told to an ACP turn.

An adapter turns its framework's events into calls of one :class:`TurnBridge`,
so the rules below hold for every framework the same way:

* **Text and thinking** stream as ``agent_message_chunk`` / ``agent_thought_chunk``
  as they arrive (``turn.say`` / ``turn.think``); nothing is buffered here.
* **Tool calls** are keyed by the framework's own call id. A call is reported once
  (``tool_call``, ``pending``, its arguments as ``rawInput``, a kind guessed from
  the tool's name unless the author named one) and ended once, ``completed`` with
  the result as content and ``rawOutput``, or ``failed`` with the error. A result
  for a call never started starts it first, so no result is lost; a call the run
  leaves open is failed by the turn's teardown.
* **Permission** for a tool the author marked as needing it is asked on that
  call's own ``tool_call`` (``session/request_permission``), so the client shows
  the question next to the call; a rejection ends the call ``failed`` and the
  framework is told the call was denied, never that it failed.
* **The client's own tools** (:func:`client_tools`: read and write files through
  the editor, run commands in its terminals, the session's MCP servers) report
  their own, richer tool calls (a diff for a write, a live terminal for a
  command, ``server: tool`` for MCP); the framework's generic report of the same
  call is skipped by name (:attr:`TurnBridge.self_reporting`).
* **Errors** of the framework end the turn with a JSON-RPC error whose message
  names the framework and the error (:func:`framework_error`); the connection and
  the session stay usable, and the traceback goes to the agent's log (stderr).
* **Cancellation** is the turn's: ``session/cancel`` cancels the task running the
  framework, wherever it waits; adapters of frameworks that run in a thread also
  tell the framework to stop between steps.

What the model is told when the user says no, or a client call fails, is a plain
sentence it can act on; tools never raise into the framework for those.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..agent.tools import ToolCall, location
from ..agent.turn import Turn
from ..protocol.errors import InternalError, RequestError

__all__ = [
    "CLIENT_TOOL_NAMES",
    "CLIENT_TOOL_SPECS",
    "ClientTool",
    "ToolSpec",
    "TurnBridge",
    "client_tools",
    "framework_error",
    "json_safe",
    "missing_framework",
    "result_text",
    "tool_kind",
    "tool_title",
]

log = logging.getLogger("acpwire.adapters")

_RESULT_LIMIT = 64 * 1024
"""Characters of a tool result shown as the call's content (the model gets all of it):
a client draws every update, and one huge result would be drawn on each."""


def missing_framework(package: str, extra: str, adapter: str) -> ImportError:
    """The one-line error of an adapter whose framework is not installed."""
    return ImportError(
        f"acpwire.adapters.{adapter} needs {package}: pip install 'acpwire[{extra}]'"
    )


def framework_error(framework: str, error: BaseException) -> InternalError:
    """A framework's failure as the turn's error answer (the message says what failed)."""
    log.error("%s run failed", framework, exc_info=error)
    text = str(error).strip().splitlines()
    detail = f": {text[0][:300]}" if text else ""
    return InternalError(
        f"{framework} failed: {type(error).__name__}{detail}",
        {"framework": framework, "error": type(error).__name__},
    )


# -- what a tool call looks like ------------------------------------------------------

_KIND_WORDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("delete", frozenset({"delete", "remove", "rm", "unlink"})),
    ("move", frozenset({"move", "rename", "mv"})),
    (
        "edit",
        frozenset({"write", "edit", "patch", "replace", "update", "save", "create", "append"}),
    ),
    ("read", frozenset({"read", "open", "cat", "view", "load", "get"})),
    ("search", frozenset({"search", "find", "grep", "glob", "list", "ls", "lookup", "query"})),
    ("execute", frozenset({"run", "exec", "execute", "shell", "bash", "command", "terminal"})),
    ("fetch", frozenset({"fetch", "http", "url", "download", "browse", "web", "request"})),
    ("think", frozenset({"think", "plan", "reason", "reflect"})),
)


def tool_kind(name: str, kinds: Mapping[str, str] | None = None) -> str:
    """The ACP tool kind for a tool name: the author's choice, else the first word of the
    name that says one (``read_file`` -> ``read``, ``runTests`` -> ``execute``), else ``other``.
    """
    if kinds and name in kinds:
        return kinds[name]
    words = {w.lower() for w in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", name)}
    for kind, marks in _KIND_WORDS:
        if words & marks:
            return kind
    return "other"


def tool_title(name: str, args: object) -> str:
    """``name`` and, when the arguments have a short text value first, that value:
    ``read_file: notes.txt``."""
    if isinstance(args, Mapping):
        for value in args.values():
            if isinstance(value, str) and value and len(value) <= 80 and "\n" not in value:
                return f"{name}: {value}"
            break
    return name


def json_safe(value: object) -> Any:
    """``value`` as JSON values (what ``rawInput``/``rawOutput`` may hold); text if it is not."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    try:
        return json.loads(json.dumps(value, default=_plain))
    except (TypeError, ValueError):
        return str(value)


def _plain(value: object) -> Any:
    dump = getattr(value, "model_dump", None)  # pydantic models (most frameworks' results)
    if callable(dump):
        return dump(mode="json")
    return str(value)


def result_text(value: object) -> str:
    """A tool result as text for the client: strings as they are, the rest as JSON."""
    if isinstance(value, str):
        text = str(value)
    else:
        safe = json_safe(value)
        text = safe if isinstance(safe, str) else json.dumps(safe, indent=2, ensure_ascii=False)
    if len(text) > _RESULT_LIMIT:
        text = text[:_RESULT_LIMIT] + f"\n… ({len(text) - _RESULT_LIMIT} more characters)"
    return text


# -- one turn -----------------------------------------------------------------------


class TurnBridge:
    """A framework run's events, told to one :class:`~acpwire.agent.turn.Turn`.

    ``kinds`` names the ACP kind of tools whose names say nothing
    (:func:`tool_kind`); ``self_reporting`` are the names of tools that report their
    own ACP tool calls (the client tools of this turn), whose generic reports are skipped.
    """

    def __init__(
        self,
        turn: Turn,
        *,
        kinds: Mapping[str, str] | None = None,
        self_reporting: Sequence[str] = (),
    ) -> None:
        self.turn = turn
        self.kinds = dict(kinds or {})
        self.self_reporting = frozenset(self_reporting)
        self.calls: dict[str, ToolCall] = {}
        """ACP tool calls of this run by the framework's call id (ended ones included)."""
        self.text = ""
        """Every message chunk said so far (the answer as the client saw it)."""

    async def say(self, text: str) -> None:
        if type(text) is not str:  # (frameworks hand out str subclasses, which JSON refuses)
            text = str(text)
        if text:
            self.text += text
            await self.turn.say(text)

    async def think(self, text: str) -> None:
        if type(text) is not str:
            text = str(text)
        if text:
            await self.turn.think(text)

    def reported(self, name: str) -> bool:
        """Whether calls of this tool are reported here (not by the tool itself)."""
        return name not in self.self_reporting

    async def tool_started(
        self, call_id: str, name: str, args: object, *, title: str | None = None
    ) -> ToolCall | None:
        """Report a framework tool call (once per id); None for self-reporting tools."""
        if not self.reported(name):
            return None
        call = self.calls.get(call_id)
        if call is not None:
            return call
        raw = json_safe(args)
        kind = tool_kind(name, self.kinds)
        path = raw.get("path") if isinstance(raw, dict) else None
        call = await self.turn.start_tool(
            title or tool_title(name, raw),
            kind=kind,
            raw_input=raw,
            locations=[location(self.turn.resolve(path))] if isinstance(path, str) and path else (),
        )
        self.calls[call_id] = call
        return call

    async def tool_finished(
        self,
        call_id: str,
        name: str,
        result: object,
        *,
        failed: bool = False,
        args: object = None,
    ) -> None:
        """End a framework tool call: ``completed`` with its result, or ``failed``.

        A call already ended (rejected by the user, finished by a tool that reports
        itself) stays as it is."""
        if not self.reported(name):
            return
        call = self.calls.get(call_id) or await self.tool_started(call_id, name, args)
        if call is None or call.finished:
            return
        text = result_text(result)
        if failed:
            await call.fail(text or "the tool failed", raw_output=json_safe(result))
            return
        await call.update(
            status="completed",
            content=[*call.content, text] if text else None,
            raw_output=json_safe(result),
        )

    async def allowed(self, call_id: str, name: str, args: object) -> bool:
        """Ask the user whether a tool call may run, on that call's report.

        An earlier "always" answer for this tool in the session decides without asking.
        A rejection fails the call at once (it will not run).
        """
        call = self.calls.get(call_id) or await self.tool_started(call_id, name, args)
        if call is None:  # a self-reporting tool asks for itself
            return True
        call.permission_key = f"tool:{name}"
        permission = await call.request_permission()
        if not permission.allowed:
            await call.fail("The user rejected this tool call.")
        return permission.allowed


# -- the client's capabilities as tools ------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    """How a tool is described to a model: a name, a description, a JSON Schema for its
    arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def bind(self, call: Callable[[dict[str, Any]], Awaitable[str]]) -> ClientTool:
        return ClientTool(self.name, self.description, self.parameters, call)


@dataclass(frozen=True)
class ClientTool:
    """A tool any framework can offer its model: a name, a description, a JSON Schema
    for its arguments and an async function of those arguments returning text."""

    name: str
    description: str
    parameters: dict[str, Any]
    call: Callable[[dict[str, Any]], Awaitable[str]]


_PATH = {"type": "string", "description": "The file's path, absolute or relative to the project."}


def _schema(properties: dict[str, Any], required: Sequence[str] = ("path",)) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


READ_TOOL = ToolSpec(
    "read_text_file",
    "Read a text file of the user's project, as the editor has it (unsaved changes "
    "included). Optionally from a 1-based line, at most limit lines.",
    _schema({"path": _PATH, "line": {"type": "integer"}, "limit": {"type": "integer"}}),
)
WRITE_TOOL = ToolSpec(
    "write_text_file",
    "Write a text file of the user's project (created if missing). The user sees the "
    "change as a diff and may refuse it.",
    _schema({"path": _PATH, "content": {"type": "string"}}, ["path", "content"]),
)
RUN_TOOL = ToolSpec(
    "run_command",
    "Run a program in the user's terminal, in the project folder, and return its output "
    "and exit code. The user may refuse it.",
    _schema(
        {
            "command": {"type": "string", "description": "The program to run."},
            "args": {"type": "array", "items": {"type": "string"}},
        },
        ["command"],
    ),
)
CLIENT_TOOL_SPECS = (READ_TOOL, WRITE_TOOL, RUN_TOOL)
"""The file and terminal tools, as every framework describes them to its model."""
CLIENT_TOOL_NAMES = tuple(spec.name for spec in CLIENT_TOOL_SPECS)
"""Their names (MCP tools are named ``server__tool``)."""


async def client_tools(turn: Turn, *, mcp: bool = True) -> list[ClientTool]:
    """The client's capabilities this turn can use, as tools bound to it.

    Files (read, and write shown as a diff and asked for) when the client advertised
    ``fs``; commands (asked for, run in a client terminal shown in the call) when it
    advertised ``terminal``; and, with ``mcp``, every tool of the session's MCP
    servers (``server__tool``, reported as ``server: tool``). Each reports its own
    ACP tool call.
    """
    tools: list[ClientTool] = []
    if turn.can_read_files:
        tools.append(READ_TOOL.bind(lambda args: _read(turn, args)))
    if turn.can_write_files:
        tools.append(WRITE_TOOL.bind(lambda args: _write(turn, args)))
    if turn.can_run_commands:
        tools.append(RUN_TOOL.bind(lambda args: _run(turn, args)))
    if mcp and turn.session.mcp_servers and turn.session.mcp_support.enabled:
        servers = await turn.mcp_servers()
        for tool in servers.tools():
            tools.append(
                ClientTool(
                    _mcp_name(tool.server, tool.name),
                    tool.description or f"{tool.name} (MCP server {tool.server})",
                    dict(tool.input_schema or {"type": "object", "properties": {}}),
                    _mcp_caller(turn, tool.server, tool.name),
                )
            )
    return tools


def _mcp_name(server: str, tool: str) -> str:
    """``server__tool`` in the characters every model provider accepts for a tool name."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}__{tool}")[:64]


def _mcp_caller(turn: Turn, server: str, tool: str) -> Callable[[dict[str, Any]], Awaitable[str]]:
    async def call(args: dict[str, Any]) -> str:
        result = await turn.call_mcp_tool(server, tool, args)
        return f"Error: {result.text}" if result.is_error else result.text

    return call


async def _read(turn: Turn, args: dict[str, Any]) -> str:
    path = turn.resolve(str(args["path"]))
    line, limit = args.get("line"), args.get("limit")
    async with turn.tool(
        f"Read {path}", kind="read", locations=[location(path, line or None)], raw_input=args
    ) as call:
        text = await turn.read_file(path, line=line or None, limit=limit or None)
        await call.update(raw_output={"chars": len(text)})
        return text
    return f"Could not read {path}: {call.error}"


async def _write(turn: Turn, args: dict[str, Any]) -> str:
    path = turn.resolve(str(args["path"]))
    content = str(args["content"])
    old: str | None = None
    if turn.can_read_files:
        try:
            old = await turn.read_file(path)
        except RequestError:  # a new file (or one the client cannot read): shown as new
            old = None
    async with turn.tool(
        f"Write {path}",
        kind="edit",
        locations=[location(path)],
        raw_input={"path": path},
        permission_key="write_text_file",
    ) as call:
        await call.diff(path, content, old)
        await call.require_permission()
        await turn.write_file(path, content)
        return f"Wrote {len(content)} characters to {path}."
    if call.rejected:
        return f"The user rejected the change to {path}; it was not written."
    return f"Could not write {path}: {call.error}"


async def _run(turn: Turn, args: dict[str, Any]) -> str:
    command = str(args["command"])
    argv = [str(a) for a in args.get("args") or []]
    import shlex

    async with turn.tool(
        shlex.join([command, *argv]),
        kind="execute",
        raw_input={"command": command, "args": argv, "cwd": turn.cwd},
        permission_key="run_command",
    ) as call:
        await call.require_permission()
        result = await call.run(command, argv)
        end = f"exit code {result.exit_code}" if result.signal is None else result.signal
        return f"{result.output}\n[{end}]" if result.output else f"[no output; {end}]"
    if call.rejected:
        return "The user rejected running this command; it did not run."
    return f"Could not run {command}: {call.error}"
