"""The agent's handshake and its end: version negotiation, ``initialize``, and exiting when
its input closes.

Version negotiation is probed in processes of their own (asking for 2 and for 65535),
judged once the main run has shown whether ``initialize`` works at all: an agent that
answers no ``initialize`` is one failure (``initialize``), not three. Every process whose
stdin the checker closes outside a turn counts for ``shutdown``; the full run closes it
once during a ``--slow-prompt`` turn for ``shutdown-turn``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ...protocol.version import V2_DRAFT, answered_version, v1_shaped
from ..registry import Group
from ..wire import as_dict, dict_of, dicts, short
from .driver import Answer, Run
from .live import META, TURN_CONTENT_UPDATES, Live
from .turns import META_ACCEPTED

__all__ = [
    "AGENT_INFO",
    "AUTH_METHODS",
    "GROUP",
    "INITIALIZE",
    "SHUTDOWN",
    "SHUTDOWN_TURN",
    "VERSION_DRAFT",
    "VERSION_NEWER",
    "VERSION_UNKNOWN",
    "close_input",
    "exit_during_turn",
    "judge_probes",
    "judge_shutdown",
    "open_main",
    "probes",
]

GROUP = Group("agent", stage="probe")
VERSION_NEWER = GROUP.check(
    "version-newer", "asked for version 2, the agent answers 1 or 2", proves=("INIT-009",)
)
VERSION_UNKNOWN = GROUP.check(
    "version-unknown",
    "asked for version 65535, the agent answers the newest version it supports",
    proves=("INIT-009",),
)
VERSION_DRAFT = GROUP.check(
    "version-draft",
    "asked for version 65535, the agent does not answer in the v2 draft's shape",
    proves=("VERSION-001",),
)
SHUTDOWN = GROUP.check(
    "shutdown",
    "the agent exits when its stdin closes (after initialize, and with sessions open)",
    proves=("SHUT-001",),
)
SHUTDOWN_TURN = GROUP.check(
    "shutdown-turn",
    "the agent exits when its stdin closes during a turn",
    proves=("SHUT-002",),
    stage="full",
    needs=("slow-prompt",),
)
INITIALIZE = GROUP.check(
    "initialize",
    "initialize answers the requested version 1",
    proves=("INIT-003", "INIT-008"),
    stage="main",
)
AGENT_INFO = GROUP.check(
    "agent-info", "initialize names the agent (agentInfo)", proves=("INIT-005",), stage="main"
)
AUTH_METHODS = GROUP.check(
    "auth-methods",
    "no terminal auth methods for a client that did not advertise auth.terminal",
    proves=("AUTH-002",),
    stage="main",
)

KNOWN_VERSIONS = frozenset({1, 2})
"""ACP versions that exist: 1 (stable) and 2 (the draft the protocol repository publishes)."""


# -- the probes


async def probes(live: Live) -> None:
    """Version negotiation and ``_meta`` in capabilities, each in a process of its own."""
    if not live.verdicts.wants(
        VERSION_NEWER, VERSION_UNKNOWN, VERSION_DRAFT, SHUTDOWN, META_ACCEPTED
    ):
        return
    await asyncio.gather(_probe(live, 2), _probe(live, 65535), _probe(live, 1, meta=True))


async def _probe(live: Live, version: int, meta: bool = False) -> None:
    run = live.new_run("meta" if meta else f"v{version}")
    try:
        if not await run.start():
            return
        if meta:
            run.capabilities = {"_meta": META}
            run.process.capabilities = run.capabilities
        answer = await run.initialize(version, live.timeout)
        if meta:
            live.meta_answer = answer
            if answer.answered and not answer.ok:  # silence is judged in judge_probes
                _fail_meta(live, answer)
        else:
            live.probe_answers[version] = answer
        if answer.answered:
            await close_input(live, run, f"after initialize ({run.label})")
    finally:
        live.report.notes.extend(run.notes)
        await run.close()


def _fail_meta(live: Live, answer: Answer, overrule: bool = False) -> None:
    detail = f"initialize with _meta in clientCapabilities: {answer.describe()}"
    if overrule:
        live.verdicts.overrule(META_ACCEPTED, detail)
    else:
        live.fail(META_ACCEPTED, detail)


def judge_probes(live: Live) -> None:
    """Version negotiation and ``_meta``, once the main run has shown whether
    initialize works at all.

    An agent that answers no initialize is one failure (``initialize``), not three.
    """
    newer, unknown = live.probe_answers.get(2), live.probe_answers.get(65535)
    meta = live.meta_answer
    if not live.initialize_answered:
        probed = (
            (VERSION_UNKNOWN, unknown),
            (VERSION_DRAFT, unknown),
            (VERSION_NEWER, newer),
            (META_ACCEPTED, meta),
        )
        for check, answer in probed:
            if answer is not None and not answer.answered:
                live.record(check, "skip", "initialize itself is not answered (see initialize)")
        if unknown is not None and not unknown.answered:
            unknown = None
        if newer is not None and not newer.answered:
            newer = None
        if meta is not None and not meta.answered:
            meta = None
    if meta is not None and not meta.answered:
        # Outweighs a pass from the prompt that carried _meta, judged earlier.
        _fail_meta(live, meta, overrule=True)
    latest = dict_of(unknown.result).get("protocolVersion") if unknown and unknown.ok else None
    if unknown is not None:
        _judge_unknown(live, unknown)
    if newer is not None:
        _judge_newer(live, newer, latest)


def _judge_unknown(live: Live, answer: Answer) -> None:
    if not answer.ok:
        live.fail(VERSION_UNKNOWN, f"initialize(protocolVersion=65535): {answer.describe()}")
        live.record(VERSION_DRAFT, "skip", "no answer to judge (see version-unknown)")
        return
    if answered_version(answer.result) == V2_DRAFT and not v1_shaped(answer.result):
        live.fail(
            VERSION_DRAFT,
            "asked 65535, answered 2 in the v2 draft's shape (info, capabilities): a v1 "
            "client asking for a later version than it speaks cannot read that; the draft "
            "is for clients that ask for 2",
        )
    else:
        live.record(VERSION_DRAFT, "pass", "not the v2 draft")
    got = dict_of(answer.result).get("protocolVersion")
    if not isinstance(got, int) or isinstance(got, bool):
        live.record(
            VERSION_UNKNOWN, "skip", f"protocolVersion {got!r} is not an integer (see initialize)"
        )
    elif got in KNOWN_VERSIONS:
        live.record(VERSION_UNKNOWN, "pass", f"answered {got}")
    else:
        live.fail(
            VERSION_UNKNOWN,
            f"asked 65535, answered {got!r}: the answer must be the newest version the "
            f"agent supports, one of {sorted(KNOWN_VERSIONS)}",
        )


def _judge_newer(live: Live, answer: Answer, latest: Any) -> None:
    if not answer.ok:
        if latest == 2:
            live.record(
                VERSION_NEWER,
                "pass",
                f"refused ({answer.describe()}); it speaks version 2, whose initialize "
                "params differ from version 1's",
            )
        else:
            live.fail(VERSION_NEWER, f"initialize(protocolVersion=2): {answer.describe()}")
        return
    got = dict_of(answer.result).get("protocolVersion")
    if not isinstance(got, int) or isinstance(got, bool):
        live.record(
            VERSION_NEWER, "skip", f"protocolVersion {got!r} is not an integer (see initialize)"
        )
    elif got == 2:
        live.record(VERSION_NEWER, "pass", "answered 2 (supports version 2)")
    elif got == 1:
        if latest == 2:
            live.fail(VERSION_NEWER, "asked 2, answered 1, yet answered 2 when asked for 65535")
        else:
            live.record(VERSION_NEWER, "pass", "answered 1")
    else:
        live.fail(VERSION_NEWER, f"asked 2, answered {got!r}")


# -- initialize


async def open_main(live: Live, run: Run) -> dict[str, Any] | None:
    """Start the main run's agent and initialize it: the agentCapabilities it answered,
    or None (the main stage is skipped with the reason)."""
    if not await run.start():
        live.fail(INITIALIZE, f"agent not started: {run.start_problem}")
        live.verdicts.skip_stage("main", "the agent did not start")
        return None
    init = await run.initialize(timeout=live.timeout)
    live.initialize_answered = init.answered
    if not init.ok:
        live.fail(INITIALIZE, f"initialize: {init.describe()}")
        live.verdicts.skip_stage("main", "initialize failed")
        return None
    result = dict_of(init.result)
    live.note_auth_methods(result)
    _judge_initialize(live, result)
    return dict_of(result.get("agentCapabilities"))


def _judge_initialize(live: Live, result: dict[str, Any]) -> None:
    version = result.get("protocolVersion")
    live.report.protocol_version = version
    info = result.get("agentInfo")
    agent_info = live.report.agent_info = as_dict(info)
    if not isinstance(version, int) or isinstance(version, bool):
        live.fail(INITIALIZE, f"protocolVersion is {version!r}, not an integer", "INIT-003")
    elif version != 1:
        live.fail(INITIALIZE, f"asked 1, answered protocolVersion {version}", "INIT-008")
    else:
        live.record(INITIALIZE, "pass", "protocolVersion 1")
    if info is None:
        live.fail(AGENT_INFO, "no agentInfo in the initialize result")
    elif agent_info and isinstance(agent_info.get("name"), str) and agent_info.get("version"):
        live.record(AGENT_INFO, "pass", f"{agent_info['name']} {agent_info['version']}")
    else:
        live.record(AGENT_INFO, "skip", f"agentInfo is malformed (see schema): {short(info)}")
    terminal = [
        str(m.get("id"))
        for m in dicts(result.get("authMethods") or ())
        if m.get("type") == "terminal"
    ]
    if terminal:
        live.fail(
            AUTH_METHODS,
            f"terminal auth methods {', '.join(terminal)} offered to a client without "
            "auth.terminal",
        )
    else:
        live.record(AUTH_METHODS, "pass")


# -- the end of input


async def close_input(live: Live, run: Run, when: str) -> None:
    """Close a process's stdin outside a turn; its exit counts for ``shutdown``."""
    if not run.remote:
        live.exits.append((when, await run.close_stdin_and_wait(live.grace)))


