"""Persistent session store for ACP agents.

An agent that advertises ``loadSession`` must replay a session's whole history
as ``session/update`` notifications on ``session/load``; ``session/list``
returns ``SessionInfo`` objects (most recently updated first, exact ``cwd``
filter, opaque cursor pagination); ``session/delete`` is idempotent; and
sessions must survive an agent restart. This module keeps that state.

* :class:`SessionRecord` is the per-session info, in plain Python types.
* :class:`SessionStore` is the async interface the agent runtime talks to.
* :class:`MemorySessionStore` keeps everything in the process (tests, demos).
* :class:`SqliteSessionStore` keeps everything in one SQLite file (WAL mode),
  by default :func:`default_store_path`. Several processes may open the same
  file at once.

History entries are the JSON object of the ``update`` field of a
``session/update`` notification, in wire form (``{"sessionUpdate": ...}``).
Both stores keep them as compact JSON text, so what :meth:`SessionStore.history`
returns is always a fresh, JSON-round-tripped copy.

Timestamps are ISO 8601 strings; the stores write UTC with microseconds and a
``Z`` suffix (``2025-01-31T12:00:00.123456Z``) and accept any ISO 8601 form on
input (a timestamp without an offset is taken as UTC).
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import json
import os
import re
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol, TypeVar, cast, runtime_checkable

__all__ = [
    "DATA_DIR_ENV",
    "SCHEMA_VERSION",
    "MemorySessionStore",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionRecord",
    "SessionStore",
    "SqliteSessionStore",
    "default_data_dir",
    "default_store_path",
    "utc_now",
]

_T = TypeVar("_T")

DATA_DIR_ENV: Final = "ACPWIRE_DATA_DIR"
"""Environment variable that overrides the folder of the default store file."""

SCHEMA_VERSION: Final = 1
"""Version of the SQLite schema this module writes."""

_DEFAULT_FILE_NAME: Final = "sessions.sqlite3"
_APP_DIR_NAME: Final = "acpwire"


# --------------------------------------------------------------------------- errors


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


# --------------------------------------------------------------------------- time

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_MICROSECOND: Final = timedelta(microseconds=1)
_TIMESTAMP_RE: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):?(\d{2}))?"
)


def _format_key(key: int) -> str:
    return (_EPOCH + timedelta(microseconds=key)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def utc_now() -> str:
    """The current time as ISO 8601 UTC with microseconds and a ``Z`` suffix."""
    return _format_key(time.time_ns() // 1000)


def _timestamp_key(value: object, what: str) -> int:
    """Microseconds since the Unix epoch of an ISO 8601 timestamp (the sort key)."""
    match = _TIMESTAMP_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{what} must be an ISO 8601 timestamp, got {value!r}")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    micro = int(((match.group(7) or "") + "000000")[:6])
    try:
        moment = datetime(
            year, month, day, hour, minute, min(second, 59), micro, tzinfo=timezone.utc
        )
    except ValueError as exc:
        raise ValueError(f"{what} must be an ISO 8601 timestamp, got {value!r} ({exc})") from None
    if match.group(9):
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        moment = moment - offset if match.group(9) == "+" else moment + offset
    return (moment - _EPOCH) // _ONE_MICROSECOND


class _Clock:
    """Strictly increasing UTC timestamps for one store.

    Coarse system clocks (about 16 ms on some Windows versions) would otherwise
    give several sessions the same ``updated_at`` and make "most recently
    updated first" ambiguous.
    """

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def now(self) -> tuple[int, str]:
        with self._lock:
            key = max(time.time_ns() // 1000, self._last + 1)
            self._last = key
        return key, _format_key(key)


# --------------------------------------------------------------------------- paths


def default_data_dir() -> Path:
    """The per-user folder acpwire keeps data in.

    ``$ACPWIRE_DATA_DIR`` if set; otherwise ``%LOCALAPPDATA%\\acpwire`` on
    Windows, ``~/Library/Application Support/acpwire`` on macOS and
    ``$XDG_DATA_HOME/acpwire`` (default ``~/.local/share/acpwire``) elsewhere.
    The folder is not created here.
    """
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        base = Path(local) if local else Path.home() / "AppData" / "Local"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        xdg = os.environ.get("XDG_DATA_HOME")
        # The XDG spec says relative values are invalid and must be ignored.
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / _APP_DIR_NAME


def default_store_path() -> Path:
    """The file :class:`SqliteSessionStore` uses when given no path."""
    return default_data_dir() / _DEFAULT_FILE_NAME


# --------------------------------------------------------------------------- records


@dataclass
class SessionRecord:
    """What the agent remembers about one session, besides its history.

    ``config_values`` maps config option ids to their current value (a value id,
    or a boolean for ``type: "boolean"`` options). ``meta`` is free JSON for the
    agent's own state. Every field must be JSON-serialisable.
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

    def __post_init__(self) -> None:
        if not self.updated_at:
            self.updated_at = self.created_at

    def to_session_info(self, *, additional_directories: bool = True) -> dict[str, Any]:
        """The ``SessionInfo`` object for ``session/list``, in wire form.

        ``additionalDirectories`` is included only when non-empty and
        ``additional_directories`` is true (pass false when the agent does not
        advertise ``sessionCapabilities.additionalDirectories``).
        """
        info: dict[str, Any] = {"sessionId": self.session_id, "cwd": self.cwd}
        if additional_directories and self.additional_directories:
            info["additionalDirectories"] = builtins.list(self.additional_directories)
        if self.title is not None:
            info["title"] = self.title
        info["updatedAt"] = self.updated_at
        return info


