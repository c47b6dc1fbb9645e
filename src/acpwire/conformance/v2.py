"""``acp check --protocol 2``: the v2 draft's checks of an agent (:data:`GROUP`).

One agent process, driven by acpwire's client offering version 2 (one ``initialize`` a v1
agent reads too): the answer must choose 2 and name the agent (``info``); a session, the
``--prompt`` turn (answered with a ``messageId`` once accepted, the user message reported
with that id, the work between ``running`` and an ``idle`` state with the stop reason,
every message chunk with a ``messageId``), the ``--slow-prompt`` cancelled with
``session/cancel`` (``idle``, ``cancelled``); then every message the agent sent is held to
the v2 schema's letter (:meth:`~acpwire.testing.strict.StrictValidator.for_v2`). An agent
that answers 1 does not serve the draft: the checks are ``n/a``. Permission requests are
answered with the first allowing option, elicitations declined.

The v1 checks are not run here (``acp check`` without ``--protocol 2`` runs them).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Any, cast

from .. import schema as s
from .._waits import within
from ..client.connection import Client, ClientSideConnection
from ..client.v2 import AgentPeerV2, ClientV2
from ..protocol.errors import AuthRequired, RequestError
from ..schema import v2
from ..testing.recording import RecordingTransport, WireLog
from ..testing.strict import StrictValidator
from ..transports.subprocess import spawn
from .options import CheckOptions
from .registry import Group
from .report import Report, Verdicts

__all__ = [
    "GROUP",
    "V2_CANCEL",
    "V2_MESSAGE_IDS",
    "V2_NEGOTIATION",
    "V2_PROMPT_ACCEPTED",
    "V2_SCHEMA",
    "V2_TURN_STATES",
    "run_v2_checks",
]

GROUP = Group("agent-v2", stage="v2")
V2_NEGOTIATION = GROUP.check(
    "v2-negotiation",
    "offered version 2, the agent answers 2 with its info",
    proves=("V2-INIT-001",),
)
V2_PROMPT_ACCEPTED = GROUP.check(
    "v2-prompt-accepted",
    "session/prompt is answered with a messageId, then the user message is reported",
    proves=("V2-PROMPT-001", "V2-PROMPT-002"),
    needs=("turn",),
)
V2_TURN_STATES = GROUP.check(
    "v2-turn-states",
    "the turn runs between a running and an idle state_update with the stop reason",
    proves=("V2-PROMPT-003", "V2-PROMPT-004"),
    needs=("turn",),
)
V2_MESSAGE_IDS = GROUP.check(
    "v2-message-ids",
    "message updates and chunks carry a messageId",
    proves=("V2-MSG-001",),
    needs=("turn",),
)
V2_CANCEL = GROUP.check(
    "v2-cancel",
    "session/cancel ends a slow prompt's work idle with stop reason cancelled",
    proves=("V2-CANCEL-001",),
    needs=("slow-prompt",),
)
V2_SCHEMA = GROUP.check(
    "v2-schema",
    "every message the agent sent is valid against the v2 draft's schema",
    proves=("V2-SCHEMA-001",),
)

INFO = v2.Implementation(name="acp-check", version="1")

_MESSAGE_KINDS = frozenset(
    {
        "user_message",
        "user_message_chunk",
        "agent_message",
        "agent_message_chunk",
        "agent_thought",
        "agent_thought_chunk",
    }
)


class _Observer(ClientV2):
    """Keeps every update (as JSON) and signals the idle states; allows permissions."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self.changed = asyncio.Event()

    async def session_update(self, params: v2.UpdateSessionNotification) -> None:
        self.updates.append(s.to_json(params.update))
        self.changed.set()

    async def request_permission(
        self, params: v2.RequestPermissionRequest
    ) -> v2.RequestPermissionResponse:
        allow = next((o for o in params.options if o.kind.startswith("allow")), None)
        if allow is None:
            return v2.RequestPermissionResponse(outcome=v2.CancelledRequestPermissionOutcome())
        return v2.RequestPermissionResponse(
            outcome=v2.SelectedPermissionOutcome(option_id=allow.option_id)
        )

    async def create_elicitation(
        self, params: v2.CreateElicitationRequest
    ) -> v2.CreateElicitationResponse:
        return v2.ElicitationDeclineAction()

    async def wait_for(self, start: int, timeout: float, found: Any) -> dict[str, Any] | None:
        """The first update from index ``start`` for which ``found`` is true, or None
        when ``timeout`` seconds pass without one."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for update in self.updates[start:]:
                if found(update):
                    return update
            start = len(self.updates)
            self.changed.clear()
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return None
            try:
                await within(self.changed.wait(), left)
            except asyncio.TimeoutError:
                return None


def _idle_with_reason(update: dict[str, Any]) -> bool:
    return (
        update.get("sessionUpdate") == "state_update"
        and update.get("state") == "idle"
        and isinstance(update.get("stopReason"), str)
    )


async def run_v2_checks(options: CheckOptions) -> Report:
    """Run the v2 draft's checks against ``options.command``; never raises for
    misbehaviour of the agent."""
    if not options.command:
        raise ValueError("the v2 checks need an agent command")
    started = time.monotonic()
    verdicts = Verdicts(GROUP.checks, options.only)
    report = Report(command=list(options.command), target="agent-v2")
    temp, cwd = _folder(options.cwd)
    wire = WireLog()
    try:
        await _run(options, verdicts, report, wire, cwd)
    except Exception as exc:  # the agent died, hung up, or answered nonsense
        report.notes.append(f"the run stopped early: {type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    if report.protocol_version == 2:
        _judge_schema(wire, verdicts)
    return report.completed(verdicts, started)


def _folder(cwd: str | None) -> tuple[str, str]:
    """(a temporary folder to remove afterwards, the session folder: ``cwd`` or that one)."""
    temp = tempfile.mkdtemp(prefix="acp-check-v2-")
    return temp, os.path.abspath(cwd) if cwd else os.path.realpath(temp)


async def _run(
    options: CheckOptions, verdicts: Verdicts, report: Report, wire: WireLog, cwd: str
) -> None:
    command = list(options.command)
    transport = await spawn(command[0], command[1:], env=options.env, cwd=cwd)
    observer = _Observer()
    conn = ClientSideConnection(Client(), RecordingTransport(transport, wire), v2=observer)
    async with conn:
        version = await within(conn.negotiate(info=INFO), options.timeout)
        report.protocol_version = version
        if version != 2 or conn.agent_v2 is None:
            reason = f"the agent answered version {version}: it does not serve the v2 draft"
            verdicts.skip(verdicts.checks, reason, "n/a")
            return
        agent = conn.agent_v2
        answer = agent.initialize_response
        assert answer is not None
        report.agent_info = s.to_json(answer.info)
        verdicts.record(
            V2_NEGOTIATION, "pass", f"{answer.info.name} {answer.info.version} answered 2"
        )
        try:
            session = await within(agent.new_session(cwd), options.timeout)
        except AuthRequired:
            if options.auth_method is None:
                report.blocked = "session/new needs authentication (give --auth-method ID)"
                return
            await within(agent.login(options.auth_method), options.timeout)
            session = await within(agent.new_session(cwd), options.timeout)
        turns = _Turns(options, verdicts, observer, agent, session.session_id)
        await turns.prompt()
        if options.slow_prompt is None:
            verdicts.record(V2_CANCEL, "skip", "needs --slow-prompt")
        else:
            await turns.cancel(options.slow_prompt)
        with contextlib.suppress(RequestError, asyncio.TimeoutError):
            await within(agent.close_session(turns.sid), options.quick_timeout)


@dataclass
class _Turns:
    """The turns of the v2 checks, in one session."""

    options: CheckOptions
    verdicts: Verdicts
    observer: _Observer
    agent: AgentPeerV2
    sid: str

    async def prompt(self) -> None:
        """The ``--prompt`` turn: accepted with a messageId, run between a running and an
        idle state, its messages with ids."""
        options, verdicts, observer = self.options, self.verdicts, self.observer
        start = len(observer.updates)
        try:
            answer = await within(self.agent.prompt(self.sid, options.prompt), options.timeout)
        except RequestError as exc:
            verdicts.fail(V2_PROMPT_ACCEPTED, f"session/prompt was refused: {exc}", "V2-PROMPT-001")
            return
        except asyncio.TimeoutError:
            verdicts.fail(
                V2_PROMPT_ACCEPTED,
                f"no answer to session/prompt in {options.timeout:g} s",
                "V2-PROMPT-001",
            )
            return
        idle = await observer.wait_for(start, options.timeout, _idle_with_reason)
        seen = observer.updates[start:]
        inserted = [
            u
            for u in seen
            if u.get("sessionUpdate") in ("user_message", "user_message_chunk")
            and u.get("messageId") == answer.message_id
        ]
        verdicts.verdict(
            V2_PROMPT_ACCEPTED,
            []
            if inserted
            else [("V2-PROMPT-002", f"no user message with messageId {answer.message_id!r}")],
            f"accepted as {answer.message_id}",
        )
        states = [u.get("state") for u in seen if u.get("sessionUpdate") == "state_update"]
        problems: list[tuple[str, str]] = []
        if "running" not in states:
            problems.append(("V2-PROMPT-003", "no running state_update"))
        if idle is None:
            problems.append(
                ("V2-PROMPT-004", f"no idle state with a stop reason in {options.timeout:g} s")
            )
        verdicts.verdict(
            V2_TURN_STATES,
            problems,
            f"states {', '.join(map(str, states))}; stop reason {idle and idle.get('stopReason')}",
        )
        messages = [u for u in seen if u.get("sessionUpdate") in _MESSAGE_KINDS]
        missing = [u["sessionUpdate"] for u in messages if not u.get("messageId")]
        verdicts.verdict(
            V2_MESSAGE_IDS,
            [f"{kind} without a messageId" for kind in missing],
            f"{len(messages)} message update(s), each with a messageId",
        )

    async def cancel(self, prompt: str) -> None:
        """A slow turn cancelled: its work ends idle, ``cancelled``."""
        options, verdicts, observer = self.options, self.verdicts, self.observer
        start = len(observer.updates)
        try:
            await within(self.agent.prompt(self.sid, prompt), options.timeout)
        except (RequestError, asyncio.TimeoutError) as exc:
            verdicts.record(V2_CANCEL, "skip", f"the slow prompt was not accepted: {exc!r}")
            return

        def running(update: dict[str, Any]) -> bool:
            return (
                update.get("sessionUpdate") == "state_update" and update.get("state") == "running"
            )

        await observer.wait_for(start, options.timeout, running)
        await self.agent.cancel(self.sid)
        idle = await observer.wait_for(start, options.grace, _idle_with_reason)
        if idle is None:
            verdicts.fail(V2_CANCEL, f"no idle state {options.grace:g} s after session/cancel")
        elif idle.get("stopReason") != "cancelled":
            verdicts.fail(V2_CANCEL, f"the work ended with {idle.get('stopReason')!r}")
        else:
            verdicts.record(V2_CANCEL, "pass", "idle, cancelled")


def _judge_schema(wire: WireLog, verdicts: Verdicts) -> None:
    validator = StrictValidator.for_v2()
    problems: list[str] = []
    for direction, message in wire.entries:
        if direction == "sent":
            validator.note_request(message)
            continue
        if not isinstance(message, dict):
            problems.append("a line that is not a JSON-RPC message")
            continue
        m = cast("dict[str, Any]", message)
        label = m.get("method") or f"answer to {validator.method_of(m)}"
        for problem in validator.validate(m):
            if problem.newer:
                verdicts.newer(f"{label}: {problem}")
            else:
                problems.append(f"{label}: {problem}")
    verdicts.verdict(V2_SCHEMA, problems, f"{len(wire.received)} message(s) valid")
