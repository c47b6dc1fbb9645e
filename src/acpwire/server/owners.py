"""Which principal owns each session the endpoint has seen.

The endpoint, not the agent, enforces isolation between principals: the agent
behind it (an ``AgentApp`` with one shared store, or a stdio process per
connection whose own store may be shared on disk) knows nothing of them. A
session belongs to the principal whose connection created it (the agent's
answer to ``session/new`` or ``session/fork`` named it), or that loaded or
resumed it while allowed to. Another principal's requests for it are
answered by the endpoint itself with "resource not found" and never reach the
agent, and ``session/list`` answers are filtered (see :mod:`.claims`).

A session nobody has claimed (created before this map existed, or forgotten)
belongs to ``default_owner``: the only principal of a single-token or
unauthenticated server, so a restart does not hide a user's own sessions.
With several principals and no default owner, unclaimed sessions are shown
to nobody: fail closed.

Given a ``ledger`` (a session store shared by several workers that
implements :class:`~acpwire.store.OwnerLedger`, as ``acp serve --demo
--store postgresql://...`` does), claims are written into the stored
session itself, atomically, and looked up there: a session alice created
through one worker is bob's on no worker. An agent running in the server's
process on that same store writes the owner with the session row itself
(:meth:`SessionOwners.new_session_owner`): ``session/new`` is then one
statement, and the claim that follows its answer finds the owner in the map.
The map in memory is then a cache of
what the ledger said (an owner, once stored, never changes but by deletion);
sessions the ledger does not hold (an agent keeping them elsewhere) fall back
to the map alone. If the ledger fails (the database is down), the worker
logs it and falls back to its map: a session it has not seen claimed is then
unclaimed, which shows it to the default owner only (fail closed).

The map lives in memory (at most ``max_sessions`` entries, the oldest
forgotten first) and, given a ``path``, is appended to a JSON-lines file
(mode 0600) and read back at start, so ownership survives a restart of a
server whose agent keeps sessions on disk. Writes are small appends, not
fsync'ed: a crash may forget the last few claims, which then fall back to the
default owner rule above. Claims by the default owner are kept in memory
only: its sessions stay visible to whoever is the sole principal after a
restart (a server whose one token is generated at each start, as ``acp
serve`` does), and to nobody once the server has several principals.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import OrderedDict
from collections.abc import Collection, Iterable
from pathlib import Path

import msgspec

from ..store.base import NewSessionOwner, OwnerLedger

log = logging.getLogger("acpwire.server")


class _Entry(msgspec.Struct):
    session: str
    principal: str | None


_decode = msgspec.json.Decoder(_Entry).decode
_encode = msgspec.json.Encoder().encode


class SessionOwners:
    """Session id -> owning principal, optionally persisted (see the module docstring)."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        ledger: OwnerLedger | None = None,
        default_owner: str | None = None,
        max_sessions: int = 100_000,
    ) -> None:
        self.default_owner = default_owner
        self.max_sessions = max_sessions
        self.ledger = ledger
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._path = Path(path) if path is not None else None
        self._fd: int | None = None
        if self._path is not None:
            self._load(self._path)

    async def owner(self, session_id: str) -> str | None:
        """The principal that claimed ``session_id``, if any."""
        owner = self._owners.get(session_id)
        if owner is None and self.ledger is not None:
            owner = (await self._owners_in_ledger((session_id,))).get(session_id)
            if owner is not None:
                self._remember(session_id, owner)
        return owner

    def allows_now(self, principal: str, session_id: str) -> bool | None:
        """:meth:`allows` when the answer is known without asking the ledger, else ``None``."""
        owner = self._owners.get(session_id)
        if owner is None and self.ledger is not None:
            return None
        return self._allowed(principal, owner)

    async def allows(self, principal: str, session_id: str) -> bool:
        """May ``principal`` use ``session_id``? (claimed by it, or unclaimed and its default)."""
        return self._allowed(principal, await self.owner(session_id))

    async def visible(self, principal: str, session_ids: Iterable[str]) -> set[str]:
        """Those of ``session_ids`` that ``principal`` may use (one ledger query for all)."""
        ids = set(session_ids)
        owners = {sid: self._owners.get(sid) for sid in ids}
        unknown = [sid for sid, owner in owners.items() if owner is None]
        if unknown:
            for sid, owner in (await self._owners_in_ledger(unknown)).items():
                if owner is not None:
                    owners[sid] = owner
                    self._remember(sid, owner)
        return {sid for sid, owner in owners.items() if self._allowed(principal, owner)}

    async def claim(self, session_id: str, principal: str) -> bool:
        """Record ``principal`` as the owner unless another one is; ``False`` if another is."""
        owner = self._owners.get(session_id)
        if owner is None and self.ledger is not None and principal != self.default_owner:
            try:
                owner = await self.ledger.claim_owner(session_id, principal)
            except Exception as exc:  # any driver error: the map alone still isolates here
                log.warning(
                    "cannot record the owner of session %s in the store: %s", session_id, exc
                )
        if owner is not None:
            self._remember(session_id, owner)
            return owner == principal
        self._remember(session_id, principal)
        if principal != self.default_owner:
            self._append(session_id, principal)
        return True

    def new_session_owner(self, principal: str) -> NewSessionOwner | None:
        """What an agent in this process needs to write ``principal`` as the owner of the
        sessions it creates (see :data:`acpwire.store.base.NEW_SESSION_OWNER`), or None
        when :meth:`claim` would not write to a ledger either (no ledger; the default
        owner, whose claims stay in memory)."""
        if self.ledger is None or principal == self.default_owner:
            return None
        return NewSessionOwner(
            principal, self.ledger, lambda session_id: self._remember(session_id, principal)
        )

    async def forget(self, session_id: str) -> None:
        """The session is gone (deleted): it has no owner any more."""
        if self._owners.pop(session_id, None) is not None:
            self._append(session_id, None)

    async def _owners_in_ledger(self, session_ids: Collection[str]) -> dict[str, str | None]:
        if self.ledger is None:
            return {}
        try:
            return await self.ledger.owners_of(session_ids)
        except Exception as exc:  # any driver error: fail closed, see the module docstring
            log.warning("cannot read session owners from the store: %s", exc)
            return {}

    def _allowed(self, principal: str, owner: str | None) -> bool:
        if owner is None:
            return self.default_owner is not None and principal == self.default_owner
        return owner == principal

    def _remember(self, session_id: str, principal: str) -> None:
        self._owners[session_id] = principal
        self._owners.move_to_end(session_id)
        while len(self._owners) > self.max_sessions:
            self._owners.popitem(last=False)

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    # -- the file ----------------------------------------------------------------------

    def _load(self, path: Path) -> None:
        lines = 0
        try:
            with path.open("rb") as f:
                for line in f:
                    lines += 1
                    try:
                        entry = _decode(line)
                    except (msgspec.DecodeError, msgspec.ValidationError):
                        continue  # a torn last line after a crash
                    if entry.principal is None:
                        self._owners.pop(entry.session, None)
                    else:
                        self._owners[entry.session] = entry.principal
                        self._owners.move_to_end(entry.session)
        except FileNotFoundError:
            pass
        while len(self._owners) > self.max_sessions:
            self._owners.popitem(last=False)
        if lines > 2 * len(self._owners) + 1000:
            self._compact(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def _compact(self, path: Path) -> None:
        temp = path.with_name(path.name + ".tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "wb") as f:
                for session, principal in self._owners.items():
                    f.write(_encode(_Entry(session, principal)) + b"\n")
            os.replace(temp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise

    def _append(self, session_id: str, principal: str | None) -> None:
        if self._fd is None:
            return
        try:
            os.write(self._fd, _encode(_Entry(session_id, principal)) + b"\n")
        except OSError as exc:
            log.warning("cannot record the owner of session %s: %s", session_id, exc)
