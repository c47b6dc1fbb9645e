"""Tools, in the full run (a client with every capability that grants permissions): an MCP
server in ``session/new`` is accepted and connected to, and a tool call whose permission
was granted is reported ``in_progress``.

The MCP server is a stand-in (:mod:`.mcp_probe`, standard library only) that reports back
over a local socket when an agent sends it MCP's ``initialize``. What the ``--tool-prompt``
turns did with files and terminals is judged from the recording (:mod:`.wire_checks`);
``tool-progress`` too (:func:`judge_tool_progress`), since a grant and the tool call's
updates are lines on the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sys
from pathlib import Path
from typing import Any

from ..._waits import within
from ..registry import Group
from ..report import Verdicts
from ..wire import Wire, as_list, dict_of, dicts, distinct, id_key
from .driver import Run
from .live import LATE_WATCH, Live

__all__ = [
    "GROUP",
    "MCP_CONNECT",
    "MCP_SERVERS",
    "TOOL_PROGRESS",
    "McpListener",
    "judge_tool_progress",
    "tool_turns",
]

GROUP = Group("agent", stage="full")
MCP_SERVERS = GROUP.check(
    "mcp-servers", "session/new with a stdio MCP server is accepted", proves=("SESS-024",)
)
MCP_CONNECT = GROUP.check(
    "mcp-connect",
    "the agent connects to the MCP server it was given",
    proves=("SESS-027",),
    needs=("session",),
)
TOOL_PROGRESS = GROUP.check(
    "tool-progress",
    "a tool call whose permission was granted is reported in_progress",
    proves=("PROMPT-004",),
    needs=("tool-prompt",),
)


async def tool_turns(live: Live, run: Run, listener: McpListener) -> str | None:
    """The full run up to its end of input: the session it worked in, or None when it
    could not get that far (the full stage is skipped with why)."""
    if not await run.start():
        live.verdicts.skip_stage("full", "the agent did not start")
        return None
    init = await run.initialize(timeout=live.timeout)
    if not init.ok:
        why = f"initialize with every client capability: {init.describe()}"
        live.verdicts.skip_stage("full", why)
        return None
    live.note_auth_methods(init.result)
    run.process.roots.append(live.full_cwd)
    params: dict[str, Any] = {"cwd": live.full_cwd, "mcpServers": [listener.server_entry()]}
    answer = await live.call_authenticated(run, "session/new", params)
    if answer.needs_auth:
        live.verdicts.skip_stage("full", live.blocked("session/new (full run)"))
        return None
    session_id = dict_of(answer.result).get("sessionId") if answer.ok else None
    if not isinstance(session_id, str):
        if not run.alive and not await run.revive("it had died", live.timeout):
            live.verdicts.skip_stage("full", "the agent could not be started again")
            return None
        plain = await run.call(
            "session/new", {"cwd": live.full_cwd, "mcpServers": []}, live.timeout
        )
        session_id = dict_of(plain.result).get("sessionId") if plain.ok else None
        if not isinstance(session_id, str):
            live.verdicts.skip_stage("full", f"session/new: {plain.describe()}")
            return None
        live.fail(MCP_SERVERS, f"session/new with a stdio MCP server: {answer.describe()}")
        live.record(MCP_CONNECT, "skip", "the MCP server was refused")
    else:
        live.record(MCP_SERVERS, "pass", "session/new with one stdio MCP server")
    run.sessions.add(session_id)
    prompts = list(live.options.tool_prompts) or [live.options.prompt]
    turns, locked_out = 0, ""  # turns run; why the first refused one was refused
    for text in prompts:
        if not run.alive:
            break
        mark = run.mark()
        answer = await run.call("session/prompt", live.text_prompt(session_id, text), live.timeout)
        if answer.needs_auth:
            locked_out = live.blocked("session/prompt (full run)")
            break
        turns += 1
        response = run.response_to(answer.request_id, mark)
        if response is not None:
            await asyncio.sleep(LATE_WATCH)
    if live.verdicts.wants(MCP_CONNECT) and not live.verdicts.done(MCP_CONNECT):
        if await listener.wait(live.timeout):
            live.record(MCP_CONNECT, "pass", "the agent connected to the MCP server")
        elif locked_out and not turns:
            # An agent may connect its servers on the first turn; there was none.
            live.record(MCP_CONNECT, "skip", f"no turn ran: {locked_out}")
        else:
            live.fail(
                MCP_CONNECT,
                f"no MCP initialize from the agent within {live.timeout:g} s of its turns",
            )
    if not live.options.tool_prompts:
        live.skip((TOOL_PROGRESS,), "needs --tool-prompt TEXT (a prompt that uses tools)")
    return session_id


class McpListener:
    """Where the stand-in MCP server reports that an agent connected to it."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(8)
        self.connected = asyncio.Event()
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            line = await within(reader.readline(), 5.0)
            if line.strip() == self.token.encode():
                self.connected.set()
        writer.close()

    def server_entry(self) -> dict[str, Any]:
        script = str(Path(__file__).with_name("mcp_probe.py"))
        return {
            "name": "acp-check",
            "command": sys.executable,
            "args": [script, str(self.port), self.token],
            "env": [],
        }

    async def wait(self, timeout: float) -> bool:
        with contextlib.suppress(asyncio.TimeoutError):
            await within(self.connected.wait(), timeout)
        return self.connected.is_set()

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


def judge_tool_progress(wire: Wire, verdicts: Verdicts) -> None:
    """``tool-progress`` from the recording: every tool call whose permission request was
    answered with an allowing option is reported ``in_progress`` afterwards."""
    if verdicts.done(TOOL_PROGRESS):
        return
    granted: list[tuple[str, str, str, int]] = []  # process, session, tool call, index
    problems: list[str] = []
    for proc in wire.processes.values():
        asked: dict[Any, tuple[str, str, dict[str, str]]] = {}
        for n, e in enumerate(wire.entries):
            if e.process != proc.label or e.message is None:
                continue
            if e.direction == "from_agent" and e.method == "session/request_permission":
                kinds = {
                    str(o.get("optionId")): str(o.get("kind"))
                    for o in dicts(as_list(e.params.get("options")) or ())
                }
                tool = str(dict_of(e.params.get("toolCall")).get("toolCallId"))
                asked[id_key(e.message["id"])] = (str(e.params.get("sessionId")), tool, kinds)
            elif e.direction == "to_agent" and e.is_response:
                request = asked.get(id_key(e.message.get("id")))
                outcome = dict_of(dict_of(e.message.get("result")).get("outcome"))
                if request is not None and outcome.get("outcome") == "selected":
                    kind = request[2].get(str(outcome.get("optionId")), "")
                    if kind.startswith("allow"):
                        granted.append((proc.label, request[0], request[1], n))
    for process, session, tool, index in granted:
        statuses = [
            su[2].get("status")
            for e in wire.entries[index:]
            if e.process == process
            for su in [e.session_update()]
            if su is not None and su[0] == session and su[2].get("toolCallId") == tool
        ]
        if "in_progress" not in statuses:
            problems.append(f"[{process}] tool call {tool!r} granted, then {statuses or 'nothing'}")
    if not granted:
        verdicts.record(TOOL_PROGRESS, "n/a", "no permission was granted")
    else:
        verdicts.verdict(
            TOOL_PROGRESS,
            distinct(problems),
            f"{len(granted)} granted call(s) reported in_progress",
        )
