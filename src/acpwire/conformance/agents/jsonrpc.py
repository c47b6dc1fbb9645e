"""The agent's JSON-RPC manners, tried live in the main run: unknown methods and
extensions, string ids, notifications it must ignore, a line that is not JSON, params of
the wrong shape, and ``$/cancel_request``.

Each request sent on purpose is owned by its check (``owner``), so the checks over the
recording leave its answers alone (or, for those that do not count the answers they
provoke, only judge their shape: :data:`.wire_checks.SELF_JUDGED`).
"""

from __future__ import annotations

import asyncio

from ...protocol.errors import ErrorCode
from ..registry import Group
from ..wire import as_dict, dict_of, short
from .driver import Run
from .live import LATE_WATCH, TURN_CONTENT_UPDATES, Live

__all__ = [
    "CANCEL_REQUEST",
    "EXT_NOTIFICATION",
    "EXT_REQUEST",
    "EXT_REQUEST_CODE",
    "GROUP",
    "INVALID_PARAMS",
    "INVALID_PARAMS_CODE",
    "MALFORMED_LINE",
    "MALFORMED_LINE_ERROR",
    "PROTOCOL_NOTIFICATION",
    "STRING_IDS",
    "UNKNOWN_METHOD",
    "cancel_request_quick",
    "cancel_request_turn",
    "invalid_params",
    "manners",
    "string_ids",
]

GROUP = Group("agent", stage="main")
UNKNOWN_METHOD = GROUP.check(
    "unknown-method", "an unknown method is answered -32601", proves=("RPC-006",)
)
EXT_REQUEST = GROUP.check("ext-request", "an unknown _ request is answered", proves=("EXT-003",))
EXT_REQUEST_CODE = GROUP.check(
    "ext-request-code", "an unknown _ request is answered -32601", proves=("EXT-004",)
)
STRING_IDS = GROUP.check(
    "string-ids", "a string request id comes back as the same string", proves=("RPC-003",)
)
EXT_NOTIFICATION = GROUP.check(
    "ext-notification", "an unknown _ notification is ignored", proves=("EXT-006",)
)
PROTOCOL_NOTIFICATION = GROUP.check(
    "protocol-notification", "an unknown $/ notification is ignored", proves=("RCANCEL-003",)
)
MALFORMED_LINE = GROUP.check(
    "malformed-line", "the agent survives a line that is not JSON", proves=("RPC-009",)
)
MALFORMED_LINE_ERROR = GROUP.check(
    "malformed-line-error",
    "a line that is not JSON is answered -32700 with id null, or not at all",
    proves=("JSONRPC-001", "RPC-010"),
)
INVALID_PARAMS = GROUP.check(
    "invalid-params", "params of the wrong shape are answered with an error", proves=("RPC-007",)
)
INVALID_PARAMS_CODE = GROUP.check(
    "invalid-params-code", "params of the wrong shape are answered -32602", proves=("RPC-008",)
)
CANCEL_REQUEST = GROUP.check(
    "cancel-request",
    "a request cancelled with $/cancel_request still gets exactly one answer",
    proves=("RCANCEL-001",),
)

NO_SUCH_METHOD = "acpwire_check/unknown_method"
NO_SUCH_EXT_METHOD = "_acpwire_check/unknown_request"
NOT_JSON = b'{"jsonrpc": "2.0", "id": 999, "method": this is not JSON'