def judge_shutdown(live: Live) -> None:
    """SHUT-001 over every process whose stdin was closed outside a turn."""
    if not live.exits:
        live.record(SHUTDOWN, "skip", "no process got that far")
        return
    slow = [when for when, code in live.exits if code is None]
    if slow:
        live.fail(SHUTDOWN, f"still running {live.grace:g} s after stdin closed: {', '.join(slow)}")
    else:
        codes = ", ".join(str(code) for _, code in live.exits)
        live.record(SHUTDOWN, "pass", f"exit status {codes}")


async def exit_during_turn(live: Live, run: Run, session_id: str) -> None:
    """The full run's end: stdin closed during a ``--slow-prompt`` turn (SHUT-002), or,
    without one, outside a turn."""
    slow = live.options.slow_prompt
    if run.remote:
        return  # no stdin to close (the runner says so in the report)
    if not run.alive:
        return live.skip((SHUTDOWN_TURN,), "the agent process had ended")
    if not slow:
        live.skip((SHUTDOWN_TURN,), "needs --slow-prompt TEXT (a prompt that takes a while)")
        await close_input(live, run, "with sessions open (full)")
        return
    mark = run.mark()
    request_id, _ = await run.raw_request(
        "session/prompt", live.text_prompt(session_id, slow), SHUTDOWN_TURN.key
    )
    await run.wait_update(session_id, mark, live.turn_start_wait, TURN_CONTENT_UPDATES)
    if run.raw_answers(request_id, mark):
        return live.skip((SHUTDOWN_TURN,), "the slow prompt ended before stdin was closed")
    code = await run.close_stdin_and_wait(live.grace)
    if code is None:
        live.fail(SHUTDOWN_TURN, f"still running {live.grace:g} s after stdin closed during a turn")
    else:
        live.record(SHUTDOWN_TURN, "pass", f"exit status {code}")
