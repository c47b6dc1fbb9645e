"""Cancellation, in the main run with ``--slow-prompt``: ``session/cancel`` ends the turn
with a ``cancelled`` result soon, its updates before it; the session takes a prompt after;
and a request sent while a turn runs is answered before the turn ends.

A turn that was over before the agent read the cancel is no failure of the cancel: the
checker sends a request right behind ``session/cancel`` and reads the order of the
answers (:func:`_crossed`), so what decides is the agent's own order, not a clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from ..._waits import within
from ...protocol.errors import ErrorCode
from ..registry import Group
from ..wire import WireEntry, dict_of
from .driver import Answer, Run
from .live import TURN_CONTENT_UPDATES, Live

__all__ = [
    "AFTER_CANCEL",
    "CANCEL",
    "CANCEL_PROMPT",
    "GROUP",
    "REQUEST_DURING_TURN",
    "cancel",
    "request_during_turn",
]

GROUP = Group("agent", stage="main")
CANCEL = GROUP.check(
    "cancel",
    "session/cancel ends the turn with a cancelled result, its updates before it",
    proves=("CANCEL-004", "CANCEL-005", "CANCEL-006"),
    needs=("slow-prompt",),
)
CANCEL_PROMPT = GROUP.check(
    "cancel-prompt",
    "a cancelled turn ends within a few seconds",
    proves=("CANCEL-003",),
    needs=("slow-prompt",),
)
REQUEST_DURING_TURN = GROUP.check(
    "request-during-turn",
    "a request sent while a turn runs is answered before the turn ends",
    proves=("RPC-013",),
    needs=("slow-prompt",),
)
AFTER_CANCEL = GROUP.check(
    "after-cancel",
    "the session takes a prompt after a cancelled turn",
    proves=("CANCEL-008",),
    needs=("slow-prompt",),
)

CROSSING = 0.1
"""When the agent answers nothing after ``session/cancel``: a turn answered this soon after the
cancel was sent is taken to have ended before the agent read it."""


@dataclass
class SlowTurn:
    """A ``--slow-prompt`` turn running in a fresh session."""

    session_id: str
    mark: int
    """Where the turn starts on the wire."""
    answer: asyncio.Future[Answer]
    """The prompt's answer, to come."""
    shown: WireEntry | None
    """Its first update, if one came."""
    sent_at: float


async def _slow_turn(live: Live, run: Run) -> SlowTurn | str:
    """A running ``--slow-prompt`` turn, or why there is none. A prompt refused outright
    is sent once more, in another fresh session: an agent that refuses now and then does
    not skip the checks that need a turn."""
    slow = live.options.slow_prompt
    if not slow:
        return "needs --slow-prompt TEXT (a prompt that takes a while)"
    retried = False
    while True:
        session_id = await live.fresh_session(run)
        if session_id is None:
            return "no session"
        mark = run.mark()
        turn = asyncio.ensure_future(
            run.call("session/prompt", live.text_prompt(session_id, slow), live.timeout)
        )
        sent_at = time.monotonic()
        shown = await run.wait_update(session_id, mark, live.turn_start_wait, TURN_CONTENT_UPDATES)
        if _prompt_response(live, run, mark) is None and not turn.done():
            return SlowTurn(session_id, mark, turn, shown, sent_at)
        answer = await turn
        if answer.error is None or answer.needs_auth or retried:
            return f"the slow prompt was over before the checker could act: {answer.describe()}"
        retried = True


def _prompt_response(live: Live, run: Run, since: int) -> Any:
    """The response to the first session/prompt sent from ``since`` on, if it came."""
    for entry in live.wire.of(run.label, since):
        if entry.direction == "to_agent" and entry.method == "session/prompt" and entry.is_request:
            return run.response_to((entry.message or {}).get("id"), since)
    return None


def _crossed(live: Live, run: Run, response: WireEntry, behind: Answer, took: float) -> bool:
    """Whether the turn's answer may have been written before the agent read the cancel.

    Judged by wire order: the answer to the request sent right behind the cancel
    proves the cancel was read; a turn answered before that proof may have crossed
    it. Only when that request got no answer at all does time decide (:data:`CROSSING`).
    """
    proof = run.response_to(behind.request_id) if behind.answered else None
    if proof is None:
        return took < CROSSING
    entries = live.wire.entries
    return entries.index(response) < entries.index(proof)


