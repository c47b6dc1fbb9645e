"""The stage of ``acp check --client``: one scenario being played, and what scenarios share.

Each scenario is one run of the client command against the scripted agent
(:mod:`.scripted_agent`) following one script: a normal handshake and turn (the
*baseline*), or a turn in which the agent does something odd or hostile. The scripts are
in :mod:`.manners`, :mod:`.hostile` and :mod:`.tools`, each declared on a
:class:`Playbook` with the checks it judges; the JSON-RPC manners of every run are judged
afterwards from the recording (:mod:`.wire_checks`). A :class:`Scene` holds the client
process, the scripted agent it started, the scenario's folders and the run's verdicts,
and offers the steps scripts are made of; :class:`Steps` sends requests one after another
and stops once the client is gone.

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
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agents.driver import client_info
from ..registry import NEEDS, Check, Status
from ..report import Verdicts
from ..wire import WireEntry, dict_of, id_key
from .driver import ClientProcess, ScriptedAgent

__all__ = [
    "GIT_CONFIG",
    "GOES_ON",
    "PLANNED_FAILURE",
    "SECRET_TEXT",
    "SECRET_VARIABLE",
    "UNSPOKEN_VERSION",
    "Baseline",
    "ClientCheckOptions",
    "Playbook",
    "Scenario",
    "Scene",
    "Steps",
    "advertised",
    "answer_text",
    "is_answer",
    "make_folder",
    "new_secret",
    "result_of",
    "unmet_need",
    "until",
]

UNSPOKEN_VERSION = 65535
"""The protocol version of the ``unsupported-version`` scenario: no client speaks it."""
SECRET_VARIABLE = "ACP_CHECK_SECRET_TOKEN"
"""A variable with a random value put in the client's environment: terminals must not see it."""
PLANNED_FAILURE = "acp check: a planned failure"
"""The message of the error answers; a client shows it to its user."""
GOES_ON = "acp check: the turn goes on."
"""The message chunk the survival rule sends before it ends the turn."""
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
    """Seconds the ``slow-initialize`` scenario waits before answering initialize."""
    slow_session: float = 1.0
    """Seconds the same scenario waits before answering session/new: a client that prompts
    without waiting for that answer shows it then, surely early (PROMPT-001)."""
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


def advertised(capabilities: dict[str, Any], *path: str) -> bool:
    """Whether ``capabilities`` (a client's) holds ``true`` at ``path``."""
    value = capabilities
    for name in path[:-1]:
        value = dict_of(value.get(name))
    return value.get(path[-1]) is True


def unmet_need(
    check: Check,
    capabilities: dict[str, Any],
    *,
    prompted: bool,
    in_workspace: bool,
    prompt_detail: str = "",
    workspace_detail: str = "",
) -> tuple[Status, str] | None:
    """The verdict (n/a or skip, and why) of ``check`` when a need of it is not met."""
    for need in check.needs:
        if need == "client-prompt" and not prompted:
            return "skip", prompt_detail or NEEDS[need]
        if need == "client-workspace" and not in_workspace:
            return "skip", f"{workspace_detail}: {NEEDS[need]}" if workspace_detail else NEEDS[need]
        wanted = _CAPABILITY_NEEDS.get(need)
        if wanted is not None and not advertised(capabilities, *wanted):
            return "n/a", f"the client does not advertise {'.'.join(wanted)}"
    return None


_CAPABILITY_NEEDS: Mapping[str, tuple[str, ...]] = {
    "client-fs-read": ("fs", "readTextFile"),
    "client-fs-write": ("fs", "writeTextFile"),
    "client-terminal": ("terminal",),
}


ScenarioScript = Callable[["Scene"], Awaitable[None]]


@dataclass(frozen=True)
class Scenario:
    """One script of the scripted agent and the checks it judges."""

    name: str
    checks: tuple[Check, ...]
    script: ScenarioScript


class Playbook:
    """The scenarios one module declares, in order (the order they are started in)."""

    def __init__(self) -> None:
        self.scenarios: list[Scenario] = []

    def scenario(self, name: str, *checks: Check) -> Callable[[ScenarioScript], ScenarioScript]:
        """Declare the decorated script as scenario ``name``, judging ``checks``."""

        def declare(script: ScenarioScript) -> ScenarioScript:
            self.scenarios.append(Scenario(name, checks, script))
            return script

        return declare


