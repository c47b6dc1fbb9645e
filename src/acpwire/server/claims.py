"""What the agent's answers say about sessions, and which sessions they may show.

Sessions belong to principals (:mod:`.owners`); the admission keeps a principal's
requests off sessions it may not use (:mod:`.admission`). This is the other
half, on the way back: the agent knows nothing of principals, so its answers
are read before they reach the client.

* **Claims.** A session the agent's answer to ``session/new`` or
  ``session/fork`` names becomes the caller's; if another principal owns that
  id already, the answer is replaced by an error (the agent reused an id). A
  session the caller loaded or resumed becomes its own (the admission let it
  through, so it was allowed to). A session is its principal's, not its
  connection's: the same principal may attach it from any of its connections
  (``session/load``, ``session/resume``). ``session/delete`` forgets the owner.
* **Lists.** A ``session/list`` answer is filtered to the caller's sessions;
  one that cannot be read so is not forwarded (fail closed).
* Answers that are errors record nothing.
"""

from __future__ import annotations

import logging
from typing import Any, cast

import msgspec

from ..protocol.errors import ErrorCode
from ..protocol.peek import SESSION_ATTACHING, Peeked
from .admission import Pending, RequestId
from .owners import SessionOwners
from .replies import error_response

log = logging.getLogger("acpwire.server")

CREATING = frozenset({"session/new", "session/fork"})
RECORDED = CREATING | SESSION_ATTACHING | {"session/delete", "session/list"}
"""Methods whose answers :meth:`SessionClaims.record` records or filters."""


def _session_of(info: object) -> str:
    """The ``sessionId`` of one ``session/list`` entry (``""`` if it has none)."""
    if isinstance(info, dict):
        sid = cast("dict[str, Any]", info).get("sessionId")
        if isinstance(sid, str):
            return sid
    return ""


class SessionClaims:
    """The sessions of one connection's principal, as its agent's answers make them."""

    def __init__(self, owners: SessionOwners, principal: str, name: str) -> None:
        self._owners = owners
        self._principal = principal
        self._name = name
        self.known: set[str] = set()
        """Sessions opened on this connection (new, load, resume, fork), stream or not."""

    async def record(self, pending: Pending, p: Peeked, message: bytes) -> bytes:
        """Record who owns what the agent's answer ``message`` (to ``pending``) names;
        the answer the client gets (filtered, or an error in its place)."""
        if p.is_error or p.id is None:
            return message
        owners = self._owners
        method = pending.method
        if method in CREATING and p.session_id is not None:
            if not await owners.claim(p.session_id, self._principal):
                log.warning(
                    "connection %s: the agent answered %s with session %s, which another "
                    "principal owns; refused",
                    self._name,
                    method,
                    p.session_id,
                )
                return error_response(
                    p.id, ErrorCode.INTERNAL_ERROR, "the agent reused an existing session id"
                )
        elif method in SESSION_ATTACHING and pending.session is not None:
            await owners.claim(pending.session, self._principal)
        elif method == "session/delete" and pending.session is not None:
            await owners.forget(pending.session)
            self.known.discard(pending.session)
        elif method == "session/list":
            return await self._visible_sessions(p.id, message)
        return message

    async def _visible_sessions(self, request_id: RequestId, message: bytes) -> bytes:
        """A ``session/list`` answer without the sessions this principal may not see; an
        answer that cannot be read so is not forwarded (fail closed)."""
        unreadable = error_response(
            request_id, ErrorCode.INTERNAL_ERROR, "the agent's session list could not be read"
        )
        try:
            document = msgspec.json.decode(message, type=dict[str, Any])
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return unreadable
        result = document.get("result")
        if not isinstance(result, dict):
            return unreadable
        result = cast("dict[str, Any]", result)
        listed: object = result.get("sessions")
        if not isinstance(listed, list):
            return unreadable
        entries = cast("list[object]", listed)
        ids = [_session_of(info) for info in entries]
        visible = await self._owners.visible(self._principal, ids)
        kept = [info for info, sid in zip(entries, ids, strict=True) if sid in visible]
        if len(kept) == len(entries):
            return message
        result["sessions"] = kept
        return msgspec.json.encode(document)
