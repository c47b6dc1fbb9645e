"""Which principal owns each session the endpoint has seen.

The endpoint, not the agent, enforces isolation between principals: the agent
behind it (an ``AgentApp`` with one shared store, or a stdio process per
connection whose own store may be shared on disk) knows nothing of them. A
session belongs to the principal whose connection created it (the agent's
answer to ``session/new`` or ``session/fork`` named it), or that loaded or
resumed it while allowed to. Another principal's requests for it are
answered by the endpoint itself with "resource not found" and never reach the
agent, and ``session/list`` answers are filtered (see :mod:`.core`).

A session nobody has claimed (created before this map existed, or forgotten)
belongs to ``default_owner``: the only principal of a single-token or
unauthenticated server, so a restart does not hide a user's own sessions.
With several principals and no default owner, unclaimed sessions are shown
to nobody: fail closed.

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
from pathlib import Path

import msgspec

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
        default_owner: str | None = None,
        max_sessions: int = 100_000,
    ) -> None:
        self.default_owner = default_owner
        self.max_sessions = max_sessions
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._path = Path(path) if path is not None else None
        self._fd: int | None = None
        if self._path is not None:
            self._load(self._path)

    def owner(self, session_id: str) -> str | None:
        """The principal that claimed ``session_id``, if any."""
        return self._owners.get(session_id)

    def allows(self, principal: str, session_id: str) -> bool:
        """May ``principal`` use ``session_id``? (claimed by it, or unclaimed and its default)."""
        owner = self._owners.get(session_id)
        if owner is None:
            return self.default_owner is not None and principal == self.default_owner
        return owner == principal

    def claim(self, session_id: str, principal: str) -> bool:
        """Record ``principal`` as the owner unless another one is; ``False`` if another is."""
        owner = self._owners.get(session_id)
        if owner is not None:
            if owner != principal:
                return False
            self._owners.move_to_end(session_id)
            return True
        self._owners[session_id] = principal
        while len(self._owners) > self.max_sessions:
            self._owners.popitem(last=False)
        if principal != self.default_owner:
            self._append(session_id, principal)
        return True

    def forget(self, session_id: str) -> None:
        """The session is gone (deleted): it has no owner any more."""
        if self._owners.pop(session_id, None) is not None:
            self._append(session_id, None)

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
