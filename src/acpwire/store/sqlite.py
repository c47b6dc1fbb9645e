"""A session store in one SQLite file.

Durability: the file uses WAL journaling with ``synchronous=NORMAL``. A
committed write survives a crash of the process (SIGKILL included); the last
commits may be lost on power failure or an OS crash, never the file's
consistency. Every write is one transaction (``BEGIN IMMEDIATE``, so a busy
file is waited for rather than failing halfway).

Where the work runs, and what that costs the event loop. The store owns one
connection and one worker thread, and its calls are serialised in the order
they are made. A call that is short runs on the event loop's own thread, when
nothing of the store's is on the worker: ``create``, ``get``, ``update`` (one
row) and ``extend_many`` of at most :data:`INLINE_RECORDS` records and
:data:`INLINE_BYTES` bytes. Such a call never waits for a lock (it tries once
with a busy timeout of zero) and never syncs to disk (a WAL commit with
``synchronous=NORMAL`` only writes to the OS): it blocks the loop for a few
tens of microseconds, as long as encoding the record does. Everything else
runs on the worker: opening the file and migrating its schema, reading a
history, listing, deleting, larger batches, a short call that found the
database locked by another process (it is retried there, waiting up to
``timeout`` seconds), and every call made while an earlier one is still on
the worker. SQLite's automatic checkpoints are off on this connection, since
a checkpoint syncs the file (milliseconds on most disks): the store counts
the pages it writes (an estimate) and, every :data:`CHECKPOINT_PAGES` of
them, checkpoints on the worker and restarts the log there too (the first
write of a new log syncs its header); calls made meanwhile wait behind it on
the worker, not on the loop. Going to the worker and back costs two thread
switches, which a loaded machine makes expensive (hundreds of microseconds):
that is why short calls stay on the loop's thread.

Several processes (or stores) may use the same file at once: SQLite lets one
writer in at a time, and they wait up to ``timeout`` seconds for each other.
History rows get increasing ids in commit order, so each session's history
reads back in the order it was appended.

Schema: versioned in a ``schema_version`` table and migrated forward on first
use; a file written by a newer version is refused with ``RuntimeError``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final, TypeVar

from ._clock import Clock
from ._codec import (
    COLUMNS,
    Row,
    check_principal,
    decode,
    dumps_updates,
    encode,
    list_query,
    loads_updates,
    page,
    touched,
)
from .base import OwnerLedger, SessionExistsError, SessionRecord, SessionStore, StoreClosedError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["SCHEMA_VERSION", "SqliteSessionStore"]

_T = TypeVar("_T")

log = logging.getLogger("acpwire.store")

SCHEMA_VERSION: Final = 2
"""Version of the SQLite schema this module writes."""

INLINE_RECORDS: Final = 64
"""Most history records an ``extend_many`` may hold to run on the event loop's thread."""
INLINE_BYTES: Final = 64 * 1024
"""Most bytes of JSON an ``extend_many`` may hold to run on the event loop's thread."""
CHECKPOINT_PAGES: Final = 4000
"""Pages written (an estimate) between two checkpoints: 16 MiB of log, four times SQLite's
default, since each checkpoint costs three syncs to disk whatever its size."""
_PAGE: Final = 4096
_BUSY: Final = 5  # SQLITE_BUSY, the primary result code of "database is locked"

_COLUMN_LIST: Final = ", ".join(COLUMNS)
_MAX_PARAMS: Final = 500
"""Ids per ``IN (...)`` query: below SQLite's oldest limit of 999 host parameters."""
_PLACEHOLDERS: Final = ", ".join("?" * len(COLUMNS))

