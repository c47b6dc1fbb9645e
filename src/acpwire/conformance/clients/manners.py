"""The client's handshake and JSON-RPC manners, in scenarios of their own: the *baseline*
(a normal handshake and turn, which every other scenario is compared with), unknown
requests and notifications, string ids, ``$/cancel_request``, and ``_meta`` everywhere.
"""

from __future__ import annotations

from typing import Any, Literal

from ...protocol.errors import ErrorCode
from ..registry import NEEDS, Check, Group
from ..wire import WireEntry, as_dict, dict_of, short
from .scene import Playbook, Scene, answer_text, is_answer

__all__ = [
    "BASELINE",
    "CLIENT_CANCEL_REQUEST",
    "CLIENT_EXT_NOTIFICATION",
    "CLIENT_EXT_REQUEST",
    "CLIENT_EXT_REQUEST_CODE",
    "CLIENT_INFO",
    "CLIENT_INITIALIZE",
    "CLIENT_META",
    "CLIENT_PROTOCOL_NOTIFICATION",
    "CLIENT_STRING_IDS",
    "CLIENT_UNKNOWN_REQUEST",
    "GROUP",
    "PLAYS",
]

GROUP = Group("client", stage="scenario")
CLIENT_INITIALIZE = GROUP.check(
    "client-initialize",
    "initialize asks for an integer protocol version and states the client's capabilities",
    proves=("INIT-007", "INIT-013"),
)
CLIENT_INFO = GROUP.check(
    "client-info", "initialize names the client (clientInfo)", proves=("INIT-002",)
)
CLIENT_EXT_REQUEST = GROUP.check(
    "client-ext-request",
    "an unknown _ request from the agent is answered",
    proves=("EXT-003",),
    needs=("client-prompt",),
)
CLIENT_EXT_REQUEST_CODE = GROUP.check(
    "client-ext-request-code",
    "an unknown _ request from the agent is answered -32601",
    proves=("EXT-004",),
    needs=("client-prompt",),
)
CLIENT_UNKNOWN_REQUEST = GROUP.check(
    "client-unknown-request",
    "a request for a method the client does not have is answered",
    proves=("RPC-005",),
    needs=("client-prompt",),
)
CLIENT_EXT_NOTIFICATION = GROUP.check(
    "client-ext-notification",
    "an unknown _ notification is ignored",
    proves=("EXT-006",),
    needs=("client-prompt",),
)
CLIENT_PROTOCOL_NOTIFICATION = GROUP.check(
    "client-protocol-notification",
    "an unknown $/ notification is ignored",
    proves=("RCANCEL-003",),
    needs=("client-prompt",),
)
CLIENT_STRING_IDS = GROUP.check(
    "client-string-ids",
    "a request with a string id is answered with the same string",
    proves=("RPC-003",),
    needs=("client-prompt",),
)
CLIENT_CANCEL_REQUEST = GROUP.check(
    "client-cancel-request",
    "a request cancelled with $/cancel_request still gets exactly one answer",
    proves=("RCANCEL-001",),
    needs=("client-prompt",),
)
CLIENT_META = GROUP.check(
    "client-meta",
    "_meta on updates, content, tool calls and requests is accepted",
    proves=("EXT-008",),
    needs=("client-prompt",),
)

PLAYS = Playbook()

# ---------------------------------------------------------------------- the baseline


@PLAYS.scenario("baseline", CLIENT_INITIALIZE, CLIENT_INFO)
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
    scene.v.verdict(CLIENT_INITIALIZE, problems, f"protocolVersion {version}")
    info = dict_of(params.get("clientInfo"))
    if isinstance(info.get("name"), str) and isinstance(info.get("version"), str):
        scene.ok(CLIENT_INFO, f"{info['name']} {info['version']}")
    else:
        scene.fail(CLIENT_INFO, f"clientInfo is {short(params.get('clientInfo'))}")
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


async def _ask(
    scene: Scene, check: Check, method: str, params: dict[str, Any], what: str
) -> WireEntry | Literal[False] | None:
    """``method`` asked of the client for ``check``: the answer; None (``check`` failed) when
    none came in time; False when the client went away (the rest of the scenario is skipped)."""
    quick = scene.options.quick_timeout
    answer = await scene.agent.request(method, params, quick, owner=check.key)
    if answer is not None:
        return answer
    if scene.gone():
        scene.fail(check, f"after {what}: {await scene.describe_gone()}")
        scene.skip_rest(f"the client went away at {what}")
        return False
    scene.fail(check, f"no answer within {quick:g} s")
    return None