@dataclass
class Scene:
    """One scenario being played: the client, the scripted agent, the folders, the verdicts."""

    scenario: Scenario
    options: ClientCheckOptions
    v: Verdicts
    agent: ScriptedAgent
    client: ClientProcess
    folder: Path
    """The scenario's folder: ``work`` (the client's) and ``outside`` beside it."""
    baseline: Baseline
    initialize: WireEntry | None = None
    session_cwd: str | None = None
    _tool: int = 0

    @property
    def work(self) -> Path:
        return self.folder / "work"

    @property
    def outside(self) -> Path:
        return self.folder / "outside"

    @property
    def session_id(self) -> str:
        return f"acp-check-{self.scenario.name}"

    # ------------------------------------------------------------ verdicts

    def ok(self, check: Check, detail: str = "") -> None:
        self.v.record(check, "pass", detail)

    def fail(self, check: Check, detail: str, *broken: str) -> None:
        self.v.fail(check, detail, *broken)

    def skip(self, check: Check, detail: str) -> None:
        self.v.record(check, "skip", detail)

    def skip_rest(self, reason: str) -> None:
        self.v.skip(self.scenario.checks, reason)

    def capability(self, *path: str) -> bool:
        """Whether the client advertised ``path`` as true in this run's initialize."""
        params = self.initialize.params if self.initialize is not None else {}
        return advertised(dict_of(params.get("clientCapabilities")), *path)

    def needs_met(self, check: Check) -> bool:
        """Gives ``check`` its n/a or skip verdict when this run cannot meet its needs."""
        params = self.initialize.params if self.initialize is not None else {}
        where = f"the session's cwd ({self.session_cwd}) is not the checker's folder ({self.work})"
        unmet = unmet_need(
            check,
            dict_of(params.get("clientCapabilities")),
            prompted=True,
            in_workspace=self.in_workspace(),
            workspace_detail=where,
        )
        if unmet is not None:
            self.v.record(check, *unmet)
        return unmet is None

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

    async def fail_silent(self, check: Check, during: str, stalled: str) -> None:
        """Fail ``check`` when the client stopped taking or answering the agent's messages:
        it went away (said as ``during`` what) or, still there, ``stalled``."""
        if self.gone():
            self.fail(check, f"during {during}: {await self.describe_gone()}")
        else:
            self.fail(check, stalled)

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
                "version": client_info()["version"],
            },
            **extra,
        }

    async def expect(self, method: str) -> WireEntry | None:
        """The client's next ``method`` request; None when it sent none in time (the rest
        of the scenario is skipped, saying so)."""
        entry = await self.agent.wait_request(method, self.options.timeout)
        if entry is None:
            gone = f": {await self.describe_gone()}" if self.gone() else ""
            self.skip_rest(f"the client sent no {method}{gone}")
        return entry

    async def wait_initialize(self) -> WireEntry | None:
        self.initialize = await self.expect("initialize")
        return self.initialize

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
        new = await self.expect("session/new")
        if new is None:
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
        return await self.expect("session/prompt")

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

    async def probe(self, check: Check, *, announce: bool = True) -> str | None:
        """None when the client still answers a permission request, else what happened.

        The request belongs to ``check``: its fate is that check's to report. Without
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
            owner=check.key,
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

    async def survive(self, check: Check, what: str, prompt: WireEntry) -> None:
        """The survival rule (see the module docstring) after ``what`` happened."""
        problem = await self.probe(check)
        if problem is not None:
            self.fail(check, f"after {what}: {problem}")
            return
        await self.say(GOES_ON)
        await self.end_turn(prompt)
        problem = await self.ends_like_baseline()
        if problem is not None:
            self.fail(check, f"after {what}: {problem}")
        else:
            self.ok(check, f"survived {what}")


def is_answer(entry: WireEntry, request_id: Any) -> bool:
    m = entry.message
    return (
        entry.direction == "to_agent"
        and entry.is_response
        and m is not None
        and id_key(m.get("id")) == id_key(request_id)
    )


def answer_text(entry: WireEntry) -> str:
    error = dict_of((entry.message or {}).get("error"))
    return f"answered error {error.get('code')!r}" if error else "answered with a result"


class Steps:
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

    def unanswered(self, check: Check, what: str) -> None:
        """No answer: skipped here (the client went away, or see client-responses)."""
        if self.stopped is not None:
            self.scene.skip(check, f"not reached: {self.stopped}")
        else:
            self.scene.skip(check, f"{what} got no answer (see client-responses)")


async def until(condition: Callable[[], bool], timeout: float) -> bool:
    """Whether ``condition`` came true within ``timeout`` seconds (looked at every 50 ms):
    for what only the file system or the process table can tell."""
    deadline = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.05)


def result_of(entry: WireEntry) -> dict[str, Any] | None:
    m = entry.message or {}
    return dict_of(m.get("result")) if "result" in m else None


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
