"""The scenarios ``acp check --client`` plays against a client, each with its pass rules.

Each scenario is one run of the client command against the scripted agent
(:mod:`.scripted_agent`) following one script: a normal handshake and turn (the
*baseline*), or a turn in which the agent does something odd or hostile. A scenario judges
the checks it owns (:data:`SCENARIOS` maps them); the JSON-RPC manners of every run are
judged afterwards from the recording (:mod:`.client_wire_checks`).

**Driving the client.** The client must start the agent by itself and send one prompt
by itself: ``acp chat --prompt {prompt} -- {agent}`` does, an editor waiting for a user
does not. The baseline runs first; if the client never starts the agent, nothing else
runs (the report says why, exit status 3); if it never prompts, only the scenarios that
need no turn run.

**Survival.** Many rules are "the client survives X". After X the agent sends a
permission request (every client answers those, with no capability needed): an answer
proves the client still reads and serves. Then the turn ends ``end_turn`` and a client
that ended on its own after the baseline's normal turn must end the same way, with the
same status, within ``grace`` seconds. A client that does not end by itself (an
interactive one) is stopped by the checker, and only the permission probe counts.

**No cascades.** A step that finds the client gone skips the scenario's remaining checks
with that reason; a request that is never answered is reported once, by the check that
owns it or by ``client-responses``, not by every check after it.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from ...protocol.errors import ErrorCode
from .client_driver import ClientProcess, ScriptedAgent
from .registry import CHECKS_BY_KEY, NEEDS
from .report import Verdicts
from .wire import WireEntry, as_dict, dict_of, id_key, short

__all__ = [
    "SCENARIOS",
    "SECRET_VARIABLE",
    "UNSUPPORTED_VERSION",
    "Baseline",
    "ClientCheckOptions",
    "Scene",
    "Scenario",
]

UNSUPPORTED_VERSION = 65535
"""The protocol version of the ``unsupported-version`` scenario: no client speaks it."""
SECRET_VARIABLE = "ACP_CHECK_SECRET_TOKEN"
"""A variable with a random value put in the client's environment: terminals must not see it."""
PLANNED_FAILURE = "acp check: a planned failure"
"""The message of the error answers; a client shows it to its user."""
SECRET_TEXT = "acp-check secret outside the workspace\n"
NOTES_TEXT = "line 1\nline 2\nline 3\nline 4\n"
GIT_CONFIG = "[core]\n\tbare = false\n"


@dataclass
class ClientCheckOptions:
    """What ``acp check --client`` runs and how long it waits."""

    command: str
    """The client command line, with ``{agent}`` (or ``{agent_line}``) where the agent goes."""
    prompt: str = "Hello from acp check"
    """What ``{prompt}`` becomes."""
    only: frozenset[str] | None = None
    timeout: float = 30.0
    """Seconds for the client to start the agent, initialize and prompt, and for work."""
    quick_timeout: float = 5.0
    """Seconds for an answer that needs no work (a permission request, a file read)."""
    grace: float = 5.0
    """Seconds for the client to end after its turn, or to notice a dead agent."""
    slow_initialize: float = 3.0
    oversize_bytes: int = 40_000_000
    huge_bytes: int = 20_000_000
    stderr_flood_bytes: int = 10_000_000
    terminal_flood_bytes: int = 30_000_000
    concurrency: int = 4
    """Scenarios run at once after the baseline."""
    env: Mapping[str, str] | None = None
    """The client's environment (default: the checker's), plus :data:`SECRET_VARIABLE`."""


@dataclass
class Baseline:
    """What the normal run taught: what the client offers and how it ends a turn."""

    started: bool = False
    prompted: bool = False
    exit_status: int | None = None
    """How the client ended after a normal turn, when it ended by itself."""
    capabilities: dict[str, Any] = field(default_factory=dict[str, Any])
    in_workspace: bool = False
    problem: str = ""


ScenarioScript = Callable[["Scene"], Awaitable[None]]


@dataclass(frozen=True)
class Scenario:
    name: str
    keys: tuple[str, ...]
    script: ScenarioScript


def _version() -> str:
    try:
        return metadata.version("acpwire")
    except metadata.PackageNotFoundError:  # pragma: no cover - bare checkout
        return "0"