async def manners(live: Live, run: Run) -> None:
    """Unknown methods, notifications to ignore and a non-JSON line."""
    answer = await run.call(NO_SUCH_METHOD, {}, live.quick, owner=UNKNOWN_METHOD.key)
    run.ping_works = answer.answered
    if answer.code == ErrorCode.METHOD_NOT_FOUND:
        live.record(UNKNOWN_METHOD, "pass")
    else:
        live.fail(UNKNOWN_METHOD, f"{NO_SUCH_METHOD}: {answer.describe()}")
    if not run.alive and not await live.ready(run):
        return live.verdicts.skip_stage("main", "the agent could not be started again")

    answer = await run.call(NO_SUCH_EXT_METHOD, {}, live.quick, owner=EXT_REQUEST.key)
    if answer.answered:
        live.record(EXT_REQUEST, "pass", answer.describe())
        if answer.code == ErrorCode.METHOD_NOT_FOUND:
            live.record(EXT_REQUEST_CODE, "pass")
        else:
            live.fail(EXT_REQUEST_CODE, f"{NO_SUCH_EXT_METHOD}: {answer.describe()}")
    else:
        live.fail(EXT_REQUEST, answer.describe())
        live.record(EXT_REQUEST_CODE, "skip", "not answered (see ext-request)")
    for check, method in (
        (EXT_NOTIFICATION, "_acpwire_check/notice"),
        (PROTOCOL_NOTIFICATION, "$/acpwire_check_notice"),
    ):
        if not run.alive and not await live.ready(run):
            return live.verdicts.skip_stage("main", "the agent could not be started again")
        await run.notify(method, {"n": 1})
        ping = await run.ping(live.cwd)
        if ping.answered:
            live.record(check, "pass", "later requests still answered")
        else:
            live.fail(check, f"after {method}: {ping.describe()}")
    await _malformed_line(live, run)


async def _malformed_line(live: Live, run: Run) -> None:
    if not run.alive and not await live.ready(run):
        return
    mark = run.mark()
    await run.send_raw(NOT_JSON)
    ping = await run.ping(live.cwd)
    # What the agent wrote in reply to the line: a response with id null, no id, 999,
    # or one repeating the id of a request it already answered.
    answered_before = {
        str((e.message or {}).get("id")) for e in live.wire.of(run.label, 0, mark) if e.is_response
    }
    replies = [
        e
        for e in live.wire.of(run.label, mark)
        if e.is_response
        and live.wire.owner(e) is None
        and (
            (e.message or {}).get("id") is None
            or (e.message or {}).get("id") == 999
            or str((e.message or {}).get("id")) in answered_before
        )
    ]
    for e in replies:
        e.owner = MALFORMED_LINE_ERROR.key
    if ping.answered:
        live.record(MALFORMED_LINE, "pass", "later requests still answered")
    else:
        live.fail(MALFORMED_LINE, f"after a non-JSON line: {ping.describe()}")
    if not replies:
        live.record(MALFORMED_LINE_ERROR, "pass", "not answered (allowed)")
        return
    first = replies[0].message or {}
    code = dict_of(first.get("error")).get("code")
    shown = f"answered {short(replies[0].raw.decode('utf-8', 'replace'), 120)}"
    if "id" not in first or first["id"] is not None:
        # JSON-RPC: an id that could not be read is answered with id null, never a guess.
        live.fail(MALFORMED_LINE_ERROR, f"{shown}: the id must be null", "JSONRPC-001")
    elif code != ErrorCode.PARSE_ERROR:
        live.fail(MALFORMED_LINE_ERROR, f"{shown}: the code should be -32700", "RPC-010")
    else:
        live.record(MALFORMED_LINE_ERROR, "pass", "answered -32700 with id null")


async def string_ids(live: Live, run: Run) -> None:
    if not run.alive and not await live.ready(run):
        return
    request_id, mark = await run.raw_request(
        "session/new", {"cwd": live.cwd, "mcpServers": []}, STRING_IDS.key
    )
    reply = await run.wait_answer(request_id, mark, live.timeout)
    if reply is None:
        live.fail(STRING_IDS, f"session/new with id {request_id!r} never answered")
        return
    sid = dict_of((reply.message or {}).get("result")).get("sessionId")
    if isinstance(sid, str):
        run.sessions.add(sid)
    got = (reply.message or {}).get("id")
    if got == request_id:
        live.record(STRING_IDS, "pass", f"id {request_id!r} echoed")
    else:
        live.fail(STRING_IDS, f"request id {request_id!r} answered with id {got!r}")


