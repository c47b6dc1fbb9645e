"""Where each session's turn is, as a resumed stream tells its client.

RFD durable-resumable-http-transport, "Answering 'is my turn still alive?'":
after a successful resume, before live delivery, the server says where each
turn is, so that a client can tell a broken connection (the turn goes on) from
a broken agent (it does not). A :class:`TurnTracker` follows one connection's
traffic to know it, without asking the agent:

* **v1.** A session's turn is ``running`` from the moment a ``session/prompt``
  is admitted until its answer is *written* to the client (then ``idle``, with
  the answer's ``stopReason``), and ``requires_action`` while an agent request
  for the user (a permission, an elicitation) that was written waits for its
  answer. This is the ``_meta["acp/turnState"]`` shim of the RFD:
  ``{"state": "running", "promptRequestId": 3}``.
* **v2.** The agent reports its own ``state_update``; the last one written for
  a session is repeated (a snapshot is idempotent, v2 says). A session that
  reported none is derived as for v1.
* **Written, not sent.** Messages count when a stream takes them to be written
  (:meth:`~.outbox.Outbox.take`), not when the agent sends them: the state the
  acknowledgment carries is the one after the replay, and what is still queued
  comes after it, live.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import msgspec

from ..protocol.peek import NotAMessage, peek
from .admission import ClientMessage, RequestId

USER_ACTION = frozenset({"session/request_permission", "elicitation/create"})
"""Agent requests that block a turn on the user."""


class _Result(msgspec.Struct):
    stopReason: Any = None  # the wire name


class _Answer(msgspec.Struct):
    result: _Result | None = None


class _Params(msgspec.Struct):
    update: Any = None


class _Update(msgspec.Struct):
    params: _Params | None = None


_answer = msgspec.json.Decoder(_Answer)
_update = msgspec.json.Decoder(_Update)


@dataclass(slots=True)
class _Turn:
    prompt: RequestId | None = None
    """The ``session/prompt`` in flight (v1)."""
    stop_reason: str | None = None
    """Of the last prompt answered."""
    waiting: set[RequestId] = field(default_factory=set[RequestId])
    """Agent requests for the user, written and not answered."""
    reported: dict[str, Any] | None = None
    """The last ``state_update`` the agent reported (v2)."""


class TurnTracker:
    """The turn state of every session one connection carries (see the module docstring)."""

    def __init__(self) -> None:
        self._turns: dict[str, _Turn] = {}
        self._prompts: dict[RequestId, str] = {}
        """Prompt request id -> session."""
        self._asked: dict[RequestId, str] = {}
        """Agent request for the user -> session."""

    @property
    def sessions(self) -> list[str]:
        return list(self._turns)

    def _turn(self, session: str) -> _Turn:
        turn = self._turns.get(session)
        if turn is None:
            turn = self._turns[session] = _Turn()
        return turn

    def opened(self, session: str) -> None:
        """A session this connection carries (made, loaded, resumed)."""
        self._turn(session)

    def client(self, m: ClientMessage) -> None:
        """A client message was admitted."""
        if m.kind == "request" and m.method == "session/prompt" and m.session_id is not None:
            assert m.id is not None
            self._turn(m.session_id).prompt = m.id
            self._prompts[m.id] = m.session_id
        elif m.kind == "response" and m.id is not None:
            session = self._asked.pop(m.id, None)
            if session is not None:
                self._turn(session).waiting.discard(m.id)

    def written(self, message: bytes) -> None:
        """A message was taken to be written to the client."""
        try:
            p = peek(message)
        except NotAMessage:
            return
        if p.kind == "response":
            session = self._prompts.pop(p.id, None) if p.id is not None else None
            if session is None:
                return
            turn = self._turn(session)
            if turn.prompt == p.id:
                turn.prompt = None
                turn.waiting.clear()
            reason = None
            if not p.is_error:
                try:
                    result = _answer.decode(message).result
                except (msgspec.DecodeError, msgspec.ValidationError):
                    result = None
                if result is not None and isinstance(result.stopReason, str):
                    reason = result.stopReason
            turn.stop_reason = reason if reason is not None else "cancelled"
        elif p.kind == "request" and p.method in USER_ACTION and p.session_id is not None:
            assert p.id is not None
            self._turn(p.session_id).waiting.add(p.id)
            self._asked[p.id] = p.session_id
        elif (
            p.method == "session/update"
            and p.session_id is not None
            and b'"state_update"' in message
        ):
            try:
                params = _update.decode(message).params
            except (msgspec.DecodeError, msgspec.ValidationError):
                return
            update: object = params.update if params is not None else None
            if isinstance(update, dict) and update.get("sessionUpdate") == "state_update":
                reported = {k: v for k, v in cast("dict[str, Any]", update).items() if k != "_meta"}
                self._turn(p.session_id).reported = reported

    def forget(self, session: str) -> None:
        """The session was closed or deleted."""
        self._turns.pop(session, None)

    def state(self, session: str) -> dict[str, Any]:
        """The v1 ``acp/turnState`` of ``session``."""
        turn = self._turns.get(session) or _Turn()
        if turn.reported is not None:
            return {k: v for k, v in turn.reported.items() if k != "sessionUpdate"}
        if turn.prompt is not None:
            state = "requires_action" if turn.waiting else "running"
            return {"state": state, "promptRequestId": turn.prompt}
        if turn.waiting:
            return {"state": "requires_action"}
        idle: dict[str, Any] = {"state": "idle"}
        if turn.stop_reason is not None:
            idle["stopReason"] = turn.stop_reason
        return idle

    def state_update(self, session: str) -> dict[str, Any]:
        """The v2 ``state_update`` snapshot of ``session`` (a ``session/update``'s update)."""
        turn = self._turns.get(session) or _Turn()
        if turn.reported is not None:
            return dict(turn.reported)
        update: dict[str, Any] = {"sessionUpdate": "state_update"}
        state = self.state(session)
        update["state"] = state["state"]
        if "stopReason" in state:
            update["stopReason"] = state["stopReason"]
        return update
