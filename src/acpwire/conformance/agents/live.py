"""What the live checks of one agent share: the run's options, verdicts and recording, and
the steps every group of checks is made of (a session to work in, a prompt, a wait for
late updates, what authentication blocked).

Three kinds of process run side by side (each its own :class:`~.driver.Run`, the order of
their steps in :mod:`.runs`):

* **probes**, short-lived: ``initialize`` asking for version 2, for 65535, and with
  ``_meta`` in the client capabilities; then stdin is closed and the exit awaited.
* **main**, a client that advertises nothing optional and rejects every permission:
  JSON-RPC behaviour (unknown methods, string ids, notifications, a line that is not
  JSON, invalid params, ``$/cancel_request``), sessions, prompt turns and their content,
  cancellation, modes, config options and the optional session methods.
* **full**, a client with every capability that grants permissions: an MCP server in
  ``session/new``, the ``--tool-prompt`` turns (files, terminals, permissions granted) and,
  with ``--slow-prompt``, the end of input during a running turn.

Judgements follow the rule they cite and nothing stricter: an agent may answer version 2
to 65535 and refuse v1-shaped params for version 2; a turn that ended before the cancel
reached the agent is not a cancellation failure; a session that was never prompted need
not be listed. A request whose answer never comes costs one timeout, and the agent that
dies is started again, so one defect gives one failure.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ..options import CheckOptions
from ..registry import Check, Status
from ..report import Report, Verdicts
from ..wire import Wire, dict_of, dicts
from .driver import (
    BARE_CAPABILITIES,
    FULL_CAPABILITIES,
    Answer,
    BareClient,
    FullClient,
    Opener,
    Run,
)

__all__ = ["LATE_WATCH", "META", "NO_SESSION", "TURN_CONTENT_UPDATES", "Live"]

TURN_CONTENT_UPDATES = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
)
"""Update kinds that belong to a turn (metadata updates may come at any time)."""
LATE_WATCH = 0.5
"""Seconds to watch for turn content after a turn's response (at least 0.5 s)."""
TURN_START_WAIT = 5.0
"""How long to wait for a slow turn's first content (a message, thought, tool call or plan;
metadata updates such as available commands may come from the session, not the turn)
before acting on it anyway."""
META = {"acp-check/probe": {"nested": [1, 2]}}
"""A ``_meta`` value the agent has never seen (EXT-008: it must be tolerated)."""
NO_SESSION = "acp-check-no-such-session"
"""A session id no agent has: requests naming it must be refused."""


