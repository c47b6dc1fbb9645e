"""Odd and hostile agents, each in a scenario of its own: lines that are not JSON-RPC, a
40 MB line, a 20 MB request, updates of kinds nobody knows or in an odd order, a flood on
stderr, a slow ``initialize``, a version the client does not speak, error answers, and an
agent that dies during the turn.

Most of them are judged by the survival rule (:mod:`.scene`): after the odd thing the
client still answers a permission request and ends its turn the way it ended the
baseline's.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from ..._waits import within
from ...protocol.errors import ErrorCode
from ..registry import Check, Group
from ..wire import WireEntry
from .scene import GOES_ON, PLANNED_FAILURE, UNSPOKEN_VERSION, Playbook, Scene, is_answer

__all__ = [
    "AGENT_EXIT",
    "AGENT_EXIT_GRANDCHILD",
    "EARLY_UPDATES",
    "GARBAGE_LINES",
    "GROUP",
    "HUGE_MESSAGE",
    "LATE_UPDATES",
    "ODD_ORDER",
    "OVERSIZE_LINE",
    "PLAYS",
    "PROMPT_ERROR",
    "SESSION_NEW_ERROR",
    "SLOW_INITIALIZE",
    "STDERR_FLOOD",
    "UNKNOWN_UPDATES",
    "UNSUPPORTED_VERSION",
]

GROUP = Group("client", stage="scenario")
_TURN = ("client-prompt",)
GARBAGE_LINES = GROUP.check(
    "garbage-lines",
    "lines that are not JSON, not UTF-8 or not objects do not end the turn",
    proves=("CLIENT-001",),
    needs=_TURN,
)
OVERSIZE_LINE = GROUP.check(
    "oversize-line", "a line of 40 MB does not end the turn", proves=("CLIENT-003",), needs=_TURN
)
HUGE_MESSAGE = GROUP.check(
    "huge-message",
    "a 20 MB permission request is read and answered, and the turn completes",
    proves=("CLIENT-004",),
    needs=_TURN,
)
UNKNOWN_UPDATES = GROUP.check(
    "unknown-updates",
    "updates of unknown kinds, sessions, content and tool calls do not end the turn",
    proves=("CLIENT-002",),
    needs=_TURN,
)
ODD_ORDER = GROUP.check(
    "odd-order",
    "updates before session/new's answer and a tool call's update before the call are taken",
    proves=("CLIENT-002",),
    needs=_TURN,
)
EARLY_UPDATES = GROUP.check(
    "early-updates",
    "a message chunk sent before session/new's answer is shown like the later ones",
    proves=("CLIENT-013",),
    needs=_TURN,
)
LATE_UPDATES = GROUP.check(
    "late-updates",
    "updates after the turn's answer do not upset the client",
    proves=("CLIENT-002",),
    needs=_TURN,
)
STDERR_FLOOD = GROUP.check(
    "stderr-flood",
    "10 MB on the agent's stderr do not block the agent or the client",
    proves=("CLIENT-006",),
    needs=_TURN,
)
SLOW_INITIALIZE = GROUP.check(
    "slow-initialize", "an initialize answered after 3 s is waited for", proves=("CLIENT-007",)
)
UNSUPPORTED_VERSION = GROUP.check(
    "unsupported-version",
    "an agent answering a version the client does not speak gets no session; the client "
    "closes and says why",
    proves=("INIT-006", "INIT-010"),
)
PROMPT_ERROR = GROUP.check(
    "prompt-error",
    "an error answer to session/prompt is shown and the run fails",
    proves=("CLIENT-008",),
    needs=_TURN,
)
SESSION_NEW_ERROR = GROUP.check(
    "session-new-error",
    "an error answer to session/new is shown and the run fails",
    proves=("CLIENT-008",),
)
AGENT_EXIT = GROUP.check(
    "agent-exit",
    "the agent exiting during a turn ends the client's run with an error within seconds",
    proves=("CLIENT-005",),
    needs=_TURN,
)
AGENT_EXIT_GRANDCHILD = GROUP.check(
    "agent-exit-grandchild",
    "the same while a grandchild process holds the agent's stdout open",
    proves=("CLIENT-005",),
    needs=_TURN,
)

PLAYS = Playbook()

# ---------------------------------------------------------------------- hostile agents


@PLAYS.scenario("garbage", GARBAGE_LINES)
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
    await scene.survive(GARBAGE_LINES, "12 lines that are not JSON-RPC messages", prompt)


_FILL = "<filler>"


def _split(message: dict[str, Any]) -> tuple[bytes, bytes, bytes]:
    """``message`` as JSON cut where its :data:`_FILL` string goes, and whole as recorded."""
    text = json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":"))
    prefix, suffix = text.split(_FILL)
    return prefix.encode(), suffix.encode(), text.encode()


@PLAYS.scenario("oversize", OVERSIZE_LINE)
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
        await scene.survive(OVERSIZE_LINE, what, prompt)
    else:
        await scene.fail_silent(
            OVERSIZE_LINE,
            what,
            f"the client stopped reading the agent's output during {what} "
            f"({scene.options.timeout:g} s)",
        )


@PLAYS.scenario("huge", HUGE_MESSAGE)
async def _huge(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    size = scene.options.huge_bytes
    what = f"a {size / 1e6:g} MB permission request"
    tool = await scene.tool_call("acp check: a tool call with a huge input", "edit")
    rid = scene.agent.new_id()
    scene.agent.wire.claim(scene.scenario.name, rid, HUGE_MESSAGE.key)
    params = scene.permission_params(tool)
    params["toolCall"]["rawInput"] = {"content": _FILL}
    prefix, suffix, record = _split(
        {"id": rid, "method": "session/request_permission", "params": params}
    )
    since = len(scene.agent.wire.entries)
    count = max(1, size - len(prefix) - len(suffix))
    await scene.agent.send_big_line(prefix, b"x", count, suffix, record=record)
    answer = await scene.agent.wait_for(lambda e: is_answer(e, rid), scene.options.timeout, since)
    if answer is None:
        problem = (
            await scene.describe_gone()
            if scene.gone()
            else f"no answer within {scene.options.timeout:g} s"
        )
        scene.fail(HUGE_MESSAGE, f"{what}: {problem}")
        return
    await scene.end_tool(tool)
    await scene.survive(HUGE_MESSAGE, f"{what} (answered)", prompt)


@PLAYS.scenario("unknown-updates", UNKNOWN_UPDATES)
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
        UNKNOWN_UPDATES, "updates of unknown kinds, content, tool calls and sessions", prompt
    )


EARLY_WORDS = "acp check said this before session/new was answered."
"""The message chunk the agent sends before answering ``session/new`` (``early-updates``)."""


@PLAYS.scenario("odd-order", ODD_ORDER, EARLY_UPDATES)
async def _odd_order(scene: Scene) -> None:
    async def early() -> None:
        await scene.say(EARLY_WORDS)
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
            scene.fail(ODD_ORDER, f"after {what}: {await scene.describe_gone()}")
        else:
            scene.skip(ODD_ORDER, "the client sent no session/prompt")
        scene.skip(EARLY_UPDATES, "no turn (see odd-order)")
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
        ODD_ORDER, "updates before session/new's answer and before their tool call", prompt
    )
    _judge_early_updates(scene)


def _judge_early_updates(scene: Scene) -> None:
    """The early message chunk is shown wherever the client shows the later ones.

    The checker sees what the client kept only through what it prints: a client that
    shows the turn's later message (:data:`GOES_ON`) and not the early one dropped it.
    """
    key = EARLY_UPDATES
    survived = scene.v.result(ODD_ORDER)
    if survived is not None and survived.status == "fail":
        scene.skip(key, "the client did not get through the turn (see odd-order)")
        return
    shown = scene.client.output()
    if GOES_ON not in shown:
        scene.skip(key, "the client prints no agent message, so what it kept cannot be seen")
    elif EARLY_WORDS not in shown:
        scene.fail(
            key,
            "a message chunk sent before session/new's answer was not shown, later ones "
            "were: the client dropped updates that came before it knew the session",
        )
    else:
        scene.ok(key, "the early message chunk was shown")


@PLAYS.scenario("late-updates", LATE_UPDATES)
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
        problem = await scene.probe(LATE_UPDATES)
    if problem is not None:
        scene.fail(LATE_UPDATES, f"after {what}: {problem}")
    else:
        scene.ok(LATE_UPDATES, f"survived {what}")


@PLAYS.scenario("stderr-flood", STDERR_FLOOD)
async def _stderr_flood(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    size = scene.options.stderr_flood_bytes
    output = await scene.agent.flood_stderr(size)
    if not await scene.agent.written(output, scene.options.timeout):
        scene.fail(
            STDERR_FLOOD,
            f"{size / 1e6:g} MB on the agent's stderr could not be written within "
            f"{scene.options.timeout:g} s: the client does not read the agent's stderr",
        )
        return
    await scene.survive(STDERR_FLOOD, f"{size / 1e6:g} MB on the agent's stderr", prompt)


@PLAYS.scenario("slow-initialize", SLOW_INITIALIZE)
async def _slow_initialize(scene: Scene) -> None:
    init = await scene.wait_initialize()
    if init is None:
        return
    delay = scene.options.slow_initialize
    started = time.monotonic()
    try:
        await within(scene.agent.input_ended.wait(), delay)
    except asyncio.TimeoutError:
        pass
    if scene.gone():
        scene.fail(
            SLOW_INITIALIZE,
            f"the client gave up after {time.monotonic() - started:.1f} s: "
            f"{await scene.describe_gone()}",
        )
        return

    async def slow_session() -> None:
        await scene.agent.wait_request("session/prompt", scene.options.slow_session)

    new = await scene.open_session(early=slow_session)
    if new is None:
        return
    scene.ok(SLOW_INITIALIZE, f"waited {delay:g} s for initialize")
    prompt = await scene.agent.wait_request("session/prompt", scene.options.quick_timeout)
    if prompt is not None:
        await scene.end_turn(prompt)


@PLAYS.scenario("unsupported-version", UNSUPPORTED_VERSION)
async def _unsupported_version(scene: Scene) -> None:
    init = await scene.wait_initialize()
    if init is None:
        return

    def session_call(e: WireEntry) -> bool:
        return e.direction == "to_agent" and (e.method or "").startswith("session/")

    early = next((e for e in scene.agent.wire.of(scene.scenario.name) if session_call(e)), None)
    if early is not None:
        scene.skip(
            UNSUPPORTED_VERSION,
            f"the client sent {early.method} before initialize was answered (see client-order)",
        )
        return
    since = len(scene.agent.wire.entries)
    await scene.agent.answer(init, scene.init_result(protocolVersion=UNSPOKEN_VERSION))
    grace = scene.options.grace
    asked = await scene.agent.wait_for(session_call, grace, since)
    if asked is not None:
        scene.fail(
            UNSUPPORTED_VERSION,
            f"sent {asked.method} after the agent answered protocolVersion {UNSPOKEN_VERSION}",
            "INIT-006",
        )
        return
    closed = scene.gone()
    status = await scene.client.wait(grace)
    output = scene.client.output().lower()
    told = "version" in output or str(UNSPOKEN_VERSION) in output
    if not closed and status is None:
        scene.fail(
            UNSUPPORTED_VERSION,
            f"the connection was still open {grace:g} s after protocolVersion {UNSPOKEN_VERSION}",
            "INIT-010",
        )
    elif not told:
        scene.fail(
            UNSUPPORTED_VERSION,
            "the client closed without a word about the version in its output",
            "INIT-010",
        )
    else:
        scene.ok(UNSUPPORTED_VERSION, f"closed and said why ({scene.client.describe_end()})")


async def _judge_error_answer(scene: Scene, key: Check, what: str) -> None:
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


@PLAYS.scenario("prompt-error", PROMPT_ERROR)
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
    await _judge_error_answer(scene, PROMPT_ERROR, "session/prompt")


@PLAYS.scenario("session-new-error", SESSION_NEW_ERROR)
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
    await _judge_error_answer(scene, SESSION_NEW_ERROR, "session/new")


async def _agent_exit(scene: Scene, key: Check, grandchild: bool) -> None:
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


@PLAYS.scenario("agent-exit", AGENT_EXIT)
async def _agent_exit_plain(scene: Scene) -> None:
    await _agent_exit(scene, AGENT_EXIT, False)


@PLAYS.scenario("agent-exit-grandchild", AGENT_EXIT_GRANDCHILD)
async def _agent_exit_grandchild(scene: Scene) -> None:
    await _agent_exit(scene, AGENT_EXIT_GRANDCHILD, True)