async def invalid_params(live: Live, run: Run) -> None:
    if not run.alive and not await live.ready(run):
        return
    answer = await run.call(
        "session/new", {"cwd": 42, "mcpServers": []}, live.quick, owner=INVALID_PARAMS.key
    )
    if answer.error is not None:
        live.record(INVALID_PARAMS, "pass", answer.describe())
        if answer.code == ErrorCode.INVALID_PARAMS:
            live.record(INVALID_PARAMS_CODE, "pass")
        else:
            live.fail(INVALID_PARAMS_CODE, f"session/new with cwd 42: {answer.describe()}")
        return
    if answer.ok:
        sid = dict_of(answer.result).get("sessionId")
        if isinstance(sid, str):
            run.sessions.add(sid)
        live.fail(INVALID_PARAMS, "session/new with cwd 42 succeeded")
    else:
        live.fail(INVALID_PARAMS, f"session/new with cwd 42: {answer.describe()}")
    live.record(INVALID_PARAMS_CODE, "skip", "no error to judge (see invalid-params)")


async def cancel_request_quick(live: Live, run: Run) -> None:
    """``$/cancel_request`` right after a request: whatever happens, one answer."""
    if not run.alive and not await live.ready(run):
        return
    request_id, mark = await run.raw_request(
        "session/new", {"cwd": live.cwd, "mcpServers": []}, CANCEL_REQUEST.key
    )
    await run.notify("$/cancel_request", {"requestId": request_id})
    first = await run.wait_answer(request_id, mark, live.timeout)
    if first is not None:
        sid = dict_of((first.message or {}).get("result")).get("sessionId")
        if isinstance(sid, str):
            run.sessions.add(sid)
    live.cancel_request_problems = await _one_answer(run, request_id, mark)


async def _one_answer(run: Run, request_id: str, mark: int) -> list[str]:
    """Problems with the answers to a cancelled request, watched for LATE_WATCH s more."""
    if not run.raw_answers(request_id, mark):
        return [f"request {request_id!r} never answered after $/cancel_request"]
    await asyncio.sleep(LATE_WATCH)  # a second answer would come now
    answers = run.raw_answers(request_id, mark)
    if len(answers) > 1:
        return [f"request {request_id!r} answered {len(answers)} times after $/cancel_request"]
    return []


async def cancel_request_turn(live: Live, run: Run) -> None:
    """``$/cancel_request`` for a running slow turn: still exactly one answer.

    Judged with the quick probe's result (a request cancelled at once); the slow turn
    is tried only when that went well and a ``--slow-prompt`` is given.
    """
    problems = live.cancel_request_problems
    if problems is None:
        return  # the quick probe never ran: its skip stands
    slow = live.options.slow_prompt
    session_id = await live.fresh_session(run) if slow and not problems else None
    if slow and session_id is not None:
        request_id, mark = await run.raw_request(
            "session/prompt", live.text_prompt(session_id, slow), CANCEL_REQUEST.key
        )
        await run.wait_update(session_id, mark, live.turn_start_wait, TURN_CONTENT_UPDATES)
        if not run.raw_answers(request_id, mark):  # still running: cancel it
            await run.notify("$/cancel_request", {"requestId": request_id})
            if await run.wait_answer(request_id, mark, live.grace) is None:
                # Support for $/cancel_request is optional: end the turn the usual way.
                await run.notify("session/cancel", {"sessionId": session_id})
                await run.wait_answer(request_id, mark, live.timeout)
            answers = run.raw_answers(request_id, mark)
            error = as_dict((answers[0].message or {}).get("error")) if answers else None
            if error is not None and error.get("code") != ErrorCode.REQUEST_CANCELLED:
                problems = [
                    f"a prompt cancelled with $/cancel_request ended with error "
                    f"{error.get('code')}, not a result or -32800"
                ]
        problems = problems or await _one_answer(run, request_id, mark)
    live.verdicts.verdict(CANCEL_REQUEST, problems, "one answer each time")