async def cancel(live: Live, run: Run) -> None:
    checks = (CANCEL, CANCEL_PROMPT, AFTER_CANCEL)
    if not live.verdicts.wants(*checks):
        return
    slow = await _slow_turn(live, run)
    if isinstance(slow, str):
        return live.skip(checks, slow)
    cancelled_at = time.monotonic()
    when = f"sent {cancelled_at - slow.sent_at:.2f} s into the turn, " + (
        "at its first update" if slow.shown is not None else "with no update seen yet"
    )
    await run.notify("session/cancel", {"sessionId": slow.session_id})
    # A request right behind the cancel: once the agent answers it, it has read the
    # cancel too (lines are read in order), so a turn answered after that answer had
    # the cancel in hand. A turn answered before it may have crossed the cancel.
    behind = asyncio.ensure_future(run.ping(live.cwd))
    with contextlib.suppress(asyncio.TimeoutError):
        await within(asyncio.shield(slow.answer), live.grace)
    answer = await slow.answer
    pinged = await behind
    response = _prompt_response(live, run, slow.mark)
    took = (response.time if response is not None else time.monotonic()) - cancelled_at
    reason = dict_of(answer.result).get("stopReason") if answer.ok else None
    if response is not None and _crossed(live, run, response, pinged, took):
        # Unless it says it is about the cancel (stopReason cancelled, or -32800).
        if reason != "cancelled" and answer.code != ErrorCode.REQUEST_CANCELLED:
            return live.skip(
                checks,
                f"the turn was already over: {answer.describe() if not answer.ok else reason} "
                f"was answered before the agent read session/cancel "
                f"({took * 1000:.0f} ms after it was sent)",
            )
    if answer.problem is not None:
        live.fail(CANCEL, f"after session/cancel ({when}): {answer.problem}", "CANCEL-004")
    elif answer.error is not None:
        live.fail(
            CANCEL, f"the turn ended with {answer.describe()} (must be a result)", "CANCEL-005"
        )
    elif reason != "cancelled":
        live.fail(CANCEL, f"stopReason {reason!r} after session/cancel", "CANCEL-004")
    elif response is not None:
        late = await live.late_updates(run, slow.session_id, live.wire.entries.index(response))
        if late:
            live.fail(
                CANCEL,
                f"{len(late)} update(s) after the cancelled response: {', '.join(late[:3])}",
                "CANCEL-006",
            )
        else:
            live.record(CANCEL, "pass", f"cancelled, {took:.2f} s after session/cancel")
    if answer.answered and took <= live.grace:
        live.record(CANCEL_PROMPT, "pass", f"answered {took:.2f} s after session/cancel")
    else:
        live.fail(CANCEL_PROMPT, f"not answered within {live.grace:g} s of session/cancel")
    if not answer.answered:
        return live.skip((AFTER_CANCEL,), "the cancelled turn never ended")
    if live.prompt_refused or not run.alive:
        return live.skip((AFTER_CANCEL,), "--prompt is refused" if run.alive else "the agent died")
    live.judge_turn(AFTER_CANCEL, await live.prompt(run, slow.session_id))


async def request_during_turn(live: Live, run: Run) -> None:
    """``session/new`` while a slow turn runs: answered before the turn ends (RPC-013).

    The turn is cancelled afterwards; an agent that takes requests one at a time
    answers only once the turn is over, which is what this check is about.
    """
    if not live.verdicts.wants(REQUEST_DURING_TURN):
        return
    slow = await _slow_turn(live, run)
    if isinstance(slow, str):
        return live.skip((REQUEST_DURING_TURN,), slow)
    params = {"cwd": live.cwd, "mcpServers": []}
    during = await run.call("session/new", params, live.quick)
    ended = _prompt_response(live, run, slow.mark)
    await run.notify("session/cancel", {"sessionId": slow.session_id})
    await slow.answer
    response = run.response_to(during.request_id, slow.mark)
    sid = dict_of((response.message or {}).get("result")).get("sessionId") if response else None
    if isinstance(sid, str):
        run.sessions.add(sid)  # it may have come late, after the turn
    entries = live.wire.entries
    if (
        during.answered
        and response is not None
        and (ended is None or entries.index(response) < entries.index(ended))
    ):
        live.record(REQUEST_DURING_TURN, "pass", f"session/new answered in {during.seconds:.2f} s")
    elif ended is not None:
        live.record(
            REQUEST_DURING_TURN, "skip", "the slow prompt ended before session/new was answered"
        )
    else:
        live.fail(
            REQUEST_DURING_TURN,
            f"session/new sent while a turn ran: {during.describe()} (the agent answers "
            "other requests only once the turn is over?)",
        )
