"""Sessions, tried in the main run: ``session/new`` with an absolute folder, two sessions
with two ids, a relative folder refused, a prompt for a session nobody opened refused.

The first session found here is the one the main run's later steps work in; the second
one carries the modes and config options :mod:`.optional` judges.
"""

from __future__ import annotations

from typing import Any

from ..registry import Group
from ..wire import dict_of, short
from .driver import Run
from .live import NO_SESSION, Live

__all__ = [
    "GROUP",
    "RELATIVE_CWD",
    "SESSION_NEW",
    "SESSION_UNIQUE",
    "UNKNOWN_SESSION",
    "first_session",
    "relative_cwd",
    "second_session",
    "unknown_session",
]

GROUP = Group("agent", stage="main")
SESSION_NEW = GROUP.check(
    "session-new", "session/new with an absolute cwd and no MCP servers", proves=("INIT-015",)
)
SESSION_UNIQUE = GROUP.check(
    "session-unique", "two sessions get two different ids", proves=("SESS-002",), needs=("session",)
)
RELATIVE_CWD = GROUP.check(
    "relative-cwd", "session/new with a relative cwd is refused", proves=("SESS-028",)
)
UNKNOWN_SESSION = GROUP.check(
    "unknown-session",
    "a prompt for an unknown sessionId is answered with an error",
    proves=("SESS-029",),
)


async def unknown_session(live: Live, run: Run) -> None:
    if not run.alive and not await run.revive("it had died", live.timeout):
        return
    run.process.provoked.add(NO_SESSION)
    params = live.text_prompt(NO_SESSION, live.options.prompt)
    what = f"a prompt for {NO_SESSION!r}"
    await live.must_refuse(run, UNKNOWN_SESSION, "session/prompt", params, what, live.timeout)


async def first_session(live: Live, run: Run) -> str | None:
    """The session the main run works in, or None (the main stage is skipped with why)."""
    if not run.alive and not await run.revive("it had died", live.timeout):
        live.verdicts.skip_stage("main", "the agent could not be started again")
        return None
    params: dict[str, Any] = {"cwd": live.cwd, "mcpServers": []}
    answer = await live.call_authenticated(run, "session/new", params)
    if answer.needs_auth:
        reason = live.blocked("session/new")
        live.verdicts.skip_stage("main", reason)
        return None
    session_id = dict_of(answer.result).get("sessionId") if answer.ok else None
    if not isinstance(session_id, str) or not session_id:
        live.fail(SESSION_NEW, f"session/new: {answer.describe()}")
        live.verdicts.skip_stage("main", "no session: session/new failed")
        return None
    run.sessions.add(session_id)
    live.working_session[run.label] = session_id
    live.record(SESSION_NEW, "pass", f"sessionId {short(session_id, 40)}")
    return session_id


async def relative_cwd(live: Live, run: Run) -> None:
    if not run.alive and not await live.ready(run):
        return
    answer = await run.call(
        "session/new",
        {"cwd": "relative/dir", "mcpServers": []},
        live.timeout,
        owner=RELATIVE_CWD.key,
    )
    if answer.error is not None:
        live.record(RELATIVE_CWD, "pass", answer.describe())
    elif answer.ok:
        sid = dict_of(answer.result).get("sessionId")
        if isinstance(sid, str):
            run.sessions.add(sid)
        live.fail(RELATIVE_CWD, "session/new with cwd 'relative/dir' succeeded")
    else:
        live.fail(RELATIVE_CWD, answer.describe())


async def second_session(
    live: Live, run: Run, session_id: str
) -> tuple[str, dict[str, Any]] | None:
    """A second ``session/new``: (the session to try modes and options in, its result),
    or None when it failed."""
    second = await run.call("session/new", {"cwd": live.cwd, "mcpServers": []}, live.timeout)
    second_id = dict_of(second.result).get("sessionId") if second.ok else None
    if not isinstance(second_id, str):
        live.fail(SESSION_UNIQUE, f"second session/new: {second.describe()}")
        return None
    if second_id == session_id:
        live.fail(SESSION_UNIQUE, f"both calls returned {session_id!r}")
        return session_id, dict_of(second.result)
    live.record(SESSION_UNIQUE, "pass")
    run.sessions.add(second_id)
    return second_id, dict_of(second.result)