# Migrations from version N-1 to N; each is a list of single statements (no
# executescript, which would commit the surrounding transaction).
_MIGRATIONS: Final[dict[int, tuple[str, ...]]] = {
    1: (
        """
        CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY NOT NULL,
            cwd TEXT NOT NULL,
            additional_directories TEXT NOT NULL DEFAULT '[]',  -- JSON array
            title TEXT,
            created_at TEXT NOT NULL,                            -- ISO 8601
            updated_at TEXT NOT NULL,                            -- ISO 8601
            updated_key INTEGER NOT NULL,                        -- updated_at in microseconds since epoch
            mode_id TEXT,
            config_values TEXT NOT NULL DEFAULT '{}',            -- JSON object
            meta TEXT NOT NULL DEFAULT '{}'                      -- JSON object
        )
        """,
        "CREATE INDEX sessions_by_recency ON sessions (updated_key DESC, session_id DESC)",
        # Not (cwd, updated_key): every append bumps updated_key, and each index that
        # contains it costs another page write per commit (about +50% per append).
        "CREATE INDEX sessions_by_cwd ON sessions (cwd)",
        """
        CREATE TABLE updates (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
            payload TEXT NOT NULL                                -- compact JSON object
        )
        """,
        "CREATE INDEX updates_by_session ON updates (session_id, id)",
    ),
    2: (
        "ALTER TABLE sessions ADD COLUMN owner TEXT",  # the principal, for remote servers
        "CREATE INDEX sessions_by_owner ON sessions (owner)",
    ),
}
assert max(_MIGRATIONS) == SCHEMA_VERSION


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Generator[None, None, None]:
    """A write transaction. IMMEDIATE takes the write lock up front, so a busy
    database is waited for (busy_timeout) instead of failing mid-transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> None:
    """Bring the schema of ``conn``'s database to version ``target`` (tests make old files)."""
    with _transaction(conn):
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        found = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0
        if found > SCHEMA_VERSION:
            raise RuntimeError(
                f"session database schema version {found} is newer than this acpwire "
                f"supports ({SCHEMA_VERSION}); upgrade acpwire or use another file"
            )
        if found >= target:
            return
        for version in range(found + 1, target + 1):
            for statement in _MIGRATIONS[version]:
                conn.execute(statement)
        conn.execute("DELETE FROM schema_version")
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (target,))


