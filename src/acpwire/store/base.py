"""What every session store keeps and promises: the record, the interface, the errors.

An agent that advertises ``loadSession`` must replay a session's whole history
as ``session/update`` notifications on ``session/load``; ``session/list``
returns ``SessionInfo`` objects (most recently updated first, exact ``cwd``
filter, opaque cursor pagination); ``session/delete`` is idempotent; and
sessions must survive an agent restart. A store keeps that state; the
guarantees below are checked for every store by one behaviour suite,
:mod:`acpwire.testing.store_suite`.

* **Copies.** Records and history entries handed out are fresh copies:
  mutating them changes nothing stored. History entries are the JSON object of
  the ``update`` field of a ``session/update`` notification, in wire form
  (``{"sessionUpdate": ...}``), kept as compact JSON text.
* **Durable on return.** When a write method returns, the write is committed
  (as durably as the backend commits: see each store). Batching for speed is
  the caller's policy (:class:`acpwire.agent.history.HistoryWriter` writes a
  turn's history behind), not the store's.
* **Atomic and ordered.** :meth:`SessionStore.extend_many` commits all of a
  batch or none of it, and one session's history is read back in the order it
  was appended, also when several processes append to it at once.
* **Timestamps** are ISO 8601 strings; stores write UTC with microseconds and
  a ``Z`` suffix (``2025-01-31T12:00:00.123456Z``) and accept any ISO 8601
  form on input (a timestamp without an offset is taken as UTC). Sessions are
  ordered by the instant, ties broken by session id.
* **Owners.** A record may name the principal that owns it (the remote
  server's authenticated user). Once stored, an owner is never replaced by
  :meth:`SessionStore.update` (a record without one, or with another, keeps
  the stored owner), so claiming an unowned session is one atomic update and
  a stale record cannot hand a session to someone else. Stores that several
  servers share also implement :class:`OwnerLedger`, so that every server
  enforces the owner one of them recorded. An agent running inside the server
  process writes the owner with the session's row itself (:data:`NEW_SESSION_OWNER`),
  so that creating a session is one statement, not a create and then a claim.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .._closing import AcloseOnExit
from ._clock import utc_now

__all__ = [
    "NEW_SESSION_OWNER",
    "NewSessionOwner",
    "OwnerLedger",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionRecord",
    "SessionStore",
    "StoreClosedError",
]


class SessionNotFoundError(LookupError):
    """An operation that needs an existing session got an unknown session id."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"unknown session {session_id!r}")


