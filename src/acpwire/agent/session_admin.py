"""The unstable session methods of an app: fork, archive, status and client-set titles.

Served by :class:`~acpwire.agent.runtime.AppAgent` when the app opted in to
unstable ACP (``AgentApp(..., unstable=True)``, docs/protocol-currency.md). They
work over any :class:`~acpwire.store.SessionStore` through its ordinary
interface, so users' own stores get them too:

* **Fork** (``session/fork``): a new session whose record (mode, option
  values, ``state``, title) and history are copies of the parent's committed
  ones. From then on the two are independent: nothing links them in the store
  but ``meta["forkedFrom"]``. The copy is a create followed by one history
  append; if the append fails the new session is deleted again.
* **Archive** (``session/archive``, ``unarchive``): a flag in the record's
  ``meta`` (:data:`ARCHIVED`), shown as ``SessionInfo.archived``. Archiving is
  not activity: ``updatedAt`` is kept. ``session/list`` filters on it before
  pagination, as the schema asks (:func:`list_page`).
* **Status** (``session/status``): ``open`` while some connection of this app
  has the session open, else ``saved`` if the store knows it.
* **Titles** (``session/set_title``): any stored session can be retitled, open
  or not; the title is normalised (one line, :data:`MAX_TITLE` characters) and
  a title the client set is never replaced by an automatic one.

A session open on a connection keeps its record in memory and writes it back
whole when it saves, so archive and title changes are applied to every open
copy in this process as well as to the store. Another process sharing the
store may still write an older title or flag back (the store has no
per-field update); that is the limit of doing this above the store interface.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from .. import schema as s
from ..protocol.errors import InvalidParams, ResourceNotFound
from ..store import SessionRecord, SessionStore, utc_now

__all__ = [
    "ARCHIVED",
    "ARCHIVE_FILTERS",
    "FORKED_FROM",
    "MAX_TITLE",
    "archive_filter",
    "copy_history",
    "fork_record",
    "is_archived",
    "list_page",
    "normalize_title",
    "session_info",
    "stored",
]

ARCHIVED: Final = "archived"
"""The ``SessionRecord.meta`` key holding the archived flag (absent: not archived)."""

FORKED_FROM: Final = "forkedFrom"
"""The ``SessionRecord.meta`` key naming the session a fork was made from."""

MAX_TITLE: Final = 256
"""Characters kept of a client-set title: enough for any list entry, bounded for the store."""

ARCHIVE_FILTERS: Final = frozenset({"exclude", "include", "only"})
"""The ``session/list`` ``archived`` values the schema defines; others get -32602."""

MAX_STORE_PAGES: Final = 20
"""Store pages one filtered ``session/list`` reads at most before answering a short page
(with a cursor), so a store full of archived sessions cannot make one request unbounded."""


def is_archived(record: SessionRecord) -> bool:
    return record.meta.get(ARCHIVED) is True


def session_info(record: SessionRecord, *, archive: bool) -> s.SessionInfo:
    """The ``SessionInfo`` of a record; with ``archive`` (the capability is advertised)
    it carries ``archived``."""
    info: dict[str, Any] = record.to_session_info()
    if archive:
        info["archived"] = is_archived(record)
    return s.convert(info, s.SessionInfo)


async def stored(store: SessionStore, session_id: str) -> SessionRecord:
    """The stored record, or -32002 for a session the store does not know."""
    record = await store.get(session_id)
    if record is None:
        raise ResourceNotFound(f"unknown session {session_id!r}", {"sessionId": session_id})
    return record


async def list_page(
    store: SessionStore,
    *,
    cwd: str | None,
    cursor: str | None,
    limit: int,
    archived: str,
) -> tuple[list[SessionRecord], str | None]:
    """One ``session/list`` page with the archive filter applied before pagination.

    Store pages are read with the room left on the page as their limit, so a
    page always ends where a store page ends and the store's own cursor can be
    handed out unchanged. Raises ``ValueError`` for a bad cursor (as the store).
    """
    if archived == "include":
        return await store.list_sessions(cwd=cwd, cursor=cursor, limit=limit)
    wanted = archived == "only"
    found: list[SessionRecord] = []
    for _ in range(MAX_STORE_PAGES):
        records, cursor = await store.list_sessions(
            cwd=cwd, cursor=cursor, limit=limit - len(found)
        )
        found += [r for r in records if is_archived(r) is wanted]
        if cursor is None or len(found) == limit:
            break
    return found, cursor


def archive_filter(value: str | None) -> str:
    """The ``archived`` filter of a ``session/list`` request (omitted or null: ``exclude``)."""
    if value is None:
        return "exclude"
    if value not in ARCHIVE_FILTERS:
        raise InvalidParams(
            f"unsupported archived filter {value!r} (exclude, include or only)",
            {"archived": value},
        )
    return value


def normalize_title(title: str) -> str:
    """A client's title as stored: whitespace runs (line breaks included) become one space,
    unprintable characters go, at most :data:`MAX_TITLE` characters; empty gets -32602."""
    printable = "".join(ch if ch.isprintable() else " " for ch in title)
    cleaned = " ".join(printable.split())[:MAX_TITLE].rstrip()
    if not cleaned:
        raise InvalidParams("the title is empty once normalised", {"title": title})
    return cleaned


def fork_record(
    parent: SessionRecord, session_id: str, cwd: str, additional_directories: Iterable[str]
) -> SessionRecord:
    """The record of a fork of ``parent``: its settings and state, new roots, not archived."""
    meta = {k: v for k, v in parent.meta.items() if k != ARCHIVED}
    meta[FORKED_FROM] = parent.session_id
    return SessionRecord(
        session_id=session_id,
        cwd=cwd,
        additional_directories=list(additional_directories),
        title=parent.title,
        created_at=utc_now(),
        mode_id=parent.mode_id,
        config_values=dict(parent.config_values),
        meta=meta,
    )


async def copy_history(store: SessionStore, parent_id: str, fork: SessionRecord) -> SessionRecord:
    """Create ``fork`` in the store with a copy of the parent's committed history.

    If the copy fails the fork is deleted again, so a failed fork leaves nothing.
    """
    history = await store.history(parent_id)
    created = await store.create(fork)
    try:
        await store.extend(fork.session_id, history)
    except BaseException:
        await store.delete(fork.session_id)
        raise
    return created