class SqliteSessionStore(SessionStore, OwnerLedger):
    """A :class:`~acpwire.store.SessionStore` in one SQLite file (see the module docstring).

    ``path`` None means :func:`~acpwire.store.default_store_path` (its folder
    is created); ``":memory:"`` gives a private in-memory database. The
    connection is opened, and the schema created or migrated, on first use.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, timeout: float = 30.0
    ) -> None:
        if path is None:
            from .paths import default_store_path

            path = default_store_path()
        # Kept as text: pathlib is not imported before a Path is asked for (start-up time).
        self._path = os.fspath(path)
        self._timeout = timeout
        self._clock = Clock()
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="acpwire-session-store"
        )
        # The connection, used by one thread at a time: the worker, or the loop's
        # thread while the worker has nothing of ours (see the module docstring).
        self._conn: sqlite3.Connection | None = None
        # Jobs handed to the worker and jobs it finished; equal when it has none. Each
        # is written by one thread only (the loop's, the worker's).
        self._submitted = 0
        self._finished = 0
        self._unchecked_pages = 0  # written since the last checkpoint (estimated)
        self._closed = False

    @property
    def path(self) -> str | Path:
        """The database file (or ``":memory:"``)."""
        if self._path == ":memory:":
            return self._path
        from pathlib import Path

        return Path(self._path)

    def __repr__(self) -> str:
        return f"SqliteSessionStore({self._path!r})"

    # -- plumbing ------------------------------------------------------------

    async def _run(self, fn: Callable[[], _T], *, short: bool = False, pages: int = 0) -> _T:
        """Run ``fn`` (which uses :meth:`_db`) where the module docstring says.

        ``short``: it may run on this thread. ``pages``: what it writes, for checkpoints.
        """
        if self._closed:
            raise StoreClosedError
        if short and self._conn is not None and self._submitted == self._finished:
            try:
                result = fn()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                # Another process is writing: wait for it on the worker.
            else:
                self._wrote(pages)
                return result
        result = await self._on_worker(fn)
        self._wrote(pages)
        return result

    def _on_worker(self, fn: Callable[[], _T]) -> asyncio.Future[_T]:
        """``fn`` on the worker thread, with the busy timeout it may wait for locks."""
        wait_ms = int(self._timeout * 1000)

        def job() -> _T:
            try:
                conn = self._db()
                conn.execute(f"PRAGMA busy_timeout = {wait_ms}")
                try:
                    return fn()
                finally:
                    conn.execute("PRAGMA busy_timeout = 0")
            finally:
                self._finished += 1  # the connection is free for the loop's thread again

        self._submitted += 1
        future = asyncio.get_running_loop().run_in_executor(self._executor, job)
        # A caller that gives up does not withdraw a job the count already holds.
        return asyncio.shield(future)

    def _wrote(self, pages: int) -> None:
        """Count written pages; past CHECKPOINT_PAGES, checkpoint on the worker."""
        self._unchecked_pages += pages
        if self._unchecked_pages < CHECKPOINT_PAGES or self._closed or self._path == ":memory:":
            return
        self._unchecked_pages = 0
        self._on_worker(self._checkpoint).add_done_callback(_log_failure)

    def _checkpoint(self) -> None:
        """Copy the log into the database file and restart the log, on the worker.

        Calls made meanwhile go to the worker too: a write from the loop's thread
        right after the copy would restart the log itself, and the first write of
        a new log syncs its header to disk.
        """
        conn = self._db()
        busy, log_pages, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]
        if not busy and log_pages > 0 and done == log_pages:
            # All of the log is in the file: restart it with a write (a row changed
            # and changed back; a write that changes nothing writes no page).
            with _transaction(conn):
                conn.execute("UPDATE schema_version SET version = -version")
                conn.execute("UPDATE schema_version SET version = -version")

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        folder = os.path.dirname(self._path)
        if self._path != ":memory:" and folder:
            os.makedirs(folder, exist_ok=True)
        conn = sqlite3.connect(
            self._path, timeout=self._timeout, isolation_level=None, check_same_thread=False
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA wal_autocheckpoint = 0")  # the worker checkpoints
            migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _select(self, session_id: str) -> Row | None:
        found = (
            self._db()
            .execute(f"SELECT {_COLUMN_LIST} FROM sessions WHERE session_id = ?", (session_id,))
            .fetchone()
        )
        return None if found is None else Row(*found)

    # -- SessionStore ----------------------------------------------------------

    async def create(self, record: SessionRecord) -> SessionRecord:
        row = encode(record)

        def work() -> SessionRecord:
            # One statement, so one implicit transaction; foreign keys keep no history
            # without its session, so a new id never finds an old history.
            inserted = self._db().execute(
                f"INSERT INTO sessions ({_COLUMN_LIST}) VALUES ({_PLACEHOLDERS}) "
                "ON CONFLICT (session_id) DO NOTHING",
                row.values(),
            )
            if inserted.rowcount == 0:
                raise SessionExistsError(row.session_id)
            return decode(row)

        return await self._run(work, short=True, pages=5)

    async def get(self, session_id: str) -> SessionRecord | None:
        def work() -> SessionRecord | None:
            row = self._select(session_id)
            return None if row is None else decode(row)

        return await self._run(work, short=True)

    async def update(self, record: SessionRecord, *, touch: bool = True) -> SessionRecord:
        row = encode(record)

        def work() -> SessionRecord:
            conn = self._db()
            stored = touched(row, self._clock) if touch else row
            with _transaction(conn):
                conn.execute(
                    f"""
                    INSERT INTO sessions ({_COLUMN_LIST}) VALUES ({_PLACEHOLDERS})
                    ON CONFLICT (session_id) DO UPDATE SET
                        cwd = excluded.cwd,
                        additional_directories = excluded.additional_directories,
                        title = excluded.title,
                        updated_at = excluded.updated_at,
                        updated_key = excluded.updated_key,
                        mode_id = excluded.mode_id,
                        config_values = excluded.config_values,
                        meta = excluded.meta,
                        owner = COALESCE(sessions.owner, excluded.owner)
                    """,
                    stored.values(),
                )
                result = self._select(row.session_id)
            assert result is not None
            return decode(result)

        return await self._run(work, short=True, pages=4)

    async def extend_many(self, batch: Mapping[str, Sequence[dict[str, Any]]]) -> set[str]:
        encoded = {sid: dumps_updates(updates) for sid, updates in batch.items()}
        if not encoded:
            return set()
        records = sum(len(payloads) for payloads in encoded.values())
        size = sum(len(text) for payloads in encoded.values() for text in payloads)

        def work() -> set[str]:
            conn = self._db()
            missing: set[str] = set()
            with _transaction(conn):
                for session_id, payloads in encoded.items():
                    if not payloads:
                        if self._select(session_id) is None:
                            missing.add(session_id)
                        continue
                    key, stamp = self._clock.now()
                    bumped = conn.execute(
                        "UPDATE sessions SET updated_at = ?, updated_key = ? WHERE session_id = ?",
                        (stamp, key, session_id),
                    )
                    if bumped.rowcount == 0:
                        missing.add(session_id)
                        continue
                    conn.executemany(
                        "INSERT INTO updates (session_id, payload) VALUES (?, ?)",
                        [(session_id, payload) for payload in payloads],
                    )
            return missing

        short = records <= INLINE_RECORDS and size <= INLINE_BYTES
        return await self._run(work, short=short, pages=2 * len(encoded) + size // _PAGE)

    async def history(self, session_id: str) -> list[dict[str, Any]]:
        def work() -> list[dict[str, Any]]:
            cursor = self._db().execute(
                "SELECT payload FROM updates WHERE session_id = ? ORDER BY id", (session_id,)
            )
            return loads_updates([payload for (payload,) in cursor])

        return await self._run(work)

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        owner: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> tuple[list[SessionRecord], str | None]:
        sql, params, limit = list_query(
            "sessions", cwd=cwd, owner=owner, cursor=cursor, limit=limit, placeholder=lambda n: "?"
        )

        def work() -> tuple[list[SessionRecord], str | None]:
            return page([Row(*values) for values in self._db().execute(sql, params)], limit)

        return await self._run(work)

    async def delete(self, session_id: str) -> None:
        def work() -> None:
            conn = self._db()
            with _transaction(conn):
                conn.execute("DELETE FROM updates WHERE session_id = ?", (session_id,))
                conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))

        await self._run(work, pages=8)

    async def claim_owner(self, session_id: str, principal: str) -> str | None:
        principal = check_principal(principal)

        def work() -> str | None:
            conn = self._db()
            with _transaction(conn):
                conn.execute(
                    "UPDATE sessions SET owner = ? WHERE session_id = ? AND owner IS NULL",
                    (principal, session_id),
                )
                found = conn.execute(
                    "SELECT owner FROM sessions WHERE session_id = ?", (session_id,)
                ).fetchone()
            return None if found is None else str(found[0])

        return await self._run(work)

    async def owners_of(self, session_ids: Collection[str]) -> dict[str, str | None]:
        ids = list(dict.fromkeys(session_ids))

        def work() -> dict[str, str | None]:
            owners: dict[str, str | None] = {}
            for start in range(0, len(ids), _MAX_PARAMS):
                chunk = ids[start : start + _MAX_PARAMS]
                marks = ", ".join("?" * len(chunk))
                owners.update(
                    self._db().execute(
                        f"SELECT session_id, owner FROM sessions WHERE session_id IN ({marks})",
                        chunk,
                    )
                )
            return owners

        return await self._run(work)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True

        def work() -> None:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                conn.close()

        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, work)
        finally:
            self._executor.shutdown(wait=False)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite said "database is locked" (another connection holds the lock)."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if isinstance(code, int):
        return code & 0xFF == _BUSY
    return "locked" in str(exc)


def _log_failure(future: asyncio.Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("checkpoint of the session database failed", exc_info=future.exception())
