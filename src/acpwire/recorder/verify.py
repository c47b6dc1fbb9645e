"""``acp verify``: what the agent says now against what it said in the recording.

The agent's messages of both runs are lined up in order by what they are (answer to
which method, request or notification of which method, which kind of session update):
the longest common alignment (:class:`difflib.SequenceMatcher`), so one message said
more or less shows as one ``added`` or ``missing`` message rather than shifting every
later one. Each pair lined up is compared after :mod:`.matching`'s tolerance (ids the
agent makes up bound as they first appear, the workspace path, time stamps and
``_meta``); what still differs is listed with its JSON path. An answer is compared with
the recorded answer to the same request, wherever it comes.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .conversation import Conversation, Step, update_kind
from .matching import Bindings, Difference, differences, normalise
from .replay_client import LiveMessage, LiveRun

__all__ = ["MessageDifference", "compare", "format_differences"]

VALUE_LIMIT = 120


@dataclass(frozen=True)
class MessageDifference:
    """A message added, missing, or changed (then with the paths that differ)."""

    kind: str
    """``added``, ``missing`` or ``changed``."""
    label: str
    recorded_index: int | None
    """The message's index among the recorded messages (all of them, both sides)."""
    changes: tuple[Difference, ...] = ()
    live: dict[str, Any] | None = None


def _key(kind: str, method: str | None, msg: dict[str, Any]) -> tuple[str, str, str]:
    return (kind, method or "", update_kind(msg) or "")


def _content(msg: dict[str, Any], kind: str) -> dict[str, Any]:
    """What is compared of a message: its method and params, or its result or error."""
    if kind == "response":
        return {k: msg[k] for k in ("result", "error") if k in msg}
    return {k: msg[k] for k in ("method", "params") if k in msg}


def _label(method: str | None, kind: str, msg: dict[str, Any]) -> str:
    name = method or "response"
    if kind == "response":
        return f"{name} (answer)"
    update = update_kind(msg)
    return f"{name} {update}" if update else name


def compare(recorded: Conversation, live: LiveRun) -> list[MessageDifference]:
    """The differences between the recorded agent side and the live one (in order)."""
    rec_steps = recorded.of("agent")
    live_msgs = live.messages
    bindings = live.bindings
    a = [_key(s.kind, s.method, s.msg) for s in rec_steps]
    b = [_key(m.kind, m.method, m.msg) for m in live_msgs]
    out: list[MessageDifference] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        pairs = (
            list(zip(range(i1, i2), range(j1, j2), strict=False))
            if op in ("equal", "replace")
            else []
        )
        for i, j in pairs:
            out.extend(_pair(rec_steps[i], live_msgs[j], bindings))
        for i in range(i1 + len(pairs), i2):
            step = rec_steps[i]
            out.append(MessageDifference("missing", step.label, step.index))
        for j in range(j1 + len(pairs), j2):
            m = live_msgs[j]
            out.append(
                MessageDifference("added", _label(m.method, m.kind, m.msg), None, live=m.msg)
            )
    return out


def _pair(step: Step, live: LiveMessage, bindings: Bindings) -> list[MessageDifference]:
    rec = _content(step.msg, step.kind)
    now = _content(live.msg, live.kind)
    bindings.learn(rec, now)
    found = differences(normalise(rec), normalise(bindings.to_recorded(now)))
    if not found:
        return []
    return [MessageDifference("changed", step.label, step.index, tuple(found), live.msg)]


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 3] + "..."


def format_differences(found: Sequence[MessageDifference]) -> str:
    """The differences as text, one line per message (and per path of a changed one)."""
    if not found:
        return "no differences: the agent said what it said in the recording"
    lines = [f"{len(found)} message(s) differ:"]
    for d in found:
        where = f"#{d.recorded_index}" if d.recorded_index is not None else "(new)"
        if d.kind != "changed":
            extra = f"  {_short(d.live)}" if d.live is not None else ""
            lines.append(f"{d.kind:8} {where} {d.label}{extra}")
            continue
        lines.append(f"changed  {where} {d.label}")
        for c in d.changes:
            if c.kind == "changed":
                lines.append(f"    {c.path}: {_short(c.recorded)} -> {_short(c.live)}")
            elif c.kind == "missing":
                lines.append(f"    {c.path}: missing (was {_short(c.recorded)})")
            else:
                lines.append(f"    {c.path}: added {_short(c.live)}")
    return "\n".join(lines)
