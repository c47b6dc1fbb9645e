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
import time
from typing import Any

from ..protocol.errors import ErrorCode
from .client_scene import (
    GOES_ON,
    PLANNED_FAILURE,
    UNSUPPORTED_VERSION,
    Scenario,
    Scene,
    answer_text,
    is_answer,
)
from .client_tool_scenarios import (
    files,
    permission_cancel,
    terminal_flood,
    terminal_limit,
    terminal_orphan,
    terminal_sandbox,
)
from .registry import NEEDS
from .wire import WireEntry, as_dict, dict_of, short

__all__ = ["BASELINE", "SCENARIOS"]

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
        scene.ok("client-unknown-request", answer_text(answer))

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
    first = await agent.wait_for(lambda e: is_answer(e, rid_int), quick, since)
    if first is None:
        scene.fail("client-cancel-request", f"no answer within {quick:g} s")
    else:
        after = agent.wire.entries.index(first) + 1
        # a second answer would come right behind the first: watch briefly
        second = await agent.wait_for(lambda e: is_answer(e, rid_int), 0.5, after)
        error = dict_of((first.message or {}).get("error"))
        if second is not None:
            scene.fail("client-cancel-request", "answered twice")
        elif error and error.get("code") != ErrorCode.REQUEST_CANCELLED:
            scene.fail(
                "client-cancel-request",
                f"answered error {error.get('code')!r} (a result or -32800 expected)",
            )
        else:
            scene.ok("client-cancel-request", answer_text(first))
    await scene.end_tool(tool)
    await scene.end_turn(prompt)


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
    answer = await scene.agent.wait_for(lambda e: is_answer(e, rid), scene.options.timeout, since)
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


EARLY_WORDS = "acp check said this before session/new was answered."
"""The message chunk the agent sends before answering ``session/new`` (``early-updates``)."""


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
            scene.fail("odd-order", f"after {what}: {await scene.describe_gone()}")
        else:
            scene.skip("odd-order", "the client sent no session/prompt")
        scene.skip("early-updates", "no turn (see odd-order)")
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
    _judge_early_updates(scene)


def _judge_early_updates(scene: Scene) -> None:
    """The early message chunk is shown wherever the client shows the later ones.

    The checker sees what the client kept only through what it prints: a client that
    shows the turn's later message (:data:`GOES_ON`) and not the early one dropped it.
    """
    key = "early-updates"
    survived = scene.v.results.get("odd-order")
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

    async def slow_session() -> None:
        await scene.agent.wait_request("session/prompt", scene.options.slow_session)

    new = await scene.open_session(early=slow_session)
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
    Scenario("odd-order", ("odd-order", "early-updates"), _odd_order),
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
        files,
    ),
    Scenario("terminal-limit", ("terminal-output-limit",), terminal_limit),
    Scenario("terminal-flood", ("terminal-flood",), terminal_flood),
    Scenario(
        "terminal-orphan",
        ("terminal-unknown-id", "terminal-kill", "terminal-orphan"),
        terminal_orphan,
    ),
    Scenario("terminal-sandbox", ("terminal-cwd-outside", "terminal-env"), terminal_sandbox),
    Scenario("permission-cancel", ("permission-cancel", "updates-after-cancel"), permission_cancel),
)
"""Every scenario, the baseline first, with the checks each judges."""
