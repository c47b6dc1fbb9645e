"""A cassette's messages as a conversation: who said what, what answers what, and which
request each message belongs to (what the replays and ``acp verify`` work from).

Ownership, for the agent's replay: every message but the client's requests belongs to
the client request that was open when it crossed (the open request of its own session
when it names one, else the latest open one): the agent's updates and its own requests
(permission, files, terminals) during a ``session/prompt``, the client's answers to
those, its ``session/cancel``, and the prompt's answer. An agent message sent while no
client request is open follows the last one answered (the demo's
``available_commands_update`` after ``session/new``). The replay plays a request's
messages, in recorded order, when that request is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from .cassette import Cassette, Sender

__all__ = ["Conversation", "Step", "message_kind", "session_of", "update_kind"]

Kind = Literal["request", "notification", "response"]


def message_kind(msg: dict[str, Any]) -> Kind:
    if "method" in msg:
        return "request" if "id" in msg else "notification"
    return "response"


def session_of(msg: dict[str, Any]) -> str | None:
    """The ``sessionId`` a message names in its params or its result, if any."""
    for part in ("params", "result"):
        body = msg.get(part)
        if isinstance(body, dict):
            sid = cast("dict[str, Any]", body).get("sessionId")
            if isinstance(sid, str):
                return sid
    return None


@dataclass
class Step:
    """One recorded message and its place in the conversation."""

    index: int
    sender: Sender
    t: float
    msg: dict[str, Any]
    kind: Kind
    method: str | None
    """The method; for a response, the method of the request it answers (if recorded)."""
    session: str | None
    answers: int | None = None
    """A response: the index of the request it answers."""
    answer: int | None = None
    """A request: the index of its response."""
    owner: int | None = None
    """The index of the other side's request this message belongs to (module docstring)."""
    owned: list[int] = field(default_factory=list[int])
    """A request: the indexes of the messages that belong to it, its response last."""

    @property
    def label(self) -> str:
        """``session/update agent_message_chunk``, ``session/prompt (answer)``..."""
        name = self.method or "response"
        if self.kind == "response":
            return f"{name} (answer)"
        update = update_kind(self.msg)
        return f"{name} {update}" if update else name


def update_kind(msg: dict[str, Any]) -> str | None:
    params = msg.get("params")
    if isinstance(params, dict):
        update = cast("dict[str, Any]", params).get("update")
        if isinstance(update, dict):
            kind = cast("dict[str, Any]", update).get("sessionUpdate")
            return kind if isinstance(kind, str) else None
    return None


class Conversation:
    """The message steps of a cassette, paired and owned (see the module docstring)."""

    def __init__(self, steps: Sequence[Step], header: dict[str, Any] | None = None) -> None:
        self.steps = list(steps)
        self.header = header or {}
        self._pair()
        self._own()

    @classmethod
    def from_cassette(cls, cassette: Cassette) -> Conversation:
        steps: list[Step] = []
        for record in cassette.messages:
            msg = record.get("msg")
            sender = record.get("from")
            if not isinstance(msg, dict) or sender not in ("client", "agent"):
                continue
            msg = cast("dict[str, Any]", msg)
            method = msg.get("method")
            steps.append(
                Step(
                    index=len(steps),
                    sender=cast("Sender", sender),
                    t=float(record.get("t") or 0.0),
                    msg=msg,
                    kind=message_kind(msg),
                    method=method if isinstance(method, str) else None,
                    session=session_of(msg),
                )
            )
        return cls(steps, cassette.header)

    @property
    def cwd(self) -> str | None:
        """The workspace of the first session the client opened, else the recorder's."""
        for step in self.steps:
            if step.sender == "client" and step.method in ("session/new", "session/load"):
                params = step.msg.get("params")
                if isinstance(params, dict) and isinstance(params.get("cwd"), str):
                    return cast("str", params["cwd"])
        cwd = self.header.get("cwd")
        return cwd if isinstance(cwd, str) else None

    def _pair(self) -> None:
        open_requests: dict[tuple[Sender, str], int] = {}
        for step in self.steps:
            key_id = repr(step.msg.get("id"))
            if step.kind == "request":
                open_requests[(step.sender, key_id)] = step.index
            elif step.kind == "response":
                other: Sender = "agent" if step.sender == "client" else "client"
                found = open_requests.pop((other, key_id), None)
                if found is not None:
                    request = self.steps[found]
                    request.answer = step.index
                    step.answers = found
                    step.method = request.method
                    if step.session is None:
                        step.session = request.session

    def _own(self) -> None:
        steps = self.steps
        open_client: list[int] = []  # the client's requests not answered yet, in order
        last_answered: int | None = None
        for step in steps:
            if step.sender == "client" and step.kind == "request":
                open_client.append(step.index)
                continue
            asked = steps[step.answers] if step.answers is not None else None
            if asked is not None and asked.sender == "client":
                # The agent's answer to a client request closes its script.
                if asked.index in open_client:
                    open_client.remove(asked.index)
                owner: int | None = asked.index
                last_answered = asked.index
            elif asked is not None:
                owner = asked.owner  # the client's answer goes where the agent's request is
            else:
                same = [i for i in open_client if step.session and steps[i].session == step.session]
                chosen = same or open_client
                owner = chosen[-1] if chosen else None
                if owner is None and step.sender == "agent":
                    owner = last_answered
            if owner is not None:
                step.owner = owner
                steps[owner].owned.append(step.index)

    def of(self, sender: Sender) -> list[Step]:
        return [s for s in self.steps if s.sender == sender]