@PLAYS.scenario(
    "extensions",
    CLIENT_EXT_REQUEST,
    CLIENT_EXT_REQUEST_CODE,
    CLIENT_UNKNOWN_REQUEST,
    CLIENT_EXT_NOTIFICATION,
    CLIENT_PROTOCOL_NOTIFICATION,
    CLIENT_STRING_IDS,
    CLIENT_CANCEL_REQUEST,
)
async def _extensions(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    agent, quick = scene.agent, scene.options.quick_timeout
    params = {"question": "answered?"}
    answer = await _ask(scene, CLIENT_EXT_REQUEST, "_acp_check/ask", params, "an unknown _ request")
    if answer is False:
        return
    if answer is None:
        scene.skip(CLIENT_EXT_REQUEST_CODE, "the _ request was not answered")
    else:
        scene.ok(CLIENT_EXT_REQUEST, "answered")
        error = dict_of((answer.message or {}).get("error"))
        if error.get("code") == ErrorCode.METHOD_NOT_FOUND:
            scene.ok(CLIENT_EXT_REQUEST_CODE, "answered -32601")
        elif error:
            scene.fail(CLIENT_EXT_REQUEST_CODE, f"answered {error.get('code')!r}")
        else:
            scene.fail(CLIENT_EXT_REQUEST_CODE, "answered with a result")

    what = "an unknown method"
    answer = await _ask(scene, CLIENT_UNKNOWN_REQUEST, "acp_check/no_such_method", {}, what)
    if answer is False:
        return
    if answer is not None:
        scene.ok(CLIENT_UNKNOWN_REQUEST, answer_text(answer))

    for check, method in (
        (CLIENT_EXT_NOTIFICATION, "_acp_check/note"),
        (CLIENT_PROTOCOL_NOTIFICATION, "$/acp_check_note"),
    ):
        since = len(agent.wire.entries)
        await agent.notify(method, {"note": "ignore me"})
        problem = await scene.probe(check, announce=False)
        answered = [
            e
            for e in agent.wire.of(scene.scenario.name, since)
            if e.direction == "to_agent" and e.is_response and (e.message or {}).get("id") is None
        ]
        for e in answered:
            e.owner = check.key
        if problem is not None:
            scene.fail(check, f"after {method}: {problem}")
            if scene.gone():
                scene.skip_rest(f"the client went away at {method}")
                return
        elif answered:
            scene.fail(check, f"answered: {short(answered[0].raw.decode('utf-8', 'replace'))}")
        else:
            scene.ok(check, "ignored")

    tool = await scene.tool_call("acp check: a request with a string id")
    rid = "900001"
    agent.wire.claim(scene.scenario.name, rid, CLIENT_STRING_IDS.key)
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
        scene.skip(CLIENT_STRING_IDS, "no answer (see client-responses)")
    elif (answer.message or {}).get("id") != rid:
        scene.fail(
            CLIENT_STRING_IDS, f"id {rid!r} answered as {(answer.message or {}).get('id')!r}"
        )
    else:
        scene.ok(CLIENT_STRING_IDS, f"answered with id {rid!r}")
    await scene.end_tool(tool)

    tool = await scene.tool_call("acp check: a request cancelled at once")
    rid_int = agent.new_id()
    agent.wire.claim(scene.scenario.name, rid_int, CLIENT_CANCEL_REQUEST.key)
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
        scene.fail(CLIENT_CANCEL_REQUEST, f"no answer within {quick:g} s")
    else:
        after = agent.wire.entries.index(first) + 1
        # a second answer would come right behind the first: watch briefly
        second = await agent.wait_for(lambda e: is_answer(e, rid_int), 0.5, after)
        error = dict_of((first.message or {}).get("error"))
        if second is not None:
            scene.fail(CLIENT_CANCEL_REQUEST, "answered twice")
        elif error and error.get("code") != ErrorCode.REQUEST_CANCELLED:
            scene.fail(
                CLIENT_CANCEL_REQUEST,
                f"answered error {error.get('code')!r} (a result or -32800 expected)",
            )
        else:
            scene.ok(CLIENT_CANCEL_REQUEST, answer_text(first))
    await scene.end_tool(tool)
    await scene.end_turn(prompt)


@PLAYS.scenario("meta", CLIENT_META)
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
    await scene.survive(CLIENT_META, "_meta in every place the schema allows it", prompt)


BASELINE = PLAYS.scenarios[0]
"""The normal run every scenario is compared with; it runs first, alone."""