class Scene:
    """One scenario being played: the client, the scripted agent, the folders, the verdicts."""

    def __init__(
        self,
        scenario: Scenario,
        options: ClientCheckOptions,
        verdicts: Verdicts,
        agent: ScriptedAgent,
        client: ClientProcess,
        folder: Path,
        baseline: Baseline,
    ) -> None:
        self.scenario = scenario
        self.options = options
        self.v = verdicts
        self.agent = agent
        self.client = client
        self.work = folder / "work"
        self.outside = folder / "outside"
        self.baseline = baseline
        self.session_id = f"acp-check-{scenario.name}"
        self.initialize: WireEntry | None = None
        self.session_cwd: str | None = None
        self._tool = 0

    # ------------------------------------------------------------ verdicts

    def ok(self, key: str, detail: str = "") -> None:
        self.v.record(key, "pass", detail)

    def fail(self, key: str, detail: str, *broken: str) -> None:
        self.v.fail(key, detail, *broken)

    def skip(self, key: str, detail: str) -> None:
        self.v.record(key, "skip", detail)

    def skip_rest(self, reason: str) -> None:
        for key in self.scenario.keys:
            self.skip(key, reason)

    def capability(self, *path: str) -> bool:
        """Whether the client advertised ``path`` as true in this run's initialize."""
        params = self.initialize.params if self.initialize is not None else {}
        value = dict_of(params.get("clientCapabilities"))
        for name in path[:-1]:
            value = dict_of(value.get(name))
        return value.get(path[-1]) is True

    def needs_met(self, key: str) -> bool:
        """Gives ``key`` its n/a or skip verdict when this run cannot meet its needs."""
        for need in CHECKS_BY_KEY[key].needs:
            if need == "client-fs-read" and not self.capability("fs", "readTextFile"):
                self.v.record(key, "n/a", "the client does not advertise fs.readTextFile")
                return False
            if need == "client-fs-write" and not self.capability("fs", "writeTextFile"):
                self.v.record(key, "n/a", "the client does not advertise fs.writeTextFile")
                return False
            if need == "client-terminal" and not self.capability("terminal"):
                self.v.record(key, "n/a", "the client does not advertise terminal")
                return False
            if need == "client-workspace" and not self.in_workspace():
                self.skip(
                    key,
                    f"the session's cwd ({self.session_cwd}) is not the checker's folder "
                    f"({self.work}): {NEEDS['client-workspace']}",
                )
                return False
        return True

    def in_workspace(self) -> bool:
        return self.session_cwd is not None and os.path.realpath(self.session_cwd) == str(
            self.work.resolve()
        )

    # ------------------------------------------------------------ the client's state

    def gone(self) -> bool:
        return self.agent.input_ended.is_set()

    async def describe_gone(self) -> str:
        """Why nothing more can come: the client closed the agent's input, and how it ended."""
        await self.client.wait(min(self.options.grace, 2.0))
        return f"the client closed the agent's input ({self.client.describe_end()})"

    # ------------------------------------------------------------ the script's steps

    def init_result(self, **extra: Any) -> dict[str, Any]:
        return {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": False,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
                "mcpCapabilities": {"http": False, "sse": False},
            },
            "authMethods": [],
            "agentInfo": {
                "name": "acp-check-scripted-agent",
                "title": "acp check's scripted agent",
                "version": _version(),
            },
            **extra,
        }

    async def wait_initialize(self) -> WireEntry | None:
        entry = await self.agent.wait_request("initialize", self.options.timeout)
        if entry is None:
            self.skip_rest(
                "the client sent no initialize"
                + (f": {await self.describe_gone()}" if self.gone() else "")
            )
        self.initialize = entry
        return entry

    async def open_session(
        self,
        init_result: dict[str, Any] | None = None,
        *,
        session_extra: dict[str, Any] | None = None,
        early: Callable[[], Awaitable[None]] | None = None,
    ) -> WireEntry | None:
        """Answer initialize and session/new; the session/new request, or None (skipped)."""
        init = self.initialize or await self.wait_initialize()
        if init is None:
            return None
        await self.agent.answer(init, init_result or self.init_result())
        new = await self.agent.wait_request("session/new", self.options.timeout)
        if new is None:
            self.skip_rest(
                "the client sent no session/new"
                + (f": {await self.describe_gone()}" if self.gone() else "")
            )
            return None
        cwd = new.params.get("cwd")
        self.session_cwd = cwd if isinstance(cwd, str) else None
        if early is not None:
            await early()
        await self.agent.answer(new, {"sessionId": self.session_id, **(session_extra or {})})
        return new

    async def handshake(
        self, init_result: dict[str, Any] | None = None, **kw: Any
    ) -> WireEntry | None:
        """initialize, session/new, and the client's prompt (None: skipped, reason given)."""
        if await self.open_session(init_result, **kw) is None:
            return None
        prompt = await self.agent.wait_request("session/prompt", self.options.timeout)
        if prompt is None:
            self.skip_rest(
                "the client sent no session/prompt"
                + (f": {await self.describe_gone()}" if self.gone() else "")
            )
        return prompt

    async def update(
        self, update: dict[str, Any], *, session: str | None = None, **params: Any
    ) -> None:
        await self.agent.notify(
            "session/update",
            {"sessionId": session or self.session_id, "update": update, **params},
        )

    async def say(self, text: str) -> None:
        await self.update(
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        )

    def tool_id(self) -> str:
        self._tool += 1
        return f"acp-check-tool-{self._tool}"

    async def tool_call(self, title: str, kind: str = "other") -> str:
        tool = self.tool_id()
        await self.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": tool,
                "title": title,
                "kind": kind,
                "status": "pending",
            }
        )
        return tool

    async def end_tool(self, tool: str, status: str = "completed") -> None:
        await self.update(
            {"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": status}
        )

    def permission_params(self, tool: str) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "toolCall": {"toolCallId": tool},
            "options": [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            ],
        }

    async def probe(self, key: str, *, announce: bool = True) -> str | None:
        """None when the client still answers a permission request, else what happened.

        The request belongs to ``key``: its fate is that check's to report. Without
        ``announce`` no ``tool_call`` update goes first (the request announces its tool
        call itself), so the probe sends no notification.
        """
        if self.gone():
            return await self.describe_gone()
        tool = (
            await self.tool_call("acp check: are you still there?") if announce else self.tool_id()
        )
        answer = await self.agent.request(
            "session/request_permission",
            self.permission_params(tool),
            self.options.quick_timeout,
            owner=key,
        )
        if answer is None:
            if self.gone():
                return await self.describe_gone()
            return f"a permission request got no answer within {self.options.quick_timeout:g} s"
        if announce:
            await self.end_tool(tool)
        return None

    async def end_turn(self, prompt: WireEntry, stop: str = "end_turn") -> None:
        await self.agent.answer(prompt, {"stopReason": stop})

    async def ends_like_baseline(self) -> str | None:
        """After a normal end of turn: a problem if the client ends unlike the baseline."""
        status = await self.client.wait(self.options.grace)
        expected = self.baseline.exit_status
        if expected is None:
            return None
        if status is None:
            return (
                f"it did not exit within {self.options.grace:g} s of the turn's end "
                f"(after a normal turn it exits {expected})"
            )
        if status != expected:
            return (
                f"{self.client.describe_end()} after the turn ended end_turn "
                f"(after a normal turn: status {expected})"
            )
        return None

    async def survive(self, key: str, what: str, prompt: WireEntry) -> None:
        """The survival rule (see the module docstring) after ``what`` happened."""
        problem = await self.probe(key)
        if problem is not None:
            self.fail(key, f"after {what}: {problem}")
            return
        await self.say("acp check: the turn goes on.")
        await self.end_turn(prompt)
        problem = await self.ends_like_baseline()
        if problem is not None:
            self.fail(key, f"after {what}: {problem}")
        else:
            self.ok(key, f"survived {what}")


# ---------------------------------------------------------------------- the baseline


