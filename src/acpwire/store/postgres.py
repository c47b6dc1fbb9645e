"""A session store in PostgreSQL, shared by every worker of a scaled-out agent service.

Needs the ``postgres`` extra (``pip install 'acpwire[postgres]'``), which
brings asyncpg, and PostgreSQL 12 or newer. Why asyncpg rather than psycopg 3: it is asyncio-native (no
thread hop per query), has its connection pool built in, speaks the binary
protocol and caches prepared statements per connection, which is what a
thousand ``session/new`` a second per worker asks for; it ships wheels for
CPython 3.10 to 3.13 on Linux, macOS and Windows. psycopg 3 would need its
separate pool package and its C build for comparable speed.

Layout: the tables live in their own PostgreSQL schema (``acpwire`` unless
``schema=`` says otherwise), so they never meet an application's tables and a
test can use a throwaway schema. The store creates the schema and its tables
on first use and migrates them forward (``schema_version`` table), under an
advisory lock so that workers starting together migrate once; a database
migrated by a newer acpwire is refused with ``RuntimeError``.

Durability: every write is one transaction, committed when the call returns.
By default the store's connections set ``synchronous_commit = off``: a commit
is acknowledged once PostgreSQL has it, before its WAL reaches the disk. What
was committed survives the death of any agent worker (the failure a scaled-out
service has to ride out); a crash of the database server itself may lose the
last commits (at most three ``wal_writer_delay``, 600 ms by default) and never
corrupts anything. That is the promise of the SQLite store in WAL mode too,
and it is what lets one worker create a thousand sessions a second on a disk
whose fsync takes milliseconds. ``synchronous_commit=None`` keeps the server's
own setting (``on`` unless configured), so every commit waits for its fsync; a
``synchronous_commit`` in the URL's query wins over both.

Two workers, one session: each session row carries the sequence number of its
last history entry. :meth:`PostgresSessionStore.extend_many` is one statement
(one round trip, its own transaction) that locks the rows of the sessions it
appends to (``FOR UPDATE``, in session id order, so two batches never
deadlock), numbers the new entries after the last one, bumps the sessions and
inserts the entries. Appends to one session are therefore serialised across processes,
numbered in commit order, and a reader only ever sees a prefix of the final
history: never a gap that a slower transaction fills in later.
"""

from __future__ import annotations

