"""Prompt turns, in the main run: the ``--prompt`` turn ends with a stop reason and nothing
after its answer; a session takes a second turn; a resource link, ``_meta`` and the
content blocks the agent advertised are accepted, those it did not are refused.

Refusing a prompt is always allowed: a refused ``--prompt`` skips what needs a finished
turn (the checker just has none to judge) instead of failing it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...schema._generated_rules import ENUM_VALUES
from ..registry import Group
from ..wire import dict_of
from .driver import Answer, Run
from .live import META, Live

__all__ = [
    "GROUP",
    "META_ACCEPTED",
    "PROMPT",
    "PROMPT_CAPABILITIES",
    "PROMPT_CONTENT",
    "RESOURCE_LINK",
    "SECOND_PROMPT",
    "TURN_ORDER",
    "first_prompt",
    "followups",
]

GROUP = Group("agent", stage="main")
PROMPT = GROUP.check(
    "prompt",
    "a prompt ends with a result carrying a valid stopReason",
    proves=("PROMPT-003", "PROMPT-005"),
    needs=("session",),
)
TURN_ORDER = GROUP.check(
    "turn-order",
    "no turn content arrives after the turn's response (watched for 0.5 s)",
    proves=("PROMPT-003",),
    needs=("turn",),
)
SECOND_PROMPT = GROUP.check(
    "second-prompt", "a session takes a second prompt", proves=("PROMPT-007",), needs=("turn",)
)
RESOURCE_LINK = GROUP.check(
    "resource-link",
    "a prompt with a resource_link block is accepted",
    proves=("INIT-014", "CONTENT-002"),
    needs=("turn",),
)
META_ACCEPTED = GROUP.check(
    "meta-accepted",
    "_meta in initialize capabilities, prompt params and content blocks is accepted",
    proves=("EXT-008",),
    needs=("turn",),
)
PROMPT_CAPABILITIES = GROUP.check(
    "prompt-capabilities",
    "image, audio or embedded resources not advertised are refused",
    proves=("CONTENT-003",),
    needs=("turn",),
)
PROMPT_CONTENT = GROUP.check(
    "prompt-content",
    "image, audio or embedded resources advertised are accepted",
    proves=("CONTENT-004",),
    needs=("turn", "promptCapabilities"),
)

STOP_REASONS = ENUM_VALUES["StopReason"]
"""The stop reasons of the schema acpwire carries."""
# A 1x1 PNG and 2 ms of silence as WAV: tiny but valid image and audio.
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
WAV_SILENCE = "UklGRkQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YSAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="


def _skip_turn_checks(live: Live, why: str) -> None:
    """Skip what needs a finished turn (here and elsewhere, e.g. session/load's replay)."""
    live.verdicts.skip_needing("turn", "main", why)


async def first_prompt(live: Live, run: Run, session_id: str) -> str | None:
    """The first turn: its result and its updates; the session it ran in when it
    ended normally, else None.

    A refused prompt is tried once more in a fresh session: a prompt the agent does
    not take is no failure (the checker just has no turn to judge), but one it
    refuses once and completes the next time is refused for no reason of its own.
    """
    mark = run.mark()
    answer = await live.prompt(run, session_id)
    refused: Answer | None = None
    if answer.error is not None and not answer.needs_auth:
        retry = await live.fresh_session(run)
        if retry is not None:
            refused, session_id = answer, retry
            mark = run.mark()
            answer = await live.prompt(run, session_id)
    if answer.needs_auth:
        why = live.blocked("session/prompt")
        live.record(PROMPT, "skip", why)
        _skip_turn_checks(live, why)
        return None
    if answer.error is not None:
        # Refusing a request is always allowed: the checker just has no turn to judge.
        why = f"the prompt was refused ({answer.describe()}); give one it completes: --prompt"
        live.record(PROMPT, "skip", why)
        _skip_turn_checks(live, why)
        live.prompt_refused = True
        return None
    if refused is not None:
        live.working_session[run.label] = session_id
        live.fail(
            PROMPT,
            f"the prompt was refused ({refused.describe()}), then completed when sent "
            "again: a turn the agent can take ends with a stopReason",
            "PROMPT-003",
        )
    if not answer.ok:
        live.fail(PROMPT, f"session/prompt: {answer.describe()}", "PROMPT-003")
        _skip_turn_checks(live, "the first prompt failed")
        return None
    reason = dict_of(answer.result).get("stopReason")
    if reason in STOP_REASONS:
        live.record(PROMPT, "pass", f"stopReason {reason}, {answer.seconds:.1f} s")
    elif reason is None:
        live.fail(PROMPT, "the result has no stopReason", "PROMPT-003")
    else:
        live.fail(PROMPT, f"stopReason {reason!r}", "PROMPT-005")
    response = run.response_to(answer.request_id, mark)
    if response is None:
        live.record(TURN_ORDER, "skip", "response not found on the wire")
    else:
        index = live.wire.entries.index(response)
        late = await live.late_updates(run, session_id, index)
        if late:
            live.fail(
                TURN_ORDER, f"{len(late)} update(s) after the response: {', '.join(late[:3])}"
            )
        else:
            before = run.updates(session_id, mark, index)
            live.record(TURN_ORDER, "pass", f"{len(before)} update(s) before the response")
    return session_id


async def followups(live: Live, run: Run, caps: dict[str, Any]) -> None:
    """More turns: a second one in the first session, then each content check in its own."""
    sid = await live.ready(run)
    if sid is None:
        return _skip_turn_checks(live, "no session")
    live.judge_turn(SECOND_PROMPT, await live.prompt(run, sid))
    link = {
        "type": "resource_link",
        "uri": Path(live.cwd, "README.md").as_uri(),
        "name": "README.md",
    }
    sid = await live.fresh_session(run)
    if sid is None:
        return _skip_turn_checks(live, "no session")
    live.judge_turn(RESOURCE_LINK, await live.prompt(run, sid, link))
    sid = await live.fresh_session(run)
    if sid is not None:
        params = live.text_prompt(sid, live.options.prompt)
        params["_meta"] = META
        params["prompt"][0]["_meta"] = META
        live.judge_turn(META_ACCEPTED, await run.call("session/prompt", params, live.timeout))
    await _prompt_content(live, run, caps)


def _content_blocks(text: str, root: str) -> dict[str, dict[str, Any]]:
    """One block of each type that needs a prompt capability, by capability name."""
    uri = Path(root, "acp-check-note.txt").as_uri()
    return {
        "image": {"type": "image", "mimeType": "image/png", "data": PNG_1X1},
        "audio": {"type": "audio", "mimeType": "audio/wav", "data": WAV_SILENCE},
        "embeddedContext": {
            "type": "resource",
            "resource": {"uri": uri, "mimeType": "text/plain", "text": text},
        },
    }


async def _prompt_content(live: Live, run: Run, caps: dict[str, Any]) -> None:
    prompt_caps = dict_of(caps.get("promptCapabilities"))
    blocks = _content_blocks(live.options.prompt, live.cwd)
    refused: list[str] = []
    accepted_wrongly: list[str] = []
    broken: list[str] = []
    advertised = [name for name in blocks if prompt_caps.get(name) is True]
    for name, block in blocks.items():
        sid = await live.fresh_session(run)
        if sid is None:
            break
        answer = await live.prompt(run, sid, block)
        if name in advertised:
            if not answer.ok:
                broken.append(f"{block['type']} block ({name} advertised): {answer.describe()}")
        elif answer.ok:
            accepted_wrongly.append(f"{block['type']} block accepted without {name}")
        else:
            refused.append(block["type"])
    if len(advertised) == len(blocks):
        live.record(PROMPT_CAPABILITIES, "n/a", "every prompt capability is advertised")
    else:
        live.verdicts.verdict(
            PROMPT_CAPABILITIES, accepted_wrongly, f"refused: {', '.join(refused)}"
        )
    if not advertised:
        live.record(PROMPT_CONTENT, "n/a", "no prompt capability advertised")
    else:
        live.verdicts.verdict(PROMPT_CONTENT, broken, f"accepted: {', '.join(advertised)}")