async def _baseline(scene: Scene) -> None:
    init = await scene.wait_initialize()
    if init is None:
        scene.baseline.problem = "the client started the agent but sent no initialize"
        return
    params = init.params
    problems: list[tuple[str, str]] = []
    version = params.get("protocolVersion")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        problems.append(("INIT-007", f"protocolVersion is {short(version)}"))
    caps = params.get("clientCapabilities")
    if as_dict(caps) is None:
        problems.append(("INIT-013", f"clientCapabilities is {short(caps)}"))
    scene.v.verdict("client-initialize", problems, f"protocolVersion {version}")
    info = dict_of(params.get("clientInfo"))
    if isinstance(info.get("name"), str) and isinstance(info.get("version"), str):
        scene.ok("client-info", f"{info['name']} {info['version']}")
    else:
        scene.fail("client-info", f"clientInfo is {short(params.get('clientInfo'))}")
    scene.baseline.capabilities = dict_of(caps)
    prompt = await scene.handshake()
    scene.baseline.in_workspace = scene.in_workspace()
    if prompt is None:
        scene.baseline.problem = (
            "the client sent no session/prompt within "
            f"{scene.options.timeout:g} s: {NEEDS['client-prompt']}"
        )
        return
    scene.baseline.prompted = True
    await scene.say("Hello from acp check's scripted agent.")
    await scene.end_turn(prompt)
    scene.baseline.exit_status = await scene.client.wait(scene.options.grace)


# ---------------------------------------------------------------------- JSON-RPC manners


async def _extensions(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    agent, quick = scene.agent, scene.options.quick_timeout
    answer = await agent.request(
        "_acp_check/ask", {"question": "answered?"}, quick, owner="client-ext-request"
    )
    if answer is None:
        if scene.gone():
            scene.fail("client-ext-request", f"after the request: {await scene.describe_gone()}")
            scene.skip_rest("the client went away at an unknown _ request")
            return
        scene.fail("client-ext-request", f"no answer within {quick:g} s")
        scene.skip("client-ext-request-code", "the _ request was not answered")
    else:
        scene.ok("client-ext-request", "answered")
        error = dict_of((answer.message or {}).get("error"))
        if error.get("code") == ErrorCode.METHOD_NOT_FOUND:
            scene.ok("client-ext-request-code", "answered -32601")
        elif error:
            scene.fail("client-ext-request-code", f"answered {error.get('code')!r}")
        else:
            scene.fail("client-ext-request-code", "answered with a result")

    answer = await agent.request(
        "acp_check/no_such_method", {}, quick, owner="client-unknown-request"
    )
    if answer is None:
        if scene.gone():
            scene.fail("client-unknown-request", f"after it: {await scene.describe_gone()}")
            scene.skip_rest("the client went away at an unknown method")
            return
        scene.fail("client-unknown-request", f"no answer within {quick:g} s")
    else:
        scene.ok("client-unknown-request", _answer_text(answer))

    for key, method in (
        ("client-ext-notification", "_acp_check/note"),
        ("client-protocol-notification", "$/acp_check_note"),
    ):
        since = len(agent.wire.entries)
        await agent.notify(method, {"note": "ignore me"})
        problem = await scene.probe(key, announce=False)
        answered = [
            e
            for e in agent.wire.of(scene.scenario.name, since)
            if e.direction == "to_agent" and e.is_response and (e.message or {}).get("id") is None
        ]
        for e in answered:
            e.owner = key
        if problem is not None:
            scene.fail(key, f"after {method}: {problem}")
            if scene.gone():
                scene.skip_rest(f"the client went away at {method}")
                return
        elif answered:
            scene.fail(key, f"answered: {short(answered[0].raw.decode('utf-8', 'replace'))}")
        else:
            scene.ok(key, "ignored")

    tool = await scene.tool_call("acp check: a request with a string id")
    rid = "900001"
    agent.wire.claim(scene.scenario.name, rid, "client-string-ids")
    since = len(agent.wire.entries)
    await agent.send(
        {"id": rid, "method": "session/request_permission", "params": scene.permission_params(tool)}
    )
    answer = await agent.wait_for(
        lambda e: (
            e.direction == "to_agent" and e.is_response and str((e.message or {}).get("id")) == rid
        ),
        quick,
        since,
    )
    if answer is None:
        scene.skip("client-string-ids", "no answer (see client-responses)")
    elif (answer.message or {}).get("id") != rid:
        scene.fail(
            "client-string-ids", f"id {rid!r} answered as {(answer.message or {}).get('id')!r}"
        )
    else:
        scene.ok("client-string-ids", f"answered with id {rid!r}")
    await scene.end_tool(tool)

    tool = await scene.tool_call("acp check: a request cancelled at once")
    rid_int = agent.new_id()
    agent.wire.claim(scene.scenario.name, rid_int, "client-cancel-request")
    since = len(agent.wire.entries)
    await agent.send(
        {
            "id": rid_int,
            "method": "session/request_permission",
            "params": scene.permission_params(tool),
        }
    )
    await agent.notify("$/cancel_request", {"requestId": rid_int})
    first = await agent.wait_for(lambda e: _is_answer(e, rid_int), quick, since)
    if first is None:
        scene.fail("client-cancel-request", f"no answer within {quick:g} s")
    else:
        after = agent.wire.entries.index(first) + 1
        # a second answer would come right behind the first: watch briefly
        second = await agent.wait_for(lambda e: _is_answer(e, rid_int), 0.5, after)
        error = dict_of((first.message or {}).get("error"))
        if second is not None:
            scene.fail("client-cancel-request", "answered twice")
        elif error and error.get("code") != ErrorCode.REQUEST_CANCELLED:
            scene.fail(
                "client-cancel-request",
                f"answered error {error.get('code')!r} (a result or -32800 expected)",
            )
        else:
            scene.ok("client-cancel-request", _answer_text(first))
    await scene.end_tool(tool)
    await scene.end_turn(prompt)


def _is_answer(entry: WireEntry, request_id: Any) -> bool:
    m = entry.message
    return (
        entry.direction == "to_agent"
        and entry.is_response
        and m is not None
        and id_key(m.get("id")) == id_key(request_id)
    )


def _answer_text(entry: WireEntry) -> str:
    error = dict_of((entry.message or {}).get("error"))
    return f"answered error {error.get('code')!r}" if error else "answered with a result"


async def _meta(scene: Scene) -> None:
    meta = {
        "acp-check/vendor": {"nested": [1, {"deep": True}]},
        "traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01",
    }
    init = scene.init_result(_meta=meta)
    init["agentCapabilities"]["_meta"] = meta
    init["agentCapabilities"]["promptCapabilities"]["_meta"] = meta
    prompt = await scene.handshake(init, session_extra={"_meta": meta})
    if prompt is None:
        return
    await scene.update(
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "with _meta everywhere", "_meta": meta},
            "_meta": meta,
        },
        _meta=meta,
    )
    tool = scene.tool_id()
    await scene.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": tool,
            "title": "a tool call with _meta",
            "kind": "read",
            "status": "pending",
            "locations": [{"path": str(scene.work / "notes.txt"), "_meta": meta}],
            "_meta": meta,
        }
    )
    await scene.update(
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "a step", "priority": "high", "status": "pending", "_meta": meta}
            ],
            "_meta": meta,
        }
    )
    await scene.end_tool(tool)
    await scene.survive("client-meta", "_meta in every place the schema allows it", prompt)


