"""``acp serve --resumable``: what the endpoint advertises, and how it answers a resume.

RFD durable-resumable-http-transport (a draft; its names are provisional, and
docs/remote.md says where acpwire chose). With ``resumable=True``:

* **Advertised at ``initialize``.** The agent's answer gains
  ``transport.resumable`` in its capabilities (``agentCapabilities`` in v1,
  ``capabilities`` in v2): ``retentionMessages`` (each stream's log),
  ``retentionSeconds`` (how long a connection no client holds is kept:
  ``Limits.resume_timeout``) and ``keepaliveSeconds`` (the interval of SSE
  comments and WebSocket pings). Nothing else in the answer changes.
* **Acknowledged after the replay.** A resumed stream writes what the client
  missed, then, before anything live, the turn state of every session it
  carries: a ``state_update`` per session in v2, and in both versions a
  ``stream/resumed`` notification whose ``_meta["acp/turnState"]`` is that of
  the stream's session (session streams), or ``_meta["acp/turnStates"]`` of
  each session it carries (the connection stream, a WebSocket). Neither has a
  cursor: a later resume computes them afresh instead of replaying old ones.
* **Refused with a reason.** A resume that cannot be served is answered 409
  (HTTP, a JSON body) or ``stream/resume_failed`` (WebSocket) with one of
  :data:`~acpwire.protocol.cursors.REASONS`; never a live stream that silently
  skips what was lost.
"""

from __future__ import annotations

from typing import Any, cast

import msgspec

from ..protocol.cursors import RESUMED, TURN_STATE, TURN_STATES, control
from .limits import Limits
from .turns import TurnTracker

_encode = msgspec.json.Encoder().encode


def advertise(answer: bytes, limits: Limits, keepalive: float | None) -> tuple[bytes, int]:
    """The agent's ``initialize`` answer with ``transport.resumable`` added, and the
    protocol version it chose (1 when it says none; the answer unchanged if it is an
    error or cannot be read)."""
    try:
        document = msgspec.json.decode(answer, type=dict[str, Any])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return answer, 1
    result = document.get("result")
    if not isinstance(result, dict):
        return answer, 1
    result = cast("dict[str, Any]", result)
    version = result.get("protocolVersion")
    version = version if isinstance(version, int) and not isinstance(version, bool) else 1
    key = "capabilities" if version >= 2 else "agentCapabilities"
    capabilities = result.get(key)
    capabilities = cast("dict[str, Any]", capabilities) if isinstance(capabilities, dict) else {}
    transport = capabilities.get("transport")
    transport = cast("dict[str, Any]", transport) if isinstance(transport, dict) else {}
    resumable: dict[str, Any] = {
        "retentionMessages": limits.resume_messages,
        "retentionSeconds": int(limits.resume_timeout),
    }
    if keepalive is not None:
        resumable["keepaliveSeconds"] = keepalive
    result[key] = {**capabilities, "transport": {**transport, "resumable": resumable}}
    return _encode(document), version


def acknowledgment(
    turns: TurnTracker,
    sessions: list[str],
    version: int,
    *,
    session_stream: str | None,
    received: int | None = None,
) -> list[bytes]:
    """What a resumed stream writes after its replay (see the module docstring): the
    state of ``sessions`` (those it carries), ``session_stream`` naming its session
    when it is a session stream; ``received`` (a WebSocket's): how many of the client's
    frames the server took, so that it sends the rest again."""
    messages: list[bytes] = []
    if version >= 2:
        for sid in sessions:
            update = {"sessionId": sid, "update": turns.state_update(sid)}
            messages.append(control("session/update", update))
    meta: dict[str, Any]
    if session_stream is not None:
        meta = {TURN_STATE: turns.state(session_stream)}
    else:
        meta = {TURN_STATES: {sid: turns.state(sid) for sid in sessions}}
        if len(sessions) == 1:
            meta[TURN_STATE] = turns.state(sessions[0])
    params: dict[str, Any] = {"_meta": meta}
    if received is not None:
        params["received"] = str(received)
    messages.append(control(RESUMED, params))
    return messages


def refusal(reason: str, message: str) -> bytes:
    """The JSON body of a 409 refusing a resume (also ``stream/resume_failed``'s params)."""
    return _encode({"reason": reason, "message": message})
