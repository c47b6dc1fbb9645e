"""A session store that lives in this process only (tests, demos, the default of ``AgentApp``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ._clock import Clock
from ._codec import (
    Row,
    check_limit,
    check_principal,
    decode,
    decode_cursor,
    dumps_updates,
    encode,
    loads_updates,
    page,
    touched,
)
from .base import OwnerLedger, SessionExistsError, SessionRecord, SessionStore, StoreClosedError

__all__ = ["MemorySessionStore"]


class MemorySessionStore(SessionStore, OwnerLedger):
    """A :class:`~acpwire.store.SessionStore` in a dict; gone when the process ends.

    Records and updates go through the same encoding as the other stores, so
    all behave alike (including which values are rejected).
    """

    def __init__(self) -> None:
        self._rows: dict[str, Row] = {}
        self._history: dict[str, list[str]] = {}
        self._clock = Clock()
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError

    async def create(self, record: SessionRecord) -> SessionRecord:
        self._check_open()
        row = encode(record)
        if row.session_id in self._rows:
            raise SessionExistsError(row.session_id)
        self._rows[row.session_id] = row
        self._history[row.session_id] = []
        return decode(row)

    async def get(self, session_id: str) -> SessionRecord | None:
        self._check_open()
        row = self._rows.get(session_id)
        return None if row is None else decode(row)

    async def update(self, record: SessionRecord, *, touch: bool = True) -> SessionRecord:
        self._check_open()
        row = encode(record)
        if touch:
            row = touched(row, self._clock)
        existing = self._rows.get(row.session_id)
        if existing is not None:
            owner = row.owner if existing.owner is None else existing.owner
            row = row._replace(created_at=existing.created_at, owner=owner)
        self._rows[row.session_id] = row
        self._history.setdefault(row.session_id, [])
        return decode(row)

    async def extend_many(self, batch: Mapping[str, Sequence[dict[str, Any]]]) -> set[str]:
        self._check_open()
        encoded = {sid: dumps_updates(updates) for sid, updates in batch.items()}
        missing: set[str] = set()
        for session_id, payloads in encoded.items():
            row = self._rows.get(session_id)
            if row is None:
                missing.add(session_id)
            elif payloads:
                self._history[session_id].extend(payloads)
                self._rows[session_id] = touched(row, self._clock)
        return missing

    async def history(self, session_id: str) -> list[dict[str, Any]]:
        self._check_open()
        return loads_updates(self._history.get(session_id, ()))

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        owner: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> tuple[list[SessionRecord], str | None]:
        self._check_open()
        limit = check_limit(limit)
        after = None if cursor is None else decode_cursor(cursor)
        rows = [
            row
            for row in self._rows.values()
            if (cwd is None or row.cwd == cwd) and (owner is None or row.owner == owner)
        ]
        rows.sort(key=lambda row: (row.updated_key, row.session_id), reverse=True)
        if after is not None:
            rows = [row for row in rows if (row.updated_key, row.session_id) < after]
        return page(rows[: limit + 1], limit)

    async def delete(self, session_id: str) -> None:
        self._check_open()
        self._rows.pop(session_id, None)
        self._history.pop(session_id, None)

    async def claim_owner(self, session_id: str, principal: str) -> str | None:
        self._check_open()
        principal = check_principal(principal)
        row = self._rows.get(session_id)
        if row is None:
            return None
        if row.owner is None:
            row = self._rows[session_id] = row._replace(owner=principal)
        return row.owner

    async def owners_of(self, session_ids: Collection[str]) -> dict[str, str | None]:
        self._check_open()
        return {sid: row.owner for sid in session_ids if (row := self._rows.get(sid)) is not None}

    async def aclose(self) -> None:
        self._closed = True