# ---------------------------------------------------------------------- hostile agents


async def _garbage(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    for line in (
        b"this line is not JSON",
        b'{"jsonrpc": "2.0", "method": "session/update", "params": {',
        b"\xff\xfe not UTF-8 \xc3\x28",
        b"[1, 2, 3]",
        b"42",
        b'"a string"',
        b"null",
        b"",
        b"{}",
        b'{"jsonrpc": "2.0", "id": 987654, "result": {}}',
        b'{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}',
        b'{"jsonrpc": "1.0", "method": "session/update"}',
    ):
        await scene.agent.send_raw(line, owner="garbage")
    await scene.survive("garbage-lines", "12 lines that are not JSON-RPC messages", prompt)


_FILL = "<filler>"


def _split(message: dict[str, Any]) -> tuple[bytes, bytes, bytes]:
    """``message`` as JSON cut where its :data:`_FILL` string goes, and whole as recorded."""
    text = json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":"))
    prefix, suffix = text.split(_FILL)
    return prefix.encode(), suffix.encode(), text.encode()


async def _oversize(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    size = scene.options.oversize_bytes
    what = f"a {size / 1e6:g} MB line"
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": _FILL}}
    prefix, suffix, record = _split(
        {"method": "session/update", "params": {"sessionId": scene.session_id, "update": chunk}}
    )
    count = max(1, size - len(prefix) - len(suffix))
    output = await scene.agent.send_big_line(prefix, b"x", count, suffix, record=record)
    if await scene.agent.written(output, scene.options.timeout):
        await scene.survive("oversize-line", what, prompt)
    elif scene.gone():
        scene.fail("oversize-line", f"during {what}: {await scene.describe_gone()}")
    else:
        scene.fail(
            "oversize-line",
            f"the client stopped reading the agent's output during {what} "
            f"({scene.options.timeout:g} s)",
        )


async def _huge(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    size = scene.options.huge_bytes
    what = f"a {size / 1e6:g} MB permission request"
    tool = await scene.tool_call("acp check: a tool call with a huge input", "edit")
    rid = scene.agent.new_id()
    scene.agent.wire.claim(scene.scenario.name, rid, "huge-message")
    params = scene.permission_params(tool)
    params["toolCall"]["rawInput"] = {"content": _FILL}
    prefix, suffix, record = _split(
        {"id": rid, "method": "session/request_permission", "params": params}
    )
    since = len(scene.agent.wire.entries)
    count = max(1, size - len(prefix) - len(suffix))
    await scene.agent.send_big_line(prefix, b"x", count, suffix, record=record)
    answer = await scene.agent.wait_for(lambda e: _is_answer(e, rid), scene.options.timeout, since)
    if answer is None:
        problem = (
            await scene.describe_gone()
            if scene.gone()
            else f"no answer within {scene.options.timeout:g} s"
        )
        scene.fail("huge-message", f"{what}: {problem}")
        return
    await scene.end_tool(tool)
    await scene.survive("huge-message", f"{what} (answered)", prompt)


async def _unknown_updates(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    await scene.update({"sessionUpdate": "acp_check_future_update", "payload": {"n": 1}})
    await scene.update(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "acp_check_block", "x": 1}}
    )
    await scene.update(
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "an unknown field beside me"},
            "acpCheckFutureField": True,
        }
    )
    await scene.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "acp-check-odd-tool",
            "title": "a tool call of an unknown kind",
            "kind": "acp_check_kind",
            "status": "acp_check_status",
            "content": [{"type": "acp_check_content"}],
        }
    )
    await scene.update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "acp-check-never-announced",
            "status": "completed",
        }
    )
    await scene.update(
        {
            "sessionUpdate": "plan",
            "entries": [{"content": "?", "priority": "acp_check", "status": "acp_check"}],
        }
    )
    await scene.update(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "nobody's"}},
        session="acp-check-no-such-session",
    )
    await scene.survive(
        "unknown-updates", "updates of unknown kinds, content, tool calls and sessions", prompt
    )


async def _odd_order(scene: Scene) -> None:
    async def early() -> None:
        await scene.say("an update before session/new is answered")
        await scene.update(
            {
                "sessionUpdate": "available_commands_update",
                "availableCommands": [{"name": "early", "description": "sent early"}],
            }
        )

    if await scene.open_session(early=early) is None:
        return
    prompt = await scene.agent.wait_request("session/prompt", scene.options.timeout)
    if prompt is None:
        what = "updates before session/new's answer"
        if scene.gone():
            scene.fail("odd-order", f"after {what}: {await scene.describe_gone()}")
        else:
            scene.skip("odd-order", "the client sent no session/prompt")
        return
    tool = scene.tool_id()
    await scene.update(
        {"sessionUpdate": "tool_call_update", "toolCallId": tool, "status": "in_progress"}
    )
    await scene.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": tool,
            "title": "announced late",
            "kind": "other",
            "status": "in_progress",
        }
    )
    await scene.end_tool(tool)
    await scene.survive(
        "odd-order", "updates before session/new's answer and before their tool call", prompt
    )