@dataclass(frozen=True)
class _Row:
    """A validated, JSON-encoded :class:`SessionRecord` (one ``sessions`` row)."""

    session_id: str
    cwd: str
    additional_directories: str
    title: str | None
    created_at: str
    updated_at: str
    updated_key: int
    mode_id: str | None
    config_values: str
    meta: str


_ROW_COLUMNS: Final = (
    "session_id, cwd, additional_directories, title, created_at, updated_at, "
    "updated_key, mode_id, config_values, meta"
)


def _dumps(value: Any) -> str:
    """Compact JSON text that SQLite can store (UTF-8 unless that is impossible)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: keep them as \u escapes
            text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return text


def _dumps_field(value: Any, what: str) -> str:
    try:
        return _dumps(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} is not JSON-serialisable: {exc}") from exc


def _dumps_update(update: Any) -> str:
    if not isinstance(update, dict):
        raise TypeError(
            f"a session update must be a dict (the wire `update` object), got {type(update).__name__}"
        )
    return _dumps_field(update, "session update")


def _check_str(value: object, what: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        kind = "a string or None" if optional else "a string"
        raise TypeError(f"{what} must be {kind}, got {type(value).__name__}")


def _check_record(record: object) -> None:
    if not isinstance(record, SessionRecord):
        raise TypeError(f"expected a SessionRecord, got {type(record).__name__}")


def _is_str_list(value: object) -> bool:
    if not isinstance(value, builtins.list):
        return False
    items = cast("builtins.list[object]", value)  # isinstance leaves the items unknown
    return all(isinstance(d, str) for d in items)


def _is_config_values(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    entries = cast("dict[object, object]", value)  # isinstance leaves the entries unknown
    return all(isinstance(k, str) and isinstance(v, (str, bool)) for k, v in entries.items())


def _check_dict(value: object, what: str) -> None:
    if not isinstance(value, dict):
        raise TypeError(f"{what} must be a dict, got {type(value).__name__}")


def _encode(record: SessionRecord) -> _Row:
    # Records come from agent code; check them at run time, whatever their annotations say.
    _check_record(record)
    _check_str(record.session_id, "session_id")
    if not record.session_id:
        raise ValueError("session_id must not be empty")
    _check_str(record.cwd, "cwd")
    _check_str(record.title, "title", optional=True)
    _check_str(record.mode_id, "mode_id", optional=True)
    if not _is_str_list(record.additional_directories):
        raise TypeError("additional_directories must be a list of strings")
    if not _is_config_values(record.config_values):
        raise TypeError("config_values must map config ids (str) to str or bool values")
    _check_dict(record.meta, "meta")
    _timestamp_key(record.created_at, "created_at")
    return _Row(
        session_id=record.session_id,
        cwd=record.cwd,
        additional_directories=_dumps(record.additional_directories),
        title=record.title,
        created_at=record.created_at,
        updated_at=record.updated_at,
        updated_key=_timestamp_key(record.updated_at, "updated_at"),
        mode_id=record.mode_id,
        config_values=_dumps(record.config_values),
        meta=_dumps_field(record.meta, "meta"),
    )


def _decode(row: _Row) -> SessionRecord:
    return SessionRecord(
        session_id=row.session_id,
        cwd=row.cwd,
        additional_directories=json.loads(row.additional_directories),
        title=row.title,
        created_at=row.created_at,
        updated_at=row.updated_at,
        mode_id=row.mode_id,
        config_values=json.loads(row.config_values),
        meta=json.loads(row.meta),
    )


def _touched(row: _Row, clock: _Clock) -> _Row:
    key, stamp = clock.now()
    return replace(row, updated_at=stamp, updated_key=key)


# --------------------------------------------------------------------------- cursors

_CURSOR_VERSION: Final = 1


def _encode_cursor(key: int, session_id: str) -> str:
    raw = json.dumps([_CURSOR_VERSION, key, session_id], separators=(",", ":")).encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode_cursor(cursor: object) -> tuple[int, str]:
    """``(updated_key, session_id)`` of the last entry of the previous page."""
    shown = repr(cursor) if len(repr(cursor)) <= 80 else repr(cursor)[:77] + "..."
    problem = f"invalid session/list cursor {shown}: pass back a nextCursor value unchanged"
    if not isinstance(cursor, str) or not cursor:
        raise ValueError(problem)
    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        value: object = json.loads(raw)
    except ValueError:  # binascii.Error, JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(problem) from None
    if not isinstance(value, builtins.list):
        raise ValueError(problem)
    items = cast("builtins.list[object]", value)  # decoded JSON
    if (
        len(items) != 3
        or items[0] != _CURSOR_VERSION
        or type(items[1]) is not int
        or not isinstance(items[2], str)
    ):
        raise ValueError(problem)
    return items[1], items[2]


def _check_limit(limit: object) -> int:
    if type(limit) is not int or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    return limit


# --------------------------------------------------------------------------- interface


@runtime_checkable
class SessionStore(Protocol):
    """Async storage of sessions and their ``session/update`` history.

    Records returned are fresh copies: mutating them changes nothing until they
    are passed to :meth:`update`.
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

        ``created_at`` of an existing session is kept. With ``touch`` (the
        default) ``updated_at`` becomes now; otherwise ``record.updated_at`` is
        stored as given. History is not affected.
        """
        ...

    async def append(self, session_id: str, update: dict[str, Any]) -> None:
        """Append one ``session/update`` payload (the wire ``update`` object) to the history.

        Also bumps ``updated_at``. Raises :class:`SessionNotFoundError` for an
        unknown session, ``TypeError`` if ``update`` is not JSON-serialisable.
        """
        ...

    async def extend(self, session_id: str, updates: Iterable[dict[str, Any]]) -> None:
        """Append several payloads at once, in order (one transaction). No-op if empty."""
        ...

    async def history(self, session_id: str) -> builtins.list[dict[str, Any]]:
        """Every appended payload, oldest first; empty for an unknown session."""
        ...

    async def list(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> tuple[builtins.list[SessionRecord], str | None]:
        """One page of sessions, most recently updated first, and the next cursor.

        ``cwd`` keeps only sessions whose ``cwd`` is exactly equal. The cursor is
        None on the last page. Raises ``ValueError`` for a cursor this store did
        not hand out or a ``limit`` below 1.
        """
        ...

    async def delete(self, session_id: str) -> None:
        """Remove the session and its history; nothing happens if it does not exist."""
        ...

    async def aclose(self) -> None:
        """Release resources; further calls raise ``RuntimeError``. Idempotent."""
        ...


# --------------------------------------------------------------------------- memory


class MemorySessionStore:
    """A :class:`SessionStore` that lives in this process only.

    Records and updates go through the same JSON encoding as the SQLite store,
    so both behave alike (including which values are rejected).
    """

    def __init__(self) -> None:
        self._rows: dict[str, _Row] = {}
        self._history: dict[str, builtins.list[str]] = {}
        self._clock = _Clock()
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the session store is closed")

    async def create(self, record: SessionRecord) -> SessionRecord:
        self._check_open()
        row = _encode(record)
        if row.session_id in self._rows:
            raise SessionExistsError(row.session_id)
        self._rows[row.session_id] = row
        self._history[row.session_id] = []
        return _decode(row)

    async def get(self, session_id: str) -> SessionRecord | None:
        self._check_open()
        row = self._rows.get(session_id)
        return None if row is None else _decode(row)

    async def update(self, record: SessionRecord, *, touch: bool = True) -> SessionRecord:
        self._check_open()
        row = _encode(record)
        if touch:
            row = _touched(row, self._clock)
        existing = self._rows.get(row.session_id)
        if existing is not None:
            row = replace(row, created_at=existing.created_at)
        self._rows[row.session_id] = row
        self._history.setdefault(row.session_id, [])
        return _decode(row)

    async def append(self, session_id: str, update: dict[str, Any]) -> None:
        await self.extend(session_id, (update,))

    async def extend(self, session_id: str, updates: Iterable[dict[str, Any]]) -> None:
        self._check_open()
        payloads = [_dumps_update(update) for update in updates]
        if not payloads:
            return
        row = self._rows.get(session_id)
        if row is None:
            raise SessionNotFoundError(session_id)
        self._history[session_id].extend(payloads)
        self._rows[session_id] = _touched(row, self._clock)

    async def history(self, session_id: str) -> builtins.list[dict[str, Any]]:
        self._check_open()
        return [json.loads(payload) for payload in self._history.get(session_id, ())]

    async def list(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> tuple[builtins.list[SessionRecord], str | None]:
        self._check_open()
        limit = _check_limit(limit)
        after = None if cursor is None else _decode_cursor(cursor)
        rows = [row for row in self._rows.values() if cwd is None or row.cwd == cwd]
        rows.sort(key=lambda row: (row.updated_key, row.session_id), reverse=True)
        if after is not None:
            rows = [row for row in rows if (row.updated_key, row.session_id) < after]
        page = rows[: limit + 1]
        return _page(page, limit, _decode)

    async def delete(self, session_id: str) -> None:
        self._check_open()
        self._rows.pop(session_id, None)
        self._history.pop(session_id, None)

    async def aclose(self) -> None:
        self._closed = True

    async def __aenter__(self) -> MemorySessionStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _page(
    rows: builtins.list[_Row], limit: int, decode: Callable[[_Row], SessionRecord]
) -> tuple[builtins.list[SessionRecord], str | None]:
    """Turn up to ``limit + 1`` rows into a page and its next cursor."""
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_cursor: str | None = _encode_cursor(last.updated_key, last.session_id)
    else:
        next_cursor = None
    return [decode(row) for row in rows], next_cursor


# --------------------------------------------------------------------------- sqlite

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


class _PendingAppend:
    """Updates queued by one :meth:`SqliteSessionStore.extend` call, and how to tell it the outcome."""

    __slots__ = ("future", "loop", "payloads", "session_id")

    def __init__(
        self,
        session_id: str,
        payloads: builtins.list[str],
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[None],
    ) -> None:
        self.session_id = session_id
        self.payloads = payloads
        self.loop = loop
        self.future = future

    def resolve(self, error: BaseException | None) -> None:
        """Report the outcome to the waiting task (called on the worker thread)."""
        try:
            self.loop.call_soon_threadsafe(_settle, self.future, error)
        except RuntimeError:  # the waiting task's event loop is closed: nobody is waiting
            pass


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():  # the waiting task was cancelled; the updates are written anyway
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)


class SqliteSessionStore:
    """A :class:`SessionStore` in one SQLite file.

    ``path`` None means :func:`default_store_path` (its folder is created);
    ``":memory:"`` gives a private in-memory database. The file uses WAL
    journaling with ``synchronous=NORMAL``: a commit survives a crash of the
    process, and the last commits may be lost on power failure.

    All SQLite work runs on one worker thread that owns the connection, so the
    event loop never blocks and calls are serialised. The connection is opened
    (and the schema created or checked) on first use. Appends from concurrent
    tasks are grouped into one transaction. Other processes may use the same
    file at the same time; writers wait up to ``timeout`` seconds for each other.
    A file written by a newer schema version is refused with ``RuntimeError``.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, timeout: float = 30.0
    ) -> None:
        self._path: str | Path
        if path is None:
            self._path = default_store_path()
        elif isinstance(path, str) and path == ":memory:":
            self._path = path
        else:
            self._path = Path(path)
        self._timeout = timeout
        self._clock = _Clock()
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="acpwire-session-store"
        )
        self._conn: sqlite3.Connection | None = None  # used on the worker thread only
        self._closed = False
        self._pending: builtins.list[_PendingAppend] = []
        self._flush_scheduled = False
        self._pending_lock = threading.Lock()

    @property
    def path(self) -> str | Path:
        """The database file (or ``":memory:"``)."""
        return self._path

    # -- plumbing ------------------------------------------------------------

    async def _run(self, fn: Callable[[], _T]) -> _T:
        if self._closed:
            raise RuntimeError("the session store is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._job, fn)

    def _job(self, fn: Callable[[], _T]) -> _T:
        # Queued appends are written first, so every call sees every earlier append.
        self._flush_appends()
        return fn()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def _connect(self) -> sqlite3.Connection:
        if isinstance(self._path, Path):
            self._path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self._path, timeout=self._timeout, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        with _transaction(conn):
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            found = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0
            if found > SCHEMA_VERSION:
                raise RuntimeError(
                    f"session database schema version {found} is newer than this acpwire "
                    f"supports ({SCHEMA_VERSION}); upgrade acpwire or use another file"
                )
            if found == SCHEMA_VERSION:
                return
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[version]:
                    conn.execute(statement)
            conn.execute("DELETE FROM schema_version")
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))

    @staticmethod
    def _row(values: tuple[Any, ...]) -> _Row:
        return _Row(*values)

    def _select(self, session_id: str) -> _Row | None:
        found = (
            self._db()
            .execute(f"SELECT {_ROW_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,))
            .fetchone()
        )
        return None if found is None else self._row(found)

    def _flush_appends(self) -> None:
        """Write every queued append in one transaction (worker thread).

        This is group commit: appends queued while the previous transaction was
        being written share the next one. Never raises; each queued append is
        told its own outcome.
        """
        with self._pending_lock:
            batch, self._pending = self._pending, []
            self._flush_scheduled = False
        if not batch:
            return
        errors: dict[int, BaseException] = {}
        try:
            conn = self._db()
            with _transaction(conn):
                known: dict[str, bool] = {}
                for item in batch:
                    exists = known.get(item.session_id)
                    if exists is None:
                        exists = (
                            conn.execute(
                                "SELECT 1 FROM sessions WHERE session_id = ?", (item.session_id,)
                            ).fetchone()
                            is not None
                        )
                        known[item.session_id] = exists
                    if not exists:
                        errors[id(item)] = SessionNotFoundError(item.session_id)
                        continue
                    conn.executemany(
                        "INSERT INTO updates (session_id, payload) VALUES (?, ?)",
                        [(item.session_id, payload) for payload in item.payloads],
                    )
                for session_id, exists in known.items():
                    if exists:
                        key, stamp = self._clock.now()
                        conn.execute(
                            "UPDATE sessions SET updated_at = ?, updated_key = ? WHERE session_id = ?",
                            (stamp, key, session_id),
                        )
        except BaseException as exc:  # the whole batch failed
            for item in batch:
                item.resolve(exc)
        else:
            for item in batch:
                item.resolve(errors.get(id(item)))

    # -- SessionStore ----------------------------------------------------------

    async def create(self, record: SessionRecord) -> SessionRecord:
        row = _encode(record)

        def work() -> SessionRecord:
            conn = self._db()
            with _transaction(conn):
                if self._select(row.session_id) is not None:
                    raise SessionExistsError(row.session_id)
                # A leftover history (impossible unless the file was edited) must not resurface.
                conn.execute("DELETE FROM updates WHERE session_id = ?", (row.session_id,))
                conn.execute(
                    f"INSERT INTO sessions ({_ROW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    _astuple(row),
                )
            return _decode(row)

        return await self._run(work)

    async def get(self, session_id: str) -> SessionRecord | None:
        def work() -> SessionRecord | None:
            row = self._select(session_id)
            return None if row is None else _decode(row)

        return await self._run(work)

    async def update(self, record: SessionRecord, *, touch: bool = True) -> SessionRecord:
        row = _encode(record)

        def work() -> SessionRecord:
            conn = self._db()
            stored = _touched(row, self._clock) if touch else row
            with _transaction(conn):
                conn.execute(
                    f"""
                    INSERT INTO sessions ({_ROW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (session_id) DO UPDATE SET
                        cwd = excluded.cwd,
                        additional_directories = excluded.additional_directories,
                        title = excluded.title,
                        updated_at = excluded.updated_at,
                        updated_key = excluded.updated_key,
                        mode_id = excluded.mode_id,
                        config_values = excluded.config_values,
                        meta = excluded.meta
                    """,
                    _astuple(stored),
                )
                result = self._select(row.session_id)
            assert result is not None
            return _decode(result)

        return await self._run(work)

    async def append(self, session_id: str, update: dict[str, Any]) -> None:
        await self.extend(session_id, (update,))

    async def extend(self, session_id: str, updates: Iterable[dict[str, Any]]) -> None:
        payloads = [_dumps_update(update) for update in updates]
        if not payloads:
            return
        if self._closed:
            raise RuntimeError("the session store is closed")
        loop = asyncio.get_running_loop()
        item = _PendingAppend(session_id, payloads, loop, loop.create_future())
        with self._pending_lock:
            self._pending.append(item)
            schedule, self._flush_scheduled = not self._flush_scheduled, True
        if schedule:
            try:
                self._executor.submit(self._flush_appends)
            except BaseException:
                with self._pending_lock:
                    self._pending.remove(item)
                    self._flush_scheduled = False
                raise
        await item.future

    async def history(self, session_id: str) -> builtins.list[dict[str, Any]]:
        def work() -> builtins.list[dict[str, Any]]:
            cursor = self._db().execute(
                "SELECT payload FROM updates WHERE session_id = ? ORDER BY id", (session_id,)
            )
            return [json.loads(payload) for (payload,) in cursor]

        return await self._run(work)

    async def list(
        self, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> tuple[builtins.list[SessionRecord], str | None]:
        limit = _check_limit(limit)
        after = None if cursor is None else _decode_cursor(cursor)
        where: builtins.list[str] = []
        params: builtins.list[Any] = []
        if cwd is not None:
            where.append("cwd = ?")
            params.append(cwd)
        if after is not None:
            where.append("(updated_key < ? OR (updated_key = ? AND session_id < ?))")
            params.extend((after[0], after[0], after[1]))
        sql = f"SELECT {_ROW_COLUMNS} FROM sessions"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_key DESC, session_id DESC LIMIT ?"
        params.append(limit + 1)

        def work() -> tuple[builtins.list[SessionRecord], str | None]:
            rows = [self._row(values) for values in self._db().execute(sql, params)]
            return _page(rows, limit, _decode)

        return await self._run(work)

    async def delete(self, session_id: str) -> None:
        def work() -> None:
            conn = self._db()
            with _transaction(conn):
                conn.execute("DELETE FROM updates WHERE session_id = ?", (session_id,))
                conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))

        await self._run(work)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True

        def work() -> None:
            self._flush_appends()
            if self._conn is not None:
                conn, self._conn = self._conn, None
                conn.close()

        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, work)
        finally:
            self._executor.shutdown(wait=False)

    async def __aenter__(self) -> SqliteSessionStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def _astuple(row: _Row) -> tuple[Any, ...]:
    return (
        row.session_id,
        row.cwd,
        row.additional_directories,
        row.title,
        row.created_at,
        row.updated_at,
        row.updated_key,
        row.mode_id,
        row.config_values,
        row.meta,
    )