import asyncio
import importlib
import re
from collections.abc import (
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from types import ModuleType
from typing import Any, Final, Protocol, TypeVar, cast
from urllib.parse import parse_qs, urlsplit, urlunsplit

from .._waits import within
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

__all__ = ["DEFAULT_SCHEMA", "SCHEMA_VERSION", "PostgresSessionStore"]

_T = TypeVar("_T")

SCHEMA_VERSION: Final = 1
"""Version of the PostgreSQL tables this module writes."""

DEFAULT_SCHEMA: Final = "acpwire"
"""The PostgreSQL schema (namespace) the tables live in by default."""

INSTALL_HINT: Final = "the PostgreSQL session store needs asyncpg: pip install 'acpwire[postgres]'"

_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_COLUMN_LIST: Final = ", ".join(COLUMNS)
_PLACEHOLDERS: Final = ", ".join(f"${i}" for i in range(1, len(COLUMNS) + 1))
_RETRIES: Final = 3
"""Attempts of a batch that PostgreSQL aborted for a deadlock or serialisation failure."""


def _migrations(s: str) -> dict[int, tuple[str, ...]]:
    """Statements from version N-1 to N, for tables in schema ``s`` (already quoted)."""
    return {
        1: (
            f"""
            CREATE TABLE {s}.sessions (
                session_id text PRIMARY KEY,
                cwd text NOT NULL,
                additional_directories text NOT NULL DEFAULT '[]',  -- JSON array
                title text,
                created_at text NOT NULL,                            -- ISO 8601
                updated_at text NOT NULL,                            -- ISO 8601
                updated_key bigint NOT NULL,                         -- microseconds since epoch
                mode_id text,
                config_values text NOT NULL DEFAULT '{{}}',          -- JSON object
                meta text NOT NULL DEFAULT '{{}}',                   -- JSON object
                owner text,                                          -- principal
                last_seq bigint NOT NULL DEFAULT 0                   -- seq of the last update
            )
            """,
            f"CREATE INDEX sessions_by_recency ON {s}.sessions (updated_key DESC, session_id DESC)",
            f"CREATE INDEX sessions_by_cwd ON {s}.sessions (cwd)",
            f"CREATE INDEX sessions_by_owner ON {s}.sessions (owner)",
            f"""
            CREATE TABLE {s}.updates (
                session_id text NOT NULL REFERENCES {s}.sessions (session_id) ON DELETE CASCADE,
                seq bigint NOT NULL,
                payload text NOT NULL,                               -- compact JSON object
                PRIMARY KEY (session_id, seq)
            )
            """,
        ),
    }


# --------------------------------------------------------------------------- the driver, typed


class _Record(Protocol):
    def __getitem__(self, index: int, /) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...


class _Transaction(Protocol):
    async def __aenter__(self) -> object: ...
    async def __aexit__(self, *exc_info: object) -> object: ...


class _Connection(Protocol):
    async def execute(self, query: str, *args: object) -> str: ...
    async def fetch(self, query: str, *args: object) -> list[_Record]: ...
    async def fetchrow(self, query: str, *args: object) -> _Record | None: ...
    async def fetchval(self, query: str, *args: object) -> Any: ...
    def transaction(self) -> _Transaction: ...


class _Acquire(Protocol):
    async def __aenter__(self) -> _Connection: ...
    async def __aexit__(self, *exc_info: object) -> object: ...


class _Pool(Protocol):
    def acquire(self) -> _Acquire: ...
    async def close(self) -> None: ...
    def terminate(self) -> None: ...


class _Driver(Protocol):
    def create_pool(
        self,
        dsn: str,
        *,
        min_size: int,
        max_size: int,
        command_timeout: float,
        timeout: float,
        server_settings: dict[str, str],
        reset: Callable[[Any], Awaitable[None]],
    ) -> Awaitable[_Pool]: ...


def _driver() -> tuple[_Driver, tuple[type[BaseException], ...]]:
    """asyncpg (typed through the Protocols above) and the errors worth retrying a batch for."""
    try:
        module: ModuleType = importlib.import_module("asyncpg")
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    errors = module.exceptions
    retry = (errors.DeadlockDetectedError, errors.SerializationError)
    return cast("_Driver", module), retry


async def _reset(conn: _Connection) -> None:
    """Nothing to reset when a connection goes back to the pool.

    asyncpg's default reset sends ``SELECT pg_advisory_unlock_all(); CLOSE ALL;
    UNLISTEN *; RESET ALL`` on every release: a second round trip for each
    one-statement call (``session/new`` per second roughly halved). This store
    leaves none of that state behind (no session-level locks, cursors, LISTEN or
    SET; its settings are connection parameters). A transaction an interrupted
    call left open is rolled back by asyncpg itself before this hook runs.
    """


def _query_keys(dsn: str) -> set[str]:
    try:
        return set(parse_qs(urlsplit(dsn).query))
    except ValueError:
        return set()


def redact(dsn: str) -> str:
    """``dsn`` with its password replaced by ``***`` (for messages and ``repr``)."""
    try:
        parts = urlsplit(dsn)
        if parts.password is None:
            return dsn
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return "postgresql://(unreadable URL)"


class PostgresSessionStore(SessionStore, OwnerLedger):
    """A :class:`~acpwire.store.SessionStore` in a PostgreSQL database (see the module docstring).

    ``dsn`` is a libpq URL (``postgresql://user:password@host:port/database``,
    query parameters as asyncpg reads them). The pool of ``min_size`` to
    ``max_size`` connections opens, and the tables are created or migrated,
    on first use. ``timeout`` bounds connecting and each statement, in seconds.
    ``synchronous_commit`` is set on the store's connections (None: the
    server's setting; see the module docstring). Raises ``ImportError`` with
    the install hint at once if asyncpg is missing.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 30.0,
        synchronous_commit: str | None = "off",
    ) -> None:
        if not _IDENTIFIER_RE.fullmatch(schema):
            raise ValueError(
                f"schema must be a plain identifier (letters, digits, _), got {schema!r}"
            )
        self._driver, self._retry_errors = _driver()
        self._dsn = dsn
        self._schema = schema
        self._min_size, self._max_size, self._timeout = min_size, max_size, timeout
        self._server_settings: dict[str, str] = {}
        if synchronous_commit is not None and "synchronous_commit" not in _query_keys(dsn):
            self._server_settings["synchronous_commit"] = synchronous_commit
        self._clock = Clock()
        self._pool: _Pool | None = None
        self._opening: asyncio.Lock | None = None
        self._closed = False
        s = f'"{schema}"'
        self._s = s
        self._sql_select = f"SELECT {_COLUMN_LIST} FROM {s}.sessions WHERE session_id = $1"
        self._sql_create = (
            f"INSERT INTO {s}.sessions ({_COLUMN_LIST}) VALUES ({_PLACEHOLDERS}) "
            "ON CONFLICT (session_id) DO NOTHING RETURNING session_id"
        )
        self._sql_update = f"""
            INSERT INTO {s}.sessions AS cur ({_COLUMN_LIST}) VALUES ({_PLACEHOLDERS})
            ON CONFLICT (session_id) DO UPDATE SET
                cwd = EXCLUDED.cwd,
                additional_directories = EXCLUDED.additional_directories,
                title = EXCLUDED.title,
                updated_at = EXCLUDED.updated_at,
                updated_key = EXCLUDED.updated_key,
                mode_id = EXCLUDED.mode_id,
                config_values = EXCLUDED.config_values,
                meta = EXCLUDED.meta,
                owner = COALESCE(cur.owner, EXCLUDED.owner)
            RETURNING {", ".join(f"cur.{c}" for c in COLUMNS)}
            """
        # One statement, so one round trip and one implicit transaction: lock the
        # sessions' rows in id order, number the entries after each session's last
        # one, bump the sessions and insert. $1..$3: one element per entry (session,
        # position within its session from 1, payload); $4..$6: one per session.
        self._sql_append = f"""
            WITH locked AS MATERIALIZED (
                SELECT session_id, last_seq FROM {s}.sessions
                WHERE session_id = ANY($4::text[]) ORDER BY session_id FOR UPDATE
            ), bumped AS (
                UPDATE {s}.sessions AS cur
                SET last_seq = locked.last_seq + v.n, updated_at = v.stamp, updated_key = v.key
                FROM locked JOIN (
                    SELECT * FROM unnest($4::text[], $5::text[], $6::bigint[]) AS v0(session_id, stamp, key)
                    JOIN (SELECT session_id, count(*) AS n FROM unnest($1::text[]) AS e(session_id)
                          GROUP BY session_id) AS counts USING (session_id)
                ) AS v USING (session_id)
                WHERE cur.session_id = locked.session_id
                RETURNING cur.session_id, locked.last_seq AS base
            ), inserted AS (
                INSERT INTO {s}.updates (session_id, seq, payload)
                SELECT e.session_id, bumped.base + e.pos, e.payload
                FROM unnest($1::text[], $2::bigint[], $3::text[]) AS e(session_id, pos, payload)
                JOIN bumped USING (session_id)
            )
            SELECT session_id FROM bumped
            """
        self._sql_known = f"SELECT session_id FROM {s}.sessions WHERE session_id = ANY($1::text[])"
        self._sql_history = f"SELECT payload FROM {s}.updates WHERE session_id = $1 ORDER BY seq"
        self._sql_delete = f"DELETE FROM {s}.sessions WHERE session_id = $1"
        # Under READ COMMITTED an UPDATE that waited for another claim re-reads the row,
        # so COALESCE sees the winner's owner: one statement, no lost claim.
        self._sql_claim = (
            f"UPDATE {s}.sessions SET owner = COALESCE(owner, $2) WHERE session_id = $1 "
            "RETURNING owner"
        )
        self._sql_owners = (
            f"SELECT session_id, owner FROM {s}.sessions WHERE session_id = ANY($1::text[])"
        )

    @property
    def schema(self) -> str:
        """The PostgreSQL schema holding the tables."""
        return self._schema

    def __repr__(self) -> str:
        return f"PostgresSessionStore({redact(self._dsn)!r}, schema={self._schema!r})"

    # -- plumbing ------------------------------------------------------------

    async def _get_pool(self) -> _Pool:
        if self._closed:
            raise StoreClosedError
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                pool = await self._driver.create_pool(
                    self._dsn,
                    min_size=self._min_size,
                    max_size=self._max_size,
                    command_timeout=self._timeout,
                    timeout=self._timeout,
                    server_settings=self._server_settings,
                    reset=_reset,
                )
                try:
                    async with pool.acquire() as conn:
                        await self._migrate(conn)
                except BaseException:
                    pool.terminate()
                    raise
                if self._closed:  # closed while opening
                    await pool.close()
                    raise StoreClosedError
                self._pool = pool
        return self._pool

    async def _migrate(self, conn: _Connection) -> None:
        s = self._s
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"acpwire:{s}")
            if await conn.fetchval("SELECT to_regnamespace($1)", s) is None:
                await conn.execute(f"CREATE SCHEMA {s}")
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {s}.schema_version (version integer NOT NULL)"
            )
            found = await conn.fetchval(f"SELECT max(version) FROM {s}.schema_version") or 0
            if found > SCHEMA_VERSION:
                raise RuntimeError(
                    f"session tables in schema {self._schema!r} are at version {found}, newer "
                    f"than this acpwire supports ({SCHEMA_VERSION}); upgrade acpwire"
                )
            if found == SCHEMA_VERSION:
                return
            migrations = _migrations(s)
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in migrations[version]:
                    await conn.execute(statement)
            await conn.execute(f"DELETE FROM {s}.schema_version")
            await conn.execute(
                f"INSERT INTO {s}.schema_version (version) VALUES ($1)", SCHEMA_VERSION
            )

    async def _with_conn(self, work: Callable[[_Connection], Awaitable[_T]]) -> _T:
        pool = await self._get_pool()
        async with pool.acquire() as conn:
            return await work(conn)

    # -- SessionStore ----------------------------------------------------------

    async def create(self, record: SessionRecord) -> SessionRecord:
        row = encode(record)

        async def work(conn: _Connection) -> SessionRecord:
            if await conn.fetchval(self._sql_create, *row.values()) is None:
                raise SessionExistsError(row.session_id)
            return decode(row)

        return await self._with_conn(work)

    async def get(self, session_id: str) -> SessionRecord | None:
        async def work(conn: _Connection) -> SessionRecord | None:
            found = await conn.fetchrow(self._sql_select, session_id)
            return None if found is None else decode(tuple(found))

        return await self._with_conn(work)

    async def update(self, record: SessionRecord, *, touch: bool = True) -> SessionRecord:
        row = encode(record)
        stored = touched(row, self._clock) if touch else row

        async def work(conn: _Connection) -> SessionRecord:
            found = await conn.fetchrow(self._sql_update, *stored.values())
            assert found is not None  # an upsert always returns its row
            return decode(tuple(found))

        return await self._with_conn(work)

    async def extend_many(self, batch: Mapping[str, Sequence[dict[str, Any]]]) -> set[str]:
        encoded = {sid: dumps_updates(updates) for sid, updates in batch.items()}
        entry_ids: list[str] = []
        positions: list[int] = []
        payloads: list[str] = []
        session_ids: list[str] = []
        stamps: list[str] = []
        keys: list[int] = []
        for sid, texts in encoded.items():
            if not texts:
                continue
            entry_ids.extend([sid] * len(texts))
            positions.extend(range(1, len(texts) + 1))
            payloads.extend(texts)
            key, stamp = self._clock.now()
            session_ids.append(sid)
            stamps.append(stamp)
            keys.append(key)
        quiet = [sid for sid, texts in encoded.items() if not texts]

        async def work(conn: _Connection) -> set[str]:
            known: set[str] = set()
            if session_ids:
                args = (entry_ids, positions, payloads, session_ids, stamps, keys)
                known |= {r[0] for r in await conn.fetch(self._sql_append, *args)}
            if quiet:  # nothing to append: only whether they exist
                known |= {r[0] for r in await conn.fetch(self._sql_known, quiet)}
            return set(encoded) - known

        for attempt in range(1, _RETRIES + 1):
            try:
                return await self._with_conn(work)
            except self._retry_errors:
                if attempt == _RETRIES:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def history(self, session_id: str) -> list[dict[str, Any]]:
        async def work(conn: _Connection) -> list[dict[str, Any]]:
            return loads_updates([r[0] for r in await conn.fetch(self._sql_history, session_id)])

        return await self._with_conn(work)

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        owner: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> tuple[list[SessionRecord], str | None]:
        sql, params, limit = list_query(
            f"{self._s}.sessions",
            cwd=cwd,
            owner=owner,
            cursor=cursor,
            limit=limit,
            placeholder=lambda n: f"${n}",
        )

        async def work(conn: _Connection) -> tuple[list[SessionRecord], str | None]:
            return page(_rows(await conn.fetch(sql, *params)), limit)

        return await self._with_conn(work)

    async def delete(self, session_id: str) -> None:
        async def work(conn: _Connection) -> None:
            await conn.execute(self._sql_delete, session_id)  # the history goes by cascade

        await self._with_conn(work)

    async def claim_owner(self, session_id: str, principal: str) -> str | None:
        principal = check_principal(principal)

        async def work(conn: _Connection) -> str | None:
            owner: str | None = await conn.fetchval(self._sql_claim, session_id, principal)
            return owner

        return await self._with_conn(work)

    async def owners_of(self, session_ids: Collection[str]) -> dict[str, str | None]:
        ids = list(dict.fromkeys(session_ids))

        async def work(conn: _Connection) -> dict[str, str | None]:
            return {r[0]: r[1] for r in await conn.fetch(self._sql_owners, ids)}

        return await self._with_conn(work)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is None:
            return
        try:
            await within(pool.close(), self._timeout)
        except (asyncio.TimeoutError, OSError):
            pool.terminate()


def _rows(records: Iterable[_Record]) -> list[Row]:
    return [Row(*tuple(r)) for r in records]