class SessionExistsError(ValueError):
    """:meth:`SessionStore.create` got a session id that is already stored."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"session {session_id!r} already exists")


class StoreClosedError(RuntimeError):
    """The store was closed (:meth:`SessionStore.aclose`) and cannot be used any more."""

    def __init__(self) -> None:
        super().__init__("the session store is closed")


@dataclass
class SessionRecord:
    """What the agent remembers about one session, besides its history.

    ``config_values`` maps config option ids to their current value (a value id,
    or a boolean for ``type: "boolean"`` options). ``meta`` is free JSON for the
    agent's own state. ``owner`` is the principal the session belongs to, for
    servers that authenticate their users (None: nobody in particular). Text
    fields must be valid Unicode without NUL characters; every field must be
    JSON-serialisable.
    """

    session_id: str
    cwd: str
    additional_directories: list[str] = field(default_factory=list[str])
    title: str | None = None
    created_at: str = field(default_factory=utc_now)
    updated_at: str = ""
    """Defaults to ``created_at``."""
    mode_id: str | None = None
    config_values: dict[str, str | bool] = field(default_factory=dict[str, str | bool])
    meta: dict[str, Any] = field(default_factory=dict[str, Any])
    owner: str | None = None

    def __post_init__(self) -> None:
        if not self.updated_at:
            self.updated_at = self.created_at

    def to_session_info(self, *, additional_directories: bool = True) -> dict[str, Any]:
        """The ``SessionInfo`` object for ``session/list``, in wire form.

        ``additionalDirectories`` is included only when non-empty and
        ``additional_directories`` is true (pass false when the agent does not
        advertise ``sessionCapabilities.additionalDirectories``). The owner is
        not part of it.
        """
        info: dict[str, Any] = {"sessionId": self.session_id, "cwd": self.cwd}
        if additional_directories and self.additional_directories:
            info["additionalDirectories"] = list(self.additional_directories)
        if self.title is not None:
            info["title"] = self.title
        info["updatedAt"] = self.updated_at
        return info


@runtime_checkable
class SessionStore(AcloseOnExit, Protocol):
    """Async storage of sessions and their ``session/update`` history (see the module docstring).

    A store class may subclass this Protocol to inherit :meth:`append` and
    :meth:`extend`, written in terms of :meth:`extend_many`.
    """

    async def create(self, record: SessionRecord) -> SessionRecord:
        """Store a new session as given (timestamps included) and return the stored copy.

        Raises :class:`SessionExistsError` if the id is taken, ``TypeError`` /
        ``ValueError`` for a malformed record.
        """
        ...

    async def get(self, session_id: str) -> SessionRecord | None:
        """The stored record, or None."""
        ...

    async def update(self, record: SessionRecord, *, touch: bool = True) -> SessionRecord:
        """Upsert the info fields of ``record`` and return the stored copy.

        ``created_at`` of an existing session is kept, and so is its owner if
        it has one (see the module docstring). With ``touch`` (the default)
        ``updated_at`` becomes now; otherwise ``record.updated_at`` is stored
        as given. History is not affected.
        """
        ...

    async def extend_many(self, batch: Mapping[str, Sequence[dict[str, Any]]]) -> set[str]:
        """Append each session's payloads to its history, all in one transaction.

        Payloads are the wire ``update`` objects, appended in the given order.
        Every session that gets payloads has its ``updated_at`` bumped.
        Returns the ids of the sessions that do not exist: their payloads are
        dropped, the others stored. Raises ``TypeError`` (and stores nothing)
        if a payload is not a JSON object.
        """
        ...

    async def append(self, session_id: str, update: dict[str, Any]) -> None:
        """Append one payload to a session's history.

        Raises :class:`SessionNotFoundError` for an unknown session, ``TypeError``
        if ``update`` is not a JSON object.
        """
        await self.extend(session_id, (update,))

    async def extend(self, session_id: str, updates: Iterable[dict[str, Any]]) -> None:
        """Append several payloads to one session's history, in order (one transaction).

        No-op if ``updates`` is empty; otherwise as :meth:`append`.
        """
        payloads = list(updates)
        if payloads and await self.extend_many({session_id: payloads}):
            raise SessionNotFoundError(session_id)

    async def history(self, session_id: str) -> list[dict[str, Any]]:
        """Every appended payload, oldest first; empty for an unknown session."""
        ...

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        owner: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> tuple[list[SessionRecord], str | None]:
        """One page of sessions, most recently updated first, and the next cursor.

        ``cwd`` keeps only sessions whose ``cwd`` is exactly equal, ``owner``
        only those owned by exactly that principal. The cursor is None on the
        last page. Raises ``ValueError`` for a cursor this store did not hand
        out or a ``limit`` below 1.
        """
        ...

    async def delete(self, session_id: str) -> None:
        """Remove the session and its history; nothing happens if it does not exist."""
        ...

    async def aclose(self) -> None:
        """Release resources; further calls raise :class:`StoreClosedError`. Idempotent."""
        ...


@runtime_checkable
class OwnerLedger(Protocol):
    """A store that keeps who owns each session where every server sharing it can read it.

    The remote endpoint (:class:`acpwire.server.SessionOwners`) claims a session
    for the principal whose connection created or attached it; with a shared
    store, the claim must be visible to the other workers, or a principal could
    reach another's session through a worker that never saw the claim. The
    memory, SQLite and PostgreSQL stores implement this; a store that does not
    leaves ownership to the server's own map.
    """

    async def claim_owner(self, session_id: str, principal: str) -> str | None:
        """Make ``principal`` the owner of a stored session that has none, atomically.

        Returns the owner after the call (``principal``, or whoever owned it
        before, also when two servers claim at once), or None if no such
        session is stored.
        """
        ...

    async def owners_of(self, session_ids: Collection[str]) -> dict[str, str | None]:
        """The stored owner of each of ``session_ids`` that exists (None: unowned)."""
        ...


@dataclass(frozen=True)
class NewSessionOwner:
    """Who owns the sessions an agent creates in the current context, and whom to tell.

    Set by the remote endpoint (:class:`acpwire.server.SessionOwners`) around an
    agent it runs in its own process, for a principal whose claims go to
    ``ledger``. An agent whose store *is* ``ledger`` writes ``principal`` as the
    owner of the session it creates, in the same statement as the session
    itself, and calls ``recorded`` with the session id once the row is
    committed: the endpoint then knows the claim is made and sends no second
    statement. Any other agent ignores it, and the endpoint claims as usual.
    """

    principal: str
    ledger: OwnerLedger
    recorded: Callable[[str], None]

    def keeps_claims_in(self, store: object) -> bool:
        """Whether the endpoint's claims go to ``store`` (the very object)."""
        return self.ledger is store


NEW_SESSION_OWNER: ContextVar[NewSessionOwner | None] = ContextVar(
    "acpwire_new_session_owner", default=None
)
"""The :class:`NewSessionOwner` of the current context, if any (None: nobody to tell)."""