async def _late_updates(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    await scene.say("the turn ends now")
    await scene.end_turn(prompt)
    await scene.say("a chunk after the turn's answer")
    tool = await scene.tool_call("a tool call after the turn's answer")
    await scene.end_tool(tool)
    what = "updates after the turn's answer"
    if scene.baseline.exit_status is not None:
        problem = await scene.ends_like_baseline()
    else:
        problem = await scene.probe("late-updates")
    if problem is not None:
        scene.fail("late-updates", f"after {what}: {problem}")
    else:
        scene.ok("late-updates", f"survived {what}")


async def _stderr_flood(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    size = scene.options.stderr_flood_bytes
    output = await scene.agent.flood_stderr(size)
    if not await scene.agent.written(output, scene.options.timeout):
        scene.fail(
            "stderr-flood",
            f"{size / 1e6:g} MB on the agent's stderr could not be written within "
            f"{scene.options.timeout:g} s: the client does not read the agent's stderr",
        )
        return
    await scene.survive("stderr-flood", f"{size / 1e6:g} MB on the agent's stderr", prompt)


async def _slow_initialize(scene: Scene) -> None:
    init = await scene.wait_initialize()
    if init is None:
        return
    delay = scene.options.slow_initialize
    started = time.monotonic()
    try:
        await asyncio.wait_for(scene.agent.input_ended.wait(), delay)
    except asyncio.TimeoutError:
        pass
    if scene.gone():
        scene.fail(
            "slow-initialize",
            f"the client gave up after {time.monotonic() - started:.1f} s: "
            f"{await scene.describe_gone()}",
        )
        return
    new = await scene.open_session()
    if new is None:
        return
    scene.ok("slow-initialize", f"waited {delay:g} s for initialize")
    prompt = await scene.agent.wait_request("session/prompt", scene.options.quick_timeout)
    if prompt is not None:
        await scene.end_turn(prompt)


async def _unsupported_version(scene: Scene) -> None:
    init = await scene.wait_initialize()
    if init is None:
        return

    def session_call(e: WireEntry) -> bool:
        return e.direction == "to_agent" and (e.method or "").startswith("session/")

    early = next((e for e in scene.agent.wire.of(scene.scenario.name) if session_call(e)), None)
    if early is not None:
        scene.skip(
            "unsupported-version",
            f"the client sent {early.method} before initialize was answered (see client-order)",
        )
        return
    since = len(scene.agent.wire.entries)
    await scene.agent.answer(init, scene.init_result(protocolVersion=UNSUPPORTED_VERSION))
    grace = scene.options.grace
    asked = await scene.agent.wait_for(session_call, grace, since)
    if asked is not None:
        scene.fail(
            "unsupported-version",
            f"sent {asked.method} after the agent answered protocolVersion {UNSUPPORTED_VERSION}",
            "INIT-006",
        )
        return
    closed = scene.gone()
    status = await scene.client.wait(grace)
    output = scene.client.output().lower()
    told = "version" in output or str(UNSUPPORTED_VERSION) in output
    if not closed and status is None:
        scene.fail(
            "unsupported-version",
            f"the connection was still open {grace:g} s after protocolVersion {UNSUPPORTED_VERSION}",
            "INIT-010",
        )
    elif not told:
        scene.fail(
            "unsupported-version",
            "the client closed without a word about the version in its output",
            "INIT-010",
        )
    else:
        scene.ok("unsupported-version", f"closed and said why ({scene.client.describe_end()})")


async def _judge_error_answer(scene: Scene, key: str, what: str) -> None:
    status = await scene.client.wait(scene.options.grace)
    shown = PLANNED_FAILURE.lower() in scene.client.output().lower()
    if status is None:
        scene.fail(key, f"still running {scene.options.grace:g} s after the error answer to {what}")
    elif status == 0 or status == scene.baseline.exit_status:
        scene.fail(
            key,
            f"{scene.client.describe_end()} after the error answer to {what}, as after a normal turn",
        )
    elif not shown:
        scene.fail(
            key,
            f"{scene.client.describe_end()} without showing the error's message ({PLANNED_FAILURE!r})",
        )
    else:
        scene.ok(key, f"showed the error and {scene.client.describe_end()}")


async def _prompt_error(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    await scene.agent.fail(
        prompt,
        ErrorCode.INTERNAL_ERROR,
        PLANNED_FAILURE,
        {"details": "acp check failed this prompt"},
    )
    await _judge_error_answer(scene, "prompt-error", "session/prompt")


async def _session_new_error(scene: Scene) -> None:
    init = await scene.wait_initialize()
    if init is None:
        return
    await scene.agent.answer(init, scene.init_result())
    new = await scene.agent.wait_request("session/new", scene.options.timeout)
    if new is None:
        scene.skip_rest("the client sent no session/new")
        return
    await scene.agent.fail(
        new, ErrorCode.INTERNAL_ERROR, PLANNED_FAILURE, {"details": "acp check failed session/new"}
    )
    await _judge_error_answer(scene, "session-new-error", "session/new")


async def _agent_exit(scene: Scene, key: str, grandchild: bool) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    await scene.say("the agent is about to exit")
    if grandchild:
        hold = scene.options.timeout + 2 * scene.options.grace
        if await scene.agent.spawn_grandchild(hold, scene.options.quick_timeout) is None:
            scene.skip(key, "the scripted agent could not start its grandchild")
            return
    await scene.agent.exit(3)
    started = time.monotonic()
    status = await scene.client.wait(scene.options.grace)
    held = " while a grandchild held its stdout" if grandchild else ""
    if status is None:
        scene.fail(
            key,
            f"still running {scene.options.grace:g} s after the agent exited with status 3{held}",
        )
    elif status == 0 or status == scene.baseline.exit_status:
        scene.fail(
            key, f"{scene.client.describe_end()} after the agent died{held}, as after a normal turn"
        )
    else:
        scene.ok(
            key,
            f"{scene.client.describe_end()} {time.monotonic() - started:.1f} s after the agent exited{held}",
        )


async def _agent_exit_plain(scene: Scene) -> None:
    await _agent_exit(scene, "agent-exit", False)


async def _agent_exit_grandchild(scene: Scene) -> None:
    await _agent_exit(scene, "agent-exit-grandchild", True)


# ---------------------------------------------------------------------- files


class _Steps:
    """Requests of one scenario in turn; once the client is gone the rest are skipped."""

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        self.stopped: str | None = None

    async def call(self, method: str, params: dict[str, Any]) -> WireEntry | None:
        if self.stopped is not None:
            return None
        answer = await self.scene.agent.request(
            method, {"sessionId": self.scene.session_id, **params}, self.scene.options.quick_timeout
        )
        if answer is None and self.scene.gone():
            self.stopped = await self.scene.describe_gone()
        return answer

    def unanswered(self, key: str, what: str) -> None:
        """No answer: skipped here (the client went away, or see client-responses)."""
        if self.stopped is not None:
            self.scene.skip(key, f"not reached: {self.stopped}")
        else:
            self.scene.skip(key, f"{what} got no answer (see client-responses)")


def _landed(path: Path) -> str | None:
    """Where a write to ``path`` would have landed, if a file is there now."""
    real = os.path.realpath(path)
    return real if os.path.exists(real) else None


async def _until(condition: Callable[[], bool], timeout: float) -> bool:
    """Whether ``condition`` came true within ``timeout`` seconds (looked at every 50 ms):
    for what only the file system or the process table can tell."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)


def _result(entry: WireEntry) -> dict[str, Any] | None:
    m = entry.message or {}
    return dict_of(m.get("result")) if "result" in m else None


async def _files(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    steps = _Steps(scene)
    work, outside = scene.work, scene.outside

    async def read(path: str | Path, **extra: Any) -> WireEntry | None:
        return await steps.call("fs/read_text_file", {"path": str(path), **extra})

    async def write(path: str | Path, text: str) -> WireEntry | None:
        return await steps.call("fs/write_text_file", {"path": str(path), "content": text})

    key = "fs-write-creates"
    if scene.needs_met(key):
        target = work / "acp-check-created.txt"
        text = "created by acp check\nsecond line\n"
        answer = await write(target, text)
        if answer is None:
            steps.unanswered(key, "the write")
        elif _result(answer) is None:
            scene.fail(key, f"refused: {short(json.dumps((answer.message or {}).get('error')))}")
        elif not target.is_file() or target.read_text(encoding="utf-8") != text:
            scene.fail(key, "answered with a result, but the file is missing or differs")
        else:
            scene.ok(key, "the file was created")

    key = "fs-read-lines"
    if scene.needs_met(key):
        answer = await read(work / "notes.txt", line=2, limit=2)
        if answer is None:
            steps.unanswered(key, "the read")
        elif (result := _result(answer)) is None:
            scene.fail(key, "refused a read of a file inside the folder")
        elif str(result.get("content")).rstrip("\n") != "line 2\nline 3":
            scene.fail(key, f"line 2, limit 2 returned {short(result.get('content'))}")
        else:
            scene.ok(key, "lines 2 and 3")

    key = "fs-missing"
    if scene.needs_met(key):
        answer = await read(work / "acp-check-missing.txt")
        if answer is None:
            steps.unanswered(key, "the read")
        elif (result := _result(answer)) is not None:
            scene.fail(key, f"answered with content {short(result.get('content'))}")
        else:
            scene.ok(key, _answer_text(answer))

    key = "fs-relative"
    if scene.needs_met(key):
        answer = await read("notes.txt")
        if answer is None:
            steps.unanswered(key, "the read")
        elif (result := _result(answer)) is not None:
            scene.fail(key, f"read the relative path notes.txt: {short(result.get('content'))}")
        else:
            scene.ok(key, _answer_text(answer))

    escapes = {
        "fs-dotdot": (
            [work / ".." / "outside" / "secret.txt"],
            [work / ".." / "outside" / "acp-check-dotdot.txt"],
        ),
        "fs-absolute-outside": ([outside / "secret.txt"], [outside / "acp-check-absolute.txt"]),
        "fs-symlink-out": (
            [work / "link-out" / "secret.txt", work / "secret-link.txt"],
            [work / "link-out" / "acp-check-link.txt"],
        ),
    }
    for key, (reads, writes) in escapes.items():
        if not scene.needs_met(key):
            continue
        problems: list[str] = []
        missing = 0
        for path in reads:
            answer = await read(path)
            if answer is None:
                missing += 1
            elif (result := _result(answer)) is not None:
                leaked = SECRET_TEXT.strip() in str(result.get("content"))
                problems.append(
                    f"read {path}" + (" and returned the outside file" if leaked else " (a result)")
                )
        if scene.capability("fs", "writeTextFile"):
            for path in writes:
                answer = await write(path, "acp check was here\n")
                created = _landed(path)
                if created is not None:
                    problems.append(f"wrote {path}: {created} now exists")
                elif answer is None:
                    missing += 1
                elif _result(answer) is not None:
                    problems.append(f"answered a write of {path} with a result")
        if problems:
            scene.fail(key, "; ".join(problems))
        elif missing:
            steps.unanswered(key, f"{missing} request(s)")
        else:
            scene.ok(key, "refused")

    key = "fs-vcs-internals"
    if scene.needs_met(key):
        config = work / ".git" / "config"
        answer = await write(config, "[core]\n\tfsmonitor = echo acp-check\n")
        changed = config.read_text(encoding="utf-8") != GIT_CONFIG
        if changed:
            scene.fail(key, "the write changed .git/config")
        elif answer is None:
            steps.unanswered(key, "the write")
        elif _result(answer) is not None:
            scene.fail(key, "answered a write of .git/config with a result")
        else:
            scene.ok(key, "refused")
    await scene.end_turn(prompt)


# ---------------------------------------------------------------------- terminals


def _python(code: str) -> dict[str, Any]:
    """A terminal command running ``code`` with this interpreter (absolute: no PATH needed)."""
    return {"command": sys.executable, "args": ["-c", code]}


async def _create_terminal(steps: _Steps, **params: Any) -> tuple[WireEntry | None, str | None]:
    answer = await steps.call("terminal/create", params)
    result = _result(answer) if answer is not None else None
    terminal = result.get("terminalId") if result is not None else None
    return answer, terminal if isinstance(terminal, str) else None


async def _release(steps: _Steps, terminal: str) -> None:
    await steps.call("terminal/release", {"terminalId": terminal})


_LIMIT = 1001
"""outputByteLimit of ``terminal-output-limit``: with 5-byte pairs ("é€") and the
15-byte end line it falls inside a character, so a cut at the byte splits one."""
_END = "acp-check-end\n"


async def _terminal_limit(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    key = "terminal-output-limit"
    if not scene.needs_met(key):
        await scene.end_turn(prompt)
        return
    steps = _Steps(scene)
    code = f"import sys; sys.stdout.write('\u00e9\u20ac' * 2000 + '\\n' + {_END!r}); sys.stdout.flush()"
    answer, terminal = await _create_terminal(steps, **_python(code), outputByteLimit=_LIMIT)
    if terminal is None:
        if answer is None:
            steps.unanswered(key, "terminal/create")
        else:
            scene.skip(key, f"terminal/create {_answer_text(answer)}")
        await scene.end_turn(prompt)
        return
    await steps.call("terminal/wait_for_exit", {"terminalId": terminal})
    answer = await steps.call("terminal/output", {"terminalId": terminal})
    result = _result(answer) if answer is not None else None
    if answer is None:
        steps.unanswered(key, "terminal/output")
    elif result is None:
        scene.fail(key, f"terminal/output {_answer_text(answer)}", "CLIENT-009")
    else:
        output = str(result.get("output"))
        problems: list[tuple[str, str]] = []
        if "\ufffd" in output or any(0xD800 <= ord(c) <= 0xDFFF for c in output):
            problems.append(("TERM-003", "the output starts with a broken character"))
        # a broken first character is TERM-003's; the size is counted without it
        size = len(output.lstrip("\ufffd").encode("utf-8", "surrogatepass"))
        if size > _LIMIT:
            problems.append(("CLIENT-009", f"{size} bytes kept, over outputByteLimit {_LIMIT}"))
        if not output.endswith(_END):
            problems.append(
                ("CLIENT-009", f"the newest output is not kept: ends {short(output[-40:])}")
            )
        if result.get("truncated") is not True:
            problems.append(("CLIENT-009", f"truncated is {result.get('truncated')!r}"))
        scene.v.verdict(key, problems, f"{size} bytes, cut at a character boundary")
    await _release(steps, terminal)
    await scene.end_turn(prompt)


async def _terminal_flood(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    key = "terminal-flood"
    if not scene.needs_met(key):
        await scene.end_turn(prompt)
        return
    steps = _Steps(scene)
    megabytes = max(1, scene.options.terminal_flood_bytes // (1 << 20))
    code = (
        "import sys\nline = b'x' * 1048575 + b'\\n'\n"
        f"for _ in range({megabytes}):\n    sys.stdout.buffer.write(line)\n"
    )
    answer, terminal = await _create_terminal(steps, **_python(code))
    if terminal is None:
        if answer is None:
            steps.unanswered(key, "terminal/create")
        else:
            scene.skip(key, f"terminal/create {_answer_text(answer)}")
        await scene.end_turn(prompt)
        return
    exited = await scene.agent.request(
        "terminal/wait_for_exit",
        {"sessionId": scene.session_id, "terminalId": terminal},
        scene.options.timeout,
        owner=key,
    )
    if exited is None:
        if scene.gone():
            scene.fail(key, f"during the flood: {await scene.describe_gone()}")
        else:
            scene.fail(
                key,
                f"terminal/wait_for_exit got no answer within {scene.options.timeout:g} s "
                f"of a {megabytes} MiB flood",
            )
        return
    output = await scene.agent.request(
        "terminal/output",
        {"sessionId": scene.session_id, "terminalId": terminal},
        scene.options.timeout,
        owner=key,
    )
    if output is None:
        scene.fail(key, f"terminal/output got no answer within {scene.options.timeout:g} s")
        return
    kept = len(str(dict_of(_result(output)).get("output", "")))
    scene.ok(key, f"{megabytes} MiB served, {kept} characters kept")
    await _release(steps, terminal)
    await scene.end_turn(prompt)


_ORPHAN = (
    "import os, sys, time\n"
    "with open(sys.argv[1] + '.tmp', 'w') as f: f.write(str(os.getpid()))\n"
    "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "time.sleep(float(sys.argv[2]))\n"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def _ours(pid: int, marker: str) -> bool:
    """Whether ``pid`` still runs our orphan (its command line names ``marker``)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return marker.encode() in handle.read()
    except OSError:
        return False


async def _terminal_orphan(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    steps = _Steps(scene)
    key = "terminal-unknown-id"
    if scene.needs_met(key):
        answer = await steps.call("terminal/output", {"terminalId": "acp-check-no-such-terminal"})
        if answer is None:
            steps.unanswered(key, "terminal/output")
        elif _result(answer) is not None:
            scene.fail(key, "terminal/output of an unknown terminal answered with a result")
        else:
            scene.ok(key, _answer_text(answer))
    key = "terminal-orphan"
    if not scene.needs_met(key):
        await scene.end_turn(prompt)
        return
    pidfile = scene.work.parent / "orphan.pid"
    hold = scene.options.timeout + 4 * scene.options.grace
    answer, terminal = await _create_terminal(
        steps, command=sys.executable, args=["-c", _ORPHAN, str(pidfile), str(hold)]
    )
    if terminal is None:
        if answer is None:
            steps.unanswered(key, "terminal/create")
        else:
            scene.skip(key, f"terminal/create {_answer_text(answer)}")
        await scene.end_turn(prompt)
        return
    if not await _until(pidfile.exists, scene.options.quick_timeout):
        scene.skip(
            key, f"the terminal's command did not start within {scene.options.quick_timeout:g} s"
        )
        await scene.end_turn(prompt)
        return
    pid = int(pidfile.read_text())
    await scene.end_turn(prompt)
    status = await scene.client.wait(scene.options.grace)
    if status is None:
        scene.client.terminate()  # the client alone: its terminals are its to stop
        status = await scene.client.wait(scene.options.grace)
    if not await _until(lambda: not _alive(pid), scene.options.grace):
        scene.fail(
            key, f"the unreleased terminal's process ({pid}) still runs after the client ended"
        )
        if _ours(pid, str(pidfile)):
            os.kill(pid, signal.SIGKILL)
    else:
        scene.ok(key, f"stopped when the client ended ({scene.client.describe_end()})")


async def _terminal_sandbox(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    steps = _Steps(scene)
    key = "terminal-cwd-outside"
    if scene.needs_met(key):
        answer, terminal = await _create_terminal(
            steps, **_python("print('started')"), cwd=str(scene.outside)
        )
        if terminal is not None:
            scene.fail(key, f"started a terminal in {scene.outside}")
            await _release(steps, terminal)
        elif answer is None:
            steps.unanswered(key, "terminal/create")
        else:
            scene.ok(key, _answer_text(answer))
    key = "terminal-env"
    if scene.needs_met(key):
        code = f"import os; print(os.environ.get({SECRET_VARIABLE!r}, 'absent'))"
        answer, terminal = await _create_terminal(steps, **_python(code))
        if terminal is None:
            if answer is None:
                steps.unanswered(key, "terminal/create")
            else:
                scene.skip(key, f"terminal/create {_answer_text(answer)}")
        else:
            await steps.call("terminal/wait_for_exit", {"terminalId": terminal})
            answer = await steps.call("terminal/output", {"terminalId": terminal})
            output = str(dict_of(_result(answer) if answer else None).get("output", ""))
            secret = scene.client.env.get(SECRET_VARIABLE, "")
            if answer is None:
                steps.unanswered(key, "terminal/output")
            elif secret and secret in output:
                scene.fail(key, f"the terminal printed {SECRET_VARIABLE}'s value")
            elif "absent" not in output:
                scene.skip(key, f"the terminal's output is not what it printed: {short(output)}")
            else:
                scene.ok(key, f"{SECRET_VARIABLE} did not reach the terminal")
            await _release(steps, terminal)
    await scene.end_turn(prompt)


# ---------------------------------------------------------------------- permission and cancel


async def _permission_cancel(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    agent, grace, quick = scene.agent, scene.options.grace, scene.options.quick_timeout
    first_tool = await scene.tool_call("acp check: permission, then Ctrl-C")
    first_id = agent.new_id()
    since = len(agent.wire.entries)
    sent = await agent.send(
        {
            "id": first_id,
            "method": "session/request_permission",
            "params": scene.permission_params(first_tool),
        }
    )
    # Ctrl-C after the answer, or a second at most: a client that asks its user has the
    # request pending when it cancels (CANCEL-002), one that answers at once does not.
    await agent.written(sent, quick)
    await agent.wait_for(lambda e: _is_answer(e, first_id), min(1.0, quick), since)
    scene.client.interrupt()
    cancel = await agent.wait_request("session/cancel", grace, since)
    if cancel is None:
        why = (
            f"the client ended ({await scene.describe_gone()})"
            if scene.gone()
            else f"no session/cancel within {grace:g} s"
        )
        for key in scene.scenario.keys:
            scene.v.record(key, "n/a", f"SIGINT during the turn: {why}; {NEEDS['client-cancel']}")
        return
    cancelled_at = agent.wire.entries.index(cancel)
    second_tool = await scene.tool_call("acp check: permission after the cancel")
    second = await agent.request(
        "session/request_permission", scene.permission_params(second_tool), quick
    )
    problems: list[tuple[str, str]] = []
    first = await agent.wait_for(lambda e: _is_answer(e, first_id), quick, since)
    if first is not None and agent.wire.entries.index(first) > cancelled_at:
        if _outcome(first) != "cancelled":
            problems.append(
                (
                    "CANCEL-002",
                    f"a permission request pending at the cancel was answered {_outcome(first)}",
                )
            )
    if second is not None and _outcome(second) != "cancelled":
        problems.append(
            ("TOOL-003", f"a permission request after the cancel was answered {_outcome(second)}")
        )
    if second is None and first is None:
        scene.skip(
            "permission-cancel", "the permission requests got no answer (see client-responses)"
        )
    else:
        scene.v.verdict("permission-cancel", problems, "answered cancelled")
    await scene.update(
        {"sessionUpdate": "tool_call_update", "toolCallId": first_tool, "status": "failed"}
    )
    await scene.update(
        {"sessionUpdate": "tool_call_update", "toolCallId": second_tool, "status": "failed"}
    )
    problem = await scene.probe("updates-after-cancel")
    if problem is not None:
        scene.fail(
            "updates-after-cancel", f"after tool call updates that followed the cancel: {problem}"
        )
    else:
        scene.ok("updates-after-cancel", "taken")
    await scene.end_turn(prompt, "cancelled")


def _outcome(entry: WireEntry) -> str:
    result = _result(entry)
    if result is None:
        return _answer_text(entry)
    outcome = dict_of(result.get("outcome"))
    if outcome.get("outcome") == "selected":
        return f"selected {outcome.get('optionId')!r}"
    return str(outcome.get("outcome"))


# ---------------------------------------------------------------------- the table

BASELINE = Scenario("baseline", ("client-initialize", "client-info"), _baseline)
SCENARIOS: tuple[Scenario, ...] = (
    BASELINE,
    Scenario(
        "extensions",
        (
            "client-ext-request",
            "client-ext-request-code",
            "client-unknown-request",
            "client-ext-notification",
            "client-protocol-notification",
            "client-string-ids",
            "client-cancel-request",
        ),
        _extensions,
    ),
    Scenario("meta", ("client-meta",), _meta),
    Scenario("garbage", ("garbage-lines",), _garbage),
    Scenario("oversize", ("oversize-line",), _oversize),
    Scenario("huge", ("huge-message",), _huge),
    Scenario("unknown-updates", ("unknown-updates",), _unknown_updates),
    Scenario("odd-order", ("odd-order",), _odd_order),
    Scenario("late-updates", ("late-updates",), _late_updates),
    Scenario("stderr-flood", ("stderr-flood",), _stderr_flood),
    Scenario("slow-initialize", ("slow-initialize",), _slow_initialize),
    Scenario("unsupported-version", ("unsupported-version",), _unsupported_version),
    Scenario("prompt-error", ("prompt-error",), _prompt_error),
    Scenario("session-new-error", ("session-new-error",), _session_new_error),
    Scenario("agent-exit", ("agent-exit",), _agent_exit_plain),
    Scenario("agent-exit-grandchild", ("agent-exit-grandchild",), _agent_exit_grandchild),
    Scenario(
        "files",
        (
            "fs-write-creates",
            "fs-read-lines",
            "fs-missing",
            "fs-relative",
            "fs-dotdot",
            "fs-absolute-outside",
            "fs-symlink-out",
            "fs-vcs-internals",
        ),
        _files,
    ),
    Scenario("terminal-limit", ("terminal-output-limit",), _terminal_limit),
    Scenario("terminal-flood", ("terminal-flood",), _terminal_flood),
    Scenario("terminal-orphan", ("terminal-unknown-id", "terminal-orphan"), _terminal_orphan),
    Scenario("terminal-sandbox", ("terminal-cwd-outside", "terminal-env"), _terminal_sandbox),
    Scenario(
        "permission-cancel", ("permission-cancel", "updates-after-cancel"), _permission_cancel
    ),
)
"""Every scenario, the baseline first, with the checks each judges."""


def make_folder(folder: Path) -> None:
    """A scenario's folders: ``work`` (the client's folder) and ``outside`` beside it."""
    work, outside = folder / "work", folder / "outside"
    work.mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET_TEXT, encoding="utf-8")
    (work / "notes.txt").write_text(NOTES_TEXT, encoding="utf-8")
    (work / ".git").mkdir()
    (work / ".git" / "config").write_text(GIT_CONFIG, encoding="utf-8")
    os.symlink(outside, work / "link-out")
    os.symlink(outside / "secret.txt", work / "secret-link.txt")


def new_secret() -> str:
    return "acp-check-" + secrets.token_hex(16)