@dataclass
class Live:
    """The probe, main and full runs of one ``acp check``, and what their steps learn."""

    options: CheckOptions
    verdicts: Verdicts
    report: Report
    wire: Wire
    cwd: str
    """The main run's session folder."""
    full_cwd: str
    """The full run's session folder (its files are really read and written)."""
    opener: Opener | None = None
    """Set when the agent is behind an endpoint: how each run connects to it."""
    exits: list[tuple[str, int | None]] = field(default_factory=list[tuple[str, int | None]])
    """(when stdin was closed, exit status or None when still running) per process."""
    working_session: dict[str, str] = field(default_factory=dict[str, str])
    """Per process label, the session the main run's steps work in."""
    probe_answers: dict[int, Answer] = field(default_factory=dict[int, Answer])
    """The probes' answers to ``initialize``, by the version they asked for."""
    meta_answer: Answer | None = None
    """The answer to ``initialize`` with ``_meta`` in the client capabilities."""
    initialize_answered: bool = False
    """Whether the main run's initialize got any answer (a result or an error)."""
    prompt_refused: bool = False
    """The first ``--prompt`` was answered with an error (so later ones are not judged)."""
    cancel_request_problems: list[str] | None = None
    """What the quick ``$/cancel_request`` probe found (None: it did not run)."""
    auth_methods: dict[str, str] = field(default_factory=dict[str, str])
    """Auth method ids offered in any initialize answer, and their types."""
    blocked_at: str | None = None
    """The request that first answered -32000 (the main run's if it did)."""

    # -- options

    @property
    def timeout(self) -> float:
        return self.options.timeout

    @property
    def quick(self) -> float:
        return self.options.quick

    @property
    def turn_start_wait(self) -> float:
        return min(TURN_START_WAIT, self.timeout)

    @property
    def grace(self) -> float:
        return self.options.grace

    # -- verdicts

    def record(self, check: Check, status: Status, detail: str = "") -> None:
        self.verdicts.record(check, status, detail)

    def fail(self, check: Check, detail: str, *broken: str) -> None:
        self.verdicts.fail(check, detail, *broken)

    def skip(self, checks: tuple[Check, ...], reason: str) -> None:
        self.verdicts.skip(checks, reason)

    def not_applicable(self, checks: tuple[Check, ...], reason: str) -> None:
        self.verdicts.skip(checks, reason, "n/a")

    def judge_turn(self, check: Check, answer: Answer) -> None:
        """A turn was taken: a result (its stopReason is the ``prompt`` check's business)."""
        if answer.ok:
            self.record(check, "pass", f"stopReason {dict_of(answer.result).get('stopReason')}")
        else:
            self.fail(check, answer.describe())

    async def must_refuse(
        self, run: Run, check: Check, method: str, params: Any, what: str, timeout: float
    ) -> None:
        """Pass ``check`` when ``method`` is answered with an error, fail it otherwise (the
        request and its answer are the check's own)."""
        answer = await run.call(method, params, timeout, owner=check.key)
        if answer.error is not None:
            self.record(check, "pass", answer.describe())
        else:
            self.fail(check, f"{what}: {answer.describe()}")

    # -- processes and sessions

    def new_run(self, name: str, full: bool = False) -> Run:
        root = self.full_cwd if full else self.cwd
        return Run(
            name,
            self.wire,
            self.options.command,
            self.options.env,
            (lambda: FullClient(root)) if full else BareClient,
            FULL_CAPABILITIES if full else BARE_CAPABILITIES,
            self.quick,
            self.opener,
        )

    async def ready(self, run: Run) -> str | None:
        """The session the main steps work in, after reviving a dead process; None if none."""
        if not run.alive:
            if not await run.revive("it had died", self.timeout):
                return None
        sid = self.working_session.get(run.label)
        if sid is None:
            answer = await run.call(
                "session/new", {"cwd": self.cwd, "mcpServers": []}, self.timeout
            )
            found = dict_of(answer.result).get("sessionId")
            if not isinstance(found, str):
                return None
            sid = self.working_session[run.label] = found
            run.sessions.add(found)
        return sid

    async def fresh_session(self, run: Run) -> str | None:
        """A new session for one check, so one broken turn does not spoil the next check's."""
        if await self.ready(run) is None:
            return None
        answer = await run.call("session/new", {"cwd": self.cwd, "mcpServers": []}, self.timeout)
        sid = dict_of(answer.result).get("sessionId")
        if not isinstance(sid, str):
            return None
        run.sessions.add(sid)
        return sid

    def text_prompt(self, session_id: str, text: str, *extra: dict[str, Any]) -> dict[str, Any]:
        return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}, *extra]}

    async def call_authenticated(self, run: Run, method: str, params: Any) -> Answer:
        """``method``, again after ``authenticate`` when it needs authentication and we may."""
        answer = await run.call(method, params, self.timeout)
        if answer.needs_auth and self.options.auth_method:
            auth = await run.call(
                "authenticate", {"methodId": self.options.auth_method}, self.timeout
            )
            if auth.ok:
                return await run.call(method, params, self.timeout)
            note = f"authenticate {self.options.auth_method!r}: {auth.describe()}"
            if note not in self.report.notes:
                self.report.notes.append(note)
        return answer

    async def prompt(self, run: Run, session_id: str, *extra: dict[str, Any]) -> Answer:
        """A ``--prompt`` turn (authenticating first if the agent asks and we may)."""
        params = self.text_prompt(session_id, self.options.prompt, *extra)
        return await self.call_authenticated(run, "session/prompt", params)

    async def late_updates(self, run: Run, session_id: str, response_index: int) -> list[str]:
        """Turn content for ``session_id`` after ``response_index``, watched for LATE_WATCH s."""
        await asyncio.sleep(LATE_WATCH)  # the rule is about time: watch a window, then look
        return run.updates(session_id, response_index + 1, kinds=TURN_CONTENT_UPDATES)

    # -- authentication

    def note_auth_methods(self, init_result: Any) -> None:
        """Remember the auth methods an ``initialize`` answer offers (each run's client
        may be offered others: terminal methods go only to clients with auth.terminal)."""
        for method in dicts(dict_of(init_result).get("authMethods") or ()):
            kind = method.get("type")
            self.auth_methods.setdefault(str(method.get("id")), str(kind or "agent"))

    def auth_hint(self) -> str:
        """The auth methods offered, for a report blocked by authentication."""
        if not self.auth_methods:
            return "the agent offers no auth methods"
        shown = ", ".join(
            name if kind == "agent" else f"{name} ({kind})"
            for name, kind in self.auth_methods.items()
        )
        how = "; pass --auth-method ID" if "agent" in self.auth_methods.values() else ""
        return f"offered methods: {shown}{how}"

    def blocked(self, where: str) -> str:
        """Record that ``where`` answered -32000; the reason to skip what needs it."""
        if self.blocked_at is None or ("full run" in self.blocked_at and "full run" not in where):
            self.blocked_at = where  # the main run's says more
        self.report.blocked = self.blocked_reason()
        return self.report.blocked

    def blocked_reason(self) -> str:
        return f"blocked by authentication: {self.blocked_at} answered -32000; {self.auth_hint()}"

    def finish(self) -> None:
        """Once every run is over: the report's blocked reason names every method offered."""
        if self.blocked_at is not None:
            self.report.blocked = self.blocked_reason()
